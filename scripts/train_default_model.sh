#!/usr/bin/env bash
# train_default_model.sh - rebuilds the default model of issue 5 from ../shared/data/corpus:
# a byte-level BPE tokenizer, a multilingual base trained on every language of the corpus, and
# task adapters (translation, typo correction, continuation, style), then their held-out scores
# against the bare base (scripts/eval_default_model.sh, into $OUT/eval.md). About two hours on 2
# cores with the defaults; every step is one edgelora command and resumes after Ctrl-C
# (checkpoints).
#
#   scripts/train_default_model.sh            # everything, into models/
#   STEPS=200 OUT=/tmp/m scripts/train_default_model.sh   # a quick smoke run
#
# Environment: EL (the edgelora program), CORPUS, OUT (where the model and adapters go), WORK
# (intermediate files), SHAPE, VOCAB, STEPS (base), ADAPTER_STEPS, THREADS, SEED.
set -euo pipefail
cd "$(dirname "$0")/.."
EL=${EL:-build/edgelora}
CORPUS=${CORPUS:-../shared/data/corpus}
OUT=${OUT:-models}
WORK=${WORK:-build/default-model}
SHAPE=${SHAPE:-dim=256,layers=6,heads=8,kv_heads=4,ffn=688,ctx=128}
VOCAB=${VOCAB:-4096}
STEPS=${STEPS:-2000}
ADAPTER_STEPS=${ADAPTER_STEPS:-300}
THREADS=${THREADS:-2}
SEED=${SEED:-1}
LANGS="en de fr es it pt pl ru nl"
mkdir -p "$OUT"
[ -x "$EL" ] || { echo "build edgelora first (make)" >&2; exit 1; }

# ---- 1. data: held-out splits of the corpus, and the JSONL examples of the adapter tasks
CORPUS="$CORPUS" WORK="$WORK" SEED="$SEED" scripts/default_model_data.sh

# ---- 2. tokenizer
[ -f "$OUT/tokenizer.gguf" ] || "$EL" train-tokenizer -f "$WORK"/data/*.train.txt \
    --vocab-size "$VOCAB" -o "$OUT/tokenizer.gguf"

# ---- 3. base model
"$EL" train --shape "$SHAPE" --untied --tokenizer "$OUT/tokenizer.gguf" \
    -f "$WORK"/data/*.train.txt --eval "$WORK"/data/{en,de,ru}.eval.txt \
    --steps "$STEPS" --batch 32 --lr 1.5e-3 --warmup 100 --eval-every 100 --eval-batches 8 \
    --seed "$SEED" -t "$THREADS" --checkpoint "$WORK/base.ckpt" --checkpoint-every 100 --resume \
    -o "$WORK/base.f32.gguf"
# stored as f16: half the bytes (models/ must stay under 30 MB) for a relative error of ~2e-4;
# the adapters below are trained on exactly this f16 base
"$EL" quantize "$WORK/base.f32.gguf" "$OUT/base.gguf" --type f16 > "$WORK/base.quantize.txt"
cp "$WORK/base.f32.loss.svg" "$OUT/base.loss.svg"
for l in $LANGS; do # held-out perplexity per language, in chunks of the training context
    printf '%s: ' "$l"
    "$EL" perplexity -m "$OUT/base.gguf" -f "$WORK/data/$l.eval.txt" -c "${SHAPE##*ctx=}" 2>/dev/null | grep perplexity || echo "?"
done | tee "$OUT/base.perplexity.txt"

# ---- 4. adapters
for task in translate-de translate-fr translate-es typo-en continue shout-en; do
    "$EL" finetune -m "$OUT/base.gguf" --lora --rank 16 --alpha 32 \
        --targets q,k,v,o,gate,up,down -f "$WORK/data/$task.train.jsonl" \
        --eval "$WORK/data/$task.eval.jsonl" --steps "$ADAPTER_STEPS" --batch 16 --lr 2e-3 \
        --warmup 20 --eval-every 50 -c 128 --seed "$SEED" -t "$THREADS" \
        --checkpoint "$WORK/$task.ckpt" --checkpoint-every 50 --resume -o "$OUT/$task.gguf"
done

# ---- 5. held-out scores of each adapter against the bare base: $OUT/eval.md
EL="$EL" OUT="$OUT" WORK="$WORK" THREADS="$THREADS" SEED="$SEED" scripts/eval_default_model.sh
echo "default model in $OUT: base.gguf, tokenizer.gguf and $(ls "$OUT"/*.gguf | wc -l) files"
