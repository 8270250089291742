#!/usr/bin/env bash
# `edgelora serve` on a UniQL compressed model: GET /v1/prune reports the rate new requests
# take and the table; POST /v1/prune {"rate"} or {"mem_budget"} changes it while serving. Each
# reply equals `edgelora run --prune` at the rate it ran at (the independent path: one process,
# one rate); a prompt served before the change is not reused from the prefix cache after it
# (its cells were computed at the old rate); bad bodies, rates outside the table, budgets no
# rate fits and a model that cannot be pruned get 400 with a message, and the server goes on.
# Model: the default model in the uniform UniQL layout (uniql-layout, rates 0 .. 0.35).
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh && . tests/cli/serve_lib.sh

for c in jq curl; do command -v $c >/dev/null || { skip serve_prune "$c is not installed"; finish; }; done
U="$TMP/base.uniql.gguf"
"$EL" uniql-layout models/base.gguf -o "$U" >/dev/null 2>&1 || { fail serve_prune_layout; finish; }
P="The weather in the mountains"

complete() { # prompt -> the whole answer (JSON)
    jq -cn --arg p "$1" '{prompt: $p, max_tokens: 16, temperature: 0}' | curl -s "$URL/v1/completions" -d @-
}
run_text() { # rate -> what `edgelora run` prints after the prompt
    local bytes; bytes=$(printf '%s' "$P" | wc -c)
    "$EL" run -m "$U" --prune "$1" -p "$P" -n 16 --temp 0 -t 1 2>/dev/null | head -c -1 | tail -c +$((bytes + 1))
}
post() { curl -s -w '\n%{http_code}' "$URL/v1/prune" -d "$1"; }

want0=$(run_text 0)
want3=$(run_text 0.3)
[ "$want0" != "$want3" ] && pass serve_prune_rates_differ || fail serve_prune_rates_differ "the reference texts at 0 and 0.3 are equal: the test could not tell the rates apart"

serve_start serve_prune_start -m "$U" --prune 0 -t 1 || finish
[ "$(curl -s "$URL/v1/prune" | jq -c '[.rate, (.rates | length)]')" = "[0,8]" ] && pass serve_prune_get || fail serve_prune_get "$(curl -s "$URL/v1/prune")"
r=$(complete "$P")
[ "$(jq -r '.choices[0].text' <<< "$r")" = "$want0" ] && pass serve_prune_rate0_text || fail serve_prune_rate0_text "$r / $want0"

r=$(post '{"rate": 0.28}')
[ "$(tail -1 <<< "$r")" = 200 ] && [ "$(head -1 <<< "$r" | jq -r .rate)" = 0.3 ] && pass serve_prune_set || fail serve_prune_set "$r"
[ "$(curl -s "$URL/metrics" | sed -n 's/^edgelora_prune_rate //p')" = 0.3 ] && pass serve_prune_metric || fail serve_prune_metric "$(curl -s "$URL/metrics" | grep prune)"
b0=$(curl -s "$URL/v1/prune" | jq .weight_bytes)
r=$(complete "$P")
[ "$(jq -r '.choices[0].text' <<< "$r")" = "$want3" ] && pass serve_prune_rate3_text || fail serve_prune_rate3_text "$r / $want3"
[ "$(jq -r '.usage.prompt_tokens_details.cached_tokens // 0' <<< "$r")" = 0 ] && pass serve_prune_no_stale_prefix || fail serve_prune_no_stale_prefix "$r"
r=$(complete "$P") # now the rate-0.3 request's cells are kept and reused
[ "$(jq -r '.choices[0].text' <<< "$r")" = "$want3" ] && [ "$(jq -r '.usage.prompt_tokens_details.cached_tokens' <<< "$r")" -gt 0 ] && pass serve_prune_prefix_same_rate || fail serve_prune_prefix_same_rate "$r"

r=$(post '{"rate": 0}')
[ "$(tail -1 <<< "$r")" = 200 ] && [ "$(head -1 <<< "$r" | jq .weight_bytes)" -gt "$b0" ] && pass serve_prune_back || fail serve_prune_back "$r"
[ "$(jq -r '.choices[0].text' <<< "$(complete "$P")")" = "$want0" ] && pass serve_prune_back_text || fail serve_prune_back_text

for body in '{"rate": 0.9}' '{"rate": "x"}' '{"rate": 0.1, "mem_budget": 5}' '[]' 'nope' '{"mem_budget": -3}'; do
    r=$(post "$body")
    [ "$(tail -1 <<< "$r")" = 400 ] && head -1 <<< "$r" | jq -e '.error.message | length > 10' >/dev/null && pass "serve_prune_refused $body" || fail "serve_prune_refused $body" "$r"
done
r=$(post '{"rate": 0.9}')
grep -q 'outside the model' <<< "$r" && pass serve_prune_range_message || fail serve_prune_range_message "$r"
r=$(post '{"mem_budget": 1000}')
[ "$(tail -1 <<< "$r")" = 400 ] && grep -q 'bytes' <<< "$r" && pass serve_prune_budget_too_small || fail serve_prune_budget_too_small "$r"
r=$(post '{"mem_budget": "auto"}')
[ "$(tail -1 <<< "$r")" = 200 ] && [ "$(head -1 <<< "$r" | jq .rate)" = 0 ] && pass serve_prune_budget_auto || fail serve_prune_budget_auto "$r"
[ "$(curl -s "$URL/v1/prune" | jq .rate)" = 0 ] && pass serve_prune_unchanged_after_refusals || fail serve_prune_unchanged_after_refusals
serve_stop
[ "$SERVE_RC" = 0 ] && pass serve_prune_clean_exit || fail serve_prune_clean_exit "exit $SERVE_RC"

serve_start serve_prune_plain -m models/base.gguf -t 1 || finish
r=$(post '{"rate": 0.1}')
[ "$(tail -1 <<< "$r")" = 400 ] && grep -q 'not a UniQL compressed model' <<< "$r" && pass serve_prune_plain_refused || fail serve_prune_plain_refused "$r"
[ "$(curl -s "$URL/v1/prune" | jq -c '[.rate, .rates]')" = "[0,[]]" ] && pass serve_prune_plain_get || fail serve_prune_plain_get "$(curl -s "$URL/v1/prune")"
serve_stop
finish
