/* neon_k_simd.h - the NEON routines of the blocks of 256 that dot Q8_K activations (Q2_K, Q3_K,
 * Q4_K, Q5_K, Q6_K, IQ4_XS), written once against neon_simd.h's dot_s8 step: R weight rows
 * against one activation row (the dot products: R = 1; the gemvs: several rows sharing every
 * activation load), and the unpacking of a block into bytes that the 4x4 tiles reuse for four
 * activation rows. Included by the dot_, gemv_ and tile_ headers of the kquant and iq4
 * families, inside their aarch64 guard.
 *
 * A block is taken 64 elements at a time: four registers of 16 weight values as bytes, dotted
 * with the four activation registers of the same elements. The values are unsigned where the
 * type has an offset (Q3_K's -4, Q6_K's -32) or a min (Q2_K, Q4_K, Q5_K): the offset or the
 * mins come off once per block through the activations' sums of 16 (bsums), so no subtraction
 * per weight byte. The fifth or sixth bits are put in place by shift-and-insert (SLI, SRI),
 * which keep the nibble and insert the high bits in one instruction. Each sub-block's integer
 * dot takes its scale by a multiply-accumulate by vector lane, and the float scales come in once
 * per block. Integer sums are exact, so a row's result does not depend on its company. */
#ifndef EL_KERNELS_NEON_K_SIMD_H
#define EL_KERNELS_NEON_K_SIMD_H

#include "kernels/neon_simd.h"

/* What one weight block contributes beyond its quants: the integer scale of each sub-block,
 * lane s % 8 of sc[s / 8] (sub-blocks of 16 for Q2_K, Q3_K, Q6_K; of 32 for the others, all in
 * sc[0]), widened to 32 bits a chunk at a time (fewer registers held per row); the integer
 * offset term off (the mins, or the level offset, against the activation sums); and the float
 * factors: the block adds act_d * (d * dot - dmin * off). */
typedef struct k_scales {
    int16x8_t sc[2];
    int32_t off;
    float d, dmin;
} k_scales;

static inline bool k_sub16(el_type t) {
    return t == EL_TYPE_Q2_K || t == EL_TYPE_Q3_K || t == EL_TYPE_Q6_K;
}

/* The types whose offset term has its own float factor (dmin); the others' is in d's units. */
static inline bool k_has_mins(el_type t) {
    return t == EL_TYPE_Q2_K || t == EL_TYPE_Q4_K || t == EL_TYPE_Q5_K;
}

static inline size_t k_block_bytes(el_type t) {
    switch (t) {
    case EL_TYPE_Q2_K: return sizeof(el_block_q2_k);
    case EL_TYPE_Q3_K: return sizeof(el_block_q3_k);
    case EL_TYPE_Q4_K: return sizeof(el_block_q4_k);
    case EL_TYPE_Q5_K: return sizeof(el_block_q5_k);
    case EL_TYPE_Q6_K: return sizeof(el_block_q6_k);
    default: return sizeof(el_block_iq4_xs);
    }
}

/* 16 int8 sub-block scales widened into the two vectors of k_scales. */
static inline void k_scales_s8(int8x16_t s8, int16x8_t sc[2]) {
    sc[0] = vmovl_s8(vget_low_s8(s8));
    sc[1] = vmovl_high_s8(s8);
}

/* sum over the 16 sub-blocks of c[s] * bsums[s]. */
static inline int32_t k_dot16(int16x8_t c_lo, int16x8_t c_hi, int16x8_t bs_lo, int16x8_t bs_hi) {
    int32x4_t p = vmull_s16(vget_low_s16(c_lo), vget_low_s16(bs_lo));
    p = vmlal_high_s16(p, c_lo, bs_lo);
    p = vmlal_s16(p, vget_low_s16(c_hi), vget_low_s16(bs_hi));
    return vaddvq_s32(vmlal_high_s16(p, c_hi, bs_hi));
}

/* Q4_K's and Q5_K's 8 scales and 8 mins (el_q4_k_scales_mins); the mins meet the sums of 32
 * (pairs of bsums, bs32). */
static inline void k_scales_q4_k(const uint8_t *scales, int16x8_t bs32, k_scales *k) {
    uint32_t w[4];
    el_q4_k_scales_mins(scales, w);
    k->sc[0] = vreinterpretq_s16_u16(vmovl_u8(vcreate_u8((uint64_t)w[0] | (uint64_t)w[1] << 32)));
    const int16x8_t m = vreinterpretq_s16_u16(vmovl_u8(vcreate_u8((uint64_t)w[2] | (uint64_t)w[3] << 32)));
    k->off = vaddvq_s32(vmlal_high_s16(vmull_s16(vget_low_s16(m), vget_low_s16(bs32)), m, bs32));
}

/* Q3_K's 16 signed scales (el_q3_k_scales) as bytes: the low nibbles of bytes 0-7 (sub-blocks
 * 0-7) and their high nibbles (8-15), with the top 2 bits of sub-block s shifted out of byte
 * 8 + s % 4 by 2 * (s / 4). */
static inline int8x16_t q3_k_scales(const uint8_t *scales) {
    static const int8_t top_shift[16] = {0, 0, 0, 0, -2, -2, -2, -2, -4, -4, -4, -4, -6, -6, -6, -6};
    const uint8x8_t b = vld1_u8(scales);
    const uint8x16_t low = vcombine_u8(vand_u8(b, vdup_n_u8(0x0F)), vshr_n_u8(b, 4));
    const uint8x16_t top = vshlq_u8(vreinterpretq_u8_u32(vdupq_n_u32(el_load_le32(scales + 8))),
                                    vld1q_s8(top_shift));
    const uint8x16_t field = vandq_u8(vsliq_n_u8(low, top, 4), vdupq_n_u8(0x3F));
    return vsubq_s8(vreinterpretq_s8_u8(field), vdupq_n_s8(32));
}

/* IQ4_XS's 8 signed scales (el_iq4_xs_scale) as int16: nibble s % 2 of scales_l[s / 2], and
 * bits 2s, 2s+1 of scales_h above it. */
static inline int16x8_t iq4_xs_scales(const el_block_iq4_xs *b) {
    static const int16_t top_shift[8] = {0, -2, -4, -6, -8, -10, -12, -14};
    const uint8x8_t l = vcreate_u8(el_load_le32(b->scales_l));
    const uint8x8_t nib = vzip1_u8(vand_u8(l, vdup_n_u8(0x0F)), vshr_n_u8(l, 4));
    const uint16x8_t top = vandq_u16(vshlq_u16(vdupq_n_u16(b->scales_h), vld1q_s16(top_shift)),
                                     vdupq_n_u16(3));
    const uint16x8_t ls = vorrq_u16(vmovl_u8(nib), vshlq_n_u16(top, 4));
    return vsubq_s16(vreinterpretq_s16_u16(ls), vdupq_n_s16(32));
}

/* The scales of one weight block of type t against the activation sums bs_lo, bs_hi (bsums
 * 0-7, 8-15) and bs32 (their pair sums). */
static inline __attribute__((always_inline)) void k_block_scales(el_type t, const char *blk,
                                                                 int16x8_t bs_lo, int16x8_t bs_hi,
                                                                 int16x8_t bs32, k_scales *k) {
    switch (t) {
    case EL_TYPE_Q2_K: {
        const el_block_q2_k *b = (const el_block_q2_k *)blk;
        const uint8x16_t s = vld1q_u8(b->scales);
        k_scales_s8(vreinterpretq_s8_u8(vandq_u8(s, vdupq_n_u8(0x0F))), k->sc);
        const uint8x16_t m = vshrq_n_u8(s, 4);
        k->off = k_dot16(vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(m))),
                         vreinterpretq_s16_u16(vmovl_high_u8(m)), bs_lo, bs_hi);
        k->d = fp16_scalar(b->d);
        k->dmin = fp16_scalar(b->dmin);
        break;
    }
    case EL_TYPE_Q3_K: { /* levels u - 4, u = 0..7: off = 4 * sum sc * bsums */
        const el_block_q3_k *b = (const el_block_q3_k *)blk;
        const int8x16_t s = q3_k_scales(b->scales);
        k_scales_s8(s, k->sc);
        k->off = 4 * k_dot16(vmovl_s8(vget_low_s8(s)), vmovl_high_s8(s), bs_lo, bs_hi);
        k->d = k->dmin = fp16_scalar(b->d);
        break;
    }
    case EL_TYPE_Q4_K: {
        const el_block_q4_k *b = (const el_block_q4_k *)blk;
        k_scales_q4_k(b->scales, bs32, k);
        k->d = fp16_scalar(b->d);
        k->dmin = fp16_scalar(b->dmin);
        break;
    }
    case EL_TYPE_Q5_K: {
        const el_block_q5_k *b = (const el_block_q5_k *)blk;
        k_scales_q4_k(b->scales, bs32, k);
        k->d = fp16_scalar(b->d);
        k->dmin = fp16_scalar(b->dmin);
        break;
    }
    case EL_TYPE_Q6_K: { /* levels u - 32, u = 0..63: off = 32 * sum sc * bsums */
        const el_block_q6_k *b = (const el_block_q6_k *)blk;
        const int8x16_t s = vld1q_s8(b->scales);
        k_scales_s8(s, k->sc);
        k->off = 32 * k_dot16(vmovl_s8(vget_low_s8(s)), vmovl_high_s8(s), bs_lo, bs_hi);
        k->d = k->dmin = fp16_scalar(b->d);
        break;
    }
    default: { /* IQ4_XS: signed levels, no offset */
        const el_block_iq4_xs *b = (const el_block_iq4_xs *)blk;
        k->sc[0] = iq4_xs_scales(b);
        k->off = 0;
        k->d = k->dmin = fp16_scalar(b->d);
        break;
    }
    }
}

/* Elements 64c .. 64c+63 of a weight block of type t as four registers of 16 values (unsigned,
 * or IQ4_XS's signed levels by a table lookup in iq4). c is a constant after inlining. */
static inline __attribute__((always_inline)) void k_chunk(el_type t, const char *blk, int c,
                                                          int8x16_t iq4, int8x16_t v[4]) {
    const uint8x16_t low4 = vdupq_n_u8(0x0F);
    switch (t) {
    case EL_TYPE_Q2_K: { /* half c / 2; fields 2 (c % 2) and 2 (c % 2) + 1 of each byte */
        const el_block_q2_k *b = (const el_block_q2_k *)blk;
        const uint8x16_t m3 = vdupq_n_u8(3);
        const uint8x16_t q0 = vld1q_u8(b->qs + 32 * (c / 2)), q1 = vld1q_u8(b->qs + 32 * (c / 2) + 16);
        if (c % 2 == 0) {
            v[0] = vreinterpretq_s8_u8(vandq_u8(q0, m3));
            v[1] = vreinterpretq_s8_u8(vandq_u8(q1, m3));
            v[2] = vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(q0, 2), m3));
            v[3] = vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(q1, 2), m3));
        } else {
            v[0] = vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(q0, 4), m3));
            v[1] = vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(q1, 4), m3));
            v[2] = vreinterpretq_s8_u8(vshrq_n_u8(q0, 6));
            v[3] = vreinterpretq_s8_u8(vshrq_n_u8(q1, 6));
        }
        break;
    }
    case EL_TYPE_Q3_K: { /* Q2_K's fields, the high bit (bit 2c or 2c + 1 of hmask) above */
        const el_block_q3_k *b = (const el_block_q3_k *)blk;
        const uint8x16_t m7 = vdupq_n_u8(7);
        const int8x16_t down = vdupq_n_s8((int8_t)(-2 * c));
        const uint8x16_t h0 = vshlq_u8(vld1q_u8(b->hmask), down);
        const uint8x16_t h1 = vshlq_u8(vld1q_u8(b->hmask + 16), down);
        const uint8x16_t q0 = vld1q_u8(b->qs + 32 * (c / 2)), q1 = vld1q_u8(b->qs + 32 * (c / 2) + 16);
        uint8x16_t f0, f1, g0, g1; /* the fields in the low 2 bits (the rest is shifted out) */
        if (c % 2 == 0) {
            f0 = q0, f1 = q1, g0 = vshrq_n_u8(q0, 2), g1 = vshrq_n_u8(q1, 2);
        } else {
            f0 = vshrq_n_u8(q0, 4), f1 = vshrq_n_u8(q1, 4), g0 = vshrq_n_u8(q0, 6), g1 = vshrq_n_u8(q1, 6);
        }
        v[0] = vreinterpretq_s8_u8(vandq_u8(vsliq_n_u8(f0, h0, 2), m7));
        v[1] = vreinterpretq_s8_u8(vandq_u8(vsliq_n_u8(f1, h1, 2), m7));
        v[2] = vreinterpretq_s8_u8(vandq_u8(vsliq_n_u8(g0, vshrq_n_u8(h0, 1), 2), m7));
        v[3] = vreinterpretq_s8_u8(vandq_u8(vsliq_n_u8(g1, vshrq_n_u8(h1, 1), 2), m7));
        break;
    }
    case EL_TYPE_Q4_K: {
        const el_block_q4_k *b = (const el_block_q4_k *)blk;
        const uint8x16_t q0 = vld1q_u8(b->qs + 32 * c), q1 = vld1q_u8(b->qs + 32 * c + 16);
        v[0] = vreinterpretq_s8_u8(vandq_u8(q0, low4));
        v[1] = vreinterpretq_s8_u8(vandq_u8(q1, low4));
        v[2] = vreinterpretq_s8_u8(vshrq_n_u8(q0, 4));
        v[3] = vreinterpretq_s8_u8(vshrq_n_u8(q1, 4));
        break;
    }
    case EL_TYPE_Q5_K: { /* Q4_K's nibbles, bit 2c (low) or 2c + 1 (high) of qh inserted above */
        const el_block_q5_k *b = (const el_block_q5_k *)blk;
        const uint8x16_t m5 = vdupq_n_u8(0x1F);
        const int8x16_t down = vdupq_n_s8((int8_t)(-2 * c)), up = vdupq_n_s8((int8_t)(3 - 2 * c));
        const uint8x16_t qh0 = vld1q_u8(b->qh), qh1 = vld1q_u8(b->qh + 16);
        const uint8x16_t q0 = vld1q_u8(b->qs + 32 * c), q1 = vld1q_u8(b->qs + 32 * c + 16);
        v[0] = vreinterpretq_s8_u8(vandq_u8(vsliq_n_u8(q0, vshlq_u8(qh0, down), 4), m5));
        v[1] = vreinterpretq_s8_u8(vandq_u8(vsliq_n_u8(q1, vshlq_u8(qh1, down), 4), m5));
        v[2] = vreinterpretq_s8_u8(vandq_u8(vsriq_n_u8(vshlq_u8(qh0, up), q0, 4), m5));
        v[3] = vreinterpretq_s8_u8(vandq_u8(vsriq_n_u8(vshlq_u8(qh1, up), q1, 4), m5));
        break;
    }
    case EL_TYPE_Q6_K: { /* half c / 2: low nibbles of ql (c even) or high, qh's bit pairs above */
        const el_block_q6_k *b = (const el_block_q6_k *)blk;
        const uint8x16_t m6 = vdupq_n_u8(0x3F);
        const uint8_t *ql = b->ql + 64 * (c / 2), *qh = b->qh + 32 * (c / 2);
        const uint8x16_t l0 = vld1q_u8(ql), l1 = vld1q_u8(ql + 16);
        const uint8x16_t l2 = vld1q_u8(ql + 32), l3 = vld1q_u8(ql + 48);
        const uint8x16_t h0 = vld1q_u8(qh), h1 = vld1q_u8(qh + 16);
        const uint8x16_t h0s = vshrq_n_u8(h0, 2), h1s = vshrq_n_u8(h1, 2);
        uint8x16_t u0, u1, u2, u3;
        if (c % 2 == 0) { /* bits 0-1 and 2-3 of qh */
            u0 = vsliq_n_u8(l0, h0, 4), u1 = vsliq_n_u8(l1, h1, 4);
            u2 = vsliq_n_u8(l2, h0s, 4), u3 = vsliq_n_u8(l3, h1s, 4);
        } else { /* bits 4-5 and 6-7 */
            u0 = vsriq_n_u8(h0, l0, 4), u1 = vsriq_n_u8(h1, l1, 4);
            u2 = vsriq_n_u8(h0s, l2, 4), u3 = vsriq_n_u8(h1s, l3, 4);
        }
        v[0] = vreinterpretq_s8_u8(vandq_u8(u0, m6));
        v[1] = vreinterpretq_s8_u8(vandq_u8(u1, m6));
        v[2] = vreinterpretq_s8_u8(vandq_u8(u2, m6));
        v[3] = vreinterpretq_s8_u8(vandq_u8(u3, m6));
        break;
    }
    default: { /* IQ4_XS: sub-blocks 2c and 2c + 1, each low nibbles then high, as levels */
        const el_block_iq4_xs *b = (const el_block_iq4_xs *)blk;
        const uint8x16_t q0 = vld1q_u8(b->qs + 32 * c), q1 = vld1q_u8(b->qs + 32 * c + 16);
        v[0] = vqtbl1q_s8(iq4, vandq_u8(q0, low4));
        v[1] = vqtbl1q_s8(iq4, vshrq_n_u8(q0, 4));
        v[2] = vqtbl1q_s8(iq4, vandq_u8(q1, low4));
        v[3] = vqtbl1q_s8(iq4, vshrq_n_u8(q1, 4));
        break;
    }
    }
}

/* acc + the integer dots of chunk c's four registers v with the activations a, each times its
 * sub-block's scale (by lane). */
static inline __attribute__((always_inline)) int32x4_t k_chunk_dot(el_type t, int32x4_t acc,
                                                                   const int8x16_t v[4],
                                                                   const int8x16_t a[4],
                                                                   const int16x8_t sc16[2], int c) {
    const int32x4_t zero = vdupq_n_s32(0);
    if (k_sub16(t)) { /* sub-blocks 4c .. 4c+3 */
        const int16x8_t h = sc16[c / 2];
        const int32x4_t sc = c % 2 ? vmovl_high_s16(h) : vmovl_s16(vget_low_s16(h));
        acc = vmlaq_laneq_s32(acc, dot_s8(zero, v[0], a[0]), sc, 0);
        acc = vmlaq_laneq_s32(acc, dot_s8(zero, v[1], a[1]), sc, 1);
        acc = vmlaq_laneq_s32(acc, dot_s8(zero, v[2], a[2]), sc, 2);
        return vmlaq_laneq_s32(acc, dot_s8(zero, v[3], a[3]), sc, 3);
    }
    /* sub-blocks 2c, 2c+1 */
    const int32x4_t sc = c < 2 ? vmovl_s16(vget_low_s16(sc16[0])) : vmovl_high_s16(sc16[0]);
    const int32x4_t p0 = dot_s8(dot_s8(zero, v[0], a[0]), v[1], a[1]);
    const int32x4_t p1 = dot_s8(dot_s8(zero, v[2], a[2]), v[3], a[3]);
    if (c % 2 == 0) return vmlaq_laneq_s32(vmlaq_laneq_s32(acc, p0, sc, 0), p1, sc, 1);
    return vmlaq_laneq_s32(vmlaq_laneq_s32(acc, p0, sc, 2), p1, sc, 3);
}

/* Chunk c of one block for R rows sharing the activation loads. */
static inline __attribute__((always_inline)) void k_rows_chunk(el_type t, const char *const blk[4],
                                                               const int R, const int8_t *aq,
                                                               const k_scales ks[4],
                                                               int32x4_t acc[4], int8x16_t iq4,
                                                               int c) {
    int8x16_t a[4];
    #pragma GCC unroll 4
    for (int k = 0; k < 4; k++) a[k] = vld1q_s8(aq + 64 * c + 16 * k);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        int8x16_t v[4];
        k_chunk(t, blk[r], c, iq4, v);
        acc[r] = k_chunk_dot(t, acc[r], v, a, ks[r].sc, c);
    }
}

/* s[r] = the dot of the R rows row[r] (R = 1, 2 or 4, a constant after inlining) of type t with
 * the nb Q8_K activation blocks a, each row as it would be alone. */
static inline __attribute__((always_inline)) void rows_k(el_type t, const char *const row[4],
                                                         float s[4], const int R,
                                                         const el_block_q8_k *a, int64_t nb) {
    const size_t bytes = k_block_bytes(t);
    const int8x16_t iq4 = vld1q_s8(el_iq4nl_values);
    float sum[4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) sum[r] = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        const el_block_q8_k *ab = a + i;
        const int16x8_t bs_lo = vld1q_s16(ab->bsums), bs_hi = vld1q_s16(ab->bsums + 8);
        const int16x8_t bs32 = vpaddq_s16(bs_lo, bs_hi);
        const char *blk[4];
        k_scales ks[4];
        int32x4_t acc[4];
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            blk[r] = row[r] + (size_t)i * bytes;
            k_block_scales(t, blk[r], bs_lo, bs_hi, bs32, &ks[r]);
            acc[r] = vdupq_n_s32(0);
        }
        k_rows_chunk(t, blk, R, ab->qs, ks, acc, iq4, 0);
        k_rows_chunk(t, blk, R, ab->qs, ks, acc, iq4, 1);
        k_rows_chunk(t, blk, R, ab->qs, ks, acc, iq4, 2);
        k_rows_chunk(t, blk, R, ab->qs, ks, acc, iq4, 3);
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const int32_t dot = vaddvq_s32(acc[r]);
            if (k_has_mins(t))
                sum[r] += ab->d * (ks[r].d * (float)dot - ks[r].dmin * (float)ks[r].off);
            else /* the offset is exact in integers */
                sum[r] += ab->d * ks[r].d * (float)(dot - ks[r].off);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = sum[r];
}

/* One weight block unpacked for a tile: its 256 values as bytes in element order, the
 * sub-block scales and the offset coefficients per sub-block of 16 (cof: the block adds
 * act_d * (d * dot - dmin * sum cof[s] bsums[s])), and the float factors. */
typedef struct k_unpacked {
    int8x16_t v[16];
    int16x8_t sc[2];
    int16x8_t cof_lo, cof_hi;
    float d, dmin;
} k_unpacked;

/* The offset coefficients per sub-block of 16 of a weight block of type t: the mins (each
 * 32-element min twice for Q4_K and Q5_K), or the level offset times the scale. */
static inline __attribute__((always_inline)) void k_offset_coefs(el_type t, const char *blk,
                                                                 k_unpacked *u) {
    switch (t) {
    case EL_TYPE_Q2_K: {
        const uint8x16_t m = vshrq_n_u8(vld1q_u8(((const el_block_q2_k *)blk)->scales), 4);
        u->cof_lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(m)));
        u->cof_hi = vreinterpretq_s16_u16(vmovl_high_u8(m));
        break;
    }
    case EL_TYPE_Q3_K: case EL_TYPE_Q6_K: {
        const int8x16_t s = t == EL_TYPE_Q3_K ? q3_k_scales(((const el_block_q3_k *)blk)->scales)
                                              : vld1q_s8(((const el_block_q6_k *)blk)->scales);
        const int16_t o = t == EL_TYPE_Q3_K ? 4 : 32;
        u->cof_lo = vmulq_n_s16(vmovl_s8(vget_low_s8(s)), o);
        u->cof_hi = vmulq_n_s16(vmovl_high_s8(s), o);
        break;
    }
    case EL_TYPE_Q4_K: case EL_TYPE_Q5_K: {
        const uint8_t *scales = t == EL_TYPE_Q4_K ? ((const el_block_q4_k *)blk)->scales
                                                  : ((const el_block_q5_k *)blk)->scales;
        uint32_t w[4];
        el_q4_k_scales_mins(scales, w);
        const uint8x8_t m = vcreate_u8((uint64_t)w[2] | (uint64_t)w[3] << 32);
        const uint8x8x2_t twice = vzip_u8(m, m);
        u->cof_lo = vreinterpretq_s16_u16(vmovl_u8(twice.val[0]));
        u->cof_hi = vreinterpretq_s16_u16(vmovl_u8(twice.val[1]));
        break;
    }
    default:
        u->cof_lo = u->cof_hi = vdupq_n_s16(0);
        break;
    }
}

/* Unpacks one weight block of type t for a tile. */
static inline __attribute__((always_inline)) void k_unpack(el_type t, const char *blk,
                                                           k_unpacked *u) {
    const int16x8_t zero = vdupq_n_s16(0);
    const int8x16_t iq4 = vld1q_s8(el_iq4nl_values);
    k_scales ks = {.sc = {zero, zero}};
    k_block_scales(t, blk, zero, zero, zero, &ks);
    u->sc[0] = ks.sc[0];
    u->sc[1] = ks.sc[1];
    u->d = ks.d;
    u->dmin = ks.dmin;
    k_offset_coefs(t, blk, u);
    k_chunk(t, blk, 0, iq4, u->v);
    k_chunk(t, blk, 1, iq4, u->v + 4);
    k_chunk(t, blk, 2, iq4, u->v + 8);
    k_chunk(t, blk, 3, iq4, u->v + 12);
}

/* The EL_TILE x EL_TILE tile of weight type t against Q8_K activations: per block, the four
 * weight rows are unpacked once (k_unpack); then each activation row's 4 x 16 dots reuse them,
 * and each output's offset term is a widening multiply of its coefficients with the bsums. */
static inline __attribute__((always_inline)) void tile_k(el_type t, int64_t n, float *y,
                                                         int64_t ldy, const void *w,
                                                         size_t w_stride, const void *a,
                                                         size_t a_stride) {
    const size_t bytes = k_block_bytes(t);
    float32x4_t acc[EL_TILE];
    for (int r = 0; r < EL_TILE; r++) acc[r] = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        k_unpacked u[EL_TILE];
        for (int o = 0; o < EL_TILE; o++) k_unpack(t, (const char *)w + o * w_stride + i * bytes, &u[o]);
        const float32x4_t dw = {u[0].d, u[1].d, u[2].d, u[3].d};
        const float32x4_t dminw = {u[0].dmin, u[1].dmin, u[2].dmin, u[3].dmin};
        for (int r = 0; r < EL_TILE; r++) {
            const el_block_q8_k *ab = (const el_block_q8_k *)((const char *)a + r * a_stride) + i;
            const int16x8_t bs_lo = vld1q_s16(ab->bsums), bs_hi = vld1q_s16(ab->bsums + 8);
            int32x4_t sum[EL_TILE], off[EL_TILE];
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++) sum[o] = vdupq_n_s32(0);
            #pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                int8x16_t av[4];
                #pragma GCC unroll 4
                for (int k = 0; k < 4; k++) av[k] = vld1q_s8(ab->qs + 64 * c + 16 * k);
                #pragma GCC unroll 4
                for (int o = 0; o < EL_TILE; o++) sum[o] = k_chunk_dot(t, sum[o], u[o].v + 4 * c, av, u[o].sc, c);
            }
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++) {
                int32x4_t p = vmull_s16(vget_low_s16(u[o].cof_lo), vget_low_s16(bs_lo));
                p = vmlal_high_s16(p, u[o].cof_lo, bs_lo);
                p = vmlal_s16(p, vget_low_s16(u[o].cof_hi), vget_low_s16(bs_hi));
                off[o] = vmlal_high_s16(p, u[o].cof_hi, bs_hi);
            }
            const int32x4_t dots = fold4(sum[0], sum[1], sum[2], sum[3]);
            const int32x4_t offs = fold4(off[0], off[1], off[2], off[3]);
            float32x4_t blockv;
            if (k_has_mins(t))
                blockv = vfmsq_f32(vmulq_f32(dw, vcvtq_f32_s32(dots)), dminw, vcvtq_f32_s32(offs));
            else /* the offset is exact in integers */
                blockv = vmulq_f32(dw, vcvtq_f32_s32(vsubq_s32(dots, offs)));
            acc[r] = vfmaq_n_f32(acc[r], blockv, ab->d);
        }
    }
    for (int r = 0; r < EL_TILE; r++) vst1q_f32(y + r * ldy, acc[r]);
}

#endif
