#!/usr/bin/env bash
# `edgelora serve` driven by the official OpenAI client for Node (npm "openai", installed into
# tests/node by scripts/setup.sh with `npm ci`): models, completions alone and concurrent with
# different adapters, streaming, chat, n, errors. Expected texts are `edgelora run`'s (greedy).
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh && . tests/cli/serve_lib.sh

M="$DATA/models"
GEN="$(dirname "$EL")/tests/test_batch_lora_gen"
if [ ! -f "$M/stories260K.bin" ]; then skip serve_openai "$M/stories260K.bin is absent"; finish; fi
for c in jq curl node; do command -v $c >/dev/null || { skip serve_openai "$c is not installed"; finish; }; done
if [ ! -f tests/node/node_modules/openai/package.json ]; then
    skip serve_openai "the openai package is not installed (scripts/setup.sh runs npm ci in tests/node)"; finish; fi

B="$TMP/stories.gguf"
"$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$B" >/dev/null 2>&1 || { fail serve_openai_convert; finish; }
L="$TMP/loras"
mkdir -p "$L"
"$GEN" "$B" "$L/attn.gguf" 4 q,k,v,o 1 0.6 && "$GEN" "$B" "$L/ffn.gguf" 8 gate,up,down 2 0.6 ||
    { fail serve_openai_adapters; finish; }

after_prompt() { # prompt: run's output (stdin) less the prompt and the final newline
    local bytes; bytes=$(printf '%s' "$1" | wc -c)
    head -c -1 | tail -c +$((bytes + 1))
}
entries=()
for spec in "stories|Once upon a time|40|" "attn|The little dog|30|--lora $L/attn.gguf" \
            "ffn|Lily and Tom|35|--lora $L/ffn.gguf"; do
    IFS='|' read -r model prompt n flags <<< "$spec"
    # shellcheck disable=SC2086
    text=$("$EL" run -m "$B" $flags -p "$prompt" -n "$n" --temp 0 -t 1 2>/dev/null | after_prompt "$prompt")
    entries+=("$(jq -cn --arg m "$model" --arg p "$prompt" --argjson n "$n" --arg t "$text" \
        '{model: $m, prompt: $p, max_tokens: $n, text: $t}')")
done
chat_prefix=$(printf '<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n_')
chat=$("$EL" run -m "$B" --lora "$L/ffn.gguf" --chat-template chatml -p "Hi there" -n 25 --temp 0 -t 1 2>/dev/null |
    after_prompt "${chat_prefix%_}")
printf '%s\n' "${entries[@]}" | jq -s --arg chat "$chat" '{completions: ., models: ["stories", "attn", "ffn"],
    chat: {model: "ffn", content: "Hi there", max_tokens: 25, text: $chat}}' > "$TMP/expected.json"

serve_start serve_openai_start -m "$B" --lora-dir "$L" -t 1 --parallel 4 --chat-template chatml --api-key k3y || finish
node tests/node/serve_openai.mjs "$URL" k3y "$TMP/expected.json" > "$TMP/node.out" 2>&1
rc=$?
cat "$TMP/node.out"
[ $rc = 0 ] || [ "$(grep -c '^FAIL ' "$TMP/node.out")" -gt 0 ] || fail serve_openai_node "node exited $rc"
wait_idle && pass serve_openai_cells_freed || fail serve_openai_cells_freed "$(curl -s "$URL/health")"
serve_stop
[ "$SERVE_RC" = 0 ] && pass serve_openai_exit || fail serve_openai_exit "exit $SERVE_RC"
finish
