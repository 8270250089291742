/* dot_legacy_neon_dotprod.c - dot_legacy_neon.h's dot products over SDOT. */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

#include "kernels/dot_legacy_neon.h"

/* This level's names (neon.h) for dot_legacy_neon.h's kernels: aliases, the code as it is. */

void el_vec_dot_q4_1_neon_dotprod(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q4_1")));

void el_vec_dot_q5_0_neon_dotprod(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q5_0")));

void el_vec_dot_q5_1_neon_dotprod(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q5_1")));

#endif
