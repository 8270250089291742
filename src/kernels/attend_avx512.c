/* attend_avx512.c - the attention kernel of attend.h with AVX-512: dot products and weighted
 * sums of values 16 floats at a time, the heads of a group sharing each load of a key or value.
 * Keys and values are float32 or fp16 (converted on load by vcvtph2ps, which is exact); one body
 * serves both, the element type a constant after inlining. The exponentials are vectorized too
 * (exp_nonpositive) and the weights normalized on the output, so results agree with the
 * reference to a few float roundings. Head sizes that are not multiples of 16 (and groups of more
 * than 64 heads, and rows with no cells) go to the reference (attend_drive.h).
 * Built with AVX-512 flags on x86 (see Makefile) and used only when the CPU runs them. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)

#include <immintrin.h>
#include <math.h>

#include "kernels/attend_drive.h"

enum {
    COLUMNS_AT_ONCE = 4, /* weighted sums: 4 heads x 4 columns of 16 floats in registers */
    /* Cells ahead whose key or value row a step asks the memory for: each cell's row comes by
     * its own pointer, which the prefetchers cannot guess, so without asking a long context's
     * loads wait on DRAM; 16 cells (2 KB) is far enough ahead to hide that and near enough not
     * to evict what is in use (8 and 32 were no better; the AVX2 kernel, whose arithmetic per
     * byte is lower, gained nothing; docs/kernels.md, "Attention"). */
    PREFETCH_CELLS = 16,
};

/* Asks for bytes [first, first + bytes) of the row of cell j + PREFETCH_CELLS, if there is
 * such a cell (the lines they touch: one every 64 bytes, and the last). */
static inline void prefetch_row(const void *const *rows, int32_t j, int32_t nv, size_t first,
                                size_t bytes) {
    if (j + PREFETCH_CELLS >= nv) return;
    const char *r = (const char *)rows[j + PREFETCH_CELLS] + first;
    for (size_t b = 0; b < bytes; b += 64) _mm_prefetch(r + b, _MM_HINT_T0);
    _mm_prefetch(r + bytes - 1, _MM_HINT_T0);
}

/* 16 elements of a key or value row from element c, as floats: fp16 (f16) or float32. */
static inline __attribute__((always_inline)) __m512 load16(const bool f16, const void *row,
                                                           int c) {
    return f16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)row + c)))
               : _mm512_loadu_ps((const float *)row + c);
}

/* exp(x) for x <= 0 to about 2 ulp: x = n ln2 + r with |r| <= ln2 / 2, e^r by its Taylor
 * polynomial of degree 6 (remainder < 2e-7 relative), times 2^n by scalef. Below -87 the
 * result is 0 or a denormal; softmax weights that small do not count. */
static inline __m512 exp_nonpositive(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145752f), x); /* ln2, high bits */
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860677e-6f), r);      /* and the rest */
    __m512 p = _mm512_set1_ps(1.0f / 720.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/* s = exp(s - max s) in place; returns 1 / sum s (the weights are normalized afterwards, on
 * the output). */
static float softmax_unnormalized(float *s, int32_t nv) {
    __m512 vmax = _mm512_set1_ps(-INFINITY);
    for (int32_t j = 0; j < nv; j += 16) {
        __mmask16 m = nv - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (nv - j)) - 1);
        vmax = _mm512_mask_max_ps(vmax, m, vmax, _mm512_maskz_loadu_ps(m, s + j));
    }
    __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(vmax)), sum = _mm512_setzero_ps();
    for (int32_t j = 0; j < nv; j += 16) {
        __mmask16 m = nv - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (nv - j)) - 1);
        __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + j), max));
        _mm512_mask_storeu_ps(s + j, m, e);
        sum = _mm512_mask_add_ps(sum, m, sum, e);
    }
    return 1.0f / _mm512_reduce_add_ps(sum);
}

/* out_g = norm_g sum_j p_g[j] v_j for n heads and nc 16-float columns from column c0 (both
 * constants after inlining, so the n x nc accumulators live in registers); p_g at p + g * ld. */
static inline __attribute__((always_inline)) void weigh(const bool f16, const int n,
                                                        const int nc, int c0, int hd_v,
                                                        int32_t nv, const float *p, size_t ld,
                                                        const float *norm,
                                                        const void *const *v, float *out) {
    __m512 acc[ATTEND_HEADS_AT_ONCE][COLUMNS_AT_ONCE];
    #pragma GCC unroll 4
    for (int g = 0; g < n; g++)
        #pragma GCC unroll 4
        for (int c = 0; c < nc; c++) acc[g][c] = _mm512_setzero_ps();
    const size_t elem = f16 ? 2 : 4;
    for (int32_t j = 0; j < nv; j++) {
        prefetch_row(v, j, nv, (size_t)c0 * elem, (size_t)nc * 16 * elem);
        __m512 vj[COLUMNS_AT_ONCE];
        #pragma GCC unroll 4
        for (int c = 0; c < nc; c++) vj[c] = load16(f16, v[j], c0 + 16 * c);
        #pragma GCC unroll 4
        for (int g = 0; g < n; g++) {
            __m512 pg = _mm512_set1_ps(p[g * ld + j]);
            #pragma GCC unroll 4
            for (int c = 0; c < nc; c++) acc[g][c] = _mm512_fmadd_ps(pg, vj[c], acc[g][c]);
        }
    }
    #pragma GCC unroll 4
    for (int g = 0; g < n; g++)
        #pragma GCC unroll 4
        for (int c = 0; c < nc; c++)
            _mm512_storeu_ps(out + (size_t)g * hd_v + c0 + 16 * c,
                             _mm512_mul_ps(acc[g][c], _mm512_set1_ps(norm[g])));
}

/* weigh for heads [g, g + n) over all columns: 64 at a time, then 16 at a time. */
static inline __attribute__((always_inline)) void weigh_heads(const bool f16, const int n,
                                                              int hd_v, int32_t nv,
                                                              const float *p, size_t ld,
                                                              const float *norm,
                                                              const void *const *v, float *out) {
    int c0 = 0;
    for (; c0 + 16 * COLUMNS_AT_ONCE <= hd_v; c0 += 16 * COLUMNS_AT_ONCE)
        weigh(f16, n, COLUMNS_AT_ONCE, c0, hd_v, nv, p, ld, norm, v, out);
    for (; c0 < hd_v; c0 += 16) weigh(f16, n, 1, c0, hd_v, nv, p, ld, norm, v, out);
}

/* The partial dot products of 4 heads, summed: [sum a0, sum a1, sum a2, sum a3]. */
static inline __m128 reduce4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
    __m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(a0, a1), _mm512_unpackhi_ps(a0, a1));
    __m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(a2, a3), _mm512_unpackhi_ps(a2, a3));
    /* per 128-bit lane: [a0 a1 a0 a1] and [a2 a3 a2 a3] pairs -> [a0 a1 a2 a3] */
    __m512 t = _mm512_add_ps(_mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2)));
    __m256 u = _mm256_add_ps(_mm512_castps512_ps256(t),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(t), 1)));
    return _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
}

/* q_h . k_j / sqrt(hd_k) into scores[h * ld + j] for n heads (a constant after inlining) and
 * every cell: a cell's key is loaded once for the n heads; 4 heads' sums are reduced together. */
static inline __attribute__((always_inline)) void dot_heads(const bool f16, const int n, int hd_k,
                                                            int32_t nv, const float *q,
                                                            const void *const *k,
                                                            float inv_scale, float *scores,
                                                            size_t ld) {
    const size_t row_bytes = (size_t)hd_k * (f16 ? 2 : 4);
    for (int32_t j = 0; j < nv; j++) {
        prefetch_row(k, j, nv, 0, row_bytes);
        __m512 acc[ATTEND_HEADS_AT_ONCE];
        #pragma GCC unroll 4
        for (int h = 0; h < n; h++) acc[h] = _mm512_setzero_ps();
        for (int c = 0; c < hd_k; c += 16) {
            __m512 kc = load16(f16, k[j], c);
            #pragma GCC unroll 4
            for (int h = 0; h < n; h++)
                acc[h] = _mm512_fmadd_ps(_mm512_loadu_ps(q + (size_t)h * hd_k + c), kc, acc[h]);
        }
        if (n == ATTEND_HEADS_AT_ONCE) {
            float d[ATTEND_HEADS_AT_ONCE];
            _mm_storeu_ps(d, _mm_mul_ps(reduce4(acc[0], acc[1], acc[2], acc[3]),
                                        _mm_set1_ps(inv_scale)));
            #pragma GCC unroll 4
            for (int h = 0; h < n; h++) scores[(size_t)h * ld + j] = d[h];
        } else {
            #pragma GCC unroll 4
            for (int h = 0; h < n; h++)
                scores[(size_t)h * ld + j] = _mm512_reduce_add_ps(acc[h]) * inv_scale;
        }
    }
}

void el_attend_avx512(el_type kv_type, int group, int hd_k, int hd_v, int32_t nv, const float *q,
                      const void *const *k, const void *const *v, float *scores, size_t ld_scores,
                      float *out) {
    attend_simd(16, kv_type, group, hd_k, hd_v, nv, q, k, v, scores, ld_scores, out, dot_heads,
                softmax_unnormalized, weigh_heads);
}

#endif
