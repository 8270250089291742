#!/usr/bin/env bash
# `edgelora serve --forecast`: self-speculative decoding per request in the shared steps. Every
# reply is compared with `edgelora run` without a forecast set (plain decoding, one sequence, no
# server): greedy replies alone and 12 at once mixing speculative and plain requests, trees,
# adapters, streams, a stop string, logprobs and bad requests; a seeded sample equals plain
# `run` and `run --forecast` with that seed; the speculative ones take fewer decode steps than
# tokens (usage and /metrics); a set trained for an adapter drafts for that adapter's requests
# only; a finished speculative request's kept cells serve the next turn; bad trees are 400s that
# stop nothing else; impossible options are refused at start.
# Model: the default one (models/base.gguf) with its committed forecast set (3 slots).
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh && . tests/cli/serve_lib.sh

for c in jq curl; do command -v $c >/dev/null || { skip serve_spec "$c is not installed"; finish; }; done
B=models/base.gguf
F=models/base.forecast.gguf
L="$TMP/loras"
mkdir -p "$L" && ln -s "$PWD/models/translate-de.gguf" "$PWD/models/translate-fr.gguf" "$L/"

# what `edgelora run` (plain: no forecast set) prints after the prompt, without the final newline
run_text() { # prompt n run-flags...
    local p=$1 n=$2
    shift 2
    local bytes; bytes=$(printf '%s' "$p" | wc -c)
    "$EL" run -m "$B" "$@" -p "$p" -n "$n" --temp 0 -t 1 2>/dev/null | head -c -1 | tail -c +$((bytes + 1))
}
# the completion JSON for a prompt, max_tokens and more fields (jq), greedy
complete() { # prompt max_tokens [extra-jq]
    jq -cn --arg p "$1" --argjson n "$2" "{prompt: \$p, max_tokens: \$n, temperature: 0}${3:+ + $3}" |
        curl -s "$URL/v1/completions" -d @-
}
metric() { curl -s "$URL/metrics" | sed -n "s/^edgelora_$1 //p"; }

# the server's tree is the default (auto): a request's own tree may take as many rows as auto's
serve_start serve_spec_start -m "$B" --forecast "$F" --lora-dir "$L" -t 1 --parallel 4 -c 2048 || finish
grep -q "speculative; listening" "$SERVE_LOG" && pass serve_spec_start || fail serve_spec_start "$(cat "$SERVE_LOG")"

# alone: the speculative greedy reply equals plain `run`, in fewer decode steps than tokens
# (usage: steps after the first token plus accepted drafts are the tokens; /metrics: all steps
# of the request, its prompt's and its start's included)
p="The cat sat on the mat"
want=$(run_text "$p" 60)
steps0=$(metric steps_total) gen0=$(metric generated_tokens_total)
r=$(complete "$p" 60 '{tree: [4, 2, 1]}')
steps1=$(metric steps_total) gen1=$(metric generated_tokens_total)
if [ -n "$want" ] && [ "$(echo "$r" | jq -j '.choices[0].text')" = "$want" ] &&
   echo "$r" | jq -e '.usage.completion_tokens == 60 and .usage.speculative.accepted_tokens > 0 and
       .usage.speculative.steps + .usage.speculative.accepted_tokens + 1 == 60' >/dev/null; then
    pass serve_spec_alone_equals_run; else fail serve_spec_alone_equals_run "run:   $want" "serve: $r"; fi
[ $((gen1 - gen0)) = 60 ] && [ $((steps1 - steps0)) -lt 60 ] && pass serve_spec_fewer_steps ||
    fail serve_spec_fewer_steps "$((steps1 - steps0)) steps for $((gen1 - gen0)) tokens"
[ "$(metric speculative_steps_total)" = "$(echo "$r" | jq .usage.speculative.steps)" ] &&
    [ "$(metric speculative_accepted_tokens_total)" = "$(echo "$r" | jq .usage.speculative.accepted_tokens)" ] &&
    [ "$(metric speculative_requests_total)" = 1 ] && pass serve_spec_metrics ||
    fail serve_spec_metrics "$(curl -s "$URL/metrics" | grep speculative)" "$r"
# the server's tree (auto: on this compute-bound model mostly plain steps), and "speculative":
# false, which decodes plainly: the same text; only the first counts as speculative
r=$(complete "$p" 60)
[ "$(echo "$r" | jq -j '.choices[0].text')" = "$want" ] && echo "$r" | jq -e '.usage.speculative.steps > 0' >/dev/null &&
    pass serve_spec_auto || fail serve_spec_auto "$r"
r=$(complete "$p" 60 '{speculative: false}')
[ "$(echo "$r" | jq -j '.choices[0].text')" = "$want" ] && echo "$r" | jq -e '.usage.speculative == null' >/dev/null &&
    [ "$(metric speculative_requests_total)" = 2 ] && pass serve_spec_off || fail serve_spec_off "$r"

# 12 at once over 4 sequences, three rounds: speculative with the server's tree, trees of their
# own, plain, logprobs (plain), other adapters, streamed or not, a stop string; and among them
# bad requests, answered 400 while the others run. Each equals its plain `run`.
prompts=("The cat sat on the mat" $'German: The file could not be saved.\n' $'French: Open the settings.\n'
    "Once upon a time there was")
extras=('{}' '{model: "translate-de"}' '{model: "translate-fr", tree: [2, 1]}' '{tree: "auto"}'
    '{speculative: false}' '{model: "translate-de", tree: [1]}' '{logprobs: 2}' '{stop: [" of"]}'
    '{tree: [3, 3, 3]}' '{model: "translate-fr", speculative: false}' '{tree: [4, 2, 1]}'
    '{}')
flags=('' "--lora $L/translate-de.gguf" "--lora $L/translate-fr.gguf" '')
# which prompt (and adapter flags) each extra goes with: an adapter's own prompt
pick=(0 1 2 3 0 1 3 0 3 2 0 3)
specs=(1 1 1 1 0 1 0 1 1 0 1 1)
bads=('{tree: [0]}' '{tree: "4,2,1"}' '{tree: [1, 1, 1, 1]}' '{tree: [8, 8, 1]}' '{speculative: "yes"}'
    '{speculative: false, tree: [2]}')
for round in 1 2 3; do
    bad=() pids=()
    for k in $(seq 0 11); do
        i=${pick[$k]} n=$(( 20 + (k * 7 + round * 5) % 40 )) stream=$(( (k + round) % 2 ))
        (
            sleep "0.0$(( (k * round) % 10 ))"
            body=$(jq -cn --arg p "${prompts[$i]}" --argjson n $n --argjson s $stream \
                "{prompt: \$p, max_tokens: \$n, temperature: 0, stream: (\$s == 1)} + ${extras[$k]}")
            if [ $stream = 1 ]; then
                body=$(echo "$body" | jq -c '. + {stream_options: {include_usage: true}}')
                curl -sN "$URL/v1/completions" -d "$body" | sed -n 's/^data: //p' | grep -v '^\[DONE\]$' > "$TMP/s$k.jsonl"
                jq -j '.choices[0].text // ""' "$TMP/s$k.jsonl" > "$TMP/b$k.txt"
                tail -1 "$TMP/s$k.jsonl" > "$TMP/u$k.json"
            else
                curl -s "$URL/v1/completions" -d "$body" > "$TMP/u$k.json"
                jq -j '.choices[0].text' "$TMP/u$k.json" > "$TMP/b$k.txt"
            fi
        ) &
        pids+=($!)
    done
    for k in "${!bads[@]}"; do
        ( sleep "0.0$(( (k * round + 3) % 10 ))"; complete "Hello" 10 "${bads[$k]}" > "$TMP/bad$k.json" ) &
        pids+=($!)
    done
    wait "${pids[@]}"
    for k in $(seq 0 11); do
        i=${pick[$k]} n=$(( 20 + (k * 7 + round * 5) % 40 ))
        # shellcheck disable=SC2086
        want=$(run_text "${prompts[$i]}" $n ${flags[$i]})
        [ "$k" = 7 ] && want=${want%% of*} # the stop string: the text ends before it
        got_spec=$(jq '.usage.speculative != null' "$TMP/u$k.json")
        [ -n "$want" ] && [ "$(cat "$TMP/b$k.txt")" = "$want" ] ||
            bad+=("request $k (${extras[$k]}): run [$want] serve [$(cat "$TMP/b$k.txt")]")
        [ "$got_spec" = "$([ "${specs[$k]}" = 1 ] && echo true || echo false)" ] ||
            bad+=("request $k (${extras[$k]}): speculative usage $got_spec: $(cat "$TMP/u$k.json")")
    done
    for k in "${!bads[@]}"; do
        jq -e '.error.type == "invalid_request_error" and (.error.code == "invalid_value")' "$TMP/bad$k.json" >/dev/null ||
            bad+=("bad request ${bads[$k]}: $(cat "$TMP/bad$k.json")")
    done
    [ ${#bad[@]} = 0 ] && pass "serve_spec_batched_equals_run_$round" || fail "serve_spec_batched_equals_run_$round" "${bad[@]:0:4}"
done
grep -q "has 4 depths; the server's forecast set has 3 slots" "$TMP/bad2.json" &&
    grep -q "takes 72 rows a step; this server's steps hold 52" "$TMP/bad3.json" &&
    pass serve_spec_bad_tree_messages || fail serve_spec_bad_tree_messages "$(cat "$TMP"/bad*.json)"
[ "$(jq -j '.choices[0].finish_reason' "$TMP/u7.json")" = stop ] && pass serve_spec_stop_reason ||
    fail serve_spec_stop_reason "$(cat "$TMP/u7.json")"
wait_idle && pass serve_spec_cells_freed || fail serve_spec_cells_freed "$(curl -s "$URL/health")"

# a seeded sample: the same draws as plain decoding, so the same text as plain `run` with that
# seed (OpenAI's sampling: top-p 1, no top-k, no min-p) and as `run --forecast`
p="Once upon a time there was"
bytes=$(printf '%s' "$p" | wc -c)
sample_flags=(-m "$B" -p "$p" -n 50 --temp 0.9 --top-k 0 --top-p 1 --min-p 0 -s 7 -t 1)
want=$("$EL" run "${sample_flags[@]}" 2>/dev/null | head -c -1 | tail -c +$((bytes + 1)))
want_spec=$("$EL" run "${sample_flags[@]}" --forecast "$F" --tree 4,2,1 2>/dev/null | head -c -1 | tail -c +$((bytes + 1)))
r=$(complete "$p" 50 '{temperature: 0.9, seed: 7, tree: [4, 2, 1]}')
got=$(echo "$r" | jq -j '.choices[0].text')
greedy=$(run_text "$p" 50)
[ -n "$want" ] && [ "$got" = "$want" ] && [ "$want_spec" = "$want" ] && [ "$want" != "$greedy" ] &&
    echo "$r" | jq -e '.usage.speculative.steps > 0' >/dev/null && pass serve_spec_seeded_equals_run ||
    fail serve_spec_seeded_equals_run "run:           $want" "run --forecast: $want_spec" "serve:         $r"

# chat through the template, streamed: the same text as the whole plain answer
chat() { # extra-jq
    jq -cn "{messages: [{role: \"user\", content: \"Say something about cats.\"}], max_tokens: 40,
        temperature: 0} + $1" | curl -s "$URL/v1/chat/completions" -d @-
}
plain=$(chat '{speculative: false}' | jq -j '.choices[0].message.content')
chat '{stream: true, tree: [2, 1]}' | sed -n 's/^data: //p' | grep -v '^\[DONE\]$' > "$TMP/chat.jsonl"
[ -n "$plain" ] && [ "$(jq -j '.choices[0].delta.content // ""' "$TMP/chat.jsonl")" = "$plain" ] &&
    pass serve_spec_chat_stream || fail serve_spec_chat_stream "plain: $plain" "$(head -c 600 "$TMP/chat.jsonl")"

# n > 1: concurrent variants, plain; reproducible with a seed
r=$(complete "Once upon a time" 15 '{n: 2, temperature: 0.8, seed: 5}')
r2=$(complete "Once upon a time" 15 '{n: 2, temperature: 0.8, seed: 5, speculative: false}')
echo "$r" | jq -e '(.choices | length) == 2 and .usage.completion_tokens == 30 and .usage.speculative == null' >/dev/null &&
    [ "$(echo "$r" | jq -c .choices)" = "$(echo "$r2" | jq -c .choices)" ] && pass serve_spec_n_plain || fail serve_spec_n_plain "$r" "$r2"

# a shared prefix: while a long speculative request runs, two more begin with its prompt (one
# speculative, one plain) and share its cells; all three equal their plain runs
sys="The cat sat on the mat. It was a sunny day and the children played outside in the garden."
( complete "$sys" 800 '{tree: [4, 2, 1]}' > "$TMP/p0.json" ) &
p0=$!
for _ in $(seq 50); do [ "$(health_field running)" = 1 ] && break; sleep 0.05; done
reused0=$(metric prompt_tokens_reused_total)
r1=$(complete "$sys Then" 30 '{tree: [2, 1]}')
r2=$(complete "$sys Later" 30 '{speculative: false}')
reused1=$(metric prompt_tokens_reused_total)
wait $p0
n_sys=$("$EL" tokenize -m "$B" -p "$sys" 2>/dev/null | wc -w)
bad=()
[ "$(jq -j '.choices[0].text' "$TMP/p0.json")" = "$(run_text "$sys" 800)" ] || bad+=("the long one: $(head -c 300 "$TMP/p0.json")")
[ "$(echo "$r1" | jq -j '.choices[0].text')" = "$(run_text "$sys Then" 30)" ] || bad+=("1: $r1")
[ "$(echo "$r2" | jq -j '.choices[0].text')" = "$(run_text "$sys Later" 30)" ] || bad+=("2: $r2")
echo "$r1" | jq -e '.usage.speculative.steps > 0' >/dev/null || bad+=("1 not speculative: $r1")
[ $((reused1 - reused0)) -ge $((2 * (n_sys - 2))) ] ||
    bad+=("reused $((reused1 - reused0)) tokens, the prefix has about $n_sys")
[ ${#bad[@]} = 0 ] && pass serve_spec_prefix_reused || fail serve_spec_prefix_reused "${bad[@]}"
# the next turn of the speculative request 1, finished: its prompt, its reply and more. Both
# a speculative and a plain request share the cells it kept (--prefix-cache), its generated
# tokens' too (the path its trees accepted: more than its prompt), and equal their plain runs
turn="$sys Then$(echo "$r1" | jq -j '.choices[0].text') And"
n_then=$("$EL" tokenize -m "$B" --bos -p "$sys Then" 2>/dev/null | wc -w)
bad=()
for x in '{tree: [2, 1]}' '{speculative: false}'; do
    r=$(complete "$turn" 20 "$x")
    [ "$(echo "$r" | jq -j '.choices[0].text')" = "$(run_text "$turn" 20)" ] || bad+=("$x: $r")
    [ "$(echo "$r" | jq .usage.prompt_tokens_details.cached_tokens)" -gt "$n_then" ] ||
        bad+=("$x reused $(echo "$r" | jq .usage.prompt_tokens_details.cached_tokens), its first prompt has $n_then tokens")
done
[ ${#bad[@]} = 0 ] && pass serve_spec_prefix_finished || fail serve_spec_prefix_finished "${bad[@]}"

# a client that disconnects from a speculative stream: cancelled, its cells (and tree) freed
( curl -sN --max-time 0.3 "$URL/v1/completions" -d '{"prompt": "The", "max_tokens": 1000, "temperature": 1,
    "stream": true}' > /dev/null ) &
wait $!
wait_idle && pass serve_spec_disconnect_frees_cells || fail serve_spec_disconnect_frees_cells "$(curl -s "$URL/health")"
serve_stop
[ "$SERVE_RC" = 0 ] && pass serve_spec_exit || fail serve_spec_exit "exit $SERVE_RC" "$(tail -5 "$SERVE_LOG")"

# a set trained with an adapter drafts for requests bound to that adapter alone; the others
# decode plainly; both equal `run`
printf 'The cat sat on the mat. It was a sunny day and the children played outside.\n%.0s' \
    $(seq 40) > "$TMP/text.txt"
if "$EL" train-forecast -m "$B" --lora "$L/translate-de.gguf" --slots 2 -f "$TMP/text.txt" --steps 2 --batch 2 \
        --prefix 16 -t 1 -q --no-plot -o "$TMP/fde.gguf" >/dev/null 2>&1 &&
   serve_start serve_spec_adapter_set -m "$B" --forecast "$TMP/fde.gguf" --tree 2,1 --lora-dir "$L" -t 1 --parallel 2; then
    p=$'German: Open the file\n'
    rde=$(complete "$p" 20 '{model: "translate-de"}') rbase=$(complete "$p" 20)
    if [ "$(echo "$rde" | jq -j '.choices[0].text')" = "$(run_text "$p" 20 --lora "$L/translate-de.gguf")" ] &&
       [ "$(echo "$rbase" | jq -j '.choices[0].text')" = "$(run_text "$p" 20)" ] &&
       echo "$rde" | jq -e '.usage.speculative.steps > 0' >/dev/null &&
       echo "$rbase" | jq -e '.usage.speculative == null' >/dev/null; then
        pass serve_spec_adapter_set; else fail serve_spec_adapter_set "$rde" "$rbase"; fi
    serve_stop
else
    fail serve_spec_adapter_set "train-forecast or the server failed: $(tail -3 "$SERVE_LOG" 2>/dev/null)"
fi

# a small cache: each request reserves its tokens and a tree, so two that would overflow it
# together run one after the other; one that reserves the whole cache runs alone, its last
# steps plain where its tree no longer fits. All equal `run`.
serve_start serve_spec_small_cache -m "$B" --forecast "$F" --tree 4,2,1 -t 1 --parallel 2 -c 100 || finish
p="The cat sat on the mat" bad=()
for n in 40 85; do
    ( complete "$p" $n > "$TMP/c1.json" ) & c1=$!
    ( complete "$p" $n > "$TMP/c2.json" ) & c2=$!
    wait $c1 $c2
    want=$(run_text "$p" $n)
    for c in c1 c2; do
        [ "$(jq -j '.choices[0].text' "$TMP/$c.json")" = "$want" ] && jq -e '.usage.speculative.steps > 0' "$TMP/$c.json" >/dev/null ||
            bad+=("$n tokens: $(cat "$TMP/$c.json")")
    done
done
[ ${#bad[@]} = 0 ] && pass serve_spec_small_cache || fail serve_spec_small_cache "${bad[@]:0:2}"
serve_stop

# without --forecast, asking for speculation is refused by name
serve_start serve_spec_plain_server -m "$B" -t 1 --parallel 2 || finish
r=$(complete "Hello" 5 '{speculative: true}')
r2=$(complete "Hello" 5 '{tree: [2]}')
echo "$r" | jq -e '.error.code == "unsupported_parameter" and (.error.message | contains("--forecast"))' >/dev/null &&
    echo "$r2" | jq -e '.error.code == "unsupported_parameter" and (.error.message | startswith("'"'"'tree'"'"'"))' >/dev/null &&
    [ "$(complete "Hello" 5 '{speculative: false}' | jq -r '.choices[0].finish_reason')" = length ] &&
    pass serve_spec_without_forecast || fail serve_spec_without_forecast "$r" "$r2"
serve_stop

# impossible options, refused at start with the reason
expect_exit serve_spec_batch_too_small 2 "$EL" serve -m "$B" --forecast "$F" --tree 4,2,1 --parallel 4 -b 100 --port 0
grep -q "\-b 100 cannot hold the trees of --parallel 4 sequences (32 rows each" "$TMP/err" &&
    pass serve_spec_batch_too_small_message || fail serve_spec_batch_too_small_message "$(cat "$TMP/err")"
expect_exit serve_spec_ctx_too_small 2 "$EL" serve -m "$B" --forecast "$F" --tree 4,2,1 -c 16 --port 0
expect_exit serve_spec_tree_too_deep 2 "$EL" serve -m "$B" --forecast "$F" --tree 1,1,1,1 --port 0
grep -q "\-\-tree has 4 depths; .*base.forecast.gguf has 3 slots" "$TMP/err" &&
    pass serve_spec_tree_too_deep_message || fail serve_spec_tree_too_deep_message "$(cat "$TMP/err")"
expect_exit serve_spec_tree_bad 2 "$EL" serve -m "$B" --forecast "$F" --tree 2,x --port 0
R="$DATA/models/llama-2-tiny-random.gguf"
if [ -f "$R" ]; then
    expect_exit serve_spec_other_model 1 "$EL" serve -m "$R" --forecast "$F" --port 0
    grep -q "base.forecast.gguf: " "$TMP/err" && grep -q "for another model\|is for architecture" "$TMP/err" &&
        pass serve_spec_other_model_message || fail serve_spec_other_model_message "$(cat "$TMP/err")"
else
    skip serve_spec_other_model "$R is absent"
fi
finish
