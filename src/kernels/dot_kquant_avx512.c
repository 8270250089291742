/* dot_kquant_avx512.c - AVX-512 VNNI dot products of Q5_K against Q8_K: one row
 * of gemv_kquant_avx2.h, so the same bits as the gemv of this level. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include "kernels/gemv_kquant_avx2.h"

void el_vec_dot_q5_k_avx512(int64_t n, float *s, const void *x, const void *y) {
    const char *const row[1] = {x};
    const el_block_q8_k *const b[1] = {y};
    float t[KQ_MAX_ACTS][4];
    kq_rows(EL_TYPE_Q5_K, n / EL_QK_K, row, 1, b, 1, t);
    *s = t[0][0];
}

#endif
