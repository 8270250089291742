/* neon_b32_simd.h - the NEON routines of the blocks of 32 with an fp16 scale that dot Q8_0 or
 * Q8_1 activations (Q4_1, Q5_0, Q5_1, IQ4_NL), written once against neon_simd.h's dot_s8 step:
 * R weight rows against one activation row whose blocks are prepared once (the gemvs; the dot
 * products are one row of the same), and the 4x4 tile. Included by the dot_, gemv_ and tile_
 * headers of the legacy and iq4 families, inside their aarch64 guard.
 *
 * A block's 32 values become two registers of bytes: Q4_1's nibbles as they are (its offset m
 * meets the activation block's s = d * sum, one multiply-add a block); the Q5 types' fifth
 * bits put above the nibbles by a table lookup that spreads the 4 bytes of qh over the 32
 * lanes, a shift by lane that brings bit j to bit 4 of lane j, and a bit select (Q5_0's
 * offset -16 then starts the integer dot, -16 times the activation block's sum, prepared once
 * for all rows); IQ4_NL's codes as levels by a table lookup (vqtbl1q_s8). */
#ifndef EL_KERNELS_NEON_B32_SIMD_H
#define EL_KERNELS_NEON_B32_SIMD_H

#include "kernels/gemv_drive.h"
#include "kernels/neon_simd.h"

/* Activation elements prepared at a time (12 bytes per block of 32: 6 KB of stack); longer
 * rows are done in slices, each row's sums added up across them. */
enum { B32_SLICE = 16384 };

/* One activation block, prepared. */
typedef struct b32_act {
    float d;     /* its scale */
    float s;     /* Q8_1: d * the sum of its quants (as stored); else 0 */
    int32_t off; /* Q5_0: -16 * the sum of its quants; else 0 */
} b32_act;

/* The activation type each of these weight types dots. */
static inline bool b32_q8_1(el_type t) { return t == EL_TYPE_Q4_1 || t == EL_TYPE_Q5_1; }

static inline size_t b32_block_bytes(el_type t) {
    switch (t) {
    case EL_TYPE_Q4_1: return sizeof(el_block_q4_1);
    case EL_TYPE_Q5_0: return sizeof(el_block_q5_0);
    case EL_TYPE_Q5_1: return sizeof(el_block_q5_1);
    default: return sizeof(el_block_iq4_nl);
    }
}

static inline size_t b32_act_bytes(el_type t) {
    return b32_q8_1(t) ? sizeof(el_block_q8_1) : sizeof(el_block_q8_0);
}

/* The quants of activation block k (Q8_0 or Q8_1; the same quants, 2 or 4 bytes in). */
static inline const int8_t *b32_act_qs(el_type t, const char *a, int64_t k) {
    const char *b = a + (size_t)k * b32_act_bytes(t);
    return b32_q8_1(t) ? ((const el_block_q8_1 *)b)->qs : ((const el_block_q8_0 *)b)->qs;
}

static void b32_prepare(el_type t, const char *a, int64_t nb, b32_act *p) {
    for (int64_t k = 0; k < nb; k++) {
        const char *b = a + (size_t)k * b32_act_bytes(t);
        if (b32_q8_1(t)) {
            const el_block_q8_1 *q = (const el_block_q8_1 *)b;
            p[k] = (b32_act){fp16_scalar(q->d), fp16_scalar(q->s), 0};
        } else {
            const el_block_q8_0 *q = (const el_block_q8_0 *)b;
            int32_t sum = t == EL_TYPE_Q5_0
                              ? vaddlvq_s8(vld1q_s8(q->qs)) + vaddlvq_s8(vld1q_s8(q->qs + 16))
                              : 0;
            p[k] = (b32_act){fp16_scalar(q->d), 0.0f, -16 * sum};
        }
    }
}

/* The Q5 types' 32 fifth bits (qh, bit j for element j) moved to bit 4 of byte j, bytes 0-15
 * in *lo and 16-31 in *hi (the other bits are not cleared). */
static inline void q5_fifth_bits(const uint8_t qh[4], uint8x16_t *lo, uint8x16_t *hi) {
    static const uint8_t spread_lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
    static const uint8_t spread_hi[16] = {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
    static const int8_t to_bit4[16] = {4, 3, 2, 1, 0, -1, -2, -3, 4, 3, 2, 1, 0, -1, -2, -3};
    const uint8x16_t bytes = vreinterpretq_u8_u32(vdupq_n_u32(el_load_le32(qh)));
    const int8x16_t shift = vld1q_s8(to_bit4);
    *lo = vshlq_u8(vqtbl1q_u8(bytes, vld1q_u8(spread_lo)), shift);
    *hi = vshlq_u8(vqtbl1q_u8(bytes, vld1q_u8(spread_hi)), shift);
}

/* A weight block of type t: its 32 values as bytes (elements 0-15 in *lo, 16-31 in *hi;
 * unsigned but for IQ4_NL's levels), its scale d and (Q4_1, Q5_1) offset m as fp16 bits. */
static inline __attribute__((always_inline)) void b32_unpack(el_type t, const char *blk,
                                                             int8x16_t iq4, int8x16_t *lo,
                                                             int8x16_t *hi, uint16_t *d,
                                                             uint16_t *m) {
    const uint8x16_t low4 = vdupq_n_u8(0x0F), bit4 = vdupq_n_u8(0x10);
    switch (t) {
    case EL_TYPE_Q4_1: {
        const el_block_q4_1 *b = (const el_block_q4_1 *)blk;
        const uint8x16_t q = vld1q_u8(b->qs);
        *lo = vreinterpretq_s8_u8(vandq_u8(q, low4));
        *hi = vreinterpretq_s8_u8(vshrq_n_u8(q, 4));
        *d = b->d, *m = b->m;
        break;
    }
    case EL_TYPE_Q5_0: case EL_TYPE_Q5_1: {
        const uint8_t *qs, *qh;
        if (t == EL_TYPE_Q5_0) {
            const el_block_q5_0 *b = (const el_block_q5_0 *)blk;
            qs = b->qs, qh = b->qh, *d = b->d, *m = 0;
        } else {
            const el_block_q5_1 *b = (const el_block_q5_1 *)blk;
            qs = b->qs, qh = b->qh, *d = b->d, *m = b->m;
        }
        uint8x16_t f_lo, f_hi;
        q5_fifth_bits(qh, &f_lo, &f_hi);
        const uint8x16_t q = vld1q_u8(qs);
        *lo = vreinterpretq_s8_u8(vbslq_u8(bit4, f_lo, vandq_u8(q, low4)));
        *hi = vreinterpretq_s8_u8(vbslq_u8(bit4, f_hi, vshrq_n_u8(q, 4)));
        break;
    }
    default: {
        const el_block_iq4_nl *b = (const el_block_iq4_nl *)blk;
        const uint8x16_t q = vld1q_u8(b->qs);
        *lo = vqtbl1q_s8(iq4, vandq_u8(q, low4));
        *hi = vqtbl1q_s8(iq4, vshrq_n_u8(q, 4));
        *d = b->d, *m = 0;
        break;
    }
    }
}

/* One block of a row: acc + the integer dot (started at the prepared offset) times the two
 * scales; *acc_m + m * s for the offset types. */
static inline __attribute__((always_inline)) float32x4_t
b32_block(el_type t, float32x4_t acc, float *acc_m, const char *blk, int8x16_t a_lo,
          int8x16_t a_hi, int32x4_t start, const b32_act *p, int8x16_t iq4) {
    int8x16_t lo, hi;
    uint16_t d, m;
    b32_unpack(t, blk, iq4, &lo, &hi, &d, &m);
    const int32x4_t dot = dot_s8(dot_s8(start, lo, a_lo), hi, a_hi);
    if (b32_q8_1(t)) *acc_m += fp16_scalar(m) * p->s;
    return vfmaq_n_f32(acc, vcvtq_f32_s32(dot), fp16_scalar(d) * p->d);
}

/* s[r] = the dot of blocks [0, nb) of the R rows wb[r] (R = 1, 2 or 4, a constant after
 * inlining) of type t with the activation blocks a (prepared in p), each row as it would be
 * alone: even and odd blocks into two accumulators per row, so consecutive blocks do not wait
 * on each other. */
static inline __attribute__((always_inline)) void rows_b32x(el_type t, const char *const wb[4],
                                                            float s[4], const int R,
                                                            const char *a, const b32_act *p,
                                                            int64_t nb) {
    const size_t w_block = b32_block_bytes(t);
    const int8x16_t iq4 = vld1q_s8(el_iq4nl_values);
    float32x4_t acc0[4], acc1[4];
    float acc_m[4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) acc0[r] = acc1[r] = vdupq_n_f32(0.0f), acc_m[r] = 0.0f;
    int64_t k = 0;
    for (; k + 2 <= nb; k += 2) {
        const int8_t *q0 = b32_act_qs(t, a, k), *q1 = b32_act_qs(t, a, k + 1);
        const int8x16_t a0l = vld1q_s8(q0), a0h = vld1q_s8(q0 + 16);
        const int8x16_t a1l = vld1q_s8(q1), a1h = vld1q_s8(q1 + 16);
        const int32x4_t s0 = vsetq_lane_s32(p[k].off, vdupq_n_s32(0), 0);
        const int32x4_t s1 = vsetq_lane_s32(p[k + 1].off, vdupq_n_s32(0), 0);
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const char *blk = wb[r] + (size_t)k * w_block;
            acc0[r] = b32_block(t, acc0[r], &acc_m[r], blk, a0l, a0h, s0, &p[k], iq4);
            acc1[r] = b32_block(t, acc1[r], &acc_m[r], blk + w_block, a1l, a1h, s1, &p[k + 1], iq4);
        }
    }
    if (k < nb) {
        const int8_t *q0 = b32_act_qs(t, a, k);
        const int8x16_t al = vld1q_s8(q0), ah = vld1q_s8(q0 + 16);
        const int32x4_t s0 = vsetq_lane_s32(p[k].off, vdupq_n_s32(0), 0);
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            acc0[r] = b32_block(t, acc0[r], &acc_m[r], wb[r] + (size_t)k * w_block, al, ah, s0,
                                &p[k], iq4);
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = vaddvq_f32(vaddq_f32(acc0[r], acc1[r])) + acc_m[r];
}

/* The EL_TILE x EL_TILE tile of weight type t: per block, the four weight rows' values are
 * unpacked once (Q5_0's made signed, so no activation sums are wanted); for each activation
 * row the four integer dots are reduced to one vector [dot_0 .. dot_3] by pairwise adds, scaled
 * by [d_w0 .. d_w3] * d_a and accumulated, with [m_0 .. m_3] * s_a for the offset types. */
static inline __attribute__((always_inline)) void tile_b32x(el_type t, int64_t n, float *y,
                                                            int64_t ldy, const void *w,
                                                            size_t w_stride, const void *a,
                                                            size_t a_stride) {
    const size_t w_block = b32_block_bytes(t), a_block = b32_act_bytes(t);
    const int8x16_t iq4 = vld1q_s8(el_iq4nl_values);
    float32x4_t acc[EL_TILE];
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) acc[r] = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < n / EL_QK4_0; i++) {
        int8x16_t wl[EL_TILE], wh[EL_TILE];
        uint16_t wd[EL_TILE], wm[EL_TILE];
        #pragma GCC unroll 4
        for (int o = 0; o < EL_TILE; o++) {
            b32_unpack(t, (const char *)w + o * w_stride + i * w_block, iq4, &wl[o], &wh[o],
                       &wd[o], &wm[o]);
            if (t == EL_TYPE_Q5_0) {
                wl[o] = vsubq_s8(wl[o], vdupq_n_s8(16));
                wh[o] = vsubq_s8(wh[o], vdupq_n_s8(16));
            }
        }
        const uint16_t hd[4] = {wd[0], wd[1], wd[2], wd[3]}, hm[4] = {wm[0], wm[1], wm[2], wm[3]};
        const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(hd)));
        const float32x4_t mw = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(hm)));
        #pragma GCC unroll 4
        for (int r = 0; r < EL_TILE; r++) {
            const char *ab = (const char *)a + r * a_stride + i * a_block;
            const int8_t *q = b32_act_qs(t, ab, 0);
            const int8x16_t yl = vld1q_s8(q), yh = vld1q_s8(q + 16);
            int32x4_t p[EL_TILE];
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++)
                p[o] = dot_s8(dot_s8(vdupq_n_s32(0), wl[o], yl), wh[o], yh);
            const int32x4_t dots = fold4(p[0], p[1], p[2], p[3]);
            uint16_t da, sa = 0;
            if (b32_q8_1(t))
                da = ((const el_block_q8_1 *)ab)->d, sa = ((const el_block_q8_1 *)ab)->s;
            else
                da = ((const el_block_q8_0 *)ab)->d;
            acc[r] = vfmaq_f32(acc[r], vcvtq_f32_s32(dots), vmulq_n_f32(dw, fp16_scalar(da)));
            if (b32_q8_1(t)) acc[r] = vfmaq_n_f32(acc[r], mw, fp16_scalar(sa));
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) vst1q_f32(y + r * ldy, acc[r]);
}

/* The gemv of weight type t against one activation row, slice by slice, each slice's
 * activation blocks prepared once for all rows: gemv_drive's rows two far apart (with four, GCC
 * spills Q5_0's and Q5_1's unpacking to the stack; docs/kernels.md). */
typedef struct b32_slice {
    const char *a;       /* the slice's first activation block */
    const b32_act *p;    /* prepared */
    int64_t first, nb;   /* the slice's first block, and its blocks */
} b32_slice;

/* rows_b32x for the R (2 or 1: gemv_b32x's company) rows gemv_drive gives. */
static inline __attribute__((always_inline)) void rows_b32x_any(el_type t, const void *ctx,
                                                                const char *const row[4],
                                                                float s[4], int R) {
    const b32_slice *sl = ctx;
    const char *wb[4];
    for (int r = 0; r < R; r++) wb[r] = row[r] + (size_t)sl->first * b32_block_bytes(t);
    if (R == 2) rows_b32x(t, wb, s, 2, sl->a, sl->p, sl->nb);
    else rows_b32x(t, wb, s, 1, sl->a, sl->p, sl->nb);
}

static inline __attribute__((always_inline)) void gemv_b32x(el_type t, int64_t n, float *y,
                                                            int64_t n_rows, const void *w,
                                                            size_t w_stride, const void *a,
                                                            gemv_rows_fn rows) {
    b32_act p[B32_SLICE / EL_QK4_0];
    for (int64_t k0 = 0; k0 < n; k0 += B32_SLICE) {
        int64_t first = k0 / EL_QK4_0;
        int64_t nb = (n - k0 < B32_SLICE ? n - k0 : B32_SLICE) / EL_QK4_0;
        const char *sa = (const char *)a + (size_t)first * b32_act_bytes(t);
        b32_prepare(t, sa, nb, p);
        b32_slice sl = {sa, p, first, nb};
        gemv_drive(n_rows, 2, w, w_stride, y, k0 > 0, rows, &sl);
    }
}

#endif
