#!/usr/bin/env bash
# Compresses the default model with `edgelora compress` (UniQL, docs/uniql.md) into
# models/base.uniql.gguf: calibration text from the start of every language's file of the
# corpus (inside the training split train_default_model.sh uses: its held-out split is the
# last 2% of each file), 4-bit GPTQ in q4_0, the default rates 0 to 35%.
# Environment: EL (the program), OUT (models/), CORPUS, THREADS, WORK (scratch).
set -euo pipefail
cd "$(dirname "$0")/.."
EL=${EL:-build/edgelora}
OUT=${OUT:-models}
CORPUS=${CORPUS:-../shared/data/corpus}
THREADS=${THREADS:-2}
WORK=${WORK:-build/default-model}
LANGS="en de fr es it pt pl ru nl"
mkdir -p "$WORK"
[ -x "$EL" ] || { echo "build edgelora first (make)" >&2; exit 1; }
# the first 40 paragraphs of each language: about 26,000 tokens, all of them calibrated on
for l in $LANGS; do head -n 40 "$CORPUS/$l.txt"; done > "$WORK/uniql.calib.txt"
"$EL" compress -m "$OUT/base.gguf" -f "$WORK/uniql.calib.txt" --calib-tokens 32768 \
    -t "$THREADS" -o "$OUT/base.uniql.gguf"
