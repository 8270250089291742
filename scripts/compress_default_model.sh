#!/usr/bin/env bash
# Compresses the default model with `edgelora compress` (UniQL, docs/uniql.md) into
# models/base.uniql.gguf: calibration text from the start of every language's file of the
# corpus (inside the training split train_default_model.sh uses: its held-out split is the
# last 2% of each file), masked LoRA fine-tuning on the text after it (a random rate of the
# table each step, distilled from the original model, merged before GPTQ), 4-bit GPTQ in q4_0,
# the default rates 0 to 35%. The task adapters are re-expressed for the compressed model into
# models/uniql/ (stored as f16), and the fine-tuning's loss curve is kept beside the model.
# Environment: EL (the program), OUT (models/), CORPUS, THREADS, WORK (scratch), STEPS (of the
# fine-tuning).
set -euo pipefail
cd "$(dirname "$0")/.."
EL=${EL:-build/edgelora}
OUT=${OUT:-models}
CORPUS=${CORPUS:-../shared/data/corpus}
THREADS=${THREADS:-2}
WORK=${WORK:-build/default-model}
STEPS=${STEPS:-2500}
LANGS="en de fr es it pt pl ru nl"
ADAPTERS="translate-de translate-fr translate-es typo-en continue shout-en"
mkdir -p "$WORK" "$OUT/uniql"
[ -x "$EL" ] || { echo "build edgelora first (make)" >&2; exit 1; }
# the first 40 paragraphs of each language: about 26,000 tokens, all of them calibrated on
for l in $LANGS; do head -n 40 "$CORPUS/$l.txt"; done > "$WORK/uniql.calib.txt"
# fine-tuning: paragraphs 41-1500 of each language (every file's training split reaches past
# line 11,000)
for l in $LANGS; do sed -n 41,1500p "$CORPUS/$l.txt"; done > "$WORK/uniql.finetune.txt"
loras=()
for a in $ADAPTERS; do loras+=(--lora "$OUT/$a.gguf"); done
rm -rf "$WORK/uniql-adapters"
"$EL" compress -m "$OUT/base.gguf" -f "$WORK/uniql.calib.txt" --calib-tokens 32768 \
    --finetune "$STEPS" --finetune-lr 2e-3 --finetune-text "$WORK/uniql.finetune.txt" \
    --finetune-plot "$OUT/base.uniql.finetune.svg" "${loras[@]}" --lora-out "$WORK/uniql-adapters" \
    -t "$THREADS" -o "$OUT/base.uniql.gguf"
for a in $ADAPTERS; do
    "$EL" quantize "$WORK/uniql-adapters/$a.gguf" "$OUT/uniql/$a.gguf" --type f16 >/dev/null
done
