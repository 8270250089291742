/* gemv_legacy_neon.h - the NEON gemvs of Q4_1, Q5_1 (against Q8_1) and Q5_0 (against Q8_0),
 * neon_b32_simd.h's gemv_b32x: two rows far apart sharing every activation load, the
 * activation blocks' scales (and Q8_1's sums, Q5_0's offsets) prepared once per call. Built by
 * both NEON levels: gemv_legacy_neon.c (widening multiplies), gemv_legacy_neon_dotprod.c (SDOT). */
#ifndef EL_KERNELS_GEMV_LEGACY_NEON_H
#define EL_KERNELS_GEMV_LEGACY_NEON_H

#include "kernels/neon_b32_simd.h"

static void rows_q4_1(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_b32x_any(EL_TYPE_Q4_1, ctx, row, s, R);
}

static void rows_q5_0(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_b32x_any(EL_TYPE_Q5_0, ctx, row, s, R);
}

static void rows_q5_1(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_b32x_any(EL_TYPE_Q5_1, ctx, row, s, R);
}

static void gemv_q4_1(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    gemv_b32x(EL_TYPE_Q4_1, n, y, n_rows, w, w_stride, a, rows_q4_1);
}

static void gemv_q5_0(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    gemv_b32x(EL_TYPE_Q5_0, n, y, n_rows, w, w_stride, a, rows_q5_0);
}

static void gemv_q5_1(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    gemv_b32x(EL_TYPE_Q5_1, n, y, n_rows, w, w_stride, a, rows_q5_1);
}

#endif
