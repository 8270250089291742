/* exp_avx2.h - a vectorized exponential for the AVX2 kernels (attention's softmax, SwiGLU).
 * Include only from files built with -mavx2 -mfma (see Makefile). */
#ifndef EL_KERNELS_EXP_AVX2_H
#define EL_KERNELS_EXP_AVX2_H

#include <immintrin.h>

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
