/* gemv_neon.h - the NEON gemvs (dispatch.h's el_gemv_fn: one activation row against many
 * consecutive weight rows, a decode step) for q4_0, q8_0, w4, w8, w4g* and w8a16, written once
 * against neon_simd.h's dot_s8 step and built by both NEON levels: gemv_neon.c (widening
 * multiplies) and gemv_neon_dotprod.c (SDOT), which include it inside their aarch64 guard.
 *
 * The rows go through gemv_drive.h's loop, four far apart at a time: they share every
 * activation load and give the core four independent chains; the last n_rows % 4 go alone
 * through the same code, so a row's result never depends on its company. (The x86 kernels chose
 * rows far apart over neighbours by measuring, where a few sequential streams read fastest; the
 * same order is kept here, unmeasured on ARM cores.)
 * What depends only on the activations is prepared once per call: for q4_0 and q8_0 the block
 * scales as floats and, for q4_0, whose nibbles are dotted as unsigned u = q + 8 (no subtract
 * per weight byte), the offset -8 * (block sum) that starts each block's integer sum; for w4
 * the sum of the row is in the a8 header already. */
#ifndef EL_KERNELS_GEMV_NEON_H
#define EL_KERNELS_GEMV_NEON_H

#include "kernels/gemv_drive.h"
#include "kernels/neon_simd.h"

/* Activation elements prepared at a time (8 bytes per block of 32: 4 KB of stack); longer
 * rows are done in slices, each row's sums added up across them. */
enum { GEMV_SLICE = 16384 };

/* One q8_0 activation block, prepared. */
typedef struct gemv_block {
    float d;     /* its scale */
    int32_t off; /* q4_0: -8 * the sum of its quants; q8_0: 0 */
} gemv_block;

static void gemv_prepare(const el_block_q8_0 *b, int64_t nb, bool q4, gemv_block *p) {
    for (int64_t k = 0; k < nb; k++) {
        int32_t sum = q4 ? vaddlvq_s8(vld1q_s8(b[k].qs)) + vaddlvq_s8(vld1q_s8(b[k].qs + 16)) : 0;
        p[k] = (gemv_block){fp16_scalar(b[k].d), -8 * sum};
    }
}

/* acc + one weight block (q4_0 or q8_0) against an activation block (quants lo, hi, prepared
 * p): the integer dot, started at p's offset, times the two scales. */
static inline __attribute__((always_inline)) float32x4_t
block_fma(float32x4_t acc, const char *blk, int8x16_t a_lo, int8x16_t a_hi, int32x4_t start,
          float da, bool q4) {
    int8x16_t lo, hi;
    uint16_t d;
    if (q4) {
        const el_block_q4_0 *b = (const el_block_q4_0 *)blk;
        const uint8x16_t q = vld1q_u8(b->qs);
        lo = vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0F)));
        hi = vreinterpretq_s8_u8(vshrq_n_u8(q, 4));
        d = b->d;
    } else {
        const el_block_q8_0 *b = (const el_block_q8_0 *)blk;
        lo = vld1q_s8(b->qs);
        hi = vld1q_s8(b->qs + 16);
        d = b->d;
    }
    int32x4_t dot = dot_s8(dot_s8(start, lo, a_lo), hi, a_hi);
    return vfmaq_n_f32(acc, vcvtq_f32_s32(dot), fp16_scalar(d) * da);
}

/* s[r] = the dot of blocks [0, nb) of the R rows wb[r] (R = 1, 2 or 4, a constant after inlining)
 * with the activation blocks a (prepared in p), each row as it would be alone: even and odd
 * blocks into two accumulators per row, so consecutive blocks do not wait on each other. */
static inline __attribute__((always_inline)) void rows_b32(const char *const wb[4], float s[4],
                                                           const int R, const el_block_q8_0 *a,
                                                           const gemv_block *p, int64_t nb,
                                                           bool q4) {
    const size_t w_block = q4 ? sizeof(el_block_q4_0) : sizeof(el_block_q8_0);
    float32x4_t acc0[4], acc1[4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) acc0[r] = acc1[r] = vdupq_n_f32(0.0f);
    int64_t k = 0;
    for (; k + 2 <= nb; k += 2) {
        const int8x16_t a0l = vld1q_s8(a[k].qs), a0h = vld1q_s8(a[k].qs + 16);
        const int8x16_t a1l = vld1q_s8(a[k + 1].qs), a1h = vld1q_s8(a[k + 1].qs + 16);
        const int32x4_t s0 = vsetq_lane_s32(p[k].off, vdupq_n_s32(0), 0);
        const int32x4_t s1 = vsetq_lane_s32(p[k + 1].off, vdupq_n_s32(0), 0);
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const char *blk = wb[r] + (size_t)k * w_block;
            acc0[r] = block_fma(acc0[r], blk, a0l, a0h, s0, p[k].d, q4);
            acc1[r] = block_fma(acc1[r], blk + w_block, a1l, a1h, s1, p[k + 1].d, q4);
        }
    }
    if (k < nb) {
        const int8x16_t al = vld1q_s8(a[k].qs), ah = vld1q_s8(a[k].qs + 16);
        const int32x4_t s0 = vsetq_lane_s32(p[k].off, vdupq_n_s32(0), 0);
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            acc0[r] = block_fma(acc0[r], wb[r] + (size_t)k * w_block, al, ah, s0, p[k].d, q4);
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = vaddvq_f32(vaddq_f32(acc0[r], acc1[r]));
}

/* One slice of q8_0 activations, prepared, for the rows of gemv_drive. */
typedef struct b32_slice {
    const el_block_q8_0 *a; /* the slice's activation blocks */
    const gemv_block *p;    /* prepared */
    int64_t first, nb;      /* the slice's first block, and its blocks */
} b32_slice;

static void rows_q4_0(const void *ctx, const char *const row[4], float s[4], int R) {
    const b32_slice *sl = ctx;
    const char *wb[4];
    for (int r = 0; r < R; r++) wb[r] = row[r] + (size_t)sl->first * sizeof(el_block_q4_0);
    if (R == 4) rows_b32(wb, s, 4, sl->a, sl->p, sl->nb, true);
    else if (R == 2) rows_b32(wb, s, 2, sl->a, sl->p, sl->nb, true);
    else rows_b32(wb, s, 1, sl->a, sl->p, sl->nb, true);
}

static void rows_q8_0(const void *ctx, const char *const row[4], float s[4], int R) {
    const b32_slice *sl = ctx;
    const char *wb[4];
    for (int r = 0; r < R; r++) wb[r] = row[r] + (size_t)sl->first * sizeof(el_block_q8_0);
    if (R == 4) rows_b32(wb, s, 4, sl->a, sl->p, sl->nb, false);
    else if (R == 2) rows_b32(wb, s, 2, sl->a, sl->p, sl->nb, false);
    else rows_b32(wb, s, 1, sl->a, sl->p, sl->nb, false);
}

/* q4_0 or q8_0 rows against q8_0 activations, slice by slice. */
static inline __attribute__((always_inline)) void gemv_b32(int64_t n, float *y, int64_t n_rows,
                                                           const void *w, size_t w_stride,
                                                           const void *a, bool q4) {
    gemv_block p[GEMV_SLICE / EL_QK8_0];
    const el_block_q8_0 *b = a;
    for (int64_t k0 = 0; k0 < n; k0 += GEMV_SLICE) {
        int64_t first = k0 / EL_QK8_0;
        int64_t nb = (n - k0 < GEMV_SLICE ? n - k0 : GEMV_SLICE) / EL_QK8_0;
        gemv_prepare(b + first, nb, q4, p);
        b32_slice sl = {b + first, p, first, nb};
        gemv_drive(n_rows, 4, w, w_stride, y, k0 > 0, q4 ? rows_q4_0 : rows_q8_0, &sl);
    }
}

static void gemv_q4_0(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    gemv_b32(n, y, n_rows, w, w_stride, a, true);
}

static void gemv_q8_0(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    gemv_b32(n, y, n_rows, w, w_stride, a, false);
}

/* dot[r] = the integer dot of the quants q[r] of R rows (R = 1, 2 or 4) of W4 (unsigned nibbles
 * u = q + 8) or W8 with the a8 quants act, over the whole row: exact, so the same alone. */
static inline __attribute__((always_inline)) void rows_wrow(int64_t n, const char *const q[4],
                                                            int32_t dot[4], const int R,
                                                            const int8_t *act, bool w4) {
    int32x4_t acc0[4], acc1[4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) acc0[r] = acc1[r] = vdupq_n_s32(0);
    for (int64_t i = 0; i < n; i += EL_QK_EDGE) {
        const int8x16_t a0 = vld1q_s8(act + i), a1 = vld1q_s8(act + i + 16);
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            int8x16_t lo, hi;
            if (w4) {
                chunk_u4((const uint8_t *)q[r] + i / 2, &lo, &hi);
            } else {
                lo = vld1q_s8((const int8_t *)q[r] + i);
                hi = vld1q_s8((const int8_t *)q[r] + i + 16);
            }
            acc0[r] = dot_s8(acc0[r], lo, a0);
            acc1[r] = dot_s8(acc1[r], hi, a1);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) dot[r] = vaddvq_s32(vaddq_s32(acc0[r], acc1[r]));
}

/* An A8 activation row for the rows of gemv_drive. */
typedef struct wrow_act {
    const int8_t *q; /* its quants */
    el_a8_header h;  /* its scale and sum */
    int64_t n;
} wrow_act;

/* s[r] = row scale * activation scale * integer dot, the nibbles' offset 8 taken off with the
 * header's sum, as the reference computes it. */
static inline __attribute__((always_inline)) void rows_scaled(const wrow_act *act,
                                                              const char *const row[4],
                                                              float s[4], const int R, bool w4) {
    const char *q[4];
    int32_t dot[4];
    for (int r = 0; r < R; r++) q[r] = row[r] + sizeof(float);
    rows_wrow(act->n, q, dot, R, act->q, w4);
    for (int r = 0; r < R; r++)
        s[r] = el_edge_row_scale(row[r]) * act->h.d * (float)(dot[r] - (w4 ? 8 * act->h.sum : 0));
}

static void rows_w4(const void *ctx, const char *const row[4], float s[4], int R) {
    if (R == 4) rows_scaled(ctx, row, s, 4, true);
    else if (R == 2) rows_scaled(ctx, row, s, 2, true);
    else rows_scaled(ctx, row, s, 1, true);
}

static void rows_w8(const void *ctx, const char *const row[4], float s[4], int R) {
    if (R == 4) rows_scaled(ctx, row, s, 4, false);
    else if (R == 2) rows_scaled(ctx, row, s, 2, false);
    else rows_scaled(ctx, row, s, 1, false);
}

/* W4, W8 or W4G rows (rows: their kernel) against an A8 row. */
static inline __attribute__((always_inline)) void gemv_wrow(int64_t n, float *y, int64_t n_rows,
                                                            const void *w, size_t w_stride,
                                                            const void *a, gemv_rows_fn rows) {
    wrow_act act = {.q = (const int8_t *)a + sizeof(el_a8_header), .n = n};
    memcpy(&act.h, a, sizeof act.h);
    gemv_drive(n_rows, 4, w, w_stride, y, false, rows, &act);
}

static void gemv_w4(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                    const void *a) {
    gemv_wrow(n, y, n_rows, w, w_stride, a, rows_w4);
}

static void gemv_w8(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                    const void *a) {
    gemv_wrow(n, y, n_rows, w, w_stride, a, rows_w8);
}

/* W8 . A16: one row of rows_w8a16_r. A dot product, but it stays with the gemv that shares
 * that routine: compiled apart from it, GCC assigns gemv_w8a16's accumulators differently, and
 * moving a kernel between files must not change its code (docs/kernels.md). */
static void vec_dot_w8a16(int64_t n, float *s, const void *x, const void *y) {
    el_a16_view a = el_a16_view_of(y, n);
    const char *const row[4] = {x};
    rows_w8a16_r(&a, row, s, 1);
}

static void rows_w8a16(const void *ctx, const char *const row[4], float s[4], int R) {
    if (R == 4) rows_w8a16_r(ctx, row, s, 4);
    else if (R == 2) rows_w8a16_r(ctx, row, s, 2);
    else rows_w8a16_r(ctx, row, s, 1);
}

static void gemv_w8a16(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a) {
    el_a16_view v = el_a16_view_of(a, n);
    gemv_drive(n_rows, 4, w, w_stride, y, false, rows_w8a16, &v);
}

/* W4G<g> rows against an A8 row (neon_simd.h's rows_w4g), R a constant in each call. */
static inline __attribute__((always_inline)) void rows_w4g_any(const void *ctx,
                                                               const char *const row[4],
                                                               float s[4], int R, int g) {
    const wrow_act *act = ctx;
    const void *y = act->q - sizeof(el_a8_header);
    if (R == 4) rows_w4g(act->n, row, s, 4, y, g);
    else if (R == 2) rows_w4g(act->n, row, s, 2, y, g);
    else rows_w4g(act->n, row, s, 1, y, g);
}

static void rows_w4g32(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_w4g_any(ctx, row, s, R, 32);
}

static void rows_w4g64(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_w4g_any(ctx, row, s, R, 64);
}

static void rows_w4g128(const void *ctx, const char *const row[4], float s[4], int R) {
    rows_w4g_any(ctx, row, s, R, 128);
}

static void gemv_w4g32(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a) {
    gemv_wrow(n, y, n_rows, w, w_stride, a, rows_w4g32);
}

static void gemv_w4g64(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a) {
    gemv_wrow(n, y, n_rows, w, w_stride, a, rows_w4g64);
}

static void gemv_w4g128(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                        const void *a) {
    gemv_wrow(n, y, n_rows, w, w_stride, a, rows_w4g128);
}

#endif
