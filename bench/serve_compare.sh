#!/usr/bin/env bash
# The serving targets of docs/serve.md: C concurrent streaming clients over A adapters against
# `edgelora serve`, and the same load against llama.cpp's llama-server (its --lora files, its
# per-request "lora" field), alternated ours/theirs/ours... since this shared machine's speed
# changes between runs; a single client's run before each load is the baseline. Prints every
# run's JSON line (bench/serve_load.mjs) and, per system, the median and range.
#   bench/serve_compare.sh [MODEL] [ROUNDS]
# Environment: LLAMA_SERVER (default /tmp/llama.cpp/build/bin/llama-server; absent: ours
# alone), CLIENTS (32), ADAPTERS (8), MAX_TOKENS (64), THREADS (2), LORA_DIR (made with
# build/tests/test_batch_lora_gen if absent: rank 8 on q,k,v,o of every block).
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-/work/bench-models/1b-q4_0.gguf}
rounds=${2:-2}
clients=${CLIENTS:-32} n_adapters=${ADAPTERS:-8} max_tokens=${MAX_TOKENS:-64} threads=${THREADS:-2}
llama=${LLAMA_SERVER:-/tmp/llama.cpp/build/bin/llama-server}
loras=${LORA_DIR:-/tmp/serve-bench-loras}
port=18181
ctx=$((clients * (max_tokens + 64)))
if [ ! -d "$loras" ]; then
    mkdir -p "$loras"
    for i in $(seq 1 "$n_adapters"); do
        build/tests/test_batch_lora_gen "$model" "$loras/task$i.gguf" 8 q,k,v,o "$i" 0.5
    done
fi
names=$(for i in $(seq 1 "$n_adapters"); do printf 'task%s,' "$i"; done)
names=${names%,}
lora_flags=()
for i in $(seq 1 "$n_adapters"); do lora_flags+=(--lora "$loras/task$i.gguf"); done
out=$(mktemp)
trap 'rm -f "$out"; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null' EXIT

wait_ready() {
    for _ in $(seq 600); do
        curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    echo "serve_compare: the server did not start" >&2
    return 1
}

run_system() { # ours|theirs
    if [ "$1" = ours ]; then
        build/edgelora serve -m "$model" --lora-dir "$loras" -t "$threads" --parallel "$clients" \
            -c "$ctx" --port "$port" --queue $((clients * 2)) 2>/dev/null &
        style=edgelora
    else
        "$llama" -m "$model" "${lora_flags[@]}" --lora-init-without-apply -t "$threads" \
            -np "$clients" -c "$ctx" --port "$port" --host 127.0.0.1 >/dev/null 2>&1 &
        style=llama
    fi
    pid=$!
    wait_ready
    for load in "1 2" "$clients 1"; do
        set -- $load
        printf '%s ' "$style" >> "$out"
        node bench/serve_load.mjs --url "http://127.0.0.1:$port" --clients "$1" --requests "$2" \
            --max-tokens "$max_tokens" --adapters "$names" --style "$style" | tee -a "$out"
    done
    if [ "$style" = edgelora ]; then # the scheduler's own time against the steps'
        curl -s "http://127.0.0.1:$port/metrics" | awk '
            / *#/ { next }
            $1 == "edgelora_steps_total" { n = $2 } $1 == "edgelora_step_seconds_total" { d = $2 }
            $1 == "edgelora_scheduler_seconds_total" { s = $2 }
            END { printf "edgelora  steps %d: %.1f ms a step, the scheduler %.3f ms between steps\n",
                         n, 1e3 * d / n, 1e3 * s / n }'
    fi
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pid=
}

systems=(ours)
[ -x "$llama" ] && systems=(ours theirs)
for r in $(seq 1 "$rounds"); do
    for s in "${systems[@]}"; do run_system "$s"; done
done
run_system ours # ours/theirs/ours...: ours last as first, so a drift shows in ours' range
python3 - "$out" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    style, js = line.split(" ", 1)
    j = json.loads(js)
    runs.setdefault((style, j["clients"]), []).append(j)
for (style, c), rs in sorted(runs.items()):
    def show(key):
        v = [r[key] for r in rs if r[key] is not None]
        return f"{statistics.median(v):.2f} [{min(v):.2f}, {max(v):.2f}]" if v else "-"
    print(f"{style:9} clients {c:3}: tokens/s {show('tokens_per_s')}  p99 inter-token ms "
          f"{show('itl_p99_ms')}  p50 {show('itl_p50_ms')}  errors {sum(r['errors'] for r in rs)}  "
          f"runs {len(rs)}")
PY
