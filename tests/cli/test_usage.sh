#!/usr/bin/env bash
# The edgelora program's usage: help everywhere, clear errors for unknown commands, flags, values.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

expect_exit help 0 "$EL" --help
expect_exit version 0 "$EL" --version
expect_exit no_args 2 "$EL"
expect_exit unknown_command 2 "$EL" frobnicate
grep -q "unknown command 'frobnicate'" "$TMP/err" && pass unknown_command_message || fail unknown_command_message "$(cat "$TMP/err")"
for cmd in run tokenize detokenize perplexity convert info; do
    expect_exit "help_$cmd" 0 "$EL" "$cmd" --help
    grep -q "^usage: edgelora $cmd" "$TMP/out" && pass "help_text_$cmd" || fail "help_text_$cmd" "$(head -3 "$TMP/out")"
    expect_exit "unknown_flag_$cmd" 2 "$EL" "$cmd" --no-such-flag
    grep -q -- "--no-such-flag" "$TMP/err" && pass "unknown_flag_message_$cmd" || fail "unknown_flag_message_$cmd" "$(cat "$TMP/err")"
done
expect_exit bad_number 2 "$EL" run -m x -n twelve
grep -q "'twelve' is not a whole number" "$TMP/err" && pass bad_number_message || fail bad_number_message "$(cat "$TMP/err")"
expect_exit bad_top_p 2 "$EL" run -m x --top-p 1.5
expect_exit missing_value 2 "$EL" run -m
EDGELORA_MODEL= expect_exit no_model 2 "$EL_NODEFAULT" run -p hi
grep -q "no model given" "$TMP/err" && pass no_model_message || fail no_model_message "$(cat "$TMP/err")"
# without -m, the default model: $EDGELORA_MODEL, else models/base.gguf beside the program
if [ -f models/base.gguf ]; then
    expect_exit default_model 0 "$EL" run -p "Hello" -n 4 --temp 0
fi
if [ -f "$DATA/models/llama-2-tiny-random.gguf" ]; then
    EDGELORA_MODEL="$DATA/models/llama-2-tiny-random.gguf" expect_exit default_model_env 0 "$EL_NODEFAULT" tokenize -p "Hello world"
    [ "$(cat "$TMP/out")" = "15043 3186" ] && pass default_model_env_used || fail default_model_env_used "$(cat "$TMP/out")"
fi
expect_exit missing_model_file 1 "$EL" run -m "$TMP/none.gguf" -p hi
grep -q "$TMP/none.gguf" "$TMP/err" && pass missing_model_names_file || fail missing_model_names_file "$(cat "$TMP/err")"
printf 'not a model at all' > "$TMP/junk.gguf"
expect_exit info_junk 1 "$EL" info "$TMP/junk.gguf"
grep -q "junk.gguf" "$TMP/err" && pass info_junk_names_file || fail info_junk_names_file "$(cat "$TMP/err")"
expect_exit run_junk 1 "$EL" run -m "$TMP/junk.gguf" -p hi
finish
