#!/usr/bin/env bash
# Our chat templates against llama.cpp's template code (chat-check.c): every template name we
# write, and the Jinja templates real models ship (from llama.cpp's models/templates/: Llama 3.x,
# Qwen 2.5 and 3, SmolLM3, Gemma 2/3, Phi-3.5, Mistral), on the same conversations: the same
# text and, on a vocabulary of each kind, the same token ids. With --golden, rewrites
# tests/golden/chat/templates.txt from llama.cpp's texts (what test_chat.c compares with).
# Usage: scripts/llamacpp-crosscheck/chat-check.sh [--golden] [LLAMA_DIR]
# (LLAMA_DIR as built by build-llama-bench.sh, default /tmp/llama.cpp; needs ../shared/data)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
golden=0
[ "${1:-}" = --golden ] && { golden=1; shift; }
llama=${1:-/tmp/llama.cpp}
[ -f "$llama/build/bin/libllama.so" ] || { echo "chat-check: $llama/build/bin/libllama.so is absent (run build-llama-bench.sh)" >&2; exit 1; }
make -C "$root" -s build/libedgelora.a
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O1 -I"$root/include" -I"$llama/include" -I"$llama/ggml/include" "$here/chat-check.c" \
    "$root/build/libedgelora.a" -L"$llama/build/bin" -lllama -Wl,-rpath,"$llama/build/bin" \
    -lm -pthread -o "$tmp/chat-check"
names="chatml llama3 gemma phi3 mistral-v1 mistral-v3 mistral-v3-tekken mistral-v7 llama2 llama2-sys llama2-sys-bos llama2-sys-strip"
if [ $golden = 1 ]; then
    mkdir -p "$root/tests/golden/chat"
    "$tmp/chat-check" --golden $names > "$root/tests/golden/chat/templates.txt"
    echo "wrote tests/golden/chat/templates.txt"
    exit 0
fi
t="$llama/models/templates"
jinja=()
for f in meta-llama-Llama-3.2-3B-Instruct meta-llama-Llama-3.1-8B-Instruct Qwen-Qwen2.5-7B-Instruct \
         Qwen-Qwen3-0.6B HuggingFaceTB-SmolLM3-3B google-gemma-2-2b-it microsoft-Phi-3.5-mini-instruct \
         mistralai-Mistral-Nemo-Instruct-2407; do
    [ -f "$t/$f.jinja" ] && jinja+=("$t/$f.jinja")
done
data="$root/../shared/data/tokenizers"
failed=0
for v in "$data/ggml-vocab-llama-spm.gguf" "$data/ggml-vocab-gpt-2.gguf" "$root/models/tokenizer.gguf"; do
    echo "== vocabulary $(basename "$v")"
    "$tmp/chat-check" "$v" $names "${jinja[@]}" || failed=1
done
exit $failed
