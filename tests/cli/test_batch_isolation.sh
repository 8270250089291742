#!/usr/bin/env bash
# `edgelora batch`: one request never stops a batch. Among good requests, one bad request of
# each kind (parameters the sampler refuses, an adapter that is not a file of adapters, an
# adapter of another architecture, a prompt longer than the context) gets an error line with a
# message, and every good request's output is the same as in a batch without the bad ones. Exit
# status: 0 if any request succeeded, 1 (with the error lines written) if none did.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

M="$DATA/models"
GEN="$(dirname "$EL")/tests/test_batch_lora_gen"
if [ ! -f "$M/stories260K.bin" ]; then skip batch_isolation "$M/stories260K.bin is absent"; finish; fi
if ! command -v jq >/dev/null; then skip batch_isolation "jq is not installed"; finish; fi

B="$TMP/stories.gguf"
"$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$B" >/dev/null 2>&1 || { fail batch_isolation_convert; finish; }
mkdir -p "$TMP/loras"
"$GEN" "$B" "$TMP/loras/attn.gguf" 4 q,k,v,o 1 0.6 &&
    "$GEN" "$B" "$TMP/loras/wrongarch.gguf" 4 q 4 0.5 badarch || { fail batch_isolation_adapters; finish; }
head -c 300 "$B" > "$TMP/loras/cut.gguf" # a GGUF cut short

good=(
    '{"id": "g1", "prompt": "Once upon a time", "n_predict": 30, "temperature": 0}'
    '{"id": "g2", "prompt": "The little dog", "n_predict": 30, "temperature": 0.8, "seed": 3, "adapter": "attn"}'
    '{"id": "g3", "prompt": "Lily", "n_predict": 20, "temperature": 1, "seed": 9, "n": 2}'
    '{"id": "g4", "prompt": "Tom", "n_predict": 25, "temperature": 0}'
)
long=$(printf 'Once upon a time %.0s' $(seq 20))
bad=(
    '{"id": "penalty", "prompt": "Hi", "n_predict": 5, "repeat_penalty": 0}'
    '{"id": "cut", "prompt": "Hi", "n_predict": 5, "adapter": "cut"}'
    '{"id": "arch", "prompt": "Hi", "n_predict": 5, "adapter": "wrongarch"}'
    "{\"id\": \"long\", \"prompt\": \"$long\", \"n_predict\": 5}"
)
printf '%s\n' "${good[@]}" > "$TMP/good.jsonl"
{ echo "${good[0]}"; echo "${bad[0]}"; echo "${good[1]}"; echo "${bad[1]}"; echo "${bad[2]}"
  echo "${good[2]}"; echo "${bad[3]}"; echo "${good[3]}"; } > "$TMP/mixed.jsonl"
run_batch() { "$EL" batch -m "$B" --lora-dir "$TMP/loras" -f "$1" --parallel 3 -c 48 -t 1; }

expect_exit batch_isolation_good_only 0 run_batch "$TMP/good.jsonl"
jq -c 'del(.time_ms)' "$TMP/out" > "$TMP/good.out"
expect_exit batch_isolation_mixed_succeeds 0 run_batch "$TMP/mixed.jsonl"
cp "$TMP/out" "$TMP/mixed.out"

# the good ones, lines 1 3 6 8 of the mixed batch, as in the batch of good ones alone
jq -c 'del(.time_ms)' "$TMP/mixed.out" | sed -n '1p;3p;6p;8p' > "$TMP/mixed.good"
if [ -s "$TMP/good.out" ] && [ "$(jq -r 'select(.error) | .id' "$TMP/good.out")" = "" ] &&
    cmp -s "$TMP/good.out" "$TMP/mixed.good"; then pass batch_isolation_good_unchanged; else
    fail batch_isolation_good_unchanged "$(diff "$TMP/good.out" "$TMP/mixed.good" | head -6)"; fi

check_bad() { # line id fragment-of-the-message
    local got; got=$(sed -n "$1p" "$TMP/mixed.out" | jq -r 'select(.id == "'"$2"'") | .error')
    if [[ "$got" == *"$3"* ]] && [[ "$got" == *"mixed.jsonl:$1:"* ]]; then pass "batch_isolation_error_$2"; else
        fail "batch_isolation_error_$2" "got: $got" "want: *mixed.jsonl:$1:*$3*"; fi
}
check_bad 2 penalty "repeat_penalty must be greater than 0"
check_bad 4 cut "adapter 'cut' cannot be used"
check_bad 5 arch "adapter 'wrongarch' cannot be used"
check_bad 7 long "more than the context"
n=$(jq -s 'length' "$TMP/mixed.out")
[ "$n" = 8 ] && pass batch_isolation_one_line_each || fail batch_isolation_one_line_each "$n lines"

# nothing succeeds: exit 1, and the error lines are still there (to stdout and to -o)
printf '%s\n' "${bad[@]}" > "$TMP/bad.jsonl"
expect_exit batch_isolation_all_failed 1 run_batch "$TMP/bad.jsonl"
n=$(jq -s '[.[] | select(.error)] | length' "$TMP/out")
[ "$n" = 4 ] && grep -q "every request failed" "$TMP/err" && pass batch_isolation_all_failed_lines ||
    fail batch_isolation_all_failed_lines "$n error lines" "$(head -c 300 "$TMP/err")"
expect_exit batch_isolation_all_failed_file 1 "$EL" batch -m "$B" --lora-dir "$TMP/loras" -f "$TMP/bad.jsonl" -c 48 -t 1 -o "$TMP/bad.out"
[ "$(jq -s 'length' "$TMP/bad.out" 2>/dev/null)" = 4 ] && pass batch_isolation_all_failed_file_lines ||
    fail batch_isolation_all_failed_file_lines "$(ls "$TMP")"
finish
