/* dot_kquant_neon.h - the NEON dot products of Q2_K, Q3_K and Q5_K against Q8_K: one row of
 * neon_k_simd.h's rows_k, built by both NEON levels (dot_kquant_neon.c, widening multiplies;
 * dot_kquant_neon_dotprod.c, SDOT). Included only from those two files, inside their aarch64
 * guard. */
#ifndef EL_KERNELS_DOT_KQUANT_NEON_H
#define EL_KERNELS_DOT_KQUANT_NEON_H

#include "kernels/neon_k_simd.h"

static void vec_dot_q2_k(int64_t n, float *s, const void *x, const void *y) {
    const char *const row[4] = {x};
    rows_k(EL_TYPE_Q2_K, row, s, 1, y, n / EL_QK_K);
}

static void vec_dot_q3_k(int64_t n, float *s, const void *x, const void *y) {
    const char *const row[4] = {x};
    rows_k(EL_TYPE_Q3_K, row, s, 1, y, n / EL_QK_K);
}

static void vec_dot_q5_k(int64_t n, float *s, const void *x, const void *y) {
    const char *const row[4] = {x};
    rows_k(EL_TYPE_Q5_K, row, s, 1, y, n / EL_QK_K);
}

#endif
