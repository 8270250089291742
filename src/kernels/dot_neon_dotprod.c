/* dot_neon_dotprod.c - dot_neon.h's dot products over SDOT. */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

#include "kernels/dot_neon.h"

/* This level's names (neon.h) for dot_neon.h's kernels: aliases, the code as it is. */

void el_vec_dot_q8_0_neon_dotprod(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q8_0")));

void el_vec_dot_q4_0_neon_dotprod(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q4_0")));

void el_vec_dot_q4_k_neon_dotprod(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q4_k")));

void el_vec_dot_q6_k_neon_dotprod(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q6_k")));

void el_vec_dot_w8_neon_dotprod(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_w8")));

void el_vec_dot_w4_neon_dotprod(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_w4")));

void el_vec_dot_w4g32_neon_dotprod(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_w4g32")));

void el_vec_dot_w4g64_neon_dotprod(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_w4g64")));

void el_vec_dot_w4g128_neon_dotprod(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_w4g128")));

#endif
