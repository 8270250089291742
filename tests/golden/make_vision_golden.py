#!/usr/bin/python3
"""make_vision_golden.py - golden forward and backward values of the image model's layers
(src/vision/layers.h) for tests/test_vision_layers.c, from NumPy in float64.

Written from the definitions, not from the C code: the convolution is a sum over kernel offsets
of shifted, zero-padded images (no im2col), its input gradient the same sum with the kernel
flipped; group norm's gradient comes from the Jacobian of the normalization written out per
group; the attention's from the softmax Jacobian diag(p) - p p^T.

vision_layers.bin, little-endian: "ELVG", u32 version (1), then for each case in the order
below, each array as u32 count followed by that many f32:
  conv3   (B=2 cin=3 cout=4 H=5 W=6 k=3): x w b dy | y dx dw db
  conv1   (B=2 cin=3 cout=2 H=4 W=3 k=1): x w b dy | y dx dw db
  gnorm   (B=2 C=6 HW=5 G=3 eps=1e-5):    x g b dy | y dx dg db
  silu    (n=11):                         x dy | y dx
  pool    (P=3 H=4 W=6):                  x dy | y dx
  up      (P=3 H=2 W=3):                  x dy | y dx
  attn    (B=2 C=4 N=6):                  q k v dout | out dq dk dv
  temb    (B=3 D=8, t = 0 17 999):        e
  dense   (N=3 in=5 out=4):               x w b dy | y dx dw db
Deterministic: the same file every time.
"""
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(24)


def rand(*shape):
    return rng.standard_normal(shape)


def conv(x, w, b):
    B, cin, H, W = x.shape
    cout, _, k, _ = w.shape
    r = k // 2
    xp = np.pad(x, ((0, 0), (0, 0), (r, r), (r, r)))
    y = np.zeros((B, cout, H, W)) + b[None, :, None, None]
    for ky in range(k):
        for kx in range(k):
            y += np.einsum("oc,bchw->bohw", w[:, :, ky, kx], xp[:, :, ky:ky + H, kx:kx + W])
    return y


def conv_grads(x, w, dy):
    B, cin, H, W = x.shape
    k = w.shape[2]
    r = k // 2
    xp = np.pad(x, ((0, 0), (0, 0), (r, r), (r, r)))
    dw = np.zeros_like(w)
    for ky in range(k):
        for kx in range(k):
            dw[:, :, ky, kx] = np.einsum("bohw,bchw->oc", dy, xp[:, :, ky:ky + H, kx:kx + W])
    # dx is the convolution of dy with the flipped, transposed kernel
    wf = np.flip(w, (2, 3)).transpose(1, 0, 2, 3)
    dx = conv(dy, wf, np.zeros(cin))
    return dx, dw, dy.sum((0, 2, 3))


def gnorm(x, g, b, G, eps):
    B, C, HW = x.shape
    xs = x.reshape(B, G, -1)
    mu = xs.mean(-1, keepdims=True)
    var = ((xs - mu) ** 2).mean(-1, keepdims=True)
    xh = ((xs - mu) / np.sqrt(var + eps)).reshape(B, C, HW)
    return xh * g[None, :, None] + b[None, :, None], xh, var


def gnorm_grads(x, g, dy, G, eps):
    B, C, HW = x.shape
    _, xh, var = gnorm(x, g, np.zeros(C), G, eps)
    n = C // G * HW
    dx = np.zeros_like(x)
    dxh = (dy * g[None, :, None]).reshape(B, G, n)
    xhg = xh.reshape(B, G, n)
    for bi in range(B):
        for j in range(G):
            # J[a][c] = d xh_a / d x_c = (delta_ac - 1/n - xh_a xh_c / n) / sigma
            s = np.sqrt(var[bi, j, 0] + eps)
            J = (np.eye(n) - 1.0 / n - np.outer(xhg[bi, j], xhg[bi, j]) / n) / s
            dx.reshape(B, G, n)[bi, j] = J.T @ dxh[bi, j]
    return dx, (dy * xh).sum((0, 2)), dy.sum((0, 2))


def silu(x):
    return x / (1 + np.exp(-x))


def attn(q, k, v):
    C = q.shape[1]
    s = np.einsum("bci,bcj->bij", q, k) / np.sqrt(C)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bij,bcj->bci", p, v), p


def attn_grads(q, k, v, dout):
    C = q.shape[1]
    _, p = attn(q, k, v)
    dv = np.einsum("bci,bij->bcj", dout, p)
    dp = np.einsum("bci,bcj->bij", dout, v)
    ds = np.zeros_like(p)
    for b in range(p.shape[0]):
        for i in range(p.shape[1]):
            J = np.diag(p[b, i]) - np.outer(p[b, i], p[b, i])
            ds[b, i] = J @ dp[b, i]
    dq = np.einsum("bij,bcj->bci", ds, k) / np.sqrt(C)
    dk = np.einsum("bij,bci->bcj", ds, q) / np.sqrt(C)
    return dq, dk, dv


def main():
    out = [b"ELVG", struct.pack("<I", 1)]

    def put(*arrs):
        for a in arrs:
            a = np.ascontiguousarray(a, dtype="<f4").ravel()
            out.append(struct.pack("<I", a.size))
            out.append(a.tobytes())

    for B, cin, cout, H, W, k in ((2, 3, 4, 5, 6, 3), (2, 3, 2, 4, 3, 1)):
        x, w, b, dy = rand(B, cin, H, W), rand(cout, cin, k, k), rand(cout), rand(B, cout, H, W)
        put(x, w, b, dy, conv(x, w, b), *conv_grads(x, w, dy))

    B, C, HW, G, eps = 2, 6, 5, 3, 1e-5
    x, g, b, dy = rand(B, C, HW) * 2 + 1, rand(C), rand(C), rand(B, C, HW)
    put(x, g, b, dy, gnorm(x, g, b, G, eps)[0], *gnorm_grads(x, g, dy, G, eps))

    x, dy = rand(11) * 3, rand(11)
    sg = 1 / (1 + np.exp(-x))
    put(x, dy, silu(x), dy * (sg + x * sg * (1 - sg)))

    P, H, W = 3, 4, 6
    x, dy = rand(P, H, W), rand(P, H // 2, W // 2)
    pooled = x.reshape(P, H // 2, 2, W // 2, 2).mean((2, 4))
    put(x, dy, pooled, np.repeat(np.repeat(dy, 2, 1), 2, 2) / 4)

    P, H, W = 3, 2, 3
    x, dy = rand(P, H, W), rand(P, 2 * H, 2 * W)
    put(x, dy, np.repeat(np.repeat(x, 2, 1), 2, 2), dy.reshape(P, H, 2, W, 2).sum((2, 4)))

    B, C, N = 2, 4, 6
    q, k, v, dout = rand(B, C, N), rand(B, C, N), rand(B, C, N), rand(B, C, N)
    put(q, k, v, dout, attn(q, k, v)[0], *attn_grads(q, k, v, dout))

    t, D = np.array([0, 17, 999], dtype=np.float64), 8
    f = 10000.0 ** (-np.arange(D // 2) / (D // 2))
    put(np.concatenate([np.sin(np.outer(t, f)), np.cos(np.outer(t, f))], 1))

    N, nin, nout = 3, 5, 4
    x, w, b, dy = rand(N, nin), rand(nout, nin), rand(nout), rand(N, nout)
    put(x, w, b, dy, x @ w.T + b, dy @ w, dy.T @ x, dy.sum(0))

    with open(os.path.join(HERE, "vision_layers.bin"), "wb") as fh:
        fh.write(b"".join(out))


if __name__ == "__main__":
    main()
