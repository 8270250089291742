/* tile_neon.h - the NEON 4x4 tiles, written once against neon_simd.h's dot_s8 step and built by
 * both NEON levels: tile_neon.c (widening multiplies) and tile_neon_dotprod.c (SDOT). Included
 * only from those two files, inside their aarch64 guard. */
#ifndef EL_KERNELS_TILE_NEON_H
#define EL_KERNELS_TILE_NEON_H

#include "kernels/neon_simd.h"

/* Four fp16 scales as a float vector. */
static inline float32x4_t fp16x4(uint16_t h0, uint16_t h1, uint16_t h2, uint16_t h3) {
    const uint16_t h[4] = {h0, h1, h2, h3};
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
}

/* The EL_TILE x EL_TILE tile of 32-element blocks with signed byte quants (q8_0 or q4_0
 * weights against q8_0 activations). Per block, the four weight rows' quants are unpacked once;
 * for each activation row the four integer dots are reduced to one vector [dot_0 .. dot_3] by
 * pairwise adds, scaled by [d_w0 .. d_w3] * d_a and accumulated: acc[r] holds y[r][0..3].
 * The loops over the tile are unrolled so that its arrays live in registers (-O2 would not). */
static inline __attribute__((always_inline)) void tile_b32(int64_t n, float *y, int64_t ldy,
                                                           const void *w, size_t w_stride,
                                                           const void *a, size_t a_stride,
                                                           bool q4) {
    float32x4_t acc[EL_TILE];
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) acc[r] = vdupq_n_f32(0.0f);
    const size_t w_block = q4 ? sizeof(el_block_q4_0) : sizeof(el_block_q8_0);
    const char *wp = w;
    for (int64_t i = 0; i < n / EL_QK8_0; i++, wp += w_block) {
        int8x16_t wl[EL_TILE], wh[EL_TILE];
        uint16_t wd[EL_TILE];
        #pragma GCC unroll 4
        for (int o = 0; o < EL_TILE; o++) {
            const char *blk = wp + (size_t)o * w_stride;
            if (q4) {
                q4_0_unpack((const el_block_q4_0 *)blk, &wl[o], &wh[o]);
                wd[o] = ((const el_block_q4_0 *)blk)->d;
            } else {
                const el_block_q8_0 *b8 = (const el_block_q8_0 *)blk;
                wl[o] = vld1q_s8(b8->qs);
                wh[o] = vld1q_s8(b8->qs + 16);
                wd[o] = b8->d;
            }
        }
        const float32x4_t dw = fp16x4(wd[0], wd[1], wd[2], wd[3]);
        #pragma GCC unroll 4
        for (int r = 0; r < EL_TILE; r++) {
            const el_block_q8_0 *ab = (const el_block_q8_0 *)((const char *)a + r * a_stride) + i;
            const int8x16_t yl = vld1q_s8(ab->qs), yh = vld1q_s8(ab->qs + 16);
            int32x4_t p[EL_TILE];
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++)
                p[o] = dot_s8(dot_s8(vdupq_n_s32(0), wl[o], yl), wh[o], yh);
            int32x4_t dots = fold4(p[0], p[1], p[2], p[3]);
            acc[r] = vfmaq_f32(acc[r], vcvtq_f32_s32(dots), vmulq_n_f32(dw, fp16_scalar(ab->d)));
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) vst1q_f32(y + r * ldy, acc[r]);
}

static void tile_q8_0(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    tile_b32(n, y, ldy, w, w_stride, a, a_stride, false);
}

static void tile_q4_0(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    tile_b32(n, y, ldy, w, w_stride, a, a_stride, true);
}

/* The 4x4 tile of Q4_K weights against Q8_K activations: per block, the four weight rows'
 * nibbles are unpacked once into bytes (and their scales, mins and fp16 factors read once);
 * then for each activation row the 4 x 8 sub-block dots reuse them, and the mins' term is a
 * widening multiply of the mins with the pairwise sums of the bsums. */
static void tile_q4_k(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    const uint8x16_t low4 = vdupq_n_u8(0x0F);
    float32x4_t acc[EL_TILE];
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) acc[r] = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        int8x16_t nib[EL_TILE][16]; /* [o][2 * sub-block + half]: 16 nibbles as bytes */
        int32_t sc[EL_TILE][8];
        int16x8_t m16[EL_TILE];
        float dw[EL_TILE], dminw[EL_TILE];
        for (int o = 0; o < EL_TILE; o++) {
            const el_block_q4_k *b = (const el_block_q4_k *)((const char *)w + o * w_stride) + i;
            uint32_t words[4];
            el_q4_k_scales_mins(b->scales, words);
            uint8_t mb[8];
            for (int sb = 0; sb < 8; sb++) {
                sc[o][sb] = (int32_t)((words[sb / 4] >> (8 * (sb % 4))) & 0xFF);
                mb[sb] = (uint8_t)(words[2 + sb / 4] >> (8 * (sb % 4)));
            }
            m16[o] = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mb)));
            for (int c = 0; c < 4; c++) {
                for (int k = 0; k < 2; k++) {
                    uint8x16_t q = vld1q_u8(b->qs + 32 * c + 16 * k);
                    nib[o][4 * c + k] = vreinterpretq_s8_u8(vandq_u8(q, low4));
                    nib[o][4 * c + 2 + k] = vreinterpretq_s8_u8(vshrq_n_u8(q, 4));
                }
            }
            dw[o] = fp16_scalar(b->d);
            dminw[o] = fp16_scalar(b->dmin);
        }
        const float32x4_t dwv = {dw[0], dw[1], dw[2], dw[3]};
        const float32x4_t dminv = {dminw[0], dminw[1], dminw[2], dminw[3]};
        for (int r = 0; r < EL_TILE; r++) {
            const el_block_q8_k *ab = (const el_block_q8_k *)((const char *)a + r * a_stride) + i;
            int32x4_t sum[EL_TILE];
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++) sum[o] = vdupq_n_s32(0);
            #pragma GCC unroll 8
            for (int sb = 0; sb < 8; sb++) {
                const int8x16_t y0 = vld1q_s8(ab->qs + 32 * sb), y1 = vld1q_s8(ab->qs + 32 * sb + 16);
                #pragma GCC unroll 4
                for (int o = 0; o < EL_TILE; o++) {
                    int32x4_t p = dot_s8(dot_s8(vdupq_n_s32(0), nib[o][2 * sb], y0), nib[o][2 * sb + 1], y1);
                    sum[o] = vmlaq_n_s32(sum[o], p, sc[o][sb]);
                }
            }
            int16x8_t pairs = vpaddq_s16(vld1q_s16(ab->bsums), vld1q_s16(ab->bsums + 8));
            int32x4_t mo[EL_TILE];
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++)
                mo[o] = vmlal_high_s16(vmull_s16(vget_low_s16(m16[o]), vget_low_s16(pairs)), m16[o], pairs);
            const float32x4_t dots = vcvtq_f32_s32(fold4(sum[0], sum[1], sum[2], sum[3]));
            const float32x4_t mins = vcvtq_f32_s32(fold4(mo[0], mo[1], mo[2], mo[3]));
            acc[r] = vfmaq_f32(acc[r], dots, vmulq_n_f32(dwv, ab->d));
            acc[r] = vfmsq_f32(acc[r], mins, vmulq_n_f32(dminv, ab->d));
        }
    }
    for (int r = 0; r < EL_TILE; r++) vst1q_f32(y + r * ldy, acc[r]);
}

/* The 4x4 tile of Q6_K weights against Q8_K activations: per block, the four weight rows'
 * quants are rebuilt once as q - 32 (signed bytes, sub-blocks of 16 in element order); then for
 * each activation row the 4 x 16 sub-block dots reuse them. */
static void tile_q6_k(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    const uint8x16_t low4 = vdupq_n_u8(0x0F), low2 = vdupq_n_u8(3);
    const int8x16_t off = vdupq_n_s8(32);
    float32x4_t acc[EL_TILE];
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) acc[r] = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        int8x16_t q6[EL_TILE][16]; /* [o][sub-block of 16] */
        int32_t sc[EL_TILE][16];
        float dw[EL_TILE];
        for (int o = 0; o < EL_TILE; o++) {
            const el_block_q6_k *b = (const el_block_q6_k *)((const char *)w + o * w_stride) + i;
            for (int h = 0; h < 2; h++) { /* halves of 128, see el_block_q6_k */
                const uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
                for (int quarter = 0; quarter < 4; quarter++) {
                    for (int g = 0; g < 2; g++) {
                        uint8x16_t l = vld1q_u8(ql + 32 * (quarter & 1) + 16 * g);
                        l = quarter >> 1 ? vshrq_n_u8(l, 4) : vandq_u8(l, low4);
                        uint8x16_t hb = vandq_u8(vshlq_u8(vld1q_u8(qh + 16 * g),
                                                          vdupq_n_s8((int8_t)(-2 * quarter))), low2);
                        q6[o][8 * h + 2 * quarter + g] =
                            vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(l, vshlq_n_u8(hb, 4))), off);
                    }
                }
            }
            for (int s16 = 0; s16 < 16; s16++) sc[o][s16] = b->scales[s16];
            dw[o] = fp16_scalar(b->d);
        }
        const float32x4_t dwv = {dw[0], dw[1], dw[2], dw[3]};
        for (int r = 0; r < EL_TILE; r++) {
            const el_block_q8_k *ab = (const el_block_q8_k *)((const char *)a + r * a_stride) + i;
            int32x4_t sum[EL_TILE];
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++) sum[o] = vdupq_n_s32(0);
            #pragma GCC unroll 16
            for (int s16 = 0; s16 < 16; s16++) {
                const int8x16_t yq = vld1q_s8(ab->qs + 16 * s16);
                #pragma GCC unroll 4
                for (int o = 0; o < EL_TILE; o++)
                    sum[o] = vmlaq_n_s32(sum[o], dot_s8(vdupq_n_s32(0), q6[o][s16], yq), sc[o][s16]);
            }
            acc[r] = vfmaq_f32(acc[r], vcvtq_f32_s32(fold4(sum[0], sum[1], sum[2], sum[3])),
                               vmulq_n_f32(dwv, ab->d));
        }
    }
    for (int r = 0; r < EL_TILE; r++) vst1q_f32(y + r * ldy, acc[r]);
}

/* EL_TILE W8 rows against EL_TILE A16 rows: each weight chunk widened once for the tile's
 * activation rows. */
static void tile_w8a16(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride) {
    const int8_t *q[EL_TILE];
    const uint8_t *v[EL_TILE];
    int64_t sum[EL_TILE][EL_TILE] = {{0}};
    for (int t = 0; t < EL_TILE; t++) {
        q[t] = (const int8_t *)((const char *)w + t * w_stride) + sizeof(float);
        v[t] = (const uint8_t *)el_a16_view_of((const char *)a + t * a_stride, n).q;
    }
    for (int64_t i = 0; i < n;) {
        int64_t end = el_a16_run_end(i, n);
        int32x4_t acc[EL_TILE][EL_TILE];
        for (int r = 0; r < EL_TILE; r++)
            for (int o = 0; o < EL_TILE; o++) acc[r][o] = vdupq_n_s32(0);
        for (; i < end; i += 8) {
            int16x8_t wq[EL_TILE];
            for (int o = 0; o < EL_TILE; o++) wq[o] = vmovl_s8(vld1_s8(q[o] + i));
            for (int r = 0; r < EL_TILE; r++) {
                int16x8_t av = vreinterpretq_s16_u8(vld1q_u8(v[r] + 2 * i));
                for (int o = 0; o < EL_TILE; o++) {
                    acc[r][o] = vmlal_s16(acc[r][o], vget_low_s16(wq[o]), vget_low_s16(av));
                    acc[r][o] = vmlal_high_s16(acc[r][o], wq[o], av);
                }
            }
        }
        for (int r = 0; r < EL_TILE; r++)
            for (int o = 0; o < EL_TILE; o++) sum[r][o] += vaddlvq_s32(acc[r][o]);
    }
    el_w8a16_tile_store(sum, y, ldy, w, w_stride, a, a_stride);
}

/* The 4x4 tile of W8 or W4 rows against A8 rows: 16 int32 accumulators over the whole row
 * (registers enough on aarch64), one float multiply per output at the end. */
static inline __attribute__((always_inline)) void tile_wrow(int64_t n, float *y, int64_t ldy,
                                                            const void *w, size_t w_stride,
                                                            const void *a, size_t a_stride,
                                                            bool w4) {
    int32x4_t acc[EL_TILE][EL_TILE]; /* [o][r] */
    #pragma GCC unroll 4
    for (int o = 0; o < EL_TILE; o++) {
        #pragma GCC unroll 4
        for (int r = 0; r < EL_TILE; r++) acc[o][r] = vdupq_n_s32(0);
    }
    const char *wq = (const char *)w + sizeof(float);
    const int8_t *aq = (const int8_t *)a + sizeof(el_a8_header);
    for (int64_t i = 0; i < n; i += 32) {
        int8x16_t lo[EL_TILE], hi[EL_TILE];
        #pragma GCC unroll 4
        for (int o = 0; o < EL_TILE; o++) {
            const char *q = wq + o * w_stride;
            if (w4) {
                chunk_s4((const uint8_t *)q + i / 2, &lo[o], &hi[o]);
            } else {
                lo[o] = vld1q_s8((const int8_t *)q + i);
                hi[o] = vld1q_s8((const int8_t *)q + i + 16);
            }
        }
        #pragma GCC unroll 4
        for (int r = 0; r < EL_TILE; r++) {
            const int8x16_t y0 = vld1q_s8(aq + r * a_stride + i), y1 = vld1q_s8(aq + r * a_stride + i + 16);
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++) acc[o][r] = dot_s8(dot_s8(acc[o][r], lo[o], y0), hi[o], y1);
        }
    }
    for (int r = 0; r < EL_TILE; r++) {
        el_a8_header h;
        memcpy(&h, (const char *)a + r * a_stride, sizeof h);
        for (int o = 0; o < EL_TILE; o++)
            y[r * ldy + o] = el_edge_row_scale((const char *)w + o * w_stride) * h.d *
                             (float)vaddvq_s32(acc[o][r]);
    }
}

static void tile_w8(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                    const void *a, size_t a_stride) {
    tile_wrow(n, y, ldy, w, w_stride, a, a_stride, false);
}

static void tile_w4(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                    const void *a, size_t a_stride) {
    tile_wrow(n, y, ldy, w, w_stride, a, a_stride, true);
}

#endif
