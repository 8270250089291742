/* gemv_drive.h - the row loop every gemv kernel (el_gemv_fn) shares: which weight rows go
 * side by side and where their results go; the ISA files supply the kernel for R rows.
 *
 * How the weight is read decides a gemv's speed: on Zen 4 one thread reading a few rows side
 * by side (interleaved streams a row apart) got a fraction of the bandwidth of reading them in
 * order, software prefetches did not make up for it, and a few streams far apart read as fast
 * as one or faster (docs/kernels.md, "Figures behind the kernels' comments"). So up to four rows far apart go together, sharing the activation loads;
 * the rest go alone through the same kernel (a row's result must not depend on its company).
 * The multi-row gemvs (2-3 activation rows) have their own loop, two weight rows at a time. */
#ifndef EL_KERNELS_GEMV_DRIVE_H
#define EL_KERNELS_GEMV_DRIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/dispatch.h"

/* Bytes of L1 that one pass over a group of rows may fill with its weight rows and the
 * activations (raw or prepared) it reads once per group: past that, the rows' lines evict the
 * activations before the next group comes back to them, and the reloads slow the streams down
 * (on Zen 4, 32 KB of L1: q4_0 rows of 8192, 4 x 4.5 KB + 12 KB, read slower 4 at a time than
 * 2 at a time; w4 rows of 8192, 4 x 4 KB + 8 KB, still read best 4 at a time). */
enum { GEMV_L1_BYTES = 26 << 10 };

/* How many rows go side by side (4, 2 or 1): the most whose rows and activations fit
 * GEMV_L1_BYTES; if even one row does not, 4, so that each activation reload serves 4 rows. */
static inline int gemv_company(size_t row_bytes, size_t act_bytes) {
    for (int R = 4; R >= 1; R /= 2)
        if ((size_t)R * row_bytes + act_bytes <= GEMV_L1_BYTES) return R;
    return 4;
}

/* Computes the R (4, 2 or 1) dots s[r] of rows row[r] for a type; ctx holds the rest. */
typedef void (*gemv_rows_fn)(const void *ctx, const char *const row[4], float s[4], int R);

/* y[o] (or y[o] + if accumulate) = the dot of row o, for o < n_rows: rows i, i + m, ...
 * (m = n_rows / R) together, the last n_rows % R alone, through the same code (a row's result
 * does not depend on its company). Inlined with rows constant, so the type's kernel is inlined
 * for each R. */
static inline __attribute__((always_inline)) void gemv_drive(int64_t n_rows, int R, const void *w,
                                                             size_t w_stride, float *y,
                                                             bool accumulate, gemv_rows_fn rows,
                                                             const void *ctx) {
    const int64_t m = n_rows / R;
    for (int64_t i = 0; i < m + n_rows % R; i++) {
        int together = i < m ? R : 1;
        int64_t o[4] = {i, i + m, i + 2 * m, i + 3 * m};
        if (together == 1) o[0] = (R - 1) * m + i;
        const char *row[4];
        float s[4];
        #pragma GCC unroll 4
        for (int r = 0; r < together; r++) row[r] = (const char *)w + o[r] * w_stride;
        if (together == 4)
            rows(ctx, row, s, 4);
        else if (together == 2)
            rows(ctx, row, s, 2);
        else
            rows(ctx, row, s, 1);
        #pragma GCC unroll 4
        for (int r = 0; r < together; r++) y[o[r]] = accumulate ? y[o[r]] + s[r] : s[r];
    }
}

/* Computes the dots s[a][r] of weight rows row[r] (r < R, 1 or 2) with activation rows a < A
 * (2 or 3) for a type; ctx holds their prepared slices. */
typedef void (*gemv_multi_rows_fn)(const void *ctx, const char *const row[2],
                                   float s[][2], int R, int A);

/* The row loop of the multi-row gemvs: y[a * ldy + o] (+ if accumulate) = the dot of weight row
 * o with activation row a, for o < n_rows; rows i and i + n_rows / 2 together, an odd last one
 * alone. Inlined with constant R and A, so the type's kernel is inlined for each. */
static inline __attribute__((always_inline)) void gemv_multi_drive(
    int64_t n_rows, int n_act, const void *w, size_t w_stride, float *y, int64_t ldy,
    bool accumulate, gemv_multi_rows_fn rows, const void *ctx) {
    const int64_t m = n_rows / 2;
    for (int64_t i = 0; i < m + n_rows % 2; i++) {
        int64_t o[2] = {i < m ? i : 2 * m, i + m};
        int R = i < m ? 2 : 1;
        const char *row[2] = {(const char *)w + o[0] * w_stride,
                              R == 2 ? (const char *)w + o[1] * w_stride : NULL};
        float s[EL_GEMV_MULTI_MAX][2];
        if (n_act == 3)
            R == 2 ? rows(ctx, row, s, 2, 3) : rows(ctx, row, s, 1, 3);
        else
            R == 2 ? rows(ctx, row, s, 2, 2) : rows(ctx, row, s, 1, 2);
        for (int k = 0; k < n_act; k++)
            for (int r = 0; r < R; r++)
                y[k * ldy + o[r]] = accumulate ? y[k * ldy + o[r]] + s[k][r] : s[k][r];
    }
}

#endif
