#!/usr/bin/env bash
# `edgelora quantize` against llama.cpp's own llama-quantize, mix by mix (q2_k ... q6_k, q8_0,
# q4_0 ... iq4_xs), on models/base.gguf (trained, F16), a synthetic smollm-135m (`edgelora
# synth`, F16, random weights: 30 layers, grouped-query attention, 576-wide rows that fit no
# K-quant's blocks) and two small shapes of make-shapes.py (no vocabulary: types only).
#  (a) llama-quantize writes the mix; edgelora loads it and gives llama.cpp's greedy text
#      (llama-simple, N tokens after PROMPT) and llama-perplexity's figure within TOL;
#  (b) edgelora quantize writes the same mix; the file has llama-quantize's size, every
#      tensor its type and its bytes (gguf-compare.py, through llama.cpp's gguf-py, which
#      counts the tensors whose bytes are identical, by type), and llama-perplexity on our
#      file gives its own file's figure exactly and ours within TOL.
# Tools built by build-llama-bench.sh into LLAMA_DIR (default /tmp/llama.cpp). Prints a line
# per check and a markdown table (docs/formats.md has one run's); exit status 1 if any fails.
# Usage: scripts/llamacpp-crosscheck/quantize-check.sh [EDGELORA] [LLAMA_DIR]
# Environment: MIXES, MODELS (of: base smollm shapes) to run fewer; TYPES_ONLY=1 for (b)'s
# sizes and types alone; KEEP=DIR keeps the files.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
el=$(realpath "${1:-$root/build/edgelora}")
llama_dir=${2:-/tmp/llama.cpp}
bin=$llama_dir/build/bin
export GGUF_PY=$llama_dir/gguf-py
py=/usr/bin/python3
data="$root/../shared/data"
tol=${TOL:-2e-3}
mixes=${MIXES:-"q2_k q3_k_s q3_k_m q3_k_l q4_k_s q4_k_m q5_k_s q5_k_m q6_k q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl iq4_xs"}
models=${MODELS:-"base smollm shapes"}
prompt=${PROMPT:-"The weather today is"}
n_gen=${N_GEN:-32}
for t in llama-quantize llama-perplexity llama-simple; do
    [ -x "$bin/$t" ] || { echo "quantize-check: $bin/$t is absent (run build-llama-bench.sh)" >&2; exit 1; }
done
[ -d "$data/corpus" ] || { echo "quantize-check: $data is absent" >&2; exit 1; }
if [ -n "${KEEP:-}" ]; then tmp=$KEEP; mkdir -p "$tmp"; else tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT; fi
failed=0
table=()

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

# whether a and b agree to the relative tolerance t
close() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = (a - b) / b; exit !(a != "" && b != "" && d < t && d > -t) }'; }

. "$here/llama-ppl.sh"
ppl_llama() { llama_ppl "$bin/llama-perplexity" "$tmp/llama-perplexity.log" "$1" "$2" 128; }
ppl_ours() { "$el" perplexity -m "$1" -f "$2" -c 128 -t 2 2>/dev/null | sed -n 's/^perplexity: \([0-9.]*\).*/\1/p'; }

# the text each generates after the prompt, greedy (llama-simple prints the BOS piece first)
greedy_llama() { local out; out=$("$bin/llama-simple" -m "$1" -n "$n_gen" "$prompt" 2>/dev/null); printf '%s' "${out#*"$prompt"}"; }
greedy_ours() { local out; out=$("$el" run -m "$1" -p "$prompt" -n "$n_gen" --temp 0 -t 2 2>/dev/null); printf '%s' "${out#*"$prompt"}"; }

# label, input model, text ("" for none: types and sizes only), mix
check_mix() {
    local label=$1 in=$2 text=$3 mix=$4
    local theirs="$tmp/$label-$mix.llama.gguf" ours="$tmp/$label-$mix.ours.gguf"
    [ -n "${TYPES_ONLY:-}" ] && text=
    if ! "$bin/llama-quantize" "$in" "$theirs" "${mix^^}" 2 >"$tmp/lq.log" 2>&1; then
        fail "$label $mix: llama-quantize: $(grep -m1 -iE 'error|failed' "$tmp/lq.log")"; return
    fi
    if ! "$el" quantize "$in" "$ours" --type "$mix" -t 2 >"$tmp/eq.log" 2>&1; then
        fail "$label $mix: edgelora quantize: $(tail -1 "$tmp/eq.log")"; return
    fi
    local st so cmp ok=1
    st=$(stat -c %s "$theirs"); so=$(stat -c %s "$ours")
    [ "$st" = "$so" ] || { fail "$label $mix: size $so, llama-quantize's $st"; ok=0; }
    cmp=$("$py" "$here/gguf-compare.py" "$theirs" "$ours") || { fail "$label $mix: $cmp"; ok=0; }
    case $cmp in *"(differ:"*) fail "$label $mix: bytes: $cmp"; ok=0 ;; esac
    local row="| $label | $mix | $st $([ "$st" = "$so" ] && echo '=' || echo "/ $so") | ${cmp%%;*} | ${cmp#*; }"
    if [ -z "$text" ]; then
        [ $ok = 1 ] && pass "$label $mix: size $st, $cmp"
        table+=("$row | | | |"); return
    fi
    # (a) llama-quantize's file in edgelora
    local gl go greedy pl_t pe_t pl_o pe_o
    gl=$(greedy_llama "$theirs"); go=$(greedy_ours "$theirs")
    if [ -n "$gl" ] && [ "$gl" = "$go" ]; then greedy=identical
    else greedy="differ"; fail "$label $mix: greedy on llama-quantize's file: ours '$go', llama.cpp '$gl'"; ok=0; fi
    pl_t=$(ppl_llama "$theirs" "$text"); pe_t=$(ppl_ours "$theirs" "$text")
    close "$pe_t" "$pl_t" "$tol" || { fail "$label $mix: perplexity of llama-quantize's file: ours ${pe_t:-none}, llama.cpp ${pl_t:-none}"; ok=0; }
    # (b) our file in llama.cpp
    pl_o=$(ppl_llama "$ours" "$text"); pe_o=$(ppl_ours "$ours" "$text")
    [ -n "$pl_o" ] && [ "$pl_o" = "$pl_t" ] || { fail "$label $mix: llama-perplexity of our file ${pl_o:-none}, of its own ${pl_t:-none}"; ok=0; }
    close "$pe_o" "$pl_o" "$tol" || { fail "$label $mix: perplexity of our file: ours ${pe_o:-none}, llama.cpp ${pl_o:-none}"; ok=0; }
    [ $ok = 1 ] && pass "$label $mix: size $st, $cmp, greedy $greedy, ppl $pe_t / $pl_t, our file $pl_o / $pe_o"
    table+=("$row | $greedy | $pe_t / $pl_t | $pl_o / $pe_o |")
    rm -f "$theirs" "$ours"
}

# short texts (a shared 2-core machine runs four perplexities a mix): about 20 windows of 128
head -c "${BASE_TEXT_BYTES:-12000}" "$data/corpus/en.txt" > "$tmp/base.txt"
head -c "${SMOLLM_TEXT_BYTES:-5000}" "$data/corpus/en.txt" > "$tmp/smollm.txt"
for model in $models; do
    case $model in
    base) for mix in $mixes; do check_mix base "$root/models/base.gguf" "$tmp/base.txt" "$mix"; done ;;
    smollm)
        [ -f "$tmp/smollm-f16.gguf" ] ||
            "$el" synth --shape smollm-135m --type f16 -o "$tmp/smollm-f16.gguf" >/dev/null 2>&1 ||
            { fail "synth smollm-135m"; continue; }
        for mix in $mixes; do check_mix smollm "$tmp/smollm-f16.gguf" "$tmp/smollm.txt" "$mix"; done ;;
    shapes)
        "$py" "$here/make-shapes.py" "$tmp" || { fail "make-shapes.py"; continue; }
        for s in gqa-untied tied; do
            for mix in $mixes; do check_mix "$s" "$tmp/$s.gguf" "" "$mix"; done
        done ;;
    *) fail "unknown model $model" ;;
    esac
done

echo
echo "| model | mix | bytes (llama-quantize = ours) | tensor types | tensors byte-identical | greedy ($n_gen tokens) on llama-quantize's file | its perplexity, ours / llama.cpp | our file's, llama.cpp / ours |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${table[@]}"
echo
echo "quantize-check: $failed failed"
[ "$failed" -eq 0 ]
