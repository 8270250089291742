/* w8a16.h - what the SIMD W8A16 kernels of every ISA share beside their instructions: the A16
 * row as they read it, the runs of EL_A16_RUN elements their int32 lanes can hold before they
 * are added into int64 ones, and the scaling of the exact sums
 * (edge.h), which must be the reference's so that every kernel gives the same bits. */
#ifndef EL_KERNELS_W8A16_H
#define EL_KERNELS_W8A16_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/dispatch.h"
#include "kernels/edge.h"

/* An A16 row: its int16 values (2-byte aligned, read as bytes by the SIMD loads) and scale. */
typedef struct el_a16_view {
    const char *q;
    float d;
    int64_t n;
} el_a16_view;

static inline el_a16_view el_a16_view_of(const void *a, int64_t n) {
    el_a16_header h;
    memcpy(&h, a, sizeof h);
    return (el_a16_view){.q = (const char *)a + sizeof h, .d = h.d, .n = n};
}

/* The end of the run of elements that starts at i, of a row of n. */
static inline int64_t el_a16_run_end(int64_t i, int64_t n) {
    return n - i < EL_A16_RUN ? n : i + EL_A16_RUN;
}

/* A W8A16 row's result: its scale times the activations' times the float of the exact sum. */
static inline float el_w8a16_scale(const void *w_row, float d_a, int64_t sum) {
    return el_edge_row_scale(w_row) * d_a * (float)sum;
}

/* A tile's results from its sums (tile kernels: EL_TILE weight rows, EL_TILE activation rows). */
static inline void el_w8a16_tile_store(const int64_t sum[EL_TILE][EL_TILE], float *y, int64_t ldy,
                                       const void *w, size_t w_stride, const void *a,
                                       size_t a_stride) {
    for (int r = 0; r < EL_TILE; r++) {
        el_a16_view v = el_a16_view_of((const char *)a + r * a_stride, 0);
        for (int o = 0; o < EL_TILE; o++)
            y[r * ldy + o] = el_w8a16_scale((const char *)w + o * w_stride, v.d, sum[r][o]);
    }
}

#endif
