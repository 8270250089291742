#!/usr/bin/env bash
# lookup-compare.sh MODEL FORECAST PROMPTS [N] - the draft-free speculative decoders side by
# side on the same prompts (one a line), greedy, N tokens each (default 64), one thread:
# llama.cpp's llama-lookup (n-grams of the context) and llama-lookahead (Jacobi n-gram
# windows), built by build-llama-bench.sh, against `edgelora bench --forecast` (DS2D) and
# plain decoding. Prints tokens accepted per prompt and the generation speed of each.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
model=$1 forecast=$2 prompts=$3 n=${4:-64}
bin=${LLAMA_BIN:-/tmp/llama.cpp/build/bin}
EL=${EL:-$here/../../build/edgelora}
for t in llama-lookup llama-lookahead; do
    [ -x "$bin/$t" ] || { echo "lookup-compare: $bin/$t is absent (build-llama-bench.sh)" >&2; exit 1; }
done
lk_acc=0 lk_pred=0 lk_s=0 la_acc=0 la_pred=0 la_s=0 count=0
while IFS= read -r p; do
    [ -n "$p" ] || continue
    out=$("$bin/llama-lookup" -m "$model" -p "$p" -n "$n" --temp 0 -t 1 2>&1)
    lk_acc=$((lk_acc + $(sed -n 's/.*n_accept *= *\([0-9]*\).*/\1/p' <<< "$out" | tail -1)))
    lk_pred=$((lk_pred + $(sed -n 's/.*n_predict *= *\([0-9]*\).*/\1/p' <<< "$out" | tail -1)))
    lk_s=$(awk -v a="$lk_s" -v b="$(sed -n 's/.*decoded *[0-9]* tokens in *\([0-9.]*\) seconds.*/\1/p' <<< "$out" | tail -1)" 'BEGIN { print a + b }')
    out=$("$bin/llama-lookahead" -m "$model" -p "$p" -n "$n" --temp 0 -t 1 2>&1)
    la_acc=$((la_acc + $(sed -n 's/.*n_accept *= *\([0-9]*\).*/\1/p' <<< "$out" | tail -1)))
    la_pred=$((la_pred + $(sed -n 's/.*n_predict *= *\([0-9]*\).*/\1/p' <<< "$out" | tail -1)))
    la_s=$(awk -v a="$la_s" -v b="$(sed -n 's/.*decoded *[0-9]* tokens in *\([0-9.]*\) seconds.*/\1/p' <<< "$out" | tail -1)" 'BEGIN { print a + b }')
    count=$((count + 1))
done < "$prompts"
echo "model $model, $count prompts, $n tokens each, greedy, 1 thread"
awk -v a="$lk_acc" -v p="$lk_pred" -v s="$lk_s" 'BEGIN { printf "llama-lookup     accepted %d of %d tokens (%.2f a step at most), %.1f tokens/s\n", a, p, p / (p - a), p / s }'
awk -v a="$la_acc" -v p="$la_pred" -v s="$la_s" 'BEGIN { printf "llama-lookahead  accepted %d of %d tokens (%.2f a step at most), %.1f tokens/s\n", a, p, p / (p - a), p / s }'
"$EL" bench -m "$model" --forecast "$forecast" --prompts "$prompts" -n "$n" -r 3 -t 1
