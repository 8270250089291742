/* dot_kquant_neon.c - dot_kquant_neon.h's dot products over widening multiplies (every aarch64 CPU). */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

#include "kernels/dot_kquant_neon.h"

/* This level's names (neon.h) for dot_kquant_neon.h's kernels: aliases, the code as it is. */

void el_vec_dot_q2_k_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q2_k")));

void el_vec_dot_q3_k_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q3_k")));

void el_vec_dot_q5_k_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_q5_k")));

#endif
