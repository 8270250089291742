/* probe_avx2.c - the AVX2 level's int8 peak probe (dispatch.h): vpmaddubsw, 32 multiply-adds
 * each, its int16 pairs accumulated by vpaddw as the packed gemm accumulates a chunk's steps
 * (gemm_avx2.c), and widened by vpmaddwd into 32-bit lanes every WIDEN_ITERS iterations (before
 * an int16 lane could overflow). The loop is written in assembly: in C the compiler took the
 * product of the loop's constant bytes out of the loop (the probe timed additions), and with
 * the product pinned in place it kept a third of the accumulators on the stack, so loads,
 * stores and copies, not the multiplies, set the pace (a peak understated below what the gemm
 * reached: docs/kernels.md). */
#include "kernels/avx2.h"

#if defined(__AVX2__)

#include <immintrin.h>

_Static_assert(EL_PROBE_CHAINS == 12, "the assembly has 12 accumulators");

static uint32_t lane_sum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return (uint32_t)_mm_cvtsi128_si32(s);
}

enum { WIDEN_ITERS = 1024 }; /* 2 * 1024 per int16 lane with bytes of one: far from 32767 */

/* acc[c] += n times vpmaddubsw(x, x) (int16 lanes), for the 12 chains; n > 0. */
static void probe_run(int64_t n, __m256i x, __m256i acc[EL_PROBE_CHAINS]) {
    __m256i a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], a4 = acc[4], a5 = acc[5];
    __m256i a6 = acc[6], a7 = acc[7], a8 = acc[8], a9 = acc[9], a10 = acc[10], a11 = acc[11];
    __asm__ volatile("1:\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm12\n\t vpaddw %%ymm12, %[a0], %[a0]\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm13\n\t vpaddw %%ymm13, %[a1], %[a1]\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm12\n\t vpaddw %%ymm12, %[a2], %[a2]\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm13\n\t vpaddw %%ymm13, %[a3], %[a3]\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm12\n\t vpaddw %%ymm12, %[a4], %[a4]\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm13\n\t vpaddw %%ymm13, %[a5], %[a5]\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm12\n\t vpaddw %%ymm12, %[a6], %[a6]\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm13\n\t vpaddw %%ymm13, %[a7], %[a7]\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm12\n\t vpaddw %%ymm12, %[a8], %[a8]\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm13\n\t vpaddw %%ymm13, %[a9], %[a9]\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm12\n\t vpaddw %%ymm12, %[a10], %[a10]\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm13\n\t vpaddw %%ymm13, %[a11], %[a11]\n\t"
                     "dec %[n]\n\t"
                     "jnz 1b"
                     : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3),
                       [a4] "+x"(a4), [a5] "+x"(a5), [a6] "+x"(a6), [a7] "+x"(a7),
                       [a8] "+x"(a8), [a9] "+x"(a9), [a10] "+x"(a10), [a11] "+x"(a11),
                       [n] "+r"(n)
                     : [x] "x"(x)
                     : "xmm12", "xmm13", "cc");
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3, acc[4] = a4, acc[5] = a5;
    acc[6] = a6, acc[7] = a7, acc[8] = a8, acc[9] = a9, acc[10] = a10, acc[11] = a11;
}

uint32_t el_int8_probe_avx2(int64_t iters, int8_t one) {
    const __m256i ones = _mm256_set1_epi16(1), x = _mm256_set1_epi8(one);
    __m256i total = _mm256_setzero_si256();
    for (int64_t i0 = 0; i0 < iters; i0 += WIDEN_ITERS) {
        __m256i acc[EL_PROBE_CHAINS];
        for (int c = 0; c < EL_PROBE_CHAINS; c++) acc[c] = _mm256_setzero_si256();
        probe_run(iters - i0 < WIDEN_ITERS ? iters - i0 : WIDEN_ITERS, x, acc);
        for (int c = 0; c < EL_PROBE_CHAINS; c++)
            total = _mm256_add_epi32(total, _mm256_madd_epi16(acc[c], ones));
    }
    return lane_sum(total);
}

#endif
