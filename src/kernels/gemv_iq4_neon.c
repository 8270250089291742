/* gemv_iq4_neon.c - gemv_iq4_neon.h's gemvs over widening multiplies (every aarch64 CPU). */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

#include "kernels/gemv_iq4_neon.h"

/* This level's names (neon.h) for gemv_iq4_neon.h's kernels: aliases, the code as it is. */

void el_gemv_iq4_nl_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a)
    __attribute__((alias("gemv_iq4_nl")));

void el_gemv_iq4_xs_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a)
    __attribute__((alias("gemv_iq4_xs")));

#endif
