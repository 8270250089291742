/* dot_legacy_avx512.c - the dot products of Q5_0, IQ4_NL, Q4_1, Q5_1 and IQ4_XS: their gemvs
 * (gemv_legacy_avx512.c) for one row, so a dot product has the bits of the same row's gemv. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

void el_vec_dot_q5_0_avx512(int64_t n, float *s, const void *x, const void *y) {
    el_gemv_q5_0_avx512(n, s, 1, x, 0, y);
}

void el_vec_dot_iq4_nl_avx512(int64_t n, float *s, const void *x, const void *y) {
    el_gemv_iq4_nl_avx512(n, s, 1, x, 0, y);
}

void el_vec_dot_q4_1_avx512(int64_t n, float *s, const void *x, const void *y) {
    el_gemv_q4_1_avx512(n, s, 1, x, 0, y);
}

void el_vec_dot_q5_1_avx512(int64_t n, float *s, const void *x, const void *y) {
    el_gemv_q5_1_avx512(n, s, 1, x, 0, y);
}

void el_vec_dot_iq4_xs_avx512(int64_t n, float *s, const void *x, const void *y) {
    el_gemv_iq4_xs_avx512(n, s, 1, x, 0, y);
}

#endif
