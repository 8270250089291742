# lib.sh - helpers for the shell tests of the edgelora program. Each check prints one line
# "PASS name", "FAIL name" or "SKIP name" (tests/run.sh counts them); the script exits non-zero
# if any check failed.
EL=${EL_BIN:-build/edgelora}
DATA=${EL_DATA_DIR:-../shared/data}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n_fail=0
# a copy of the program with no default model beside it (for "no model given" errors)
mkdir -p "$TMP/bin" && cp "$EL" "$TMP/bin/edgelora" 2>/dev/null
EL_NODEFAULT="$TMP/bin/edgelora"

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; shift; for line in "$@"; do echo "  $line"; done; n_fail=$((n_fail + 1)); }
skip() { echo "SKIP $1"; echo "  skipped: $2"; }
finish() { [ "$n_fail" -eq 0 ]; exit $?; }

# expect_exit NAME CODE CMD...: runs CMD, checks its exit code, keeps stdout/stderr in $TMP/out, $TMP/err
expect_exit() {
    local name=$1 code=$2
    shift 2
    "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    if [ "$rc" -eq "$code" ]; then pass "$name"; else fail "$name" "exit $rc, expected $code: $*" "$(head -c 500 "$TMP/err")"; fi
}
