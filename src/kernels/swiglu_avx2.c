/* swiglu_avx2.c - swiglu.h with AVX2 and FMA, 8 floats at a time: silu(g) = g * sigmoid(g) with
 * e = exp(-|g|) from avx2_simd.h (never above 1, so nothing overflows), sigmoid = 1 / (1 + e) for
 * g >= 0 and e / (1 + e) below. libm's expf is a call and a scalar exponential for each of the
 * feed-forward's elements (docs/kernels.md, "SwiGLU"). GELU's tanh form is the same sigmoid:
 * 0.5 (1 + tanh(t)) = sigmoid(2t), so gelu(x) = x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)),
 * which also avoids the reference's 1 + tanh cancelling where tanh nears -1 (libm's tanhf was
 * most of GeGLU's time: docs/kernels.md). Agrees with the reference to a few float roundings.
 * Built with -mavx2 -mfma -mf16c on x86 (see Makefile); avx2.c's table names them (AVX-512's
 * keeps them). */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#include "kernels/avx2_simd.h"

static inline __m256 sigmoid(__m256 t) {
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 abs_t = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), t);
    __m256 e = el_exp_nonpositive_avx2(_mm256_sub_ps(_mm256_setzero_ps(), abs_t));
    __m256 num = _mm256_blendv_ps(one, e, t); /* the sign bit of t picks e */
    return _mm256_div_ps(num, _mm256_add_ps(one, e));
}

static inline __m256 silu_times(__m256 g, __m256 up) {
    return _mm256_mul_ps(_mm256_mul_ps(g, sigmoid(g)), up);
}

static inline __m256 gelu_times(__m256 x, __m256 up) {
    const __m256 c2 = _mm256_set1_ps(2.0f * 0.7978845608028654f), k = _mm256_set1_ps(0.044715f);
    __m256 t = _mm256_mul_ps(c2, _mm256_fmadd_ps(_mm256_mul_ps(k, x), _mm256_mul_ps(x, x), x));
    return _mm256_mul_ps(_mm256_mul_ps(x, sigmoid(t)), up);
}

/* The tail goes through the same arithmetic under a mask: an element's result must not depend
 * on where the pool split the array (a row's logits would then depend on its batch). */
static inline __attribute__((always_inline)) void gated(float *gate, const float *up, size_t n,
                                                        __m256 (*act)(__m256, __m256)) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(gate + i, act(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
    if (i < n) {
        __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - i)), lanes);
        __m256 g = _mm256_maskload_ps(gate + i, m), u = _mm256_maskload_ps(up + i, m);
        _mm256_maskstore_ps(gate + i, m, act(g, u));
    }
}

void el_swiglu_avx2(float *gate, const float *up, size_t n) { gated(gate, up, n, silu_times); }

void el_geglu_avx2(float *gate, const float *up, size_t n) { gated(gate, up, n, gelu_times); }

#endif
