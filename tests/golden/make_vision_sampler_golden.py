#!/usr/bin/python3
"""make_vision_sampler_golden.py - golden runs of the image samplers (src/vision/sample.h) for
tests/test_vision_sampler.c, in NumPy float64, written from the papers: DDPM's linear schedule
and posterior q(x_{t-1} | x_t, x_0) (Ho et al. 2020, eq. 6-7), DDIM with eta = 0 (Song et al.
2021, eq. 12), both with the predicted x_0 clipped to [-1, 1].

The noise predictor is a fixed function both sides compute, eps(x, t) = tanh(0.7 x + 0.01 t -
0.2), so the comparison is of the samplers alone, on the same starting noise (and, for DDPM,
the same per-step noise z, written here).

vision_sampler.bin, little-endian: "ELVS", u32 version (1), i32 T (20), i32 n_img (2), f32 beta_1,
beta_T, then arrays each as u32 count + f32 values:
  abar [T]; x_T [n_img][784]; DDIM timesteps of 5 steps [5]; DDIM 5 steps result;
  DDIM 20 steps result; z [T-1][n_img][784] (for t = T-1 .. 1); DDPM result.
"""
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
T, N_IMG, B1, BT = 20, 2, 1e-3, 0.3
PIX = 784


def eps_fn(x, t):
    return np.tanh(0.7 * x + 0.01 * t - 0.2)


def main():
    rng = np.random.default_rng(2024)
    beta = np.linspace(B1, BT, T)
    abar = np.cumprod(1.0 - beta)
    # drawn in float32, as the C side reads them
    xT = rng.standard_normal((N_IMG, PIX)).astype(np.float32).astype(np.float64)

    def ddim(n_steps):
        ts = [(n_steps - 1 - i) * T // n_steps for i in range(n_steps)]
        x = xT.copy()
        for i, t in enumerate(ts):
            e = eps_fn(x, t)
            ap = abar[ts[i + 1]] if i + 1 < n_steps else 1.0
            x0 = np.clip((x - np.sqrt(1 - abar[t]) * e) / np.sqrt(abar[t]), -1, 1)
            e = (x - np.sqrt(abar[t]) * x0) / np.sqrt(1 - abar[t])
            x = np.sqrt(ap) * x0 + np.sqrt(1 - ap) * e
        return ts, x

    ts5, x5 = ddim(5)
    _, x20 = ddim(20)

    z = rng.standard_normal((T - 1, N_IMG, PIX)).astype(np.float32).astype(np.float64)
    x = xT.copy()
    for t in range(T - 1, -1, -1):
        e = eps_fn(x, t)
        ap = abar[t - 1] if t > 0 else 1.0
        x0 = np.clip((x - np.sqrt(1 - abar[t]) * e) / np.sqrt(abar[t]), -1, 1)
        mean = (np.sqrt(ap) * beta[t] / (1 - abar[t])) * x0 + \
               (np.sqrt(1 - beta[t]) * (1 - ap) / (1 - abar[t])) * x
        if t > 0:
            var = (1 - ap) / (1 - abar[t]) * beta[t]
            mean = mean + np.sqrt(var) * z[T - 1 - t]
        x = mean

    out = [b"ELVS", struct.pack("<Iiiff", 1, T, N_IMG, B1, BT)]
    for a in (abar, xT, np.array(ts5, dtype=np.float64), x5, x20, z, x):
        a = np.ascontiguousarray(a, dtype="<f4").ravel()
        out.append(struct.pack("<I", a.size))
        out.append(a.tobytes())
    with open(os.path.join(HERE, "vision_sampler.bin"), "wb") as fh:
        fh.write(b"".join(out))


if __name__ == "__main__":
    main()
