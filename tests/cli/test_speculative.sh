#!/usr/bin/env bash
# Self-speculative decoding from the command line: train-forecast writes a set that run and bench
# read; the text with --forecast (fixed trees and auto, with an adapter, sampled with a seed) is
# byte for byte the plain run's; a set for another model, a bad --tree and a tree deeper than the
# set are refused.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

printf 'The cat sat on the mat. It was a sunny day and the children played outside.\n%.0s' \
    $(seq 40) > "$TMP/text.txt"
expect_exit train_forecast 0 "$EL" train-forecast --slots 2 -f "$TMP/text.txt" --steps 4 --batch 2 \
    --prefix 16 -t 1 -q -o "$TMP/f.gguf"
[ -s "$TMP/f.gguf" ] && [ -s "$TMP/f.loss.svg" ] && pass train_forecast_files ||
    fail train_forecast_files "$(ls -la "$TMP")"
"$EL" info "$TMP/f.gguf" > "$TMP/info" 2>&1
grep -q 'general.type: string = "forecast"' "$TMP/info" && grep -q "forecast.n_slots: u32 = 2" "$TMP/info" &&
    pass forecast_info || fail forecast_info "$(head -20 "$TMP/info")"

same_as_plain() { # NAME ARGS...: run with ARGS, then with ARGS and the forecast: the same text
    local name=$1
    shift
    "$EL" run -t 1 "$@" > "$TMP/plain" 2>/dev/null
    "$EL" run -t 1 "$@" --forecast "$TMP/f.gguf" $TREE > "$TMP/spec" 2>"$TMP/spec.err"
    if [ -s "$TMP/plain" ] && cmp -s "$TMP/plain" "$TMP/spec" && grep -q "^speculative:" "$TMP/spec.err"; then
        pass "$name"
    else
        fail "$name" "$(head -c 300 "$TMP/plain")" "$(head -c 300 "$TMP/spec")" "$(cat "$TMP/spec.err")"
    fi
}
for TREE in "--tree 1" "--tree 3,2" "--tree auto" ""; do
    t=${TREE#--tree }
    same_as_plain "run_forecast_greedy_${t:-default}" -p "The cat sat on" -n 40 --temp 0
done
TREE="--tree 2,2"
same_as_plain run_forecast_sampled -p "The children" -n 40 --temp 0.9 --seed 7
same_as_plain run_forecast_adapter -p "German: Open the file" -n 30 --temp 0 --lora models/translate-de.gguf
"$EL" run -t 1 -p "German: Open the file" -n 30 --temp 0 > "$TMP/base" 2>/dev/null
cmp -s "$TMP/base" "$TMP/spec" && fail run_forecast_adapter_changes_text || pass run_forecast_adapter_changes_text

# a set trained with an adapter bound serves that adapter's sequences only
expect_exit train_forecast_adapter 0 "$EL" train-forecast --lora models/translate-de.gguf --slots 2 \
    -f "$TMP/text.txt" --steps 2 --batch 2 --prefix 16 -t 1 -q --no-plot -o "$TMP/fde.gguf"
expect_exit run_forecast_adapter_set 0 "$EL" run -t 1 -p "German: Save" -n 8 --temp 0 \
    --lora models/translate-de.gguf --forecast "$TMP/fde.gguf" --tree 2
expect_exit run_forecast_adapter_set_without 1 "$EL" run -t 1 -p "German: Save" -n 8 --temp 0 \
    --forecast "$TMP/fde.gguf" --tree 2
grep -q "trained with adapter 'translate-de.gguf'" "$TMP/err" && pass run_forecast_adapter_set_message ||
    fail run_forecast_adapter_set_message "$(cat "$TMP/err")"
expect_exit run_forecast_adapter_set_other 1 "$EL" run -t 1 -p "German: Save" -n 8 --temp 0 \
    --lora models/translate-fr.gguf --forecast "$TMP/fde.gguf" --tree 2

# chat: such a set drafts while its adapter is bound; bound otherwise, replies decode plainly
# (said once) and stay plain chat's
printf 'Open the file\nSave it\n' > "$TMP/chat.in"
"$EL" chat -t 1 -n 12 --temp 0 --lora models/translate-de.gguf < "$TMP/chat.in" > "$TMP/chat.plain" 2>/dev/null
expect_exit chat_forecast_adapter_set 0 "$EL" chat -t 1 -n 12 --temp 0 -v \
    --lora models/translate-de.gguf --forecast "$TMP/fde.gguf" --tree 2 < "$TMP/chat.in"
cmp -s "$TMP/out" "$TMP/chat.plain" && grep -q "speculative steps" "$TMP/err" &&
    pass chat_forecast_adapter_set_text || fail chat_forecast_adapter_set_text "$(cat "$TMP/err")"
"$EL" chat -t 1 -n 12 --temp 0 < "$TMP/chat.in" > "$TMP/chat.plain" 2>/dev/null
expect_exit chat_forecast_adapter_set_without 0 "$EL" chat -t 1 -n 12 --temp 0 \
    --forecast "$TMP/fde.gguf" --tree 2 < "$TMP/chat.in"
cmp -s "$TMP/out" "$TMP/chat.plain" && [ "$(grep -c "replies decode plainly" "$TMP/err")" = 1 ] &&
    pass chat_forecast_adapter_set_without_plain ||
    fail chat_forecast_adapter_set_without_plain "$(cat "$TMP/err")"

# batch: speculative requests in shared steps give the plain batch's texts (greedy, sampled,
# with an adapter, with a stop string; one request with "n" stays plain)
cat > "$TMP/req.jsonl" <<'JSONL'
{"id": 1, "prompt": "The cat sat on", "n_predict": 40, "temperature": 0}
{"id": 2, "prompt": "The children", "n_predict": 30, "temperature": 0.8, "seed": 3}
{"id": 3, "prompt": "German: Open the file\n", "n_predict": 20, "temperature": 0, "adapter": "translate-de"}
{"id": 4, "prompt": "It was a sunny day", "n_predict": 40, "temperature": 0, "stop": "."}
{"id": 5, "prompt": "Once", "n_predict": 12, "temperature": 0, "n": 2}
JSONL
texts() { /usr/bin/python3 -c 'import json,sys; [print(json.dumps([d.get("id"), d.get("text"), d.get("choices") and [c["text"] for c in d["choices"]], d.get("error")])) for d in map(json.loads, sys.stdin)]'; }
"$EL" batch -f "$TMP/req.jsonl" --lora-dir models -t 1 -s 5 2>/dev/null | texts > "$TMP/batch.plain"
expect_exit batch_forecast 0 "$EL" batch -f "$TMP/req.jsonl" --lora-dir models -t 1 -s 5 \
    --forecast "$TMP/f.gguf" --tree 2,1
texts < "$TMP/out" > "$TMP/batch.spec"
[ "$(wc -l < "$TMP/batch.plain")" = 5 ] && cmp -s "$TMP/batch.plain" "$TMP/batch.spec" &&
    ! grep -q 'req.jsonl:' "$TMP/batch.spec" && grep -q "^speculative: " "$TMP/err" &&
    pass batch_forecast_same_texts ||
    fail batch_forecast_same_texts "$(cat "$TMP/batch.plain")" "$(cat "$TMP/batch.spec")" "$(cat "$TMP/err")"

# requests that end in different steps: one ending (its cells freed) before the trees after it
# in the same step are walked does not fail them
cat > "$TMP/req2.jsonl" <<'JSONL'
{"id": 1, "prompt": "The cat sat on", "n_predict": 10, "temperature": 0}
{"id": 2, "prompt": "The children", "n_predict": 40, "temperature": 0}
{"id": 3, "prompt": "Once upon a time", "n_predict": 20, "temperature": 0}
{"id": 4, "prompt": "It was a sunny day", "n_predict": 40, "temperature": 0}
JSONL
"$EL" batch -f "$TMP/req2.jsonl" -t 1 2>/dev/null | texts > "$TMP/batch2.plain"
"$EL" batch -f "$TMP/req2.jsonl" -t 1 --forecast "$TMP/f.gguf" --tree 2,1 2>"$TMP/err" | texts > "$TMP/batch2.spec"
[ "$(wc -l < "$TMP/batch2.plain")" = 4 ] && cmp -s "$TMP/batch2.plain" "$TMP/batch2.spec" &&
    pass batch_forecast_ends_apart ||
    fail batch_forecast_ends_apart "$(cat "$TMP/batch2.plain")" "$(cat "$TMP/batch2.spec")" "$(cat "$TMP/err")"

# a request's own tree, or none: the same texts; a bad tree fails its request alone
cat > "$TMP/req3.jsonl" <<'JSONL'
{"id": 1, "prompt": "The cat sat on", "n_predict": 30, "temperature": 0, "tree": [1]}
{"id": 2, "prompt": "The children", "n_predict": 30, "temperature": 0, "speculative": false}
{"id": 3, "prompt": "Once upon a time", "n_predict": 30, "temperature": 0.7, "seed": 4, "tree": "auto"}
{"id": 4, "prompt": "It was a sunny day", "n_predict": 30, "temperature": 0, "tree": [2, 2]}
JSONL
"$EL" batch -f "$TMP/req3.jsonl" -t 1 2>/dev/null > "$TMP/batch3.plain.out"
grep -q '"id":1,"error":"[^"]*req3.jsonl:1: \\"tree\\": the batch runs without --forecast"' "$TMP/batch3.plain.out" &&
    grep -q '"id":2,"text"' "$TMP/batch3.plain.out" && pass batch_tree_without_forecast ||
    fail batch_tree_without_forecast "$(cat "$TMP/batch3.plain.out")"
sed 's/, "tree": [^}]*}/}/' "$TMP/req3.jsonl" > "$TMP/req3-plain.jsonl"
"$EL" batch -f "$TMP/req3-plain.jsonl" -t 1 2>/dev/null | texts > "$TMP/batch3.plain"
"$EL" batch -f "$TMP/req3.jsonl" -t 1 --forecast "$TMP/f.gguf" --tree 1 2>"$TMP/err" | texts > "$TMP/batch3.spec"
[ "$(wc -l < "$TMP/batch3.plain")" = 4 ] && cmp -s "$TMP/batch3.plain" "$TMP/batch3.spec" &&
    pass batch_request_trees || fail batch_request_trees "$(cat "$TMP/batch3.plain")" "$(cat "$TMP/batch3.spec")"
printf '%s\n' '{"id": 1, "prompt": "The cat", "n_predict": 8, "tree": [1, 1, 1]}' \
    '{"id": 2, "prompt": "The cat", "n_predict": 8, "tree": [0]}' \
    '{"id": 3, "prompt": "The cat", "n_predict": 8, "tree": "4,2"}' \
    '{"id": 4, "prompt": "The cat", "n_predict": 8, "speculative": false, "tree": [1]}' \
    '{"id": 5, "prompt": "The cat", "n_predict": 8, "temperature": 0}' > "$TMP/req4.jsonl"
"$EL" batch -f "$TMP/req4.jsonl" -t 1 --forecast "$TMP/f.gguf" > "$TMP/out" 2>"$TMP/err"
if grep -q 'req4.jsonl:1: \\"tree\\" has 3 depths; the forecast set has 2 slots' "$TMP/out" &&
   [ "$(grep -c 'req4.jsonl:[234]: \\"tree\\"' "$TMP/out")" = 3 ] && grep -q '"id":5,"text"' "$TMP/out"; then
    pass batch_request_bad_trees; else fail batch_request_bad_trees "$(cat "$TMP/out")"; fi

printf 'The cat sat on\nThe children played\n' > "$TMP/prompts.txt"
expect_exit bench_forecast 0 "$EL" bench --forecast "$TMP/f.gguf" --tree 2,1 --prompts "$TMP/prompts.txt" \
    -n 24 -r 1 -t 1 --record "$TMP/trace.txt"
grep -q "identical to plain decoding: yes" "$TMP/out" && [ -s "$TMP/trace.txt" ] &&
    pass bench_forecast_identical || fail bench_forecast_identical "$(cat "$TMP/out")"
expect_exit bench_replay 0 "$EL" bench --replay "$TMP/trace.txt" -p 16 -r 1 -t 1
grep -q "replayed steps" "$TMP/out" && pass bench_replay_report || fail bench_replay_report "$(cat "$TMP/out")"
echo "1 0 x" > "$TMP/bad-trace.txt"
expect_exit bench_replay_bad_trace 2 "$EL" bench --replay "$TMP/bad-trace.txt" -r 1
grep -q "bad-trace.txt:1: not a trace line" "$TMP/err" && pass bench_replay_bad_trace_message ||
    fail bench_replay_bad_trace_message "$(cat "$TMP/err")"

expect_exit run_tree_bad 2 "$EL" run -p hi -n 2 --forecast "$TMP/f.gguf" --tree 2,x
grep -q "\-\-tree '2,x'" "$TMP/err" && pass run_tree_bad_message || fail run_tree_bad_message "$(cat "$TMP/err")"
expect_exit run_tree_too_deep 2 "$EL" run -p hi -n 2 --forecast "$TMP/f.gguf" --tree 1,1,1
M="$DATA/models"
if [ -f "$M/stories260K.bin" ]; then
    expect_exit run_forecast_other_model 1 "$EL" run -m "$M/stories260K.bin" --tokenizer "$M/tok512.bin" \
        -p "Once" -n 4 --forecast "$TMP/f.gguf"
    grep -q "f.gguf: .*another model\|f.gguf: the forecast set is for" "$TMP/err" &&
        pass run_forecast_other_model_message || fail run_forecast_other_model_message "$(cat "$TMP/err")"
else
    skip run_forecast_other_model "$M/stories260K.bin is absent"
fi
finish
