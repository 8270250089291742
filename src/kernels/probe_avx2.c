/* probe_avx2.c - the AVX2 level's int8 peak probe (dispatch.h): vpmaddubsw then vpmaddwd with
 * ones into 32-bit lanes, the sequence its integer kernels accumulate with (avx2_simd.h), 32
 * multiply-adds per vpmaddubsw. */
#include "kernels/avx2.h"

#if defined(__AVX2__)

#include <immintrin.h>

static uint32_t lane_sum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return (uint32_t)_mm_cvtsi128_si32(s);
}

uint32_t el_int8_probe_avx2(int64_t iters, int8_t one) {
    const __m256i x = _mm256_set1_epi8(one), ones = _mm256_set1_epi16(1);
    __m256i acc[EL_PROBE_CHAINS];
    for (int c = 0; c < EL_PROBE_CHAINS; c++) acc[c] = _mm256_setzero_si256();
    for (int64_t i = 0; i < iters; i++) {
        #pragma GCC unroll 12
        for (int c = 0; c < EL_PROBE_CHAINS; c++)
            acc[c] = _mm256_add_epi32(acc[c],
                                      _mm256_madd_epi16(_mm256_maddubs_epi16(x, x), ones));
    }
    uint32_t s = 0;
    for (int c = 0; c < EL_PROBE_CHAINS; c++) s += lane_sum(acc[c]);
    return s;
}

#endif
