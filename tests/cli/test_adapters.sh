#!/usr/bin/env bash
# `edgelora adapters`: lists every adapter of a folder (GGUF files and PEFT folders) with its
# rank, targets and alpha when it fits the base, and the reason when it does not; other files
# are not adapters and are not listed. Base: stories260K (5 blocks) converted to GGUF; adapters
# written by test_batch_lora_gen with known ranks and targets.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

M="$DATA/models"
GEN="$(dirname "$EL")/tests/test_batch_lora_gen"
if [ ! -f "$M/stories260K.bin" ]; then skip adapters "$M/stories260K.bin is absent"; finish; fi

B="$TMP/stories.gguf"
"$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$B" >/dev/null 2>&1 || { fail adapters_convert; finish; }
D="$TMP/loras"
mkdir -p "$D/not_an_adapter_folder"
"$GEN" "$B" "$D/attn_r4.gguf" 4 q,k,v,o 1 0.5 &&
    "$GEN" "$B" "$D/ffn_r8.gguf" 8 gate,up,down 2 0.5 &&
    "$GEN" "$B" "$D/peft_r3" 3 q,v 3 0.5 peft &&
    "$GEN" "$B" "$D/otherarch.gguf" 4 q 4 0.5 badarch &&
    "$GEN" "$B" "$D/badshape.gguf" 4 q,k 5 0.5 badshape || { fail adapters_make; finish; }
echo "not a gguf file" > "$D/garbage.gguf"
echo "notes" > "$D/README.txt"
mkdir -p "$D/brokenpeft" && echo '{"r": 4,' > "$D/brokenpeft/adapter_config.json"

expect_exit adapters_lists 0 "$EL" adapters -m "$B" --lora-dir "$D"
cp "$TMP/out" "$TMP/list.txt"
row() { grep -E "^$1 " "$TMP/list.txt" | tr -s ' '; }
# name format fits rank targets alpha (5 blocks: 4 targets -> 20 layers, 3 -> 15, 2 -> 10)
check_row() { # name expected-prefix
    local r; r=$(row "$1")
    if [[ "$r" == "$2"* ]]; then pass "adapters_row_$1"; else fail "adapters_row_$1" "got:  $r" "want: $2..."; fi
}
check_row attn_r4 "attn_r4 gguf yes 4 20 4 "
check_row ffn_r8 "ffn_r8 gguf yes 8 15 8 "
check_row peft_r3 "peft_r3 peft yes 3 10 3 "
check_row otherarch "otherarch gguf no - - - - "
check_row badshape "badshape gguf no - - - - "
check_row garbage "garbage gguf no - - - - "
check_row brokenpeft "brokenpeft peft no - - - - "
# the reasons name the problem
why() { row "$1" | cut -d' ' -f8-; }
[[ "$(why otherarch)" == *qwen2* && "$(why otherarch)" == *llama* ]] && pass adapters_why_arch || fail adapters_why_arch "$(why otherarch)"
[[ "$(why badshape)" == *blk.0.attn_q* ]] && pass adapters_why_shape || fail adapters_why_shape "$(why badshape)"
[[ "$(why garbage)" == *garbage.gguf* ]] && pass adapters_why_garbage || fail adapters_why_garbage "$(why garbage)"
[[ "$(why brokenpeft)" == *adapter_config.json* ]] && pass adapters_why_peft || fail adapters_why_peft "$(why brokenpeft)"
# only adapters are listed: 7 rows and the summary
if ! grep -q -e README -e not_an_adapter "$TMP/list.txt" && grep -q "^7 adapters in .*, 3 fit the model$" "$TMP/list.txt"; then
    pass adapters_only_adapters; else fail adapters_only_adapters "$(cat "$TMP/list.txt")"; fi

mkdir -p "$TMP/empty"
expect_exit adapters_empty_dir 0 "$EL" adapters -m "$B" --lora-dir "$TMP/empty"
grep -q "^0 adapters" "$TMP/out" && pass adapters_empty_summary || fail adapters_empty_summary "$(cat "$TMP/out")"
expect_exit adapters_no_dir 2 "$EL" adapters -m "$B"
expect_exit adapters_missing_dir 1 "$EL" adapters -m "$B" --lora-dir "$TMP/nonexistent"
EDGELORA_MODEL= expect_exit adapters_no_model 2 "$EL_NODEFAULT" adapters --lora-dir "$D"
expect_exit adapters_bad_option 2 "$EL" adapters -m "$B" --lora-dir "$D" --frobnicate
expect_exit adapters_help 0 "$EL" adapters --help
finish
