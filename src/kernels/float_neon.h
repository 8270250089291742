/* float_neon.h - the one sequence of float operations by which every NEON kernel of the float
 * weight types (F32, F16, BF16: vec_dot, gemv, multi-row gemv, tile) computes an output, as
 * float_avx2.h does for AVX2 (see there why), on 4 lanes: one accumulator of 4 float lanes,
 * zero to start; for each 4 elements in order (the last ones padded with zeros)
 * acc = fma(w, a, acc); then vaddvq_f32. Included inside the NEON guard by dot_neon.c,
 * gemv_float_neon.c and tile_float_neon.c. */
#ifndef EL_KERNELS_FLOAT_NEON_H
#define EL_KERNELS_FLOAT_NEON_H

#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "kernels/float_kind.h"

/* The 4 weights from element i of row, as floats. */
static inline __attribute__((always_inline)) float32x4_t float_w4_neon(el_float_kind kind,
                                                                       const void *row,
                                                                       int64_t i) {
    if (kind == EL_FLOAT_F32) return vld1q_f32((const float *)row + i);
    uint16x4_t h = vld1_u16((const uint16_t *)row + i);
    if (kind == EL_FLOAT_F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); /* bf16 is the top half of a float */
}

/* The last t (< 4) weights from element i of row, then zeros. */
static inline __attribute__((always_inline)) float32x4_t float_w4_tail_neon(el_float_kind kind,
                                                                            const void *row,
                                                                            int64_t i,
                                                                            int64_t t) {
    uint32_t buf[4] = {0}; /* 4 floats or 4 halves, whichever the kind holds */
    size_t size = kind == EL_FLOAT_F32 ? 4 : 2;
    memcpy(buf, (const char *)row + (size_t)i * size, (size_t)t * size);
    return float_w4_neon(kind, buf, 0);
}

/* s[r][o] = the dot of weight row w[o] (o < O) with activation row a[r] (r < R), n elements
 * each, by the sequence above. Inlined with constant kind, O and R (O * R <= 16: with the
 * converted weights and a loaded activation, within the 32 registers). */
static inline __attribute__((always_inline)) void float_dots_neon(el_float_kind kind, int64_t n,
                                                                  const void *const w[], int O,
                                                                  const float *const a[], int R,
                                                                  float s[][4]) {
    float32x4_t acc[4][4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int o = 0; o < O; o++) acc[r][o] = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t wv[4];
        #pragma GCC unroll 4
        for (int o = 0; o < O; o++) wv[o] = float_w4_neon(kind, w[o], i);
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            float32x4_t av = vld1q_f32(a[r] + i);
            #pragma GCC unroll 4
            for (int o = 0; o < O; o++) acc[r][o] = vfmaq_f32(acc[r][o], wv[o], av);
        }
    }
    if (i < n) {
        float32x4_t wv[4];
        #pragma GCC unroll 4
        for (int o = 0; o < O; o++) wv[o] = float_w4_tail_neon(kind, w[o], i, n - i);
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            float buf[4] = {0};
            memcpy(buf, a[r] + i, (size_t)(n - i) * sizeof *buf);
            float32x4_t av = vld1q_f32(buf);
            #pragma GCC unroll 4
            for (int o = 0; o < O; o++) acc[r][o] = vfmaq_f32(acc[r][o], wv[o], av);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int o = 0; o < O; o++) s[r][o] = vaddvq_f32(acc[r][o]);
}

#endif
