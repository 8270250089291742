/* gemv_float_avx2.c - gemv_float.h's gemvs of F32, F16 and BF16 over float_avx2.h's sequence. */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include "kernels/float_avx2.h"

/* This level's sequence under the name gemv_float.h calls. */
static inline __attribute__((always_inline)) void float_dots(el_float_kind kind, int64_t n,
                                                             const void *const w[], int O,
                                                             const float *const a[], int R,
                                                             float s[][4]) {
    float_dots_avx2(kind, n, w, O, a, R, s);
}

#include "kernels/gemv_float.h"

/* This level's names (avx2.h) for the header's kernels: aliases, the code as it is. */

void el_gemv_f32_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a)
    __attribute__((alias("gemv_f32")));

void el_gemv_f16_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a)
    __attribute__((alias("gemv_f16")));

void el_gemv_bf16_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a)
    __attribute__((alias("gemv_bf16")));

void el_gemv_f32_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                            const void *w, size_t w_stride, const void *a, size_t a_stride)
    __attribute__((alias("gemv_f32_multi")));

void el_gemv_f16_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                            const void *w, size_t w_stride, const void *a, size_t a_stride)
    __attribute__((alias("gemv_f16_multi")));

void el_gemv_bf16_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride)
    __attribute__((alias("gemv_bf16_multi")));

#endif
