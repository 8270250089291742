/* gemv_few_avx512.c - AVX-512 VNNI few-row gemvs (el_gemv_few: 2..EL_GEMV_FEW_MAX activation
 * rows, each output with the bits of the type's gemv) for w4 and w8. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include "kernels/gemm.h"

enum { PANEL = EL_GEMM_PANEL };

/* ---- w4 and w8 (one scale per row, against A8 rows): their gemvs scale one whole-row integer
 * sum, (row scale x activation scale) x (sum - offset x activation sum), and so does the packed
 * gemm's register path (gemm_avx512.c: each 32-element chunk of a panel of 16 rows transposed
 * in registers for up to 8 activation rows, a second pass from cache for more), whose integer
 * sums start at the offset term: the same bits. So full panels go through it (measured faster
 * there than the one-row layout with 2-4 rows far apart and full activation loads: in cache as
 * fast, from DRAM 0.55-0.75 as fast), the rows past them and products of 2 or 3 rows (where
 * the gemv row after row over blocks the later rows find in L2 was faster: docs/kernels.md)
 * through the gemv. */
enum {
    FEW_PANEL_MIN = 4,               /* activation rows from which full panels take the gemm */
    FEW_REUSE_BYTES = 256 << 10,     /* a block of rows each activation row reads in turn */
};

static void few_per_row(el_type type, el_gemv_fn gemv, int64_t n, float *y, int64_t ldy,
                        int n_act, int64_t n_rows, const void *w, size_t w_stride, const void *a,
                        size_t a_stride) {
    int64_t done = 0;
    if (n_act >= FEW_PANEL_MIN && n_rows >= PANEL) {
        el_weight view = el_weight_view(type, w, n, n_rows);
        view.row_bytes = w_stride;
        el_gemm_aux aux[EL_GEMV_FEW_MAX];
        for (int k = 0; k < n_act; k++)
            el_gemm_aux_row(&view, false, (const char *)a + (size_t)k * a_stride, &aux[k]);
        /* full panels never touch the panel buffer for per-row types */
        for (; done + PANEL <= n_rows; done += PANEL)
            el_gemm_avx512(&view, done, PANEL, a, a_stride, aux, n_act, y, ldy, NULL);
    }
    int64_t step = (int64_t)(FEW_REUSE_BYTES / w_stride);
    if (step < 1) step = 1;
    for (int64_t o0 = done; o0 < n_rows; o0 += step) {
        int64_t rows = n_rows - o0 < step ? n_rows - o0 : step;
        for (int k = 0; k < n_act; k++)
            gemv(n, y + k * ldy + o0, rows, (const char *)w + o0 * w_stride, w_stride,
                 (const char *)a + (size_t)k * a_stride);
    }
}

void el_gemv_few_w4_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                           const void *w, size_t w_stride, const void *a, size_t a_stride) {
    few_per_row(EL_TYPE_W4, el_gemv_w4_avx512, n, y, ldy, n_act, n_rows, w, w_stride, a,
                a_stride);
}

void el_gemv_few_w8_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                           const void *w, size_t w_stride, const void *a, size_t a_stride) {
    few_per_row(EL_TYPE_W8, el_gemv_w8_avx512, n, y, ldy, n_act, n_rows, w, w_stride, a,
                a_stride);
}

#endif
