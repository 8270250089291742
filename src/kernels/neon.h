/* neon.h - the NEON kernels that neon.c's and neon_dotprod.c's tables name, defined in the
 * files <kind>_neon.c (baseline Advanced SIMD) and <kind>_neon_dotprod.c (built with
 * -march=armv8.2-a+dotprod by the Makefile). */
#ifndef EL_KERNELS_NEON_H
#define EL_KERNELS_NEON_H

#include "kernels/dispatch.h"

/* dot_neon.c: dot products and activation quantizers */
void el_vec_dot_q8_0_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q4_0_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q4_k_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q6_k_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w8_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w8a16_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w4_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w4g32_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w4g64_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w4g128_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_f32_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_f16_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_bf16_neon(int64_t n, float *s, const void *x, const void *y);
void el_quantize_q8_0_neon(const float *x, void *y, int64_t n);
void el_quantize_q8_k_neon(const float *x, void *y, int64_t n);
void el_quantize_a8_neon(const float *x, void *y, int64_t n);
void el_quantize_a8_static_neon(const float *x, void *y, int64_t n, float d);
void el_quantize_q8_0_static_neon(const float *x, void *y, int64_t n, float d);
void el_quantize_q8_1_static_neon(const float *x, void *y, int64_t n, float d);
void el_quantize_q8_k_static_neon(const float *x, void *y, int64_t n, float d);
void el_quantize_a16_neon(const float *x, void *y, int64_t n);
void el_quantize_f16_neon(const float *x, void *y, int64_t n);

/* tile_neon.c: 4x4 tiles */
void el_tile_q8_0_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_tile_q4_0_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_tile_q4_k_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_tile_q6_k_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_tile_w8_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                     const void *a, size_t a_stride);
void el_tile_w8a16_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                        const void *a, size_t a_stride);
void el_tile_w4_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                     const void *a, size_t a_stride);

/* gemv_neon.c: gemvs */
void el_gemv_q4_0_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q8_0_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_w4_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                     const void *a);
void el_gemv_w8_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                     const void *a);
void el_gemv_w4g32_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                        const void *a);
void el_gemv_w4g64_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                        const void *a);
void el_gemv_w4g128_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a);
void el_gemv_w8a16_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                        const void *a);

/* dot_neon_dotprod.c: dot products */
void el_vec_dot_q8_0_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q4_0_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q4_k_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q6_k_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w8_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w8a16_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w4_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w4g32_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w4g64_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w4g128_neon_dotprod(int64_t n, float *s, const void *x, const void *y);

/* tile_neon_dotprod.c: 4x4 tiles */
void el_tile_q8_0_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride);
void el_tile_q4_0_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride);
void el_tile_q4_k_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride);
void el_tile_q6_k_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride);
void el_tile_w8_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                             const void *a, size_t a_stride);
void el_tile_w8a16_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                                const void *a, size_t a_stride);
void el_tile_w4_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                             const void *a, size_t a_stride);

/* gemv_neon_dotprod.c: gemvs */
void el_gemv_q4_0_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a);
void el_gemv_q8_0_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a);
void el_gemv_w4_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                             const void *a);
void el_gemv_w8_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                             const void *a);
void el_gemv_w4g32_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                                const void *a);
void el_gemv_w4g64_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                                const void *a);
void el_gemv_w4g128_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w,
                                 size_t w_stride, const void *a);
void el_gemv_w8a16_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                                const void *a);

/* dot_legacy_neon.c, gemv_legacy_neon.c, tile_legacy_neon.c: Q4_1, Q5_0, Q5_1 (and their
 * activations' quantizer, Q8_1) */
void el_vec_dot_q4_1_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q5_0_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q5_1_neon(int64_t n, float *s, const void *x, const void *y);
void el_gemv_q4_1_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q5_0_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q5_1_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_tile_q4_1_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_tile_q5_0_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_tile_q5_1_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_quantize_q8_1_neon(const float *x, void *y, int64_t n);

/* dot_iq4_neon.c, gemv_iq4_neon.c, tile_iq4_neon.c: IQ4_NL, IQ4_XS */
void el_vec_dot_iq4_nl_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_iq4_xs_neon(int64_t n, float *s, const void *x, const void *y);
void el_gemv_iq4_nl_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a);
void el_gemv_iq4_xs_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a);
void el_tile_iq4_nl_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                         const void *a, size_t a_stride);
void el_tile_iq4_xs_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                         const void *a, size_t a_stride);
/* dot_kquant_neon.c, gemv_kquant_neon.c, tile_kquant_neon.c: the K-quants */
void el_vec_dot_q2_k_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q3_k_neon(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q5_k_neon(int64_t n, float *s, const void *x, const void *y);
void el_gemv_q2_k_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q3_k_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q4_k_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q5_k_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q6_k_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_tile_q2_k_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_tile_q3_k_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_tile_q5_k_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);

/* dot_legacy_neon_dotprod.c, gemv_legacy_neon_dotprod.c, tile_legacy_neon_dotprod.c: Q4_1, Q5_0, Q5_1 */
void el_vec_dot_q4_1_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q5_0_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q5_1_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_gemv_q4_1_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a);
void el_gemv_q5_0_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a);
void el_gemv_q5_1_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a);
void el_tile_q4_1_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride);
void el_tile_q5_0_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride);
void el_tile_q5_1_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride);

/* dot_iq4_neon_dotprod.c, gemv_iq4_neon_dotprod.c, tile_iq4_neon_dotprod.c: IQ4_NL, IQ4_XS */
void el_vec_dot_iq4_nl_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_iq4_xs_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_gemv_iq4_nl_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                                 const void *a);
void el_gemv_iq4_xs_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                                 const void *a);
void el_tile_iq4_nl_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                                 const void *a, size_t a_stride);
void el_tile_iq4_xs_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                                 const void *a, size_t a_stride);
/* dot_kquant_neon_dotprod.c, gemv_kquant_neon_dotprod.c, tile_kquant_neon_dotprod.c: the K-quants */
void el_vec_dot_q2_k_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q3_k_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q5_k_neon_dotprod(int64_t n, float *s, const void *x, const void *y);
void el_gemv_q2_k_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a);
void el_gemv_q3_k_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a);
void el_gemv_q4_k_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a);
void el_gemv_q5_k_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a);
void el_gemv_q6_k_neon_dotprod(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                               const void *a);
void el_tile_q2_k_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride);
void el_tile_q3_k_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride);
void el_tile_q5_k_neon_dotprod(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                               const void *a, size_t a_stride);
/* attend_neon.c: baseline Advanced SIMD, so both NEON levels' */
void el_attend_neon(el_type kv_type, int group, int hd_k, int hd_v, int32_t nv, const float *q,
                    const void *const *k, const void *const *v, float *scores, size_t ld_scores,
                    float *out);
/* gemm_neon_dotprod.c: the packed products with SDOT; signed weights */
void el_gemm_neon_dotprod(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                          size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y,
                          int64_t ldy, void *panel);

/* probe_neon.c, probe_neon_dotprod.c: the int8 peak probes */
uint32_t el_int8_probe_neon(int64_t iters, int8_t one);
uint32_t el_int8_probe_neon_dotprod(int64_t iters, int8_t one);

/* gemv_float_neon.c, tile_float_neon.c: F32, F16 and BF16 gemvs, multi-row gemvs and tiles
 * (float_neon.h: the bits of their dot products above) */
void el_gemv_f32_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a);
void el_gemv_f16_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a);
void el_gemv_bf16_neon(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_f32_multi_neon(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                            const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_f16_multi_neon(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                            const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_bf16_multi_neon(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_tile_f32_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride);
void el_tile_f16_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride);
void el_tile_bf16_neon(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);

#endif
