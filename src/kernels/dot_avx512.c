/* dot_avx512.c - AVX-512 VNNI dot products (vpdpbusd: 4 unsigned x signed byte products summed
 * into each 32-bit lane in one instruction) for q8_0 and q4_0 weights, two blocks per 512-bit
 * register (one at a time on 256 bits for the last few), W8A16's (vpdpwssd), and F16's and
 * BF16's (float_avx512.h). */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include <immintrin.h>
#include <string.h>

#include "kernels/avx512_simd.h"
#include "kernels/blocks.h"
#include "kernels/edge.h"
#include "kernels/float_avx512.h"
#include "kernels/w8a16.h"

/* The 32 quants of blocks b[0] and b[1] in the two halves of a register. */
static inline __m512i load2_q8_0(const el_block_q8_0 *b) {
    __m256i lo = _mm256_loadu_si256((const __m256i *)b[0].qs);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo),
                              _mm256_loadu_si256((const __m256i *)b[1].qs), 1);
}

/* Signed x . signed y per lane of 4 bytes: vpdpbusd wants x unsigned, so the sign of x moves
 * onto y (exact for |y| <= 127, which holds for activations quantized by el_*_from_float). */
static inline __m512i dot_i8(__m512i x, __m512i y) {
    __m512i sy = _mm512_mask_sub_epi8(y, _mm512_movepi8_mask(x), _mm512_setzero_si512(), y);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(x), sy);
}

/* Blocks k and k+1 of a q8_0 pair: int32 lanes 0-7 belong to block k, 8-15 to block k+1. */
static inline __m512i q8_0_dot2(const el_block_q8_0 *a, const el_block_q8_0 *b) {
    return dot_i8(load2_q8_0(a), load2_q8_0(b));
}

/* Blocks k and k+1 of a q4_0 pair, arranged by 128-bit lanes as [lo_k lo_k+1 hi_k hi_k+1]
 * (nibbles: the 16 bytes of both blocks, then the same shifted by 4) against the activations
 * rearranged to match; so int32 lanes 0-3 and 8-11 belong to block k, 4-7 and 12-15 to k+1.
 * sum (u - 8) y = sum u y - sum 8 y with u unsigned. */
static inline __m512i q4_0_dot2(const el_block_q4_0 *a, const el_block_q8_0 *b) {
    __m256i q = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)a[1].qs),
                                 _mm_loadu_si128((const __m128i *)a[0].qs));
    __m512i shifts = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
    __m512i u = _mm512_and_si512(_mm512_srlv_epi16(_mm512_broadcast_i64x4(q), shifts),
                                 _mm512_set1_epi8(0x0F));
    __m512i y = load2_q8_0(b); /* [y_k lo, y_k hi, y_k+1 lo, y_k+1 hi] */
    y = _mm512_shuffle_i64x2(y, y, _MM_SHUFFLE(3, 1, 2, 0));
    __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, y);
    return _mm512_sub_epi32(p, _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(8), y));
}

/* The fp16 scales d of 8 consecutive blocks stride bytes apart (d first in each), as floats. */
static inline __m256 fp16x8(const void *blocks, size_t stride) {
    const char *p = blocks;
    uint16_t h[8];
    for (int k = 0; k < 8; k++) memcpy(&h[k], p + k * stride, sizeof h[k]);
    return _mm256_cvtph_ps(_mm_setr_epi16((short)h[0], (short)h[1], (short)h[2], (short)h[3],
                                          (short)h[4], (short)h[5], (short)h[6], (short)h[7]));
}

/* Groups of 8 blocks share one conversion of their 16 scales, spread to the lanes of each pair
 * by a permute; two accumulators hide the fmadd latency; the last nb % 8 blocks go one by one
 * on 256 bits. x is q4_0 (q4) or q8_0 blocks, y q8_0 blocks. */
static inline __attribute__((always_inline)) float dot_blocks32(int64_t nb, const void *x,
                                                                size_t x_block, const void *y,
                                                                bool q4) {
    const char *xa = x;
    const el_block_q8_0 *b = y;
    /* lane -> block of the pair: q8_0 pairs are 8 + 8 lanes, q4_0 pairs 4 + 4 + 4 + 4 */
    const __m512i pick0 = q4 ? _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1)
                             : _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    int64_t i = 0;
    for (; i + 8 <= nb; i += 8) {
        __m512 d = _mm512_castps256_ps512(
            _mm256_mul_ps(fp16x8(xa + i * x_block, x_block), fp16x8(b + i, sizeof *b)));
        #pragma GCC unroll 4
        for (int k = 0; k < 8; k += 2) {
            const void *xb = xa + (i + k) * x_block;
            __m512i p = q4 ? q4_0_dot2(xb, b + i + k) : q8_0_dot2(xb, b + i + k);
            __m512 dk = _mm512_permutexvar_ps(_mm512_add_epi32(pick0, _mm512_set1_epi32(k)), d);
            acc[(k / 2) & 1] = _mm512_fmadd_ps(dk, _mm512_cvtepi32_ps(p), acc[(k / 2) & 1]);
        }
    }
    __m256 tail = _mm256_setzero_ps();
    for (; i < nb; i++) {
        const void *xb = xa + i * x_block;
        uint16_t dx;
        memcpy(&dx, xb, sizeof dx);
        __m256i p = q4 ? q4_0_dot1(xb, b[i].qs) : q8_0_dot1(xb, b + i);
        tail = _mm256_fmadd_ps(_mm256_set1_ps(fp16(dx) * fp16(b[i].d)), _mm256_cvtepi32_ps(p), tail);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1])) + hsum256_ps(tail);
}

/* The float types' dot products: float_avx512.h's sequence for one output, the bits the
 * gemvs and tiles of this level give it. */
static inline __attribute__((always_inline)) void vec_dot_float(el_float_kind kind, int64_t n,
                                                                float *s, const void *x,
                                                                const void *y) {
    const float *a = y;
    float t[1][4];
    float_dots_avx512(kind, n, &x, 1, &a, 1, t);
    *s = t[0][0];
}

void el_vec_dot_f16_avx512(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_float(EL_FLOAT_F16, n, s, x, y);
}

void el_vec_dot_bf16_avx512(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_float(EL_FLOAT_BF16, n, s, x, y);
}

void el_vec_dot_q8_0_avx512(int64_t n, float *s, const void *x, const void *y) {
    *s = dot_blocks32(n / EL_QK8_0, x, sizeof(el_block_q8_0), y, false);
}

void el_vec_dot_q4_0_avx512(int64_t n, float *s, const void *x, const void *y) {
    *s = dot_blocks32(n / EL_QK4_0, x, sizeof(el_block_q4_0), y, true);
}

/* W8 . A16: one row of rows_w8a16. */
void el_vec_dot_w8a16_avx512(int64_t n, float *s, const void *x, const void *y) {
    el_a16_view a = el_a16_view_of(y, n);
    const char *const row[4] = {x};
    rows_w8a16(&a, row, s, 1);
}

#endif
