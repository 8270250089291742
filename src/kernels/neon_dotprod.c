/* neon_dotprod.c - the quantized kernels of neon_q.h over SDOT (4 byte products summed into each
 * 32-bit lane in one instruction). Built with -march=armv8.2-a+dotprod on aarch64 (see Makefile)
 * and used only if the kernel reports the dot product extension (HWCAP_ASIMDDP). */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

#include <arm_neon.h>
#include <sys/auxv.h>

static inline int32x4_t dot_s8(int32x4_t acc, int8x16_t a, int8x16_t b) {
    return vdotq_s32(acc, a, b);
}

#include "kernels/neon_q.h"
#include "kernels/neon_gemv.h"

#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20) /* from the Linux arm64 uapi, for older headers */
#endif

static bool cpu_has_dotprod(void) { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }

/* On NEON's: the quantized kernels (neon_q.h, neon_gemv.h) over SDOT, and the packed products;
 * the float dot products, quantizers and attention stay NEON's. */
const el_kernel_level el_level_neon_dotprod = {
    .name = "neon-dotprod",
    .base = &el_level_neon,
    .supported = cpu_has_dotprod,
    .kernels = {
        .isa = "neon-dotprod",
        .vec_dot = {[EL_TYPE_Q8_0] = vec_dot_q8_0, [EL_TYPE_Q4_0] = vec_dot_q4_0,
                    [EL_TYPE_Q4_K] = vec_dot_q4_k, [EL_TYPE_Q6_K] = vec_dot_q6_k,
                    [EL_TYPE_W8] = vec_dot_w8, [EL_TYPE_W8A16] = vec_dot_w8a16,
                    [EL_TYPE_W4] = vec_dot_w4, [EL_TYPE_W4G32] = vec_dot_w4g32,
                    [EL_TYPE_W4G64] = vec_dot_w4g64, [EL_TYPE_W4G128] = vec_dot_w4g128},
        .tile = {[EL_TYPE_Q8_0] = tile_q8_0, [EL_TYPE_Q4_0] = tile_q4_0,
                 [EL_TYPE_Q4_K] = tile_q4_k, [EL_TYPE_Q6_K] = tile_q6_k, [EL_TYPE_W8] = tile_w8,
                 [EL_TYPE_W8A16] = tile_w8a16, [EL_TYPE_W4] = tile_w4},
        /* no multi-row gemvs (row by row through the gemv) */
        .gemv = {[EL_TYPE_Q4_0] = gemv_q4_0, [EL_TYPE_Q8_0] = gemv_q8_0, [EL_TYPE_W4] = gemv_w4,
                 [EL_TYPE_W8] = gemv_w8, [EL_TYPE_W4G32] = gemv_w4g32,
                 [EL_TYPE_W4G64] = gemv_w4g64, [EL_TYPE_W4G128] = gemv_w4g128,
                 [EL_TYPE_W8A16] = gemv_w8a16},
        .gemm = {[EL_TYPE_Q4_0] = el_gemm_neon_dotprod, [EL_TYPE_Q8_0] = el_gemm_neon_dotprod,
                 [EL_TYPE_W4] = el_gemm_neon_dotprod, [EL_TYPE_W8] = el_gemm_neon_dotprod,
                 [EL_TYPE_W4G32] = el_gemm_neon_dotprod, [EL_TYPE_W4G64] = el_gemm_neon_dotprod,
                 [EL_TYPE_W4G128] = el_gemm_neon_dotprod},
        .gemm_signed = true,
    },
};

#else

/* not built in: not aarch64, or built without the dot product extension */
const el_kernel_level el_level_neon_dotprod = {.name = "neon-dotprod"};

#endif
