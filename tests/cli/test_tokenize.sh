#!/usr/bin/env bash
# `edgelora tokenize` reproduces llama.cpp's tokenizer test vectors id for id, taking each text
# byte for byte from standard input; `detokenize` gives the text back.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

for vocab in llama-spm gpt-2 falcon mpt bert-bge; do
    gguf="$DATA/tokenizers/ggml-vocab-$vocab.gguf"
    if [ ! -f "$gguf" ]; then skip "tokenize_$vocab" "$gguf is absent"; continue; fi
    d="$TMP/$vocab"; mkdir -p "$d"
    awk -v d="$d" 'BEGIN { RS = "\n__ggml_vocab_test__\n" } { printf "%s", $0 > (d "/" NR ".txt") }' "$gguf.inp"
    n=$(wc -l < "$gguf.out") bad=0 roundtrip_bad=0
    for i in $(seq 1 "$n"); do
        [ -f "$d/$i.txt" ] || : > "$d/$i.txt"
        expected=$(sed -n "${i}p" "$gguf.out" | sed 's/^ //')
        got=$("$EL" tokenize -m "$gguf" < "$d/$i.txt" 2>&1)
        if [ "$got" != "$expected" ]; then
            bad=$((bad + 1))
            [ $bad -le 3 ] && echo "  $vocab case $i: expected [$expected] got [$got]"
        elif [ "$vocab" != bert-bge ] && [ -n "$got" ]; then
            "$EL" detokenize -m "$gguf" -p "$got" > "$d/$i.back" 2>&1
            cmp -s "$d/$i.txt" "$d/$i.back" || roundtrip_bad=$((roundtrip_bad + 1))
        fi
    done
    [ $bad -eq 0 ] && pass "tokenize_$vocab" || fail "tokenize_$vocab" "$bad of $n cases differ"
    [ "$vocab" = bert-bge ] && continue
    [ $roundtrip_bad -eq 0 ] && pass "detokenize_$vocab" || fail "detokenize_$vocab" "$roundtrip_bad cases do not round-trip"
done

# --special: text spelling a special token becomes that token only when asked
gguf="$DATA/tokenizers/ggml-vocab-llama-spm.gguf"
if [ -f "$gguf" ]; then
    plain=$("$EL" tokenize -m "$gguf" -p "<s>")
    special=$("$EL" tokenize -m "$gguf" --special -p "<s>")
    [ "$special" = "1" ] && [ "$plain" != "1" ] && pass special_flag || fail special_flag "plain [$plain] special [$special]"
    withbos=$("$EL" tokenize -m "$gguf" --bos -p "Hello world")
    [ "$withbos" = "1 15043 3186" ] && pass bos_flag || fail bos_flag "got [$withbos]"
fi
finish
