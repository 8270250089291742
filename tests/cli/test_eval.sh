#!/usr/bin/env bash
# `edgelora eval` on the committed default model (models/): it runs and reports, its outputs are
# what `edgelora run --temp 0` generates one prompt at a time (with and without the adapter),
# --compare-base, --json and -o work, and bad input fails clearly without leaving a partial -o
# file. The metrics themselves are tested in tests/test_eval_metrics.c.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

MD=models
if [ ! -f "$MD/base.gguf" ] || [ ! -f "$MD/translate-de.gguf" ] || [ ! -f "$MD/continue.gguf" ]; then
    skip eval "the default model (models/base.gguf and adapters) is absent"; finish
fi
GEN="$(dirname "$EL")/tests/test_batch_lora_gen"

# a small task file in the format of scripts/train_default_model.sh
T="$TMP/de.jsonl"
cat > "$T" <<'EOF'
{"prompt": "German: Open file\n", "response": "Datei öffnen"}
{"prompt": "German: Save as\n", "response": "Speichern unter"}

{"prompt": "German: Close the window\n", "response": "Fenster schließen", "origin": "test"}
{"prompt": "German: Print\n", "response": "Drucken"}
{"prompt": "German: Settings\n", "response": "Einstellungen"}
EOF

expect_exit eval_runs 0 "$EL" eval --lora "$MD/translate-de.gguf" -f "$T" -t 1 -o "$TMP/out.jsonl"
grep -q "^examples  5$" "$TMP/out" && grep -q "^chrF " "$TMP/out" && grep -q "^exact " "$TMP/out" &&
    grep -q "^adapter   $MD/translate-de.gguf$" "$TMP/out" && grep -q "^file      $T$" "$TMP/out" &&
    pass eval_summary || fail eval_summary "$(cat "$TMP/out")"
[ "$(wc -l < "$TMP/out.jsonl")" -eq 5 ] && grep -q '"line": 4, "prompt": "German: Close the window\\n", "reference": "Fenster schließen", "output": ' "$TMP/out.jsonl" &&
    grep -q '"chrf": ' "$TMP/out.jsonl" && pass eval_output_file || fail eval_output_file "$(head -c 600 "$TMP/out.jsonl")"

# each output is the greedy continuation `run` gives for the same prompt alone, cut at the first
# newline (the references have none), without (base_output) and with the adapter (output)
expect_exit eval_compare_base 0 "$EL" eval --lora "$MD/translate-de.gguf" -f "$T" --compare-base -t 1 -o "$TMP/cmp.jsonl"
grep -q "^metric  *base  *adapter  *difference  *95% interval" "$TMP/out" && grep -q "^chrF .*\[.*,.*\]  (headline)$" "$TMP/out" &&
    grep -q "^chrf: the adapter is " "$TMP/out" && pass eval_compare_table || fail eval_compare_table "$(cat "$TMP/out")"
max_tokens=$(sed -n 's/^tokens    at most \([0-9]*\) per output.*/\1/p' "$TMP/out")
n_same=0 n_checked=0
for line in 1 2 4; do
    prompt=$(sed -n "${line}p" "$T" | sed 's/^{"prompt": "\(.*\)\\n", "response".*/\1/')
    for who in adapter base; do
        lora=(); key=base_output
        [ "$who" = adapter ] && lora=(--lora "$MD/translate-de.gguf") && key=output
        text=$("$EL" run "${lora[@]}" -p "$prompt"$'\n' --temp 0 -n "${max_tokens:-1}" -t 1 2>/dev/null | tail -n +2 | head -n 1)
        case "$text" in *'"'*|*'\'*) continue ;; esac # would need JSON escaping to compare
        n_checked=$((n_checked + 1))
        grep -F "\"line\": $line," "$TMP/cmp.jsonl" | grep -qF "\"$key\": \"$text\"" && n_same=$((n_same + 1))
    done
done
[ "$n_checked" -ge 4 ] && [ "$n_same" -eq "$n_checked" ] && pass eval_matches_run ||
    fail eval_matches_run "$n_same of $n_checked outputs equal run's" "$(head -c 800 "$TMP/cmp.jsonl")"
# several sequences at once give what one at a time gives
expect_exit eval_parallel_1 0 "$EL" eval --lora "$MD/translate-de.gguf" -f "$T" --compare-base --parallel 1 -t 1 -o "$TMP/cmp1.jsonl"
cmp -s "$TMP/cmp.jsonl" "$TMP/cmp1.jsonl" && pass eval_parallel_same || fail eval_parallel_same "$(diff "$TMP/cmp.jsonl" "$TMP/cmp1.jsonl" | head -5)"

expect_exit eval_json 0 "$EL" eval --lora "$MD/translate-de.gguf" -f "$T" --compare-base --json --limit 2 -t 1
[ "$(wc -l < "$TMP/out")" -eq 1 ] && grep -q '^{"file": ".*", "n": 2, .*"metric": "chrf", .*"scores": {"chrf": .*"difference": {"chrf": {"value": .*, "ci95": \[.*\]}.*}$' "$TMP/out" &&
    pass eval_json_object || fail eval_json_object "$(cat "$TMP/out")"
# --json: the difference is adapter - base, and its interval is ordered
read -r a b d lo hi <<< "$(sed -E 's/.*"scores": \{"chrf": ([-0-9.]+),.*"base": \{"chrf": ([-0-9.]+),.*"difference": \{"chrf": \{"value": ([-0-9.]+), "ci95": \[([-0-9.]+), ([-0-9.]+)\].*/\1 \2 \3 \4 \5/' "$TMP/out")"
[[ "$hi" =~ ^-?[0-9]+\.[0-9]+$ ]] &&
    awk -v a="$a" -v b="$b" -v d="$d" -v lo="$lo" -v hi="$hi" 'BEGIN { e = a - b - d; exit !(e < 1e-3 && e > -1e-3 && lo <= hi) }' &&
    pass eval_json_difference || fail eval_json_difference "adapter $a base $b difference $d [$lo, $hi]"

# the base alone (no adapter), one token per output
expect_exit eval_base_only 0 "$EL" eval -f "$T" -n 1 -t 1 -o "$TMP/base1.jsonl"
! grep -q "^adapter" "$TMP/out" && grep -q "^tokens    at most 1 per output" "$TMP/out" && [ "$(wc -l < "$TMP/base1.jsonl")" -eq 5 ] &&
    pass eval_base_only_report || fail eval_base_only_report "$(cat "$TMP/out")"

# lang: the expected language from "lang" or a "[xx]" tag of the prompt
L="$TMP/lang.jsonl"
printf '%s\n' '{"prompt": "[de] Der Hund lief schnell über die", "response": " Straße und bellte laut."}' \
    '{"prompt": "Continue: The dog ran quickly across the", "response": " street and barked.", "lang": "en"}' > "$L"
expect_exit eval_lang 0 "$EL" eval --lora "$MD/continue.gguf" -f "$L" --metric lang -t 1
grep -q "^lang .*(headline)$" "$TMP/out" && pass eval_lang_headline || fail eval_lang_headline "$(cat "$TMP/out")"
expect_exit eval_lang_missing 1 "$EL" eval -f "$T" --metric lang -t 1
grep -q "$T:1: --metric lang needs" "$TMP/err" && pass eval_lang_missing_msg || fail eval_lang_missing_msg "$(cat "$TMP/err")"

# bad input: a clear message and a nonzero exit, and no -o file (nor a temporary one)
mkdir -p "$TMP/o"
check_err() { # name code pattern cmd...
    local name=$1 code=$2 pat=$3; shift 3
    expect_exit "$name" "$code" "$@" -o "$TMP/o/res.jsonl"
    grep -q -- "$pat" "$TMP/err" && pass "${name}_msg" || fail "${name}_msg" "expected '$pat' in: $(cat "$TMP/err")"
    [ -z "$(ls -A "$TMP/o")" ] && pass "${name}_no_output" || fail "${name}_no_output" "$(ls -A "$TMP/o")"
}
check_err eval_missing_file 1 "$TMP/nonexistent.jsonl: cannot open" "$EL" eval -f "$TMP/nonexistent.jsonl"
B="$TMP/bad.jsonl"
printf '%s\n' '{"prompt": "German: Open\n", "response": "Öffnen"}' '{"response": "Öffnen"}' > "$B"
check_err eval_no_prompt 1 "$B:2: expected an object with string members \"prompt\" and \"response\"" "$EL" eval -f "$B"
printf '%s\n' '{"prompt": "German: Open\n", "response": "Öffnen"' > "$B"
check_err eval_bad_json 1 "$B:1" "$EL" eval -f "$B"
printf '%s\n' '{"prompt": "German: Open\n", "response": "Öffnen", "lang": "zh"}' > "$B"
check_err eval_bad_lang 1 "$B:1: \"lang\" must be one of en de fr es it pt pl ru nl" "$EL" eval -f "$B"
: > "$B"
check_err eval_empty 1 "no examples" "$EL" eval -f "$B"
check_err eval_limit_0 2 "limit: '0' is not a whole number" "$EL" eval -f "$T" --limit 0
check_err eval_bad_metric 2 "'bleu' is not one of exact, chrf, lang" "$EL" eval -f "$T" --metric bleu
check_err eval_compare_without_adapter 2 "needs an adapter" "$EL" eval -f "$T" --compare-base
check_err eval_missing_adapter 1 "$TMP/none.gguf" "$EL" eval -f "$T" --lora "$TMP/none.gguf"
if [ -x "$GEN" ] && "$GEN" "$MD/base.gguf" "$TMP/misfit.gguf" 4 q 1 0.5 badshape >/dev/null 2>&1; then
    check_err eval_adapter_mismatch 1 "misfit.gguf" "$EL" eval -f "$T" --lora "$TMP/misfit.gguf"
else
    fail eval_adapter_mismatch "could not write a mismatched adapter with $GEN"
fi
check_err eval_prompt_too_long 1 "$T:1: the prompt has [0-9]* tokens; it needs 1 to 3 " "$EL" eval -f "$T" -c 4
expect_exit eval_no_file 2 "$EL" eval --lora "$MD/translate-de.gguf"
expect_exit eval_bad_option 2 "$EL" eval -f "$T" --frobnicate
expect_exit eval_out_dir_missing 1 "$EL" eval -f "$T" --limit 1 -t 1 -o "$TMP/no/such/dir/res.jsonl"
EDGELORA_MODEL= expect_exit eval_no_model 2 "$EL_NODEFAULT" eval -f "$T"
expect_exit eval_help 0 "$EL" eval --help
grep -q "Popovic 2015" "$TMP/out" && pass eval_help_metrics || fail eval_help_metrics
finish
