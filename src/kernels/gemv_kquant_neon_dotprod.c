/* gemv_kquant_neon_dotprod.c - gemv_kquant_neon.h's gemvs over SDOT. */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

#include "kernels/gemv_kquant_neon.h"

/* This level's names (neon.h) for gemv_kquant_neon.h's kernels: aliases, the code as it is. */

void el_gemv_q2_k_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a)
    __attribute__((alias("gemv_q2_k")));

void el_gemv_q3_k_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a)
    __attribute__((alias("gemv_q3_k")));

void el_gemv_q4_k_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a)
    __attribute__((alias("gemv_q4_k")));

void el_gemv_q5_k_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a)
    __attribute__((alias("gemv_q5_k")));

void el_gemv_q6_k_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a)
    __attribute__((alias("gemv_q6_k")));

#endif
