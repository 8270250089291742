/* dot_iq4_neon.c - dot_iq4_neon.h's dot products over widening multiplies (every aarch64 CPU). */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

#include "kernels/dot_iq4_neon.h"

/* This level's names (neon.h) for dot_iq4_neon.h's kernels: aliases, the code as it is. */

void el_vec_dot_iq4_nl_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_iq4_nl")));

void el_vec_dot_iq4_xs_neon(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_iq4_xs")));

#endif
