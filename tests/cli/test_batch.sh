#!/usr/bin/env bash
# `edgelora batch`: every request's text equals that of a single `edgelora run` with the same
# prompt, adapters and sampling (greedy and seeded), whatever else runs beside it; bad requests
# get error lines (with their line numbers) while the others complete; output is valid JSON in
# input order; -o writes all or nothing. Base: stories260K converted to GGUF; adapters: random
# GGUF LoRAs written by test_batch_lora_gen. Needs jq to read the output.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

M="$DATA/models"
GEN="$(dirname "$EL")/tests/test_batch_lora_gen"
if [ ! -f "$M/stories260K.bin" ]; then skip batch "$M/stories260K.bin is absent"; finish; fi
if ! command -v jq >/dev/null; then skip batch "jq is not installed"; finish; fi

B="$TMP/stories.gguf"
"$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$B" >/dev/null 2>&1 || { fail batch_convert; finish; }
mkdir -p "$TMP/loras"
"$GEN" "$B" "$TMP/loras/attn.gguf" 4 q,k,v,o 1 0.6 &&
    "$GEN" "$B" "$TMP/loras/ffn.gguf" 8 gate,up,down 2 0.6 &&
    "$GEN" "$B" "$TMP/loras/all.gguf" 2 q,k,v,o,gate,up,down 3 0.5 &&
    "$GEN" "$B" "$TMP/loras/peftqv" 3 q,v,up 5 0.6 peft &&
    "$GEN" "$B" "$TMP/loras/wrongarch.gguf" 4 q 4 0.5 badarch || { fail batch_make_adapters; finish; }

# single runs with adapters need `run --lora` (the lora branch); without it those are skipped
has_lora=0; "$EL" run --help | grep -q -- --lora-scaled && has_lora=1
# the adapters must change the text, or the comparisons below would prove nothing
base_txt=$("$EL" run -m "$B" -p "Once upon a time" -n 40 --temp 0 -t 1 2>/dev/null)
for a in attn ffn all peftqv; do
    [ $has_lora = 1 ] || { skip "adapter_${a}_changes_text" "edgelora run has no --lora"; continue; }
    f="$TMP/loras/$a.gguf"; [ -d "$TMP/loras/$a" ] && f="$TMP/loras/$a"
    t=$("$EL" run -m "$B" --lora "$f" -p "Once upon a time" -n 40 --temp 0 -t 1 2>"$TMP/err")
    if [ -n "$t" ] && [ "$t" != "$base_txt" ]; then pass "adapter_${a}_changes_text"; else
        fail "adapter_${a}_changes_text" "same text as the base: $t" "$(head -c 300 "$TMP/err")"; fi
done

# requests: id, prompt, n_predict, temperature, seed, adapters (as `run` flags), in order
R="$TMP/req.jsonl"
: > "$R"
ids=() prompts=() npreds=() temps=() seeds=() lflags=()
add() { # id-json prompt n_predict temp seed adapter-json run-lora-flags
    local p_json; p_json=$(jq -Rn --arg p "$2" '$p')
    local extra=""; [ -n "$6" ] && extra=", \"adapter\": $6"
    echo "{\"id\": $1, \"prompt\": $p_json, \"n_predict\": $3, \"temperature\": $4, \"seed\": $5$extra}" >> "$R"
    ids+=("$1") prompts+=("$2") npreds+=("$3") temps+=("$4") seeds+=("$5") lflags+=("$7")
}
add 1 "Once upon a time" 40 0 1 "" ""
add '"attn"' "Once upon a time" 40 0 1 '"attn"' "--lora $TMP/loras/attn.gguf"
add '"ffn"' "The little dog" 60 0 1 '"ffn"' "--lora $TMP/loras/ffn.gguf"
add 4 "Lily and Tom" 50 0 1 '[{"name": "attn", "scale": 0.5}, {"name": "ffn", "scale": 1.5}]' \
    "--lora-scaled $TMP/loras/attn.gguf 0.5 --lora-scaled $TMP/loras/ffn.gguf 1.5"
add '"q\"uote"' 'She said "hi"
and left. ☃ é 日本' 30 0 1 '"all"' "--lora $TMP/loras/all.gguf"
add 6 "Once upon a time" 45 0.9 7 "" ""
add 7 "Once upon a time" 45 0.9 7 '"attn"' "--lora $TMP/loras/attn.gguf"
add 8 "A big red ball" 35 1.0 123 '[{"name": "all", "scale": 2}]' "--lora-scaled $TMP/loras/all.gguf 2"
add 9 "Tom" 200 0 1 '[]' ""
add 10 "One day" 40 0.8 99 '[{"name": "peftqv"}, {"name": "attn", "scale": -1}]' \
    "--lora $TMP/loras/peftqv --lora-scaled $TMP/loras/attn.gguf -1"
n_ok=${#ids[@]}
# requests that must fail, each on its own line: unknown adapter, malformed JSON, unknown field,
# wrong type, an adapter that does not fit
echo '{"id": "unk", "prompt": "Hi", "n_predict": 5, "adapter": "nosuch"}' >> "$R"
echo '{"id": "trunc", "prompt": "Hi", ' >> "$R"
echo '{"id": "typo", "prompt": "Hi", "temprature": 0}' >> "$R"
echo '{"id": "type", "prompt": 5}' >> "$R"
echo '{"id": "arch", "prompt": "Hi", "adapter": "wrongarch"}' >> "$R"
echo '' >> "$R"
echo '{"id": 11, "prompt": "The end", "n_predict": 20, "temperature": 0}' >> "$R"
ids+=(11) prompts+=("The end") npreds+=(20) temps+=(0) seeds+=(1) lflags+=("")

expect_exit batch_runs 0 "$EL" batch -m "$B" --lora-dir "$TMP/loras" -f "$R" --parallel 3 -b 7 -t 1
cp "$TMP/out" "$TMP/batch.jsonl"

# one valid JSON object a line, one line per non-blank request line, ids in input order
n_lines=$(wc -l < "$TMP/batch.jsonl")
if [ "$n_lines" -eq 16 ] && jq -e . "$TMP/batch.jsonl" >/dev/null 2>&1; then pass batch_json_lines; else
    fail batch_json_lines "$n_lines lines" "$(head -c 600 "$TMP/batch.jsonl")"; fi
got_ids=$(jq -c .id "$TMP/batch.jsonl" | tr '\n' ' ')
want_ids='1 "attn" "ffn" 4 "q\"uote" 6 7 8 9 10 "unk" null "typo" "type" "arch" 11 '
[ "$got_ids" = "$want_ids" ] && pass batch_order_and_ids || fail batch_order_and_ids "got:  $got_ids" "want: $want_ids"

# each successful request: its text equals a single run's (which prints prompt + text + "\n")
check_single() { # index-in-arrays output-line-number
    local i=$1 ln=$2
    jq -s ".[$((ln - 1))]" "$TMP/batch.jsonl" > "$TMP/line.json"
    { printf '%s' "${prompts[$i]}"; jq -j '.text' "$TMP/line.json"; echo; } > "$TMP/want.txt"
    # shellcheck disable=SC2086
    "$EL" run -m "$B" ${lflags[$i]} -p "${prompts[$i]}" -n "${npreds[$i]}" --temp "${temps[$i]}" \
        --seed "${seeds[$i]}" -t 1 > "$TMP/single.txt" 2>"$TMP/err"
    local name="batch_equals_run_${ln}"
    [ $has_lora = 1 ] || [ -z "${lflags[$i]}" ] || { skip "$name" "edgelora run has no --lora"; return; }
    if [ "$(jq -r .error "$TMP/line.json")" = null ] && cmp -s "$TMP/single.txt" "$TMP/want.txt"; then pass "$name"; else
        fail "$name" "run: $(head -c 300 "$TMP/single.txt")" "batch: $(head -c 300 "$TMP/line.json")" "$(head -c 200 "$TMP/err")"; fi
}
for i in $(seq 0 $((n_ok - 1))); do check_single "$i" $((i + 1)); done
check_single $n_ok 16

# token counts and finish reasons
jq -s -e '.[0].tokens_generated == 40 and .[0].finish_reason == "length" and .[0].tokens_prompt == 5
          and (.[8].finish_reason == "eos") == (.[8].tokens_generated < 200)
          and ([.[] | select(.text) | .time_ms >= 0] | all)' "$TMP/batch.jsonl" >/dev/null &&
    pass batch_counts || fail batch_counts "$(head -c 400 "$TMP/batch.jsonl")"

# the failing requests: each error names the file, its line, and the problem
check_error() { # output-line expected-fragment
    local e; e=$(jq -s -r ".[$(($1 - 1))].error" "$TMP/batch.jsonl")
    if [[ "$e" == *"$2"* ]]; then pass "batch_error_line_$1"; else fail "batch_error_line_$1" "got: $e" "want: *$2*"; fi
}
check_error 11 "req.jsonl:11: unknown adapter 'nosuch'"
check_error 12 "req.jsonl:12:33: "
check_error 13 "req.jsonl:13: unknown field \"temprature\""
check_error 14 "req.jsonl:14: \"prompt\" (a string) is missing"
check_error 15 "req.jsonl:15: adapter 'wrongarch' cannot be used"

# the result does not depend on how many run at once, nor on the batch size
"$EL" batch -m "$B" --lora-dir "$TMP/loras" -f "$R" --parallel 1 -t 1 2>/dev/null | jq -c 'del(.time_ms)' > "$TMP/p1.jsonl"
"$EL" batch -m "$B" --lora-dir "$TMP/loras" -f "$R" --parallel 8 -t 2 2>/dev/null | jq -c 'del(.time_ms)' > "$TMP/p8.jsonl"
jq -c 'del(.time_ms)' "$TMP/batch.jsonl" > "$TMP/p3.jsonl"
cmp -s "$TMP/p1.jsonl" "$TMP/p3.jsonl" && cmp -s "$TMP/p8.jsonl" "$TMP/p3.jsonl" && pass batch_parallel_invariant ||
    fail batch_parallel_invariant "$(diff "$TMP/p1.jsonl" "$TMP/p8.jsonl" | head -5)"

# continuous batching under pressure: 24 requests of random lengths, adapters and sampling, 4 at
# a time with 5 rows a step (prompts split across steps, cells of finished requests reused); each
# equals its single run. n_predict -1 with -c 24 stops where the 24 cells of the context end.
RANDOM=11
: > "$TMP/stress.jsonl"; : > "$TMP/stress.args"
names=("" attn ffn peftqv) sprompts=("Once upon a time" "The little dog" "Lily and Tom" "One day" "Tom")
for i in $(seq 1 24); do
    p=${sprompts[$((RANDOM % 5))]} n=$((RANDOM % 60 + 1)) t=$((RANDOM % 2)) s=$RANDOM a=${names[$((RANDOM % 4))]}
    [ $((i % 8)) = 0 ] && n=-1
    aj="" af=""
    [ -n "$a" ] && { aj=", \"adapter\": \"$a\""; f="$TMP/loras/$a.gguf"; [ -d "$TMP/loras/$a" ] && f="$TMP/loras/$a"; af="--lora $f"; }
    echo "{\"id\": $i, \"prompt\": $(jq -Rn --arg p "$p" '$p'), \"n_predict\": $n, \"temperature\": $t, \"seed\": $s$aj}" >> "$TMP/stress.jsonl"
    printf '%s\t%s\t%s\t%s\t%s\n' "$p" "$n" "$t" "$s" "$af" >> "$TMP/stress.args"
done
if [ $has_lora = 1 ]; then
    "$EL" batch -m "$B" --lora-dir "$TMP/loras" -f "$TMP/stress.jsonl" --parallel 4 -b 5 -c 24 -t 1 > "$TMP/stress.out" 2>"$TMP/err"
    bad=() i=0
    while IFS=$'\t' read -r p n t s af; do
        i=$((i + 1))
        # shellcheck disable=SC2086
        want=$("$EL" run -m "$B" $af -p "$p" -n "$n" --temp "$t" -s "$s" -c 24 -t 1 2>/dev/null)
        got="$p$(sed -n "${i}p" "$TMP/stress.out" | jq -j .text)"
        [ -n "$want" ] && [ "$want" = "$got" ] || bad+=("$i: run [$want] batch [$got]")
    done < "$TMP/stress.args"
    [ "$i" = 24 ] && [ ${#bad[@]} = 0 ] && pass batch_stress_equals_run || fail batch_stress_equals_run "${bad[@]:0:3}" "$(head -c 300 "$TMP/err")"
    jq -s -e '[.[] | .tokens_prompt + .tokens_generated <= 24] | all' "$TMP/stress.out" >/dev/null &&
        pass batch_stress_context_limit || fail batch_stress_context_limit
else
    skip batch_stress_equals_run "edgelora run has no --lora"
fi

# a request without a seed gets -s S plus its line number
printf '%s\n' '{"id": 1, "prompt": "Once", "n_predict": 30, "temperature": 1}' '' \
    '{"id": 2, "prompt": "Once", "n_predict": 30, "temperature": 1}' > "$TMP/seedless.jsonl"
"$EL" batch -m "$B" -f "$TMP/seedless.jsonl" -s 100 -t 1 2>/dev/null > "$TMP/seedless.out"
w1=$("$EL" run -m "$B" -p Once -n 30 --temp 1 -s 101 -t 1 2>/dev/null)
w3=$("$EL" run -m "$B" -p Once -n 30 --temp 1 -s 103 -t 1 2>/dev/null)
g1="Once$(sed -n 1p "$TMP/seedless.out" | jq -j .text)" g3="Once$(sed -n 2p "$TMP/seedless.out" | jq -j .text)"
[ -n "$w1" ] && [ "$g1" = "$w1" ] && [ "$g3" = "$w3" ] && [ "$w1" != "$w3" ] && pass batch_default_seed ||
    fail batch_default_seed "run -s 101: $w1" "batch line 1: $g1" "run -s 103: $w3" "batch line 3: $g3"

# -o: the same lines in the file; on failure an existing file is left as it was, and nothing else
expect_exit batch_output_no_dir 1 "$EL" batch -m "$B" --lora-dir "$TMP/loras" -f "$R" -o "$TMP/o/out.jsonl" -t 1
mkdir -p "$TMP/o"
expect_exit batch_output_file 0 "$EL" batch -m "$B" --lora-dir "$TMP/loras" -f "$R" -o "$TMP/o/out.jsonl" -t 1
jq -c 'del(.time_ms)' "$TMP/o/out.jsonl" | cmp -s - "$TMP/p3.jsonl" && [ ! -s "$TMP/out" ] && pass batch_output_file_content ||
    fail batch_output_file_content
[ "$(stat -c %a "$TMP/o/out.jsonl")" = "$(printf '%o' $((0666 & ~0$(umask))))" ] && pass batch_output_file_mode ||
    fail batch_output_file_mode "$(stat -c %a "$TMP/o/out.jsonl") with umask $(umask)"
echo old > "$TMP/o/keep.jsonl"
expect_exit batch_output_bad_model 1 "$EL" batch -m "$TMP/nonexistent.gguf" -f "$R" -o "$TMP/o/keep.jsonl"
expect_exit batch_output_bad_requests 1 "$EL" batch -m "$B" -f "$TMP/nonexistent.jsonl" -o "$TMP/o/keep.jsonl"
[ "$(cat "$TMP/o/keep.jsonl")" = old ] && [ "$(ls "$TMP/o" | wc -l)" -eq 2 ] && pass batch_output_untouched_on_failure ||
    fail batch_output_untouched_on_failure "$(ls "$TMP/o")"

# usage errors
expect_exit batch_no_file 2 "$EL" batch -m "$B"
expect_exit batch_bad_parallel 2 "$EL" batch -m "$B" -f "$R" --parallel 0
expect_exit batch_bad_option 2 "$EL" batch -m "$B" -f "$R" --frobnicate
expect_exit batch_missing_dir 1 "$EL" batch -m "$B" -f "$R" --lora-dir "$TMP/nonexistent"
expect_exit batch_help 0 "$EL" batch --help
finish
