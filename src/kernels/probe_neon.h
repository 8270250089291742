/* probe_neon.h - the NEON levels' int8 peak probe (dispatch.h), compiled by probe_neon.c (two
 * widening multiplies and pairwise accumulates per 16 multiply-adds) and probe_neon_dotprod.c
 * (one SDOT): neon_simd.h's dot_s8, the very sequence the levels' quantized kernels use. */
#ifndef EL_KERNELS_PROBE_NEON_H
#define EL_KERNELS_PROBE_NEON_H

#include "kernels/neon_simd.h"

static uint32_t int8_probe(int64_t iters, int8_t one) {
    int8x16_t x = vdupq_n_s8(one);
    int32x4_t acc[EL_PROBE_CHAINS];
    for (int c = 0; c < EL_PROBE_CHAINS; c++) acc[c] = vdupq_n_s32(0);
    for (int64_t i = 0; i < iters; i++) {
        #pragma GCC unroll 12
        for (int c = 0; c < EL_PROBE_CHAINS; c++) {
            /* x as if new: without it the widening multiplies of the constant bytes (the
             * level without SDOT) are hoisted out of the loop, and the probe times additions */
            __asm__("" : "+w"(x));
            acc[c] = dot_s8(acc[c], x, x);
        }
    }
    uint32_t s = 0;
    for (int c = 0; c < EL_PROBE_CHAINS; c++) s += (uint32_t)vaddvq_s32(acc[c]);
    return s;
}

#endif
