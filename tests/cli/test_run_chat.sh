#!/usr/bin/env bash
# `run --chat`: the prompt as a user's message through the model's chat template (the default
# model's own, or one named), a system message, escapes (-e), and the errors: an unknown
# template and a model without one name the flag to choose one.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

expect_exit run_chat_default 0 "$EL" run --chat -p "Hello" -n 1 --temp 0 -t 1
head -c 25 "$TMP/out" | grep -q "^User: Hello$" && sed -n 2p "$TMP/out" | grep -q "^Assistant:" &&
    pass run_chat_default_template || fail run_chat_default_template "$(head -c 200 "$TMP/out")"
grep -q "^seed:" "$TMP/err" && fail run_greedy_no_seed_line "$(cat "$TMP/err")" || pass run_greedy_no_seed_line

# chatml, a system message, escapes in both: the exact prompt text is echoed first
expect_exit run_chat_named 0 "$EL" run --chat-template chatml --system 'Be\tbrief' -e -p 'a\nb\x41' -n 1 --temp 0 -t 1
want=$(printf '<|im_start|>system\nBe\tbrief<|im_end|>\n<|im_start|>user\na\nbA<|im_end|>\n<|im_start|>assistant\n')
[ "$(head -c ${#want} "$TMP/out")" = "$want" ] && pass run_chat_named_text || fail run_chat_named_text "$(head -c 300 "$TMP/out")"

# -e alone: escapes turned into their characters; unknown ones kept
expect_exit run_escape 0 "$EL" run -e -p 'x\ty\qz' -n 1 --temp 0 -t 1
[ "$(head -c 6 "$TMP/out")" = "$(printf 'x\ty\\qz')" ] && pass run_escape_text || fail run_escape_text "$(head -c 100 "$TMP/out" | od -c | head -3)"
expect_exit run_no_escape 0 "$EL" run -p 'x\ty' -n 1 --temp 0 -t 1
[ "$(head -c 4 "$TMP/out")" = 'x\ty' ] && pass run_no_escape_text || fail run_no_escape_text "$(head -c 100 "$TMP/out")"

expect_exit run_chat_unknown 1 "$EL" run --chat-template vicuna -p hi -n 1
grep -q "unknown chat template 'vicuna'.*--chat-template NAME" "$TMP/err" && pass run_chat_unknown_message ||
    fail run_chat_unknown_message "$(cat "$TMP/err")"
expect_exit run_system_needs_chat 2 "$EL" run --system hi -p hi -n 1
M="$DATA/models"
if [ -f "$M/stories260K.bin" ]; then
    expect_exit run_chat_no_template 1 "$EL" run -m "$M/stories260K.bin" --tokenizer "$M/tok512.bin" --chat -p hi -n 1
    grep -q "stories260K.bin has no chat template.*--chat-template NAME" "$TMP/err" &&
        pass run_chat_no_template_message || fail run_chat_no_template_message "$(cat "$TMP/err")"
else
    skip run_chat_no_template "$M/stories260K.bin is absent"
fi
finish
