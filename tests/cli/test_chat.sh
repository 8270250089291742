#!/usr/bin/env bash
# `edgelora chat`: driven through a pseudo-terminal and a pipe by tests/cli/chat_check.py, which
# checks every reply against `run --json` on the whole conversation rendered by jinja2 from the
# template's Jinja text (the model's own, read from the GGUF there, or ChatML); and its usage
# errors.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

python3 tests/cli/chat_check.py "$EL" models "$TMP" || n_fail=$((n_fail + 1))

expect_exit chat_help 0 "$EL" chat --help
grep -q "^usage: edgelora chat" "$TMP/out" && grep -q -- "--temp T" "$TMP/out" && pass chat_help_text || fail chat_help_text "$(head -3 "$TMP/out")"
expect_exit chat_unknown_flag 2 "$EL" chat --no-such-flag
grep -q -- "--no-such-flag" "$TMP/err" && pass chat_unknown_flag_message || fail chat_unknown_flag_message "$(cat "$TMP/err")"
expect_exit chat_unknown_template 1 "$EL" chat --chat-template vicuna </dev/null
grep -q "unknown chat template 'vicuna'" "$TMP/err" && pass chat_unknown_template_message || fail chat_unknown_template_message "$(cat "$TMP/err")"
expect_exit chat_missing_adapter 1 "$EL" chat --lora "$TMP/none.gguf" </dev/null
grep -q "$TMP/none.gguf" "$TMP/err" && pass chat_missing_adapter_names_file || fail chat_missing_adapter_names_file "$(cat "$TMP/err")"
expect_exit chat_missing_lora_dir 1 "$EL" chat --lora-dir "$TMP/nodir" </dev/null
grep -q "$TMP/nodir: cannot read the adapter folder" "$TMP/err" && pass chat_missing_lora_dir_message || fail chat_missing_lora_dir_message "$(cat "$TMP/err")"
M="$DATA/models"
if [ -f "$M/stories260K.bin" ]; then
    expect_exit chat_no_template 1 "$EL" chat -m "$M/stories260K.bin" --tokenizer "$M/tok512.bin" </dev/null
    grep -q "stories260K.bin has no chat template.*--chat-template NAME" "$TMP/err" &&
        pass chat_no_template_message || fail chat_no_template_message "$(cat "$TMP/err")"
else
    skip chat_no_template "$M/stories260K.bin is absent"
fi
expect_exit chat_empty_input 0 "$EL" chat </dev/null
[ ! -s "$TMP/out" ] && pass chat_empty_input_quiet || fail chat_empty_input_quiet "$(cat "$TMP/out")"
finish
