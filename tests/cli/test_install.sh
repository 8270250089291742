#!/usr/bin/env bash
# `make install` puts the library, header, program and pkg-config file in PREFIX, and a program
# outside the tree builds against them with pkg-config and runs.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

if [ "${BUILD:-build}" != build ]; then skip install "only checked in the plain build"; finish; fi
if ! command -v pkg-config >/dev/null; then skip install "pkg-config is not installed"; finish; fi
prefix="$TMP/prefix"
expect_exit install 0 make -s install PREFIX="$prefix"
for f in include/edgelora.h lib/libedgelora.a lib/libedgelora-tools.a bin/edgelora lib/pkgconfig/edgelora.pc lib/pkgconfig/edgelora-tools.pc; do
    [ -f "$prefix/$f" ] || fail "installed_$f"
done
cat > "$TMP/user.c" <<'C'
#include <edgelora.h>
#include <stdio.h>
int main(int argc, char **argv) {
    el_model *m;
    el_model_params p = el_model_default_params();
    p.vocab_only = 1;
    if (el_model_load(argv[1], &p, &m) != EL_OK) { fprintf(stderr, "%s\n", el_last_error()); return 1; }
    int32_t ids[16]; size_t n;
    el_status st = el_tokenize(m, "Hello world", 11, 0, 0, ids, 16, &n);
    for (size_t i = 0; st == EL_OK && i < n; i++) printf("%d ", ids[i]);
    el_model_free(m);
    return st != EL_OK;
}
C
if cc -o "$TMP/user" "$TMP/user.c" $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs edgelora) 2>"$TMP/err"; then
    pass pkg_config_build
    gguf="$DATA/tokenizers/ggml-vocab-llama-spm.gguf"
    if [ -f "$gguf" ]; then
        out=$("$TMP/user" "$gguf")
        # "Hello world" in llama.cpp's test vectors for this vocabulary: 15043 3186
        [ "$out" = "15043 3186 " ] && pass installed_library_runs || fail installed_library_runs "got [$out]"
    fi
else
    fail pkg_config_build "$(cat "$TMP/err")"
fi
finish
