#!/usr/bin/env bash
# eval_default_model.sh - the held-out scores of the default model's adapters against the bare
# base (issue 5), as the last step of scripts/train_default_model.sh: `edgelora eval
# --compare-base` of each adapter on its task's held-out file, summed up in $OUT/eval.md.
#
#   scripts/eval_default_model.sh                        # after train_default_model.sh
#   LIMIT=40 OUT=models WORK=/tmp/w scripts/eval_default_model.sh   # a quick look
#
# Environment: EL, OUT (base.gguf and the adapters; eval.md goes there), WORK (data/<task>.eval.jsonl
# written by train_default_model.sh, and the per-example outputs), THREADS, LIMIT (examples per
# task; default all), SEED (of the bootstrap).
set -euo pipefail
cd "$(dirname "$0")/.."
EL=${EL:-build/edgelora}
OUT=${OUT:-models}
WORK=${WORK:-build/default-model}
THREADS=${THREADS:-2}
LIMIT=${LIMIT:-}
SEED=${SEED:-1}
[ -x "$EL" ] || { echo "build edgelora first (make)" >&2; exit 1; }

# task:metrics - the headline metric first, then others worth a row (chrF where exact match is
# too strict to say much about a small model, lang where the output's language is part of the
# task); one run per task gives them all
TASKS="translate-de:chrf,lang translate-fr:chrf,lang translate-es:chrf,lang typo-en:chrf,exact
       continue:lang,chrf shout-en:chrf,exact"

# field REGEX REPLACEMENT JSON: numbers of `edgelora eval --json`'s output that REGEX captures
field() { sed -E "s/$1/$2/" <<< "$3"; }

table="$WORK/eval.md.tmp"
{
    echo "# Held-out scores of the default model's adapters"
    echo
    echo "\`scripts/eval_default_model.sh\`: \`edgelora eval --compare-base\` of each adapter on its"
    echo "task's held-out examples (\`$WORK/data/<task>.eval.jsonl\`, made from the last 2% of the"
    echo "corpus files by \`scripts/train_default_model.sh\`), greedy.${LIMIT:+ Only the first $LIMIT of each.}"
    echo "Scores are 0..100: chrf is chrF2 as sacreBLEU computes it by default, exact the percent of"
    echo "outputs equal to the reference, lang the percent of outputs in the expected language. The"
    echo "difference is adapter - base with a 95% paired bootstrap interval (1000 resamples of the"
    echo "examples, seed $SEED); an adapter clearly beats the base where the interval is above 0."
    echo "See docs/eval.md. The W4A8 one-for-all model (eleven adapters, one quantization profile)"
    echo "is scored task by task and language by language against this float model in"
    echo "\`w4a8/eval.md\` (scripts/train_w4a8_model.sh)."
    echo
    echo "| task | metric | base | adapter | difference [95% interval] | n |"
    echo "| --- | --- | ---: | ---: | --- | ---: |"
} > "$table"
for row in $TASKS; do
    task=${row%%:*} metrics=${row##*:}
    json=$("$EL" eval -m "$OUT/base.gguf" --lora "$OUT/$task.gguf" -f "$WORK/data/$task.eval.jsonl" \
        --compare-base --metric "${metrics%%,*}" --json --seed "$SEED" -t "$THREADS" \
        ${LIMIT:+--limit "$LIMIT"} -o "$WORK/$task.eval-out.jsonl")
    n=$(field '.*"n": ([0-9]+),.*' '\1' "$json")
    for metric in ${metrics//,/ }; do
        # (lang is reported only when every example has its language: older data may not)
        grep -q "\"$metric\": {\"value\"" <<< "$json" || { echo "$task: no $metric score" >&2; continue; }
        adapter=$(field ".*\"scores\": \\{[^}]*\"$metric\": ([-0-9.]+).*" '\1' "$json")
        base=$(field ".*\"base\": \\{[^}]*\"$metric\": ([-0-9.]+).*" '\1' "$json")
        read -r d lo hi <<< "$(field ".*\"difference\": \\{.*\"$metric\": \\{\"value\": ([-0-9.]+), \"ci95\": \\[([-0-9.]+), ([-0-9.]+)\\].*" '\1 \2 \3' "$json")"
        printf '| %s | %s | %.2f | %.2f | %+.2f [%+.2f, %+.2f] | %s |\n' "$task" "$metric" "$base" \
            "$adapter" "$d" "$lo" "$hi" "$n" >> "$table"
        echo "$task $metric: base $base, adapter $adapter, difference $d [$lo, $hi] (n $n)"
    done
done
mv "$table" "$OUT/eval.md"
echo "held-out scores in $OUT/eval.md"
