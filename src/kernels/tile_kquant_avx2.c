/* tile_kquant_avx2.c - AVX2 4x4 tiles (prompt processing) of Q4_K, Q5_K and Q6_K against Q8_K:
 * the rows of gemv_kquant_avx2.h with four activation rows, so each chunk of a weight row is
 * unpacked once for the four. */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include "kernels/gemv_kquant_avx2.h"

static inline __attribute__((always_inline)) void tile_kquant(el_type type, int64_t n, float *y,
                                                              int64_t ldy, const void *w,
                                                              size_t w_stride, const void *a,
                                                              size_t a_stride) {
    const el_block_q8_k *b[KQ_MAX_ACTS];
    for (int r = 0; r < EL_TILE; r++) b[r] = (const void *)((const char *)a + r * a_stride);
    float t[KQ_MAX_ACTS][4];
    for (int o = 0; o < EL_TILE; o++) {
        const char *const row[1] = {(const char *)w + o * w_stride};
        kq_rows(type, n / EL_QK_K, row, 1, b, EL_TILE, t);
        for (int r = 0; r < EL_TILE; r++) y[r * ldy + o] = t[r][0];
    }
}

void el_tile_q4_k_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride) {
    tile_kquant(EL_TYPE_Q4_K, n, y, ldy, w, w_stride, a, a_stride);
}

void el_tile_q5_k_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride) {
    tile_kquant(EL_TYPE_Q5_K, n, y, ldy, w, w_stride, a, a_stride);
}

void el_tile_q6_k_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride) {
    tile_kquant(EL_TYPE_Q6_K, n, y, ldy, w, w_stride, a, a_stride);
}

#endif
