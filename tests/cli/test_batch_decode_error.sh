#!/usr/bin/env bash
# `edgelora batch`: a request whose el_decode fails mid-generation gets an error line, and the
# others complete with the output they have in a batch without it. Nothing real makes el_decode
# fail for one request (batch sizes the KV cache so that none can overflow it), so the program
# under test is build/tests/edgelora-decode-fault, the CLI linked with tests/fault_decode.c: its
# el_decode fails, changing nothing, for a batch with a row at position EL_TEST_DECODE_FAIL_POS.
# The bad request has the longest prompt and is the only one to reach that position, after it
# has generated a few tokens; the step that holds its row and the others' rows fails, then each
# request's rows are decoded alone (decode_each), so that only its own fail.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

FAULT="$(dirname "$EL")/tests/edgelora-decode-fault"
B=models/base.gguf
if [ ! -x "$FAULT" ]; then skip batch_decode_error "$FAULT is not built"; finish; fi
if ! command -v jq >/dev/null; then skip batch_decode_error "jq is not installed"; finish; fi

long=$(printf 'the cat sat on the mat %.0s' $(seq 8))
n_long=$("$EL" tokenize -m "$B" --bos -p "$long" | wc -w)
P=$((n_long + 5)) # its fifth generated token is fed at this position
good=(
    '{"id": "g1", "prompt": "The weather today is", "n_predict": 30, "temperature": 0}'
    '{"id": "g2", "prompt": "Once upon a time", "n_predict": 30, "temperature": 0.8, "seed": 3}'
    '{"id": "g3", "prompt": "Hello", "n_predict": 20, "temperature": 1, "seed": 9, "n": 2}'
    '{"id": "g4", "prompt": "In the morning", "n_predict": 25, "temperature": 0}'
)
bad="{\"id\": \"bad\", \"prompt\": \"$long\", \"n_predict\": 40, \"temperature\": 0}"
printf '%s\n' "${good[@]}" > "$TMP/good.jsonl"
{ echo "${good[0]}"; echo "$bad"; echo "${good[1]}"; echo "${good[2]}"; echo "${good[3]}"; } > "$TMP/mixed.jsonl"
# --parallel 4: fewer slots than sequences (g3 takes two), so some requests wait for freed ones
run_batch() { EL_TEST_DECODE_FAIL_POS=$P "$FAULT" batch -m "$B" -f "$1" --parallel 4 -t 1; }

# without the fault the bad request is an ordinary one, longer than every good one's reach
expect_exit batch_decode_error_no_fault 0 "$FAULT" batch -m "$B" -f "$TMP/mixed.jsonl" --parallel 4 -t 1
if [ "$(jq -r 'select(.id == "bad") | .tokens_generated' "$TMP/out")" = 40 ] &&
    [ "$(jq -s '[.[] | select(.error)] | length' "$TMP/out")" = 0 ] &&
    [ "$(jq -s '[.[] | .tokens_prompt + (.tokens_generated // 0)] | max' < <(grep -v '"bad"' "$TMP/out"))" -lt "$P" ]; then
    pass batch_decode_error_only_bad_reaches; else
    fail batch_decode_error_only_bad_reaches "$(head -c 600 "$TMP/out")"; fi

expect_exit batch_decode_error_good_only 0 run_batch "$TMP/good.jsonl"
jq -c 'del(.time_ms)' "$TMP/out" > "$TMP/good.out"
expect_exit batch_decode_error_mixed_succeeds 0 run_batch "$TMP/mixed.jsonl"
cp "$TMP/out" "$TMP/mixed.out"
cp "$TMP/err" "$TMP/mixed.err"

jq -c 'del(.time_ms)' "$TMP/mixed.out" | sed -n '1p;3p;4p;5p' > "$TMP/mixed.good"
if [ "$(wc -l < "$TMP/good.out")" = 4 ] && [ "$(jq -r 'select(.error) | .id' "$TMP/good.out")" = "" ] &&
    cmp -s "$TMP/good.out" "$TMP/mixed.good"; then pass batch_decode_error_good_unchanged; else
    fail batch_decode_error_good_unchanged "$(diff "$TMP/good.out" "$TMP/mixed.good" | head -6)"; fi

got=$(sed -n 2p "$TMP/mixed.out" | jq -r 'select(.id == "bad") | .error')
if [[ "$got" == *"mixed.jsonl:2:"*"test fault: row 0 at position $P"* ]]; then
    pass batch_decode_error_line; else fail batch_decode_error_line "got: $got"; fi
n=$(jq -s 'length' "$TMP/mixed.out")
[ "$n" = 5 ] && grep -q "5 requests (1 failed)" "$TMP/mixed.err" && pass batch_decode_error_counts ||
    fail batch_decode_error_counts "$n lines" "$(tail -c 300 "$TMP/mixed.err")"

# the bad request alone: its one error line, exit 1
echo "$bad" > "$TMP/bad.jsonl"
expect_exit batch_decode_error_alone 1 run_batch "$TMP/bad.jsonl"
[ "$(jq -r '.id + " " + (.error | tostring)' "$TMP/out")" != "" ] && grep -q "every request failed" "$TMP/err" &&
    pass batch_decode_error_alone_line || fail batch_decode_error_alone_line "$(cat "$TMP/out")"
finish
