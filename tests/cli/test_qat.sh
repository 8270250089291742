#!/usr/bin/env bash
# Quantization-aware training from the command line: train --qat w4a8 writes the integer model
# (W4 weights, static activation scales) that learned its corpus; finetune --qat trains an
# adapter on it, and on a model quantized with --calibrate; what cannot be quantization-aware
# is refused with nothing written.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

for i in $(seq 1 150); do
    case $((i * 7 % 5)) in
    0) echo "the cat sat on the mat and looked at the dog." ;;
    1) echo "a dog ran after the red ball in the garden." ;;
    2) echo "the sun is warm and the sky is blue today." ;;
    3) echo "she reads a book while he cooks the dinner." ;;
    4) echo "birds sing in the tall trees every morning." ;;
    esac
done > "$TMP/train.txt"
for p in "the cat sat on:the mat" "a dog ran after:the red ball" "the sun is:warm" \
         "she reads:a book" "birds sing in:the tall trees"; do
    printf '{"prompt": "%s", "response": " %s"}\n' "${p%%:*}" "${p#*:}"
done > "$TMP/pairs.jsonl"
expect_exit tokenizer 0 "$EL" train-tokenizer -f "$TMP/train.txt" --vocab-size 300 -o "$TMP/tok.gguf"

shape="dim=32,layers=2,heads=4,kv_heads=2,ffn=64,ctx=32"
expect_exit train_qat 0 "$EL" train --shape "$shape" --tokenizer "$TMP/tok.gguf" -f "$TMP/train.txt" \
    --steps 150 --batch 4 --lr 1e-2 -t 2 --qat w4a8 --no-plot -q -o "$TMP/qat.gguf"
"$EL" info "$TMP/qat.gguf" > "$TMP/info" 2>&1
n_w4=$(grep -c "weight: w4 " "$TMP/info"); n_scales=$(grep -c "weight.act_scale: f32 \[1\]" "$TMP/info")
[ "$n_w4" = 14 ] && [ "$n_scales" = 14 ] && pass qat_file_is_w4_with_scales ||
    fail qat_file_is_w4_with_scales "$n_w4 w4 weights, $n_scales scales"
cont=$("$EL" run -m "$TMP/qat.gguf" -p "the sun is warm" -n 6 --temp 0 2>/dev/null)
grep -qF "$cont" "$TMP/train.txt" && pass qat_model_learned || fail qat_model_learned "continuation: [$cont]"

expect_exit finetune_qat 0 "$EL" finetune -m "$TMP/qat.gguf" --lora --qat -f "$TMP/pairs.jsonl" \
    --steps 60 --batch 4 --lr 1e-2 -c 16 -t 2 --no-plot -q -o "$TMP/qat-adapter.gguf"
expect_exit run_qat_adapter 0 "$EL" run -m "$TMP/qat.gguf" --lora "$TMP/qat-adapter.gguf" \
    -p "the cat sat on" -n 3 --temp 0

# a float model quantized to w4a8 with calibrated scales takes finetune --qat too
expect_exit train_float 0 "$EL" train --shape "$shape" --tokenizer "$TMP/tok.gguf" -f "$TMP/train.txt" \
    --steps 30 --batch 4 --lr 1e-2 -t 2 --no-plot -q -o "$TMP/float.gguf"
expect_exit quantize_calibrated 0 "$EL" quantize "$TMP/float.gguf" "$TMP/w4a8.gguf" --type w4a8 \
    --calibrate "$TMP/train.txt"
expect_exit finetune_qat_calibrated 0 "$EL" finetune -m "$TMP/w4a8.gguf" --lora --qat \
    -f "$TMP/pairs.jsonl" --steps 5 --batch 4 -c 16 -t 2 --no-plot -q -o "$TMP/cal-adapter.gguf"

# a checkpoint of a quantization-aware fine-tuning resumes only on the scales it was made with
expect_exit finetune_qat_checkpoint 0 "$EL" finetune -m "$TMP/qat.gguf" --lora --qat -f "$TMP/pairs.jsonl" \
    --steps 4 --batch 4 -c 16 -t 2 --no-plot -q --checkpoint "$TMP/ft.ckpt" -o "$TMP/ckpt-adapter.gguf"
expect_exit finetune_qat_other_scales 1 "$EL" finetune -m "$TMP/w4a8.gguf" --lora --qat \
    -f "$TMP/pairs.jsonl" --steps 8 --batch 4 -c 16 -t 2 --no-plot -q --checkpoint "$TMP/ft.ckpt" \
    --resume -o "$TMP/never5.gguf"
grep -q "ft.ckpt: the checkpoint was made under other quantization scales" "$TMP/err" &&
    pass other_scales_message || fail other_scales_message "$(cat "$TMP/err")"

# refused, nothing written
expect_exit finetune_qat_float_base 1 "$EL" finetune -m "$TMP/float.gguf" --lora --qat \
    -f "$TMP/pairs.jsonl" --steps 5 -q -o "$TMP/never1.gguf"
grep -q "float.gguf: no weight takes int8 inputs" "$TMP/err" && pass float_base_message ||
    fail float_base_message "$(cat "$TMP/err")"
expect_exit quantize_q8_0 0 "$EL" quantize "$TMP/float.gguf" "$TMP/q8.gguf" --type q8_0
expect_exit finetune_qat_block_base 1 "$EL" finetune -m "$TMP/q8.gguf" --lora --qat \
    -f "$TMP/pairs.jsonl" --steps 5 -q -o "$TMP/never2.gguf"
grep -q "q8.gguf: blk.0.attn_q.weight is q8_0, whose input is quantized at scales of its own" "$TMP/err" &&
    pass block_base_message || fail block_base_message "$(cat "$TMP/err")"
expect_exit train_qat_odd_ffn 1 "$EL" train --shape "dim=32,layers=1,heads=4,ffn=48,ctx=16" \
    --tokenizer "$TMP/tok.gguf" -f "$TMP/train.txt" --steps 2 --qat w4a8 -q -o "$TMP/never3.gguf"
grep -q "ffn_down rows hold 48 values, not whole 32-value chunks" "$TMP/err" && pass odd_ffn_message ||
    fail odd_ffn_message "$(cat "$TMP/err")"
expect_exit train_qat_unknown_kind 2 "$EL" train --shape "$shape" --tokenizer "$TMP/tok.gguf" \
    -f "$TMP/train.txt" --qat w8a16 -o "$TMP/never4.gguf"
grep -q "'w8a16' is not a kind this trains (w4a8)" "$TMP/err" && pass unknown_kind_message ||
    fail unknown_kind_message "$(cat "$TMP/err")"
for f in never1 never2 never3 never4 never5; do
    [ ! -e "$TMP/$f.gguf" ] && pass "nothing_written_$f" || fail "nothing_written_$f"
done
finish
