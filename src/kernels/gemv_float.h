/* gemv_float.h - the gemvs (decode) and multi-row gemvs (2-3 activation rows) of the float
 * weight types F32, F16 and BF16, written once for every level: each level's file includes its
 * float_<isa>.h, names that sequence float_dots and gives these kernels its level's names, so
 * every output is that level's sequence (the bits its vec_dot and tile give it). Included
 * inside the level's guard. */
#ifndef EL_KERNELS_GEMV_FLOAT_H
#define EL_KERNELS_GEMV_FLOAT_H

#include "kernels/gemv_drive.h"

typedef struct float_act {
    const float *a[EL_GEMV_MULTI_MAX];
    int64_t n;
} float_act;

/* One accumulator per output, so the company is what hides the FMA latency: always four rows
 * side by side (far apart, as gemv_drive places them), whatever the row length. */
enum { FLOAT_COMPANY = 4 };

static inline __attribute__((always_inline)) void rows_float(el_float_kind kind, const void *ctx,
                                                             const char *const row[4],
                                                             float s[4], int R) {
    const float_act *fa = ctx;
    const void *wr[4] = {row[0], R > 1 ? row[1] : NULL, R > 2 ? row[2] : NULL,
                         R > 3 ? row[3] : NULL};
    float t[1][4];
    float_dots(kind, fa->n, wr, R, fa->a, 1, t);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = t[0][r];
}

static inline __attribute__((always_inline)) void rows_float_multi(el_float_kind kind,
                                                                   const void *ctx,
                                                                   const char *const row[2],
                                                                   float s[][2], int R, int A) {
    const float_act *fa = ctx;
    const void *wr[2] = {row[0], R > 1 ? row[1] : NULL};
    float t[EL_GEMV_MULTI_MAX][4];
    float_dots(kind, fa->n, wr, R, fa->a, A, t);
    #pragma GCC unroll 3
    for (int k = 0; k < A; k++)
        #pragma GCC unroll 2
        for (int r = 0; r < R; r++) s[k][r] = t[k][r];
}

static void rows_f32(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_float(EL_FLOAT_F32, ctx, row, s, R);
}
static void rows_f16(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_float(EL_FLOAT_F16, ctx, row, s, R);
}
static void rows_bf16(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_float(EL_FLOAT_BF16, ctx, row, s, R);
}
static void rows_f32_multi(const void *ctx, const char *const row[2], float s[][2], int R, int A) {
    rows_float_multi(EL_FLOAT_F32, ctx, row, s, R, A);
}
static void rows_f16_multi(const void *ctx, const char *const row[2], float s[][2], int R, int A) {
    rows_float_multi(EL_FLOAT_F16, ctx, row, s, R, A);
}
static void rows_bf16_multi(const void *ctx, const char *const row[2], float s[][2], int R,
                            int A) {
    rows_float_multi(EL_FLOAT_BF16, ctx, row, s, R, A);
}

static inline void gemv_f32(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a) {
    float_act fa = {{a}, n};
    gemv_drive(n_rows, FLOAT_COMPANY, w, w_stride, y, false, rows_f32, &fa);
}

static inline void gemv_f16(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a) {
    float_act fa = {{a}, n};
    gemv_drive(n_rows, FLOAT_COMPANY, w, w_stride, y, false, rows_f16, &fa);
}

static inline void gemv_bf16(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a) {
    float_act fa = {{a}, n};
    gemv_drive(n_rows, FLOAT_COMPANY, w, w_stride, y, false, rows_bf16, &fa);
}

static float_act acts(int64_t n, const void *a, size_t a_stride) {
    const char *c = a;
    return (float_act){{a, (const float *)(c + a_stride), (const float *)(c + 2 * a_stride)}, n};
}

static inline void gemv_f32_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                     const void *w, size_t w_stride, const void *a, size_t a_stride) {
    float_act fa = acts(n, a, a_stride);
    gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, false, rows_f32_multi, &fa);
}

static inline void gemv_f16_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                     const void *w, size_t w_stride, const void *a, size_t a_stride) {
    float_act fa = acts(n, a, a_stride);
    gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, false, rows_f16_multi, &fa);
}

static inline void gemv_bf16_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                     const void *w, size_t w_stride, const void *a, size_t a_stride) {
    float_act fa = acts(n, a, a_stride);
    gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, false, rows_bf16_multi, &fa);
}

#endif
