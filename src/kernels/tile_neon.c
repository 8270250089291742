/* tile_neon.c - tile_neon.h's 4x4 tiles over widening multiplies (every aarch64 CPU). */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

#include "kernels/tile_neon.h"

/* This level's names (neon.h) for tile_neon.h's kernels: aliases, the code as it is. */

void el_tile_q8_0_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride)
    __attribute__((alias("tile_q8_0")));

void el_tile_q4_0_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride)
    __attribute__((alias("tile_q4_0")));

void el_tile_q4_k_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride)
    __attribute__((alias("tile_q4_k")));

void el_tile_q6_k_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride)
    __attribute__((alias("tile_q6_k")));

void el_tile_w8_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                     const void *a, size_t a_stride)
    __attribute__((alias("tile_w8")));

void el_tile_w8a16_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                        const void *a, size_t a_stride)
    __attribute__((alias("tile_w8a16")));

void el_tile_w4_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                     const void *a, size_t a_stride)
    __attribute__((alias("tile_w4")));

#endif
