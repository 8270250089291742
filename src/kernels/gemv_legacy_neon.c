/* gemv_legacy_neon.c - gemv_legacy_neon.h's gemvs over widening multiplies (every aarch64 CPU). */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

#include "kernels/gemv_legacy_neon.h"

/* This level's names (neon.h) for gemv_legacy_neon.h's kernels: aliases, the code as it is. */

void el_gemv_q4_1_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a)
    __attribute__((alias("gemv_q4_1")));

void el_gemv_q5_0_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a)
    __attribute__((alias("gemv_q5_0")));

void el_gemv_q5_1_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a)
    __attribute__((alias("gemv_q5_1")));

#endif
