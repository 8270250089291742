# serve_lib.sh - starting and stopping `edgelora serve` in the shell tests (after lib.sh).
# serve_start NAME ARGS...: starts the server on a free port with ARGS; sets URL and SERVE_PID
# (its log is $TMP/NAME.log). Fails the check NAME if it does not listen within 20 s.
serve_start() {
    local name=$1
    shift
    SERVE_LOG="$TMP/$name.log"
    : > "$SERVE_LOG"
    "$EL" serve --port 0 "$@" 2>"$SERVE_LOG" &
    SERVE_PID=$!
    URL=
    for _ in $(seq 200); do
        URL=$(sed -n 's/.*listening on \(http:[^ ]*\)$/\1/p' "$SERVE_LOG")
        [ -n "$URL" ] && return 0
        kill -0 "$SERVE_PID" 2>/dev/null || break
        sleep 0.1
    done
    fail "$name" "the server did not start: $(head -c 500 "$SERVE_LOG")"
    return 1
}

# serve_stop: SIGTERM, then waits for the exit; its status is in SERVE_RC.
serve_stop() {
    kill -TERM "$SERVE_PID" 2>/dev/null
    wait "$SERVE_PID"
    SERVE_RC=$?
}

# health_field FIELD: a number of /health.
health_field() { curl -s "$URL/health" | jq -r ".$1"; }

# wait_idle: until /health says no request runs and no request uses a KV cell (cells only kept
# entries of the prefix cache hold are kv_cached, not kv_used) (at most 10 s).
wait_idle() {
    for _ in $(seq 100); do
        [ "$(curl -s "$URL/health" | jq -c '[.running, .queued, .kv_used]')" = "[0,0,0]" ] && return 0
        sleep 0.1
    done
    return 1
}
