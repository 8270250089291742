/* tile_legacy_neon.c - tile_legacy_neon.h's 4x4 tiles over widening multiplies (every aarch64 CPU). */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

#include "kernels/tile_legacy_neon.h"

/* This level's names (neon.h) for tile_legacy_neon.h's kernels: aliases, the code as it is. */

void el_tile_q4_1_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride)
    __attribute__((alias("tile_q4_1")));

void el_tile_q5_0_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride)
    __attribute__((alias("tile_q5_0")));

void el_tile_q5_1_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride)
    __attribute__((alias("tile_q5_1")));

#endif
