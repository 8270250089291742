/* dot_iq4_neon.h - the NEON dot products of IQ4_NL (against Q8_0: one row of neon_b32_simd.h's
 * gemv) and IQ4_XS (against Q8_K: one row of neon_k_simd.h's rows_k), built by both NEON
 * levels (dot_iq4_neon.c, dot_iq4_neon_dotprod.c). Included only from those two files, inside
 * their aarch64 guard. */
#ifndef EL_KERNELS_DOT_IQ4_NEON_H
#define EL_KERNELS_DOT_IQ4_NEON_H

#include "kernels/neon_b32_simd.h"
#include "kernels/neon_k_simd.h"

static void dot_rows_iq4_nl(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_b32x_any(EL_TYPE_IQ4_NL, ctx, row, s, R);
}

static void vec_dot_iq4_nl(int64_t n, float *s, const void *x, const void *y) {
    gemv_b32x(EL_TYPE_IQ4_NL, n, s, 1, x, 0, y, dot_rows_iq4_nl);
}

static void vec_dot_iq4_xs(int64_t n, float *s, const void *x, const void *y) {
    const char *const row[4] = {x};
    rows_k(EL_TYPE_IQ4_XS, row, s, 1, y, n / EL_QK_K);
}

#endif
