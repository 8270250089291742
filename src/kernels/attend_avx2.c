/* attend_avx2.c - the attention kernel of attend.h with AVX2 and FMA, for the x86 CPUs without
 * AVX-512 (which take attend_avx512.c): dot products and weighted sums of values 8 floats at a
 * time, the heads of a group sharing each load of a key or value and two keys sharing each load
 * of a query. Keys and values are float32 or fp16 (converted on load by F16C's vcvtph2ps, which is
 * exact); one body serves both, the element type a constant after inlining. The exponentials are
 * vectorized too (avx2_simd.h) and the weights normalized on the output, so results agree with the
 * reference to a few float roundings. Head sizes that are not multiples of 8 (and groups of more
 * than 64 heads, and rows with no cells) go to the reference (attend_drive.h).
 * Built with -mavx2 -mfma -mf16c on x86 (see Makefile); avx2.c's table names it. */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>
#include <math.h>

#include "kernels/attend_drive.h"
#include "kernels/avx2_simd.h"

enum {
    LANES = 8,           /* floats per ymm */
    COLUMNS_AT_ONCE = 2, /* weighted sums: 4 heads x 2 columns of 8 floats in registers, and */
    KEYS_AT_ONCE = 2,    /* dot products: 4 heads x 2 keys (8 independent sums) */
};

/* 8 elements of a key or value row from element c, as floats: fp16 (f16) or float32. */
static inline __attribute__((always_inline)) __m256 load8(const bool f16, const void *row,
                                                          int c) {
    return f16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + c)))
               : _mm256_loadu_ps((const float *)row + c);
}

static inline float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* s = exp(s - max s) in place; returns 1 / sum s (the weights are normalized afterwards, on
 * the output). */
static float softmax_unnormalized(float *s, int32_t nv) {
    const __m256 neg_inf = _mm256_set1_ps(-INFINITY);
    int32_t full = nv - nv % LANES;
    __m256i tail = lanes_below(nv - full);
    __m256 vmax = neg_inf;
    for (int32_t j = 0; j < full; j += LANES) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(s + j));
    if (full < nv)
        vmax = _mm256_max_ps(vmax, _mm256_blendv_ps(neg_inf, _mm256_maskload_ps(s + full, tail),
                                                     _mm256_castsi256_ps(tail)));
    __m256 max = _mm256_set1_ps(hmax8(vmax)), sum = _mm256_setzero_ps();
    for (int32_t j = 0; j < full; j += LANES) {
        __m256 e = el_exp_nonpositive_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + j), max));
        _mm256_storeu_ps(s + j, e);
        sum = _mm256_add_ps(sum, e);
    }
    if (full < nv) {
        __m256 e = el_exp_nonpositive_avx2(_mm256_sub_ps(_mm256_maskload_ps(s + full, tail), max));
        _mm256_maskstore_ps(s + full, tail, e);
        sum = _mm256_add_ps(sum, _mm256_and_ps(e, _mm256_castsi256_ps(tail)));
    }
    return 1.0f / hsum8(sum);
}

/* out_g = norm_g sum_j p_g[j] v_j for n heads and nc 8-float columns from column c0 (both
 * constants after inlining, so the n x nc accumulators live in registers); p_g at p + g * ld. */
static inline __attribute__((always_inline)) void weigh(const bool f16, const int n,
                                                        const int nc, int c0, int hd_v,
                                                        int32_t nv, const float *p, size_t ld,
                                                        const float *norm,
                                                        const void *const *v, float *out) {
    __m256 acc[ATTEND_HEADS_AT_ONCE][COLUMNS_AT_ONCE];
    #pragma GCC unroll 4
    for (int g = 0; g < n; g++)
        #pragma GCC unroll 2
        for (int c = 0; c < nc; c++) acc[g][c] = _mm256_setzero_ps();
    for (int32_t j = 0; j < nv; j++) {
        __m256 vj[COLUMNS_AT_ONCE];
        #pragma GCC unroll 2
        for (int c = 0; c < nc; c++) vj[c] = load8(f16, v[j], c0 + LANES * c);
        #pragma GCC unroll 4
        for (int g = 0; g < n; g++) {
            __m256 pg = _mm256_broadcast_ss(p + g * ld + j);
            #pragma GCC unroll 2
            for (int c = 0; c < nc; c++) acc[g][c] = _mm256_fmadd_ps(pg, vj[c], acc[g][c]);
        }
    }
    #pragma GCC unroll 4
    for (int g = 0; g < n; g++)
        #pragma GCC unroll 2
        for (int c = 0; c < nc; c++)
            _mm256_storeu_ps(out + (size_t)g * hd_v + c0 + LANES * c,
                             _mm256_mul_ps(acc[g][c], _mm256_set1_ps(norm[g])));
}

/* weigh for heads [g, g + n) over all columns: 16 at a time, then 8. */
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

/* The partial dot products of 4 heads, summed: [sum a0, sum a1, sum a2, sum a3]. */
static inline __m128 reduce4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    /* per 128-bit lane: [a0 a0 a1 a1], [a2 a2 a3 a3] pair sums, then [a0 a1 a2 a3] */
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

/* q_g . k_j / sqrt(hd_k) into scores[g * ld + j] for n heads from q (n <= 4) and m keys from
 * cell j0 (m <= 2), both constants after inlining: n x m independent sums in registers. */
static inline __attribute__((always_inline)) void dots(const bool f16, const int n, const int m,
                                                       int hd_k, const float *q,
                                                       const void *const *k,
                                                       int32_t j0, float inv_scale,
                                                       float *scores, size_t ld) {
    __m256 acc[KEYS_AT_ONCE][ATTEND_HEADS_AT_ONCE];
    #pragma GCC unroll 2
    for (int i = 0; i < m; i++)
        #pragma GCC unroll 4
        for (int h = 0; h < n; h++) acc[i][h] = _mm256_setzero_ps();
    for (int c = 0; c < hd_k; c += LANES) {
        __m256 kc[KEYS_AT_ONCE];
        #pragma GCC unroll 2
        for (int i = 0; i < m; i++) kc[i] = load8(f16, k[j0 + i], c);
        #pragma GCC unroll 4
        for (int h = 0; h < n; h++) {
            __m256 qh = _mm256_loadu_ps(q + (size_t)h * hd_k + c);
            #pragma GCC unroll 2
            for (int i = 0; i < m; i++) acc[i][h] = _mm256_fmadd_ps(qh, kc[i], acc[i][h]);
        }
    }
    #pragma GCC unroll 2
    for (int i = 0; i < m; i++) {
        if (n == ATTEND_HEADS_AT_ONCE) {
            float d[ATTEND_HEADS_AT_ONCE];
            _mm_storeu_ps(d, _mm_mul_ps(reduce4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]),
                                        _mm_set1_ps(inv_scale)));
            #pragma GCC unroll 4
            for (int h = 0; h < n; h++) scores[(size_t)h * ld + j0 + i] = d[h];
        } else {
            #pragma GCC unroll 4
            for (int h = 0; h < n; h++)
                scores[(size_t)h * ld + j0 + i] = hsum8(acc[i][h]) * inv_scale;
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
    for (; j + KEYS_AT_ONCE <= nv; j += KEYS_AT_ONCE) {
        dots(f16, n, KEYS_AT_ONCE, hd_k, q, k, j, inv_scale, scores, ld);
    }
    if (j < nv) dots(f16, n, 1, hd_k, q, k, j, inv_scale, scores, ld);
}

void el_attend_avx2(el_type kv_type, int group, int hd_k, int hd_v, int32_t nv, const float *q,
                    const void *const *k, const void *const *v, float *scores, size_t ld_scores,
                    float *out) {
    attend_simd(LANES, kv_type, group, hd_k, hd_v, nv, q, k, v, scores, ld_scores, out, dot_heads,
                softmax_unnormalized, weigh_heads);
}

#endif
