#!/usr/bin/env bash
# edgelora quad end to end on a small model: the shared profile and the adapters for it are
# written, the table printed; the adapters run under the profile and are refused without it;
# usage errors.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

expect_exit help 0 "$EL" quad --help
grep -q "^usage: edgelora quad" "$TMP/out" && pass help_text || fail help_text "$(head -2 "$TMP/out")"
expect_exit no_args 2 "$EL" quad -m models/base.gguf
grep -q "needs --lora (at least one), --data and -o" "$TMP/err" && pass no_args_message ||
    fail no_args_message "$(cat "$TMP/err")"
expect_exit unknown_flag 2 "$EL" quad --no-such-flag

for i in $(seq 1 120); do
    case $((i * 7 % 4)) in
    0) echo "the cat sat on the mat and looked at the dog." ;;
    1) echo "a dog ran after the red ball in the garden." ;;
    2) echo "the sun is warm and the sky is blue today." ;;
    3) echo "birds sing in the tall trees every morning." ;;
    esac
done > "$TMP/train.txt"
mkdir -p "$TMP/data"
pairs() { # name, then prompt:response pairs
    local name=$1 split; shift
    for split in train eval; do
        for p in "$@"; do printf '{"prompt": "%s", "response": " %s"}\n' "${p%%:*}" "${p#*:}"; done \
            > "$TMP/data/$name.$split.jsonl"
    done
}
pairs colours "the sky is:blue" "grass is:green" "snow is:white" "coal is:black"
pairs animals "the cat:sat on the mat" "a dog:ran after the ball" "birds:sing in the trees"
expect_exit tokenizer 0 "$EL" train-tokenizer -f "$TMP/train.txt" --vocab-size 300 -o "$TMP/tok.gguf"
expect_exit base 0 "$EL" train --shape "dim=32,layers=2,heads=4,kv_heads=2,ffn=64,ctx=32" \
    --tokenizer "$TMP/tok.gguf" -f "$TMP/train.txt" --steps 60 --batch 4 --lr 1e-2 -t 2 -q --no-plot \
    -o "$TMP/base.gguf"
for a in colours animals; do
    expect_exit "finetune_$a" 0 "$EL" finetune -m "$TMP/base.gguf" --lora -f "$TMP/data/$a.train.jsonl" \
        --steps 30 --batch 4 --lr 1e-2 -c 16 -t 2 -q --no-plot -o "$TMP/$a.gguf"
done
expect_exit quad 0 "$EL" quad -m "$TMP/base.gguf" --lora "$TMP/colours.gguf" --lora "$TMP/animals.gguf" \
    --data "$TMP/data" --tokens 256 -c 16 --steps 10 --batch 4 --lr 1e-3 -t 2 -o "$TMP/quad"
grep -q "^| colours" "$TMP/out" && grep -q "^| animals" "$TMP/out" && grep -q "(sets the profile)" "$TMP/out" &&
    pass quad_table || fail quad_table "$(cat "$TMP/out")"
grep -q "quad: distillation of" "$TMP/err" && grep -q "ETA" "$TMP/err" && pass quad_progress ||
    fail quad_progress "$(tail -3 "$TMP/err")"
for f in profile.gguf colours.gguf animals.gguf colours.own.profile.gguf animals.own.profile.gguf; do
    [ -s "$TMP/quad/$f" ] && pass "wrote_$f" || fail "wrote_$f"
done
ls "$TMP"/quad/*.loss.svg > /dev/null 2>&1 && pass wrote_plot || fail wrote_plot
expect_exit run_under_profile 0 "$EL" run -m "$TMP/base.gguf" --profile "$TMP/quad/profile.gguf" \
    --lora "$TMP/quad/colours.gguf" -p "the sky is" -n 2 --temp 0
expect_exit run_without_profile 1 "$EL" run -m "$TMP/base.gguf" --lora "$TMP/quad/colours.gguf" \
    -p "the sky is" -n 2 --temp 0
grep -qi "profile" "$TMP/err" && pass without_profile_message || fail without_profile_message "$(cat "$TMP/err")"
expect_exit missing_data 1 "$EL" quad -m "$TMP/base.gguf" --lora "$TMP/colours.gguf" --lora "$TMP/tok.gguf" \
    --data "$TMP/data" -o "$TMP/quad2"
grep -q "tok.train.jsonl: training examples" "$TMP/err" && pass missing_data_message ||
    fail missing_data_message "$(cat "$TMP/err")"
finish
