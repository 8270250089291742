/* fakequant.c - fake quantization and its straight-through gradients (see fakequant.h). The
 * values come from the run-time quantizers themselves, so training and the exported integer
 * model cannot drift apart. */
#include "train/fakequant.h"

#include <math.h>

#include "kernels/edge.h"

/* The W4 quantizer's arithmetic (edge_ref.c): d = amax / 7, q = round(w * (1 / d)) in -7..7;
 * test_qat holds the two to the same bits. */
void el_fq_int4_rows(float *y, const float *w, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) {
        const float *wr = w + r * n;
        float d = el_fq_absmax(wr, n) / 7.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
        for (int64_t i = 0; i < n; i++) {
            long q = lrintf(wr[i] * id);
            y[r * n + i] = d * (float)(q < -7 ? -7 : q > 7 ? 7 : q);
        }
    }
}

void el_fq_int8(float *y, const float *x, int64_t n, float d) {
    enum { CHUNK = 256 };
    int8_t q[CHUNK];
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        el_i8_quantize(x + i, q, m, d);
        for (int64_t j = 0; j < m; j++) y[i + j] = d * (float)q[j];
    }
}

int el_fq_int8_clipped(float x, float d) { return fabsf(rintf(x * (1.0f / d))) > 127.0f; }

void el_fq_int8_backward(float *dx, const float *dy, const float *x, int64_t n, float d) {
    for (int64_t i = 0; i < n; i++)
        if (!el_fq_int8_clipped(x[i], d)) dx[i] += dy[i];
}

float el_fq_absmax(const float *x, int64_t n) {
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++) m = fmaxf(m, fabsf(x[i]));
    return m;
}
