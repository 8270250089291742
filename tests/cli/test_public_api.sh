#!/usr/bin/env bash
# The inference library alone is what an application links: tests/api/generate.c, which sees
# only include/edgelora.h (copied alone into an include folder) and is linked against only
# libedgelora.a, -lm and -pthread (no tools library, no OpenBLAS), runs the README's main job
# (greedy generation on the default model with the translate-de adapter) and prints what
# `edgelora run` prints (and not what the bare base does); the program holds no BLAS or LAPACK symbol and loads no such library.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

B=${BUILD:-build}
model=models/base.gguf adapter=models/translate-de.gguf
if [ ! -f "$model" ] || [ ! -f "$adapter" ]; then skip public_api "needs $model and $adapter"; finish; fi
mkdir -p "$TMP/inc" && cp include/edgelora.h "$TMP/inc/"
# the build's sanitizer flags (make asan) come along: its library needs their runtime
san=
[ "$B" = build-asan ] && san="-fsanitize=address,undefined"
if ${CC:-cc} -std=c11 -Wall -Wextra -Werror $san -I"$TMP/inc" -o "$TMP/generate" tests/api/generate.c \
        "$B/libedgelora.a" -lm -pthread 2>"$TMP/err"; then
    pass inference_only_build
else
    fail inference_only_build "$(head -c 2000 "$TMP/err")"
    finish
fi

prompt=$'German: The file could not be saved.\n'
"$TMP/generate" "$model" "$adapter" "$prompt" 16 >"$TMP/lib.txt" 2>"$TMP/err" \
    || fail inference_only_runs "$(cat "$TMP/err")"
"$EL" run -m "$model" --lora "$adapter" -p "$prompt" -n 16 --temp 0 >"$TMP/cli.txt" 2>/dev/null
if [ -s "$TMP/lib.txt" ] && cmp -s "$TMP/lib.txt" "$TMP/cli.txt"; then
    pass inference_only_same_text
else
    fail inference_only_same_text "library: [$(cat "$TMP/lib.txt")]" "edgelora run: [$(cat "$TMP/cli.txt")]"
fi
# it generated a continuation, and the adapter made it (the bare base continues otherwise)
"$EL" run -m "$model" -p "$prompt" -n 16 --temp 0 >"$TMP/base.txt" 2>/dev/null
if [ "$(wc -l <"$TMP/lib.txt")" -ge 2 ] && [ "$(tail -n +2 "$TMP/lib.txt")" != "" ] \
        && ! cmp -s "$TMP/lib.txt" "$TMP/base.txt"; then
    pass inference_only_adapter_bound
else
    fail inference_only_adapter_bound "with the adapter: [$(cat "$TMP/lib.txt")]" "without: [$(cat "$TMP/base.txt")]"
fi

blas=$(nm "$TMP/generate" | grep -iE ' [TtUuWw] .*(cblas_|openblas|lapack|[sd]gemm_|[sd]gesdd|[sd]syev)' | head -5)
libs=$(ldd "$TMP/generate" 2>/dev/null | grep -iE 'blas|lapack')
if [ -z "$blas" ] && [ -z "$libs" ]; then pass inference_only_no_blas
else fail inference_only_no_blas "symbols: $blas" "libraries: $libs"; fi
finish
