#!/usr/bin/env bash
# quad_default_model.sh - QUAD on the default model: one quantization profile for its six
# adapters, chosen by sensitivity, and the other five tuned into it by distillation
# (`edgelora quad`); then each adapter's held-out metric as a float adapter, as int8 under its
# own profile, as int8 under the shared profile as it came, and tuned by QUAD under the shared
# profile ($OUT/quad.md), and the shared profile as $OUT/base.quad.profile.gguf.
#
#   scripts/quad_default_model.sh
#
# Environment: EL, OUT (base.gguf and the adapters), WORK (data from default_model_data.sh, and
# QUAD's output in $WORK/quad), CORPUS, THREADS, STEPS (distillation steps per adapter), TOKENS
# (calibration tokens per adapter), LIMIT (held-out examples per task for the metrics).
set -euo pipefail
cd "$(dirname "$0")/.."
EL=${EL:-build/edgelora}
OUT=${OUT:-models}
WORK=${WORK:-build/default-model}
CORPUS=${CORPUS:-../shared/data/corpus}
THREADS=${THREADS:-2}
STEPS=${STEPS:-100}
TOKENS=${TOKENS:-4096}
LIMIT=${LIMIT:-}
[ -x "$EL" ] || { echo "build edgelora first (make)" >&2; exit 1; }
CORPUS="$CORPUS" WORK="$WORK" scripts/default_model_data.sh

TASKS="translate-de:chrf translate-fr:chrf translate-es:chrf typo-en:chrf continue:lang
       shout-en:chrf"
loras=()
for tm in $TASKS; do loras+=(--lora "$OUT/${tm%%:*}.gguf"); done
"$EL" quad -m "$OUT/base.gguf" "${loras[@]}" --data "$WORK/data" --tokens "$TOKENS" \
    --steps "$STEPS" --batch 8 --lr 1e-4 --warmup 10 --eval-every 25 -c 128 -t "$THREADS" \
    -o "$WORK/quad" | tee "$WORK/quad.txt"

. scripts/held_out_score.sh

table="$OUT/quad.md.tmp"
{
    echo "# QUAD on the default model: one quantization profile for all six adapters"
    echo
    echo "\`scripts/quad_default_model.sh\`: \`edgelora quad\` with the six adapters ($TOKENS"
    echo "calibration tokens of each one's training examples for its own profile; $STEPS steps of"
    echo "distillation, batch 8, lr 1e-4), then \`edgelora eval\` of each adapter on its held-out"
    echo "examples${LIMIT:+ (the first $LIMIT)}, greedy: float; int8 under its own profile; int8"
    echo "under the shared profile as it came (post-training quantization); and tuned by QUAD,"
    echo "int8 under the shared profile (\`$OUT/base.quad.profile.gguf\`). Relative is against"
    echo "float. The base stays f16 here: this measures the adapters' quantization. QUAD keeps"
    echo "a tuning only if it brought the adapter closer to its float self on the held-out"
    echo "examples; an adapter written as it came has its PTQ shared figure in the QUAD column."
    echo
    echo "| task | metric | float | PTQ own profile | PTQ shared profile | QUAD shared profile |"
    echo "| --- | --- | ---: | ---: | ---: | ---: |"
    for tm in $TASKS; do
        task=${tm%%:*} metric=${tm##*:}
        b="$OUT/base.gguf"
        f=$(score "$b" "$OUT/$task.gguf" "$task" "$metric")
        o=$(score "$b" "$OUT/$task.gguf" "$task" "$metric" --profile "$WORK/quad/$task.own.profile.gguf")
        s=$(score "$b" "$OUT/$task.gguf" "$task" "$metric" --profile "$WORK/quad/profile.gguf")
        q=$(score "$b" "$WORK/quad/$task.gguf" "$task" "$metric" --profile "$WORK/quad/profile.gguf")
        echo "| $task | $metric | $f | $o ($(rel "$o" "$f")) | $s ($(rel "$s" "$f")) | $q ($(rel "$q" "$f")) |"
    done
    echo
    echo "QUAD's own figures (held-out cross-entropy of the response tokens in nats, and the"
    echo "distance of the int8 adapter to the float one before and after tuning):"
    echo
    grep '^|' "$WORK/quad.txt"
} > "$table"
mv "$table" "$OUT/quad.md"
cp "$WORK/quad/profile.gguf" "$OUT/base.quad.profile.gguf"
cat "$OUT/quad.md"
