#!/bin/sh
# Compares two edgelora builds by alternating their `bench` runs in one sitting (A, B, A, B ...),
# since this VM's memory changes speed between and within runs; prints, for each model and thread
# count, the median and range of generation and prompt tokens/s and of generation's fraction of
# its bound, for A and for B.
#   bench/alternate.sh OLD_BIN NEW_BIN "MODEL..." ["THREADS..."] [ROUNDS] [-- BENCH_ARGS]
# e.g. bench/alternate.sh /tmp/old/edgelora build/edgelora "q4_0.gguf q8_0.gguf" "1 2" 3
set -eu
[ $# -ge 3 ] || { sed -n '2,7p' "$0"; exit 2; }
a=$1 b=$2 models=$3 threads=${4:-1} rounds=${5:-3}
shift $(( $# < 5 ? $# : 5 ))
[ "${1:-}" = "--" ] && shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for m in $models; do
    for t in $threads; do
        i=0
        while [ $i -lt "$rounds" ]; do
            for which in A B; do
                bin=$a; [ $which = B ] && bin=$b
                printf '%s %s %s ' "$which" "$(basename "$m")" "$t" >> "$out"
                "$bin" bench -m "$m" -t "$t" -r 1 -p 128 -n 32 "$@" --json | tr -d '\n' >> "$out"
                echo >> "$out"
            done
            i=$((i + 1))
        done
    done
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    which, model, t, js = line.split(" ", 3)
    r = json.loads(js)
    rows.setdefault((model, t, which), []).append(r)
def fmt(v):
    return "%.1f (%.1f-%.1f)" % (statistics.median(v), min(v), max(v))
print("%-22s %2s %s  %-20s %-20s %s" % ("model", "t", "run", "tg tok/s", "pp tok/s", "fraction"))
for (model, t, which), rs in sorted(rows.items()):
    print("%-22s %2s  %s   %-20s %-20s %.2f (%.2f-%.2f)" % (
        model, t, which, fmt([r["tg_tokens_per_s"] for r in rs]),
        fmt([r["pp_tokens_per_s"] for r in rs]),
        statistics.median([r["fraction_of_bound"] for r in rs]),
        min(r["fraction_of_bound"] for r in rs), max(r["fraction_of_bound"] for r in rs)))
PY
