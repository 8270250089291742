/* tile_iq4_neon.h - the NEON 4x4 tiles of IQ4_NL (neon_b32_simd.h's tile_b32x) and IQ4_XS
 * (neon_k_simd.h's tile_k), each weight block turned into levels once for the four activation
 * rows; built by both NEON levels (tile_iq4_neon.c, tile_iq4_neon_dotprod.c). Included only
 * from those two files, inside their aarch64 guard. */
#ifndef EL_KERNELS_TILE_IQ4_NEON_H
#define EL_KERNELS_TILE_IQ4_NEON_H

#include "kernels/neon_b32_simd.h"
#include "kernels/neon_k_simd.h"

static void tile_iq4_nl(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                        const void *a, size_t a_stride) {
    tile_b32x(EL_TYPE_IQ4_NL, n, y, ldy, w, w_stride, a, a_stride);
}

static void tile_iq4_xs(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                        const void *a, size_t a_stride) {
    tile_k(EL_TYPE_IQ4_XS, n, y, ldy, w, w_stride, a, a_stride);
}

#endif
