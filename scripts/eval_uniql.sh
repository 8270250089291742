#!/usr/bin/env bash
# Quality against pruning rate of `edgelora compress` (docs/uniql.md): perplexity on held-out
# text and, for the default model, the `continue` task (edgelora eval, the bare base: chrF and
# the percent of outputs in the prompt's language), at each rate, for
#   float     the original model (rate 0 only: the reference)
#   sorted    compress --type f32 (sorting alone), pruned by compress --slice
#   uniql     compress (sorting + 4-bit GPTQ; its --sorted model), pruned by compress --slice
#   unsorted  the original pruned the same way without sorting (what sorting buys)
#   tuned     (stories260K) uniql with masked LoRA fine-tuning before GPTQ, pruned by --slice
#   shipped   models/base.uniql.gguf (sorting with Q/K, masked LoRA fine-tuning, GPTQ) run by
#             the engine at each rate (--prune)
# (rate 0 of sorted and unsorted is the float model: test_compress checks it). Writes
# $OUT/uniql_<model>.tsv and the SVG plots beside it. PARTS picks the models (base stories).
# Environment: EL, OUT (docs/), CORPUS, MODELS (the shared models folder), THREADS, WORK.
set -euo pipefail
cd "$(dirname "$0")/.."
EL=${EL:-build/edgelora}
OUT=${OUT:-docs}
CORPUS=${CORPUS:-../shared/data/corpus}
MODELS=${MODELS:-../shared/data/models}
THREADS=${THREADS:-2}
WORK=${WORK:-build/uniql-eval}
RATES=${RATES:-"0 0.15 0.25 0.35"}
PARTS=${PARTS:-"base stories"}
LANGS="en de fr es it pt pl ru nl"
mkdir -p "$WORK" "$OUT"

# held-out: the last 2% of the lines of each file (train_default_model.sh's split); the
# calibration text comes from the start of the files (compress_default_model.sh's)
: > "$WORK/heldout.txt"
: > "$WORK/continue.jsonl"
for l in $LANGS; do
    n=$(wc -l < "$CORPUS/$l.txt")
    tail -n "$((n / 50))" "$CORPUS/$l.txt" > "$WORK/$l.eval.txt"
    head -n 60 "$WORK/$l.eval.txt" >> "$WORK/heldout.txt" # the first 60 paragraphs of each
    # the continue task as train_default_model.sh makes it (every sixth example)
    awk -v lang="$l" '/\\/ { next } { for (i = 1; i <= NF; i++) if ($i ~ /[[:cntrl:]]/) next }
        function js(s) { gsub(/"/, "\\\"", s); return "\"" s "\"" }
        { n = split($0, w, " "); if (n < 24) next; if (k++ % 6) next
          p = w[1]; for (i = 2; i <= 12; i++) p = p " " w[i]; r = ""; for (i = 13; i <= 24; i++) r = r " " w[i]
          print "{\"prompt\": " js("[" lang "] " p) ", \"response\": " js(r) ", \"lang\": " js(lang) "}" }' \
        "$WORK/$l.eval.txt" >> "$WORK/continue.jsonl"
done
for l in $LANGS; do head -n 40 "$CORPUS/$l.txt"; done > "$WORK/calib.txt"

ppl() { "$EL" perplexity -m "$1" -f "$2" -c "$3" -t "$THREADS" "${@:4}" 2>/dev/null | sed -n 's/^perplexity: \([0-9.]*\).*/\1/p'; }
task() { # model [options] -> "chrf<TAB>lang"
    "$EL" eval -m "$1" -f "$WORK/continue.jsonl" --metric lang --json "${@:2}" 2>/dev/null |
        /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); s=d["scores"] if "scores" in d else d; print("%.2f\t%.2f" % (s["chrf"], s["lang"]))'
}

row() { local IFS=$'\t'; echo "$*" >> "$TSV"; tail -1 "$TSV"; }
plot() { # tsv y what: the curves of column y against the rate, one per variant but float
    grep -v '^float' "$1" > "$WORK/plot.tsv"
    "$EL" plot -i "$WORK/plot.tsv" -x rate -y "$2" --series variant -o "${1%.tsv}_$2.svg" \
        --title "$3" --xlabel "global pruning rate" --ylabel "$2"
}

# ---- the default model (context 128)
if [[ " $PARTS " == *" base "* ]]; then
TSV="$OUT/uniql_base.tsv"
printf 'variant\trate\tppl\tchrf\tlang\n' > "$TSV"
B=models/base.gguf
"$EL" compress -m "$B" -f "$WORK/calib.txt" --calib-tokens 32768 --type f32 --no-sort-qk -t "$THREADS" \
    --sorted "$WORK/base.sorted.gguf" -o "$WORK/base.sorted-layout.gguf" 2>/dev/null
"$EL" compress -m "$B" -f "$WORK/calib.txt" --calib-tokens 32768 --no-sort-qk -t "$THREADS" \
    --sorted "$WORK/base.uniql.gguf" -o "$WORK/base.uniql-layout.gguf" 2>/dev/null
row float 0 "$(ppl "$B" "$WORK/heldout.txt" 128)" "$(task "$B")"
f=$(tail -1 "$TSV" | cut -f3-); row sorted 0 "$f"; row unsorted 0 "$f" # the float model itself
row uniql 0 "$(ppl "$WORK/base.uniql.gguf" "$WORK/heldout.txt" 128)" "$(task "$WORK/base.uniql.gguf")"
for r in ${RATES#0 }; do
    for v in sorted uniql unsorted; do
        src="$WORK/base.$v.gguf"; [ "$v" = unsorted ] && src=$B
        "$EL" compress --slice "$r" -m "$src" -o "$WORK/cut.gguf" 2>/dev/null
        row "$v" "$r" "$(ppl "$WORK/cut.gguf" "$WORK/heldout.txt" 128)" "$(task "$WORK/cut.gguf")"
    done
done
# the shipped file (scripts/compress_default_model.sh: Q/K sorted too, masked LoRA fine-tuning,
# GPTQ), run by the engine at each rate
for r in $RATES; do
    row shipped "$r" "$(ppl models/base.uniql.gguf "$WORK/heldout.txt" 128 --prune "$r")" \
        "$(task models/base.uniql.gguf --prune "$r")"
done
plot "$TSV" ppl "default model: held-out perplexity (9 languages)"
plot "$TSV" lang "default model, continue task: outputs in the prompt's language (%)"
plot "$TSV" chrf "default model, continue task: chrF"
fi

# ---- stories260K (llama2.c; context 512). Its training text (TinyStories) is not in the shared
# data, so calibration and held-out text are stories it samples itself (temperature 0.8, 256
# tokens from "Once upon a time"): seeds 1-30 to calibrate, 101-130 held out. No task metric.
if [[ " $PARTS " == *" stories "* ]]; then
TSV="$OUT/uniql_stories260K.tsv"
printf 'variant\trate\tppl\n' > "$TSV"
S="$WORK/stories260K.gguf"
"$EL" convert "$MODELS/stories260K.bin" --tokenizer "$MODELS/tok512.bin" -o "$S" >/dev/null 2>&1
sample() { for s in $(seq "$1" "$2"); do "$EL" run -m "$S" -p "Once upon a time" -n 256 --temp 0.8 -s "$s" -t 1 2>/dev/null; echo; done; }
sample 1 30 > "$WORK/stories.calib.txt"
sample 101 130 > "$WORK/stories.heldout.txt"
sample 201 600 > "$WORK/stories.finetune.txt" # masked LoRA fine-tuning's text
"$EL" compress -m "$S" -f "$WORK/stories.calib.txt" --type f32 --no-sort-qk -t "$THREADS" \
    --sorted "$WORK/stories.sorted.gguf" -o "$WORK/stories.sorted-layout.gguf" 2>/dev/null
"$EL" compress -m "$S" -f "$WORK/stories.calib.txt" --no-sort-qk -t "$THREADS" \
    --sorted "$WORK/stories.uniql.gguf" -o "$WORK/stories.uniql-layout.gguf" 2>/dev/null
row float 0 "$(ppl "$S" "$WORK/stories.heldout.txt" 512)"
f=$(tail -1 "$TSV" | cut -f3-); row sorted 0 "$f"; row unsorted 0 "$f"
"$EL" compress -m "$S" -f "$WORK/stories.calib.txt" --no-sort-qk -t "$THREADS" --finetune 600 \
    --finetune-text "$WORK/stories.finetune.txt" --finetune-ctx 256 --finetune-lr 3e-3 \
    --sorted "$WORK/stories.tuned.gguf" -o "$WORK/stories.tuned-layout.gguf" 2>/dev/null
row uniql 0 "$(ppl "$WORK/stories.uniql.gguf" "$WORK/stories.heldout.txt" 512)"
row tuned 0 "$(ppl "$WORK/stories.tuned.gguf" "$WORK/stories.heldout.txt" 512)"
for r in ${RATES#0 }; do
    for v in sorted uniql tuned unsorted; do
        src="$WORK/stories.$v.gguf"; [ "$v" = unsorted ] && src=$S
        "$EL" compress --slice "$r" -m "$src" -o "$WORK/cut.gguf" 2>/dev/null
        row "$v" "$r" "$(ppl "$WORK/cut.gguf" "$WORK/stories.heldout.txt" 512)"
    done
done
plot "$TSV" ppl "stories260K: held-out perplexity (its own sampled stories)"
fi
