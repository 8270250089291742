/* embed.c - the timestep's sinusoidal embedding and the dense layers of its MLP. */
#include "vision/layers.h"

#include <cblas.h>
#include <math.h>

void el_timestep_embedding(float *e, const int32_t *t, int64_t B, int64_t D) {
    int64_t half = D / 2;
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < half; i++) {
            double f = exp(-log(10000.0) * (double)i / (double)half), a = (double)t[b] * f;
            e[b * D + i] = (float)sin(a);
            e[b * D + half + i] = (float)cos(a);
        }
}

void el_dense_forward(float *y, const float *x, const float *w, const float *b, int64_t N,
                      int64_t in, int64_t out) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)out, (int)in, 1.0f, x,
                (int)in, w, (int)in, 0.0f, y, (int)out);
    if (b)
        for (int64_t r = 0; r < N; r++)
            for (int64_t o = 0; o < out; o++) y[r * out + o] += b[o];
}

void el_dense_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                       const float *w, int64_t N, int64_t in, int64_t out) {
    if (dx) /* dx [N][in] += dy [N][out] w [out][in] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)in, (int)out, 1.0f, dy,
                    (int)out, w, (int)in, 1.0f, dx, (int)in);
    if (dw) /* dw [out][in] += dy^T [out][N] x [N][in] */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)out, (int)in, (int)N, 1.0f, dy,
                    (int)out, x, (int)in, 1.0f, dw, (int)in);
    if (db)
        for (int64_t r = 0; r < N; r++)
            for (int64_t o = 0; o < out; o++) db[o] += dy[r * out + o];
}
