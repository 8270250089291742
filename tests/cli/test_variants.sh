#!/usr/bin/env bash
# `edgelora run --variants K`: each variant's text equals a plain `edgelora run` of the prompt
# followed by that variant's first token (when the tokenizer spells prompt + token as the prompt's
# tokens and that token), greedy and seeded; the first tokens are distinct; --json is valid JSON
# (read with jq) with the fields asked for; adapters per variant change the text; bad flags are
# usage errors, too many variants a clear failure. Model: stories260K converted to GGUF; adapters:
# random GGUF LoRAs from test_batch_lora_gen.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

M="$DATA/models"
GEN="$(dirname "$EL")/tests/test_batch_lora_gen"
if [ ! -f "$M/stories260K.bin" ]; then skip variants "$M/stories260K.bin is absent"; finish; fi
if ! command -v jq >/dev/null; then skip variants "jq is not installed"; finish; fi
B="$TMP/stories.gguf"
"$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$B" >/dev/null 2>&1 || { fail variants_convert; finish; }

P="Once upon a time"
# compare_plain NAME JSON-FILE SAMPLING-FLAGS...: variant i against a plain run seeded S + i
compare_plain() {
    local name=$1 json=$2; shift 2
    local k; k=$(jq '.variants | length' "$json")
    local seed=0 args=() i
    while [ $# -gt 0 ]; do if [ "$1" = -s ]; then seed=$2; shift 2; else args+=("$1"); shift; fi; done
    local want_prompt; want_prompt=$("$EL" tokenize -m "$B" --bos -p "$P")
    for ((i = 0; i < k; i++)); do
        local first id n text ext
        first=$(jq -r ".variants[$i].first_token" "$json")
        id=$(jq ".variants[$i].first_token_id" "$json")
        n=$(jq ".variants[$i].tokens | length" "$json")
        text=$(jq -j ".variants[$i].text" "$json"; echo x); text=${text%x}
        ext=$("$EL" tokenize -m "$B" --bos -p "$P$first")
        if [ "$ext" != "$want_prompt $id" ]; then skip "${name}_$i" "'$P$first' does not tokenize as the prompt and token $id"; continue; fi
        "$EL" run -m "$B" -p "$P$first" -n $((n - 1)) -s $((seed + i)) "${args[@]}" -t 1 > "$TMP/plain" 2>/dev/null
        printf '%s%s\n' "$P" "$text" > "$TMP/want"
        if cmp -s "$TMP/plain" "$TMP/want"; then pass "${name}_$i"; else
            fail "${name}_$i" "plain run: $(head -c 200 "$TMP/plain")" "variant:   $(head -c 200 "$TMP/want")"; fi
    done
}

expect_exit greedy_json 0 "$EL" run -m "$B" -p "$P" -n 30 --temp 0 --variants 3 --json -t 1
cp "$TMP/out" "$TMP/greedy.json"
if [ -s "$TMP/greedy.json" ] && jq -e '.variants | length == 3 and (map(.first_token_id) | unique | length == 3) and
          all(.[]; (.tokens | length) == 30 and .adapter == null and .finish == "length" and
              (.text | type) == "string" and .tokens[0] == .first_token_id)' "$TMP/greedy.json" >/dev/null
then pass greedy_json_fields; else fail greedy_json_fields "$(head -c 400 "$TMP/greedy.json")"; fi
compare_plain greedy "$TMP/greedy.json" --temp 0

# seeded sampling (filters wide enough for two first tokens)
expect_exit seeded_json 0 "$EL" run -m "$B" -p "$P" -n 40 --temp 0.9 --min-p 0 --top-p 1 -s 21 --variants 2 --json -t 1
cp "$TMP/out" "$TMP/seeded.json"
compare_plain seeded "$TMP/seeded.json" --temp 0.9 --min-p 0 --top-p 1 -s 21

# plain output: one header per variant, then its text; the greedy variant 1 is the plain run
expect_exit plain_output 0 "$EL" run -m "$B" -p "$P" -n 30 --temp 0 --variants 3 -t 1
[ "$(grep -c '^--- variant [1-3]/3: first token ' "$TMP/out")" = 3 ] && pass plain_headers || fail plain_headers "$(cat "$TMP/out")"
"$EL" run -m "$B" -p "$P" -n 30 --temp 0 -t 1 > "$TMP/plain" 2>/dev/null
sed -n 2p "$TMP/out" | sed "s/^/$P/" | cmp -s - "$TMP/plain" && pass plain_variant1_is_run || fail plain_variant1_is_run "$(sed -n 2p "$TMP/out")" "$(cat "$TMP/plain")"

# forced first tokens, quotes and newlines in the text survive JSON
expect_exit forced_first 0 "$EL" run -m "$B" -p "Lily said" -n 60 --temp 0 --variants 3 --variant-first '"|| there' --json -t 1
if [ -s "$TMP/out" ] && jq -e '.variants[0].first_token == "\"" and .variants[2].first_token == " there" and
          (.variants[0].text | startswith("\"")) and (.variants[1].first_token_id != .variants[0].first_token_id)' "$TMP/out" >/dev/null
then pass forced_first_tokens; else fail forced_first_tokens "$(head -c 400 "$TMP/out")"; fi

# adapters per variant: named in the JSON; they change the text from the same first token
if "$GEN" "$B" "$TMP/attn.gguf" 4 q,k,v,o 1 0.6 >/dev/null 2>&1 && "$GEN" "$B" "$TMP/ffn.gguf" 8 gate,up,down 2 0.6 >/dev/null 2>&1; then
    expect_exit adapters_json 0 "$EL" run -m "$B" -p "$P" -n 30 --temp 0 --variants 3 \
        --variant-first ",|,|," --variant-adapters "$TMP/attn.gguf,-,$TMP/ffn.gguf" --json -t 1
    if [ -s "$TMP/out" ] && jq -e '[.variants[].adapter] == ["attn", null, "ffn"] and
              (.variants[0].text != .variants[1].text) and (.variants[2].text != .variants[1].text)' "$TMP/out" >/dev/null
    then pass adapters_per_variant; else fail adapters_per_variant "$(head -c 600 "$TMP/out")"; fi
else
    fail adapters_make "test_batch_lora_gen failed"
fi

# errors
expect_exit usage_zero_variants 2 "$EL" run -m "$B" -p "$P" --variants 0
# (--json alone is a plain run's JSON: tests/cli/test_run_json.sh)
expect_exit usage_variant_first_alone 2 "$EL" run -m "$B" -p "$P" --variant-first x
expect_exit usage_not_a_token 2 "$EL" run -m "$B" -p "$P" --variants 2 --variant-first "not one token"
expect_exit usage_too_many_adapters 2 "$EL" run -m "$B" -p "$P" --variants 1 --variant-adapters "a,b"
expect_exit missing_adapter 1 "$EL" run -m "$B" -p "$P" --variants 2 --variant-adapters "$TMP/none.gguf"
expect_exit too_many_variants 1 "$EL" run -m "$B" -p "$P" -n 8 --temp 1 --top-k 3 --top-p 1 --min-p 0 --variants 4
grep -q "fewer variants" "$TMP/err" && pass too_many_variants_message || fail too_many_variants_message "$(cat "$TMP/err")"
finish
