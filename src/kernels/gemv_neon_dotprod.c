/* gemv_neon_dotprod.c - gemv_neon.h's gemvs over SDOT. */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

#include "kernels/gemv_neon.h"

/* This level's names (neon.h) for gemv_neon.h's kernels: aliases, the code as it is. */

void el_gemv_q4_0_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a)
    __attribute__((alias("gemv_q4_0")));

void el_gemv_q8_0_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a)
    __attribute__((alias("gemv_q8_0")));

void el_gemv_w4_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                             const void *a)
    __attribute__((alias("gemv_w4")));

void el_gemv_w8_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                             const void *a)
    __attribute__((alias("gemv_w8")));

void el_gemv_w4g32_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                                const void *a)
    __attribute__((alias("gemv_w4g32")));

void el_gemv_w4g64_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                                const void *a)
    __attribute__((alias("gemv_w4g64")));

void el_gemv_w4g128_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w,
                                 size_t w_stride, const void *a)
    __attribute__((alias("gemv_w4g128")));

void el_gemv_w8a16_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                                const void *a)
    __attribute__((alias("gemv_w8a16")));

void el_vec_dot_w8a16_neon_dotprod(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_w8a16")));

#endif
