/* tile_neon_dotprod.c - tile_neon.h's 4x4 tiles over SDOT. */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

#include "kernels/tile_neon.h"

/* This level's names (neon.h) for tile_neon.h's kernels: aliases, the code as it is. */

void el_tile_q8_0_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride)
    __attribute__((alias("tile_q8_0")));

void el_tile_q4_0_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride)
    __attribute__((alias("tile_q4_0")));

void el_tile_q4_k_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride)
    __attribute__((alias("tile_q4_k")));

void el_tile_q6_k_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride)
    __attribute__((alias("tile_q6_k")));

void el_tile_w8_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                             const void *a, size_t a_stride)
    __attribute__((alias("tile_w8")));

void el_tile_w8a16_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                                const void *a, size_t a_stride)
    __attribute__((alias("tile_w8a16")));

void el_tile_w4_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                             const void *a, size_t a_stride)
    __attribute__((alias("tile_w4")));

#endif
