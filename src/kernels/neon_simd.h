/* neon_simd.h - the 8-bit dot product step of the NEON kernels and the static inline helpers
 * that more than one kind of them uses.
 *
 *   dot_s8(acc, a, b): acc plus the 16 products a[i]*b[i], spread over its 4 lanes in any way
 *
 * is SDOT in the files built with the dot product extension (*_neon_dotprod.c, by the
 * Makefile's flags) and widening multiplies elsewhere (every aarch64 CPU). Only the sum of the
 * lanes is ever used, so both give the same integer results. Included inside an aarch64 guard. */
#ifndef EL_KERNELS_NEON_SIMD_H
#define EL_KERNELS_NEON_SIMD_H

#include <arm_neon.h>
#include <string.h>

#include "kernels/blocks.h"
#include "kernels/dispatch.h"
#include "kernels/edge.h"
#include "kernels/w8a16.h"

#if defined(__ARM_FEATURE_DOTPROD)
static inline int32x4_t dot_s8(int32x4_t acc, int8x16_t a, int8x16_t b) {
    return vdotq_s32(acc, a, b);
}
#else
/* acc plus the 16 products a[i]*b[i]: two widening multiplies (|a*b| <= 2^14 fits int16) and
 * pairwise accumulates into 32 bits. */
static inline int32x4_t dot_s8(int32x4_t acc, int8x16_t a, int8x16_t b) {
    int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    int16x8_t hi = vmull_high_s8(a, b);
    return vpadalq_s16(vpadalq_s16(acc, lo), hi);
}
#endif

/* Sums of four int32x4 vectors' lanes as one vector [sum p0, sum p1, sum p2, sum p3]. */
static inline int32x4_t fold4(int32x4_t p0, int32x4_t p1, int32x4_t p2, int32x4_t p3) {
    return vpaddq_s32(vpaddq_s32(p0, p1), vpaddq_s32(p2, p3));
}

static inline float fp16_scalar(uint16_t h) {
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

/* The 32 quants of a Q4_0 block as signed bytes: low nibbles (elements 0-15), then high. */
static inline void q4_0_unpack(const el_block_q4_0 *b, int8x16_t *lo, int8x16_t *hi) {
    const uint8x16_t q = vld1q_u8(b->qs);
    const int8x16_t eight = vdupq_n_s8(8);
    *lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0F))), eight);
    *hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), eight);
}

/* acc + the products of 16 int8 weights (widened) with 16 int16 activations at v. */
static inline int32x4_t mlal16_w8a16(int32x4_t acc, const int8_t *q, const char *v) {
    const int8x16_t w = vld1q_s8(q);
    const int16x8_t wl = vmovl_s8(vget_low_s8(w)), wh = vmovl_high_s8(w);
    const int16x8_t a0 = vreinterpretq_s16_u8(vld1q_u8((const uint8_t *)v));
    const int16x8_t a1 = vreinterpretq_s16_u8(vld1q_u8((const uint8_t *)v + 16));
    acc = vmlal_s16(acc, vget_low_s16(wl), vget_low_s16(a0));
    acc = vmlal_high_s16(acc, wl, a0);
    acc = vmlal_s16(acc, vget_low_s16(wh), vget_low_s16(a1));
    return vmlal_high_s16(acc, wh, a1);
}

/* R W8A16 rows against an A16 row (R = 1 for the dot product, more for gemv_neon.h's gemv): the
 * rows share each activation load; a row's sum is exact, so the same in any company. */
static inline __attribute__((always_inline)) void rows_w8a16_r(const el_a16_view *a,
                                                               const char *const row[4],
                                                               float s[4], const int R) {
    const int8_t *q[4];
    int64x2_t sum[4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        q[r] = (const int8_t *)row[r] + sizeof(float);
        sum[r] = vdupq_n_s64(0);
    }
    for (int64_t i = 0; i < a->n;) {
        int64_t end = el_a16_run_end(i, a->n);
        int32x4_t acc[4];
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) acc[r] = vdupq_n_s32(0);
        for (; i < end; i += 16) {
            #pragma GCC unroll 4
            for (int r = 0; r < R; r++) acc[r] = mlal16_w8a16(acc[r], q[r] + i, a->q + 2 * i);
        }
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) sum[r] = vpadalq_s32(sum[r], acc[r]);
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = el_w8a16_scale(row[r], a->d, vaddvq_s64(sum[r]));
}

/* The 32 values (nibble - 8) of an int4 chunk as signed bytes, in element order. */
/* The unsigned nibbles u = q + 8 (0..15) of an int4 chunk: elements 0-15 in lo, 16-31 in hi. */
static inline void chunk_u4(const uint8_t *qs, int8x16_t *lo, int8x16_t *hi) {
    const uint8x16_t q = vld1q_u8(qs);
    *lo = vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0F)));
    *hi = vreinterpretq_s8_u8(vshrq_n_u8(q, 4));
}

static inline void chunk_s4(const uint8_t *qs, int8x16_t *lo, int8x16_t *hi) {
    const uint8x16_t q = vld1q_u8(qs);
    const int8x16_t eight = vdupq_n_s8(8);
    *lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0F))), eight);
    *hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), eight);
}

/* W4G<g> rows against an A8 row, R (1, 2 or 4) at a time sharing each activation load (the dot
 * products: one row; gemv_neon.h's gemvs: several): per group an integer dot of the unsigned
 * nibbles u = q + 8, started at -8 times the group's activation sum (computed once for all R
 * rows; so no subtraction per weight byte: 5 instructions a chunk and row against 7, counted,
 * not timed on ARM), one float multiply-add by the group's scale; the activations' scale at the
 * end. */
static inline __attribute__((always_inline)) void rows_w4g(int64_t n, const char *const row[4],
                                                           float s[4], const int R, const void *y,
                                                           int g) {
    const int8_t *a = (const int8_t *)y + sizeof(el_a8_header);
    const size_t block_bytes = 2 + (size_t)g / 2;
    float32x4_t acc[4];
    for (int r = 0; r < R; r++) acc[r] = vdupq_n_f32(0.0f);
    for (int64_t i = 0, k = 0; i < n; i += g, k++) {
        int32_t sum = 0;
        for (int c = 0; c < g / 16; c++) sum += vaddlvq_s8(vld1q_s8(a + i + 16 * c));
        const int32x4_t start = vsetq_lane_s32(-8 * sum, vdupq_n_s32(0), 0);
        int32x4_t gi[4];
        for (int r = 0; r < R; r++) gi[r] = start;
        for (int c = 0; c < g / 32; c++) {
            const int8x16_t a0 = vld1q_s8(a + i + 32 * c), a1 = vld1q_s8(a + i + 32 * c + 16);
            for (int r = 0; r < R; r++) {
                int8x16_t lo, hi;
                chunk_u4((const uint8_t *)row[r] + k * block_bytes + 2 + 16 * c, &lo, &hi);
                gi[r] = dot_s8(dot_s8(gi[r], lo, a0), hi, a1);
            }
        }
        for (int r = 0; r < R; r++) {
            uint16_t d;
            memcpy(&d, row[r] + k * block_bytes, sizeof d);
            acc[r] = vfmaq_n_f32(acc[r], vcvtq_f32_s32(gi[r]), fp16_scalar(d));
        }
    }
    el_a8_header h;
    memcpy(&h, y, sizeof h);
    for (int r = 0; r < R; r++) s[r] = vaddvq_f32(acc[r]) * h.d;
}

#endif
