#!/usr/bin/env bash
# train_forecast.sh - trains the default model's forecast set for self-speculative decoding
# (models/base.forecast.gguf) from ../shared/data/corpus, then measures on held-out text of each
# language how many tokens a speculative step yields and checks that the text is plain greedy
# decoding's (into $OUT/forecast.md). Resumes after Ctrl-C (checkpoint).
#
#   scripts/train_forecast.sh                       # into models/
#   STEPS=20 OUT=/tmp/f scripts/train_forecast.sh   # a quick smoke run
#
# Environment: EL (the edgelora program), CORPUS, OUT, WORK, MODEL, SLOTS, STEPS, THREADS,
# PROMPTS (held-out prompts per language), TREE (the tree the measurement uses).
set -euo pipefail
cd "$(dirname "$0")/.."
EL=${EL:-build/edgelora}
CORPUS=${CORPUS:-../shared/data/corpus}
OUT=${OUT:-models}
WORK=${WORK:-build/forecast}
MODEL=${MODEL:-models/base.gguf}
SLOTS=${SLOTS:-3}
STEPS=${STEPS:-300}
THREADS=${THREADS:-2}
PROMPTS=${PROMPTS:-6}
TREE=${TREE:-4,2,1}
LR=${LR:-3e-3}
LANGS="en de fr es it pt pl ru nl"
mkdir -p "$OUT" "$WORK"
[ -x "$EL" ] || { echo "build edgelora first (make)" >&2; exit 1; }

# the base's own split (scripts/train_default_model.sh): the last 2% of each file is held out;
# the slots train on the first 200 kB of the rest of each language
for l in $LANGS; do
    n=$(wc -l < "$CORPUS/$l.txt"); keep=$((n - n / 50))
    head -n "$keep" "$CORPUS/$l.txt" | head -c 200000 > "$WORK/$l.train.txt"
    tail -n +"$((keep + 1))" "$CORPUS/$l.txt" > "$WORK/$l.eval.txt"
done
train=() evals=()
for l in $LANGS; do train+=("$WORK/$l.train.txt"); evals+=("$WORK/$l.eval.txt"); done

"$EL" train-forecast -m "$MODEL" --slots "$SLOTS" -f "${train[@]}" --eval "${evals[@]}" \
    --steps "$STEPS" --batch 16 --lr "$LR" --eval-every 50 -t "$THREADS" \
    --checkpoint "$WORK/forecast.ckpt" --checkpoint-every 50 --resume \
    -o "$OUT/base.forecast.gguf"

# acceptance on held-out prompts: the first 48 characters of lines of each held-out file
{
    echo "# The default model's forecast set on held-out text"
    echo
    echo "\`scripts/train_forecast.sh\`: $SLOTS slots, $STEPS steps; tree $TREE, greedy, 64 tokens"
    echo "per prompt, $PROMPTS prompts per language from the held-out 2% of each corpus file."
    echo "Every speculative text was checked equal to plain greedy decoding's."
    echo
    echo "| language | tokens per step (mean) | steps | tokens |"
    echo "| --- | ---: | ---: | ---: |"
} > "$WORK/forecast.md"
for l in $LANGS; do
    steps=0 tokens=0
    while IFS= read -r line; do
        p=${line:0:48}
        plain=$("$EL" run -m "$MODEL" -p "$p" -n 64 --temp 0 -t "$THREADS" 2>/dev/null)
        spec=$("$EL" run -m "$MODEL" -p "$p" -n 64 --temp 0 -t "$THREADS" \
               --forecast "$OUT/base.forecast.gguf" --tree "$TREE" 2>"$WORK/spec.err")
        [ "$plain" = "$spec" ] || { echo "speculative text differs for: $p" >&2; exit 1; }
        read -r s t < <(sed -n 's/^speculative: \([0-9]*\) steps, .* tokens a step.*/\1/p' \
                        "$WORK/spec.err" | head -1 | awk '{print $1}' | tr '\n' ' '; \
                        grep -o 'generated: [0-9]*' "$WORK/spec.err" | awk '{print $2}')
        steps=$((steps + s)) tokens=$((tokens + t))
    done < <(awk 'length($0) >= 48' "$WORK/$l.eval.txt" | head -n "$PROMPTS")
    awk -v l="$l" -v s="$steps" -v t="$tokens" \
        'BEGIN { printf "| %s | %.2f | %d | %d |\n", l, (s ? t / s : 0), s, t }' \
        >> "$WORK/forecast.md"
done
cp "$WORK/forecast.md" "$OUT/forecast.md"
cat "$OUT/forecast.md"
