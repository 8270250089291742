/* dot_neon.c - the NEON level's dot products (dot_neon.h's over widening multiplies, every
 * aarch64 CPU; and float ones) and activation quantizers, byte-exact with the reference's. */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

#include "kernels/dot_neon.h"
#include "kernels/float_neon.h"

/* The float types' dot products: float_neon.h's sequence for one output, the bits the gemvs
 * and tiles give it. */
static inline __attribute__((always_inline)) void vec_dot_float(el_float_kind kind, int64_t n,
                                                                float *s, const void *x,
                                                                const void *y) {
    const float *a = y;
    float t[1][4];
    float_dots_neon(kind, n, &x, 1, &a, 1, t);
    *s = t[0][0];
}

void el_vec_dot_f32_neon(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_float(EL_FLOAT_F32, n, s, x, y);
}

void el_vec_dot_f16_neon(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_float(EL_FLOAT_F16, n, s, x, y);
}

void el_vec_dot_bf16_neon(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_float(EL_FLOAT_BF16, n, s, x, y);
}

/* Rounds 16 floats times id to the nearest integer (ties to even, like lrintf in the default
 * rounding mode) and narrows them to bytes, with -128 clamped to -127 like the reference. */
static inline int8x16_t round_to_s8(const float *x, float id) {
    int32x4_t q[4];
    for (int k = 0; k < 4; k++) q[k] = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + 4 * k), id));
    int16x8_t lo = vcombine_s16(vqmovn_s32(q[0]), vqmovn_s32(q[1]));
    int16x8_t hi = vcombine_s16(vqmovn_s32(q[2]), vqmovn_s32(q[3]));
    return vmaxq_s8(vcombine_s8(vqmovn_s16(lo), vqmovn_s16(hi)), vdupq_n_s8(-127));
}

static float absmax(const float *x, int n) {
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int i = 0; i < n; i += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + i)));
    return vmaxvq_f32(m);
}

/* The same arithmetic as el_q8_0_from_float (d = amax / 127, q = round(x * (1 / d))), so the
 * same bytes; the fp16 conversion rounds to nearest even like el_fp32_to_fp16. */
void el_quantize_q8_0_neon(const float *x, void *y, int64_t n) {
    el_block_q8_0 *b = y;
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, x += EL_QK8_0) {
        float d = absmax(x, EL_QK8_0) / 127.0f;
        float id = d > 0.0f ? 1.0f / d : 0.0f;
        b->d = vget_lane_u16(vreinterpret_u16_f16(vcvt_f16_f32(vdupq_n_f32(d))), 0);
        vst1q_s8(b->qs, round_to_s8(x, id));
        vst1q_s8(b->qs + 16, round_to_s8(x + 16, id));
    }
}

void el_quantize_q8_k_neon(const float *x, void *y, int64_t n) {
    el_block_q8_k *b = y;
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++, x += EL_QK_K) {
        float d = absmax(x, EL_QK_K) / 127.0f;
        float id = d > 0.0f ? 1.0f / d : 0.0f;
        b->d = d;
        for (int g = 0; g < EL_QK_K / 16; g++) {
            int8x16_t q = round_to_s8(x + 16 * g, id);
            vst1q_s8(b->qs + 16 * g, q);
            b->bsums[g] = (int16_t)vaddlvq_s8(q);
        }
    }
}

/* A8 row: the reference's arithmetic (d = amax / 127 over the row), so the same bytes. */
void el_quantize_a8_neon(const float *x, void *y, int64_t n) {
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < n; i += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + i)));
    el_a8_header h = {.d = vmaxvq_f32(m) / 127.0f};
    float id = h.d > 0.0f ? 1.0f / h.d : 0.0f;
    int8_t *q = (int8_t *)y + sizeof h;
    for (int64_t i = 0; i < n; i += 16) {
        int8x16_t v = round_to_s8(x + i, id);
        vst1q_s8(q + i, v);
        h.sum += vaddlvq_s8(v);
    }
    memcpy(y, &h, sizeof h);
}

/* 16 values on a fixed grid (1 / id per step): the reference's arithmetic (x * id clamped to
 * -127..127, a NaN to -127 as fmaxnm gives the number of a NaN and a number, then rounded to
 * nearest even), so the same bytes. */
static int8x16_t static_to_s8(const float *x, float id) {
    const float32x4_t hi = vdupq_n_f32(127.0f), lo = vdupq_n_f32(-127.0f);
    int32x4_t v[4];
    for (int k = 0; k < 4; k++)
        v[k] = vcvtnq_s32_f32(vminq_f32(vmaxnmq_f32(vmulq_n_f32(vld1q_f32(x + 4 * k), id), lo), hi));
    int16x8_t a = vcombine_s16(vmovn_s32(v[0]), vmovn_s32(v[1]));
    int16x8_t b = vcombine_s16(vmovn_s32(v[2]), vmovn_s32(v[3]));
    return vcombine_s8(vmovn_s16(a), vmovn_s16(b));
}

static float static_inverse(float step) { return step > 0.0f ? 1.0f / step : 0.0f; }

static uint16_t fp16_bits(float d) {
    return vget_lane_u16(vreinterpret_u16_f16(vcvt_f16_f32(vdupq_n_f32(d))), 0);
}

/* A8 row of a fixed scale d: the bytes and sum of el_a8_from_float_static. */
void el_quantize_a8_static_neon(const float *x, void *y, int64_t n, float d) {
    el_a8_header h = {.d = d};
    float id = static_inverse(d);
    int8_t *q = (int8_t *)y + sizeof h;
    for (int64_t i = 0; i < n; i += 16) {
        int8x16_t s = static_to_s8(x + i, id);
        vst1q_s8(q + i, s);
        h.sum += vaddlvq_s8(s);
    }
    memcpy(y, &h, sizeof h);
}

/* Blocks of a fixed scale: the bytes of el_q8_0/q8_1/q8_k_from_float_static (the f16 blocks
 * on the grid of d's f16 value, el_static_step). */
void el_quantize_q8_0_static_neon(const float *x, void *y, int64_t n, float d) {
    el_block_q8_0 *b = y;
    uint16_t dh = fp16_bits(d);
    float id = static_inverse(el_static_step(EL_TYPE_Q8_0, d));
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, x += EL_QK8_0) {
        b->d = dh;
        vst1q_s8(b->qs, static_to_s8(x, id));
        vst1q_s8(b->qs + 16, static_to_s8(x + 16, id));
    }
}

void el_quantize_q8_1_static_neon(const float *x, void *y, int64_t n, float d) {
    el_block_q8_1 *b = y;
    uint16_t dh = fp16_bits(d);
    float step = el_static_step(EL_TYPE_Q8_1, d), id = static_inverse(step);
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, x += EL_QK8_0) {
        int8x16_t lo = static_to_s8(x, id), hi = static_to_s8(x + 16, id);
        b->d = dh;
        vst1q_s8(b->qs, lo);
        vst1q_s8(b->qs + 16, hi);
        b->s = fp16_bits((float)(vaddlvq_s8(lo) + vaddlvq_s8(hi)) * step);
    }
}

void el_quantize_q8_k_static_neon(const float *x, void *y, int64_t n, float d) {
    el_block_q8_k *b = y;
    float id = static_inverse(d);
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++, x += EL_QK_K) {
        b->d = d;
        for (int g = 0; g < EL_QK_K / 16; g++) {
            int8x16_t q = static_to_s8(x + 16 * g, id);
            vst1q_s8(b->qs + 16 * g, q);
            b->bsums[g] = (int16_t)vaddlvq_s8(q);
        }
    }
}

/* A16 row: the reference's arithmetic (d = amax / 32767 over the row; x * (1 / d) rounded to
 * nearest even, clamped to -32767..32767), so the same bytes. */
void el_quantize_a16_neon(const float *x, void *y, int64_t n) {
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < n; i += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + i)));
    el_a16_header h = {.d = vmaxvq_f32(m) / 32767.0f};
    float id = h.d > 0.0f ? 1.0f / h.d : 0.0f;
    const int32x4_t hi = vdupq_n_s32(32767), lo = vdupq_n_s32(-32767);
    uint8_t *q = (uint8_t *)y + sizeof h;
    for (int64_t i = 0; i < n; i += 8) {
        int32x4_t a = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + i), id));
        int32x4_t b = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + i + 4), id));
        a = vmaxq_s32(vminq_s32(a, hi), lo);
        b = vmaxq_s32(vminq_s32(b, hi), lo);
        vst1q_u8(q + 2 * i, vreinterpretq_u8_s16(vcombine_s16(vmovn_s32(a), vmovn_s32(b))));
    }
    memcpy(y, &h, sizeof h);
}

/* Float32 to fp16, rounding to nearest even (the default rounding mode) like el_fp32_to_fp16:
 * the rows the KV cache stores. */
void el_quantize_f16_neon(const float *x, void *y, int64_t n) {
    uint16_t *h = y;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1_u16(h + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
    for (; i < n; i++) h[i] = el_fp32_to_fp16(x[i]);
}

/* This level's names (neon.h) for dot_neon.h's kernels: aliases, the code as it is. */

void el_vec_dot_q8_0_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q8_0")));

void el_vec_dot_q4_0_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q4_0")));

void el_vec_dot_q4_k_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q4_k")));

void el_vec_dot_q6_k_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q6_k")));

void el_vec_dot_w8_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_w8")));

void el_vec_dot_w4_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_w4")));

void el_vec_dot_w4g32_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_w4g32")));

void el_vec_dot_w4g64_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_w4g64")));

void el_vec_dot_w4g128_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_w4g128")));

#endif
