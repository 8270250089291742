#!/usr/bin/env bash
# What pruning costs the task adapters (docs/uniql.md): each adapter of the default model
# re-expressed for the compressed model (models/uniql/, scripts/compress_default_model.sh) is
# scored with `edgelora eval` on the compressed model at each rate, beside the original adapter
# on the float model. Writes $OUT/uniql_adapters.tsv and a plot of the percent of the float
# model's score against the rate. LIMIT examples per task (the first ones of the held-out file
# default_model_data.sh writes).
# Environment: EL, OUT (docs/), MODELS (models/), WORK, THREADS, LIMIT, RATES.
set -euo pipefail
cd "$(dirname "$0")/.."
EL=${EL:-build/edgelora}
OUT=${OUT:-docs}
MODELS=${MODELS:-models}
WORK=${WORK:-build/default-model}
THREADS=${THREADS:-2}
LIMIT=${LIMIT:-1000000}
RATES=${RATES:-"0 0.15 0.25 0.35"}
TASKS="translate-de:chrf translate-fr:chrf translate-es:chrf typo-en:chrf continue:lang shout-en:chrf"
[ -f "$WORK/data/continue.eval.jsonl" ] || scripts/default_model_data.sh >/dev/null
score() { # model adapter task metric -> the score
    "$EL" eval -m "$1" --lora "$2" -f "$WORK/data/$3.eval.jsonl" --limit "$LIMIT" --metric "$4" --json -t "$THREADS" \
        "${@:5}" 2>/dev/null |
        /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); s=d.get("scores", d); print("%.2f" % s[sys.argv[1]])' "$4"
}
TSV="$OUT/uniql_adapters.tsv"
printf 'task\tmetric\trate\tscore\tpercent\n' > "$TSV"
for tm in $TASKS; do
    t=${tm%%:*} m=${tm##*:}
    f=$(score "$MODELS/base.gguf" "$MODELS/$t.gguf" "$t" "$m")
    printf '%s\t%s\tfloat\t%s\t100.0\n' "$t" "$m" "$f" | tee -a "$TSV"
    for r in $RATES; do
        s=$(score "$MODELS/base.uniql.gguf" "$MODELS/uniql/$t.gguf" "$t" "$m" --prune "$r")
        printf '%s\t%s\t%s\t%s\t%.1f\n' "$t" "$m" "$r" "$s" "$(awk -v s="$s" -v f="$f" 'BEGIN { print 100 * s / f }')" | tee -a "$TSV"
    done
done
grep -v 'float' "$TSV" > "$WORK/uniql-adapters-plot.tsv"
"$EL" plot -i "$WORK/uniql-adapters-plot.tsv" -x rate -y percent --series task \
    -o "${TSV%.tsv}.svg" --title "adapters on the compressed default model (q4_0, re-expressed)" \
    --xlabel "global pruning rate" --ylabel "% of the float model's score"
