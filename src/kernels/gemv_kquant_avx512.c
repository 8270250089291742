/* gemv_kquant_avx512.c - gemv_kquant_x86.h's gemvs of Q4_K, Q5_K and Q6_K over vpdpbusd. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include "kernels/gemv_kquant_x86.h"

/* This level's names (avx512.h) for the header's kernels: aliases, the code as it is. */

void el_gemv_q4_k_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a)
    __attribute__((alias("gemv_q4_k")));

void el_gemv_q4_k_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride)
    __attribute__((alias("gemv_q4_k_multi")));

void el_gemv_q5_k_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a)
    __attribute__((alias("gemv_q5_k")));

void el_gemv_q5_k_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride)
    __attribute__((alias("gemv_q5_k_multi")));

void el_gemv_q6_k_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a)
    __attribute__((alias("gemv_q6_k")));

void el_gemv_q6_k_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride)
    __attribute__((alias("gemv_q6_k_multi")));

#endif
