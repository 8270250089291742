/* avx2.h - the AVX2 kernels that avx2.c's table names (and avx512.c's, which builds on it),
 * defined in the files <kind>_avx2.c, which the Makefile builds with -mavx2 -mfma -mf16c. */
#ifndef EL_KERNELS_AVX2_H
#define EL_KERNELS_AVX2_H

#include "kernels/dispatch.h"

/* dot_avx2.c: dot products and activation quantizers */
void el_vec_dot_f32_avx2(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_f16_avx2(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_bf16_avx2(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q8_0_avx2(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q4_0_avx2(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q4_k_avx2(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q6_k_avx2(int64_t n, float *s, const void *x, const void *y);
void el_quantize_q8_0_avx2(const float *x, void *y, int64_t n);
void el_quantize_f16_avx2(const float *x, void *y, int64_t n);
void el_quantize_q8_k_avx2(const float *x, void *y, int64_t n);
void el_vec_dot_w8_avx2(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w4_avx2(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w4g32_avx2(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w4g64_avx2(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w4g128_avx2(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w8a16_avx2(int64_t n, float *s, const void *x, const void *y);
void el_quantize_a8_avx2(const float *x, void *y, int64_t n);
void el_quantize_a8_static_avx2(const float *x, void *y, int64_t n, float d);
void el_quantize_a16_static_avx2(const float *x, void *y, int64_t n, float d);
void el_quantize_q8_0_static_avx2(const float *x, void *y, int64_t n, float d);
void el_quantize_q8_1_static_avx2(const float *x, void *y, int64_t n, float d);
void el_quantize_q8_k_static_avx2(const float *x, void *y, int64_t n, float d);
void el_quantize_a16_avx2(const float *x, void *y, int64_t n);

/* tile_avx2.c: 4x4 tiles (Q4_K and Q6_K: tile_kquant_avx2.c) */
void el_tile_q8_0_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_tile_q4_0_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_tile_q4_k_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_tile_q6_k_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_tile_w8a16_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                        const void *a, size_t a_stride);
void el_tile_w8_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                     const void *a, size_t a_stride);
void el_tile_w4_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                     const void *a, size_t a_stride);

/* gemv_avx2.c: gemvs and multi-row gemvs */
void el_gemv_q4_0_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q4_0_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_q8_0_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q8_0_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_w4_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                           const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_w8_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                           const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_w4_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                     const void *a);
void el_gemv_w8_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                     const void *a);
void el_gemv_w4g32_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                        const void *a);
void el_gemv_w4g32_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                              const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_w8a16_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                        const void *a);
void el_gemv_w4g64_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                        const void *a);
void el_gemv_w4g128_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a);

/* dot_legacy_avx2.c, gemv_legacy_avx2.c (gemv_legacy_x86.h): Q5_0, IQ4_NL, Q4_1, Q5_1 and
 * IQ4_XS, and Q8_1's quantizer */
void el_quantize_q8_1_avx2(const float *x, void *y, int64_t n);
void el_vec_dot_q5_0_avx2(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_iq4_nl_avx2(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q4_1_avx2(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q5_1_avx2(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_iq4_xs_avx2(int64_t n, float *s, const void *x, const void *y);
void el_gemv_q5_0_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_iq4_nl_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a);
void el_gemv_q4_1_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q5_1_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_iq4_xs_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a);
/* tile_legacy_avx2.c: their 4x4 tiles */
void el_tile_q5_0_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_tile_iq4_nl_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                         const void *a, size_t a_stride);
void el_tile_q5_1_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_tile_iq4_xs_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                         const void *a, size_t a_stride);
void el_gemv_q5_0_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_iq4_nl_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_q4_1_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_q5_1_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_iq4_xs_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride);


/* gemm_avx2.c: the packed products, unsigned weights (the aux offsets wanted) */
void el_gemm_avx2(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                  size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y, int64_t ldy,
                  void *panel);
/* gemm_kquant_avx2.c: Q4_K's, Q5_K's and Q6_K's packed products against Q8_K rows */
void el_gemm_kquant_avx2(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                         size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y,
                         int64_t ldy, void *panel);
/* attend_avx2.c, swiglu_avx2.c */
void el_attend_avx2(el_type kv_type, int group, int hd_k, int hd_v, int32_t nv, const float *q,
                    const void *const *k, const void *const *v, float *scores, size_t ld_scores,
                    float *out);
void el_swiglu_avx2(float *gate, const float *up, size_t n);
void el_geglu_avx2(float *gate, const float *up, size_t n);

/* probe_avx2.c: the int8 peak probe */
uint32_t el_int8_probe_avx2(int64_t iters, int8_t one);

/* dot_q23k_avx2.c, gemv_q23k_avx2.c, tile_q23k_avx2.c: Q2_K and Q3_K against Q8_K */
void el_vec_dot_q2_k_avx2(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q3_k_avx2(int64_t n, float *s, const void *x, const void *y);
void el_gemv_q2_k_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q3_k_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q2_k_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_q3_k_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);

void el_tile_q2_k_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_tile_q3_k_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);

/* dot_kquant_avx2.c, gemv_kquant_avx2.c: Q5_K's dot product; Q4_K's, Q5_K's and Q6_K's gemvs
 * and multi-row gemvs */
void el_vec_dot_q5_k_avx2(int64_t n, float *s, const void *x, const void *y);
/* tile_kquant_avx2.c: 4x4 tiles of Q4_K, Q5_K and Q6_K (their declarations below) */
void el_tile_q5_k_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);
void el_gemv_q4_k_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q4_k_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_q5_k_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q5_k_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_q6_k_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q6_k_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);

/* gemv_float_avx2.c, tile_float_avx2.c: F32, F16 and BF16 gemvs, multi-row gemvs and tiles
 * (float_avx2.h: the bits of their dot products above) */
void el_gemv_f32_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a);
void el_gemv_f16_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a);
void el_gemv_bf16_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_f32_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                            const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_f16_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                            const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_bf16_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_tile_f32_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride);
void el_tile_f16_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride);
void el_tile_bf16_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride);

/* lora_avx2.c: a LoRA term's float B (el_lora_packed) and int8 B under a profile
 * (el_lora_packed_i8) */
void el_lora_packed_avx2(el_type type, int64_t rank, int64_t n_blocks, const float *t,
                         const void *p, float *y);
void el_lora_packed_i8_avx2(int64_t rank, int64_t n_out, const int8_t *t, const int8_t *p,
                            float c, float *y);

#endif
