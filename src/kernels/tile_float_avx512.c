/* tile_float_avx512.c - AVX-512 4x4 tiles (prompt processing, few-row steps) of F16 and BF16
 * weights (F32 keeps AVX2's: avx512.c), every output by float_avx512.h's sequence: the bits
 * its vec_dot and gemv give it. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include <string.h>

#include "kernels/float_avx512.h"

/* All four activation rows at once: 16 accumulators and 4 converted weight vectors fit the
 * 32 registers, so each weight vector is converted once for the tile. */
static inline __attribute__((always_inline)) void tile_float(el_float_kind kind, int64_t n,
                                                             float *y, int64_t ldy,
                                                             const void *w, size_t w_stride,
                                                             const void *a, size_t a_stride) {
    const void *wr[EL_TILE];
    const float *ar[EL_TILE];
    #pragma GCC unroll 4
    for (int o = 0; o < EL_TILE; o++) {
        wr[o] = (const char *)w + o * w_stride;
        ar[o] = (const float *)((const char *)a + o * a_stride);
    }
    float s[EL_TILE][4];
    float_dots_avx512(kind, n, wr, EL_TILE, ar, EL_TILE, s);
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) memcpy(y + r * ldy, s[r], sizeof s[r]);
}

void el_tile_f16_avx512(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    tile_float(EL_FLOAT_F16, n, y, ldy, w, w_stride, a, a_stride);
}

void el_tile_bf16_avx512(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride) {
    tile_float(EL_FLOAT_BF16, n, y, ldy, w, w_stride, a, a_stride);
}

#endif
