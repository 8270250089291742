/* probe_avx512.c - the AVX-512 level's int8 peak probe (dispatch.h): vpdpbusd on zmm registers,
 * the instruction its gemvs, tiles and gemm accumulate with, 64 multiply-adds each. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512VNNI__)

#include <immintrin.h>

static uint32_t lane_sum(__m512i v) { return (uint32_t)_mm512_reduce_add_epi32(v); }

uint32_t el_int8_probe_avx512(int64_t iters, int8_t one) {
    const __m512i x = _mm512_set1_epi8(one);
    __m512i acc[EL_PROBE_CHAINS];
    for (int c = 0; c < EL_PROBE_CHAINS; c++) acc[c] = _mm512_setzero_si512();
    for (int64_t i = 0; i < iters; i++) {
        #pragma GCC unroll 12
        for (int c = 0; c < EL_PROBE_CHAINS; c++) acc[c] = _mm512_dpbusd_epi32(acc[c], x, x);
    }
    uint32_t s = 0;
    for (int c = 0; c < EL_PROBE_CHAINS; c++) s += lane_sum(acc[c]);
    return s;
}

#endif
