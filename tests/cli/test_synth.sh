#!/usr/bin/env bash
# `edgelora synth`: a small real shape is written, warned about, described and run; bad
# arguments fail with the usual exit codes.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

expect_exit synth_help 0 "$EL" synth --help
expect_exit synth_list 0 "$EL" synth --list
[ "$(wc -l < "$TMP/out")" -eq 9 ] && grep -qx "llama-3.2-1b" "$TMP/out" && grep -qx "phi-3.5-mini" "$TMP/out" && grep -qx "gemma-3-1b" "$TMP/out" && pass synth_list_shapes || fail synth_list_shapes "$(cat "$TMP/out")"
expect_exit synth_stories15m 0 "$EL" synth --shape stories15m --type q8_0 -o "$TMP/s.gguf" --seed 5
grep -q "weights are random" "$TMP/err" && pass synth_warns || fail synth_warns "$(cat "$TMP/err")"
expect_exit synth_info 0 "$EL" info "$TMP/s.gguf"
# llama2.c's stories15M: dim 288, 6 layers, 6 heads, hidden 768, vocab 32000, seq_len 256
for kv in "llama.embedding_length: u32 = 288" "llama.block_count: u32 = 6" \
          "llama.attention.head_count: u32 = 6" "llama.feed_forward_length: u32 = 768" \
          "llama.context_length: u32 = 256" "tokenizer.ggml.tokens: array of string \[32000\]"; do
    grep -q "$kv" "$TMP/out" || { fail synth_info_shape "missing: $kv"; break; }
done && pass synth_info_shape
expect_exit synth_run 0 "$EL" run -m "$TMP/s.gguf" -p "Once" -n 8 --temp 0
expect_exit synth_same_seed 0 "$EL" synth --shape stories15m --type q8_0 -o "$TMP/t.gguf" --seed 5
cmp -s "$TMP/s.gguf" "$TMP/t.gguf" && pass synth_deterministic || fail synth_deterministic "same seed, different files"
# edgelora's own types: written, run, and warned about (llama.cpp cannot read them)
expect_exit synth_w4 0 "$EL" synth --shape stories15m --type w4 -o "$TMP/w.gguf" --seed 5
grep -q "llama.cpp cannot read" "$TMP/err" && pass synth_w4_warns || fail synth_w4_warns "$(cat "$TMP/err")"
expect_exit synth_w4_info 0 "$EL" info "$TMP/w.gguf"
grep -q "blk.0.ffn_up.weight: w4 " "$TMP/out" && grep -q "general.file_type: u32 = 1066" "$TMP/out" &&
    pass synth_w4_types || fail synth_w4_types "$(grep -E 'ffn_up|file_type' "$TMP/out")"
expect_exit synth_w4_run 0 "$EL" run -m "$TMP/w.gguf" -p "Once" -n 4 --temp 0
expect_exit synth_unknown_shape 1 "$EL" synth --shape gpt-5 -o "$TMP/x.gguf"
expect_exit synth_no_output 2 "$EL" synth --shape stories15m
expect_exit synth_bad_seed 2 "$EL" synth --shape stories15m -o "$TMP/x.gguf" --seed abc
[ ! -e "$TMP/x.gguf" ] && pass synth_no_file_left || fail synth_no_file_left
finish
