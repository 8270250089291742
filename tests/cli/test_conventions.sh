#!/usr/bin/env bash
# What users bring from llama.cpp: stop strings (run --stop, a batch request's "stop") cutting
# the plain greedy text before their first occurrence, "max_tokens" beside "n_predict", `run -n 0`
# (the prompt alone), a warning past the training context, perplexity over the model's own
# context by default, and progress as lines in a log.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

P="Once upon a time"
expect_exit conv_plain 0 "$EL" run -p "$P" -n 30 --temp 0 -t 1
plain=$(cat "$TMP/out")
gen=${plain#"$P"}
# the stop strings: one in the middle of the text, one never in it
stop=$(printf '%s' "$gen" | cut -c 6-14)
want="$P${gen%%"$stop"*}"
expect_exit conv_run_stop 0 "$EL" run -p "$P" -n 30 --temp 0 -t 1 --stop zzzq --stop "$stop"
[ "$(cat "$TMP/out")" = "$want" ] && pass conv_run_stop_text || fail conv_run_stop_text "got [$(cat "$TMP/out")] want [$want]"
expect_exit conv_run_stop_absent 0 "$EL" run -p "$P" -n 30 --temp 0 -t 1 --stop zzzq
[ "$(cat "$TMP/out")" = "$plain" ] && pass conv_run_stop_absent_text || fail conv_run_stop_absent_text "$(cat "$TMP/out")"
expect_exit conv_run_stop_empty 2 "$EL" run -p "$P" --stop ""

# batch: "stop" (a string or a list) and "max_tokens"; the text before the stop, finish "stop"
esc=$(printf '%s' "$stop" | sed 's/\\/\\\\/g; s/"/\\"/g')
{
    echo "{\"id\": 1, \"prompt\": \"$P\", \"max_tokens\": 30, \"temperature\": 0, \"stop\": \"$esc\"}"
    echo "{\"id\": 2, \"prompt\": \"$P\", \"max_tokens\": 30, \"temperature\": 0, \"stop\": [\"zzzq\", \"$esc\"]}"
    echo "{\"id\": 3, \"prompt\": \"$P\", \"max_tokens\": 30, \"temperature\": 0}"
    echo "{\"id\": 4, \"prompt\": \"x\", \"n_predict\": 3, \"max_tokens\": 3}"
    echo "{\"id\": 5, \"prompt\": \"x\", \"stop\": [\"\"]}"
    echo "{\"id\": 6, \"prompt\": \"x\", \"stop\": [\"a\"], \"n\": 2}"
} > "$TMP/req.jsonl"
expect_exit conv_batch 0 "$EL" batch -f "$TMP/req.jsonl" -t 1
out=$(cat "$TMP/out")
cut_json=$(printf '%s' "${gen%%"$stop"*}" | sed 's/\\/\\\\/g; s/"/\\"/g')
gen_json=$(printf '%s' "$gen" | sed 's/\\/\\\\/g; s/"/\\"/g')
line() { sed -n "${1}p" "$TMP/out"; }
for i in 1 2; do
    line $i | grep -qF "\"text\":\"$cut_json\"," && line $i | grep -q '"finish_reason":"stop"' &&
        pass "conv_batch_stop_$i" || fail "conv_batch_stop_$i" "$(line $i)" "want text [$cut_json]"
done
line 3 | grep -qF "\"text\":\"$gen_json\"," && line 3 | grep -q '"tokens_generated":30,' &&
    pass conv_batch_max_tokens || fail conv_batch_max_tokens "$(line 3)"
line 4 | grep -q 'give \\"n_predict\\" or \\"max_tokens\\", not both' && pass conv_batch_both || fail conv_batch_both "$(line 4)"
line 5 | grep -q '\\"stop\\" must be a string or a list' && pass conv_batch_stop_empty || fail conv_batch_stop_empty "$(line 5)"
line 6 | grep -q '\\"stop\\" does not yet work with \\"n\\"' && pass conv_batch_stop_n || fail conv_batch_stop_n "$(line 6)"

# -n 0: the prompt, nothing generated, exit 0
expect_exit conv_run_n0 0 "$EL" run -p "$P" -n 0 -t 1
[ "$(cat "$TMP/out")" = "$P" ] && pass conv_run_n0_prompt || fail conv_run_n0_prompt "$(cat "$TMP/out")"
# and no rate made up from a prompt that was never decoded
grep -q "not decoded (no tokens to generate)" "$TMP/err" && ! grep -q "tokens/s" "$TMP/err" &&
    pass conv_run_n0_timings || fail conv_run_n0_timings "$(cat "$TMP/err")"
# past the training context (the default model's is 128): a warning, the run goes on
expect_exit conv_ctx_past 0 "$EL" run -p "$P" -n 4 -c 256 --temp 0 -t 1
grep -q "warning: a context of 256 tokens passes the 128 the model was trained on" "$TMP/err" &&
    pass conv_ctx_past_warning || fail conv_ctx_past_warning "$(cat "$TMP/err")"
expect_exit conv_ctx_within 0 "$EL" run -p "$P" -n 4 --temp 0 -t 1
grep -q "warning" "$TMP/err" && fail conv_ctx_within_quiet "$(cat "$TMP/err")" || pass conv_ctx_within_quiet

# perplexity: windows of the model's own 128 by default; -c 512 warns; a log gets lines
head -c 12000 "$DATA/corpus/en.txt" > "$TMP/en.txt" 2>/dev/null || head -c 12000 README.md > "$TMP/en.txt"
expect_exit conv_ppl_default 0 "$EL" perplexity -f "$TMP/en.txt" -t 1
grep -q "chunks of 128)" "$TMP/out" && pass conv_ppl_model_context || fail conv_ppl_model_context "$(cat "$TMP/out")"
grep -q $'\r' "$TMP/err" && fail conv_ppl_log_lines "a carriage return in a log" || pass conv_ppl_log_lines
grep -q "^chunk [0-9]*/[0-9]*  ppl " "$TMP/err" && pass conv_ppl_progress_lines || fail conv_ppl_progress_lines "$(head -c 300 "$TMP/err")"
expect_exit conv_ppl_512 0 "$EL" perplexity -f "$TMP/en.txt" -t 1 -c 512
grep -q "warning: a context of 512 tokens passes the 128" "$TMP/err" && pass conv_ppl_512_warns || fail conv_ppl_512_warns "$(head -c 300 "$TMP/err")"
finish
