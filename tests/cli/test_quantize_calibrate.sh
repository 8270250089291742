#!/usr/bin/env bash
# `edgelora quantize --calibrate`: static activation scales written beside each weight (read back
# with `edgelora info`), the perplexity with static and with per-token scales on held-out text,
# and refusals that leave no file.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

B=models/base.gguf
if [ ! -f "$B" ]; then skip quantize_calibrate "$B is absent"; finish; fi
cat > "$TMP/calib.txt" <<'TEXT'
The quick brown fox jumps over the lazy dog. A small village lay at the foot of the hills, and
every morning the baker opened his shop before the sun rose. Children ran along the river,
counting boats, while their parents talked about the weather and the price of bread.
TEXT

expect_exit calibrate_w4 0 "$EL" quantize "$B" "$TMP/w4s.gguf" --type w4 --calibrate "$TMP/calib.txt" --calib-tokens 300 -t 1
# every matmul converted to w4 gets a scale: the layers' and the output head's (token_embd,
# untied, is no matmul input; a weight whose rows do not fit w4's blocks stays in float)
n=$(grep -c ' -> w4 .*act\. scale [0-9.e-]*$' "$TMP/out")
want=$(grep ' -> w4 ' "$TMP/out" | grep -vc 'token_embd.weight')
[ "$n" -eq "$want" ] && [ "$n" -ge 8 ] && ! grep -q 'token_embd.weight .*act\. scale' "$TMP/out" && pass calibrate_report || fail calibrate_report "$n scales" "$(head -3 "$TMP/out")"
grep -q "^static activation scales: the 99.99th percentile of |x| over [0-9]* tokens of $TMP/calib.txt$" "$TMP/out" && pass calibrate_summary || fail calibrate_summary "$(tail -2 "$TMP/out")"
"$EL" info "$TMP/w4s.gguf" > "$TMP/info" 2>&1
n=$(grep -c '\.act_scale: f32 \[1\]' "$TMP/info")
[ "$n" -eq "$want" ] && grep -q 'blk.3.attn_q.weight.act_scale: f32' "$TMP/info" && pass calibrate_info || fail calibrate_info "$n scale tensors"
# requantizing drops the input's scales (they belonged to its weights) unless calibrated again
expect_exit requantize 0 "$EL" quantize "$TMP/w4s.gguf" "$TMP/re.gguf" --type w8 -t 1
"$EL" info "$TMP/re.gguf" > "$TMP/info" 2>&1
! grep -q 'act_scale' "$TMP/info" && grep -Eq '\[ *([0-9]+)/\1\] output.weight' "$TMP/out" && pass requantize_drops_scales || fail requantize_drops_scales "$(grep act_scale "$TMP/info" | head -2)"
expect_exit calibrate_runs 0 "$EL" run -m "$TMP/w4s.gguf" -p "The village" -n 8 --temp 0 -t 1

expect_exit calibrate_not_edge_type 1 "$EL" quantize "$B" "$TMP/x.gguf" --type q8_0 --calibrate "$TMP/calib.txt"
grep -q 'int8 activations' "$TMP/err" && pass calibrate_not_edge_type_message || fail calibrate_not_edge_type_message "$(cat "$TMP/err")"
expect_exit calibrate_no_text 1 "$EL" quantize "$B" "$TMP/x.gguf" --type w8 --calibrate "$TMP/none.txt"
grep -q "$TMP/none.txt" "$TMP/err" && pass calibrate_no_text_message || fail calibrate_no_text_message "$(cat "$TMP/err")"
expect_exit calibrate_bad_tokens 2 "$EL" quantize "$B" "$TMP/x.gguf" --type w8 --calibrate "$TMP/calib.txt" --calib-tokens 0
expect_exit calibrate_bad_percentile 2 "$EL" quantize "$B" "$TMP/x.gguf" --type w8 --calibrate "$TMP/calib.txt" --calib-percentile 80
expect_exit calibrate_no_file_arg 2 "$EL" quantize "$B" "$TMP/x.gguf" --type w8 --calibrate
ls "$TMP" | grep -q 'x.gguf' && fail calibrate_no_leftovers "$(ls "$TMP")" || pass calibrate_no_leftovers

C="$DATA/corpus/en.txt"
if [ ! -f "$C" ]; then skip calibrate_perplexity "$C is absent"; finish; fi
head -n 300 "$C" > "$TMP/train.txt"
tail -n 60 "$C" > "$TMP/heldout.txt"
expect_exit calibrate_ppl 0 "$EL" quantize "$B" "$TMP/w8s.gguf" --type w8 --calibrate "$TMP/train.txt" --calib-tokens 2048 --ppl-text "$TMP/heldout.txt" -c 128 -t 1
# w8 with either kind of scale stays within 5% of the float model (measured on the last 200
# lines, calibrated on 8192 tokens: +0.09% static, +0.03% per-token); both lines are there
s=$(grep '^perplexity over.*with static activation scales$' "$TMP/out")
d=$(grep '^perplexity over.*with per-token activation scales$' "$TMP/out")
if awk -v s="$s" -v d="$d" 'BEGIN { split(s, a, " "); split(d, b, " ");
        exit !(a[6] > 1 && a[6] == b[6] && (a[8] / a[6] - 1) ^ 2 < 0.05 ^ 2 && (b[8] / b[6] - 1) ^ 2 < 0.05 ^ 2) }'; then
    pass calibrate_ppl_change; else fail calibrate_ppl_change "$s" "$d"; fi
finish
