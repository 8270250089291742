#!/usr/bin/python3
"""make_vision_metrics_golden.py - golden values of the image metrics (src/vision/metrics.c) for
tests/test_vision_metrics.c, from NumPy in float64, written from the definitions:

- PSNR: 10 log10(255^2 / MSE) over all pixels, and over the masked ones;
- SSIM (Wang et al. 2004): the 11-tap Gaussian (sigma 1.5) applied as two separable 'valid'
  convolutions (np.convolve), local means, variances and covariance from the filtered images and
  products, the SSIM map averaged;
- the Frechet distance: |mu_a - mu_b|^2 + tr(S_a) + tr(S_b) - 2 sum sqrt(eigvals(S_a S_b)), the
  eigenvalues of the (non-symmetric) product by np.linalg.eigvals, where the C code takes those of
  the symmetric sqrt(S_a) S_b sqrt(S_a) from LAPACK.

vision_metrics.bin, little-endian: "ELVM", u32 version 1, u32 number of image pairs, then per
pair u32 w, u32 h, w*h bytes a, b, mask, f64 psnr, psnr over the mask, ssim; then u32 number of
feature cases, per case u32 na, nb, dim, f32 fa [na][dim], fb [nb][dim], f64 distance.
Deterministic: the same file every time.
"""
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)


def gaussian():
    d = np.arange(11) - 5
    g = np.exp(-d * d / (2 * 1.5 * 1.5))
    return g / g.sum()


def filt(img):
    g = gaussian()
    rows = np.array([np.convolve(r, g, mode="valid") for r in img])
    return np.array([np.convolve(c, g, mode="valid") for c in rows.T]).T


def ssim(a, b):
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    ma, mb = filt(a), filt(b)
    vaa = filt(a * a) - ma * ma
    vbb = filt(b * b) - mb * mb
    vab = filt(a * b) - ma * mb
    m = (2 * ma * mb + c1) * (2 * vab + c2) / ((ma * ma + mb * mb + c1) * (vaa + vbb + c2))
    return m.mean()


def psnr(a, b, mask=None):
    d = a.astype(np.float64) - b.astype(np.float64)
    if mask is not None:
        d = d[mask != 0]
    mse = np.mean(d * d)
    return np.inf if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def blobs(h, w):
    """A digit-like image: smoothed noise, thresholded into strokes with soft edges."""
    x = rng.standard_normal((h, w))
    k = np.ones(3) / 3
    for _ in range(2):
        x = np.array([np.convolve(r, k, mode="same") for r in x])
        x = np.array([np.convolve(c, k, mode="same") for c in x.T]).T
    return np.clip((x - 0.1) * 900, 0, 255).astype(np.uint8)


def pairs():
    a = blobs(28, 28)
    noisy = np.clip(a.astype(int) + rng.integers(-40, 41, a.shape), 0, 255).astype(np.uint8)
    shifted = np.roll(a, 2, axis=1)
    flat = np.zeros((28, 28), np.uint8)
    c = blobs(16, 20)
    d = np.clip(c.astype(int) + rng.integers(-90, 91, c.shape), 0, 255).astype(np.uint8)
    out = []
    for x, y in ((a, noisy), (a, shifted), (flat, flat), (c, d)):
        h, w = x.shape
        mask = np.zeros_like(x)
        mask[h // 4: h // 4 + h // 2, w // 3: w // 3 + w // 2] = 1
        out.append((x, y, mask))
    return out


def frechet(fa, fb):
    fa = fa.astype(np.float64)
    fb = fb.astype(np.float64)
    sa, sb = np.cov(fa, rowvar=False), np.cov(fb, rowvar=False)
    ev = np.linalg.eigvals(sa @ sb)
    cross = np.sqrt(np.clip(ev.real, 0, None)).sum()
    d = fa.mean(0) - fb.mean(0)
    return float(d @ d + np.trace(sa) + np.trace(sb) - 2 * cross)


def features():
    dim = 6
    mix = rng.standard_normal((dim, dim))
    fa = (rng.standard_normal((50, dim)) @ mix).astype(np.float32)
    fb = (rng.standard_normal((40, dim)) @ (mix + 0.3 * rng.standard_normal((dim, dim))) +
          0.5).astype(np.float32)
    return [(fa, fb), (fa, fa.copy())]


def main():
    out = bytearray(b"ELVM") + struct.pack("<I", 1)
    ps = pairs()
    out += struct.pack("<I", len(ps))
    for a, b, mask in ps:
        h, w = a.shape
        out += struct.pack("<II", w, h) + a.tobytes() + b.tobytes() + mask.tobytes()
        out += struct.pack("<ddd", psnr(a, b), psnr(a, b, mask), ssim(a, b))
    fs = features()
    out += struct.pack("<I", len(fs))
    for fa, fb in fs:
        out += struct.pack("<III", fa.shape[0], fb.shape[0], fa.shape[1])
        out += fa.tobytes() + fb.tobytes() + struct.pack("<d", frechet(fa, fb))
    with open(os.path.join(HERE, "vision_metrics.bin"), "wb") as f:
        f.write(out)


if __name__ == "__main__":
    main()
