#!/usr/bin/env bash
# `edgelora perplexity` against llama.cpp's own llama-perplexity (built by build-llama-bench.sh
# into LLAMA_DIR, default /tmp/llama.cpp) on the same files, text and context: the committed
# base model bare, with an adapter and quantized to each type both compute with, a converted llama2.c checkpoint (SentencePiece,
# adds BOS) and the converted Qwen2 golden folder (byte-level BPE, no BOS). Both tools read the
# same prefix of each text, so they cut the same windows; the figures must agree to TOL (relative,
# default 2e-3: fp16 KV caches on both sides, and kernels that round differently).
# Usage: scripts/llamacpp-crosscheck/perplexity-check.sh [EDGELORA] [LLAMA_DIR]
# Needs ../shared/data beside the project. Exit status 1 if any check fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
el=$(realpath "${1:-$root/build/edgelora}")
llama=${2:-/tmp/llama.cpp}/build/bin/llama-perplexity
data="$root/../shared/data"
tol=${TOL:-2e-3}
[ -x "$llama" ] || { echo "perplexity-check: $llama is absent (run build-llama-bench.sh)" >&2; exit 1; }
[ -d "$data/corpus" ] || { echo "perplexity-check: $data is absent" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$here/llama-ppl.sh"
failed=0

# label, model, text, context, then extra flags both tools take (--lora FILE)
check() {
    local label=$1 model=$2 text=$3 ctx=$4
    shift 4
    local theirs ours
    theirs=$(llama_ppl "$llama" "$tmp/llama-perplexity.log" "$model" "$text" "$ctx" "$@")
    ours=$("$el" perplexity -m "$model" -f "$text" -c "$ctx" -t 2 "$@" 2>/dev/null |
        sed -n 's/^perplexity: \([0-9.]*\).*/\1/p')
    if [ -n "$theirs" ] && [ -n "$ours" ] &&
        awk -v a="$ours" -v b="$theirs" -v t="$tol" \
            'BEGIN { d = (a - b) / b; exit !(d < t && d > -t) }'; then
        echo "PASS $label: ours $ours, llama-perplexity $theirs"
    else
        echo "FAIL $label: ours ${ours:-none}, llama-perplexity ${theirs:-none}"
        failed=$((failed + 1))
    fi
}

m="$root/models"
head -c 60000 "$data/corpus/en.txt" > "$tmp/en.txt"
head -c 60000 "$data/corpus/de.txt" > "$tmp/de.txt"
check "base, en, ctx 128" "$m/base.gguf" "$tmp/en.txt" 128
check "base, en, ctx 256" "$m/base.gguf" "$tmp/en.txt" 256
check "base + translate-de, de" "$m/base.gguf" "$tmp/de.txt" 128 --lora "$m/translate-de.gguf"
# our quantizer's files in every type (--pure: each type alone) both compute with: llama.cpp
# reads them, and our kernels of every type agree with its own (the prompt's packed products
# too: perplexity runs 128 rows a batch)
for t in q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs; do
    if "$el" quantize "$m/base.gguf" "$tmp/base-$t.gguf" --type $t --pure >/dev/null 2>&1; then
        check "base $t, en" "$tmp/base-$t.gguf" "$tmp/en.txt" 128
    else
        echo "FAIL quantize $t"; failed=$((failed + 1))
    fi
done
"$el" convert "$data/models/stories260K.bin" --tokenizer "$data/models/tok512.bin" \
    -o "$tmp/stories.gguf" >/dev/null 2>&1 &&
    check "stories260K converted, en" "$tmp/stories.gguf" "$tmp/en.txt" 128
printf 'the cat sat on the mat and looked at the dog. birds sing in the tall trees. %.0s' \
    $(seq 60) > "$tmp/eval.txt"
"$el" convert "$root/tests/golden/hf/qwen2" -o "$tmp/qwen2.gguf" >/dev/null 2>&1 &&
    check "tests/golden/hf/qwen2 converted (no BOS)" "$tmp/qwen2.gguf" "$tmp/eval.txt" 64
echo "perplexity-check: $failed failed"
[ "$failed" -eq 0 ]
