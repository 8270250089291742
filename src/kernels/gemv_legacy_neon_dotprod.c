/* gemv_legacy_neon_dotprod.c - gemv_legacy_neon.h's gemvs over SDOT. */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

#include "kernels/gemv_legacy_neon.h"

/* This level's names (neon.h) for gemv_legacy_neon.h's kernels: aliases, the code as it is. */

void el_gemv_q4_1_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a)
    __attribute__((alias("gemv_q4_1")));

void el_gemv_q5_0_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a)
    __attribute__((alias("gemv_q5_0")));

void el_gemv_q5_1_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a)
    __attribute__((alias("gemv_q5_1")));

#endif
