/* gemv_float_avx512.c - gemv_float.h's gemvs of F16 and BF16 over float_avx512.h's sequence
 * (F32 keeps AVX2's: avx512.c). */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include "kernels/float_avx512.h"

/* This level's sequence under the name gemv_float.h calls. */
static inline __attribute__((always_inline)) void float_dots(el_float_kind kind, int64_t n,
                                                             const void *const w[], int O,
                                                             const float *const a[], int R,
                                                             float s[][4]) {
    float_dots_avx512(kind, n, w, O, a, R, s);
}

#include "kernels/gemv_float.h"

/* This level's names (avx512.h) for the header's kernels: aliases, the code as it is. */

void el_gemv_f16_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                        const void *a)
    __attribute__((alias("gemv_f16")));

void el_gemv_bf16_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a)
    __attribute__((alias("gemv_bf16")));

void el_gemv_f16_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                              const void *w, size_t w_stride, const void *a, size_t a_stride)
    __attribute__((alias("gemv_f16_multi")));

void el_gemv_bf16_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride)
    __attribute__((alias("gemv_bf16_multi")));

#endif
