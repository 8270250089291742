/* tile_legacy_neon.h - the NEON 4x4 tiles of Q4_1, Q5_1 (against Q8_1) and Q5_0 (against
 * Q8_0), neon_b32_simd.h's tile_b32x, built by both NEON levels (tile_legacy_neon.c,
 * tile_legacy_neon_dotprod.c). Included only from those two files, inside their aarch64 guard. */
#ifndef EL_KERNELS_TILE_LEGACY_NEON_H
#define EL_KERNELS_TILE_LEGACY_NEON_H

#include "kernels/neon_b32_simd.h"

static void tile_q4_1(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    tile_b32x(EL_TYPE_Q4_1, n, y, ldy, w, w_stride, a, a_stride);
}

static void tile_q5_0(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    tile_b32x(EL_TYPE_Q5_0, n, y, ldy, w, w_stride, a, a_stride);
}

static void tile_q5_1(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    tile_b32x(EL_TYPE_Q5_1, n, y, ldy, w, w_stride, a, a_stride);
}

#endif
