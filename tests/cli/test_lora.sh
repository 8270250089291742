#!/usr/bin/env bash
# `edgelora run --lora/--lora-scaled` and `edgelora merge` on stories260K (converted to GGUF) with
# the adapters tests/golden/make_lora_golden.py wrote for its shape: greedy text with adapters
# bound at run time equals the greedy text of the model `merge` wrote (the merge is plain float
# arithmetic on the weights, the run-time path never touches them), for a GGUF adapter, a PEFT
# folder and the two mixed, and so does the perplexity; scale 0 equals no adapter; bad arguments
# and files fail cleanly.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

M="$DATA/models"
G=tests/golden
if [ ! -f "$M/stories260K.bin" ]; then skip lora_cli "$M/stories260K.bin is absent"; finish; fi
"$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$TMP/base.gguf" 2>/dev/null ||
    { fail lora_convert; finish; }

gen() { "$EL" run -m "$@" -p "Once upon a time" -n 48 --temp 0 -t 2 2>"$TMP/gen_err"; }

plain=$(gen "$TMP/base.gguf")
check_same() { # name merged-adapter-args... -- run-adapter-args...
    local name=$1; shift
    local margs=(); while [ "$1" != -- ]; do margs+=("$1"); shift; done; shift
    if ! "$EL" merge -m "$TMP/base.gguf" "${margs[@]}" -o "$TMP/$name.gguf" 2>"$TMP/err"; then
        fail "$name" "merge failed: $(cat "$TMP/err")"; return; fi
    local merged rt
    merged=$(gen "$TMP/$name.gguf")
    rt=$(gen "$TMP/base.gguf" "$@")
    if [ -n "$rt" ] && [ "$rt" = "$merged" ] && [ "$rt" != "$plain" ]; then pass "$name"; else
        fail "$name" "run-time: [$rt]" "merged:   [$merged]" "plain:    [$plain]" "$(cat "$TMP/gen_err")"; fi
}
check_same lora_gguf --lora $G/lora_stories.gguf -- --lora $G/lora_stories.gguf
check_same lora_peft --lora $G/lora_stories_peft -- --lora $G/lora_stories_peft
check_same lora_scaled_mix --lora-scaled $G/lora_stories.gguf 0.5 --lora $G/lora_stories_peft -- \
    --lora-scaled $G/lora_stories.gguf 0.5 --lora $G/lora_stories_peft

# perplexity with adapters bound equals the merged model's (to float rounding: the merge adds
# B A into the weights, the run-time path adds its product after; these adapters make the text
# ~1000x less likely, so its log-likelihood sums large logits, and a change of summation order
# in the float kernels moved the figures apart by 1.6e-4: 1e-3 of the figure) and differs from
# the plain one by far more
ppl() { "$EL" perplexity -m "$@" -f "$M/stories260K.greedy.n256.txt" -c 64 2>"$TMP/ppl_err" |
        sed -n 's/^perplexity: \([0-9.]*\).*/\1/p'; }
pm=$(ppl "$TMP/lora_scaled_mix.gguf")
pr=$(ppl "$TMP/base.gguf" --lora-scaled $G/lora_stories.gguf 0.5 --lora $G/lora_stories_peft)
pb=$(ppl "$TMP/base.gguf")
if [ -n "$pm" ] && [ -n "$pr" ] && [ -n "$pb" ] && awk -v m="$pm" -v r="$pr" -v b="$pb" \
    'BEGIN { d = r / m - 1; e = r / b - 1; exit !(d < 1e-3 && d > -1e-3 && (e > 0.01 || e < -0.01)) }'; then
    pass perplexity_lora_as_merged; else
    fail perplexity_lora_as_merged "run-time $pr, merged $pm, plain $pb" "$(cat "$TMP/ppl_err")"; fi
expect_exit perplexity_lora_missing 1 "$EL" perplexity -m "$TMP/base.gguf" -f "$M/stories260K.greedy.n256.txt" --lora "$TMP/nope.gguf"
grep -q "nope.gguf" "$TMP/err" && pass perplexity_lora_missing_message || fail perplexity_lora_missing_message "$(cat "$TMP/err")"

# convert: a PEFT folder becomes a GGUF adapter that generates the same text (the float
# arithmetic of both is checked against golden logits in test_lora_golden)
expect_exit convert_peft 0 "$EL" convert $G/lora_stories_peft -m "$TMP/base.gguf" -o "$TMP/peft.gguf"
from_peft=$(gen "$TMP/base.gguf" --lora $G/lora_stories_peft)
from_gguf=$(gen "$TMP/base.gguf" --lora "$TMP/peft.gguf")
[ -n "$from_gguf" ] && [ "$from_gguf" = "$from_peft" ] && [ "$from_gguf" != "$plain" ] && pass convert_peft_same_text ||
    fail convert_peft_same_text "gguf: [$from_gguf]" "peft: [$from_peft]"
expect_exit convert_peft_wrong_base 1 "$EL" convert $G/lora_llama_peft -m "$TMP/base.gguf" -o "$TMP/bad_adapter.gguf"
[ ! -e "$TMP/bad_adapter.gguf" ] && pass convert_peft_wrong_base_no_file || fail convert_peft_wrong_base_no_file
expect_exit convert_peft_type 2 "$EL" convert $G/lora_stories_peft -m "$TMP/base.gguf" -o "$TMP/x.gguf" --type q8_0
expect_exit convert_model_with_base 2 "$EL" convert tests/golden/hf/llama -m "$TMP/base.gguf" -o "$TMP/x.gguf"

zero=$(gen "$TMP/base.gguf" --lora-scaled $G/lora_stories.gguf 0)
[ "$zero" = "$plain" ] && pass lora_scale_zero || fail lora_scale_zero "[$zero]" "[$plain]"

# the llama2.c checkpoint takes the same adapters
bin=$("$EL" run -m "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -p "Once upon a time" -n 48 --temp 0 -t 2 --lora $G/lora_stories.gguf 2>/dev/null)
gg=$(gen "$TMP/base.gguf" --lora $G/lora_stories.gguf)
[ -n "$bin" ] && [ "$bin" = "$gg" ] && pass lora_llama2c_base || fail lora_llama2c_base "[$bin]" "[$gg]"

expect_exit lora_missing_file 1 "$EL" run -m "$TMP/base.gguf" -p hi -n 4 --lora "$TMP/nope.gguf"
grep -q "nope.gguf" "$TMP/err" && pass lora_missing_file_message || fail lora_missing_file_message "$(cat "$TMP/err")"
expect_exit lora_wrong_model 1 "$EL" run -m "$TMP/base.gguf" -p hi -n 4 --lora $G/lora_llama_peft
grep -q "adapter_model.safetensors" "$TMP/err" && pass lora_wrong_model_message || fail lora_wrong_model_message "$(cat "$TMP/err")"
expect_exit lora_scaled_no_scale 2 "$EL" run -m "$TMP/base.gguf" -p hi --lora-scaled $G/lora_stories.gguf
expect_exit lora_scaled_bad_scale 2 "$EL" run -m "$TMP/base.gguf" -p hi --lora-scaled $G/lora_stories.gguf abc
expect_exit merge_help 0 "$EL" merge --help
expect_exit merge_no_output 2 "$EL" merge -m "$TMP/base.gguf" --lora $G/lora_stories.gguf
expect_exit merge_no_adapter 2 "$EL" merge -m "$TMP/base.gguf" -o "$TMP/x.gguf"
expect_exit merge_unknown_option 2 "$EL" merge -m "$TMP/base.gguf" --lora $G/lora_stories.gguf -o "$TMP/x.gguf" --bogus
expect_exit merge_wrong_model 1 "$EL" merge -m "$TMP/base.gguf" --lora $G/lora_llama_peft -o "$TMP/bad.gguf"
[ ! -e "$TMP/bad.gguf" ] && pass merge_wrong_model_no_file || fail merge_wrong_model_no_file
finish
