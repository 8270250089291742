/* blocks.h - the portable reference kernels (quant*.c, ref*.c) of ggml's quantized blocks, whose
 * byte layouts are core's (core/blocks.h, shared with the layout table), and the helpers the
 * SIMD kernels unpack them with. */
#ifndef EL_KERNELS_BLOCKS_H
#define EL_KERNELS_BLOCKS_H

#include <stdint.h>

#include "core/blocks.h"
#include "kernels/types.h"

/* The 6-bit scale and min of sub-block s (0..7) of a Q4_K block. Sub-blocks 0-3 keep theirs in
 * the low 6 bits of bytes s and s+4; sub-blocks 4-7 keep their low 4 bits in the nibbles of
 * byte s+4 (scale low, min high) and their top 2 bits in the top bits of bytes s-4 and s. */
static inline void el_q4_k_scale_min(const uint8_t *scales, int s, int *sc, int *m) {
    if (s < 4) {
        *sc = scales[s] & 63;
        *m = scales[s + 4] & 63;
    } else {
        *sc = (scales[s + 4] & 0xF) | ((scales[s - 4] >> 6) << 4);
        *m = (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4);
    }
}

/* Packs 8 6-bit scales and mins into Q4_K's (and Q5_K's) 12 bytes, as el_q4_k_scale_min reads
 * them. */
static inline void el_q4_k_pack_scales_mins(const int ls[8], const int lm[8], uint8_t scales[12]) {
    for (int s = 0; s < 4; s++) {
        scales[s] = (uint8_t)(ls[s] | ((ls[s + 4] >> 4) << 6));
        scales[s + 4] = (uint8_t)(lm[s] | ((lm[s + 4] >> 4) << 6));
        scales[s + 8] = (uint8_t)((ls[s + 4] & 0xF) | ((lm[s + 4] & 0xF) << 4));
    }
}

/* The 2-bit field of element e (0..255) of Q2_K's or Q3_K's qs: in each half of 128 elements,
 * element 32k + l is bits 2k, 2k+1 of byte l. */
static inline int el_k_2bit(const uint8_t *qs, int e) {
    return (qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32))) & 3;
}

/* The 16 signed scales of a Q3_K block: sub-block s's 6-bit field has its low 4 bits in nibble
 * s / 8 of byte s % 8 and its top 2 bits at bit 2 * (s / 4) of byte 8 + s % 4; the scale is the
 * field - 32. */
static inline void el_q3_k_scales(const uint8_t scales[12], int8_t out[16]) {
    for (int s = 0; s < 16; s++) {
        int field = ((scales[s % 8] >> 4 * (s / 8)) & 0xF) | ((scales[8 + s % 4] >> 2 * (s / 4)) & 3) << 4;
        out[s] = (int8_t)(field - 32);
    }
}

/* Element e's level in a Q3_K block, -4..3: the 2-bit field, less 4 where the high bit is clear. */
static inline int el_q3_k_level(const el_block_q3_k *b, int e) {
    return el_k_2bit(b->qs, e) - ((b->hmask[e % 32] >> (e / 32)) & 1 ? 0 : 4);
}

/* Element e's level in a Q5_K block, 0..31: its Q4_K nibble and its bit in qh. */
static inline int el_q5_k_level(const el_block_q5_k *b, int e) {
    int c = e / 64, l = e % 32, upper = e % 64 / 32;
    return ((b->qs[32 * c + l] >> 4 * upper) & 0xF) | ((b->qh[l] >> (2 * c + upper)) & 1) << 4;
}

/* Sub-block s's signed scale in an IQ4_XS block, -32..31 (see el_block_iq4_xs). */
static inline int el_iq4_xs_scale(const el_block_iq4_xs *b, int s) {
    return (((b->scales_l[s / 2] >> 4 * (s % 2)) & 0xF) | ((b->scales_h >> 2 * s) & 3) << 4) - 32;
}

/* IQ4_NL's and IQ4_XS's 16 levels (ggml's kvalues_iq4nl), in increasing order. */
extern const int8_t el_iq4nl_values[16];

/* The little-endian 32-bit word at p (compilers make this one load on little-endian CPUs). */
static inline uint32_t el_load_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* All 8 scales and 8 mins of a Q4_K block at once, as el_q4_k_scale_min gives them one by one:
 * the 12 bytes are worked on as three 32-bit words (4 sub-blocks per operation). Entry e of
 * out (scales 0-7, then mins 0-7) is byte e % 4 of out[e / 4], i.e. (out[e / 4] >> 8 * (e % 4))
 * & 0xFF; on a little-endian CPU the 4 words in memory order are the 16 entries in order. The
 * words are assembled byte by byte, so this is endian-neutral. */
static inline void el_q4_k_scales_mins(const uint8_t *scales, uint32_t out[4]) {
    const uint32_t u[3] = {el_load_le32(scales), el_load_le32(scales + 4), el_load_le32(scales + 8)};
    const uint32_t low6 = 0x3F3F3F3Fu, low4 = 0x0F0F0F0Fu, top2 = 0x03030303u;
    out[0] = u[0] & low6;                                    /* scales 0-3 */
    out[1] = (u[2] & low4) | ((u[0] >> 6) & top2) << 4;      /* scales 4-7 */
    out[2] = u[1] & low6;                                    /* mins 0-3 */
    out[3] = ((u[2] >> 4) & low4) | ((u[1] >> 6) & top2) << 4; /* mins 4-7 */
}

/* Reference conversions (quant.c); n is a multiple of the type's block size. */
void el_f32_to_float(const void *x, float *y, int64_t n);
void el_f32_from_float(const float *x, void *y, int64_t n);
void el_f16_to_float(const void *x, float *y, int64_t n);
void el_f16_from_float(const float *x, void *y, int64_t n);
void el_bf16_to_float(const void *x, float *y, int64_t n);
void el_bf16_from_float(const float *x, void *y, int64_t n);
void el_q8_k_to_float(const void *x, float *y, int64_t n);
void el_q8_k_from_float(const float *x, void *y, int64_t n);
void el_q8_k_from_float_static(const float *x, void *y, int64_t n, float d);
/* The grid step of activations of type act quantized at the static scale d by the *_static
 * quantizers: d, or its f16 rounding where blocks store their scale as f16 (Q8_0, Q8_1). */
float el_static_step(el_type act, float d);
/* quant_legacy.c */
void el_q8_0_to_float(const void *x, float *y, int64_t n);
void el_q8_0_from_float(const float *x, void *y, int64_t n);         /* activations */
void el_q8_0_from_float_static(const float *x, void *y, int64_t n, float d);
void el_q8_0_weights_from_float(const float *x, void *y, int64_t n); /* weight files */
void el_q4_0_to_float(const void *x, float *y, int64_t n);
void el_q4_0_from_float(const float *x, void *y, int64_t n);
void el_q4_1_to_float(const void *x, float *y, int64_t n);
void el_q4_1_from_float(const float *x, void *y, int64_t n);
void el_q5_0_to_float(const void *x, float *y, int64_t n);
void el_q5_0_from_float(const float *x, void *y, int64_t n);
void el_q5_1_to_float(const void *x, float *y, int64_t n);
void el_q5_1_from_float(const float *x, void *y, int64_t n);
void el_q8_1_to_float(const void *x, float *y, int64_t n);
void el_q8_1_from_float(const float *x, void *y, int64_t n);
void el_q8_1_from_float_static(const float *x, void *y, int64_t n, float d);
/* quant_k.c */
void el_q4_k_to_float(const void *x, float *y, int64_t n);
void el_q4_k_from_float(const float *x, void *y, int64_t n);
void el_q6_k_to_float(const void *x, float *y, int64_t n);
void el_q6_k_from_float(const float *x, void *y, int64_t n);
void el_q2_k_to_float(const void *x, float *y, int64_t n);
void el_q2_k_from_float(const float *x, void *y, int64_t n);
void el_q3_k_to_float(const void *x, float *y, int64_t n);
void el_q3_k_from_float(const float *x, void *y, int64_t n);
void el_q5_k_to_float(const void *x, float *y, int64_t n);
void el_q5_k_from_float(const float *x, void *y, int64_t n);
/* quant_iq4.c */
void el_iq4_nl_to_float(const void *x, float *y, int64_t n);
void el_iq4_nl_from_float(const float *x, void *y, int64_t n);
void el_iq4_xs_to_float(const void *x, float *y, int64_t n);
void el_iq4_xs_from_float(const float *x, void *y, int64_t n);

/* Reference dot products (ref.c): weight type . its vec_dot_type. */
void el_vec_dot_f32_ref(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_f16_ref(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_bf16_ref(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q8_0_ref(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q4_0_ref(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q4_k_ref(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q6_k_ref(int64_t n, float *s, const void *x, const void *y);
/* ref_legacy.c, ref_k.c, ref_iq4.c */
void el_vec_dot_q4_1_ref(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q5_0_ref(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q5_1_ref(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q2_k_ref(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q3_k_ref(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q5_k_ref(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_iq4_nl_ref(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_iq4_xs_ref(int64_t n, float *s, const void *x, const void *y);

#endif
