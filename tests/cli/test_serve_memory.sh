#!/usr/bin/env bash
# `edgelora serve` gives its memory back: rounds of mixed work (plain and n > 1 requests under
# different adapters, logprobs, streams, a chat, bad requests, a client that disconnects
# mid-stream, an adapter loaded, used and deleted) leave the server's resident memory where the
# first round left it (that round settles the allocator's arenas, the page cache of the model
# and the prefix cache's entries), and every reply of the last round is the first round's.
# A leak of a request's buffers, a group's cells or an adapter's tensors grows the resident set
# by at least its size each round. Not under ASan, whose quarantine holds freed memory.
# Base: stories260K converted to GGUF; adapters: random GGUF LoRAs (test_batch_lora_gen).
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh && . tests/cli/serve_lib.sh

M="$DATA/models"
GEN="$(dirname "$EL")/tests/test_batch_lora_gen"
case "$EL" in *build-asan/*) skip serve_memory "ASan keeps freed memory in quarantine"; finish ;; esac
if [ ! -f "$M/stories260K.bin" ]; then skip serve_memory "$M/stories260K.bin is absent"; finish; fi
for c in jq curl; do command -v $c >/dev/null || { skip serve_memory "$c is not installed"; finish; }; done

B="$TMP/stories.gguf"
"$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$B" >/dev/null 2>&1 || { fail serve_memory_convert; finish; }
L="$TMP/loras"
mkdir -p "$L"
"$GEN" "$B" "$L/attn.gguf" 4 q,k,v,o 1 0.6 >/dev/null &&
    "$GEN" "$B" "$L/mlp.gguf" 8 gate,up,down 2 0.6 >/dev/null &&
    "$GEN" "$B" "$TMP/extra.gguf" 32 q,k,v,o,gate,up,down 3 0.6 >/dev/null || { fail serve_memory_make_adapters; finish; }

complete() { # prompt max_tokens [extra-json]
    jq -cn --arg p "$1" --argjson n "$2" "{prompt: \$p, max_tokens: \$n, temperature: 0}${3:+ + $3}" |
        curl -s "$URL/v1/completions" -H 'Content-Type: application/json' -d @-
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$SERVE_PID/status"; }

# round K: the replies (texts and log-probabilities) into $TMP/round-K.txt
round() {
    local k=$1 out="$TMP/round-$1.txt" i
    : > "$out"
    local -a jobs
    for i in 1 2 3; do
        complete "Once upon a time" 30 '{model: "attn"}' > "$TMP/r$k-a$i.json" &
        jobs+=($!)
        complete "Lily and Tom went" 30 '{model: "mlp", n: 3}' > "$TMP/r$k-b$i.json" &
        jobs+=($!)
        complete "The little dog" 20 '{n: 2, logprobs: 2}' > "$TMP/r$k-c$i.json" &
        jobs+=($!)
    done
    wait "${jobs[@]}" # not `wait`: the server is a background job too
    curl -sN "$URL/v1/completions" -d '{"prompt": "Once", "max_tokens": 25, "temperature": 0,
        "stream": true, "n": 2}' | sed -n 's/^data: //p' | grep -v '^\[DONE\]$' |
        jq -s -j '[range(2) as $c | [.[] | .choices[]? | select(.index == $c) | .text] | add] |
            join("|")' > "$TMP/r$k-stream.txt"
    curl -s "$URL/v1/chat/completions" -d '{"messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 20, "temperature": 0}' > "$TMP/r$k-chat.json"
    curl -s "$URL/v1/completions" -d '{"prompt": ' > /dev/null                       # malformed
    curl -s "$URL/v1/completions" -d '{"prompt": "Hi", "model": "nothing"}' > /dev/null # unknown
    head -c 2000000 /dev/zero | tr '\0' a | curl -s "$URL/v1/completions" --data-binary @- > /dev/null
    curl -sN --max-time 0.3 "$URL/v1/completions" -d '{"prompt": "Once", "max_tokens": 400,
        "temperature": 1, "stream": true}' > /dev/null
    cp "$TMP/extra.gguf" "$L/extra.gguf"
    curl -s "$URL/v1/adapters" -d '{"name": "extra"}' > /dev/null
    complete "A big tree" 20 '{model: "extra"}' > "$TMP/r$k-extra.json"
    curl -s -X DELETE "$URL/v1/adapters/extra" > /dev/null
    rm -f "$L/extra.gguf"
    for f in "$TMP"/r"$k"-*.json; do jq -c '[.choices[] | .text // .message.content, .logprobs]' "$f" >> "$out"; done
    cat "$TMP/r$k-stream.txt" >> "$out"
    wait_idle
}

serve_start serve_memory_start -m "$B" --lora-dir "$L" -t 1 --parallel 4 -c 1024 --chat-template chatml || finish
rss=()
for k in 1 2 3 4 5; do
    round $k
    rss+=("$(rss_kb)")
done
alive=$(curl -s "$URL/health" | jq -r .status)
serve_stop
echo "  resident kB after each round: ${rss[*]}"
# the growth from round 2 to round 5 (three rounds of 16 requests, an adapter of 0.7 MB loaded
# and freed each) within 512 kB: less than one adapter
grow=$((rss[4] - rss[1]))
[ "$grow" -le 512 ] && pass serve_memory_back || fail serve_memory_back "grew $grow kB: ${rss[*]}"
same=1
for k in 2 3 4 5; do cmp -s "$TMP/round-1.txt" "$TMP/round-$k.txt" || same=0; done
[ $same = 1 ] && [ "$(wc -l < "$TMP/round-1.txt")" -ge 10 ] && grep -q 'token_logprobs' "$TMP/round-1.txt" &&
    pass serve_memory_same_replies || fail serve_memory_same_replies "$(diff "$TMP/round-1.txt" "$TMP/round-5.txt" | head -5)" "$(head -c 300 "$TMP/round-1.txt")"
[ "$alive" = ok ] && [ "$SERVE_RC" = 0 ] && pass serve_memory_alive || fail serve_memory_alive "health $alive, exit $SERVE_RC"
finish
