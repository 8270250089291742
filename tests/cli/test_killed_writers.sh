#!/usr/bin/env bash
# Nothing left behind (issue 17, item 5): every writer killed (SIGKILL) at several moments of
# its run leaves in its output folder nothing but the previous complete output (or the new one,
# complete, if the kill came after it was in place): no temporary file, no partial output.
# Writers: quantize, convert (llama2.c), convert (PEFT folder to a GGUF adapter: adapter save),
# merge, finetune (adapter, PEFT export, loss plot, checkpoints every step), train-forecast, batch -o.
# And finetune
# checks that its outputs can be written before it trains.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

M="$DATA/models"
GEN="$(dirname "$EL")/tests/test_batch_lora_gen"
if [ ! -f "$M/stories260K.bin" ]; then skip killed_writers "$M/stories260K.bin is absent"; finish; fi

B="$TMP/stories.gguf"
"$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$B" >/dev/null 2>&1 &&
    "$GEN" "$B" "$TMP/peft" 3 q,v,up 5 0.6 peft &&
    "$GEN" "$B" "$TMP/attn.gguf" 4 q,k,v,o 1 0.6 || { fail killed_writers_setup; finish; }
for i in $(seq 40); do echo '{"prompt": "Once upon a time", "response": " there was a cat."}'; done > "$TMP/ft.jsonl"

now_ms() { date +%s%3N; }

# killed_writer NAME OUT_DIR CMD...: runs CMD once to the end (the previous complete output, and
# its duration), then again killed at four moments spread over that duration; after each kill
# OUT_DIR must hold the same names as after the complete run and, for a deterministic writer,
# the same bytes (DETERMINISTIC=1).
killed_writer() {
    local name=$1 dir=$2
    shift 2
    rm -rf "$dir" && mkdir -p "$dir"
    local t0; t0=$(now_ms)
    "$@" >/dev/null 2>&1 || { fail "${name}_completes" "$*"; return; }
    local took=$(( $(now_ms) - t0 ))
    mkdir -p "$TMP/ref" && rm -rf "$TMP/ref/$name" && cp -r "$dir" "$TMP/ref/$name"
    local want; want=$(ls -A "$dir" | tr '\n' ' ')
    local bad=()
    for k in 1 2 3 4; do
        "$@" >/dev/null 2>&1 &
        local pid=$!
        sleep "$(awk -v t="$took" -v k="$k" -v r="$RANDOM" 'BEGIN { printf "%.3f", t * (k - 0.5 + r / 65536) / 4 / 1000 }')"
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        local got; got=$(ls -A "$dir" | tr '\n' ' ')
        # replacing an existing file (a checkpoint written every step) needs a temporary name for
        # the instant between link and rename: a kill there leaves the dead process's temporary,
        # which the next writer of that folder removes
        local extra; extra=$(ls -A "$dir" | grep -v -x -F -f <(ls -A "$TMP/ref/$name") || true)
        if [ -n "$extra" ] && ! grep -q -v "\.tmp-$pid-[0-9]*$" <<< "$extra"; then
            "$@" >/dev/null 2>&1
            got=$(ls -A "$dir" | tr '\n' ' ')
            [ "$got" = "$want" ] || bad+=("kill $k: the next run left [$got], want [$want]")
        fi
        [ "$got" = "$want" ] || bad+=("kill $k: left [$got], want [$want]")
        if [ "${DETERMINISTIC:-1}" = 1 ] && ! diff -r -q "$dir" "$TMP/ref/$name" >/dev/null; then
            bad+=("kill $k: the output differs from the complete one")
        fi
    done
    [ ${#bad[@]} = 0 ] && pass "${name}_killed_leaves_nothing" || fail "${name}_killed_leaves_nothing" "${bad[@]}"
}

start=$(date +%s)
killed_writer quantize "$TMP/q" "$EL" quantize models/base.gguf "$TMP/q/base.q8.gguf" --type q8_0 -t 1
killed_writer convert_llama2c "$TMP/c" "$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$TMP/c/s.gguf"
killed_writer convert_peft "$TMP/p" "$EL" convert "$TMP/peft" -m "$B" -o "$TMP/p/peft.gguf"
killed_writer merge "$TMP/m" "$EL" merge -m "$B" --lora "$TMP/attn.gguf" -o "$TMP/m/merged.gguf"
# the checkpoint of a killed run is of an earlier step than the complete run's: names only
DETERMINISTIC=0 killed_writer finetune "$TMP/f" "$EL" finetune -m "$B" --lora --rank 2 -f "$TMP/ft.jsonl" \
    --steps 6 --batch 2 -c 16 -t 1 -q --checkpoint "$TMP/f/run.ckpt" --checkpoint-every 1 \
    --peft "$TMP/f/peft" -o "$TMP/f/ft.gguf"
# train-forecast: the forecast set, its loss plot and checkpoints (names only, as finetune)
for i in $(seq 30); do echo "Once upon a time there was a cat who liked to sit in the sun."; done > "$TMP/fc.txt"
DETERMINISTIC=0 killed_writer train_forecast "$TMP/fc" "$EL" train-forecast -m "$B" --slots 2 -f "$TMP/fc.txt" \
    --steps 6 --batch 2 --prefix 12 -t 1 -q --checkpoint "$TMP/fc/run.ckpt" --checkpoint-every 1 \
    -o "$TMP/fc/f.gguf"
# batch -o: its output appears whole or not at all (its times differ from run to run: names only)
for i in $(seq 24); do echo "{\"id\": $i, \"prompt\": \"Once upon a time\", \"n_predict\": 48, \"temperature\": 0, \"ignore_eos\": true}"; done > "$TMP/req.jsonl"
DETERMINISTIC=0 killed_writer batch "$TMP/b" "$EL" batch -m models/base.gguf -f "$TMP/req.jsonl" -t 1 -o "$TMP/b/out.jsonl"
ls -A "$TMP/f/peft" | grep -q tmp && fail finetune_peft_folder_clean "$(ls -A "$TMP/f/peft")" || pass finetune_peft_folder_clean

# a temporary name left by a process that no longer runs is removed by the next writer
mkdir -p "$TMP/s" && sh -c 'exit 0' & dead=$!; wait $dead
echo partial > "$TMP/s/x.gguf.tmp-$dead-0"
echo mine > "$TMP/s/x.gguf.tmp-$$-0" # a live process's (this shell's) is kept
"$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$TMP/s/x.gguf" >/dev/null 2>&1
[ "$(ls -A "$TMP/s" | tr '\n' ' ')" = "x.gguf x.gguf.tmp-$$-0 " ] && pass stale_temporary_removed ||
    fail stale_temporary_removed "$(ls -A "$TMP/s" | tr '\n' ' ')"
# an output or checkpoint folder that takes no files (root writes through permission bits: a
# file in place of the folder, /proc) fails before the first step, not after the last
echo file > "$TMP/notafolder"
for where in file_as_folder proc; do
    out="$TMP/notafolder/ft.gguf"; [ $where = proc ] && out=/proc/ft.gguf
    t0=$(now_ms)
    expect_exit "finetune_unwritable_$where" 1 timeout 20 "$EL" finetune -m "$B" --lora -f "$TMP/ft.jsonl" \
        --steps 100000 -t 1 -o "$out"
    grep -q "cannot write into the folder" "$TMP/err" && [ $(( $(now_ms) - t0 )) -lt 5000 ] &&
        pass "finetune_unwritable_${where}_fails_first" || fail "finetune_unwritable_${where}_fails_first" "$(head -c 300 "$TMP/err")"
done
expect_exit finetune_unwritable_checkpoint 1 timeout 20 "$EL" finetune -m "$B" --lora -f "$TMP/ft.jsonl" --steps 100000 -t 1 \
    --checkpoint "$TMP/notafolder/run.ckpt" -o "$TMP/ok.gguf"
grep -q "notafolder/run.ckpt: cannot write into the folder" "$TMP/err" && pass finetune_unwritable_checkpoint_message ||
    fail finetune_unwritable_checkpoint_message "$(head -c 300 "$TMP/err")"

took=$(( $(date +%s) - start ))
[ "$took" -le 60 ] && pass killed_writers_bounded_time || fail killed_writers_bounded_time "$took s"
finish
