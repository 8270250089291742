/* tile_kquant_neon.h - the NEON 4x4 tiles of Q2_K, Q3_K and Q5_K against Q8_K (neon_k_simd.h's
 * tile_k: each weight block unpacked once for the four activation rows), built by both NEON
 * levels (tile_kquant_neon.c, tile_kquant_neon_dotprod.c). Included only from those two files,
 * inside their aarch64 guard. */
#ifndef EL_KERNELS_TILE_KQUANT_NEON_H
#define EL_KERNELS_TILE_KQUANT_NEON_H

#include "kernels/neon_k_simd.h"

static void tile_q2_k(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    tile_k(EL_TYPE_Q2_K, n, y, ldy, w, w_stride, a, a_stride);
}

static void tile_q3_k(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    tile_k(EL_TYPE_Q3_K, n, y, ldy, w, w_stride, a, a_stride);
}

static void tile_q5_k(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    tile_k(EL_TYPE_Q5_K, n, y, ldy, w, w_stride, a, a_stride);
}

#endif
