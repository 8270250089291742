#!/usr/bin/env bash
# Every llama.cpp cross-check docs/formats.md reports, on files made fresh by this build: the
# committed base model with each committed adapter (and one merged), its quantizations, a
# converted llama2.c checkpoint with a PEFT adapter converted to GGUF, the converted Hugging
# Face folders of tests/golden/hf and a synthetic model of a real shape.
# Usage (after npm install): scripts/llamacpp-crosscheck/run-all.sh [EDGELORA]
# Needs ../shared/data beside the project. Exit status 1 if any check fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
el=$(realpath "${1:-$root/build/edgelora}")
data="$root/../shared/data"
[ -d "$here/node_modules/node-llama-cpp" ] || { echo "run-all: run npm install in $here first (npm 11's npm ci refuses the lock: node-llama-cpp names optional platform packages the registry here does not serve)" >&2; exit 1; }
[ -d "$data/corpus" ] || { echo "run-all: $data is absent" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
check() { # label, then check.mjs's arguments after EDGELORA
    echo "== $1"; shift
    node "$here/check.mjs" "$el" "$@" || failed=$((failed + 1))
}

m="$root/models"
check "base, en" "$m/base.gguf" "$data/corpus/en.txt"
for a in translate-de translate-es translate-fr shout-en typo-en continue; do
    check "base + $a, de" "$m/base.gguf" "$data/corpus/de.txt" --lora "$m/$a.gguf"
done
check "base + translate-de + shout-en, de" "$m/base.gguf" "$data/corpus/de.txt" \
    --lora "$m/translate-de.gguf" --lora "$m/shout-en.gguf"
"$el" merge -m "$m/base.gguf" --lora "$m/translate-de.gguf" -o "$tmp/merged.gguf" 2>/dev/null &&
    check "base with translate-de merged, de" "$tmp/merged.gguf" "$data/corpus/de.txt"
for l in es it nl pl pt ru; do check "base, $l" "$m/base.gguf" "$data/corpus/$l.txt"; done
for t in q8_0 q4_0 q4_k q6_k bf16; do
    "$el" quantize "$m/base.gguf" "$tmp/base-$t.gguf" --type "$t" --pure >/dev/null 2>&1 &&
        check "base $t + translate-fr, fr" "$tmp/base-$t.gguf" "$data/corpus/fr.txt" \
            --lora "$m/translate-fr.gguf" || { echo "FAIL quantize $t"; failed=$((failed + 1)); }
done
"$el" convert "$data/models/stories260K.bin" --tokenizer "$data/models/tok512.bin" \
    -o "$tmp/stories.gguf" 2>/dev/null &&
    check "stories260K converted, en" "$tmp/stories.gguf" "$data/corpus/en.txt" \
        --prompt "Once upon a time" --gen 64 --ctx 256
[ -f "$tmp/stories.gguf" ] &&
    "$el" convert "$root/tests/golden/lora_stories_peft" -m "$tmp/stories.gguf" -o "$tmp/peft.gguf" \
        2>/dev/null &&
    check "stories260K + a PEFT adapter converted to GGUF, en" "$tmp/stories.gguf" \
        "$data/corpus/en.txt" --lora "$tmp/peft.gguf" --prompt "Once upon a time" --gen 48 --ctx 256
printf 'the cat sat on the mat and looked at the dog. birds sing in the tall trees. %.0s' \
    $(seq 40) > "$tmp/eval.txt"
for a in llama mistral qwen2; do
    "$el" convert "$root/tests/golden/hf/$a" -o "$tmp/hf-$a.gguf" 2>/dev/null &&
        check "tests/golden/hf/$a converted" "$tmp/hf-$a.gguf" "$tmp/eval.txt" \
            --ctx 32 --chunks 8 --gen 16
done
"$el" synth --shape smollm-135m --type q4_0 -o "$tmp/smollm.gguf" 2>/dev/null &&
    check "synth smollm-135m q4_0, ru" "$tmp/smollm.gguf" "$data/corpus/ru.txt" --chunks 4 --gen 24
echo "run-all: $failed failed"
[ "$failed" -eq 0 ]
