/* dot_legacy_neon.h - the NEON dot products of Q4_1, Q5_1 (against Q8_1) and Q5_0 (against
 * Q8_0): one row of neon_b32_simd.h's gemv (its activation blocks prepared as it goes, slice
 * by slice), built by both NEON levels (dot_legacy_neon.c, dot_legacy_neon_dotprod.c).
 * Included only from those two files, inside their aarch64 guard. */
#ifndef EL_KERNELS_DOT_LEGACY_NEON_H
#define EL_KERNELS_DOT_LEGACY_NEON_H

#include "kernels/neon_b32_simd.h"

static void dot_rows_q4_1(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_b32x_any(EL_TYPE_Q4_1, ctx, row, s, R);
}

static void dot_rows_q5_0(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_b32x_any(EL_TYPE_Q5_0, ctx, row, s, R);
}

static void dot_rows_q5_1(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_b32x_any(EL_TYPE_Q5_1, ctx, row, s, R);
}

static void vec_dot_q4_1(int64_t n, float *s, const void *x, const void *y) {
    gemv_b32x(EL_TYPE_Q4_1, n, s, 1, x, 0, y, dot_rows_q4_1);
}

static void vec_dot_q5_0(int64_t n, float *s, const void *x, const void *y) {
    gemv_b32x(EL_TYPE_Q5_0, n, s, 1, x, 0, y, dot_rows_q5_0);
}

static void vec_dot_q5_1(int64_t n, float *s, const void *x, const void *y) {
    gemv_b32x(EL_TYPE_Q5_1, n, s, 1, x, 0, y, dot_rows_q5_1);
}

#endif
