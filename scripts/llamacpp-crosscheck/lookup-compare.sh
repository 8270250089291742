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
lk_acc=0 lk_pred=0 lk_s=0 la_acc=0 la_pred=0 la_s=0 count=0 lost=0
# One decoder's figures on prompt $2: "accepted drafted seconds". llama.cpp's log is written
# by a thread of its own, and a run whose process ended first prints no statistics (seen on
# about one prompt in four): such a run is tried again, up to 3 times.
stats() { # tool prompt
    local out acc i
    for i in 1 2 3; do
        out=$("$bin/$1" -m "$model" -p "$2" -n "$n" --temp 0 -t 1 2>&1 < /dev/null)
        acc=$(sed -n 's/.*n_accept *= *\([0-9]*\).*/\1/p' <<< "$out" | tail -1)
        [ -n "$acc" ] || continue
        echo "$acc $(sed -n 's/.*n_predict *= *\([0-9]*\).*/\1/p' <<< "$out" | tail -1)" \
             "$(sed -n 's/.*decoded *[0-9]* tokens in *\([0-9.]*\) seconds.*/\1/p' <<< "$out" | tail -1)"
        return 0
    done
    return 1
}
while IFS= read -r p; do
    [ -n "$p" ] || continue
    if ! lk=$(stats llama-lookup "$p") || ! la=$(stats llama-lookahead "$p"); then
        lost=$((lost + 1))
        continue
    fi
    read -r a b c <<< "$lk"
    lk_acc=$((lk_acc + a)) lk_pred=$((lk_pred + b)) lk_s=$(awk -v x="$lk_s" -v y="$c" 'BEGIN { print x + y }')
    read -r a b c <<< "$la"
    la_acc=$((la_acc + a)) la_pred=$((la_pred + b)) la_s=$(awk -v x="$la_s" -v y="$c" 'BEGIN { print x + y }')
    count=$((count + 1))
done < "$prompts"
[ "$lost" = 0 ] || echo "lookup-compare: $lost prompts left out (no statistics from llama.cpp in 3 runs)" >&2
echo "model $model, $count prompts, $n tokens each, greedy, 1 thread"
awk -v a="$lk_acc" -v p="$lk_pred" -v s="$lk_s" 'BEGIN { printf "llama-lookup     accepted %d of %d tokens (%.2f a step at most), %.1f tokens/s\n", a, p, p / (p - a), p / s }'
awk -v a="$la_acc" -v p="$la_pred" -v s="$la_s" 'BEGIN { printf "llama-lookahead  accepted %d of %d tokens (%.2f a step at most), %.1f tokens/s\n", a, p, p / (p - a), p / s }'
"$EL" bench -m "$model" --forecast "$forecast" --prompts "$prompts" -n "$n" -r 3 -t 1
