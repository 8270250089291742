#!/bin/sh
# test_uniql.sh - pruning from the command line on the default model written in the UniQL layout
# (uniform plan): speculative decoding and concurrent variants on the pruned model against plain
# greedy decoding of the same pruned model; --prune / --mem-budget on the commands that run a
# context; the clear refusals (rate outside the table, a budget no rate fits, tools that cannot
# prune a compressed file, a compressed file given to uniql-layout).
. tests/cli/lib.sh
BASE=models/base.gguf
U="$TMP/base.uniql.gguf"
if ! "$EL" uniql-layout "$BASE" -o "$U" 2>"$TMP/err"; then
    fail uniql_layout "$(cat "$TMP/err")"
    finish
fi
pass uniql_layout

greedy() { "$EL" run -m "$U" -p "The cat" -n 24 -t 2 --temp 0 --prune 0.2 "$@" 2>/dev/null; }
plain=$(greedy)
spec=$(greedy --forecast models/base.forecast.gguf --tree auto)
if [ -n "$plain" ] && [ "$plain" = "$spec" ]; then pass spec_equals_greedy_pruned
else fail spec_equals_greedy_pruned "plain: $plain" "spec:  $spec"; fi
full=$("$EL" run -m "$U" -p "The cat" -n 24 -t 2 --temp 0 --prune 0 2>/dev/null)
if [ "$full" != "$plain" ]; then pass pruning_changes_text
else fail pruning_changes_text "the same text at rates 0 and 0.2: $plain"; fi

ids() { python3 -c 'import json,sys; d=json.load(sys.stdin); v=d["variants"][0] if "variants" in d else d; print(v.get("tokens"))'; }
one=$("$EL" run -m "$U" -p "The cat" -n 16 -t 2 --temp 0 --prune 0.35 --variants 3 --json 2>/dev/null | ids)
want=$("$EL" run -m "$U" -p "The cat" -n 16 -t 2 --temp 0 --prune 0.35 --variants 1 --json 2>/dev/null | ids)
if [ -n "$one" ] && [ "$one" != "None" ] && [ "$one" = "$want" ]; then pass variants_pruned
else fail variants_pruned "3 variants, first: $one" "alone: $want"; fi

# bench on the compressed file: the bytes a step reads are the kept pieces' (at rate 0 all of
# them: the uncompressed model's figure), and the bandwidth probe reads those pieces
per_token() { python3 -c 'import json,sys; print(json.load(sys.stdin)["bytes_per_token"])'; }
b_base=$("$EL" bench -m "$BASE" -t 2 -p 8 -n 4 -r 1 --json 2>/dev/null | per_token)
b_full=$("$EL" bench -m "$U" -t 2 -p 8 -n 4 -r 1 --prune 0 --json 2>"$TMP/err" | per_token)
b_cut=$("$EL" bench -m "$U" -t 2 -p 8 -n 4 -r 1 --prune 0.35 --json 2>>"$TMP/err" | per_token)
if [ -n "$b_base" ] && [ "$b_full" = "$b_base" ] && [ -n "$b_cut" ] && [ "$b_cut" -gt 0 ] &&
   [ "$b_cut" -lt "$b_full" ]; then pass bench_pruned_bytes
else fail bench_pruned_bytes "base $b_base, rate 0 $b_full, rate 0.35 $b_cut" "$(cat "$TMP/err")"; fi

printf 'The cat sat on the mat. The dog sat on the log. %.0s' $(seq 40) >"$TMP/text.txt"
expect_exit perplexity_pruned 0 "$EL" perplexity -m "$U" -f "$TMP/text.txt" -c 64 -t 2 --prune 0.25
expect_exit mem_budget_fits 0 "$EL" run -m "$U" -p "x" -n 2 -t 2 --mem-budget 12000000
grep -q "pruning rate" "$TMP/err" && pass mem_budget_says_rate || fail mem_budget_says_rate "$(cat "$TMP/err")"
expect_exit mem_budget_auto 0 "$EL" run -m "$U" -p "x" -n 2 -t 2 --mem-budget auto

expect_exit rate_outside_table 1 "$EL" run -m "$U" -p "x" -n 2 --prune 0.5
grep -q "outside what .* supports (0 to 0.35)" "$TMP/err" && pass rate_outside_message || fail rate_outside_message "$(cat "$TMP/err")"
expect_exit budget_too_small 1 "$EL" run -m "$U" -p "x" -n 2 --mem-budget 1000
grep -q "the smallest that would is" "$TMP/err" && pass budget_message || fail budget_message "$(cat "$TMP/err")"
expect_exit prune_and_budget 2 "$EL" run -m "$U" -p "x" --prune 0.1 --mem-budget auto
expect_exit prune_plain_model 1 "$EL" run -m "$BASE" -p "x" -n 2 --prune 0.1
grep -q "not a UniQL compressed model" "$TMP/err" && pass prune_plain_message || fail prune_plain_message "$(cat "$TMP/err")"

expect_exit quantize_refuses 1 "$EL" quantize "$U" "$TMP/q.gguf" --type q8_0
grep -q "UniQL compressed model" "$TMP/err" && [ ! -e "$TMP/q.gguf" ] && pass quantize_message || fail quantize_message "$(cat "$TMP/err")"
expect_exit merge_refuses 1 "$EL" merge -m "$U" --lora models/shout-en.gguf -o "$TMP/m.gguf"
grep -q "UniQL compressed model" "$TMP/err" && [ ! -e "$TMP/m.gguf" ] && pass merge_message || fail merge_message "$(cat "$TMP/err")"
expect_exit layout_twice 1 "$EL" uniql-layout "$U" -o "$TMP/u2.gguf"
grep -q "already a UniQL compressed file" "$TMP/err" && [ ! -e "$TMP/u2.gguf" ] && pass layout_twice_message || fail layout_twice_message "$(cat "$TMP/err")"
expect_exit layout_bad_rates 2 "$EL" uniql-layout "$BASE" -o "$TMP/u3.gguf" --rates 0,1.5
expect_exit layout_unsorted_rates 1 "$EL" uniql-layout "$BASE" -o "$TMP/u3.gguf" --rates 0,0.3,0.2
[ ! -e "$TMP/u3.gguf" ] && pass layout_nothing_left || fail layout_nothing_left "$TMP/u3.gguf exists"
finish
