#!/usr/bin/env bash
# `edgelora serve` reuses the cells of finished requests (--prefix-cache): a request whose
# prompt begins as a finished one's (a shared system prompt, the earlier turn of a chat with its
# reply) shares that request's kept cells. Every reply equals `edgelora run` on the same prompt
# and adapters (one sequence, nothing shared: the independent path) and the same server's reply
# with --prefix-cache 0; the tokens reused (/metrics and usage.prompt_tokens_details) are the
# common prefix of the two prompts' token ids from `edgelora tokenize --bos`; other adapters, or
# the same at another scale, reuse nothing; a deleted adapter's entries go; a small -c where
# kept entries must be evicted serves every request, equal to `run`.
# Base: stories260K converted to GGUF; adapters: random GGUF LoRAs (test_batch_lora_gen).
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh && . tests/cli/serve_lib.sh

M="$DATA/models"
GEN="$(dirname "$EL")/tests/test_batch_lora_gen"
if [ ! -f "$M/stories260K.bin" ]; then skip serve_prefix "$M/stories260K.bin is absent"; finish; fi
for c in jq curl; do command -v $c >/dev/null || { skip serve_prefix "$c is not installed"; finish; }; done

B="$TMP/stories.gguf"
"$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$B" >/dev/null 2>&1 || { fail serve_prefix_convert; finish; }
L="$TMP/loras"
mkdir -p "$L"
"$GEN" "$B" "$L/attn.gguf" 4 q,k,v,o 1 0.6 >/dev/null || { fail serve_prefix_make_adapters; finish; }

# the completion of a prompt, greedy: the whole answer (JSON)
complete() { # prompt max_tokens [extra-json]
    jq -cn --arg p "$1" --argjson n "$2" "{prompt: \$p, max_tokens: \$n, temperature: 0}${3:+ + $3}" |
        curl -s "$URL/v1/completions" -d @-
}
# what `edgelora run` prints after the prompt, without the final newline
run_text() { # prompt n run-flags...
    local p=$1 n=$2
    shift 2
    local bytes; bytes=$(printf '%s' "$p" | wc -c)
    "$EL" run -m "$B" "$@" -p "$p" -n "$n" --temp 0 -t 1 2>/dev/null | head -c -1 | tail -c +$((bytes + 1))
}
metric() { curl -s "$URL/metrics" | sed -n "s/^edgelora_$1 //p"; }
ids() { "$EL" tokenize -m "$B" --bos -p "$1"; }
# the tokens a prompt can reuse of an earlier one: their common prefix of ids, all but the new
# prompt's last token at most (its logits are needed)
common() { # earlier-prompt new-prompt
    local -a a b
    read -ra a <<<"$(ids "$1")"
    read -ra b <<<"$(ids "$2")"
    local n=0
    while [ $n -lt ${#a[@]} ] && [ $n -lt $((${#b[@]} - 1)) ] && [ "${a[$n]}" = "${b[$n]}" ]; do n=$((n + 1)); done
    echo $n
}

sys="Once upon a time there was a little girl named Lily who loved to play in the park."
p1="$sys One day"
p2="$sys She saw a dog"
# the requests, one after the other: name prompt max_tokens extra-json
names=(first second second_attn second_attn_again second_scaled)
reqs_p=("$p1" "$p2" "$p2" "$p2" "$p2")
reqs_x=('' '' '{model: "attn"}' '{model: "attn"}' '{adapters: [{name: "attn", scale: 0.5}]}')
reqs_f=('' '' "--lora $L/attn.gguf" "--lora $L/attn.gguf" "--lora-scaled $L/attn.gguf 0.5")
# what each must reuse: nothing, the system prompt of the first, nothing (the base's cells are
# not attn's), all of its prompt but the last token (the last request's cells are attn's), nothing
# (attn at another scale)
n2=$(ids "$p2" | wc -w)
want_reused=(0 "$(common "$p1" "$p2")" 0 $((n2 - 1)) 0)

# serve_seq PREFIX-CACHE: the requests in turn, their texts in $TMP/c$1-NAME.txt, the tokens
# each reused (usage and the metric's increase) in $TMP/c$1-NAME.reused
serve_seq() {
    local i r m0
    for i in "${!names[@]}"; do
        m0=$(metric prompt_tokens_reused_total)
        r=$(complete "${reqs_p[$i]}" 24 "${reqs_x[$i]}")
        echo "$r" | jq -j '.choices[0].text' > "$TMP/c$1-${names[$i]}.txt"
        echo "$(echo "$r" | jq .usage.prompt_tokens_details.cached_tokens) $(($(metric prompt_tokens_reused_total) - m0))" \
            > "$TMP/c$1-${names[$i]}.reused"
    done
}

serve_start serve_prefix_start -m "$B" --lora-dir "$L" -t 1 --parallel 2 -c 1024 || finish
serve_seq 16
# a chat's next turn: the first prompt, its reply and more; it reuses the first request's
# prompt and generated tokens (more than the prompts alone share)
turn="$p1$(cat "$TMP/c16-first.txt") Then"
r=$(complete "$turn" 24)
turn_text=$(echo "$r" | jq -j '.choices[0].text')
turn_reused=$(echo "$r" | jq .usage.prompt_tokens_details.cached_tokens)
n1=$(ids "$p1" | wc -w)
health=$(curl -s "$URL/health")
entries=$(metric prefix_cache_entries)
# a deleted adapter's entries go (the adapter is freed with them): the attn entry is forgotten
curl -s -X DELETE "$URL/v1/adapters/attn" >/dev/null
for _ in $(seq 50); do [ "$(metric prefix_cache_entries)" -lt "$entries" ] && break; sleep 0.05; done
entries_after=$(metric prefix_cache_entries)
serve_stop

for i in "${!names[@]}"; do
    n=${names[$i]}
    # shellcheck disable=SC2086
    want=$(run_text "${reqs_p[$i]}" 24 ${reqs_f[$i]})
    got=$(cat "$TMP/c16-$n.txt")
    if [ -n "$want" ] && [ "$got" = "$want" ]; then pass "serve_prefix_${n}_equals_run"; else
        fail "serve_prefix_${n}_equals_run" "run:   $want" "serve: $got"; fi
    reused=$(cat "$TMP/c16-$n.reused")
    [ "$reused" = "${want_reused[$i]} ${want_reused[$i]}" ] && pass "serve_prefix_${n}_reused" ||
        fail "serve_prefix_${n}_reused" "usage and metric: $reused, the common prefix: ${want_reused[$i]}"
done
# the comparisons prove something only if the adapters change the text and the prefix is long
[ "$(cat "$TMP/c16-second.txt")" != "$(cat "$TMP/c16-second_attn.txt")" ] && [ "${want_reused[1]}" -ge 20 ] &&
    pass serve_prefix_checks_matter || fail serve_prefix_checks_matter "common prefix ${want_reused[1]}"
want=$(run_text "$turn" 24)
[ -n "$want" ] && [ "$turn_text" = "$want" ] && pass serve_prefix_turn_equals_run ||
    fail serve_prefix_turn_equals_run "run:   $want" "serve: $turn_text"
[ "${turn_reused:-0}" -gt "$n1" ] && [ "$turn_reused" -le "$(common "$turn" "$turn")" ] && pass serve_prefix_turn_reuses_reply ||
    fail serve_prefix_turn_reuses_reply "reused ${turn_reused:-none}, the first prompt has $n1 tokens"
# nothing runs: every used cell is a kept entry's, and there are as many entries as distinct
# (prompt, adapters) sequences: first+turn (the turn extends the first's), second,
# second_attn+again (one), second_scaled
echo "$health" | jq -e '.kv_used == 0 and .kv_cached > 0 and .cache_entries == 4' >/dev/null &&
    [ "$entries" = 4 ] && pass serve_prefix_entries || fail serve_prefix_entries "$health" "metric: $entries"
[ "$entries_after" = 2 ] && pass serve_prefix_delete_forgets || fail serve_prefix_delete_forgets "entries after: $entries_after"

# with the cache off the same requests give the same texts and reuse nothing (none runs when
# the next begins)
serve_start serve_prefix_off -m "$B" --lora-dir "$L" -t 1 --parallel 2 -c 1024 --prefix-cache 0 || finish
serve_seq 0
off_health=$(curl -s "$URL/health")
serve_stop
bad=()
for n in "${names[@]}"; do
    cmp -s "$TMP/c0-$n.txt" "$TMP/c16-$n.txt" || bad+=("$n: $(cat "$TMP/c0-$n.txt")")
    [ "$(cat "$TMP/c0-$n.reused")" = "0 0" ] || bad+=("$n reused $(cat "$TMP/c0-$n.reused")")
done
echo "$off_health" | jq -e '.kv_cached == 0 and .cache_entries == 0' >/dev/null || bad+=("$off_health")
[ ${#bad[@]} = 0 ] && pass serve_prefix_off_same_text || fail serve_prefix_off_same_text "${bad[@]}"

# a small cache: each request reserves at most 40 + 40 cells of 200; two finished ones keep
# more than 120 cells (checked), so admitting one more must evict, and two together (up to 160
# reserved) leave room for 40 at most. The third shares the second's prompt but its last words;
# every reply equals `run`.
serve_start serve_prefix_small -m "$B" -t 1 --parallel 2 -c 200 || finish
q1="Tom had a red ball. He liked to throw it high in the sky and catch it with his hands."
q2="The sun was hot and the birds sang in the tall green trees near the little house."
q3="The sun was hot and the birds sang in the tall green trees near the old barn."
q4="A cat sat on the mat and looked at the fish in the bowl on the kitchen table."
for q in "$q1" "$q2" "$q3" "$q4"; do
    [ "$(ids "$q" | wc -w)" -le 40 ] || fail serve_prefix_small_prompts "more than 40 tokens: $q"
done
complete "$q1" 40 | jq -j '.choices[0].text' > "$TMP/s1.txt"
complete "$q2" 40 | jq -j '.choices[0].text' > "$TMP/s2.txt"
kept=$(health_field kv_cached)
( complete "$q3" 40 | jq -j '.choices[0].text' > "$TMP/s3.txt" ) &
w3=$!
( complete "$q4" 40 | jq -j '.choices[0].text' > "$TMP/s4.txt" ) &
w4=$!
wait $w3 $w4
evicted=$(metric prefix_cache_evictions_total)
reused=$(metric prompt_tokens_reused_total)
errors=$(curl -s "$URL/metrics" | sed -n 's/^edgelora_http_responses_total{code="5xx"} //p')
wait_idle && idle=yes || idle=no
serve_stop
bad=()
i=1
for q in "$q1" "$q2" "$q3" "$q4"; do
    want=$(run_text "$q" 40)
    [ -n "$want" ] && [ "$(cat "$TMP/s$i.txt")" = "$want" ] || bad+=("$i: $(cat "$TMP/s$i.txt")" "run: $want")
    i=$((i + 1))
done
[ "$kept" -gt 120 ] || bad+=("kept $kept cells after two requests: no eviction needed")
[ "${evicted:-0}" -ge 1 ] || bad+=("no entry evicted")
[ "${errors:-1}" = 0 ] || bad+=("5xx answers: $errors")
[ "$idle" = yes ] || bad+=("not idle after")
[ "$SERVE_RC" = 0 ] || bad+=("exit $SERVE_RC")
[ ${#bad[@]} = 0 ] && pass serve_prefix_small_cache_evicts || fail serve_prefix_small_cache_evicts "${bad[@]}"
# the third reused the second's prompt unless its entry was evicted before it came (the fourth
# admitted first); the second, third and fourth each reused at most its longest common prefix
# with another prompt (all of them share their BOS at least)
longest() { # prompt others...
    local p=$1 best=0 c o
    shift
    for o in "$@"; do c=$(common "$o" "$p"); [ "$c" -gt $best ] && best=$c; done
    echo $best
}
most=$(($(longest "$q2" "$q1") + $(longest "$q3" "$q1" "$q2" "$q4") + $(longest "$q4" "$q1" "$q2" "$q3")))
[ "${reused:-0}" -le $most ] && [ "$(common "$q2" "$q3")" -ge 20 ] && pass serve_prefix_small_cache_reused ||
    fail serve_prefix_small_cache_reused "reused $reused, at most $most"


# n > 1 decodes its prompt as it is admitted (el_variants_start): 75 prompt tokens where two
# kept requests leave 52 cells free; it is answered, its first choice (the greedy one) equal to
# `run`
serve_start serve_prefix_small_n -m "$B" -t 1 --parallel 2 -c 200 || finish
complete "$q1" 40 >/dev/null
complete "$q2" 40 >/dev/null
kept=$(health_field kv_cached)
qn="$q1 $q4"
r=$(complete "$qn" 20 '{n: 2}')
serve_stop
want=$(run_text "$qn" 20)
if [ "$kept" -gt $((200 - $(ids "$qn" | wc -w))) ] && [ -n "$want" ] &&
   [ "$(echo "$r" | jq -j '.choices[0].text')" = "$want" ] && [ "$(echo "$r" | jq '.choices | length')" = 2 ]; then
    pass serve_prefix_small_cache_n; else fail serve_prefix_small_cache_n "kept $kept" "$r" "run: $want"; fi

# n > 1 shares a kept prefix (its group decodes only the rest) and is kept when it ends: after
# p1, an n = 2 request on p2 reuses their common prefix; the same n = 2 request again reuses all
# its prompt but the last token, as does a plain request on p2 then (the group's entry holds the
# prompt and its first choice). Every first choice (greedy) equals `run`, the second choice is
# the same each time, and the metric counts what usage says
serve_start serve_prefix_n -m "$B" -t 1 --parallel 3 -c 1024 || finish
complete "$p1" 24 >/dev/null
m0=$(metric prompt_tokens_reused_total)
ra=$(complete "$p2" 24 '{n: 2}')
rb=$(complete "$p2" 24 '{n: 2}')
rc=$(complete "$p2" 24)
m1=$(metric prompt_tokens_reused_total)
serve_stop
want=$(run_text "$p2" 24)
cached() { echo "$1" | jq .usage.prompt_tokens_details.cached_tokens; }
ca=$(cached "$ra") cb=$(cached "$rb") cc=$(cached "$rc")
if [ "$ca" = "$(common "$p1" "$p2")" ] && [ "$cb" = $((n2 - 1)) ] && [ "$cc" = $((n2 - 1)) ] &&
   [ $((m1 - m0)) = $((ca + cb + cc)) ]; then pass serve_prefix_n_reused; else
    fail serve_prefix_n_reused "cached $ca $cb $cc (want $(common "$p1" "$p2") $((n2 - 1)) $((n2 - 1))), metric +$((m1 - m0))"; fi
if [ -n "$want" ] && [ "$(echo "$ra" | jq -j '.choices[0].text')" = "$want" ] &&
   [ "$(echo "$rb" | jq -j '.choices[0].text')" = "$want" ] && [ "$(echo "$rc" | jq -j '.choices[0].text')" = "$want" ] &&
   [ "$(echo "$ra" | jq -j '.choices[1].text')" = "$(echo "$rb" | jq -j '.choices[1].text')" ]; then
    pass serve_prefix_n_equals_run; else fail serve_prefix_n_equals_run "run: $want" "$ra" "$rb" "$rc"; fi

# bad values of the option
expect_exit serve_prefix_option_negative 2 "$EL" serve -m "$B" --prefix-cache -1
expect_exit serve_prefix_option_text 2 "$EL" serve -m "$B" --prefix-cache lots
grep -q -- '--prefix-cache' "$TMP/err" && pass serve_prefix_option_message || fail serve_prefix_option_message "$(cat "$TMP/err")"
finish
