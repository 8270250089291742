/* avx512_simd.h - the static inline helpers that more than one AVX-512 kernel file
 * (dot_avx512.c, tile_avx512.c, gemv_avx512.c) uses. Included inside their AVX-512 guard. */
#ifndef EL_KERNELS_AVX512_SIMD_H
#define EL_KERNELS_AVX512_SIMD_H

#include <immintrin.h>
#include <string.h>

#include "kernels/blocks.h"
#include "kernels/dispatch.h"
#include "kernels/edge.h"
#include "kernels/w8a16.h"

static inline float fp16(uint16_t h) { return _cvtsh_ss(h); }

/* One block pair on 256 bits (the tails): the integer dots as 8 int32 lanes. */
static inline __m256i q8_0_dot1(const el_block_q8_0 *a, const el_block_q8_0 *b) {
    __m256i x = _mm256_loadu_si256((const __m256i *)a->qs);
    __m256i y = _mm256_loadu_si256((const __m256i *)b->qs);
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/* One q4_0 block against the 32 int8 activations at yq. */
static inline __m256i q4_0_dot1(const el_block_q4_0 *a, const int8_t *yq) {
    __m128i q = _mm_loadu_si128((const __m128i *)a->qs);
    __m256i u = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0F));
    __m256i y = _mm256_loadu_si256((const __m256i *)yq);
    __m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, y);
    return _mm256_sub_epi32(p, _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(8), y));
}

static inline float hsum256_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The sum of the 16 int32 lanes of v, in int64 (lanes may sum past 2^31). */
static inline int64_t hsum_epi32_wide(__m512i v) {
    return _mm512_reduce_add_epi64(_mm512_add_epi64(
        _mm512_cvtepi32_epi64(_mm512_castsi512_si256(v)),
        _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1))));
}

/* 32 int8 weights widened to int16. */
static inline __m512i widen32(const int8_t *q) {
    return _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)q));
}

/* W8A16 rows against one A16 row (a decode step): R rows far apart share each activation load,
 * two chains of vpdpwssd per row; a row's sum is exact, so the same in any company. */
static inline __attribute__((always_inline)) void rows_w8a16(const void *ctx,
                                                             const char *const row[4], float s[4],
                                                             int R) {
    const el_a16_view *a = ctx;
    const int8_t *q[4];
    int64_t sum[4] = {0, 0, 0, 0};
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) q[r] = (const int8_t *)row[r] + sizeof(float);
    for (int64_t i = 0; i < a->n;) {
        int64_t end = el_a16_run_end(i, a->n);
        __m512i acc[4][2];
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
        for (; i + 64 <= end; i += 64) {
            __m512i a0 = _mm512_loadu_si512(a->q + 2 * i);
            __m512i a1 = _mm512_loadu_si512(a->q + 2 * i + 64);
            #pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                acc[r][0] = _mm512_dpwssd_epi32(acc[r][0], widen32(q[r] + i), a0);
                acc[r][1] = _mm512_dpwssd_epi32(acc[r][1], widen32(q[r] + i + 32), a1);
            }
        }
        if (i < end) { /* a last 32 */
            __m512i a0 = _mm512_loadu_si512(a->q + 2 * i);
            #pragma GCC unroll 4
            for (int r = 0; r < R; r++)
                acc[r][0] = _mm512_dpwssd_epi32(acc[r][0], widen32(q[r] + i), a0);
            i += 32;
        }
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            sum[r] += hsum_epi32_wide(acc[r][0]) + hsum_epi32_wide(acc[r][1]);
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = el_w8a16_scale(row[r], a->d, sum[r]);
}

#endif
