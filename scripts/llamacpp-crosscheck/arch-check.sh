#!/usr/bin/env bash
# The qwen3 and phi3 architectures against llama.cpp itself (arch-check-llama.c runs libllama
# greedily, arch-check.c feeds edgelora the same tokens: the same prompt ids, the same greedy
# token at every step but near ties, logits compared): the tiny Hugging Face folders of tests/golden/hf converted by `edgelora convert` to
# f32, f16 and q8_0, and synthetic models of the real shapes (`edgelora synth --shape qwen3-0.6b`,
# `--shape phi-3.5-mini`). The phi3 folder's original context is 32, so its contexts of 64 take
# the long rope factors; Phi-3.5-mini's contexts of 256 the short ones (llama.cpp's choice).
# Usage: scripts/llamacpp-crosscheck/arch-check.sh [LLAMA_DIR]
# (LLAMA_DIR: a llama.cpp source tree built with shared libraries, default /work/llama.cpp)
# Exit status 1 if any check fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
llama=${1:-/work/llama.cpp}
[ -f "$llama/build/bin/libllama.so" ] || { echo "arch-check: $llama/build/bin/libllama.so is absent" >&2; exit 1; }
make -C "$root" -s build/libedgelora.a build/edgelora || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# two programs: edgelora's GGUF reader and ggml's export the same symbol names
cc -O1 -I"$llama/include" -I"$llama/ggml/include" "$here/arch-check-llama.c" \
    -L"$llama/build/bin" -lllama -Wl,-rpath,"$llama/build/bin" -o "$tmp/arch-check-llama" || exit 1
cc -O1 -I"$root/include" "$here/arch-check.c" "$root/build/libedgelora.a" -lm -pthread \
    -o "$tmp/arch-check" || exit 1
el="$root/build/edgelora"
failed=0
check() { # model, prompt, greedy tokens, context, logit tolerance
    "$tmp/arch-check-llama" "$1" "$2" "$3" "$4" "$tmp/llama.out" 2>"$tmp/llama.err" &&
        "$tmp/arch-check" "$1" "$2" "$tmp/llama.out" "$4" "$5" ||
        { tail -n 2 "$tmp/llama.err"; failed=$((failed + 1)); }
}

for a in qwen3 phi3; do
    for t in f32 f16 q8_0; do
        # f32, f16: llama.cpp's fp16 KV cache and ours round alike, not always to the same bits
        # (phi3's attention factor of 1.55 scales the scores up); q8_0: the activations' blocks
        tol=5e-3; [ $t = q8_0 ] && tol=3e-2
        "$el" convert "$root/tests/golden/hf/$a" -o "$tmp/$a-$t.gguf" --type $t 2>/dev/null &&
            check "$tmp/$a-$t.gguf" "the cat sat on the mat" 24 64 $tol ||
            { [ -f "$tmp/$a-$t.gguf" ] || { echo "FAIL convert $a $t"; failed=$((failed + 1)); }; }
    done
done
# Synthetic q8_0 and q4_k files of every architecture differ from llama.cpp in their logits by
# more than q4_0 ones (measured: qwen2.5-0.5b q8_0 3.1e-2, q4_k 2.3e-2; tinyllama-1.1b q4_k
# 6.3e-2; q4_0 6e-4) with the same greedy tokens; the cause is not known yet (docs/formats.md).
# q4_0 is held to 3e-3; q4_k only to the greedy tokens and 0.25.
for s in qwen3-0.6b phi-3.5-mini; do
    for t in q4_0 q4_k; do
        tol=3e-3; [ $t = q4_k ] && tol=0.25
        "$el" synth --shape $s --type $t -o "$tmp/$s-$t.gguf" 2>/dev/null &&
            check "$tmp/$s-$t.gguf" "Hello, how are you today?" 16 256 $tol ||
            { [ -f "$tmp/$s-$t.gguf" ] || { echo "FAIL synth $s $t"; failed=$((failed + 1)); }; }
        rm -f "$tmp/$s-$t.gguf"
    done
done
echo "arch-check: $failed failed"
[ "$failed" -eq 0 ]
