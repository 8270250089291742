/* gemv_legacy_avx512.c - gemv_legacy_x86.h's gemvs of Q5_0, IQ4_NL, Q4_1, Q5_1 and IQ4_XS,
 * and their multi-row gemvs, over vpdpbusd. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include "kernels/gemv_legacy_x86.h"

/* This level's names (avx512.h) for the header's kernels: aliases, the code as it is. */

void el_gemv_q5_0_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a)
    __attribute__((alias("gemv_q5_0")));

void el_gemv_iq4_nl_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                           const void *a)
    __attribute__((alias("gemv_iq4_nl")));

void el_gemv_q4_1_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a)
    __attribute__((alias("gemv_q4_1")));

void el_gemv_q5_1_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a)
    __attribute__((alias("gemv_q5_1")));

void el_gemv_iq4_xs_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                           const void *a)
    __attribute__((alias("gemv_iq4_xs")));

void el_gemv_q5_0_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride)
    __attribute__((alias("gemv_q5_0_multi")));

void el_gemv_iq4_nl_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                 const void *w, size_t w_stride, const void *a, size_t a_stride)
    __attribute__((alias("gemv_iq4_nl_multi")));

void el_gemv_q4_1_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride)
    __attribute__((alias("gemv_q4_1_multi")));

void el_gemv_q5_1_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride)
    __attribute__((alias("gemv_q5_1_multi")));

void el_gemv_iq4_xs_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                 const void *w, size_t w_stride, const void *a, size_t a_stride)
    __attribute__((alias("gemv_iq4_xs_multi")));

#endif
