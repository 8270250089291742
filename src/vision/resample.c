/* resample.c - halving (2 x 2 mean) and doubling (nearest) the resolution of planes. */
#include "vision/layers.h"

void el_avgpool2_forward(float *y, const float *x, int64_t P, int64_t H, int64_t W) {
    int64_t h = H / 2, w = W / 2;
    for (int64_t p = 0; p < P; p++)
        for (int64_t i = 0; i < h; i++)
            for (int64_t j = 0; j < w; j++) {
                const float *s = x + (p * H + 2 * i) * W + 2 * j;
                y[(p * h + i) * w + j] = 0.25f * (s[0] + s[1] + s[W] + s[W + 1]);
            }
}

void el_avgpool2_backward(float *dx, const float *dy, int64_t P, int64_t H, int64_t W) {
    int64_t h = H / 2, w = W / 2;
    for (int64_t p = 0; p < P; p++)
        for (int64_t i = 0; i < h; i++)
            for (int64_t j = 0; j < w; j++) {
                float *s = dx + (p * H + 2 * i) * W + 2 * j, d = 0.25f * dy[(p * h + i) * w + j];
                s[0] += d;
                s[1] += d;
                s[W] += d;
                s[W + 1] += d;
            }
}

void el_upsample2_forward(float *y, const float *x, int64_t P, int64_t H, int64_t W) {
    for (int64_t p = 0; p < P; p++)
        for (int64_t i = 0; i < 2 * H; i++)
            for (int64_t j = 0; j < 2 * W; j++)
                y[(p * 2 * H + i) * 2 * W + j] = x[(p * H + i / 2) * W + j / 2];
}

void el_upsample2_backward(float *dx, const float *dy, int64_t P, int64_t H, int64_t W) {
    for (int64_t p = 0; p < P; p++)
        for (int64_t i = 0; i < 2 * H; i++)
            for (int64_t j = 0; j < 2 * W; j++)
                dx[(p * H + i / 2) * W + j / 2] += dy[(p * 2 * H + i) * 2 * W + j];
}
