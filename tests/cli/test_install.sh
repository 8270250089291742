#!/usr/bin/env bash
# `make install` puts the libraries, headers, program and pkg-config files in PREFIX (or
# DESTDIR/PREFIX), and programs outside the tree build against them with pkg-config and run.
cd "$(dirname "$0")/../.." && . tests/cli/lib.sh

if [ "${BUILD:-build}" != build ]; then skip install "only checked in the plain build"; finish; fi
if ! command -v pkg-config >/dev/null; then skip install "pkg-config is not installed"; finish; fi
prefix="$TMP/prefix"
expect_exit install 0 make -s install PREFIX="$prefix"
for f in include/edgelora.h include/edgelora-tools.h lib/libedgelora.a lib/libedgelora-tools.a bin/edgelora lib/pkgconfig/edgelora.pc lib/pkgconfig/edgelora-tools.pc; do
    [ -f "$prefix/$f" ] || fail "installed_$f"
done
# the shared library: libedgelora.so -> .so.MAJOR -> .so.VERSION, its soname the middle one, and
# it exports every function edgelora.h declares and nothing that no public header declares
version=$(sed -n 's/^#define EL_VERSION_STRING "\(.*\)"/\1/p' include/edgelora.h)
so="$prefix/lib/libedgelora.so.$version"
[ -f "$so" ] && [ "$(readlink "$prefix/lib/libedgelora.so")" = "libedgelora.so.${version%%.*}" ] &&
    [ "$(readlink "$prefix/lib/libedgelora.so.${version%%.*}")" = "libedgelora.so.$version" ] &&
    pass shared_installed || fail shared_installed "$(ls -la "$prefix/lib")"
readelf -d "$so" | grep -q "SONAME.*\[libedgelora.so.${version%%.*}\]" && pass shared_soname ||
    fail shared_soname "$(readelf -d "$so" | grep SONAME)"
declared() { sed -n 's/^[A-Za-z][A-Za-z0-9_ ]* \**\(el_[a-z0-9_]*\)(.*/\1/p' "$@" | sort -u; }
nm -D --defined-only "$so" | awk '{ print $3 }' | sort -u > "$TMP/exported"
missing=$(declared include/edgelora.h | comm -23 - "$TMP/exported")
extra=$(declared include/edgelora.h include/edgelora-tools.h | comm -13 - "$TMP/exported")
[ -z "$missing" ] && [ -z "$extra" ] && [ "$(wc -l < "$TMP/exported")" -gt 50 ] && pass shared_exports_the_api ||
    fail shared_exports_the_api "not exported: $missing" "exported but internal: $extra"
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
    # -ledgelora links the shared library, as an app links llama.cpp's
    readelf -d "$TMP/user" | grep -q "NEEDED.*libedgelora.so" && pass app_links_shared ||
        fail app_links_shared "$(readelf -d "$TMP/user" | grep NEEDED)"
    gguf="$DATA/tokenizers/ggml-vocab-llama-spm.gguf"
    if [ -f "$gguf" ]; then
        out=$(LD_LIBRARY_PATH="$prefix/lib" "$TMP/user" "$gguf")
        # "Hello world" in llama.cpp's test vectors for this vocabulary: 15043 3186
        [ "$out" = "15043 3186 " ] && pass installed_library_runs || fail installed_library_runs "got [$out]"
    fi
else
    fail pkg_config_build "$(cat "$TMP/err")"
fi

# the tools: installed as a package would stage them (DESTDIR, PREFIX=/usr/local), a program of
# edgelora-tools.h builds with `pkg-config --cflags --libs edgelora-tools` alone (which brings
# edgelora, -lm, -pthread, OpenBLAS and LAPACKE) and runs
root="$TMP/root"
expect_exit install_destdir 0 make -s install DESTDIR="$root" PREFIX=/usr/local
for f in include/edgelora.h include/edgelora-tools.h lib/libedgelora.a lib/libedgelora-tools.a; do
    [ -f "$root/usr/local/$f" ] || fail "destdir_installed_$f"
done
pc() { PKG_CONFIG_PATH="$root/usr/local/lib/pkgconfig" pkg-config --define-variable=prefix="$root/usr/local" "$@"; }
mkdir -p "$TMP/tools" && cp tests/api/describe.c "$TMP/tools/"
if flags=$(pc --cflags --libs edgelora-tools 2>"$TMP/err") &&
        cc -std=c11 -Wall -Werror -o "$TMP/tools/describe" "$TMP/tools/describe.c" $flags 2>>"$TMP/err"; then
    pass tools_pkg_config_build
    if [ -f models/base.gguf ] && "$TMP/tools/describe" models/base.gguf >"$TMP/out" 2>"$TMP/err" &&
            grep -q "llama" "$TMP/out" && grep -q "^json error: bad.json:1:7: " "$TMP/out" &&
            grep -q "^peak RSS: measured" "$TMP/out"; then
        pass tools_installed_library_runs
    else
        fail tools_installed_library_runs "$(head -c 1000 "$TMP/out")" "$(cat "$TMP/err")"
    fi
else
    fail tools_pkg_config_build "flags: $flags" "$(head -c 2000 "$TMP/err")"
fi
# the inference package alone does not bring the tools (nor OpenBLAS)
pc --libs edgelora | grep -qE 'edgelora-tools|blas|lapack' && fail inference_pc_alone "$(pc --libs edgelora)" \
    || pass inference_pc_alone
finish
