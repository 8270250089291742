#!/usr/bin/env bash
# profile_default_model.sh - one quantization profile for the default model and all its adapters
# ($OUT/base.profile.gguf, `edgelora profile`), and the held-out score of every adapter under it
# against the float adapter ($OUT/profile.md): the post-training quantization baseline that QAT
# and QUAD improve on (issue 22).
#
#   scripts/profile_default_model.sh
#
# Environment: EL, OUT (base.gguf and the adapters), WORK (data from default_model_data.sh),
# CORPUS, THREADS, TOKENS (calibration tokens), LIMIT (held-out examples per task; default all).
set -euo pipefail
cd "$(dirname "$0")/.."
EL=${EL:-build/edgelora}
OUT=${OUT:-models}
WORK=${WORK:-build/default-model}
CORPUS=${CORPUS:-../shared/data/corpus}
THREADS=${THREADS:-2}
TOKENS=${TOKENS:-8192}
LIMIT=${LIMIT:-}
[ -x "$EL" ] || { echo "build edgelora first (make)" >&2; exit 1; }
CORPUS="$CORPUS" WORK="$WORK" scripts/default_model_data.sh

# task:metric, the headline metric of each (as in eval_default_model.sh)
TASKS="translate-de:chrf translate-fr:chrf translate-es:chrf typo-en:chrf continue:lang
       shout-en:chrf"

# calibration text: training lines of every language and of the translations, interleaved in
# blocks so that the first TOKENS tokens see all of them
calib="$WORK/profile.calib.txt"
for f in "$WORK"/data/*.train.txt; do head -n 40 "$f"; done > "$calib"

loras=()
for tm in $TASKS; do loras+=(--lora "$OUT/${tm%%:*}.gguf"); done
"$EL" profile -m "$OUT/base.gguf" "${loras[@]}" --data "$calib" --tokens "$TOKENS" \
    -t "$THREADS" -o "$OUT/base.profile.gguf" | tee "$WORK/profile.txt"

. scripts/held_out_score.sh

table="$OUT/profile.md.tmp"
{
    echo "# The default model's adapters under one quantization profile"
    echo
    echo "\`scripts/profile_default_model.sh\`: \`edgelora profile\` of the base with all six"
    echo "adapters over $TOKENS tokens of training text (\`$OUT/base.profile.gguf\`), then"
    echo "\`edgelora eval\` of each adapter on its held-out examples${LIMIT:+ (the first $LIMIT)}, greedy,"
    echo "as a float adapter and as int8 under the profile (A, B and A x on the profile's int8"
    echo "grids, x with the profile's static scales; post-training quantization, no tuning)."
    echo "Relative is profile / float. The base's weights stay f16 here: this measures the"
    echo "adapters' quantization alone."
    echo
    echo "| task | metric | float | profile | relative |"
    echo "| --- | --- | ---: | ---: | ---: |"
    for tm in $TASKS; do
        task=${tm%%:*} metric=${tm##*:}
        f=$(score "$OUT/base.gguf" "$OUT/$task.gguf" "$task" "$metric")
        q=$(score "$OUT/base.gguf" "$OUT/$task.gguf" "$task" "$metric" --profile "$OUT/base.profile.gguf")
        awk -v t="$task" -v m="$metric" -v f="$f" -v q="$q" 'BEGIN {
            printf "| %s | %s | %.2f | %.2f | %.1f%% |\n", t, m, f, q, (f > 0 ? 100 * q / f : 100) }'
    done
    echo
    echo "Adapters as the profile holds them (\`edgelora profile\`'s report):"
    echo
    echo '```'
    grep -v '^wrote' "$WORK/profile.txt"
    echo '```'
} > "$table"
mv "$table" "$OUT/profile.md"
cat "$OUT/profile.md"
