#!/usr/bin/env bash
# `edgelora convert HF_DIR`: the tiny Hugging Face folders of tests/golden/hf convert and run;
# usage errors and bad folders fail cleanly without leaving an output file.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh
G=tests/golden/hf

expect_exit convert_hf_llama 0 "$EL" convert "$G/llama" -o "$TMP/llama.gguf" --type q8_0
grep -q "wrote $TMP/llama.gguf" "$TMP/err" && pass convert_hf_llama_message || fail convert_hf_llama_message "$(cat "$TMP/err")"
expect_exit info_hf_llama 0 "$EL" info "$TMP/llama.gguf"
grep -q 'tokenizer.ggml.pre: string = "llama-bpe"' "$TMP/out" && grep -q "rope_freqs.weight" "$TMP/out" \
    && pass info_hf_llama_keys || fail info_hf_llama_keys "$(head -c 400 "$TMP/out")"
expect_exit convert_hf_qwen2 0 "$EL" convert "$G/qwen2" -o "$TMP/qwen2.gguf"
expect_exit run_hf_qwen2 0 "$EL" run -m "$TMP/qwen2.gguf" -p "the" -n 4 --temp 0
# perplexity's windows as llama.cpp's perplexity cuts them: the text tokenized with BOS where the
# vocabulary adds one (tokenizer_config.json's add_bos_token: Qwen2's does not), then windows of
# exactly the context size: (T + bos) / ctx of them for T tokens of text, whatever the context
printf 'the cat sat on the mat and the dog ran after the red ball in the garden. %.0s' 1 2 3 > "$TMP/ppl.txt"
for a in qwen2 llama; do
    b=0; grep -q '"add_bos_token": true' "$G/$a/tokenizer_config.json" && b=1
    T=$("$EL" tokenize -m "$TMP/$a.gguf" -f "$TMP/ppl.txt" | wc -w)
    bad=""
    for c in 4 5 6 7 9 11 13 $((T / 2)) $((T / 2 + 1)); do
        got=$("$EL" perplexity -m "$TMP/$a.gguf" -f "$TMP/ppl.txt" -c $c 2>/dev/null | sed -n 's/.*(\([0-9]*\) chunks of.*/\1/p')
        [ "$got" = $(((T + b) / c)) ] || bad="$bad ctx $c: $got;"
    done
    [ "$T" -gt 8 ] && [ -z "$bad" ] && pass "perplexity_windows_$a" ||
        fail "perplexity_windows_$a" "$T tokens, add_bos $b:$bad"
done
# qwen3 and phi3 as llama.cpp's converter names them: per-head norms; fused attn_qkv and ffn_up,
# longrope's two factor tensors and its attention factor
expect_exit convert_hf_qwen3 0 "$EL" convert "$G/qwen3" -o "$TMP/qwen3.gguf" --type q8_0
expect_exit info_hf_qwen3 0 "$EL" info "$TMP/qwen3.gguf"
grep -q "blk.1.attn_k_norm.weight: f32 \[16\]" "$TMP/out" && grep -q "qwen3.attention.key_length: u32 = 16" "$TMP/out" \
    && pass info_hf_qwen3_keys || fail info_hf_qwen3_keys "$(head -c 400 "$TMP/out")"
expect_exit run_hf_qwen3 0 "$EL" run -m "$TMP/qwen3.gguf" -p "the" -n 4 --temp 0
expect_exit convert_hf_phi3 0 "$EL" convert "$G/phi3" -o "$TMP/phi3.gguf"
expect_exit info_hf_phi3 0 "$EL" info "$TMP/phi3.gguf"
grep -q "blk.0.attn_qkv.weight: f16 \[64, 128\]" "$TMP/out" && grep -q "blk.0.ffn_up.weight: f16 \[64, 192\]" "$TMP/out" &&
    grep -q "rope_factors_long.weight: f32 \[6\]" "$TMP/out" && grep -q "phi3.rope.scaling.attn_factor" "$TMP/out" &&
    grep -q "phi3.rope.dimension_count: u32 = 12" "$TMP/out" && ! grep -q "ffn_gate" "$TMP/out" \
    && pass info_hf_phi3_keys || fail info_hf_phi3_keys "$(head -c 400 "$TMP/out")"
expect_exit run_hf_phi3 0 "$EL" run -m "$TMP/phi3.gguf" -p "the" -n 4 --temp 0
mkdir -p "$TMP/phi3bad" && cp "$G"/phi3/* "$TMP/phi3bad/"
sed -i 's/"long_factor": \[/"long_factor": [ 2.0,/' "$TMP/phi3bad/config.json"
expect_exit convert_hf_phi3_factors 1 "$EL" convert "$TMP/phi3bad" -o "$TMP/x.gguf"
grep -q 'phi3bad/config.json: rope_scaling "long_factor" must be a list of 6 numbers' "$TMP/err" \
    && pass convert_hf_phi3_factors_message || fail convert_hf_phi3_factors_message "$(cat "$TMP/err")"
expect_exit convert_hf_mistral 0 "$EL" convert "$G/mistral/" -o "$TMP/mistral.gguf" --type q4_0
expect_exit tokenize_hf_mistral 0 "$EL" tokenize -m "$TMP/mistral.gguf" -p "the"
# "▁the" is one piece of the tiny SentencePiece vocabulary of make_hf_golden.py: after 259
# special and byte tokens and the 10 letters "▁etaoinshr", the 8th merge (▁th + e) makes id 276
[ "$(cat "$TMP/out")" = "276" ] && pass tokenize_hf_mistral_ids || fail tokenize_hf_mistral_ids "got [$(cat "$TMP/out")]"
# gemma3: the window's keys, then a run; Gemma's tokenizer puts no "▁" before the text: "the" is
# t (265, after 7 special, 256 byte tokens, "▁" and "e") + he (the 2nd merge, 278), " the" is
# "▁the" (the 3rd merge, 279)
expect_exit convert_hf_gemma3 0 "$EL" convert "$G/gemma3" -o "$TMP/gemma3.gguf" --type q8_0
expect_exit info_hf_gemma3 0 "$EL" info "$TMP/gemma3.gguf"
grep -q 'gemma3.attention.sliding_window: u32 = 4' "$TMP/out" \
    && grep -q "post_ffw_norm" "$TMP/out" && grep -q 'add_space_prefix: bool = false' "$TMP/out" \
    && pass info_hf_gemma3_keys || fail info_hf_gemma3_keys "$(head -c 400 "$TMP/out")"
expect_exit run_hf_gemma3 0 "$EL" run -m "$TMP/gemma3.gguf" -p "the" -n 4 --temp 0
expect_exit tokenize_hf_gemma3 0 "$EL" tokenize -m "$TMP/gemma3.gguf" -p "the"
[ "$(cat "$TMP/out")" = "265 278" ] && pass tokenize_hf_gemma3_ids ||
    fail tokenize_hf_gemma3_ids "got [$(cat "$TMP/out")]"
expect_exit tokenize_hf_gemma3_space 0 "$EL" tokenize -m "$TMP/gemma3.gguf" -p " the"
[ "$(cat "$TMP/out")" = "279" ] && pass tokenize_hf_gemma3_space_ids ||
    fail tokenize_hf_gemma3_space_ids "got [$(cat "$TMP/out")]"
# edgelora's own types: written, warned about, and run
expect_exit convert_hf_w4a8 0 "$EL" convert "$G/llama" -o "$TMP/llama_w4.gguf" --type w4a8
grep -q "llama.cpp cannot read" "$TMP/err" && pass convert_hf_w4a8_warns || fail convert_hf_w4a8_warns "$(cat "$TMP/err")"
expect_exit run_hf_w4a8 0 "$EL" run -m "$TMP/llama_w4.gguf" -p "the" -n 4 --temp 0

expect_exit convert_hf_bad_type 1 "$EL" convert "$G/llama" -o "$TMP/x.gguf" --type q9_9
expect_exit convert_hf_tokenizer_flag 2 "$EL" convert "$G/llama" --tokenizer t.bin -o "$TMP/x.gguf"
mkdir -p "$TMP/empty"
expect_exit convert_hf_no_config 1 "$EL" convert "$TMP/empty" -o "$TMP/x.gguf"
grep -q "no config.json" "$TMP/err" && pass convert_hf_no_config_message || fail convert_hf_no_config_message "$(cat "$TMP/err")"
ls "$TMP"/x.gguf* >/dev/null 2>&1 && fail convert_hf_no_output "an output was left" || pass convert_hf_no_output
finish
