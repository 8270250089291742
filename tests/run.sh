#!/usr/bin/env bash
# Runs test programs and prints "N passed, N failed, N skipped" last; exits non-zero if anything
# failed. By default: every program in $BUILD/tests and every shell test in tests/cli/.
#   PROGRAMS="a b"     run these instead
#   RUN_WITH="cmd"     run each program through cmd (e.g. qemu-aarch64 for a cross build)
#   EL_SUMMARY=FILE    also append "passed failed skipped" to FILE (make check adds them up)
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD EL_BIN="$PWD/$BUILD/edgelora"
passed=0 failed=0 skipped=0
log=$(mktemp)
for t in ${PROGRAMS:-"$BUILD"/tests/test_* tests/cli/*.sh}; do
    [ -x "$t" ] || continue
    case "$t" in *.o|*.d) continue ;; esac
    echo "== $t${RUN_WITH:+ (${RUN_WITH}${QEMU_CPU:+ -cpu $QEMU_CPU})}"
    start=$(date +%s)
    ${RUN_WITH:-} "$t" >"$log" 2>&1
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
[ -n "${EL_SUMMARY:-}" ] && echo "$passed $failed $skipped" >> "$EL_SUMMARY"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
