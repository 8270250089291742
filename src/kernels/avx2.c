/* avx2.c - the AVX2 level's table (el_level_avx2, dispatch.h): every AVX2 kernel per entry and
 * type, and the CPU check. The kernels are in dot_avx2.c, tile_avx2.c, gemv_avx2.c,
 * gemm_avx2.c, attend_avx2.c and swiglu_avx2.c (declared in avx2.h); built with -mavx2 -mfma
 * -mf16c on x86 (see Makefile) and used only when the CPU has them. */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <cpuid.h>

/* cpuid: leaf 1 ecx has FMA (bit 12), OSXSAVE (27), AVX (28), F16C (29); leaf 7 ebx has AVX2
 * (bit 5); and the OS must save the YMM registers (xgetbv(0) bits 1 and 2). */
static bool cpu_has_avx2(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    const unsigned need = (1u << 12) | (1u << 27) | (1u << 28) | (1u << 29);
    if ((c & need) != need) return false;
    unsigned xcr0_lo, xcr0_hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & 6) != 6) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    return (b & (1u << 5)) != 0;
}

/* Every kernel of AVX2, FMA and F16C; types not named keep the reference's. */
const el_kernel_level el_level_avx2 = {
    .name = "avx2",
    .supported = cpu_has_avx2,
    .kernels = {
        .isa = "avx2",
        .vec_dot = {
            [EL_TYPE_Q5_K] = el_vec_dot_q5_k_avx2,
            [EL_TYPE_F32] = el_vec_dot_f32_avx2,
            [EL_TYPE_F16] = el_vec_dot_f16_avx2,
            [EL_TYPE_BF16] = el_vec_dot_bf16_avx2,
            [EL_TYPE_Q8_0] = el_vec_dot_q8_0_avx2,
            [EL_TYPE_Q4_0] = el_vec_dot_q4_0_avx2,
            [EL_TYPE_Q4_K] = el_vec_dot_q4_k_avx2,
            [EL_TYPE_Q6_K] = el_vec_dot_q6_k_avx2,
            [EL_TYPE_W8] = el_vec_dot_w8_avx2,
            [EL_TYPE_W8A16] = el_vec_dot_w8a16_avx2,
            [EL_TYPE_W4] = el_vec_dot_w4_avx2,
            [EL_TYPE_W4G32] = el_vec_dot_w4g32_avx2,
            [EL_TYPE_W4G64] = el_vec_dot_w4g64_avx2,
            [EL_TYPE_W4G128] = el_vec_dot_w4g128_avx2,
            [EL_TYPE_Q5_0] = el_vec_dot_q5_0_avx2,
            [EL_TYPE_IQ4_NL] = el_vec_dot_iq4_nl_avx2,
            [EL_TYPE_Q4_1] = el_vec_dot_q4_1_avx2,
            [EL_TYPE_Q5_1] = el_vec_dot_q5_1_avx2,
            [EL_TYPE_IQ4_XS] = el_vec_dot_iq4_xs_avx2,
            [EL_TYPE_Q2_K] = el_vec_dot_q2_k_avx2,
            [EL_TYPE_Q3_K] = el_vec_dot_q3_k_avx2,
        },
        .quantize = {
            [EL_TYPE_Q8_0] = el_quantize_q8_0_avx2,
            [EL_TYPE_Q8_K] = el_quantize_q8_k_avx2,
            [EL_TYPE_Q8_1] = el_quantize_q8_1_avx2,
            [EL_TYPE_F16] = el_quantize_f16_avx2,
            [EL_TYPE_A8] = el_quantize_a8_avx2,
            [EL_TYPE_A16] = el_quantize_a16_avx2,
        },
        .quantize_static = {
            [EL_TYPE_A8] = el_quantize_a8_static_avx2,
            [EL_TYPE_A16] = el_quantize_a16_static_avx2,
            [EL_TYPE_Q8_0] = el_quantize_q8_0_static_avx2,
            [EL_TYPE_Q8_1] = el_quantize_q8_1_static_avx2,
            [EL_TYPE_Q8_K] = el_quantize_q8_k_static_avx2,
        },
        .tile = {
            [EL_TYPE_Q8_0] = el_tile_q8_0_avx2,
            [EL_TYPE_Q4_0] = el_tile_q4_0_avx2,
            [EL_TYPE_Q4_K] = el_tile_q4_k_avx2,
            [EL_TYPE_Q5_K] = el_tile_q5_k_avx2,
            [EL_TYPE_Q6_K] = el_tile_q6_k_avx2,
            [EL_TYPE_W8] = el_tile_w8_avx2,
            [EL_TYPE_W8A16] = el_tile_w8a16_avx2,
            [EL_TYPE_W4] = el_tile_w4_avx2,
            [EL_TYPE_Q2_K] = el_tile_q2_k_avx2,
            [EL_TYPE_Q3_K] = el_tile_q3_k_avx2,
            [EL_TYPE_Q5_0] = el_tile_q5_0_avx2,
            [EL_TYPE_IQ4_NL] = el_tile_iq4_nl_avx2,
            [EL_TYPE_Q5_1] = el_tile_q5_1_avx2,
            [EL_TYPE_IQ4_XS] = el_tile_iq4_xs_avx2,
            [EL_TYPE_F32] = el_tile_f32_avx2,
            [EL_TYPE_F16] = el_tile_f16_avx2,
            [EL_TYPE_BF16] = el_tile_bf16_avx2,
        },
        .gemm = {
            [EL_TYPE_Q4_0] = el_gemm_avx2,
            [EL_TYPE_Q8_0] = el_gemm_avx2,
            [EL_TYPE_W4] = el_gemm_avx2,
            [EL_TYPE_W8] = el_gemm_avx2,
            [EL_TYPE_W4G32] = el_gemm_avx2,
            [EL_TYPE_W4G64] = el_gemm_avx2,
            [EL_TYPE_W4G128] = el_gemm_avx2,
            [EL_TYPE_Q5_0] = el_gemm_avx2,
            [EL_TYPE_IQ4_NL] = el_gemm_avx2,
            [EL_TYPE_Q4_K] = el_gemm_kquant_avx2,
            [EL_TYPE_Q5_K] = el_gemm_kquant_avx2,
            [EL_TYPE_IQ4_XS] = el_gemm_avx2,
            [EL_TYPE_Q6_K] = el_gemm_kquant_avx2,
        },
        /* Q4_K's and Q5_K's panels take their scales apart (and Q5_K's levels into bytes)
         * before the transposes: below these rows their tiles, whose rows have the gemv's
         * bits, are as fast or faster (docs/kernels.md) */
        .gemm_min_rows = {
            [EL_TYPE_Q4_K] = 10,
            [EL_TYPE_Q5_K] = 13,
        },
        .gemm_signed = false,
        /* the packed gemm transposes every panel into memory first: at 4-8 rows the weights'
         * second pass costs more than the products (docs/kernels.md) */
        .few_rows_by_multi = true,
        .attend = el_attend_avx2,
        .swiglu = el_swiglu_avx2,
        .geglu = el_geglu_avx2,
        .int8_probe = {el_int8_probe_avx2, EL_PROBE_CHAINS * 32, 32, "vpmaddubsw ymm"},
        .gemv = {
            [EL_TYPE_Q4_K] = el_gemv_q4_k_avx2,
            [EL_TYPE_Q5_K] = el_gemv_q5_k_avx2,
            [EL_TYPE_Q6_K] = el_gemv_q6_k_avx2,
            [EL_TYPE_Q8_0] = el_gemv_q8_0_avx2,
            [EL_TYPE_Q4_0] = el_gemv_q4_0_avx2,
            [EL_TYPE_W8] = el_gemv_w8_avx2,
            [EL_TYPE_W4] = el_gemv_w4_avx2,
            [EL_TYPE_W4G32] = el_gemv_w4g32_avx2,
            [EL_TYPE_W4G64] = el_gemv_w4g64_avx2,
            [EL_TYPE_W4G128] = el_gemv_w4g128_avx2,
            [EL_TYPE_W8A16] = el_gemv_w8a16_avx2,
            [EL_TYPE_Q5_0] = el_gemv_q5_0_avx2,
            [EL_TYPE_IQ4_NL] = el_gemv_iq4_nl_avx2,
            [EL_TYPE_Q4_1] = el_gemv_q4_1_avx2,
            [EL_TYPE_Q5_1] = el_gemv_q5_1_avx2,
            [EL_TYPE_IQ4_XS] = el_gemv_iq4_xs_avx2,
            [EL_TYPE_Q2_K] = el_gemv_q2_k_avx2,
            [EL_TYPE_Q3_K] = el_gemv_q3_k_avx2,
            [EL_TYPE_F32] = el_gemv_f32_avx2,
            [EL_TYPE_F16] = el_gemv_f16_avx2,
            [EL_TYPE_BF16] = el_gemv_bf16_avx2,
        },
        /* W4G64/128 and W8A16: none (row by row through their gemv) */
        .gemv_multi = {
            [EL_TYPE_Q5_0] = el_gemv_q5_0_multi_avx2,
            [EL_TYPE_IQ4_NL] = el_gemv_iq4_nl_multi_avx2,
            [EL_TYPE_Q4_1] = el_gemv_q4_1_multi_avx2,
            [EL_TYPE_Q5_1] = el_gemv_q5_1_multi_avx2,
            [EL_TYPE_IQ4_XS] = el_gemv_iq4_xs_multi_avx2,
            [EL_TYPE_Q4_K] = el_gemv_q4_k_multi_avx2,
            [EL_TYPE_Q5_K] = el_gemv_q5_k_multi_avx2,
            [EL_TYPE_Q6_K] = el_gemv_q6_k_multi_avx2,
            [EL_TYPE_Q8_0] = el_gemv_q8_0_multi_avx2,
            [EL_TYPE_Q4_0] = el_gemv_q4_0_multi_avx2,
            [EL_TYPE_W8] = el_gemv_w8_multi_avx2,
            [EL_TYPE_W4] = el_gemv_w4_multi_avx2,
            [EL_TYPE_W4G32] = el_gemv_w4g32_multi_avx2,
            [EL_TYPE_Q2_K] = el_gemv_q2_k_multi_avx2,
            [EL_TYPE_Q3_K] = el_gemv_q3_k_multi_avx2,
            [EL_TYPE_F32] = el_gemv_f32_multi_avx2,
            [EL_TYPE_F16] = el_gemv_f16_multi_avx2,
            [EL_TYPE_BF16] = el_gemv_bf16_multi_avx2,
        },
    },
};

#else

const el_kernel_level el_level_avx2 = {.name = "avx2"}; /* not built in */

#endif
