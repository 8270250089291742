/* float_avx512.h - the one sequence of float operations by which every AVX-512 kernel of F16
 * and BF16 weights (vec_dot, gemv, multi-row gemv, tile; F32 keeps AVX2's: avx512.c) computes
 * an output, as float_avx2.h does for AVX2 (see there why), on 16 lanes: one accumulator of 16
 * float lanes, zero to start; for each 16 elements in order (the last ones padded with zeros
 * by masked loads) acc = fma(w, a, acc); then _mm512_reduce_add_ps. The level gives all four
 * kernels of these types, so none of AVX2's (8 lanes, other bits) is mixed in. Included
 * inside the AVX-512 guard by dot_avx512.c, gemv_float_avx512.c and tile_float_avx512.c. */
#ifndef EL_KERNELS_FLOAT_AVX512_H
#define EL_KERNELS_FLOAT_AVX512_H

#include <immintrin.h>
#include <stdint.h>

#include "kernels/float_kind.h"

/* The F16 or BF16 weights of row from element i under mask m (16 where m is all ones), zeros elsewhere. */
static inline __attribute__((always_inline)) __m512 float_w16_avx512(el_float_kind kind,
                                                                     const void *row, int64_t i,
                                                                     __mmask16 m) {
    __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)row + i);
    if (kind == EL_FLOAT_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); /* bf16 */
}

/* s[r][o] = the dot of weight row w[o] (o < O) with activation row a[r] (r < R), n elements
 * each, by the sequence above. Inlined with constant kind, O and R (O * R <= 16: with the
 * converted weights, within the 32 registers). */
static inline __attribute__((always_inline)) void float_dots_avx512(el_float_kind kind,
                                                                    int64_t n,
                                                                    const void *const w[], int O,
                                                                    const float *const a[], int R,
                                                                    float s[][4]) {
    __m512 acc[4][4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int o = 0; o < O; o++) acc[r][o] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 wv[4];
        #pragma GCC unroll 4
        for (int o = 0; o < O; o++) wv[o] = float_w16_avx512(kind, w[o], i, m);
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m512 av = _mm512_maskz_loadu_ps(m, a[r] + i);
            #pragma GCC unroll 4
            for (int o = 0; o < O; o++) acc[r][o] = _mm512_fmadd_ps(wv[o], av, acc[r][o]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int o = 0; o < O; o++) s[r][o] = _mm512_reduce_add_ps(acc[r][o]);
}

#endif
