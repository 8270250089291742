/* neon.c - aarch64 Advanced SIMD kernels: float dot products, activation quantizers, and the
 * quantized dot products of neon_q.h over widening multiplies (so they run on every aarch64
 * CPU; neon_dotprod.c replaces them with SDOT ones where the CPU has the dot product extension).
 * Its table (el_level_neon) is at the bottom; on other architectures it is not built in. */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

#include <arm_neon.h>
#include <string.h>

/* acc plus the 16 products a[i]*b[i]: two widening multiplies (|a*b| <= 2^14 fits int16) and
 * pairwise accumulates into 32 bits. */
static inline int32x4_t dot_s8(int32x4_t acc, int8x16_t a, int8x16_t b) {
    int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    int16x8_t hi = vmull_high_s8(a, b);
    return vpadalq_s16(vpadalq_s16(acc, lo), hi);
}

#include "kernels/neon_q.h"
#include "kernels/neon_gemv.h"

static void vec_dot_f32(int64_t n, float *s, const void *x, const void *y) {
    const float *a = x, *b = y;
    float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        acc0 = vfmaq_f32(acc0, vld1q_f32(a + i), vld1q_f32(b + i));
        acc1 = vfmaq_f32(acc1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    }
    float sum = vaddvq_f32(vaddq_f32(acc0, acc1));
    for (; i < n; i++) sum += a[i] * b[i];
    *s = sum;
}

static void vec_dot_f16(int64_t n, float *s, const void *x, const void *y) {
    const uint16_t *a = x;
    const float *b = y;
    float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(a + i));
        acc0 = vfmaq_f32(acc0, vcvt_f32_f16(vget_low_f16(h)), vld1q_f32(b + i));
        acc1 = vfmaq_f32(acc1, vcvt_high_f32_f16(h), vld1q_f32(b + i + 4));
    }
    float sum = vaddvq_f32(vaddq_f32(acc0, acc1));
    for (; i < n; i++) sum += fp16_scalar(a[i]) * b[i];
    *s = sum;
}

static void vec_dot_bf16(int64_t n, float *s, const void *x, const void *y) {
    const uint16_t *a = x;
    const float *b = y;
    float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint16x8_t h = vld1q_u16(a + i);
        /* bf16 is the top half of a float */
        float32x4_t lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
        float32x4_t hi = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
        acc0 = vfmaq_f32(acc0, lo, vld1q_f32(b + i));
        acc1 = vfmaq_f32(acc1, hi, vld1q_f32(b + i + 4));
    }
    float sum = vaddvq_f32(vaddq_f32(acc0, acc1));
    for (; i < n; i++) sum += el_bf16_to_fp32(a[i]) * b[i];
    *s = sum;
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
static void quantize_q8_0(const float *x, void *y, int64_t n) {
    el_block_q8_0 *b = y;
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, x += EL_QK8_0) {
        float d = absmax(x, EL_QK8_0) / 127.0f;
        float id = d > 0.0f ? 1.0f / d : 0.0f;
        b->d = vget_lane_u16(vreinterpret_u16_f16(vcvt_f16_f32(vdupq_n_f32(d))), 0);
        vst1q_s8(b->qs, round_to_s8(x, id));
        vst1q_s8(b->qs + 16, round_to_s8(x + 16, id));
    }
}

static void quantize_q8_k(const float *x, void *y, int64_t n) {
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
static void quantize_a8(const float *x, void *y, int64_t n) {
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

/* A16 row: the reference's arithmetic (d = amax / 32767 over the row; x * (1 / d) rounded to
 * nearest even, clamped to -32767..32767), so the same bytes. */
static void quantize_a16(const float *x, void *y, int64_t n) {
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
static void quantize_f16(const float *x, void *y, int64_t n) {
    uint16_t *h = y;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1_u16(h + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
    for (; i < n; i++) h[i] = el_fp32_to_fp16(x[i]);
}

/* Advanced SIMD is baseline on aarch64. */
static bool neon_runs(void) { return true; }

/* The NEON kernels of every aarch64 CPU; the quantized ones (neon_q.h, neon_gemv.h) over
 * widening multiplies. */
const el_kernel_level el_level_neon = {
    .name = "neon",
    .supported = neon_runs,
    .kernels = {
        .isa = "neon",
        .vec_dot = {[EL_TYPE_Q8_0] = vec_dot_q8_0, [EL_TYPE_Q4_0] = vec_dot_q4_0,
                    [EL_TYPE_Q4_K] = vec_dot_q4_k, [EL_TYPE_Q6_K] = vec_dot_q6_k,
                    [EL_TYPE_W8] = vec_dot_w8, [EL_TYPE_W8A16] = vec_dot_w8a16,
                    [EL_TYPE_W4] = vec_dot_w4, [EL_TYPE_W4G32] = vec_dot_w4g32,
                    [EL_TYPE_W4G64] = vec_dot_w4g64, [EL_TYPE_W4G128] = vec_dot_w4g128,
                    [EL_TYPE_F32] = vec_dot_f32, [EL_TYPE_F16] = vec_dot_f16,
                    [EL_TYPE_BF16] = vec_dot_bf16},
        .tile = {[EL_TYPE_Q8_0] = tile_q8_0, [EL_TYPE_Q4_0] = tile_q4_0,
                 [EL_TYPE_Q4_K] = tile_q4_k, [EL_TYPE_Q6_K] = tile_q6_k, [EL_TYPE_W8] = tile_w8,
                 [EL_TYPE_W8A16] = tile_w8a16, [EL_TYPE_W4] = tile_w4},
        /* no multi-row gemvs (row by row through the gemv) */
        .gemv = {[EL_TYPE_Q4_0] = gemv_q4_0, [EL_TYPE_Q8_0] = gemv_q8_0, [EL_TYPE_W4] = gemv_w4,
                 [EL_TYPE_W8] = gemv_w8, [EL_TYPE_W4G32] = gemv_w4g32,
                 [EL_TYPE_W4G64] = gemv_w4g64, [EL_TYPE_W4G128] = gemv_w4g128,
                 [EL_TYPE_W8A16] = gemv_w8a16},
        .quantize = {[EL_TYPE_Q8_0] = quantize_q8_0, [EL_TYPE_Q8_K] = quantize_q8_k,
                     [EL_TYPE_F16] = quantize_f16, [EL_TYPE_A8] = quantize_a8,
                     [EL_TYPE_A16] = quantize_a16},
        .attend = el_attend_neon,
    },
};

#else

const el_kernel_level el_level_neon = {.name = "neon"}; /* not built in: not aarch64 */

#endif
