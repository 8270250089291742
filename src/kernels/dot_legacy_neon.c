/* dot_legacy_neon.c - dot_legacy_neon.h's dot products over widening multiplies (every aarch64 CPU). */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

#include "kernels/dot_legacy_neon.h"

/* The same arithmetic as el_q8_1_from_float (d = amax / 127, q = roundf(x * (1 / d)), ties away
 * from zero as vcvtaq rounds, s = fp16 of sum * d), so the same bytes: the activations of Q4_1
 * and Q5_1. */
void el_quantize_q8_1_neon(const float *x, void *y, int64_t n) {
    el_block_q8_1 *b = y;
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, x += EL_QK8_0) {
        float32x4_t v[8], m = vdupq_n_f32(0.0f);
        for (int k = 0; k < 8; k++) m = vmaxq_f32(m, vabsq_f32(v[k] = vld1q_f32(x + 4 * k)));
        float d = vmaxvq_f32(m) / 127, id = d != 0.0f ? 1.0f / d : 0.0f;
        int32x4_t q[8];
        for (int k = 0; k < 8; k++) q[k] = vcvtaq_s32_f32(vmulq_n_f32(v[k], id));
        int16x8_t h[4];
        for (int k = 0; k < 4; k++) h[k] = vcombine_s16(vmovn_s32(q[2 * k]), vmovn_s32(q[2 * k + 1]));
        const int8x16_t lo = vcombine_s8(vmovn_s16(h[0]), vmovn_s16(h[1]));
        const int8x16_t hi = vcombine_s8(vmovn_s16(h[2]), vmovn_s16(h[3]));
        vst1q_s8(b->qs, lo);
        vst1q_s8(b->qs + 16, hi);
        const int sum = vaddlvq_s8(lo) + vaddlvq_s8(hi);
        b->d = vget_lane_u16(vreinterpret_u16_f16(vcvt_f16_f32(vdupq_n_f32(d))), 0);
        b->s = vget_lane_u16(vreinterpret_u16_f16(vcvt_f16_f32(vdupq_n_f32(sum * d))), 0);
    }
}

/* This level's names (neon.h) for dot_legacy_neon.h's kernels: aliases, the code as it is. */

void el_vec_dot_q4_1_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q4_1")));

void el_vec_dot_q5_0_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q5_0")));

void el_vec_dot_q5_1_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q5_1")));

#endif
