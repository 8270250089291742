/* avx512.h - the AVX-512 VNNI kernels that avx512.c's table names, defined in the files
 * <kind>_avx512.c, which the Makefile builds with AVX2's flags and -mavx512f -mavx512bw
 * -mavx512vl -mavx512vnni. */
#ifndef EL_KERNELS_AVX512_H
#define EL_KERNELS_AVX512_H

#include "kernels/dispatch.h"

/* dot_avx512.c: dot products */
void el_vec_dot_q8_0_avx512(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q4_0_avx512(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w8a16_avx512(int64_t n, float *s, const void *x, const void *y);

/* tile_avx512.c: 4x4 tiles */
void el_tile_q8_0_avx512(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                         const void *a, size_t a_stride);
void el_tile_q4_0_avx512(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                         const void *a, size_t a_stride);
void el_tile_w8a16_avx512(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                          const void *a, size_t a_stride);

/* gemv_avx512.c: gemvs and multi-row gemvs */
void el_gemv_q4_0_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a);
void el_gemv_w4g32_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                          const void *a);
void el_gemv_q4_0_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_w4g32_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_q8_0_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a);
void el_gemv_q8_0_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_w4_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_w8_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_w8a16_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                          const void *a);
void el_gemv_w4g64_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                          const void *a);
void el_gemv_w4g128_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                           const void *a);
void el_gemv_w4g64_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_w4g128_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                 const void *w, size_t w_stride, const void *a, size_t a_stride);

/* dot_legacy_avx512.c, gemv_legacy_avx512.c (gemv_legacy_x86.h): Q5_0, IQ4_NL, Q4_1, Q5_1 and
 * IQ4_XS */
void el_vec_dot_q5_0_avx512(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_iq4_nl_avx512(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q4_1_avx512(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q5_1_avx512(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_iq4_xs_avx512(int64_t n, float *s, const void *x, const void *y);
void el_gemv_q5_0_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a);
void el_gemv_iq4_nl_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                           const void *a);
void el_gemv_q4_1_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a);
void el_gemv_q5_1_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a);
void el_gemv_iq4_xs_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                           const void *a);
void el_gemv_q5_0_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_iq4_nl_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                 const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_q4_1_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_q5_1_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_iq4_xs_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                 const void *w, size_t w_stride, const void *a, size_t a_stride);

/* gemv_few_avx512.c: few-row gemvs (2..EL_GEMV_FEW_MAX activation rows) */
void el_gemv_few_w4_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                           const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_few_w8_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                           const void *w, size_t w_stride, const void *a, size_t a_stride);

/* gemm_avx512.c: the packed products, unsigned weights (the aux offsets wanted) */
void el_gemm_avx512(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                    size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y,
                    int64_t ldy, void *panel);
/* gemm_legacy_avx512.c: whether a type's panels are packed there (q5_0, q4_1, q5_1, iq4_nl,
 * iq4_xs), whether they carry mins (q4_1, q5_1), and the packing of the panel of those 16 rows
 * (gemm.h's layout) */
bool el_gemm_legacy_type(el_type t);
bool el_gemm_has_min(el_type t);
void el_gemm_pack_legacy_avx512(const el_weight *w, const char *const rows[EL_GEMM_PANEL],
                                void *panel);
/* gemm_kquant_avx512.c: the packed products of Q4_K, Q5_K and Q6_K (unsigned weights) */
void el_gemm_kquant_avx512(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                           size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y,
                           int64_t ldy, void *panel);
/* attend_avx512.c */
void el_attend_avx512(el_type kv_type, int group, int hd_k, int hd_v, int32_t nv, const float *q,
                      const void *const *k, const void *const *v, float *scores,
                      size_t ld_scores, float *out);

/* probe_avx512.c: the int8 peak probe */
uint32_t el_int8_probe_avx512(int64_t iters, int8_t one);

/* dot_q23k_avx512.c, gemv_q23k_avx512.c: Q2_K and Q3_K against Q8_K */
void el_vec_dot_q2_k_avx512(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_q3_k_avx512(int64_t n, float *s, const void *x, const void *y);
void el_gemv_q2_k_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q3_k_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q2_k_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_q3_k_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);

/* gemm_q23k_avx512.c: packed products of Q2_K and Q3_K */
void el_gemm_q2_k_avx512(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                         size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y,
                         int64_t ldy, void *panel);
void el_gemm_q3_k_avx512(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                         size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y,
                         int64_t ldy, void *panel);

/* dot_kquant_avx512.c, gemv_kquant_avx512.c: Q5_K's dot product; Q4_K's, Q5_K's and Q6_K's gemvs
 * and multi-row gemvs */
void el_vec_dot_q5_k_avx512(int64_t n, float *s, const void *x, const void *y);
void el_gemv_q4_k_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q4_k_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_q5_k_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q5_k_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_q6_k_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a);
void el_gemv_q6_k_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride);

/* dot_avx512.c: the F16 and BF16 dot products (float_avx512.h) */
void el_vec_dot_f16_avx512(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_bf16_avx512(int64_t n, float *s, const void *x, const void *y);
/* gemv_float_avx512.c, tile_float_avx512.c: F16 and BF16 gemvs, multi-row gemvs and tiles
 * (float_avx512.h: the bits of their dot products above) */
void el_gemv_f16_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                        const void *a);
void el_gemv_bf16_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a);
void el_gemv_f16_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                              const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_gemv_bf16_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride);
void el_tile_f16_avx512(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                        const void *a, size_t a_stride);
void el_tile_bf16_avx512(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                         const void *a, size_t a_stride);

#endif
