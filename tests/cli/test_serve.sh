#!/usr/bin/env bash
# `edgelora serve` driven by curl: every endpoint; a request's greedy text equals `edgelora run`
# with the same prompt and adapters (an independent path: one sequence, no server), alone and
# batched with requests using other adapters, streamed or not, with a shared prefix reused from
# the cache; errors in OpenAI's shape; a client that disconnects frees its cells; a full queue
# answers 429 with Retry-After; adapters added and removed while serving; SIGTERM drains.
# Base: stories260K converted to GGUF; adapters: random GGUF LoRAs (test_batch_lora_gen).
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh && . tests/cli/serve_lib.sh

M="$DATA/models"
GEN="$(dirname "$EL")/tests/test_batch_lora_gen"
if [ ! -f "$M/stories260K.bin" ]; then skip serve "$M/stories260K.bin is absent"; finish; fi
for c in jq curl; do command -v $c >/dev/null || { skip serve "$c is not installed"; finish; }; done

B="$TMP/stories.gguf"
"$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$B" >/dev/null 2>&1 || { fail serve_convert; finish; }
L="$TMP/loras"
mkdir -p "$L"
"$GEN" "$B" "$L/attn.gguf" 4 q,k,v,o 1 0.6 && "$GEN" "$B" "$L/ffn.gguf" 8 gate,up,down 2 0.6 &&
    "$GEN" "$B" "$L/all.gguf" 2 q,k,v,o,gate,up,down 3 0.5 &&
    "$GEN" "$B" "$TMP/late.gguf" 4 q,v 7 0.6 && "$GEN" "$B" "$TMP/wrongarch.gguf" 4 q 4 0.5 badarch ||
    { fail serve_make_adapters; finish; }

serve_start serve_start -m "$B" --lora-dir "$L" -t 1 --parallel 4 -c 1024 --chat-template chatml \
    --max-tokens 400 --max-prompt 300 --max-body 20000 || finish
pass serve_start

# /v1/models: the base and every adapter of the folder
got=$(curl -s "$URL/v1/models" | jq -c '[.object, [.data[].id]]')
[ "$got" = '["list",["stories","all","attn","ffn"]]' ] && pass serve_models || fail serve_models "$got"
[ "$(health_field status)" = ok ] && pass serve_health || fail serve_health "$(curl -s "$URL/health")"

# completion JSON for a prompt, adapters (JSON) and max_tokens; greedy
complete() { # prompt max_tokens [extra-json]
    jq -cn --arg p "$1" --argjson n "$2" "{prompt: \$p, max_tokens: \$n, temperature: 0}${3:+ + $3}" |
        curl -s "$URL/v1/completions" -H 'Content-Type: application/json' -d @-
}
# what `edgelora run` prints after the prompt, without the final newline
run_text() { # prompt n run-flags...
    local p=$1 n=$2
    shift 2
    local bytes; bytes=$(printf '%s' "$p" | wc -c)
    "$EL" run -m "$B" "$@" -p "$p" -n "$n" --temp 0 -t 1 2>/dev/null | head -c -1 | tail -c +$((bytes + 1))
}

# alone: base, an adapter by "model", two adapters with scales in "adapters"
prompts=("Once upon a time" "The little dog" "Lily and Tom" "She said \"hi\" and left. ☃ é")
extras=('' '{model: "attn"}' '{adapters: [{name: "attn", scale: 0.5}, {name: "ffn", scale: 1.5}]}' '{model: "all"}')
flags=('' "--lora $L/attn.gguf" "--lora-scaled $L/attn.gguf 0.5 --lora-scaled $L/ffn.gguf 1.5" "--lora $L/all.gguf")
base=$(run_text "${prompts[0]}" 40)
for i in 0 1 2 3; do
    # shellcheck disable=SC2086
    want=$(run_text "${prompts[$i]}" 40 ${flags[$i]})
    got=$(complete "${prompts[$i]}" 40 "${extras[$i]}" | jq -j '.choices[0].text')
    if [ -n "$want" ] && [ "$got" = "$want" ]; then pass "serve_alone_equals_run_$i"; else
        fail "serve_alone_equals_run_$i" "run:   $want" "serve: $got"; fi
done
# the adapters change the text, or the comparisons prove nothing
a=$(run_text "${prompts[0]}" 40 --lora "$L/attn.gguf")
[ -n "$base" ] && [ "$a" != "$base" ] && pass serve_adapter_changes_text || fail serve_adapter_changes_text "$a"
# /metrics times the scheduler's own work between steps, and not its waits: after a second idle
# it has counted some time (the requests above), well under that second
sleep 1
sched=$(curl -s "$URL/metrics" | sed -n 's/^edgelora_scheduler_seconds_total //p')
awk -v s="${sched:-x}" 'BEGIN { exit !(s + 0 > 0 && s + 0 < 0.5) }' && pass serve_metrics_scheduler ||
    fail serve_metrics_scheduler "edgelora_scheduler_seconds_total ${sched:-absent}"

# usage and finish_reason
r=$(complete "Once upon a time" 12)
echo "$r" | jq -e '.object == "text_completion" and .usage.prompt_tokens == 5 and
    .usage.completion_tokens == 12 and .usage.total_tokens == 17 and
    .choices[0].finish_reason == "length" and (.id | startswith("cmpl-"))' >/dev/null &&
    pass serve_usage || fail serve_usage "$r"

# stop: the text ends before the first stop string, finish_reason "stop"
want=$(run_text "Once upon a time" 60)
cut=${want%%park*}
r=$(complete "Once upon a time" 60 '{stop: ["park", "zzz"]}')
[ "$cut" != "$want" ] && [ "$(echo "$r" | jq -j '.choices[0].text')" = "$cut" ] &&
    [ "$(echo "$r" | jq -r '.choices[0].finish_reason')" = stop ] && pass serve_stop_string ||
    fail serve_stop_string "want: $cut" "got: $r"

# batched: 12 requests at once over 4 sequences, 4 adapter settings, streamed and not, in three
# interleavings; each equals its single run
for round in 1 2 3; do
    bad=() pids=()
    for k in $(seq 0 11); do
        i=$(( (k + round) % 4 )) n=$(( 20 + (k * 7 + round * 5) % 40 ))
        stream=$(( (k + round) % 2 ))
        (
            sleep "0.0$(( (k * round) % 10 ))"
            body=$(jq -cn --arg p "${prompts[$i]}" --argjson n $n --argjson s $stream \
                "{prompt: \$p, max_tokens: \$n, temperature: 0, stream: (\$s == 1)}${extras[$i]:+ + ${extras[$i]}}")
            if [ $stream = 1 ]; then
                curl -sN "$URL/v1/completions" -d "$body" | sed -n 's/^data: //p' | grep -v '^\[DONE\]$' |
                    jq -j '.choices[0].text' > "$TMP/b$k.txt"
            else
                curl -s "$URL/v1/completions" -d "$body" | jq -j '.choices[0].text' > "$TMP/b$k.txt"
            fi
        ) &
        pids+=($!)
    done
    wait "${pids[@]}"
    for k in $(seq 0 11); do
        i=$(( (k + round) % 4 )) n=$(( 20 + (k * 7 + round * 5) % 40 ))
        # shellcheck disable=SC2086
        want=$(run_text "${prompts[$i]}" $n ${flags[$i]})
        [ -n "$want" ] && [ "$(cat "$TMP/b$k.txt")" = "$want" ] || bad+=("request $k: run [$want] serve [$(cat "$TMP/b$k.txt")]")
    done
    [ ${#bad[@]} = 0 ] && pass "serve_batched_equals_run_$round" || fail "serve_batched_equals_run_$round" "${bad[@]:0:3}"
done
wait_idle && pass serve_cells_freed || fail serve_cells_freed "$(curl -s "$URL/health")"

# streaming: data lines of JSON chunks, the text equal to the whole answer's, a last chunk with
# finish_reason, the usage chunk asked for, then [DONE]
curl -sN "$URL/v1/completions" -d '{"prompt": "Once upon a time", "max_tokens": 30, "temperature": 0,
    "stream": true, "stream_options": {"include_usage": true}}' > "$TMP/sse.txt"
whole=$(complete "Once upon a time" 30 | jq -j '.choices[0].text')
sed -n 's/^data: //p' "$TMP/sse.txt" | grep -v '^\[DONE\]$' > "$TMP/chunks.jsonl"
if [ "$(tail -1 "$TMP/sse.txt")" = "" ] && [ "$(grep -c '^data: \[DONE\]$' "$TMP/sse.txt")" = 1 ] &&
   [ "$(grep '^data: ' "$TMP/sse.txt" | tail -1)" = "data: [DONE]" ] &&
   [ "$(grep -vc '^data: \|^$' "$TMP/sse.txt")" = 0 ] &&
   [ "$(jq -j '.choices[0].text // ""' "$TMP/chunks.jsonl")" = "$whole" ] &&
   jq -s -e '(.[-2].choices[0].finish_reason == "length") and (.[-1].choices == []) and
       (.[-1].usage.completion_tokens == 30) and ([.[] | .object == "text_completion"] | all) and
       ([.[:-2][] | .choices[0].finish_reason == null] | all)' "$TMP/chunks.jsonl" >/dev/null; then
    pass serve_stream; else fail serve_stream "$(head -c 600 "$TMP/sse.txt")"; fi

# chat: the reply `run --chat-template` prints after the conversation's text
n_chat=$(printf '<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n' | wc -c)
want=$("$EL" run -m "$B" --lora "$L/ffn.gguf" --chat-template chatml -p "Hi there" -n 25 --temp 0 -t 1 2>/dev/null |
    head -c -1 | tail -c +$((n_chat + 1)))
r=$(curl -s "$URL/v1/chat/completions" -d '{"model": "ffn", "messages": [{"role": "user", "content": "Hi there"}],
    "max_tokens": 25, "temperature": 0}')
[ -n "$want" ] && [ "$(echo "$r" | jq -j '.choices[0].message.content')" = "$want" ] &&
    echo "$r" | jq -e '.object == "chat.completion" and .model == "ffn" and
        .choices[0].message.role == "assistant"' >/dev/null && pass serve_chat || fail serve_chat "run: $want" "serve: $r"
curl -sN "$URL/v1/chat/completions" -d '{"model": "ffn", "messages": [{"role": "user", "content": "Hi there"}],
    "max_tokens": 25, "temperature": 0, "stream": true}' | sed -n 's/^data: //p' | grep -v '^\[DONE\]$' > "$TMP/chat.jsonl"
[ "$(jq -j '.choices[0].delta.content // ""' "$TMP/chat.jsonl")" = "$want" ] &&
    jq -s -e '(.[0].choices[0].delta.role == "assistant") and (.[-1].choices[0].finish_reason != null) and
        ([.[] | .object == "chat.completion.chunk"] | all)' "$TMP/chat.jsonl" >/dev/null &&
    pass serve_chat_stream || fail serve_chat_stream "$(head -c 400 "$TMP/chat.jsonl")"

# n: choices with distinct first tokens; seeded sampling is reproducible
r=$(complete "Once upon a time" 15 '{n: 3, temperature: 0.8, seed: 5}')
r2=$(complete "Once upon a time" 15 '{n: 3, temperature: 0.8, seed: 5}')
echo "$r" | jq -e '(.choices | length) == 3 and ([.choices[].index] == [0, 1, 2]) and
    ([.choices[].text[0:3]] | unique | length) == 3 and .usage.completion_tokens == 45' >/dev/null &&
    [ "$(echo "$r" | jq -c .choices)" = "$(echo "$r2" | jq -c .choices)" ] && pass serve_n || fail serve_n "$r"
# a seeded sample equals `run` with that seed (top-p 1, no top-k or min-p: OpenAI's sampling)
want=$("$EL" run -m "$B" -p "Once upon a time" -n 30 --temp 0.9 --top-k 0 --top-p 1 --min-p 0 -s 42 -t 1 2>/dev/null |
    head -c -1 | tail -c +17)
got=$(complete "Once upon a time" 30 '{temperature: 0.9, seed: 42}' | jq -j '.choices[0].text')
[ -n "$want" ] && [ "$got" = "$want" ] && pass serve_seeded_equals_run || fail serve_seeded_equals_run "run: $want" "serve: $got"

# an n > 1 request its first tokens already end (max_tokens 1) is answered at once, and the
# server serves on
r=$(jq -cn '{prompt: "Once upon a time", max_tokens: 1, n: 2, temperature: 0}' |
    curl -s --max-time 10 "$URL/v1/completions" -d @-)
echo "$r" | jq -e '(.choices | length) == 2 and ([.choices[].finish_reason] | all(. == "length")) and
    .usage.completion_tokens == 2' >/dev/null &&
    [ "$(curl -s --max-time 5 "$URL/health" | jq -r .status)" = ok ] && pass serve_n_done_at_start || fail serve_n_done_at_start "$r"
# logprobs: each token's log-probability is <= 0, the best alternative's at least as high, and
# greedy picks the best
r=$(complete "Once upon a time" 8 '{logprobs: 2}')
echo "$r" | jq -e '.choices[0].logprobs as $l | ($l.tokens | length) == 8 and
    ([$l.token_logprobs[] | . <= 0] | all) and
    ([range(8) as $i | ($l.top_logprobs[$i] | to_entries | max_by(.value)) as $b |
      $b.key == $l.tokens[$i] and ($b.value - $l.token_logprobs[$i] | fabs) < 1e-4] | all) and
    ($l.tokens | join("")) == .choices[0].text' >/dev/null && pass serve_logprobs || fail serve_logprobs "$r"
# logprobs with n > 1 (concurrent variants): the first choice is the greedy reply, its
# log-probabilities those of n = 1 token for token; the second starts with the second most
# likely token, whose log-probability is the first's second alternative; each choice's tokens
# make its text; streamed, each choice's chunks carry the same log-probabilities
r2=$(complete "Once upon a time" 8 '{logprobs: 2, n: 2}')
jq -e -n --argjson a "$r" --argjson b "$r2" '$a.choices[0].logprobs as $one |
    $b.choices[0].logprobs as $l0 | $b.choices[1].logprobs as $l1 |
    ($l0.top_logprobs[0] | to_entries | sort_by(-.value) | .[1]) as $second |
    $l0.tokens == $one.tokens and ($l1.tokens | length) == 8 and
    ([range(8) as $i | ($l0.token_logprobs[$i] - $one.token_logprobs[$i]) | fabs < 2e-5] | all) and
    $second.key == $l1.tokens[0] and ($second.value - $l1.token_logprobs[0] | fabs) < 2e-5 and
    ($l0.tokens | join("")) == $b.choices[0].text and ($l1.tokens | join("")) == $b.choices[1].text' \
    >/dev/null && pass serve_logprobs_n || fail serve_logprobs_n "$r2"
curl -sN "$URL/v1/completions" -H 'Content-Type: application/json' -d '{"prompt": "Once upon a time",
    "max_tokens": 8, "temperature": 0, "n": 2, "logprobs": 2, "stream": true}' |
    sed -n 's/^data: //p' | grep -v '^\[DONE\]$' > "$TMP/lp-stream.jsonl"
jq -e -s --argjson b "$r2" '[range(2) as $c | [.[] | .choices[] | select(.index == $c) |
        .logprobs.token_logprobs[]?]] as $streamed |
    $streamed == [$b.choices[] | .logprobs.token_logprobs]' "$TMP/lp-stream.jsonl" >/dev/null &&
    pass serve_logprobs_n_stream || fail serve_logprobs_n_stream "$(head -c 600 "$TMP/lp-stream.jsonl")"

# errors: OpenAI's shape, the right status and code
expect_error() { # name status code curl-args...
    local name=$1 status=$2 code=$3
    shift 3
    local out; out=$(curl -s -w '\n%{http_code}' "$@")
    local st=${out##*$'\n'} body=${out%$'\n'*}
    if [ "$st" = "$status" ] && echo "$body" | jq -e --arg c "$code" '.error.code == $c and
        (.error.message | length) > 0 and (.error.type | length) > 0' >/dev/null; then pass "$name"; else
        fail "$name" "status $st, expected $status $code" "$body"; fi
}
expect_error serve_err_malformed 400 invalid_json "$URL/v1/completions" -d '{"prompt": "Hi", '
expect_error serve_err_not_object 400 invalid_json "$URL/v1/completions" -d '[1]'
expect_error serve_err_unknown_field 400 unknown_parameter "$URL/v1/completions" -d '{"prompt": "Hi", "temprature": 0}'
expect_error serve_err_no_prompt 400 missing_required_parameter "$URL/v1/completions" -d '{"max_tokens": 3}'
expect_error serve_err_bad_type 400 invalid_value "$URL/v1/completions" -d '{"prompt": "Hi", "max_tokens": "3"}'
expect_error serve_err_temperature 400 invalid_value "$URL/v1/completions" -d '{"prompt": "Hi", "temperature": 5}'
expect_error serve_err_unknown_model 404 model_not_found "$URL/v1/completions" -d '{"prompt": "Hi", "model": "nosuch"}'
expect_error serve_err_unknown_adapter 400 adapter_not_found "$URL/v1/completions" -d '{"prompt": "Hi", "adapters": [{"name": "nosuch"}]}'
expect_error serve_err_max_tokens 400 invalid_value "$URL/v1/completions" -d '{"prompt": "Hi", "max_tokens": 401}'
expect_error serve_err_penalty 400 unsupported_parameter "$URL/v1/completions" -d '{"prompt": "Hi", "presence_penalty": 1}'
long=$(printf 'the dog and the cat %.0s' $(seq 100))
expect_error serve_err_prompt_length 400 context_length_exceeded "$URL/v1/completions" -d "{\"prompt\": \"$long\"}"
expect_error serve_err_context 400 context_length_exceeded "$URL/v1/completions" -d '{"prompt": "Hi", "n": 3, "max_tokens": 400, "temperature": 1}'
head -c 30000 /dev/zero | tr '\0' a > "$TMP/big.txt"
expect_error serve_err_body_size 413 request_too_large "$URL/v1/completions" --data-binary "@$TMP/big.txt"
expect_error serve_err_no_endpoint 404 not_found "$URL/v1/nothing"
expect_error serve_err_method 405 method_not_allowed "$URL/v1/completions"
expect_error serve_err_chat_messages 400 missing_required_parameter "$URL/v1/chat/completions" -d '{"messages": []}'
printf '{"prompt": "\xff\xfe bad utf-8", "max_tokens": 3}' > "$TMP/bad-utf8.json"
r=$(curl -s "$URL/v1/completions" --data-binary "@$TMP/bad-utf8.json")
echo "$r" | jq -e '.error.code == "invalid_json" or (.choices | length) == 1' >/dev/null && pass serve_err_bad_utf8 || fail serve_err_bad_utf8 "$r"
# the server still answers correctly after all of them
got=$(complete "${prompts[1]}" 40 '{model: "attn"}' | jq -j '.choices[0].text')
[ "$got" = "$(run_text "${prompts[1]}" 40 --lora "$L/attn.gguf")" ] && pass serve_after_errors || fail serve_after_errors "$got"

# adapters while serving: a broken or mismatched file is refused and nothing changes; a good one
# is added and used; a removed one is refused to new requests
models() { curl -s "$URL/v1/models" | jq -c '[.data[].id]'; }
m0=$(models)
head -c 3000 "$L/attn.gguf" > "$L/broken.gguf"
cp "$TMP/wrongarch.gguf" "$L/wrongarch.gguf"
expect_error serve_add_broken 400 adapter_invalid "$URL/v1/adapters" -d '{"name": "broken"}'
expect_error serve_add_mismatched 400 adapter_invalid "$URL/v1/adapters" -d '{"name": "wrongarch"}'
expect_error serve_add_missing 404 adapter_not_found "$URL/v1/adapters" -d '{"name": "nosuch"}'
expect_error serve_add_loaded 409 adapter_exists "$URL/v1/adapters" -d '{"name": "attn"}'
[ "$(models)" = "$m0" ] && pass serve_add_refused_changes_nothing || fail serve_add_refused_changes_nothing "$(models)"
cp "$TMP/late.gguf" "$L/late.gguf"
r=$(curl -s "$URL/v1/adapters" -d '{"name": "late"}')
got=$(complete "Lily and Tom" 30 '{model: "late"}' | jq -j '.choices[0].text')
[ "$(echo "$r" | jq -r .id)" = late ] && [ "$got" = "$(run_text "Lily and Tom" 30 --lora "$L/late.gguf")" ] &&
    pass serve_add_adapter || fail serve_add_adapter "$r" "$got"
r=$(curl -s -X DELETE "$URL/v1/adapters/late")
[ "$(echo "$r" | jq -r .deleted)" = true ] && pass serve_delete_adapter || fail serve_delete_adapter "$r"
expect_error serve_deleted_refused 404 model_not_found "$URL/v1/completions" -d '{"prompt": "Hi", "model": "late"}'
expect_error serve_delete_unknown 404 adapter_not_found -X DELETE "$URL/v1/adapters/late"

# a client that disconnects mid-stream: its request is cancelled and its cells freed
( curl -sN --max-time 0.3 "$URL/v1/completions" -d '{"prompt": "Once", "max_tokens": 400, "temperature": 1,
    "stream": true}' > /dev/null ) &
wait $!
wait_idle && pass serve_disconnect_frees_cells || fail serve_disconnect_frees_cells "$(curl -s "$URL/health")"
serve_stop
[ "$SERVE_RC" = 0 ] && pass serve_exit || fail serve_exit "exit $SERVE_RC" "$(tail -5 "$SERVE_LOG")"

# the API key: 401 without it or with another, the answer with it; /health needs none
serve_start serve_key -m "$B" -t 1 --api-key s3cret || finish
expect_error serve_key_missing 401 invalid_api_key "$URL/v1/models"
expect_error serve_key_wrong 401 invalid_api_key "$URL/v1/models" -H 'Authorization: Bearer s3cre'
expect_error serve_key_longer 401 invalid_api_key "$URL/v1/models" -H 'Authorization: Bearer s3cret!'
r=$(curl -s "$URL/v1/models" -H 'Authorization: Bearer s3cret' | jq -r '.data[0].id')
[ "$r" = stories ] && pass serve_key_right || fail serve_key_right "$r"
[ "$(health_field status)" = ok ] && pass serve_key_health || fail serve_key_health
serve_stop

# a shared prefix is reused from the cache (same adapters) and gives the same text: while a long
# request runs, two more begin with its prompt; all three equal their single runs. The random
# model's greedy text of "Hello" has no end-of-text token in its first 20000 tokens (checked
# once: it is deterministic), so a request runs for as long as asked.
R="$M/llama-2-tiny-random.gguf"
mkdir -p "$TMP/rloras"
if [ -f "$R" ] && "$GEN" "$R" "$TMP/rloras/r.gguf" 4 q,v 3 0.6 &&
   serve_start serve_prefix -m "$R" --lora-dir "$TMP/rloras" -t 1 --parallel 3 -c 8192 --max-tokens 3000; then
    sys="Hello. You are a helpful assistant who answers every question briefly and kindly."
    rtext() { # prompt n
        local bytes; bytes=$(printf '%s' "$1" | wc -c)
        "$EL" run -m "$R" -p "$1" -n "$2" --temp 0 -t 1 2>/dev/null | head -c -1 | tail -c +$((bytes + 1))
    }
    rcomplete() { jq -cn --arg p "$1" --argjson n "$2" '{prompt: $p, max_tokens: $n, temperature: 0}' |
        curl -s "$URL/v1/completions" -d @- | jq -j '.choices[0].text'; }
    ( rcomplete "$sys" 2500 > "$TMP/p0.txt" ) &
    p0=$!
    for _ in $(seq 50); do [ "$(health_field running)" = 1 ] && break; sleep 0.05; done
    rcomplete "$sys What is the time?" 40 > "$TMP/p1.txt"
    rcomplete "$sys Who are you?" 40 > "$TMP/p2.txt"
    reused=$(curl -s "$URL/metrics" | sed -n 's/^edgelora_prompt_tokens_reused_total //p')
    wait $p0
    bad=()
    [ "$(cat "$TMP/p0.txt")" = "$(rtext "$sys" 2500)" ] || bad+=("the long one")
    [ "$(cat "$TMP/p1.txt")" = "$(rtext "$sys What is the time?" 40)" ] || bad+=("1: $(cat "$TMP/p1.txt")")
    [ "$(cat "$TMP/p2.txt")" = "$(rtext "$sys Who are you?" 40)" ] || bad+=("2: $(cat "$TMP/p2.txt")")
    [ ${#bad[@]} = 0 ] && [ -s "$TMP/p1.txt" ] && pass serve_prefix_equals_run || fail serve_prefix_equals_run "${bad[@]}"
    n_sys=$("$EL" tokenize -m "$R" -p "$sys" 2>/dev/null | wc -w)
    [ "${reused:-0}" -ge $((2 * (n_sys - 2))) ] && pass serve_prefix_reused ||
        fail serve_prefix_reused "reused ${reused:-none}, the prefix has about $n_sys tokens"
    # a running n > 1 request's prompt is shared too: while it runs, a request beginning with
    # its prompt (seen nowhere else, so no kept entry holds it) reuses all of it but a token or
    # two, and both equal their single runs
    sys2="Hello. Please tell a long story about a dragon and a knight in a small town."
    jq -cn --arg p "$sys2" '{prompt: $p, max_tokens: 1500, temperature: 0, n: 2}' |
        curl -s "$URL/v1/completions" -d @- > "$TMP/g0.json" &
    g0=$!
    for _ in $(seq 50); do [ "$(health_field running)" = 1 ] && break; sleep 0.05; done
    r=$(jq -cn --arg p "$sys2 Once" '{prompt: $p, max_tokens: 30, temperature: 0}' |
        curl -s "$URL/v1/completions" -d @-)
    wait $g0
    n_sys2=$("$EL" tokenize -m "$R" -p "$sys2" 2>/dev/null | wc -w)
    cached=$(echo "$r" | jq .usage.prompt_tokens_details.cached_tokens)
    if [ "${cached:-0}" -ge $((n_sys2 - 2)) ] && [ "$(echo "$r" | jq -j '.choices[0].text')" = "$(rtext "$sys2 Once" 30)" ] &&
       [ "$(jq -j '.choices[0].text' "$TMP/g0.json")" = "$(rtext "$sys2" 1500)" ]; then
        pass serve_prefix_from_running_group; else
        fail serve_prefix_from_running_group "cached ${cached:-none} of about $n_sys2" "$r"; fi
    # an adapter removed while a request streams with it: that request runs to its end with
    # the adapter (its text equals `run --lora`), new ones are refused
    curl -sN "$URL/v1/completions" -d '{"prompt": "Hello", "max_tokens": 2500, "temperature": 0,
        "model": "r", "stream": true}' > "$TMP/r-stream.txt" &
    rs=$!
    for _ in $(seq 100); do grep -q '^data: ' "$TMP/r-stream.txt" && break; sleep 0.05; done
    r=$(curl -s -X DELETE "$URL/v1/adapters/r")
    running=$(health_field running)
    refused=$(curl -s "$URL/v1/completions" -d '{"prompt": "Hello", "model": "r"}' | jq -r .error.code)
    wait $rs
    got=$(sed -n 's/^data: //p' "$TMP/r-stream.txt" | grep -v '^\[DONE\]$' | jq -j '.choices[0].text')
    want=$("$EL" run -m "$R" --lora "$TMP/rloras/r.gguf" -p Hello -n 2500 --temp 0 -t 1 2>/dev/null |
        head -c -1 | tail -c +6)
    if [ "$(echo "$r" | jq -r .deleted)" = true ] && [ "$running" = 1 ] && [ "$refused" = model_not_found ] &&
       [ "$(tail -2 "$TMP/r-stream.txt" | head -1)" = "data: [DONE]" ] && [ -n "$want" ] && [ "$got" = "$want" ]; then
        pass serve_delete_while_streaming; else
        fail serve_delete_while_streaming "delete: $r, running then: $running, a new request: $refused" \
            "$(tail -c 300 "$TMP/r-stream.txt")"; fi
    serve_stop
else
    skip serve_prefix_reused "$R is absent"
fi

# a full queue: one sequence, one place in the queue; a third request gets 429 with Retry-After.
# Then SIGTERM: the running and the queued request are still answered in full, new connections
# are refused, and the server exits 0. The random model's greedy text of "Hello" has no
# end-of-text token in its first 20000 tokens (checked once: it is deterministic), so the
# long request runs for as long as asked.
R="$M/llama-2-tiny-random.gguf"
if [ -f "$R" ] && serve_start serve_queue -m "$R" -t 1 --parallel 1 --queue 1 -c 8192 --max-tokens 6000; then
    ( curl -s "$URL/v1/completions" -d '{"prompt": "Hello", "max_tokens": 6000, "temperature": 0}' > "$TMP/q1.json" ) &
    q1=$!
    for _ in $(seq 50); do [ "$(health_field running)" = 1 ] && break; sleep 0.05; done
    ( curl -s "$URL/v1/completions" -d '{"prompt": "Hello", "max_tokens": 5, "temperature": 0}' > "$TMP/q2.json" ) &
    q2=$!
    for _ in $(seq 50); do [ "$(health_field queued)" = 1 ] && break; sleep 0.05; done
    curl -s -D "$TMP/q3.head" "$URL/v1/completions" -d '{"prompt": "Hello", "max_tokens": 5}' > "$TMP/q3.json"
    if grep -q '^HTTP/1.1 429' "$TMP/q3.head" && grep -qi '^Retry-After: [1-9]' "$TMP/q3.head" &&
       jq -e '.error.code == "queue_full"' "$TMP/q3.json" >/dev/null; then pass serve_queue_full_429; else
        fail serve_queue_full_429 "$(cat "$TMP/q3.head" "$TMP/q3.json")"; fi
    kill -TERM "$SERVE_PID"
    sleep 0.3
    curl -s --max-time 2 "$URL/health" > /dev/null
    refused=$?
    wait "$SERVE_PID"
    SERVE_RC=$?
    wait $q1 $q2
    if [ "$SERVE_RC" = 0 ] && [ "$refused" != 0 ] &&
       jq -e '.choices[0].finish_reason == "length" and .usage.completion_tokens == 6000' "$TMP/q1.json" >/dev/null &&
       jq -e '.usage.completion_tokens == 5' "$TMP/q2.json" >/dev/null; then pass serve_sigterm_drains; else
        fail serve_sigterm_drains "exit $SERVE_RC, curl after SIGTERM: $refused" "$(head -c 200 "$TMP/q1.json")" \
            "$(head -c 200 "$TMP/q2.json")" "$(tail -3 "$SERVE_LOG")"; fi
else
    skip serve_queue_full_429 "$R is absent"
fi

# usage errors
expect_exit serve_bad_port 2 "$EL" serve -m "$B" --port 70000
expect_exit serve_bad_option 2 "$EL" serve -m "$B" --frobnicate
expect_exit serve_bad_host 2 "$EL" serve -m "$B" --host nowhere
expect_exit serve_missing_dir 1 "$EL" serve -m "$B" --lora-dir "$TMP/nonexistent"
expect_exit serve_help 0 "$EL" serve --help
finish
