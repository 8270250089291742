#!/usr/bin/env bash
# `edgelora profile` and `--profile`: a profile calibrated for two adapters holds them unclamped,
# a third is clamped and says so; a run under the profile translates as the float adapter does;
# the committed profile loads; bad options and files are refused, leaving no file behind.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

B=models/base.gguf
if [ ! -f "$B" ]; then skip profile "$B is absent"; finish; fi
cat > "$TMP/calib.txt" <<'TEXT'
German: The file could not be saved.
Die Datei konnte nicht gespeichert werden.
Fix: Teh quick brwon fox jumps over the lazzy dog.
The quick brown fox jumps over the lazy dog. A small village lay at the foot of the hills, and
every morning the baker opened his shop before the sun rose. Children ran along the river,
counting boats, while their parents talked about the weather and the price of bread.
TEXT
P="$TMP/two.profile.gguf"
expect_exit profile_make 0 "$EL" profile -m "$B" --lora models/translate-de.gguf --lora models/typo-en.gguf --data "$TMP/calib.txt" -t 1 -o "$P"
grep -q "^wrote $P in .* (2 adapters, the 99.99th percentile" "$TMP/out" &&
    [ "$(grep -c 'int8, .* KB, 0 of [0-9]* values clamped' "$TMP/out")" -eq 2 ] && pass profile_report || fail profile_report "$(cat "$TMP/out")"
grep -q 'ETA' "$TMP/err" && pass profile_progress || fail profile_progress "$(head -3 "$TMP/err")"

prompt=$'German: The file could not be saved.\n'
expect_exit run_float 0 "$EL" run --lora models/translate-de.gguf -p "$prompt" -n 12 --temp 0 -t 1
cp "$TMP/out" "$TMP/float.txt"
expect_exit run_profile 0 "$EL" run --profile "$P" --lora models/translate-de.gguf -p "$prompt" -n 12 --temp 0 -t 1
cmp -s "$TMP/out" "$TMP/float.txt" && pass profile_same_text || fail profile_same_text "$(cat "$TMP/out")" "float: $(cat "$TMP/float.txt")"
# an adapter the profile was not made with: clamped to its range, reported, still runs
expect_exit run_other_adapter 0 "$EL" run --profile "$P" --lora models/shout-en.gguf -p "Shout: hello" -n 4 --temp 0 -t 1
grep -q "models/shout-en.gguf: [0-9]* of [0-9]* values (.*%) lie beyond the range of profile $P" "$TMP/err" && pass clamp_warning || fail clamp_warning "$(cat "$TMP/err")"
expect_exit perplexity_profile 0 "$EL" perplexity --profile "$P" --lora models/translate-de.gguf -f "$TMP/calib.txt" -c 64 -t 1
expect_exit committed_profile 0 "$EL" run --profile models/base.profile.gguf --lora models/translate-fr.gguf -p $'French: Open the file.\n' -n 8 --temp 0 -t 1

# refusals: a message naming the file, nonzero exit, no output file
expect_exit not_a_profile 1 "$EL" run --profile models/translate-de.gguf -p hi -n 1
grep -q "models/translate-de.gguf: not a quantization profile" "$TMP/err" && pass not_a_profile_message || fail not_a_profile_message "$(cat "$TMP/err")"
expect_exit profile_missing 1 "$EL" run --profile "$TMP/none.gguf" -p hi -n 1
grep -q "$TMP/none.gguf" "$TMP/err" && pass profile_missing_message || fail profile_missing_message "$(cat "$TMP/err")"
head -c 100 "$P" > "$TMP/cut.gguf"
expect_exit profile_truncated 1 "$EL" run --profile "$TMP/cut.gguf" -p hi -n 1
expect_exit bad_percentile 2 "$EL" profile --data "$TMP/calib.txt" --percentile 50 -o "$TMP/x.gguf"
expect_exit no_data 2 "$EL" profile -o "$TMP/x.gguf"
expect_exit scaled_lora 2 "$EL" profile --lora-scaled models/translate-de.gguf 0.5 --data "$TMP/calib.txt" -o "$TMP/x.gguf"
expect_exit bad_adapter 1 "$EL" profile --lora "$TMP/calib.txt" --data "$TMP/calib.txt" -o "$TMP/x.gguf"
expect_exit empty_text 1 "$EL" profile --data /dev/null -o "$TMP/x.gguf"
[ ! -e "$TMP/x.gguf" ] && pass nothing_left || fail nothing_left "$(ls "$TMP")"
finish
