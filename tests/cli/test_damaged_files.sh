#!/usr/bin/env bash
# Files damaged in one value, made here from good ones by overwriting bytes: what llama.cpp
# tolerates loads with one warning on stderr and exit 0; a value that cannot be right fails with
# a message naming the file and the key, and exit 1.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

G=tests/golden
# patch_after FILE KEY HEX: overwrites the value that follows metadata key KEY (its 4-byte type
# skipped) with the bytes HEX ("\xff\xff...")
patch_after() {
    local at
    at=$(grep -abo "$2" "$1" | head -1 | cut -d: -f1)
    printf "$3" | dd of="$1" bs=1 seek=$((at + ${#2} + 4)) conv=notrunc status=none
}
# expect_message NAME TEXT: the last command's stderr holds TEXT
expect_message() {
    if grep -qF -- "$2" "$TMP/err"; then pass "$1"; else fail "$1" "stderr: $(head -c 500 "$TMP/err")"; fi
}

# llama.cpp's llama2.c converter writes -1 for a special token the model lacks
vocab="$DATA/tokenizers/ggml-vocab-bert-bge.gguf"
if [ -f "$vocab" ]; then
    cp "$vocab" "$TMP/pad_minus_one.gguf" && chmod u+w "$TMP/pad_minus_one.gguf"
    patch_after "$TMP/pad_minus_one.gguf" tokenizer.ggml.padding_token_id '\xff\xff\xff\xff'
    expect_exit special_id_minus_one_loads 0 "$EL" tokenize -m "$TMP/pad_minus_one.gguf" -p hello
    n=$(grep -c '^edgelora: warning: ' "$TMP/err")
    [ "$n" -eq 1 ] && pass special_id_minus_one_one_warning ||
        fail special_id_minus_one_one_warning "$n warnings: $(cat "$TMP/err")"
    expect_message special_id_minus_one_named \
        "pad_minus_one.gguf: tokenizer.ggml.padding_token_id = -1 is not a token id"
else
    skip special_id_minus_one "$vocab is absent"
fi

M="$DATA/models"
if [ ! -f "$M/stories260K.bin" ]; then skip damaged_adapters "$M/stories260K.bin is absent"; finish; fi
"$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$TMP/base.gguf" 2>/dev/null ||
    { fail damaged_adapters_convert; finish; }
run_with() { "$EL" run -m "$TMP/base.gguf" -p "Once" -n 4 --temp 0 -t 1 "$@"; }

cp "$G/lora_stories.gguf" "$TMP/alpha_nan.gguf" && chmod u+w "$TMP/alpha_nan.gguf"
patch_after "$TMP/alpha_nan.gguf" adapter.lora.alpha '\x00\x00\xc0\x7f'
expect_exit gguf_alpha_nan_refused 1 run_with --lora "$TMP/alpha_nan.gguf"
expect_message gguf_alpha_nan_named "alpha_nan.gguf: adapter.lora.alpha = nan is not a LoRA alpha"

mkdir -p "$TMP/peft_alpha_huge"
cp "$G/lora_stories_peft/"* "$TMP/peft_alpha_huge/" && chmod u+w "$TMP/peft_alpha_huge/"*
sed -i 's/"lora_alpha": 4/"lora_alpha": 1e308/' "$TMP/peft_alpha_huge/adapter_config.json"
expect_exit peft_alpha_huge_refused 1 run_with --lora "$TMP/peft_alpha_huge"
expect_message peft_alpha_huge_named "adapter_config.json: lora_alpha = 1e+308 is not a LoRA alpha"

finish
