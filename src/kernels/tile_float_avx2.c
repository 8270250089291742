/* tile_float_avx2.c - AVX2 4x4 tiles (prompt processing, few-row steps) of the float weight
 * types F32, F16 and BF16, every output by float_avx2.h's sequence: the bits its vec_dot and
 * gemv give it. */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include "kernels/float_avx2.h"

/* Two activation rows at a time against the four weight rows: 8 accumulators and 4 converted
 * weight vectors fit the 16 registers, 16 accumulators would not. */
static inline __attribute__((always_inline)) void tile_float(el_float_kind kind, int64_t n,
                                                             float *y, int64_t ldy,
                                                             const void *w, size_t w_stride,
                                                             const void *a, size_t a_stride) {
    const void *wr[EL_TILE];
    #pragma GCC unroll 4
    for (int o = 0; o < EL_TILE; o++) wr[o] = (const char *)w + o * w_stride;
    #pragma GCC unroll 2
    for (int r0 = 0; r0 < EL_TILE; r0 += 2) {
        const float *ar[2] = {(const float *)((const char *)a + r0 * a_stride),
                              (const float *)((const char *)a + (r0 + 1) * a_stride)};
        float s[2][4];
        float_dots_avx2(kind, n, wr, EL_TILE, ar, 2, s);
        #pragma GCC unroll 2
        for (int r = 0; r < 2; r++) memcpy(y + (r0 + r) * ldy, s[r], sizeof s[r]);
    }
}

void el_tile_f32_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    tile_float(EL_FLOAT_F32, n, y, ldy, w, w_stride, a, a_stride);
}

void el_tile_f16_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    tile_float(EL_FLOAT_F16, n, y, ldy, w, w_stride, a, a_stride);
}

void el_tile_bf16_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride) {
    tile_float(EL_FLOAT_BF16, n, y, ldy, w, w_stride, a, a_stride);
}

#endif
