# Sourced by perplexity-check.sh and quantize-check.sh: llama_ppl BIN LOG MODEL TEXT CTX [FLAGS]
# prints llama-perplexity's figure for MODEL on TEXT at context CTX (nothing if it gives none;
# then the end of its log goes to stderr).
#
# llama-perplexity prints through llama.cpp's common log, whose messages a worker thread writes
# while main goes on; at exit main does not wait for it (common_log_main leaks the logger on
# purpose, llama.cpp issue 22142), so on a loaded machine the last messages, the final chunk's
# figure and "Final estimate", are lost now and then although the run finished (exit 0). The
# figure after chunk N of N is the final estimate (both print exp(nll / count), "%.4lf"), so
# either will do; the OpenMP threads wait passively, leaving the log thread a core, and a run
# that lost both is repeated, up to 4 times.
llama_ppl() {
    local bin=$1 log=$2 model=$3 text=$4 ctx=$5 rc v n
    shift 5
    for _ in 1 2 3 4; do
        OMP_WAIT_POLICY=passive "$bin" -m "$model" -f "$text" -c "$ctx" -t 2 "$@" >"$log" 2>&1
        rc=$?
        v=$(sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p' "$log")
        if [ -z "$v" ]; then
            n=$(sed -n 's/.*calculating perplexity over \([0-9]*\) chunks.*/\1/p' "$log")
            [ -n "$n" ] && v=$(tr ',' '\n' <"$log" | sed -n "s/^\[$n\]\([0-9.]*\)$/\1/p")
        fi
        [ -n "$v" ] && { echo "$v"; return; }
    done
    echo "llama-perplexity -m $model (exit $rc): $(tail -c 300 "$log")" >&2
}
