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

/* gemm_avx512.c: the packed products, unsigned weights (the aux offsets wanted) */
void el_gemm_avx512(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                    size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y,
                    int64_t ldy, void *panel);
/* gemm_kquant_avx512.c: the packed products of Q4_K, Q5_K and Q6_K (unsigned weights) */
void el_gemm_kquant_avx512(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                           size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y,
                           int64_t ldy, void *panel);
/* attend_avx512.c */
void el_attend_avx512(el_type kv_type, int group, int hd_k, int hd_v, int32_t nv, const float *q,
                      const void *const *k, const void *const *v, float *scores,
                      size_t ld_scores, float *out);

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

#endif
