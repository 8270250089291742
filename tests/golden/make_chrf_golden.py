#!/usr/bin/env python3
"""make_chrf_golden.py - expected chrF statistics and scores for tests/test_eval_metrics.c.

Written from the definition (Popovic 2015, "chrF: character n-gram F-score for automatic MT
evaluation"; sacreBLEU 2.x's defaults: character n-grams 1..6, whitespace removed, beta 2, no
epsilon smoothing), not from any implementation, and independent of the C code: Python strings
are sequences of Unicode characters and n-grams are counted with collections.Counter.

Reads chrf_pairs.tsv (hypothesis TAB reference, one pair a line) and writes chrf_golden.txt:
one line per pair "sentence CHRF h1 r1 m1 ... h6 r6 m6" (n-grams of the hypothesis, of the
reference, and matched, per order), then "corpus CHRF" for the statistics summed over all pairs.
    python3 tests/golden/make_chrf_golden.py
"""
import os
from collections import Counter

ORDER, BETA = 6, 2.0


def stats(hyp, ref):
    hyp, ref = "".join(hyp.split()), "".join(ref.split())  # str.split: Unicode whitespace
    out = []
    for n in range(1, ORDER + 1):
        h = Counter(hyp[i:i + n] for i in range(len(hyp) - n + 1))
        r = Counter(ref[i:i + n] for i in range(len(ref) - n + 1))
        out += [sum(h.values()), sum(r.values()), sum((h & r).values())]
    return out


def chrf(st):
    precisions, recalls = [], []
    for n in range(ORDER):
        h, r, m = st[3 * n:3 * n + 3]
        if h > 0 and r > 0:  # only orders with n-grams on both sides count
            precisions.append(m / h)
            recalls.append(m / r)
    if not precisions:
        return 0.0
    p, r = sum(precisions) / len(precisions), sum(recalls) / len(recalls)
    if p + r == 0:
        return 0.0
    b2 = BETA * BETA
    return 100.0 * (1 + b2) * p * r / (b2 * p + r)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "chrf_pairs.tsv"), encoding="utf-8") as f:
        pairs = [line.rstrip("\n").split("\t") for line in f if line.strip("\n")]
    total = [0] * (3 * ORDER)
    lines = []
    for hyp, ref in pairs:
        st = stats(hyp, ref)
        total = [a + b for a, b in zip(total, st)]
        lines.append("sentence %.12f %s" % (chrf(st), " ".join(map(str, st))))
    lines.append("corpus %.12f" % chrf(total))
    with open(os.path.join(here, "chrf_golden.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
