#!/usr/bin/env bash
# `edgelora quantize`: the per-tensor report, the file it writes (read back with `edgelora info`),
# the perplexity before and after on stories260K, and failures that leave no file.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

G=tests/golden/llama_f32_gqa.gguf
expect_exit quantize_q4_0 0 "$EL" quantize "$G" "$TMP/q4.gguf" --type q4_0 --pure -t 2
# 16 weight matrices converted (7 per layer; token_embd and output too), 5 vectors copied
n_q=$(grep -c ' f32 *-> q4_0 *rel. RMS error 0\.0[0-9]*$' "$TMP/out")
n_c=$(grep -c '(copied)' "$TMP/out")
[ "$n_q" -eq 16 ] && [ "$n_c" -eq 5 ] && pass quantize_report || fail quantize_report "$n_q quantized, $n_c copied" "$(head -5 "$TMP/out")"
"$EL" info "$TMP/q4.gguf" > "$TMP/info" 2>&1
grep -q 'general.file_type: u32 = 2$' "$TMP/info" && grep -q 'blk.1.ffn_down.weight: q4_0' "$TMP/info" &&
    grep -q 'output_norm.weight: f32' "$TMP/info" && pass quantize_info || fail quantize_info "$(grep -E 'file_type|ffn_down|output_norm' "$TMP/info")"

# llama-quantize's Q4_0 is a mix: the head in q6_k, which rows of 64 do not fit (q8_0)
expect_exit quantize_q4_0_mix 0 "$EL" quantize "$G" "$TMP/q4m.gguf" --type Q4_0 -t 2
grep -q 'output.weight .*-> q8_0 .*fallback' "$TMP/out" && [ "$(grep -c -- '-> q4_0 ' "$TMP/out")" -eq 15 ] &&
    pass quantize_q4_0_mix_head || fail quantize_q4_0_mix_head "$(grep -- '->' "$TMP/out" | head -3)"
"$EL" quantize --help > "$TMP/help"
grep -q 'q4_k_m (q4_k)' "$TMP/help" && grep -q -- '--pure' "$TMP/help" && pass quantize_help_mixes || fail quantize_help_mixes

# rows of 64 do not fit q6_k's 256-element blocks: Q8_0, as llama.cpp does
expect_exit quantize_fallback 0 "$EL" quantize "$G" "$TMP/q6.gguf" --type q6_k
grep -q 'blk.0.attn_q.weight .*-> q8_0 .*fallback' "$TMP/out" && pass quantize_fallback_report || fail quantize_fallback_report "$(head -3 "$TMP/out")"

expect_exit quantize_bad_type 2 "$EL" quantize "$G" "$TMP/x.gguf" --type q4_9
grep -q "unknown quantization type 'q4_9'" "$TMP/err" && [ ! -e "$TMP/x.gguf" ] && pass quantize_bad_type_message || fail quantize_bad_type_message "$(cat "$TMP/err")"
expect_exit quantize_not_gguf 1 "$EL" quantize tests/golden/llama_f32_gqa.logits "$TMP/x.gguf" --type q8_0
[ ! -e "$TMP/x.gguf" ] && pass quantize_not_gguf_no_file || fail quantize_not_gguf_no_file
expect_exit quantize_unwritable 1 "$EL" quantize "$G" /nonexistent/dir/x.gguf --type q8_0
grep -q '/nonexistent/dir/x.gguf' "$TMP/err" && pass quantize_unwritable_message || fail quantize_unwritable_message "$(cat "$TMP/err")"
expect_exit quantize_no_type 2 "$EL" quantize "$G" "$TMP/x.gguf"
expect_exit quantize_bad_threads 2 "$EL" quantize "$G" "$TMP/x.gguf" --type q8_0 -t x
ls "$TMP" | grep -q 'x.gguf' && fail quantize_no_leftovers "$(ls "$TMP")" || pass quantize_no_leftovers

# an adapter's A and B stored as f16: about half the bytes, every key kept (a profile's tag
# too), the same greedy text as the f32 adapter; q8_0 and mixes are refused
expect_exit quantize_adapter_f16 0 "$EL" quantize models/shout-en.gguf "$TMP/shout16.gguf" --type f16
a=$(stat -c %s models/shout-en.gguf) b=$(stat -c %s "$TMP/shout16.gguf")
keys() { "$EL" info "$1" 2>/dev/null | head -1 | sed 's/.*, \([0-9]*\) keys.*/\1/'; }
[ $((b * 100 / a)) -le 55 ] && [ "$(keys models/shout-en.gguf)" = "$(keys "$TMP/shout16.gguf")" ] &&
    "$EL" info "$TMP/shout16.gguf" 2>/dev/null | grep -q "lora_b: f16" &&
    pass quantize_adapter_f16_file || fail quantize_adapter_f16_file "$a -> $b bytes"
shout() { "$EL" run --lora "$1" -p "Shout: the cat sat on the mat
" -n 16 --temp 0 -t 1 2>/dev/null; }
t32=$(shout models/shout-en.gguf) t16=$(shout "$TMP/shout16.gguf")
[ -n "$t32" ] && [ "$t32" = "$t16" ] && pass quantize_adapter_f16_same_text ||
    fail quantize_adapter_f16_same_text "[$t32] vs [$t16]"
expect_exit quantize_adapter_q4 1 "$EL" quantize models/shout-en.gguf "$TMP/y.gguf" --type q4_k_m
[ ! -e "$TMP/y.gguf" ] && pass quantize_adapter_q4_nothing || fail quantize_adapter_q4_nothing

M="$DATA/models"
if [ ! -f "$M/stories260K.bin" ]; then skip quantize_perplexity "$M/stories260K.bin is absent"; finish; fi
"$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$TMP/s.gguf" >/dev/null 2>&1
expect_exit quantize_ppl 0 "$EL" quantize "$TMP/s.gguf" "$TMP/s8.gguf" --type q8_0 --ppl-text "$M/stories260K.greedy.n256.txt" -c 64 -t 1
# q8_0 moves perplexity by well under 5% (the greedy story scores ~1.5-3)
line=$(grep '^perplexity over' "$TMP/out")
if awk -v l="$line" 'BEGIN { n = split(l, w, " "); a = w[6]; b = w[8]; exit !(a > 1 && a < 3 && b > 1 && (b / a - 1) ^ 2 < 0.05 ^ 2) }'; then
    pass quantize_ppl_change; else fail quantize_ppl_change "$line"; fi
expect_exit quantize_runs 0 "$EL" run -m "$TMP/s8.gguf" -p "Once upon a time" -n 8 --temp 0 -t 1
finish
