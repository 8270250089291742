# held_out_score.sh - sourced by the scripts that score the default model's adapters: the
# held-out metric of one adapter, and a score relative to another. Reads EL, WORK (data from
# default_model_data.sh), THREADS and LIMIT (held-out examples per task; empty: all).

# score BASE ADAPTER TASK METRIC [eval options]: the metric on the task's held-out examples
score() {
    local base=$1 adapter=$2 task=$3 metric=$4; shift 4
    "$EL" eval -m "$base" --lora "$adapter" -f "$WORK/data/$task.eval.jsonl" \
        --metric "$metric" ${LIMIT:+--limit "$LIMIT"} -t "$THREADS" --json "$@" 2>/dev/null |
        sed -E "s/.*\"$metric\": ([0-9.]+).*/\1/"
}

# rel Q F: Q as a percentage of F
rel() { awk -v q="$1" -v f="$2" 'BEGIN { printf "%.1f%%", (f > 0 ? 100 * q / f : 0) }'; }
