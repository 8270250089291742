/* avx512.c - the AVX-512 VNNI level's table (el_level_avx512, dispatch.h), which builds on
 * AVX2's: its kernels per entry and type (the rest AVX2's), and the CPU check. The kernels are
 * in dot_avx512.c, tile_avx512.c, gemv_avx512.c, gemm_avx512.c and attend_avx512.c (declared
 * in avx512.h); built with -mavx512f -mavx512bw -mavx512vl -mavx512vnni and AVX2's flags on
 * x86 (see Makefile) and used only when the CPU and the OS support them. */
#include "kernels/avx2.h"
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include <cpuid.h>

/* cpuid leaf 7 ebx: AVX512F (bit 16), AVX512BW (30), AVX512VL (31); ecx: AVX512_VNNI (11).
 * The OS must save the opmask and ZMM state: xgetbv(0) bits 1, 2 and 5-7. */
static bool cpu_has_avx512_vnni(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || (c & (1u << 27)) == 0) return false; /* OSXSAVE */
    unsigned xcr0_lo, xcr0_hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & 0xE6) != 0xE6) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const unsigned need_b = (1u << 16) | (1u << 30) | (1u << 31);
    return (b & need_b) == need_b && (c & (1u << 11)) != 0;
}

/* AVX-512 VNNI's kernels, on AVX2's: types and entries not named keep AVX2's. */
const el_kernel_level el_level_avx512 = {
    .name = "avx512",
    .base = &el_level_avx2,
    .supported = cpu_has_avx512_vnni,
    .kernels = {
        .isa = "avx512vnni",
        .vec_dot = {
            [EL_TYPE_Q5_K] = el_vec_dot_q5_k_avx512,
            [EL_TYPE_Q8_0] = el_vec_dot_q8_0_avx512,
            [EL_TYPE_Q4_0] = el_vec_dot_q4_0_avx512,
            [EL_TYPE_W8A16] = el_vec_dot_w8a16_avx512,
            [EL_TYPE_Q5_0] = el_vec_dot_q5_0_avx512,
            [EL_TYPE_IQ4_NL] = el_vec_dot_iq4_nl_avx512,
            [EL_TYPE_Q4_1] = el_vec_dot_q4_1_avx512,
            [EL_TYPE_Q5_1] = el_vec_dot_q5_1_avx512,
            [EL_TYPE_IQ4_XS] = el_vec_dot_iq4_xs_avx512,
            [EL_TYPE_Q2_K] = el_vec_dot_q2_k_avx512,
            [EL_TYPE_Q3_K] = el_vec_dot_q3_k_avx512,
            [EL_TYPE_F16] = el_vec_dot_f16_avx512,
            [EL_TYPE_BF16] = el_vec_dot_bf16_avx512,
        },
        .tile = {
            [EL_TYPE_Q8_0] = el_tile_q8_0_avx512,
            [EL_TYPE_Q4_0] = el_tile_q4_0_avx512,
            [EL_TYPE_W8A16] = el_tile_w8a16_avx512,
            [EL_TYPE_F16] = el_tile_f16_avx512,
            [EL_TYPE_BF16] = el_tile_bf16_avx512,
        },
        .gemm = {
            [EL_TYPE_Q4_K] = el_gemm_kquant_avx512,
            [EL_TYPE_Q5_K] = el_gemm_kquant_avx512,
            [EL_TYPE_Q6_K] = el_gemm_kquant_avx512,
            [EL_TYPE_Q4_0] = el_gemm_avx512,
            [EL_TYPE_Q8_0] = el_gemm_avx512,
            [EL_TYPE_W4] = el_gemm_avx512,
            [EL_TYPE_W8] = el_gemm_avx512,
            [EL_TYPE_W4G32] = el_gemm_avx512,
            [EL_TYPE_W4G64] = el_gemm_avx512,
            [EL_TYPE_W4G128] = el_gemm_avx512,
            [EL_TYPE_Q5_0] = el_gemm_avx512,
            [EL_TYPE_Q4_1] = el_gemm_avx512,
            [EL_TYPE_Q5_1] = el_gemm_avx512,
            [EL_TYPE_IQ4_NL] = el_gemm_avx512,
            [EL_TYPE_IQ4_XS] = el_gemm_avx512,
            [EL_TYPE_Q2_K] = el_gemm_q2_k_avx512,
            [EL_TYPE_Q3_K] = el_gemm_q3_k_avx512,
        },
        .gemm_signed = false,
        .attend = el_attend_avx512,
        .int8_probe = {el_int8_probe_avx512, EL_PROBE_CHAINS * 64, 64, "vpdpbusd zmm"},
        .gemv = {
            [EL_TYPE_Q4_K] = el_gemv_q4_k_avx512,
            [EL_TYPE_Q5_K] = el_gemv_q5_k_avx512,
            [EL_TYPE_Q6_K] = el_gemv_q6_k_avx512,
            [EL_TYPE_Q8_0] = el_gemv_q8_0_avx512,
            [EL_TYPE_Q4_0] = el_gemv_q4_0_avx512,
            [EL_TYPE_W4G32] = el_gemv_w4g32_avx512,
            [EL_TYPE_W4G64] = el_gemv_w4g64_avx512,
            [EL_TYPE_W4G128] = el_gemv_w4g128_avx512,
            [EL_TYPE_W8] = el_gemv_w8_avx512,
            [EL_TYPE_W4] = el_gemv_w4_avx512,
            [EL_TYPE_W8A16] = el_gemv_w8a16_avx512,
            [EL_TYPE_Q5_0] = el_gemv_q5_0_avx512,
            [EL_TYPE_IQ4_NL] = el_gemv_iq4_nl_avx512,
            [EL_TYPE_Q4_1] = el_gemv_q4_1_avx512,
            [EL_TYPE_Q5_1] = el_gemv_q5_1_avx512,
            [EL_TYPE_IQ4_XS] = el_gemv_iq4_xs_avx512,
            [EL_TYPE_Q2_K] = el_gemv_q2_k_avx512,
            [EL_TYPE_Q3_K] = el_gemv_q3_k_avx512,
            [EL_TYPE_F16] = el_gemv_f16_avx512,
            [EL_TYPE_BF16] = el_gemv_bf16_avx512,
        },
        /* F32: none of this level's (all four kernels are AVX2's, whose bits agree): its 16-lane
         * gemv read rows at half AVX2's speed (docs/kernels.md, "Float weights").
         * W8: AVX2's, whose integer sums and final scaling give this gemv's bits and which
         * is faster here than this gemv row by row; W4: none, AVX2's being slower here than
         * this gemv row by row (docs/kernels.md); W8A16: none. */
        .gemv_multi = {
            [EL_TYPE_Q5_0] = el_gemv_q5_0_multi_avx512,
            [EL_TYPE_IQ4_NL] = el_gemv_iq4_nl_multi_avx512,
            [EL_TYPE_Q4_1] = el_gemv_q4_1_multi_avx512,
            [EL_TYPE_Q5_1] = el_gemv_q5_1_multi_avx512,
            [EL_TYPE_IQ4_XS] = el_gemv_iq4_xs_multi_avx512,
            [EL_TYPE_Q4_K] = el_gemv_q4_k_multi_avx512,
            [EL_TYPE_Q5_K] = el_gemv_q5_k_multi_avx512,
            [EL_TYPE_Q6_K] = el_gemv_q6_k_multi_avx512,
            [EL_TYPE_Q8_0] = el_gemv_q8_0_multi_avx512,
            [EL_TYPE_Q4_0] = el_gemv_q4_0_multi_avx512,
            [EL_TYPE_W4G32] = el_gemv_w4g32_multi_avx512,
            [EL_TYPE_W4G64] = el_gemv_w4g64_multi_avx512,
            [EL_TYPE_W4G128] = el_gemv_w4g128_multi_avx512,
            [EL_TYPE_W8] = el_gemv_w8_multi_avx2,
            [EL_TYPE_Q2_K] = el_gemv_q2_k_multi_avx512,
            [EL_TYPE_Q3_K] = el_gemv_q3_k_multi_avx512,
            [EL_TYPE_F16] = el_gemv_f16_multi_avx512,
            [EL_TYPE_BF16] = el_gemv_bf16_multi_avx512,
        },
        /* W4, W8: the gemm's register path, which sums a row as their gemvs do; Q4_0: none (a
         * form with the gemv's bits measured slower in the model, and a prompt in chunks must
         * give the bits of one pass, which takes the panel path: docs/kernels.md) */
        .gemv_few = {
            [EL_TYPE_W4] = el_gemv_few_w4_avx512,
            [EL_TYPE_W8] = el_gemv_few_w8_avx512,
        },
    },
};

#else

const el_kernel_level el_level_avx512 = {.name = "avx512"}; /* not built in */

#endif
