/* dot_neon.h - the NEON dot products of the quantized types, written once against neon_simd.h's
 * dot_s8 step and built by both NEON levels: dot_neon.c (widening multiplies) and
 * dot_neon_dotprod.c (SDOT). Included only from those two files, inside their aarch64 guard. */
#ifndef EL_KERNELS_DOT_NEON_H
#define EL_KERNELS_DOT_NEON_H

#include "kernels/neon_simd.h"

/* Integer dots of one block pair (q8_0 or q4_0 weights against q8_0) as 4 int32 lanes. */
static inline int32x4_t q8_0_dot(const el_block_q8_0 *a, const el_block_q8_0 *b) {
    int32x4_t p = dot_s8(vdupq_n_s32(0), vld1q_s8(a->qs), vld1q_s8(b->qs));
    return dot_s8(p, vld1q_s8(a->qs + 16), vld1q_s8(b->qs + 16));
}

static inline int32x4_t q4_0_dot(const el_block_q4_0 *a, const el_block_q8_0 *b) {
    int8x16_t lo, hi;
    q4_0_unpack(a, &lo, &hi);
    return dot_s8(dot_s8(vdupq_n_s32(0), lo, vld1q_s8(b->qs)), hi, vld1q_s8(b->qs + 16));
}

/* Two accumulators, so consecutive blocks' multiply-adds do not wait on each other. */
static void vec_dot_q8_0(int64_t n, float *s, const void *x, const void *y) {
    const el_block_q8_0 *a = x, *b = y;
    int64_t nb = n / EL_QK8_0, i = 0;
    float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
    for (; i + 2 <= nb; i += 2) {
        acc0 = vfmaq_n_f32(acc0, vcvtq_f32_s32(q8_0_dot(a + i, b + i)),
                           fp16_scalar(a[i].d) * fp16_scalar(b[i].d));
        acc1 = vfmaq_n_f32(acc1, vcvtq_f32_s32(q8_0_dot(a + i + 1, b + i + 1)),
                           fp16_scalar(a[i + 1].d) * fp16_scalar(b[i + 1].d));
    }
    if (i < nb)
        acc0 = vfmaq_n_f32(acc0, vcvtq_f32_s32(q8_0_dot(a + i, b + i)),
                           fp16_scalar(a[i].d) * fp16_scalar(b[i].d));
    *s = vaddvq_f32(vaddq_f32(acc0, acc1));
}

static void vec_dot_q4_0(int64_t n, float *s, const void *x, const void *y) {
    const el_block_q4_0 *a = x;
    const el_block_q8_0 *b = y;
    int64_t nb = n / EL_QK4_0, i = 0;
    float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
    for (; i + 2 <= nb; i += 2) {
        acc0 = vfmaq_n_f32(acc0, vcvtq_f32_s32(q4_0_dot(a + i, b + i)),
                           fp16_scalar(a[i].d) * fp16_scalar(b[i].d));
        acc1 = vfmaq_n_f32(acc1, vcvtq_f32_s32(q4_0_dot(a + i + 1, b + i + 1)),
                           fp16_scalar(a[i + 1].d) * fp16_scalar(b[i + 1].d));
    }
    if (i < nb)
        acc0 = vfmaq_n_f32(acc0, vcvtq_f32_s32(q4_0_dot(a + i, b + i)),
                           fp16_scalar(a[i].d) * fp16_scalar(b[i].d));
    *s = vaddvq_f32(vaddq_f32(acc0, acc1));
}

static void vec_dot_q4_k(int64_t n, float *s, const void *x, const void *y) {
    const el_block_q4_k *a = x;
    const el_block_q8_k *b = y;
    const uint8x16_t low4 = vdupq_n_u8(0x0F);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        uint32_t w[4]; /* all scales and mins at once */
        el_q4_k_scales_mins(a[i].scales, w);
        /* mins: sum_s m[s] * (bsums[2s] + bsums[2s+1]), the pair sums by one pairwise add */
        const uint8_t m_bytes[8] = {(uint8_t)w[2], (uint8_t)(w[2] >> 8), (uint8_t)(w[2] >> 16),
                                    (uint8_t)(w[2] >> 24), (uint8_t)w[3], (uint8_t)(w[3] >> 8),
                                    (uint8_t)(w[3] >> 16), (uint8_t)(w[3] >> 24)};
        int16x8_t m16 = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(m_bytes)));
        int16x8_t pairs = vpaddq_s16(vld1q_s16(b[i].bsums), vld1q_s16(b[i].bsums + 8));
        int32_t acc_m = vaddvq_s32(vmlal_high_s16(vmull_s16(vget_low_s16(m16), vget_low_s16(pairs)),
                                                  m16, pairs));
        int32x4_t acc = vdupq_n_s32(0);
        for (int c = 0; c < 4; c++) { /* 32 bytes: sub-blocks 2c (low nibbles), 2c+1 (high) */
            int sc0 = (int)((w[c / 2] >> (16 * (c % 2))) & 0xFF);
            int sc1 = (int)((w[c / 2] >> (16 * (c % 2) + 8)) & 0xFF);
            const uint8x16_t q0 = vld1q_u8(a[i].qs + 32 * c), q1 = vld1q_u8(a[i].qs + 32 * c + 16);
            const int8_t *q8 = b[i].qs + 64 * c;
            int32x4_t p0 = dot_s8(vdupq_n_s32(0), vreinterpretq_s8_u8(vandq_u8(q0, low4)),
                                  vld1q_s8(q8));
            p0 = dot_s8(p0, vreinterpretq_s8_u8(vandq_u8(q1, low4)), vld1q_s8(q8 + 16));
            int32x4_t p1 = dot_s8(vdupq_n_s32(0), vreinterpretq_s8_u8(vshrq_n_u8(q0, 4)),
                                  vld1q_s8(q8 + 32));
            p1 = dot_s8(p1, vreinterpretq_s8_u8(vshrq_n_u8(q1, 4)), vld1q_s8(q8 + 48));
            acc = vmlaq_n_s32(vmlaq_n_s32(acc, p0, sc0), p1, sc1);
        }
        float d = fp16_scalar(a[i].d) * b[i].d, dmin = fp16_scalar(a[i].dmin) * b[i].d;
        sum += d * (float)vaddvq_s32(acc) - dmin * (float)acc_m;
    }
    *s = sum;
}

/* The 6-bit quants are rebuilt as q - 32 in -32..31, so the products are plain signed ones. */
static void vec_dot_q6_k(int64_t n, float *s, const void *x, const void *y) {
    const el_block_q6_k *a = x;
    const el_block_q8_k *b = y;
    const uint8x16_t low4 = vdupq_n_u8(0x0F), low2 = vdupq_n_u8(3);
    const int8x16_t off = vdupq_n_s8(32);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        int32x4_t acc = vdupq_n_s32(0);
        for (int h = 0; h < 2; h++) { /* halves of 128, see el_block_q6_k */
            const uint8_t *ql = a[i].ql + 64 * h, *qh = a[i].qh + 32 * h;
            const int8_t *sc = a[i].scales + 8 * h, *q8 = b[i].qs + 128 * h;
            for (int quarter = 0; quarter < 4; quarter++) {
                const uint8_t *lo = ql + 32 * (quarter & 1);
                for (int g = 0; g < 2; g++) { /* sub-blocks of 16 */
                    uint8x16_t l = vld1q_u8(lo + 16 * g);
                    l = quarter >> 1 ? vshrq_n_u8(l, 4) : vandq_u8(l, low4);
                    uint8x16_t hb = vandq_u8(vshlq_u8(vld1q_u8(qh + 16 * g),
                                                      vdupq_n_s8((int8_t)(-2 * quarter))), low2);
                    int8x16_t q = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(l, vshlq_n_u8(hb, 4))), off);
                    int32x4_t p = dot_s8(vdupq_n_s32(0), q, vld1q_s8(q8 + 32 * quarter + 16 * g));
                    acc = vmlaq_n_s32(acc, p, sc[2 * quarter + g]);
                }
            }
        }
        sum += fp16_scalar(a[i].d) * b[i].d * (float)vaddvq_s32(acc);
    }
    *s = sum;
}

/* ---- edgelora's integer types (edge.h): sums stay in int32 lanes over a row or group */

static void vec_dot_w8(int64_t n, float *s, const void *x, const void *y) {
    const int8_t *q = (const int8_t *)x + sizeof(float), *a = (const int8_t *)y + sizeof(el_a8_header);
    int32x4_t acc0 = vdupq_n_s32(0), acc1 = vdupq_n_s32(0);
    for (int64_t i = 0; i < n; i += 32) {
        acc0 = dot_s8(acc0, vld1q_s8(q + i), vld1q_s8(a + i));
        acc1 = dot_s8(acc1, vld1q_s8(q + i + 16), vld1q_s8(a + i + 16));
    }
    el_a8_header h;
    memcpy(&h, y, sizeof h);
    *s = el_edge_row_scale(x) * h.d * (float)vaddvq_s32(vaddq_s32(acc0, acc1));
}

static void vec_dot_w4(int64_t n, float *s, const void *x, const void *y) {
    const uint8_t *qs = (const uint8_t *)x + sizeof(float);
    const int8_t *a = (const int8_t *)y + sizeof(el_a8_header);
    int32x4_t acc0 = vdupq_n_s32(0), acc1 = vdupq_n_s32(0);
    for (int64_t i = 0; i < n; i += 32) {
        int8x16_t lo, hi;
        chunk_s4(qs + i / 2, &lo, &hi);
        acc0 = dot_s8(acc0, lo, vld1q_s8(a + i));
        acc1 = dot_s8(acc1, hi, vld1q_s8(a + i + 16));
    }
    el_a8_header h;
    memcpy(&h, y, sizeof h);
    *s = el_edge_row_scale(x) * h.d * (float)vaddvq_s32(vaddq_s32(acc0, acc1));
}

static void vec_dot_w4g32(int64_t n, float *s, const void *x, const void *y) {
    const char *const row[4] = {x};
    rows_w4g(n, row, s, 1, y, 32);
}
static void vec_dot_w4g64(int64_t n, float *s, const void *x, const void *y) {
    const char *const row[4] = {x};
    rows_w4g(n, row, s, 1, y, 64);
}
static void vec_dot_w4g128(int64_t n, float *s, const void *x, const void *y) {
    const char *const row[4] = {x};
    rows_w4g(n, row, s, 1, y, 128);
}

#endif
