/* float_avx2.h - the one sequence of float operations by which every AVX2 kernel of the float
 * weight types (F32, F16, BF16: vec_dot, gemv, multi-row gemv, tile) computes an output, so an
 * output has the same bits whichever kernel computes it and in whatever company: a row's logits
 * do not depend on the batch it is in (speculative tree rows, concurrent variants, chunked
 * prompts all give one-row decoding's bits).
 *
 * The sequence, per output: one accumulator of 8 float lanes, zero to start; for each 8
 * elements in order (the last ones padded with zeros) acc = fma(w, a, acc); then hsum_ps. The
 * kernels get their speed from many outputs in flight (independent accumulators sharing each
 * weight conversion and each activation load), never from several accumulators per output.
 * Included inside the AVX2 guard by dot_avx2.c, gemv_avx2.c and tile_avx2.c. */
#ifndef EL_KERNELS_FLOAT_AVX2_H
#define EL_KERNELS_FLOAT_AVX2_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/avx2_simd.h"
#include "kernels/float_kind.h"

/* The 8 weights from element i of row, as floats. */
static inline __attribute__((always_inline)) __m256 float_w8_avx2(el_float_kind kind,
                                                                  const void *row, int64_t i) {
    if (kind == EL_FLOAT_F32) return _mm256_loadu_ps((const float *)row + i);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)row + i));
    if (kind == EL_FLOAT_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); /* bf16: top half */
}

/* The last t (< 8) weights from element i of row, then zeros. */
static inline __attribute__((always_inline)) __m256 float_w8_tail_avx2(el_float_kind kind,
                                                                       const void *row,
                                                                       int64_t i, int64_t t) {
    uint32_t buf[8] = {0}; /* 8 floats or 8 halves, whichever the kind holds */
    size_t size = kind == EL_FLOAT_F32 ? 4 : 2;
    memcpy(buf, (const char *)row + (size_t)i * size, (size_t)t * size);
    return float_w8_avx2(kind, buf, 0);
}

/* s[r][o] = the dot of weight row w[o] (o < O) with activation row a[r] (r < R), n elements
 * each, by the sequence above. Inlined with constant kind, O and R (O * R <= 8 keeps the
 * accumulators, the converted weights and a loaded activation within the 16 registers). */
static inline __attribute__((always_inline)) void float_dots_avx2(el_float_kind kind, int64_t n,
                                                                  const void *const w[], int O,
                                                                  const float *const a[], int R,
                                                                  float s[][4]) {
    __m256 acc[4][4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int o = 0; o < O; o++) acc[r][o] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 wv[4];
        #pragma GCC unroll 4
        for (int o = 0; o < O; o++) wv[o] = float_w8_avx2(kind, w[o], i);
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m256 av = _mm256_loadu_ps(a[r] + i);
            #pragma GCC unroll 4
            for (int o = 0; o < O; o++) acc[r][o] = _mm256_fmadd_ps(wv[o], av, acc[r][o]);
        }
    }
    if (i < n) {
        __m256 wv[4];
        #pragma GCC unroll 4
        for (int o = 0; o < O; o++) wv[o] = float_w8_tail_avx2(kind, w[o], i, n - i);
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            float buf[8] = {0};
            memcpy(buf, a[r] + i, (size_t)(n - i) * sizeof *buf);
            __m256 av = _mm256_loadu_ps(buf);
            #pragma GCC unroll 4
            for (int o = 0; o < O; o++) acc[r][o] = _mm256_fmadd_ps(wv[o], av, acc[r][o]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int o = 0; o < O; o++) s[r][o] = hsum_ps(acc[r][o]);
}

#endif
