/* gemv_kquant_x86.h - the gemvs (decode) and multi-row gemvs (2-3 activation rows) of Q4_K,
 * Q5_K and Q6_K against Q8_K, over gemv_kquant_avx2.h's rows and gemv_drive. Compiled by
 * gemv_kquant_avx2.c and gemv_kquant_avx512.c, whose flags choose the rows' products. */
#ifndef EL_KERNELS_GEMV_KQUANT_X86_H
#define EL_KERNELS_GEMV_KQUANT_X86_H

#include "kernels/gemv_drive.h"
#include "kernels/gemv_kquant_avx2.h"

/* What the rows of a gemv share: its activation rows and their length. */
typedef struct kq_acts {
    const el_block_q8_k *b[EL_GEMV_MULTI_MAX];
    int64_t n;
} kq_acts;

/* gemv_drive's rows (one activation row) and gemv_multi_drive's (2-3) for a type. */
static inline __attribute__((always_inline)) void rows_one(el_type type, const void *ctx,
                                                           const char *const row[4], float s[4],
                                                           int R) {
    const kq_acts *ka = ctx;
    float t[KQ_MAX_ACTS][4];
    kq_rows(type, ka->n / EL_QK_K, row, R, ka->b, 1, t);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = t[0][r];
}

static inline __attribute__((always_inline)) void rows_multi(el_type type, const void *ctx,
                                                             const char *const row[2],
                                                             float s[][2], int R, int A) {
    const kq_acts *ka = ctx;
    float t[KQ_MAX_ACTS][4];
    kq_rows(type, ka->n / EL_QK_K, row, R, ka->b, A, t);
    for (int a = 0; a < A; a++)
        for (int r = 0; r < R; r++) s[a][r] = t[a][r];
}

static inline __attribute__((always_inline)) void gemv(int64_t n, float *y, int64_t n_rows,
                                                       const void *w, size_t w_stride,
                                                       const void *a, gemv_rows_fn rows) {
    kq_acts ka = {{a}, n};
    int R = gemv_company(w_stride, el_row_size(EL_TYPE_Q8_K, n));
    gemv_drive(n_rows, R, w, w_stride, y, false, rows, &ka);
}

static inline __attribute__((always_inline)) void gemv_multi(int64_t n, float *y, int64_t ldy,
                                                             int n_act, int64_t n_rows,
                                                             const void *w, size_t w_stride,
                                                             const void *a, size_t a_stride,
                                                             gemv_multi_rows_fn rows) {
    const char *a0 = a;
    kq_acts ka = {{(const void *)a0, (const void *)(a0 + a_stride),
                    (const void *)(a0 + 2 * a_stride)},
                  n};
    gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, false, rows, &ka);
}

static inline __attribute__((always_inline)) void rows_q4_k(const void *ctx,
                                                          const char *const row[4], float s[4],
                                                          int R) {
    rows_one(EL_TYPE_Q4_K, ctx, row, s, R);
}

static inline __attribute__((always_inline)) void rows_q4_k_multi(const void *ctx,
                                                                const char *const row[2],
                                                                float s[][2], int R, int A) {
    rows_multi(EL_TYPE_Q4_K, ctx, row, s, R, A);
}

static void gemv_q4_k(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    gemv(n, y, n_rows, w, w_stride, a, rows_q4_k);
}

static void gemv_q4_k_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                            const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_multi(n, y, ldy, n_act, n_rows, w, w_stride, a, a_stride, rows_q4_k_multi);
}

static inline __attribute__((always_inline)) void rows_q5_k(const void *ctx,
                                                          const char *const row[4], float s[4],
                                                          int R) {
    rows_one(EL_TYPE_Q5_K, ctx, row, s, R);
}

static inline __attribute__((always_inline)) void rows_q5_k_multi(const void *ctx,
                                                                const char *const row[2],
                                                                float s[][2], int R, int A) {
    rows_multi(EL_TYPE_Q5_K, ctx, row, s, R, A);
}

static void gemv_q5_k(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    gemv(n, y, n_rows, w, w_stride, a, rows_q5_k);
}

static void gemv_q5_k_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                            const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_multi(n, y, ldy, n_act, n_rows, w, w_stride, a, a_stride, rows_q5_k_multi);
}

static inline __attribute__((always_inline)) void rows_q6_k(const void *ctx,
                                                          const char *const row[4], float s[4],
                                                          int R) {
    rows_one(EL_TYPE_Q6_K, ctx, row, s, R);
}

static inline __attribute__((always_inline)) void rows_q6_k_multi(const void *ctx,
                                                                const char *const row[2],
                                                                float s[][2], int R, int A) {
    rows_multi(EL_TYPE_Q6_K, ctx, row, s, R, A);
}

static void gemv_q6_k(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    gemv(n, y, n_rows, w, w_stride, a, rows_q6_k);
}

static void gemv_q6_k_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                            const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_multi(n, y, ldy, n_act, n_rows, w, w_stride, a, a_stride, rows_q6_k_multi);
}

#endif
