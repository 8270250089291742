#!/usr/bin/env bash
# `edgelora compress` and `edgelora plot` from the command line: option errors (exit 2, a
# message naming the option), bad rates and bad input (exit 1, no output file), --slice on a
# file in the UniQL layout refused, and a plot of a small table (its curves' points in the SVG).
# The pipeline's results are checked by test_compress, test_sort and test_gptq.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

C="$DATA/corpus/en.txt"
B=models/base.gguf
expect_exit compress_no_calib 2 "$EL" compress -m "$B" -o "$TMP/x.gguf"
grep -q -- '-f CALIB.txt' "$TMP/err" && pass compress_no_calib_message || fail compress_no_calib_message "$(cat "$TMP/err")"
expect_exit compress_bad_group 2 "$EL" compress -m "$B" -f "$C" -o "$TMP/x.gguf" --group x
expect_exit compress_unknown 2 "$EL" compress -m "$B" -f "$C" -o "$TMP/x.gguf" --fast
expect_exit compress_rate_range 2 "$EL" compress -m "$B" -f "$C" -o "$TMP/x.gguf" --rates 0,1.5
expect_exit compress_rates_descending 1 "$EL" compress -m "$B" -f "$C" -o "$TMP/x.gguf" --rates 0,0.3,0.2
grep -q 'rates must ascend' "$TMP/err" && pass compress_rates_message || fail compress_rates_message "$(cat "$TMP/err")"
expect_exit compress_bad_type 1 "$EL" compress -m "$B" -f "$C" -o "$TMP/x.gguf" --type q8_0
grep -q "type 'q8_0' is not a 4-bit type" "$TMP/err" && pass compress_bad_type_message || fail compress_bad_type_message "$(cat "$TMP/err")"
echo "too short" > "$TMP/short.txt"
expect_exit compress_short_text 1 "$EL" compress -m "$B" -f "$TMP/short.txt" -o "$TMP/x.gguf"
grep -q "$TMP/short.txt: calibration text too short" "$TMP/err" && pass compress_short_message || fail compress_short_message "$(cat "$TMP/err")"
expect_exit finetune_opts_alone 2 "$EL" compress -m "$B" -f "$C" -o "$TMP/x.gguf" --finetune-rank 4
grep -q 'need --finetune STEPS' "$TMP/err" && pass finetune_opts_alone_message || fail finetune_opts_alone_message "$(cat "$TMP/err")"
expect_exit finetune_zero_steps 2 "$EL" compress -m "$B" -f "$C" -o "$TMP/x.gguf" --finetune 0
expect_exit slice_with_finetune 2 "$EL" compress --slice 0.2 -m "$B" -o "$TMP/x.gguf" --finetune 10
expect_exit finetune_missing_text 1 "$EL" compress -m "$B" -f "$C" -o "$TMP/x.gguf" --finetune 10 --finetune-text "$TMP/none.txt"
grep -q "$TMP/none.txt: cannot open the fine-tuning text" "$TMP/err" && pass finetune_missing_text_message || fail finetune_missing_text_message "$(cat "$TMP/err")"
expect_exit lora_without_out 2 "$EL" compress -m "$B" -f "$C" -o "$TMP/x.gguf" --lora models/translate-de.gguf
grep -q -- '--lora FILE and --lora-out DIR go together' "$TMP/err" && pass lora_without_out_message || fail lora_without_out_message "$(cat "$TMP/err")"
# an adapter of another model (the W4A8 model's FFN is wider) is refused before the calibration
expect_exit lora_mismatch 1 "$EL" compress -m "$B" -f "$C" -o "$TMP/x.gguf" --lora models/w4a8/translate-de.gguf --lora-out "$TMP/ads"
grep -q 'models/w4a8/translate-de.gguf' "$TMP/err" && ! grep -q calibrate "$TMP/err" && pass lora_mismatch_message || fail lora_mismatch_message "$(cat "$TMP/err")"
[ -z "$(ls -A "$TMP/ads" 2>/dev/null)" ] && pass lora_mismatch_writes_nothing || fail lora_mismatch_writes_nothing "$(ls "$TMP/ads")"
expect_exit compress_missing_model 1 "$EL" compress -m "$TMP/none.gguf" -f "$C" -o "$TMP/x.gguf"
ls "$TMP" | grep -q 'x.gguf' && fail compress_no_leftovers "$(ls "$TMP")" || pass compress_no_leftovers

if [ -f models/base.uniql.gguf ]; then
    expect_exit slice_layout_refused 1 "$EL" compress --slice 0.2 -m models/base.uniql.gguf -o "$TMP/x.gguf"
    grep -q 'UniQL layout' "$TMP/err" && [ ! -e "$TMP/x.gguf" ] && pass slice_layout_message || fail slice_layout_message "$(cat "$TMP/err")"
    # a calibration text of our own: the refusal must not depend on the shared corpus
    for i in $(seq 400); do echo "The quick brown fox jumps over the lazy dog, line $i."; done > "$TMP/calib.txt"
    expect_exit compress_compressed_input 1 "$EL" compress -m models/base.uniql.gguf -f "$TMP/calib.txt" -o "$TMP/x.gguf"
    grep -q 'already compressed' "$TMP/err" && pass compress_compressed_message || fail compress_compressed_message "$(cat "$TMP/err")"
fi

printf 'variant\trate\tppl\nsorted\t0\t50\nsorted\t0.25\t55\nunsorted\t0\t50\nunsorted\t0.25\t80\n' > "$TMP/t.tsv"
expect_exit plot_table 0 "$EL" plot -i "$TMP/t.tsv" -x rate -y ppl --series variant -o "$TMP/t.svg"
[ "$(grep -c '<polyline' "$TMP/t.svg")" -eq 2 ] && grep -q '>unsorted<' "$TMP/t.svg" && pass plot_curves || fail plot_curves "$(head -c 300 "$TMP/t.svg")"
printf 'rate\tppl\n0\tabc\n' > "$TMP/bad.tsv"
expect_exit plot_not_number 1 "$EL" plot -i "$TMP/bad.tsv" -x rate -y ppl -o "$TMP/b.svg"
grep -q "bad.tsv:2: .* is not a number" "$TMP/err" && [ ! -e "$TMP/b.svg" ] && pass plot_not_number_message || fail plot_not_number_message "$(cat "$TMP/err")"
expect_exit plot_no_column 1 "$EL" plot -i "$TMP/t.tsv" -x rate -y loss -o "$TMP/b.svg"
grep -q "no column 'loss'" "$TMP/err" && pass plot_no_column_message || fail plot_no_column_message "$(cat "$TMP/err")"
finish
