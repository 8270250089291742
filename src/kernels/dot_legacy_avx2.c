/* dot_legacy_avx2.c - the dot products of Q5_0, IQ4_NL, Q4_1, Q5_1 and IQ4_XS: their gemvs
 * (gemv_legacy_avx2.c) for one row, so a dot product has the bits of the same row's gemv; and
 * the quantizer of Q8_1, the activations of Q4_1 and Q5_1. */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>

#include "kernels/blocks.h"

/* The same arithmetic as el_q8_1_from_float, so the same bytes: d = amax / 127 (NaNs passed over
 * as fmaxf does: maxps returns its second operand when the first is NaN), q = roundf(x * (1 / d)),
 * halves away from zero, as truncation of v plus the largest float below 0.5 with v's sign
 * (exact for |v| <= 127), and s = d * the sum of q, both rounded to fp16 to nearest even. */
void el_quantize_q8_1_avx2(const float *x, void *y, int64_t n) {
    el_block_q8_1 *b = y;
    const __m256 sign = _mm256_set1_ps(-0.0f), below_half = _mm256_set1_ps(0.49999997f);
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, x += EL_QK8_0) {
        __m256 m = _mm256_setzero_ps();
        for (int k = 0; k < 4; k++)
            m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)), m);
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        float d = _mm_cvtss_f32(h) / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        __m256i q[4];
        for (int k = 0; k < 4; k++) {
            __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), _mm256_set1_ps(id));
            __m256 half = _mm256_or_ps(below_half, _mm256_and_ps(sign, v));
            q[k] = _mm256_cvttps_epi32(_mm256_add_ps(v, half));
        }
        /* the packs work within 128-bit lanes; the permute puts the 4-byte groups back in order */
        __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]),
                                           _mm256_packs_epi32(q[2], q[3]));
        bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)b->qs, bytes);
        __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(1, 0, 3, 2)));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
        b->d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
        b->s = _cvtss_sh((float)_mm_cvtsi128_si32(s4) * d, _MM_FROUND_TO_NEAREST_INT);
    }
}

void el_vec_dot_q5_0_avx2(int64_t n, float *s, const void *x, const void *y) {
    el_gemv_q5_0_avx2(n, s, 1, x, 0, y);
}

void el_vec_dot_iq4_nl_avx2(int64_t n, float *s, const void *x, const void *y) {
    el_gemv_iq4_nl_avx2(n, s, 1, x, 0, y);
}

void el_vec_dot_q4_1_avx2(int64_t n, float *s, const void *x, const void *y) {
    el_gemv_q4_1_avx2(n, s, 1, x, 0, y);
}

void el_vec_dot_q5_1_avx2(int64_t n, float *s, const void *x, const void *y) {
    el_gemv_q5_1_avx2(n, s, 1, x, 0, y);
}

void el_vec_dot_iq4_xs_avx2(int64_t n, float *s, const void *x, const void *y) {
    el_gemv_iq4_xs_avx2(n, s, 1, x, 0, y);
}

#endif
