/* attention.c - one-head self-attention over the positions of an image (the UNet's lowest
 * resolution), channel-major so that q, k and v come straight from 1 x 1 convolutions. */
#include "vision/layers.h"

#include <cblas.h>
#include <math.h>

void el_spatial_attention_forward(float *out, float *p, const float *q, const float *k,
                                  const float *v, int64_t B, int64_t C, int64_t N) {
    float scale = 1.0f / sqrtf((float)C);
    for (int64_t b = 0; b < B; b++) {
        const float *qb = q + b * C * N, *kb = k + b * C * N, *vb = v + b * C * N;
        float *pb = p + b * N * N;
        /* s [N][N] = q^T [N][C] k [C][N] / sqrt(C) */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)N, (int)N, (int)C, scale, qb,
                    (int)N, kb, (int)N, 0.0f, pb, (int)N);
        for (int64_t i = 0; i < N; i++) {
            float *row = pb + i * N, mx = row[0], sum = 0.0f;
            for (int64_t j = 1; j < N; j++)
                if (row[j] > mx) mx = row[j];
            for (int64_t j = 0; j < N; j++) sum += row[j] = expf(row[j] - mx);
            for (int64_t j = 0; j < N; j++) row[j] /= sum;
        }
        /* out [C][N] = v [C][N] p^T [N][N] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)C, (int)N, (int)N, 1.0f, vb,
                    (int)N, pb, (int)N, 0.0f, out + b * C * N, (int)N);
    }
}

void el_spatial_attention_backward(float *dq, float *dk, float *dv, float *ds, const float *dout,
                                   const float *p, const float *q, const float *k, const float *v,
                                   int64_t B, int64_t C, int64_t N) {
    float scale = 1.0f / sqrtf((float)C);
    for (int64_t b = 0; b < B; b++) {
        const float *qb = q + b * C * N, *kb = k + b * C * N, *vb = v + b * C * N;
        const float *pb = p + b * N * N, *db = dout + b * C * N;
        /* dv [C][N] += dout [C][N] p [N][N] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)C, (int)N, (int)N, 1.0f, db,
                    (int)N, pb, (int)N, 1.0f, dv + b * C * N, (int)N);
        /* dp [N][N] = dout^T [N][C] v [C][N], then through the softmax:
         * ds = p (dp - sum_j p dp) */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)N, (int)N, (int)C, 1.0f, db,
                    (int)N, vb, (int)N, 0.0f, ds, (int)N);
        for (int64_t i = 0; i < N; i++) {
            const float *pr = pb + i * N;
            float *dr = ds + i * N, dot = 0.0f;
            for (int64_t j = 0; j < N; j++) dot += pr[j] * dr[j];
            for (int64_t j = 0; j < N; j++) dr[j] = pr[j] * (dr[j] - dot);
        }
        /* dq [C][N] += k [C][N] ds^T / sqrt(C); dk [C][N] += q [C][N] ds / sqrt(C) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)C, (int)N, (int)N, scale, kb,
                    (int)N, ds, (int)N, 1.0f, dq + b * C * N, (int)N);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)C, (int)N, (int)N, scale, qb,
                    (int)N, ds, (int)N, 1.0f, dk + b * C * N, (int)N);
    }
}
