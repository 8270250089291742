/* avx2_simd.h - the static inline helpers that more than one AVX2 kernel file shares:
 * horizontal sums, the signed byte dot, fp16 scales, the block dots of q8_0 and q4_0, int4
 * chunks and W8A16 rows (dot_avx2.c, tile_avx2.c, gemv_avx2.c), a vectorized exponential
 * (attend_avx2.c, swiglu_avx2.c), and the lane masks, word broadcasts and register pins of
 * the gemms and attention. Included inside their AVX2 guard. */
#ifndef EL_KERNELS_AVX2_SIMD_H
#define EL_KERNELS_AVX2_SIMD_H

#include <immintrin.h>
#include <string.h>

#include "kernels/blocks.h"
#include "kernels/dispatch.h"
#include "kernels/edge.h"
#include "kernels/w8a16.h"

static inline float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline int32_t hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

/* Sums of adjacent pairs of x*y over signed bytes, as 8 int32 lanes of 4 products each.
 * maddubs wants an unsigned operand, so the sign of x moves onto y (exact for |y| <= 127,
 * which holds for activations quantized by el_*_from_float). */
static inline __m256i dot_i8(__m256i x, __m256i y) {
    __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

static inline float fp16(uint16_t h) { return _cvtsh_ss(h); }

/* The 32-bit lanes [0, n) of a ymm set, n clamped to 0..8: the rows or cells that exist. */
static inline __m256i lanes_below(int64_t n) {
    int c = n < 0 ? 0 : n > 8 ? 8 : (int)n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The 4 bytes at p (any alignment) in every 32-bit lane. */
static inline __m256i broadcast_i32(const void *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

/* vpmaddubsw of the unsigned bytes w with the 4 signed bytes at b broadcast, in one asm: given
 * the broadcast apart, gcc hoists a chunk's broadcasts ahead of their products (or computes
 * once those that two halves of a panel share) and spills them to the stack. */
static inline __attribute__((always_inline)) __m256i maddubs_broadcast(__m256i w,
                                                                       const int8_t *b) {
    __m256i p;
    __asm__("vpbroadcastd %1, %0\n\tvpmaddubsw %0, %2, %0"
            : "=&x"(p)
            : "m"(*(const int32_t *)b), "x"(w));
    return p;
}

/* Keeps v in a register as computed here: without it gcc reassociates the int16 sums of a
 * chunk into a tree of all its products, which spills most of them to the stack. */
static inline __attribute__((always_inline)) void pin(__m256i *v) { __asm__("" : "+x"(*v)); }

/* The integer dots of one block pair as 8 int32 lanes. */
static inline __m256i q8_0_dot(const el_block_q8_0 *a, const el_block_q8_0 *b) {
    return dot_i8(_mm256_loadu_si256((const __m256i *)a->qs),
                  _mm256_loadu_si256((const __m256i *)b->qs));
}

/* Q4_0 nibbles stay unsigned (maddubs takes them as they are, pairs <= 2*15*128) and the 8 comes
 * off in int16: sum (u - 8) y = sum u y - sum 8 y. Elements 0-15 are the low nibbles, 16-31 the
 * high nibbles. */
static inline __m256i q4_0_dot(const el_block_q4_0 *a, const int8_t *y) {
    __m128i q = _mm_loadu_si128((const __m128i *)a->qs);
    __m256i u = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0F));
    __m256i yq = _mm256_loadu_si256((const __m256i *)y);
    __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(u, yq),
                                 _mm256_maddubs_epi16(_mm256_set1_epi8(8), yq));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* The fp16 scales d of 8 consecutive blocks stride bytes apart (d first in each), as floats:
 * one conversion for 8 blocks instead of one each. */
static inline __m256 fp16x8(const void *blocks, size_t stride) {
    const char *p = blocks;
    uint16_t h[8];
    for (int k = 0; k < 8; k++) memcpy(&h[k], p + k * stride, sizeof h[k]);
    return _mm256_cvtph_ps(_mm_setr_epi16((short)h[0], (short)h[1], (short)h[2], (short)h[3],
                                          (short)h[4], (short)h[5], (short)h[6], (short)h[7]));
}

/* Element k of v in all lanes. */
static inline __m256 lane(__m256 v, int k) { return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(k)); }

/* Picks int16 element e of each 128-bit lane into every int16 of that lane. */
static inline __m256i pick_i16(__m256i v, int e) {
    return _mm256_shuffle_epi8(v, _mm256_set1_epi16((short)(0x0100 * (2 * e + 1) + 2 * e)));
}

/* The sum of the 8 int32 lanes of v, in int64 (lanes may sum past 2^31). */
static inline int64_t hsum_epi32_wide(__m256i v) {
    __m256i w = _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(v)),
                                 _mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1)));
    __m128i h = _mm_add_epi64(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    return _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1);
}

/* 16 int8 weights widened to int16. */
static inline __m256i widen16(const int8_t *q) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)q));
}

/* The 32 unsigned nibbles (0..15) of an int4 chunk, in element order. */
static inline __m256i load_chunk_u4(const uint8_t *qs) {
    __m128i q = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0F));
}

/* W8A16 rows against one A16 row: R rows far apart share each activation load; a row's sum is
 * exact, so the same in any company. */
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
        __m256i acc[4];
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_si256();
        for (; i < end; i += 16) {
            __m256i av = _mm256_loadu_si256((const __m256i *)(a->q + 2 * i));
            #pragma GCC unroll 4
            for (int r = 0; r < R; r++)
                acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(widen16(q[r] + i), av));
        }
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) sum[r] += hsum_epi32_wide(acc[r]);
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = el_w8a16_scale(row[r], a->d, sum[r]);
}

/* exp(x) for x <= 0 to about 2 ulp: x = n ln2 + r with |r| <= ln2 / 2, e^r by its Taylor
 * polynomial of degree 6 (remainder < 2e-7 relative), times 2^n built in the exponent bits.
 * x is clamped at -87 so that n >= -126 stays a normal power of two; softmax weights that small
 * do not count. */
static inline __m256 el_exp_nonpositive_avx2(__m256 x) {
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145752f), x); /* ln2, high bits */
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f), r);      /* and the rest */
    __m256 p = _mm256_set1_ps(1.0f / 720.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i pow2n = _mm256_slli_epi32(
        _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(pow2n));
}

#endif
