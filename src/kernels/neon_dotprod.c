/* neon_dotprod.c - the NEON dot product level's table (el_level_neon_dotprod, dispatch.h), on
 * NEON's: the quantized kernels over SDOT (dot_neon_dotprod.c, tile_neon_dotprod.c,
 * gemv_neon_dotprod.c, the <kind>_{kquant,legacy,iq4}_neon_dotprod.c of issue 17's types) and
 * the packed products (gemm_neon_dotprod.c), per entry and type; and
 * the CPU check. Built with -march=armv8.2-a+dotprod on aarch64 (see Makefile) and used only
 * if the kernel reports the dot product extension (HWCAP_ASIMDDP). */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

#include <sys/auxv.h>

#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20) /* from the Linux arm64 uapi, for older headers */
#endif

static bool cpu_has_dotprod(void) { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }

/* On NEON's: the quantized kernels (dot_neon.h, tile_neon.h, gemv_neon.h and the
 * <kind>_<family>_neon.h of issue 17's types) over SDOT, and the packed products; the float dot
 * products, quantizers and attention stay NEON's. */
const el_kernel_level el_level_neon_dotprod = {
    .name = "neon-dotprod",
    .base = &el_level_neon,
    .supported = cpu_has_dotprod,
    .kernels = {
        .isa = "neon-dotprod",
        .vec_dot = {
            [EL_TYPE_Q8_0] = el_vec_dot_q8_0_neon_dotprod,
            [EL_TYPE_Q4_0] = el_vec_dot_q4_0_neon_dotprod,
            [EL_TYPE_Q4_K] = el_vec_dot_q4_k_neon_dotprod,
            [EL_TYPE_Q6_K] = el_vec_dot_q6_k_neon_dotprod,
            [EL_TYPE_W8] = el_vec_dot_w8_neon_dotprod,
            [EL_TYPE_W8A16] = el_vec_dot_w8a16_neon_dotprod,
            [EL_TYPE_W4] = el_vec_dot_w4_neon_dotprod,
            [EL_TYPE_W4G32] = el_vec_dot_w4g32_neon_dotprod,
            [EL_TYPE_W4G64] = el_vec_dot_w4g64_neon_dotprod,
            [EL_TYPE_W4G128] = el_vec_dot_w4g128_neon_dotprod,
            [EL_TYPE_Q2_K] = el_vec_dot_q2_k_neon_dotprod,
            [EL_TYPE_Q3_K] = el_vec_dot_q3_k_neon_dotprod,
            [EL_TYPE_Q5_K] = el_vec_dot_q5_k_neon_dotprod,
            [EL_TYPE_Q4_1] = el_vec_dot_q4_1_neon_dotprod,
            [EL_TYPE_Q5_0] = el_vec_dot_q5_0_neon_dotprod,
            [EL_TYPE_Q5_1] = el_vec_dot_q5_1_neon_dotprod,
            [EL_TYPE_IQ4_NL] = el_vec_dot_iq4_nl_neon_dotprod,
            [EL_TYPE_IQ4_XS] = el_vec_dot_iq4_xs_neon_dotprod,
        },
        .tile = {
            [EL_TYPE_Q8_0] = el_tile_q8_0_neon_dotprod,
            [EL_TYPE_Q4_0] = el_tile_q4_0_neon_dotprod,
            [EL_TYPE_Q4_K] = el_tile_q4_k_neon_dotprod,
            [EL_TYPE_Q6_K] = el_tile_q6_k_neon_dotprod,
            [EL_TYPE_W8] = el_tile_w8_neon_dotprod,
            [EL_TYPE_W8A16] = el_tile_w8a16_neon_dotprod,
            [EL_TYPE_W4] = el_tile_w4_neon_dotprod,
            [EL_TYPE_Q2_K] = el_tile_q2_k_neon_dotprod,
            [EL_TYPE_Q3_K] = el_tile_q3_k_neon_dotprod,
            [EL_TYPE_Q5_K] = el_tile_q5_k_neon_dotprod,
            [EL_TYPE_Q4_1] = el_tile_q4_1_neon_dotprod,
            [EL_TYPE_Q5_0] = el_tile_q5_0_neon_dotprod,
            [EL_TYPE_Q5_1] = el_tile_q5_1_neon_dotprod,
            [EL_TYPE_IQ4_NL] = el_tile_iq4_nl_neon_dotprod,
            [EL_TYPE_IQ4_XS] = el_tile_iq4_xs_neon_dotprod,
        },
        /* no multi-row gemvs (row by row through the gemv) */
        .gemv = {
            [EL_TYPE_Q4_0] = el_gemv_q4_0_neon_dotprod,
            [EL_TYPE_Q8_0] = el_gemv_q8_0_neon_dotprod,
            [EL_TYPE_W4] = el_gemv_w4_neon_dotprod,
            [EL_TYPE_W8] = el_gemv_w8_neon_dotprod,
            [EL_TYPE_W4G32] = el_gemv_w4g32_neon_dotprod,
            [EL_TYPE_W4G64] = el_gemv_w4g64_neon_dotprod,
            [EL_TYPE_W4G128] = el_gemv_w4g128_neon_dotprod,
            [EL_TYPE_W8A16] = el_gemv_w8a16_neon_dotprod,
            [EL_TYPE_Q2_K] = el_gemv_q2_k_neon_dotprod,
            [EL_TYPE_Q3_K] = el_gemv_q3_k_neon_dotprod,
            [EL_TYPE_Q4_K] = el_gemv_q4_k_neon_dotprod,
            [EL_TYPE_Q5_K] = el_gemv_q5_k_neon_dotprod,
            [EL_TYPE_Q6_K] = el_gemv_q6_k_neon_dotprod,
            [EL_TYPE_Q4_1] = el_gemv_q4_1_neon_dotprod,
            [EL_TYPE_Q5_0] = el_gemv_q5_0_neon_dotprod,
            [EL_TYPE_Q5_1] = el_gemv_q5_1_neon_dotprod,
            [EL_TYPE_IQ4_NL] = el_gemv_iq4_nl_neon_dotprod,
            [EL_TYPE_IQ4_XS] = el_gemv_iq4_xs_neon_dotprod,
        },
        .gemm = {
            [EL_TYPE_Q4_0] = el_gemm_neon_dotprod,
            [EL_TYPE_Q8_0] = el_gemm_neon_dotprod,
            [EL_TYPE_W4] = el_gemm_neon_dotprod,
            [EL_TYPE_W8] = el_gemm_neon_dotprod,
            [EL_TYPE_W4G32] = el_gemm_neon_dotprod,
            [EL_TYPE_W4G64] = el_gemm_neon_dotprod,
            [EL_TYPE_W4G128] = el_gemm_neon_dotprod,
        },
        .gemm_signed = true,
        .int8_probe = {el_int8_probe_neon_dotprod, EL_PROBE_CHAINS * 16, 16, "sdot"},
    },
};

#else

/* not built in: not aarch64, or built without the dot product extension */
const el_kernel_level el_level_neon_dotprod = {.name = "neon-dotprod"};

#endif
