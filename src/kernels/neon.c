/* neon.c - the NEON level's table (el_level_neon, dispatch.h): the kernels of every aarch64 CPU
 * per entry and type (dot_neon.c, tile_neon.c, gemv_neon.c, attend_neon.c, and the
 * <kind>_{kquant,legacy,iq4}_neon.c of issue 17's types; declared in neon.h). Not built in on
 * other architectures. */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_NEON)

/* Advanced SIMD is baseline on aarch64. */
static bool neon_runs(void) { return true; }

/* The NEON kernels of every aarch64 CPU; the quantized ones (dot_neon.h, tile_neon.h,
 * gemv_neon.h, and the <kind>_<family>_neon.h of issue 17's types) over widening multiplies. */
const el_kernel_level el_level_neon = {
    .name = "neon",
    .supported = neon_runs,
    .kernels = {
        .isa = "neon",
        .vec_dot = {
            [EL_TYPE_Q8_0] = el_vec_dot_q8_0_neon,
            [EL_TYPE_Q4_0] = el_vec_dot_q4_0_neon,
            [EL_TYPE_Q4_K] = el_vec_dot_q4_k_neon,
            [EL_TYPE_Q6_K] = el_vec_dot_q6_k_neon,
            [EL_TYPE_W8] = el_vec_dot_w8_neon,
            [EL_TYPE_W8A16] = el_vec_dot_w8a16_neon,
            [EL_TYPE_W4] = el_vec_dot_w4_neon,
            [EL_TYPE_W4G32] = el_vec_dot_w4g32_neon,
            [EL_TYPE_W4G64] = el_vec_dot_w4g64_neon,
            [EL_TYPE_W4G128] = el_vec_dot_w4g128_neon,
            [EL_TYPE_F32] = el_vec_dot_f32_neon,
            [EL_TYPE_F16] = el_vec_dot_f16_neon,
            [EL_TYPE_BF16] = el_vec_dot_bf16_neon,
            [EL_TYPE_Q2_K] = el_vec_dot_q2_k_neon,
            [EL_TYPE_Q3_K] = el_vec_dot_q3_k_neon,
            [EL_TYPE_Q5_K] = el_vec_dot_q5_k_neon,
            [EL_TYPE_Q4_1] = el_vec_dot_q4_1_neon,
            [EL_TYPE_Q5_0] = el_vec_dot_q5_0_neon,
            [EL_TYPE_Q5_1] = el_vec_dot_q5_1_neon,
            [EL_TYPE_IQ4_NL] = el_vec_dot_iq4_nl_neon,
            [EL_TYPE_IQ4_XS] = el_vec_dot_iq4_xs_neon,
        },
        .tile = {
            [EL_TYPE_Q8_0] = el_tile_q8_0_neon,
            [EL_TYPE_Q4_0] = el_tile_q4_0_neon,
            [EL_TYPE_Q4_K] = el_tile_q4_k_neon,
            [EL_TYPE_Q6_K] = el_tile_q6_k_neon,
            [EL_TYPE_W8] = el_tile_w8_neon,
            [EL_TYPE_W8A16] = el_tile_w8a16_neon,
            [EL_TYPE_W4] = el_tile_w4_neon,
            [EL_TYPE_Q2_K] = el_tile_q2_k_neon,
            [EL_TYPE_Q3_K] = el_tile_q3_k_neon,
            [EL_TYPE_Q5_K] = el_tile_q5_k_neon,
            [EL_TYPE_Q4_1] = el_tile_q4_1_neon,
            [EL_TYPE_Q5_0] = el_tile_q5_0_neon,
            [EL_TYPE_Q5_1] = el_tile_q5_1_neon,
            [EL_TYPE_IQ4_NL] = el_tile_iq4_nl_neon,
            [EL_TYPE_IQ4_XS] = el_tile_iq4_xs_neon,
            [EL_TYPE_F32] = el_tile_f32_neon,
            [EL_TYPE_F16] = el_tile_f16_neon,
            [EL_TYPE_BF16] = el_tile_bf16_neon,
        },
        /* multi-row gemvs for the float types only (the rest row by row through the gemv) */
        .gemv = {
            [EL_TYPE_Q4_0] = el_gemv_q4_0_neon,
            [EL_TYPE_Q8_0] = el_gemv_q8_0_neon,
            [EL_TYPE_W4] = el_gemv_w4_neon,
            [EL_TYPE_W8] = el_gemv_w8_neon,
            [EL_TYPE_W4G32] = el_gemv_w4g32_neon,
            [EL_TYPE_W4G64] = el_gemv_w4g64_neon,
            [EL_TYPE_W4G128] = el_gemv_w4g128_neon,
            [EL_TYPE_W8A16] = el_gemv_w8a16_neon,
            [EL_TYPE_Q2_K] = el_gemv_q2_k_neon,
            [EL_TYPE_Q3_K] = el_gemv_q3_k_neon,
            [EL_TYPE_Q4_K] = el_gemv_q4_k_neon,
            [EL_TYPE_Q5_K] = el_gemv_q5_k_neon,
            [EL_TYPE_Q6_K] = el_gemv_q6_k_neon,
            [EL_TYPE_Q4_1] = el_gemv_q4_1_neon,
            [EL_TYPE_Q5_0] = el_gemv_q5_0_neon,
            [EL_TYPE_Q5_1] = el_gemv_q5_1_neon,
            [EL_TYPE_IQ4_NL] = el_gemv_iq4_nl_neon,
            [EL_TYPE_IQ4_XS] = el_gemv_iq4_xs_neon,
            [EL_TYPE_F32] = el_gemv_f32_neon,
            [EL_TYPE_F16] = el_gemv_f16_neon,
            [EL_TYPE_BF16] = el_gemv_bf16_neon,
        },
        .gemv_multi = {
            [EL_TYPE_F32] = el_gemv_f32_multi_neon,
            [EL_TYPE_F16] = el_gemv_f16_multi_neon,
            [EL_TYPE_BF16] = el_gemv_bf16_multi_neon,
        },
        .quantize = {
            [EL_TYPE_Q8_0] = el_quantize_q8_0_neon,
            [EL_TYPE_Q8_K] = el_quantize_q8_k_neon,
            [EL_TYPE_Q8_1] = el_quantize_q8_1_neon,
            [EL_TYPE_F16] = el_quantize_f16_neon,
            [EL_TYPE_A8] = el_quantize_a8_neon,
            [EL_TYPE_A16] = el_quantize_a16_neon,
        },
        .quantize_static = {
            [EL_TYPE_A8] = el_quantize_a8_static_neon,
            [EL_TYPE_Q8_0] = el_quantize_q8_0_static_neon,
            [EL_TYPE_Q8_1] = el_quantize_q8_1_static_neon,
            [EL_TYPE_Q8_K] = el_quantize_q8_k_static_neon,
        },
        .attend = el_attend_neon,
        .int8_probe = {el_int8_probe_neon, EL_PROBE_CHAINS * 16, 8, "smull"},
    },
};

#else

const el_kernel_level el_level_neon = {.name = "neon"}; /* not built in: not aarch64 */

#endif
