/* dot_iq4_neon_dotprod.c - dot_iq4_neon.h's dot products over SDOT. */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

#include "kernels/dot_iq4_neon.h"

/* This level's names (neon.h) for dot_iq4_neon.h's kernels: aliases, the code as it is. */

void el_vec_dot_iq4_nl_neon_dotprod(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_iq4_nl")));

void el_vec_dot_iq4_xs_neon_dotprod(int64_t n, float *s, const void *x, const void *y)
    __attribute__((alias("vec_dot_iq4_xs")));

#endif
