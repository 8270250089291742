#!/usr/bin/env bash
# The trainers end to end: train-tokenizer, train and finetune write files the rest of the
# program reads; a finished run's checkpoint resumes to the same model; usage errors.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

for cmd in train-tokenizer train finetune; do
    expect_exit "help_$cmd" 0 "$EL" "$cmd" --help
    grep -q "^usage: edgelora $cmd" "$TMP/out" && pass "help_text_$cmd" || fail "help_text_$cmd" "$(head -3 "$TMP/out")"
    expect_exit "unknown_flag_$cmd" 2 "$EL" "$cmd" --no-such-flag
done

# a small repetitive corpus, and held-out text made of the same sentences in another order
for i in $(seq 1 150); do
    case $((i * 7 % 5)) in
    0) echo "the cat sat on the mat and looked at the dog." ;;
    1) echo "a dog ran after the red ball in the garden." ;;
    2) echo "the sun is warm and the sky is blue today." ;;
    3) echo "she reads a book while he cooks the dinner." ;;
    4) echo "birds sing in the tall trees every morning." ;;
    esac
done > "$TMP/train.txt"
sort "$TMP/train.txt" | head -40 > "$TMP/eval.txt"

expect_exit tokenizer 0 "$EL" train-tokenizer -f "$TMP/train.txt" --vocab-size 300 -o "$TMP/tok.gguf"
text="the red dog sings; the blue cat reads."
ids=$("$EL" tokenize -m "$TMP/tok.gguf" -p "$text" 2>/dev/null)
back=$("$EL" detokenize -m "$TMP/tok.gguf" -p "$ids" 2>/dev/null)
[ "$back" = "$text" ] && pass tokenizer_roundtrip || fail tokenizer_roundtrip "ids: $ids" "back: [$back]"
n_bytes=${#text}; n_ids=$(echo "$ids" | wc -w)
[ "$n_ids" -lt "$n_bytes" ] && pass tokenizer_merges || fail tokenizer_merges "$n_ids tokens for $n_bytes bytes"

shape="dim=32,layers=2,heads=4,kv_heads=2,ffn=64,ctx=32"
expect_exit train 0 "$EL" train --shape "$shape" --tokenizer "$TMP/tok.gguf" -f "$TMP/train.txt" \
    --eval "$TMP/eval.txt" --steps 150 --batch 4 --lr 1e-2 --eval-every 50 -t 2 \
    --checkpoint "$TMP/run.ckpt" --checkpoint-every 50 -o "$TMP/model.gguf"
grep -q "held-out" "$TMP/err" && pass train_reports_eval || fail train_reports_eval "$(tail -3 "$TMP/err")"
head -c 4 "$TMP/model.loss.svg" 2>/dev/null | grep -q "<svg" && grep -q "held-out" "$TMP/model.loss.svg" \
    && pass train_plot || fail train_plot "no SVG beside the model"
expect_exit info_model 0 "$EL" info "$TMP/model.gguf"
expect_exit run_model 0 "$EL" run -m "$TMP/model.gguf" -p "the cat" -n 8 --temp 0
# the model learned the corpus: its greedy continuation of a training sentence's start is in it
cont=$("$EL" run -m "$TMP/model.gguf" -p "the sun is warm" -n 6 --temp 0 2>/dev/null)
grep -qF "$cont" "$TMP/train.txt" && pass run_learned || fail run_learned "continuation: [$cont]"

# resuming the finished run's checkpoint (step 150 of 150) writes the same model
mkdir -p "$TMP/again"
expect_exit resume_done 0 "$EL" train --shape "$shape" --tokenizer "$TMP/tok.gguf" -f "$TMP/train.txt" \
    --eval "$TMP/eval.txt" --steps 150 --batch 4 --lr 1e-2 --eval-every 50 -t 2 \
    --checkpoint "$TMP/run.ckpt" --resume -o "$TMP/again/model.gguf" --no-plot
cmp -s "$TMP/model.gguf" "$TMP/again/model.gguf" && pass resume_same_model || fail resume_same_model
grep -q "every step was done in the checkpoint" "$TMP/err" && pass resume_done_message ||
    fail resume_done_message "$(cat "$TMP/err")"
# --checkpoint alone (no --checkpoint-every) still keeps the final state, from which a run to 20
# steps does only the 10 after it; --resume without a checkpoint says the run starts fresh
small() { "$EL" train --shape "$shape" --tokenizer "$TMP/tok.gguf" -f "$TMP/train.txt" --batch 4 \
    --lr 1e-2 -t 1 --no-plot "$@"; }
rm -f "$TMP/ten.ckpt"
expect_exit checkpoint_fresh 0 small --steps 10 --checkpoint "$TMP/ten.ckpt" --resume -o "$TMP/ten.gguf"
grep -q "warning: .*ten.ckpt: no checkpoint there yet: the run starts fresh" "$TMP/err" &&
    pass resume_without_checkpoint_says_fresh || fail resume_without_checkpoint_says_fresh "$(cat "$TMP/err")"
[ -f "$TMP/ten.ckpt" ] && pass checkpoint_final_state || fail checkpoint_final_state "no $TMP/ten.ckpt"
expect_exit checkpoint_continue 0 small --steps 20 --checkpoint "$TMP/ten.ckpt" --resume -o "$TMP/twenty.gguf"
grep -q "^step 20/20 " "$TMP/err" && ! grep -qE "^step ([1-9]|10)/20 " "$TMP/err" &&
    pass checkpoint_continues_after_ten || fail checkpoint_continues_after_ten "$(cat "$TMP/err")"
expect_exit resume_other_shape 1 "$EL" train --shape "dim=48,layers=2,heads=4,ctx=32" --tokenizer "$TMP/tok.gguf" \
    -f "$TMP/train.txt" --steps 40 --checkpoint "$TMP/run.ckpt" --resume -o "$TMP/x.gguf"

cat > "$TMP/data.jsonl" <<'JSONL'
{"prompt": "the cat sat on", "response": " the mat"}
{"prompt": "a dog ran after", "response": " the red ball"}
{"prompt": "birds sing in", "response": " the tall trees"}
JSONL
# Ctrl-C stops a run cleanly (the library returns EL_ERR_CANCELLED): the checkpoint is written,
# the model is not, exit status 1 with a message that says a resume is possible
rm -f "$TMP/int.ckpt"
"$EL" train --shape "$shape" --tokenizer "$TMP/tok.gguf" -f "$TMP/train.txt" --steps 10000000 \
    --batch 4 -t 1 --checkpoint "$TMP/int.ckpt" --checkpoint-every 5 --no-plot \
    -o "$TMP/int.gguf" >/dev/null 2>"$TMP/int.err" &
pid=$!
for _ in $(seq 600); do [ -f "$TMP/int.ckpt" ] && break; sleep 0.1; done # the handler is on
kill -INT "$pid"
wait "$pid"
rc=$?
if [ "$rc" -eq 1 ] && grep -q "^edgelora train: interrupted; the checkpoint allows --resume$" "$TMP/int.err" &&
        [ ! -e "$TMP/int.gguf" ] && [ -f "$TMP/int.ckpt" ]; then
    pass train_interrupted
else
    fail train_interrupted "exit $rc" "$(tail -c 300 "$TMP/int.err")" "$(ls "$TMP")"
fi

expect_exit finetune 0 "$EL" finetune -m "$TMP/model.gguf" --lora --rank 4 --alpha 8 \
    --targets q,v,gate -f "$TMP/data.jsonl" --steps 10 --batch 2 -c 16 -o "$TMP/ad.gguf" --peft "$TMP/peft"
[ -f "$TMP/ad.gguf" ] && [ -f "$TMP/ad.loss.svg" ] && [ -f "$TMP/peft/adapter_config.json" ] && \
    [ -f "$TMP/peft/adapter_model.safetensors" ] && pass finetune_files || fail finetune_files "$(ls "$TMP")"
expect_exit info_adapter 0 "$EL" info "$TMP/ad.gguf"
# distillation: the model with that adapter teaches a new adapter (the loss is a KL, with the
# title that says so); a teacher that is not there, or of another vocabulary, is named
expect_exit finetune_teacher 0 "$EL" finetune -m "$TMP/model.gguf" --lora --rank 4 --alpha 8 \
    --teacher "$TMP/model.gguf" --teacher-lora "$TMP/ad.gguf" -f "$TMP/data.jsonl" --steps 4 \
    --batch 2 -c 16 -o "$TMP/kd.gguf"
[ -f "$TMP/kd.gguf" ] && grep -q "KL(teacher" "$TMP/kd.loss.svg" && pass finetune_teacher_files \
    || fail finetune_teacher_files "$(ls "$TMP")"
expect_exit finetune_teacher_missing 1 "$EL" finetune -m "$TMP/model.gguf" --lora \
    --teacher "$TMP/none.gguf" -f "$TMP/data.jsonl" --steps 2 -c 16 -o "$TMP/x.gguf"
grep -q "none.gguf" "$TMP/err" && [ ! -e "$TMP/x.gguf" ] && pass finetune_teacher_missing_named \
    || fail finetune_teacher_missing_named "$(cat "$TMP/err")"
expect_exit finetune_teacher_vocab 1 "$EL" finetune -m "$TMP/model.gguf" --lora \
    --teacher models/base.gguf -f "$TMP/data.jsonl" --steps 2 -c 16 -o "$TMP/x.gguf"
grep -q "teacher's vocabulary is not the one of" "$TMP/err" && [ ! -e "$TMP/x.gguf" ] \
    && pass finetune_teacher_vocab_named || fail finetune_teacher_vocab_named "$(cat "$TMP/err")"
expect_exit merge_adapter 0 "$EL" merge -m "$TMP/model.gguf" --lora "$TMP/ad.gguf" -o "$TMP/merged.gguf"
expect_exit run_merged 0 "$EL" run -m "$TMP/merged.gguf" -p "the cat sat on" -n 4 --temp 0

# --init: a run from the model's weights, its FFN widened, computes the model at its start (a
# step at a learning rate that moves nothing leaves the perplexity of the model), and goes on to
# train it quantization-aware (the W4 file, 64 -> 96 channels, runs)
ppl() { "$EL" perplexity -m "$1" -f "$TMP/eval.txt" -c 32 2>/dev/null | sed -n 's/^perplexity: \([0-9.]*\).*/\1/p'; }
expect_exit init_still 0 "$EL" train --init "$TMP/model.gguf" --ffn 96 -f "$TMP/train.txt" \
    --steps 1 --batch 2 --lr 1e-12 --warmup 0 -t 1 --no-plot -o "$TMP/wide.gguf"
p0=$(ppl "$TMP/model.gguf") p1=$(ppl "$TMP/wide.gguf")
[ -n "$p0" ] && [ "$p0" = "$p1" ] && "$EL" info "$TMP/wide.gguf" 2>/dev/null | grep -q "feed_forward_length: u32 = 96" \
    && pass init_widened_is_the_model || fail init_widened_is_the_model "perplexity $p0 -> $p1"
expect_exit init_qat 0 "$EL" train --init "$TMP/model.gguf" --ffn 96 --qat w4a8 -f "$TMP/train.txt" \
    --steps 20 --batch 4 --lr 1e-3 -t 2 --no-plot -o "$TMP/w4.gguf"
"$EL" info "$TMP/w4.gguf" 2>/dev/null | grep -q "blk.0.ffn_down.weight: w4 \[96" && [ -n "$(ppl "$TMP/w4.gguf")" ] \
    && pass init_qat_w4_file || fail init_qat_w4_file "$("$EL" info "$TMP/w4.gguf" 2>&1 | grep ffn_down | head -1)"
expect_exit init_with_shape 2 "$EL" train --init "$TMP/model.gguf" --shape "$shape" -f "$TMP/train.txt" -o "$TMP/x.gguf"
expect_exit ffn_without_init 2 "$EL" train --shape "$shape" --tokenizer "$TMP/tok.gguf" --ffn 96 -f "$TMP/train.txt" -o "$TMP/x.gguf"
expect_exit init_narrower 1 "$EL" train --init "$TMP/model.gguf" --ffn 32 -f "$TMP/train.txt" -o "$TMP/x.gguf"
grep -q "model.gguf: an FFN of 32 channels is narrower than the model's 64" "$TMP/err" \
    && pass init_narrower_message || fail init_narrower_message "$(cat "$TMP/err")"
expect_exit init_compressed 1 "$EL" train --init models/base.uniql.gguf -f "$TMP/train.txt" -o "$TMP/x.gguf"
grep -q "base.uniql.gguf is a UniQL compressed model" "$TMP/err" && [ ! -e "$TMP/x.gguf" ] \
    && pass init_compressed_message || fail init_compressed_message "$(cat "$TMP/err")"

# usage and data errors
expect_exit bad_shape 2 "$EL" train --shape "dim=32,layers=x" --tokenizer "$TMP/tok.gguf" -f "$TMP/train.txt" -o "$TMP/x.gguf"
expect_exit no_output 2 "$EL" train --shape "$shape" --tokenizer "$TMP/tok.gguf" -f "$TMP/train.txt"
expect_exit bad_heads 1 "$EL" train --shape "dim=30,layers=1,heads=4" --tokenizer "$TMP/tok.gguf" -f "$TMP/train.txt" -o "$TMP/x.gguf"
expect_exit finetune_no_method 2 "$EL" finetune -m "$TMP/model.gguf" -f "$TMP/data.jsonl" -o "$TMP/x.gguf"
expect_exit finetune_bad_target 1 "$EL" finetune -m "$TMP/model.gguf" --lora --targets q,zz -f "$TMP/data.jsonl" -o "$TMP/x.gguf"
printf '{"prompt": "a", "response": "b"}\n{"prompt": 3}\n' > "$TMP/bad.jsonl"
expect_exit finetune_bad_jsonl 1 "$EL" finetune -m "$TMP/model.gguf" --lora -f "$TMP/bad.jsonl" -o "$TMP/x.gguf"
grep -q "bad.jsonl:2" "$TMP/err" && pass finetune_bad_jsonl_line || fail finetune_bad_jsonl_line "$(cat "$TMP/err")"
expect_exit tokenizer_small_vocab 2 "$EL" train-tokenizer -f "$TMP/train.txt" --vocab-size 100 -o "$TMP/x.gguf"
[ ! -e "$TMP/x.gguf" ] && pass no_partial_output || fail no_partial_output
finish
