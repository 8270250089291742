/* dot_q23k_avx512.c - AVX-512 VNNI dot products of Q2_K and Q3_K rows against Q8_K: one row and one
 * activation row through the body of q23k_x86.h. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include "kernels/q23k_x86.h"

void el_vec_dot_q2_k_avx512(int64_t n, float *s, const void *x, const void *y) {
    const char *row[1] = {x};
    const el_block_q8_k *b[1] = {y};
    float t[EL_GEMV_MULTI_MAX][4];
    q23k_rows(EL_TYPE_Q2_K, n / EL_QK_K, row, 1, b, 1, t);
    *s = t[0][0];
}

void el_vec_dot_q3_k_avx512(int64_t n, float *s, const void *x, const void *y) {
    const char *row[1] = {x};
    const el_block_q8_k *b[1] = {y};
    float t[EL_GEMV_MULTI_MAX][4];
    q23k_rows(EL_TYPE_Q3_K, n / EL_QK_K, row, 1, b, 1, t);
    *s = t[0][0];
}

#endif
