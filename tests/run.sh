#!/usr/bin/env bash
# Runs every test program in $BUILD/tests and every shell test in tests/cli/, and ends with the
# line "N passed, N failed, N skipped". Exits non-zero if anything failed.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD EL_BIN="$PWD/$BUILD/edgelora"
passed=0 failed=0 skipped=0
log=$(mktemp)
for t in "$BUILD"/tests/test_* tests/cli/*.sh; do
    [ -x "$t" ] || continue
    case "$t" in *.o|*.d) continue ;; esac
    echo "== $t"
    start=$(date +%s)
    "$t" >"$log" 2>&1
    rc=$?
    cat "$log"
    p=$(grep -c '^PASS ' "$log") f=$(grep -c '^FAIL ' "$log") s=$(grep -c '^SKIP ' "$log")
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $t exited with status $rc"
        f=1
    fi
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    echo "   ($(( $(date +%s) - start )) s)"
done
rm -f "$log"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
