#!/usr/bin/env bash
# Messages that say what is wrong, as a new user meets them (issue 17, item 7): each wrong use
# exits nonzero with a message naming the problem, and the right use beside it still works.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

M="$DATA/models"
BASE=models/base.gguf
if [ ! -f "$M/stories260K.bin" ] || [ ! -f "$BASE" ]; then skip messages "$M/stories260K.bin or $BASE is absent"; finish; fi

# expect_msg NAME CODE FRAGMENT CMD...: exit CODE and FRAGMENT in standard error
expect_msg() {
    local name=$1 code=$2 want=$3
    shift 3
    expect_exit "$name" "$code" "$@"
    grep -qF -- "$want" "$TMP/err" && pass "${name}_message" || fail "${name}_message" "got: $(head -c 400 "$TMP/err")" "want: *$want*"
}

# convert: what the input is, before what it would need
expect_msg convert_missing_input 1 "/nonexistent: no such file or folder" "$EL" convert /nonexistent -o "$TMP/x.gguf"
expect_msg convert_text_file 1 "README.md: not a model file: neither GGUF nor a llama2.c checkpoint" "$EL" convert README.md -o "$TMP/x.gguf"
mkdir -p "$TMP/notamodel"
expect_msg convert_plain_folder 1 "not a model folder: no config.json" "$EL" convert "$TMP/notamodel" -o "$TMP/x.gguf"
expect_msg convert_gguf 1 "is a GGUF file already" "$EL" convert "$BASE" -o "$TMP/x.gguf"
expect_msg convert_no_tokenizer 2 "stories260K.bin is a llama2.c checkpoint: converting it needs its tokenizer" "$EL" convert "$M/stories260K.bin" -o "$TMP/x.gguf"
expect_exit convert_llama2c_works 0 "$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$TMP/stories.gguf"
[ "$(ls "$TMP" | grep -c '^x.gguf')" = 0 ] && pass convert_refusals_write_nothing || fail convert_refusals_write_nothing "$(ls "$TMP")"

# run --lora-scaled without its scale names the option and what it needs
expect_msg lora_scaled_no_scale 2 "--lora-scaled needs two values: an adapter file and its scale" "$EL" run -m "$BASE" --lora-scaled models/shout-en.gguf
expect_exit lora_scaled_works 0 "$EL" run -m "$BASE" --lora-scaled models/shout-en.gguf 0.5 -p hi -n 2 --temp 0

# a bad JSON Lines line: file:LINE:COL: message (line of the file, column in the line)
printf '{"prompt": "a", "response": "b"}\n\n{"prompt": "a" "response": "b"}\n' > "$TMP/bad.jsonl"
expect_msg jsonl_location_finetune 1 "bad.jsonl:3:16: expected ','" "$EL" finetune -m "$BASE" --lora -f "$TMP/bad.jsonl" -o "$TMP/ft.gguf" --steps 1
expect_msg jsonl_location_eval 1 "bad.jsonl:3:16: expected ','" "$EL" eval -m "$BASE" --lora models/shout-en.gguf -f "$TMP/bad.jsonl"
printf '{"id": 1, "prompt": "a"}\n{"id": 2 "prompt": "a"}\n' > "$TMP/req.jsonl"
"$EL" batch -m "$BASE" -f "$TMP/req.jsonl" -t 1 > "$TMP/out" 2>/dev/null
grep -qF 'req.jsonl:2:10: expected' "$TMP/out" && pass jsonl_location_batch || fail jsonl_location_batch "$(cat "$TMP/out")"

# run -m on a text file: not a model file, and no header numbers read from text
expect_msg run_text_file 1 "README.md: not a model file" "$EL" run -m README.md -p hi
grep -q "must divide" "$TMP/err" && fail run_text_file_no_header_checks "$(cat "$TMP/err")" || pass run_text_file_no_header_checks
printf 'abc' > "$TMP/tiny.bin"
expect_msg run_tiny_file 1 "not a model file" "$EL" run -m "$TMP/tiny.bin" -p hi
expect_exit run_llama2c_works 0 "$EL" run -m "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -p Once -n 4 --temp 0

# quantize refuses what has no weights to quantize, and writes nothing
expect_msg quantize_adapter 1 "shout-en.gguf is a LoRA adapter: its A and B can be stored as f32, f16 or bf16, not q8_0" "$EL" quantize models/shout-en.gguf "$TMP/q.gguf" --type q8_0
expect_msg quantize_vocabulary 1 "tokenizer.gguf holds no weights" "$EL" quantize models/tokenizer.gguf "$TMP/q.gguf" --type q8_0
[ ! -e "$TMP/q.gguf" ] && pass quantize_refusals_write_nothing || fail quantize_refusals_write_nothing
expect_exit quantize_model_works 0 "$EL" quantize "$TMP/stories.gguf" "$TMP/q.gguf" --type q8_0

# train-tokenizer: an empty input is refused; the report says what the file holds
: > "$TMP/empty.txt"
expect_msg train_tokenizer_empty 1 "empty.txt: no text to learn from (the input is empty)" "$EL" train-tokenizer -f "$TMP/empty.txt" --vocab-size 300 -o "$TMP/t.gguf"
[ ! -e "$TMP/t.gguf" ] && pass train_tokenizer_empty_writes_nothing || fail train_tokenizer_empty_writes_nothing
printf 'ab ab ab\n' > "$TMP/tiny.txt"
expect_msg train_tokenizer_reports_written 0 "(260 tokens: 256 bytes, 2 merges, 2 special)" "$EL" train-tokenizer -f "$TMP/tiny.txt" --vocab-size 300 -o "$TMP/t.gguf"
grep -qF "300 tokens were asked for" "$TMP/err" && pass train_tokenizer_warns_fewer || fail train_tokenizer_warns_fewer "$(cat "$TMP/err")"

# synth: the shape is checked first, with one prefix and the known shapes, before any warning
expect_msg synth_unknown_shape 1 "edgelora synth: unknown shape 'gpt-5' (known: llama-3.2-1b," "$EL" synth --shape gpt-5 -o "$TMP/s.gguf"
grep -q "random" "$TMP/err" && fail synth_unknown_shape_no_warning "$(cat "$TMP/err")" || pass synth_unknown_shape_no_warning
grep -q "synth: synth:" "$TMP/err" && fail synth_one_prefix "$(cat "$TMP/err")" || pass synth_one_prefix
expect_msg synth_unknown_type 1 "unknown quantization type 'q3'" "$EL" synth --shape stories15m --type q3 -o "$TMP/s.gguf"

# adapters: a model and a vocabulary in the folder are not counted as adapters
mkdir -p "$TMP/loras"
cp "$BASE" models/tokenizer.gguf models/shout-en.gguf "$TMP/loras/"
expect_exit adapters_mixed_folder 0 "$EL" adapters -m "$BASE" --lora-dir "$TMP/loras"
grep -q "^1 adapter in .*, 1 fits the model$" "$TMP/out" && ! grep -q "^base " "$TMP/out" &&
    grep -qF "base.gguf: a model, not an adapter" "$TMP/out" &&
    grep -qF "tokenizer.gguf: a vocabulary (no weights), not an adapter" "$TMP/out" &&
    pass adapters_lists_only_adapters || fail adapters_lists_only_adapters "$(cat "$TMP/out")"
finish
