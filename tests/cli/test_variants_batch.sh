#!/usr/bin/env bash
# `edgelora batch` requests with "n": K return K choices, generated together: greedy choices equal
# plain `edgelora run`s of the prompt followed by each choice's first token; with seeded sampling
# choice 0 is exactly the request without "n" (its first token is an ordinary draw); first tokens
# are distinct; requests asking for too much fail alone, with the others served beside them.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

M="$DATA/models"
if [ ! -f "$M/stories260K.bin" ]; then skip variants_batch "$M/stories260K.bin is absent"; finish; fi
if ! command -v jq >/dev/null; then skip variants_batch "jq is not installed"; finish; fi
B="$TMP/stories.gguf"
"$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$B" >/dev/null 2>&1 || { fail variants_batch_convert; finish; }

R="$TMP/req.jsonl"
cat > "$R" <<'JSONL'
{"id": "plain", "prompt": "Lily said", "n_predict": 30, "temperature": 0.9, "min_p": 0, "top_p": 1, "seed": 4}
{"id": "greedy", "prompt": "Once upon a time", "n_predict": 25, "temperature": 0, "n": 3}
{"id": "seeded", "prompt": "Lily said", "n_predict": 30, "temperature": 0.9, "min_p": 0, "top_p": 1, "seed": 4, "n": 2}
{"id": "narrow", "prompt": "Once upon a time", "n_predict": 20, "n": 4}
{"id": "wide", "prompt": "Tom", "n_predict": 20, "n": 9}
{"id": "after", "prompt": "The dog", "n_predict": 10, "temperature": 0}
JSONL
expect_exit batch_n 0 "$EL" batch -m "$B" -f "$R" -t 1 --parallel 4 -b 5
cp "$TMP/out" "$TMP/res.jsonl"
get() { jq -c "select(.id == \"$1\")" "$TMP/res.jsonl"; }

g=$(get greedy)
if [ -n "$g" ] && jq -e '.choices | length == 3 and (map(.first_token_id) | unique | length == 3) and
        all(.[]; .tokens_generated == 25 and .finish_reason == "length")' <<<"$g" >/dev/null
then pass greedy_choices; else fail greedy_choices "$g"; fi
P="Once upon a time"
want_prompt=$("$EL" tokenize -m "$B" --bos -p "$P")
for i in 0 1 2; do
    id=$(jq ".choices[$i].first_token_id" <<<"$g")
    text=$(jq -j ".choices[$i].text" <<<"$g"; echo x); text=${text%x}
    full=$("$EL" detokenize -m "$B" -p "$want_prompt $id"; echo x); full=${full%x}
    piece=${full#"$P"}
    if [ "$("$EL" tokenize -m "$B" --bos -p "$P$piece")" != "$want_prompt $id" ]; then
        skip "greedy_choice_$i" "'$P$piece' does not tokenize as the prompt and token $id"; continue; fi
    "$EL" run -m "$B" -p "$P$piece" -n 24 --temp 0 -t 1 > "$TMP/plain" 2>/dev/null
    printf '%s%s\n' "$P" "$text" > "$TMP/want"
    if cmp -s "$TMP/plain" "$TMP/want"; then pass "greedy_choice_$i"; else
        fail "greedy_choice_$i" "plain run: $(head -c 200 "$TMP/plain")" "choice:    $(head -c 200 "$TMP/want")"; fi
done

s=$(get seeded)
plain_text=$(get plain | jq -r .text)
if [ -n "$s" ] && [ -n "$plain_text" ] && [ "$(jq -r '.choices[0].text' <<<"$s")" = "$plain_text" ] &&
   jq -e '.choices | length == 2 and .[0].first_token_id != .[1].first_token_id' <<<"$s" >/dev/null
then pass seeded_choice0_is_plain; else fail seeded_choice0_is_plain "$s" "plain: $plain_text"; fi

jq -e '.error | test("fewer variants")' <<<"$(get narrow)" >/dev/null && pass narrow_fails_alone || fail narrow_fails_alone "$(get narrow)"
jq -e '.error | test("more than --parallel")' <<<"$(get wide)" >/dev/null && pass wide_fails_alone || fail wide_fails_alone "$(get wide)"
"$EL" run -m "$B" -p "The dog" -n 10 --temp 0 -t 1 2>/dev/null > "$TMP/plain"
[ "$(get after | jq -r '"The dog" + .text')" = "$(cat "$TMP/plain")" ] && pass after_served || fail after_served "$(get after)"
# its only request fails: exit 1 (batch --help), with the error line written
expect_exit bad_n 1 "$EL" batch -m "$B" -f <(echo '{"id": 1, "prompt": "x", "n": 0}') -t 1
grep -qF 'n\" must be a whole number from 1 to 64' "$TMP/out" && pass bad_n_message || fail bad_n_message "$(cat "$TMP/out")"
finish
