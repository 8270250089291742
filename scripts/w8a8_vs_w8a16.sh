#!/usr/bin/env bash
# w8a8_vs_w8a16.sh - the default model's base as int8 weights with int8 activations at the
# shared profile's static scales (W8A8) against int8 weights with int16 activations per token
# (W8A16), every adapter int8 under the same profile ($OUT/base.profile.gguf), against the f16
# base with float adapters: held-out task metrics and perplexity per language ($OUT/w8a8_vs_w8a16.md).
#
#   scripts/w8a8_vs_w8a16.sh
#
# Environment: EL, OUT, WORK (data from default_model_data.sh), CORPUS, THREADS, LIMIT.
set -euo pipefail
cd "$(dirname "$0")/.."
EL=${EL:-build/edgelora}
OUT=${OUT:-models}
WORK=${WORK:-build/default-model}
CORPUS=${CORPUS:-../shared/data/corpus}
THREADS=${THREADS:-2}
LIMIT=${LIMIT:-}
[ -x "$EL" ] || { echo "build edgelora first (make)" >&2; exit 1; }
CORPUS="$CORPUS" WORK="$WORK" scripts/default_model_data.sh
PROFILE="$OUT/base.profile.gguf"
for t in w8 w8a16; do
    "$EL" quantize "$OUT/base.gguf" "$WORK/base.$t.gguf" --type "$t" > /dev/null
done

TASKS="translate-de:chrf translate-fr:chrf translate-es:chrf typo-en:chrf continue:lang
       shout-en:chrf"
. scripts/held_out_score.sh
ppl() { # base lang [options]
    local base=$1 lang=$2; shift 2
    "$EL" perplexity -m "$base" -f "$WORK/data/$lang.eval.txt" -c 128 -t "$THREADS" "$@" 2>/dev/null |
        sed -nE 's/.*perplexity[^0-9]*([0-9.]+).*/\1/p' | tail -1
}

table="$OUT/w8a8_vs_w8a16.md.tmp"
{
    echo "# W8A8 against W8A16 under one quantization profile"
    echo
    echo "\`scripts/w8a8_vs_w8a16.sh\`: the default model's base quantized to int8 weights per"
    echo "output channel (\`quantize --type w8\`, \`--type w8a16\`), run with every adapter int8"
    echo "under \`$OUT/base.profile.gguf\` (\`--profile\`). W8A8: the base's activations int8"
    echo "at the profile's static scales, so the whole linear algebra is integer; W8A16: the"
    echo "base's activations int16 with a scale per token (the profile's x scales do not apply)."
    echo "Against the f16 base with float adapters; held-out examples${LIMIT:+ (the first $LIMIT)}, greedy."
    echo
    echo "| task | metric | f16, float adapter | W8A8, profile | W8A16, profile |"
    echo "| --- | --- | ---: | ---: | ---: |"
    for tm in $TASKS; do
        task=${tm%%:*} metric=${tm##*:}
        f=$(score "$OUT/base.gguf" "$OUT/$task.gguf" "$task" "$metric")
        a=$(score "$WORK/base.w8.gguf" "$OUT/$task.gguf" "$task" "$metric" --profile "$PROFILE")
        b=$(score "$WORK/base.w8a16.gguf" "$OUT/$task.gguf" "$task" "$metric" --profile "$PROFILE")
        echo "| $task | $metric | $f | $a ($(rel "$a" "$f")) | $b ($(rel "$b" "$f")) |"
    done
    echo
    echo "Perplexity of the bare base on held-out text (lower is better):"
    echo
    echo "| language | f16 | W8A8, profile | W8A16 |"
    echo "| --- | ---: | ---: | ---: |"
    for l in en de fr es it pt pl ru nl; do
        echo "| $l | $(ppl "$OUT/base.gguf" "$l") | $(ppl "$WORK/base.w8.gguf" "$l" --profile "$PROFILE") | $(ppl "$WORK/base.w8a16.gguf" "$l") |"
    done
} > "$table"
mv "$table" "$OUT/w8a8_vs_w8a16.md"
cat "$OUT/w8a8_vs_w8a16.md"
