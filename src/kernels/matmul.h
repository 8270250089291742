/* matmul.h - the one matrix product of the forward pass, over a view of a stored weight.
 *
 * A weight is stored as n_out rows of n_in elements (ggml order: ne[0] = n_in). A view uses the
 * first k_in of each row and the first k_out rows: at full size this is the whole weight; under
 * run-time pruning (weights sorted by importance) the same kernels run on the kept prefix and
 * read only its bytes. k_in is a multiple of the type's block size. */
#ifndef EL_KERNELS_MATMUL_H
#define EL_KERNELS_MATMUL_H

#include <stddef.h>
#include <stdint.h>

#include "core/threadpool.h"
#include "kernels/types.h"

typedef struct el_weight {
    el_type type;
    const void *data;  /* read-only */
    int64_t n_in;      /* stored elements per row */
    int64_t n_out;     /* stored rows */
    size_t row_bytes;  /* bytes between rows = el_row_size(type, n_in) */
    int64_t k_in;      /* kept elements per row (<= n_in) */
    int64_t k_out;     /* kept rows (<= n_out) */
    float act_scale;   /* > 0: a static scale its int8 activations are quantized with (every
                        * row, clamped): A8's from calibration (docs/formats.md) or a profile,
                        * the block types' (Q8_0, Q8_1, Q8_K) from a profile; 0: per row */
} el_weight;

/* A full view of a stored weight. */
el_weight el_weight_view(el_type type, const void *data, int64_t n_in, int64_t n_out);

/* The stored rows of w as floats: n_out rows of n_in (for merging and writing, not products). */
void el_weight_floats(const el_weight *w, float *out);

/* Bytes of scratch el_matmul needs for n_rows activation rows against w (0 for weights dotted
 * with float activations: f32, f16, bf16). Scratch must be aligned like float (malloc is). */
size_t el_matmul_scratch_size(const el_weight *w, int64_t n_rows);

/* y[r][o] = sum_i x[r][i] * W[o][i] for r < n_rows, o < k_out, i < k_in.
 * w->type must have a vec_dot (every type but q8_K; check el_type_kernels_get(t)->vec_dot at load).
 * x rows are ldx floats apart, y rows ldy floats apart. The activations are quantized once into
 * the weight's vec_dot_type in scratch (el_matmul_scratch_size bytes; may be NULL when that is
 * 0), then rows of W are split across the pool's threads. tp may be NULL: one thread. */
void el_matmul(el_threadpool *tp, const el_weight *w, const float *x, int64_t ldx, int64_t n_rows,
               float *y, int64_t ldy, void *scratch);

enum { EL_MATMUL_MANY = 32 }; /* products el_matmul_many runs as one (a layer's Q, K and V, its
                                * gate and up, or a compressed model's pieces of them) */

/* y[i] = x W[i]^T (rows ldy[i] floats apart) for i < n: the same bits as n calls of el_matmul.
 * When they are decode-step products (every activation row through gemv) of weights that take
 * the same activations (dot type, k_in, static scale), and n <= EL_MATMUL_MANY, they run as one
 * pool job: x quantized once, one wait for the threads instead of n (the Q, K and V of a layer;
 * its gate and up; the kept pieces of those of a compressed model). Otherwise, one el_matmul
 * each. Scratch: el_matmul_scratch_size bytes of the largest of them. */
void el_matmul_many(el_threadpool *tp, int n, const el_weight *const w[], const float *x,
                    int64_t ldx, int64_t n_rows, float *const y[], const int64_t ldy[],
                    void *scratch);

/* y[i] = x[:, c0[i] .. c0[i] + k_in_i) W[i]^T for i < n: the products of the column pieces of
 * one matrix (a compressed model's down and O), the same bits as n calls of el_matmul on
 * x + c0[i]. When they are decode-step products of one weight type whose activation blocks
 * the offsets c0[i] start on, and n <= EL_MATMUL_MANY, they run as one pool job over x
 * quantized once; otherwise one el_matmul each. Scratch: el_matmul_scratch_size bytes of a
 * weight of their type as wide as x's used columns. */
void el_matmul_columns(el_threadpool *tp, int n, const el_weight *const w[], const float *x,
                       int64_t ldx, const int64_t c0[], int64_t n_rows, float *const y[],
                       const int64_t ldy[], void *scratch);

#endif
