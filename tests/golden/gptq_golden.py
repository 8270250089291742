#!/usr/bin/env python3
"""GPTQ written the plain way in NumPy, the reference of tests/test_gptq.c.

Reads IN (written by the test): int32 rows, cols, group, kind (0: q4_0, 1: symmetric w4g),
float64 damp, then W (rows x cols float32, row-major) and H (cols x cols float64). Writes OUT:
the dequantized weight (rows x cols float64) after GPTQ as the paper states it, one column at a
time with the whole remaining matrix updated after each (no lazy blocks), scales taken from the
group's columns when its first column is reached and rounded to fp16.

usage: gptq_golden.py IN OUT
"""
import sys

import numpy as np


def scale(g, kind):
    idx = np.argmax(np.abs(g), axis=1)
    if kind == 0:
        d = g[np.arange(g.shape[0]), idx] / -8.0
    else:
        d = np.abs(g[np.arange(g.shape[0]), idx]) / 7.0
    return d.astype(np.float32).astype(np.float16).astype(np.float64)


def rnd(x, d, kind):
    safe = np.where(d == 0, 1.0, d)
    if kind == 0:
        q = np.clip(np.floor(x / safe + 8.5), 0, 15) - 8
    else:
        q = np.clip(np.rint(x / safe), -7, 7)
    return np.where(d == 0, 0.0, q * d)


def gptq(w, h, group, kind, damp):
    w = w.astype(np.float64).copy()
    h = h.copy()
    cols = w.shape[1]
    dead = np.diag(h) == 0
    mean = np.mean(np.diag(h))
    h[dead, dead] = 1
    w[:, dead] = 0
    h += damp * mean * np.eye(cols)
    u = np.linalg.cholesky(np.linalg.inv(h)).T  # upper, inv(h) = u^T u
    out = np.zeros_like(w)
    d = None
    for c in range(cols):
        if c % group == 0:
            d = scale(w[:, c:c + group], kind)
        q = rnd(w[:, c], d, kind)
        out[:, c] = q
        e = (w[:, c] - q) / u[c, c]
        w[:, c:] -= np.outer(e, u[c, c:])
    return out


def main():
    raw = open(sys.argv[1], "rb").read()
    rows, cols, group, kind = np.frombuffer(raw[:16], dtype="<i4")
    damp = np.frombuffer(raw[16:24], dtype="<f8")[0]
    off = 24
    w = np.frombuffer(raw[off:off + rows * cols * 4], dtype="<f4").reshape(rows, cols)
    off += rows * cols * 4
    h = np.frombuffer(raw[off:off + cols * cols * 8], dtype="<f8").reshape(cols, cols)
    gptq(w, h, int(group), int(kind), float(damp)).astype("<f8").tofile(sys.argv[2])


if __name__ == "__main__":
    main()
