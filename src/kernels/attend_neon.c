/* attend_neon.c - the attention kernel of attend.h with aarch64 Advanced SIMD (baseline on every
 * aarch64 CPU, so it serves both NEON tables): dot products and weighted sums of values 4 floats
 * a lane group, the heads of a group sharing each load of a key or value and two keys sharing
 * each load of a query. Keys and values are float32 or fp16 (converted on load by fcvtl,
 * vcvt_f32_f16, which is exact and baseline on aarch64); one body serves both, the element type
 * a constant after inlining. The exponentials are vectorized too (exp_nonpositive) and the
 * weights normalized on the output, so results agree with the reference to a few float
 * roundings. Head sizes that are not multiples of 4 (and groups of more than 64 heads) go to the
 * reference. Needs no flags beyond the aarch64 baseline; neon.c's table names it. */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

#include <arm_neon.h>
#include <math.h>

#include "kernels/attend_drive.h"

enum {
    LANES = 4,           /* floats per q register */
    COLUMNS_AT_ONCE = 4, /* weighted sums: 4 heads x 4 columns of 4 floats in registers, and */
    KEYS_AT_ONCE = 2,    /* dot products: 4 heads x 2 keys (8 independent sums) */
};

/* 4 elements of a key or value row from element c, as floats: fp16 (f16) or float32. */
static inline __attribute__((always_inline)) float32x4_t load4(const bool f16, const void *row,
                                                               int c) {
    return f16 ? vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)row + c)))
               : vld1q_f32((const float *)row + c);
}

/* 8 elements from element c as two vectors (one 16-byte load for fp16). */
static inline __attribute__((always_inline)) void load8(const bool f16, const void *row, int c,
                                                        float32x4_t *lo, float32x4_t *hi) {
    if (f16) {
        float16x8_t h = vreinterpretq_f16_u16(vld1q_u16((const uint16_t *)row + c));
        *lo = vcvt_f32_f16(vget_low_f16(h));
        *hi = vcvt_high_f32_f16(h);
    } else {
        *lo = vld1q_f32((const float *)row + c);
        *hi = vld1q_f32((const float *)row + c + LANES);
    }
}

/* exp(x) for x <= 0: x = n ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, so r is nearly
 * exact), e^r by its Taylor polynomial of degree 6 (remainder < 2e-7 relative), times 2^n built
 * in the exponent bits. Against double exp on every multiple of 1e-6 in [-87, 0] (under qemu):
 * relative error at most 2.4e-7, under 3 ulp. x is clamped at -87 so that n >= -126 stays a
 * normal power of two; softmax weights that small do not count. */
static inline float32x4_t exp_nonpositive(float32x4_t x) {
    x = vmaxq_f32(x, vdupq_n_f32(-87.0f));
    float32x4_t n = vrndnq_f32(vmulq_n_f32(x, 1.44269504f));
    float32x4_t r = vfmsq_n_f32(x, n, 0.693145752f); /* ln2, high bits */
    r = vfmsq_n_f32(r, n, 1.42860677e-6f);            /* and the rest */
    float32x4_t p = vdupq_n_f32(1.0f / 720.0f);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 120.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 24.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 6.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    int32x4_t pow2n = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    return vmulq_f32(p, vreinterpretq_f32_s32(pow2n));
}

/* s = exp(s - max s) in place; returns 1 / sum s (the weights are normalized afterwards, on
 * the output). The last nv % 4 scores go through a padded copy. */
static float softmax_unnormalized(float *s, int32_t nv) {
    int32_t full = nv - nv % LANES, rest = nv - full;
    float max = -INFINITY;
    if (full > 0) {
        float32x4_t vmax = vld1q_f32(s);
        for (int32_t j = LANES; j < full; j += LANES) vmax = vmaxq_f32(vmax, vld1q_f32(s + j));
        max = vmaxvq_f32(vmax);
    }
    for (int32_t j = full; j < nv; j++) max = fmaxf(max, s[j]);
    float32x4_t vmax = vdupq_n_f32(max), sum = vdupq_n_f32(0.0f);
    for (int32_t j = 0; j < full; j += LANES) {
        float32x4_t e = exp_nonpositive(vsubq_f32(vld1q_f32(s + j), vmax));
        vst1q_f32(s + j, e);
        sum = vaddq_f32(sum, e);
    }
    if (rest > 0) {
        float tail[LANES] = {max, max, max, max}; /* padding: exp(0), not counted */
        for (int32_t i = 0; i < rest; i++) tail[i] = s[full + i];
        vst1q_f32(tail, exp_nonpositive(vsubq_f32(vld1q_f32(tail), vmax)));
        const uint32_t lane[LANES] = {0, 1, 2, 3};
        uint32x4_t below = vcltq_u32(vld1q_u32(lane), vdupq_n_u32((uint32_t)rest));
        float32x4_t e = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(vld1q_f32(tail)),
                                                        below));
        sum = vaddq_f32(sum, e);
        for (int32_t i = 0; i < rest; i++) s[full + i] = tail[i];
    }
    return 1.0f / vaddvq_f32(sum);
}

/* out_g = norm_g sum_j p_g[j] v_j for n heads and nc 4-float columns from column c0 (both
 * constants after inlining, so the n x nc accumulators live in registers); p_g at p + g * ld. */
static inline __attribute__((always_inline)) void weigh(const bool f16, const int n,
                                                        const int nc, int c0, int hd_v,
                                                        int32_t nv, const float *p, size_t ld,
                                                        const float *norm,
                                                        const void *const *v, float *out) {
    float32x4_t acc[ATTEND_HEADS_AT_ONCE][COLUMNS_AT_ONCE];
    #pragma GCC unroll 4
    for (int g = 0; g < n; g++)
        #pragma GCC unroll 4
        for (int c = 0; c < nc; c++) acc[g][c] = vdupq_n_f32(0.0f);
    for (int32_t j = 0; j < nv; j++) {
        float32x4_t vj[COLUMNS_AT_ONCE];
        #pragma GCC unroll 2
        for (int c = 0; c + 1 < nc; c += 2) load8(f16, v[j], c0 + LANES * c, &vj[c], &vj[c + 1]);
        if (nc % 2) vj[nc - 1] = load4(f16, v[j], c0 + LANES * (nc - 1));
        #pragma GCC unroll 4
        for (int g = 0; g < n; g++) {
            float pg = p[g * ld + j];
            #pragma GCC unroll 4
            for (int c = 0; c < nc; c++) acc[g][c] = vfmaq_n_f32(acc[g][c], vj[c], pg);
        }
    }
    #pragma GCC unroll 4
    for (int g = 0; g < n; g++)
        #pragma GCC unroll 4
        for (int c = 0; c < nc; c++)
            vst1q_f32(out + (size_t)g * hd_v + c0 + LANES * c, vmulq_n_f32(acc[g][c], norm[g]));
}

/* weigh for heads [g, g + n) over all columns: 16 at a time, then 4. */
static inline __attribute__((always_inline)) void weigh_heads(const bool f16, const int n,
                                                              int hd_v, int32_t nv,
                                                              const float *p, size_t ld,
                                                              const float *norm,
                                                              const void *const *v, float *out) {
    int c0 = 0;
    for (; c0 + LANES * COLUMNS_AT_ONCE <= hd_v; c0 += LANES * COLUMNS_AT_ONCE)
        weigh(f16, n, COLUMNS_AT_ONCE, c0, hd_v, nv, p, ld, norm, v, out);
    for (; c0 < hd_v; c0 += LANES) weigh(f16, n, 1, c0, hd_v, nv, p, ld, norm, v, out);
}

/* q_g . k_j / sqrt(hd_k) into scores[g * ld + j] for n heads from q (n <= 4) and m keys from
 * cell j0 (m <= 2), both constants after inlining: n x m independent sums in registers, 8
 * elements a step and a last step of 4 when hd_k is not a multiple of 8. */
static inline __attribute__((always_inline)) void dots(const bool f16, const int n, const int m,
                                                       int hd_k, const float *q,
                                                       const void *const *k,
                                                       int32_t j0, float inv_scale,
                                                       float *scores, size_t ld) {
    float32x4_t acc[KEYS_AT_ONCE][ATTEND_HEADS_AT_ONCE];
    #pragma GCC unroll 2
    for (int i = 0; i < m; i++)
        #pragma GCC unroll 4
        for (int h = 0; h < n; h++) acc[i][h] = vdupq_n_f32(0.0f);
    int c = 0;
    for (; c + 2 * LANES <= hd_k; c += 2 * LANES) {
        float32x4_t lo[KEYS_AT_ONCE], hi[KEYS_AT_ONCE];
        #pragma GCC unroll 2
        for (int i = 0; i < m; i++) load8(f16, k[j0 + i], c, &lo[i], &hi[i]);
        #pragma GCC unroll 4
        for (int h = 0; h < n; h++) {
            float32x4_t qlo = vld1q_f32(q + (size_t)h * hd_k + c);
            float32x4_t qhi = vld1q_f32(q + (size_t)h * hd_k + c + LANES);
            #pragma GCC unroll 2
            for (int i = 0; i < m; i++)
                acc[i][h] = vfmaq_f32(vfmaq_f32(acc[i][h], qlo, lo[i]), qhi, hi[i]);
        }
    }
    if (c < hd_k) {
        float32x4_t kc[KEYS_AT_ONCE];
        #pragma GCC unroll 2
        for (int i = 0; i < m; i++) kc[i] = load4(f16, k[j0 + i], c);
        #pragma GCC unroll 4
        for (int h = 0; h < n; h++) {
            float32x4_t qh = vld1q_f32(q + (size_t)h * hd_k + c);
            #pragma GCC unroll 2
            for (int i = 0; i < m; i++) acc[i][h] = vfmaq_f32(acc[i][h], qh, kc[i]);
        }
    }
    #pragma GCC unroll 2
    for (int i = 0; i < m; i++) {
        if (n == ATTEND_HEADS_AT_ONCE) {
            /* pairwise adds: [sum acc0, sum acc1, sum acc2, sum acc3] */
            float32x4_t t = vpaddq_f32(vpaddq_f32(acc[i][0], acc[i][1]),
                                       vpaddq_f32(acc[i][2], acc[i][3]));
            float d[ATTEND_HEADS_AT_ONCE];
            vst1q_f32(d, vmulq_n_f32(t, inv_scale));
            #pragma GCC unroll 4
            for (int h = 0; h < n; h++) scores[(size_t)h * ld + j0 + i] = d[h];
        } else {
            #pragma GCC unroll 4
            for (int h = 0; h < n; h++)
                scores[(size_t)h * ld + j0 + i] = vaddvq_f32(acc[i][h]) * inv_scale;
        }
    }
}

/* dots for heads [g, g + n) over every cell: two keys at a time, then the last one. */
static inline __attribute__((always_inline)) void dot_heads(const bool f16, const int n,
                                                            int hd_k, int32_t nv,
                                                            const float *q,
                                                            const void *const *k,
                                                            float inv_scale, float *scores,
                                                            size_t ld) {
    int32_t j = 0;
    for (; j + KEYS_AT_ONCE <= nv; j += KEYS_AT_ONCE)
        dots(f16, n, KEYS_AT_ONCE, hd_k, q, k, j, inv_scale, scores, ld);
    if (j < nv) dots(f16, n, 1, hd_k, q, k, j, inv_scale, scores, ld);
}

void el_attend_neon(el_type kv_type, int group, int hd_k, int hd_v, int32_t nv, const float *q,
                    const void *const *k, const void *const *v, float *scores, size_t ld_scores,
                    float *out) {
    attend_simd(LANES, kv_type, group, hd_k, hd_v, nv, q, k, v, scores, ld_scores, out, dot_heads,
                softmax_unnormalized, weigh_heads);
}

#endif
