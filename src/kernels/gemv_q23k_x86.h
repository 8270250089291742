/* gemv_q23k_x86.h - the gemvs (decode) and multi-row gemvs (2-3 activation rows) of Q2_K and
 * Q3_K against Q8_K: the rows of q23k_x86.h, side by side as gemv_drive picks them (rows far
 * apart, each its own stream). Compiled by gemv_q23k_avx2.c and gemv_q23k_avx512.c, whose
 * flags make q23k_x86.h's products vpmaddubsw or vpdpbusd ones. */
#ifndef EL_KERNELS_GEMV_Q23K_X86_H
#define EL_KERNELS_GEMV_Q23K_X86_H

#include "kernels/gemv_drive.h"
#include "kernels/q23k_x86.h"

/* What the rows of a gemv share: its activation rows and their length. */
typedef struct q23k_acts {
    const el_block_q8_k *b[EL_GEMV_MULTI_MAX];
    int64_t n;
} q23k_acts;

static inline __attribute__((always_inline)) void rows_one(el_type type, const void *ctx,
                                                           const char *const row[4], float s[4],
                                                           int R) {
    const q23k_acts *qa = ctx;
    float t[EL_GEMV_MULTI_MAX][4];
    q23k_rows(type, qa->n / EL_QK_K, row, R, qa->b, 1, t);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = t[0][r];
}

static inline __attribute__((always_inline)) void rows_multi(el_type type, const void *ctx,
                                                             const char *const row[2],
                                                             float s[][2], int R, int A) {
    const q23k_acts *qa = ctx;
    float t[EL_GEMV_MULTI_MAX][4];
    q23k_rows(type, qa->n / EL_QK_K, row, R, qa->b, A, t);
    for (int a = 0; a < A; a++)
        for (int r = 0; r < R; r++) s[a][r] = t[a][r];
}

static inline __attribute__((always_inline)) void rows_q2_k(const void *ctx, const char *const row[4],
                                                            float s[4], int R) {
    rows_one(EL_TYPE_Q2_K, ctx, row, s, R);
}

static inline __attribute__((always_inline)) void rows_q3_k(const void *ctx, const char *const row[4],
                                                            float s[4], int R) {
    rows_one(EL_TYPE_Q3_K, ctx, row, s, R);
}

static inline __attribute__((always_inline)) void rows_q2_k_multi(const void *ctx,
                                                                  const char *const row[2],
                                                                  float s[][2], int R, int A) {
    rows_multi(EL_TYPE_Q2_K, ctx, row, s, R, A);
}

static inline __attribute__((always_inline)) void rows_q3_k_multi(const void *ctx,
                                                                  const char *const row[2],
                                                                  float s[][2], int R, int A) {
    rows_multi(EL_TYPE_Q3_K, ctx, row, s, R, A);
}

static q23k_acts acts_of(int64_t n, const void *a, size_t a_stride) {
    return (q23k_acts){{a, (const void *)((const char *)a + a_stride),
                        (const void *)((const char *)a + 2 * a_stride)},
                       n};
}

static void gemv_q2_k(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    q23k_acts qa = acts_of(n, a, 0);
    int R = gemv_company(w_stride, el_row_size(EL_TYPE_Q8_K, n));
    gemv_drive(n_rows, R, w, w_stride, y, false, rows_q2_k, &qa);
}

static void gemv_q3_k(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    q23k_acts qa = acts_of(n, a, 0);
    int R = gemv_company(w_stride, el_row_size(EL_TYPE_Q8_K, n));
    gemv_drive(n_rows, R, w, w_stride, y, false, rows_q3_k, &qa);
}

static void gemv_q2_k_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                            const void *w, size_t w_stride, const void *a, size_t a_stride) {
    q23k_acts qa = acts_of(n, a, a_stride);
    gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, false, rows_q2_k_multi, &qa);
}

static void gemv_q3_k_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                            const void *w, size_t w_stride, const void *a, size_t a_stride) {
    q23k_acts qa = acts_of(n, a, a_stride);
    gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, false, rows_q3_k_multi, &qa);
}

#endif
