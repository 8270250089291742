/* gemv_kquant_neon.h - the NEON gemvs of the K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) against
 * Q8_K activations, written once against neon_simd.h's dot_s8 step and built by both NEON
 * levels: gemv_kquant_neon.c (widening multiplies) and gemv_kquant_neon_dotprod.c (SDOT).
 *
 * The rows go through gemv_drive.h's loop, two far apart at a time, through neon_k_simd.h's
 * rows_k: the two rows share every activation load (64 bytes a chunk) and the activation sums
 * of the block (bsums, and their pair sums for the mins of Q4_K and Q5_K), and give the core
 * two independent chains. Two, not four as gemv_neon.h's: with four rows GCC spills the rows'
 * unpacked quants and scales to the stack, with two it keeps them in registers, and two need
 * no more instructions per row (docs/kernels.md). Q8_K's scale is a float already and its sums
 * are in the block, so nothing else is worth preparing per call. */
#ifndef EL_KERNELS_GEMV_KQUANT_NEON_H
#define EL_KERNELS_GEMV_KQUANT_NEON_H

#include "kernels/gemv_drive.h"
#include "kernels/neon_k_simd.h"

/* A Q8_K activation row for the rows of gemv_drive. */
typedef struct k_act {
    const el_block_q8_k *a;
    int64_t nb;
} k_act;

/* rows_k for the R (2 or 1: gemv_k's company) rows gemv_drive gives, R a constant in each
 * call. */
static inline __attribute__((always_inline)) void rows_k_any(el_type t, const void *ctx,
                                                             const char *const row[4], float s[4],
                                                             int R) {
    const k_act *act = ctx;
    if (R == 2) rows_k(t, row, s, 2, act->a, act->nb);
    else rows_k(t, row, s, 1, act->a, act->nb);
}

static void rows_q2_k(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_k_any(EL_TYPE_Q2_K, ctx, row, s, R);
}

static void rows_q3_k(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_k_any(EL_TYPE_Q3_K, ctx, row, s, R);
}

static void rows_q4_k(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_k_any(EL_TYPE_Q4_K, ctx, row, s, R);
}

static void rows_q5_k(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_k_any(EL_TYPE_Q5_K, ctx, row, s, R);
}

static void rows_q6_k(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_k_any(EL_TYPE_Q6_K, ctx, row, s, R);
}

static inline __attribute__((always_inline)) void gemv_k(int64_t n, float *y, int64_t n_rows,
                                                         const void *w, size_t w_stride,
                                                         const void *a, gemv_rows_fn rows) {
    const k_act act = {a, n / EL_QK_K};
    gemv_drive(n_rows, 2, w, w_stride, y, false, rows, &act);
}

static void gemv_q2_k(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    gemv_k(n, y, n_rows, w, w_stride, a, rows_q2_k);
}

static void gemv_q3_k(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    gemv_k(n, y, n_rows, w, w_stride, a, rows_q3_k);
}

static void gemv_q4_k(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    gemv_k(n, y, n_rows, w, w_stride, a, rows_q4_k);
}

static void gemv_q5_k(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    gemv_k(n, y, n_rows, w, w_stride, a, rows_q5_k);
}

static void gemv_q6_k(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    gemv_k(n, y, n_rows, w, w_stride, a, rows_q6_k);
}

#endif
