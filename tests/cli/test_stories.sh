#!/usr/bin/env bash
# `edgelora run` reproduces, byte for byte, the greedy text that llama2.c's own run.c printed
# for stories260K (reference files in ../shared/data/models, see the README there), from the
# llama2.c checkpoint and from the GGUF that `edgelora convert` makes of it (with a float32 KV
# cache, as run.c keeps K and V; the default fp16 one is checked against it by perplexity).
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

M="$DATA/models"
if [ ! -f "$M/stories260K.bin" ]; then skip stories260K "$M/stories260K.bin is absent"; finish; fi

expect_exit convert_stories 0 "$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o "$TMP/stories.gguf"
expect_exit convert_bad_output 1 "$EL" convert "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -o /nonexistent/dir/x.gguf
[ ! -e /nonexistent/dir/x.gguf ] && pass convert_bad_output_no_file || fail convert_bad_output_no_file

# run.c feeds positions 0..steps-1 and prints the token that follows each one, i.e. the tokens
# at positions 1..steps; the prompt (with BOS) fills 0..np-1, so it generates steps - np + 1.
check_run() { # name model-args... -- prompt steps reference
    local name=$1; shift
    local args=() ; while [ "$1" != -- ]; do args+=("$1"); shift; done; shift
    local prompt=$1 steps=$2 ref=$3
    local np; np=$("$EL" tokenize "${args[@]}" --bos -p "$prompt" | wc -w)
    "$EL" run "${args[@]}" -p "$prompt" -n $((steps - np + 1)) --temp 0 -t 1 --kv-type f32 > "$TMP/$name.txt" 2>"$TMP/err"
    if cmp -s "$TMP/$name.txt" "$ref"; then pass "$name"; else
        fail "$name" "output differs from $ref" "got: $(head -c 300 "$TMP/$name.txt")" "$(head -c 300 "$TMP/err")"; fi
}
for fmt in bin gguf; do
    if [ $fmt = bin ]; then margs=(-m "$M/stories260K.bin" --tokenizer "$M/tok512.bin"); else margs=(-m "$TMP/stories.gguf"); fi
    [ $fmt = gguf ] && [ ! -f "$TMP/stories.gguf" ] && { skip "stories_$fmt" "conversion failed"; continue; }
    check_run "stories_${fmt}_once_upon_a_time" "${margs[@]}" -- "Once upon a time" 64 "$M/stories260K.greedy.n64.once_upon_a_time.txt"
    check_run "stories_${fmt}_empty_prompt" "${margs[@]}" -- "" 256 "$M/stories260K.greedy.n256.txt"
done

# seeded sampling is reproducible, and differs from greedy
a=$("$EL" run -m "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -p "Once" -n 40 --temp 1 --seed 7 2>/dev/null)
b=$("$EL" run -m "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -p "Once" -n 40 --temp 1 --seed 7 2>/dev/null)
c=$("$EL" run -m "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -p "Once" -n 40 --temp 1 --seed 8 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" != "$c" ] && pass seed_reproducible || fail seed_reproducible "seed 7: [$a]" "again: [$b]" "seed 8: [$c]"

# perplexity: the model finds its own greedy story far likelier than the same words shuffled
# (a scoring off by one position, or against the wrong token, breaks this)
tr ' ' '\n' < "$M/stories260K.greedy.n256.txt" | awk 'BEGIN{srand(3)} {print rand() "\t" $0}' | sort | cut -f2 | tr '\n' ' ' > "$TMP/shuffled.txt"
p1=$("$EL" perplexity -m "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -f "$M/stories260K.greedy.n256.txt" -c 64 2>/dev/null | sed -n 's/^perplexity: \([0-9.]*\).*/\1/p')
p2=$("$EL" perplexity -m "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -f "$TMP/shuffled.txt" -c 64 2>/dev/null | sed -n 's/^perplexity: \([0-9.]*\).*/\1/p')
if [ -n "$p1" ] && [ -n "$p2" ] && awk -v a="$p1" -v b="$p2" 'BEGIN { exit !(a > 1 && a < 3 && b > 3 * a) }'; then
    pass perplexity_ordering; else fail perplexity_ordering "greedy text $p1, shuffled $p2"; fi

# the fp16 KV cache (the default) against float32: each K and V element within 2^-11 relative,
# which moves the logits by ~1e-3 of their scale and so the perplexity by well under 1% (that the
# option takes effect, bench's KV bytes show)
p3=$("$EL" perplexity -m "$M/stories260K.bin" --tokenizer "$M/tok512.bin" -f "$M/stories260K.greedy.n256.txt" -c 64 --kv-type f32 2>/dev/null | sed -n 's/^perplexity: \([0-9.]*\).*/\1/p')
if [ -n "$p1" ] && [ -n "$p3" ] && awk -v a="$p1" -v b="$p3" 'BEGIN { d = a / b - 1; exit !(d < 0.01 && d > -0.01) }'; then
    pass perplexity_kv_f16_vs_f32; else fail perplexity_kv_f16_vs_f32 "f16 $p1, f32 $p3"; fi
for cmd in run perplexity batch eval; do
    expect_exit "${cmd}_bad_kv_type" 2 "$EL" $cmd -m "$M/stories260K.bin" --tokenizer "$M/tok512.bin" --kv-type f8
    grep -q "kv-type: 'f8' is not f16 or f32" "$TMP/err" && pass "${cmd}_bad_kv_type_message" ||
        fail "${cmd}_bad_kv_type_message" "$(cat "$TMP/err")"
    "$EL" $cmd --help | grep -q -- '--kv-type' && pass "${cmd}_kv_type_help" || fail "${cmd}_kv_type_help"
done

expect_exit info_stories 0 "$EL" info "$M/stories260K.bin"
grep -q 64 "$TMP/out" && pass info_stories_dim || fail info_stories_dim "$(head -5 "$TMP/out")"
finish
