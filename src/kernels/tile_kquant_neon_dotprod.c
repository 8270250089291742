/* tile_kquant_neon_dotprod.c - tile_kquant_neon.h's 4x4 tiles over SDOT. */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

#include "kernels/tile_kquant_neon.h"

/* This level's names (neon.h) for tile_kquant_neon.h's kernels: aliases, the code as it is. */

void el_tile_q2_k_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride)
    __attribute__((alias("tile_q2_k")));

void el_tile_q3_k_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride)
    __attribute__((alias("tile_q3_k")));

void el_tile_q5_k_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride)
    __attribute__((alias("tile_q5_k")));

#endif
