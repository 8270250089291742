#!/usr/bin/env bash
# gemma3 in llama.cpp's own tools (built from source in LLAMA_DIR, default /work/llama.cpp):
# the tiny Hugging Face folder tests/golden/hf/gemma3 converted by `edgelora convert` (f32, and
# q8_0) and `synth --shape gemma-3-1b` files (f32, q8_0; 4 GB of disk for the f32 one). For
# each, llama-perplexity and `edgelora perplexity` over the same text and context (every logit of
# every window enters the figure; the tiny model's window of 4 cells is far inside the 16-token
# context, so its sliding-window layers are checked) must agree to TOL (relative, default 2e-3:
# fp16 KV caches on both sides), and llama-simple's greedy continuation of a prompt must be ours,
# text for text.
# Usage: scripts/llamacpp-crosscheck/gemma3-check.sh [EDGELORA] [LLAMA_DIR]
# Exit status 1 if any check fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
el=$(realpath "${1:-$root/build/edgelora}")
bin=${2:-/work/llama.cpp}/build/bin
tol=${TOL:-2e-3}
[ -x "$bin/llama-perplexity" ] && [ -x "$bin/llama-simple" ] ||
    { echo "gemma3-check: llama-perplexity or llama-simple is absent from $bin" >&2; exit 1; }
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

# label, model, text, context (both tools cut the whole text into the same windows)
perplexity() {
    local theirs ours
    theirs=$("$bin/llama-perplexity" -m "$2" -f "$3" -c "$4" -t 2 2>&1 |
        sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p')
    ours=$("$el" perplexity -m "$2" -f "$3" -c "$4" -t 2 2>/dev/null |
        sed -n 's/^perplexity: \([0-9.]*\).*/\1/p')
    if [ -n "$theirs" ] && [ -n "$ours" ] &&
        awk -v a="$ours" -v b="$theirs" -v t="$tol" \
            'BEGIN { d = (a - b) / b; exit !(d < t && d > -t) }'; then
        echo "PASS $1 perplexity: ours $ours, llama-perplexity $theirs"
    else
        echo "FAIL $1 perplexity: ours ${ours:-none}, llama-perplexity ${theirs:-none}"
        failed=$((failed + 1))
    fi
}

# label, model, prompt, tokens: greedy text after the prompt
greedy() {
    local theirs ours
    theirs=$("$bin/llama-simple" -m "$2" -n "$4" "$3" 2>/dev/null | sed 's/^<bos>//')
    ours=$("$el" run -m "$2" -p "$3" -n "$4" --temp 0 2>/dev/null)
    if [ -n "$theirs" ] && [ "$theirs" = "$ours" ]; then
        echo "PASS $1 greedy: $(printf '%s' "$ours" | head -c 160 | tr '\n' ' ')"
    else
        echo "FAIL $1 greedy:"; echo "  llama-simple: $theirs"; echo "  ours:         $ours"
        failed=$((failed + 1))
    fi
}

printf 'the cat sat on the mat and looked at the dog. birds sing in the tall trees. %.0s' \
    $(seq 20) > "$tmp/eval.txt"
for t in f32 q8_0; do
    "$el" convert "$root/tests/golden/hf/gemma3" -o "$tmp/gemma3-$t.gguf" --type $t 2>/dev/null ||
        { echo "FAIL convert gemma3 $t"; failed=$((failed + 1)); continue; }
    perplexity "tests/golden/hf/gemma3 $t, ctx 16" "$tmp/gemma3-$t.gguf" "$tmp/eval.txt" 16
    greedy "tests/golden/hf/gemma3 $t" "$tmp/gemma3-$t.gguf" "sing in the tall trees" 24
done
# The real shape: f32 for the perplexity (q8_0 rounds each matmul's activations to 8 bits, and
# the two engines' slightly different inputs round differently: on this random model that moves
# the figure by 2e-3, as our own fp16 and f32 KV caches move it by 8e-4), q8_0 for the greedy text.
head -c 600 "$tmp/eval.txt" > "$tmp/short.txt"
for t in f32 q8_0; do
    if "$el" synth --shape gemma-3-1b --type $t -o "$tmp/gemma-3-1b.gguf" 2>/dev/null; then
        [ $t = f32 ] &&
            perplexity "synth gemma-3-1b $t, ctx 64" "$tmp/gemma-3-1b.gguf" "$tmp/short.txt" 64
        greedy "synth gemma-3-1b $t" "$tmp/gemma-3-1b.gguf" "The cat sat on the mat" 16
    else
        echo "FAIL synth gemma-3-1b $t"; failed=$((failed + 1))
    fi
    rm -f "$tmp/gemma-3-1b.gguf"
done
echo "gemma3-check: $failed failed"
[ "$failed" -eq 0 ]
