/* gemv_iq4_neon.h - the NEON gemvs of IQ4_NL (against Q8_0: neon_b32_simd.h's gemv_b32x, the
 * activation blocks' scales prepared once per call) and IQ4_XS (against Q8_K: neon_k_simd.h's
 * rows_k), both with two rows far apart sharing every activation load and the codes turned
 * into levels by a table lookup. Built by both NEON levels: gemv_iq4_neon.c (widening
 * multiplies), gemv_iq4_neon_dotprod.c (SDOT). */
#ifndef EL_KERNELS_GEMV_IQ4_NEON_H
#define EL_KERNELS_GEMV_IQ4_NEON_H

#include "kernels/neon_b32_simd.h"
#include "kernels/neon_k_simd.h"

static void rows_iq4_nl(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_b32x_any(EL_TYPE_IQ4_NL, ctx, row, s, R);
}

static void gemv_iq4_nl(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                        const void *a) {
    gemv_b32x(EL_TYPE_IQ4_NL, n, y, n_rows, w, w_stride, a, rows_iq4_nl);
}

/* A Q8_K activation row for the rows of gemv_drive (two at a time, as gemv_kquant_neon.h's). */
typedef struct iq4_xs_act {
    const el_block_q8_k *a;
    int64_t nb;
} iq4_xs_act;

static void rows_iq4_xs(const void *ctx, const char *const row[4], float s[4], int R) {
    const iq4_xs_act *act = ctx;
    if (R == 2) rows_k(EL_TYPE_IQ4_XS, row, s, 2, act->a, act->nb);
    else rows_k(EL_TYPE_IQ4_XS, row, s, 1, act->a, act->nb);
}

static void gemv_iq4_xs(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                        const void *a) {
    const iq4_xs_act act = {a, n / EL_QK_K};
    gemv_drive(n_rows, 2, w, w_stride, y, false, rows_iq4_xs, &act);
}

#endif
