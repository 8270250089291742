/* gemv_iq4_neon_dotprod.c - gemv_iq4_neon.h's gemvs over SDOT. */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

#include "kernels/gemv_iq4_neon.h"

/* This level's names (neon.h) for gemv_iq4_neon.h's kernels: aliases, the code as it is. */

void el_gemv_iq4_nl_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                                 const void *a)
    __attribute__((alias("gemv_iq4_nl")));

void el_gemv_iq4_xs_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                                 const void *a)
    __attribute__((alias("gemv_iq4_xs")));

#endif
