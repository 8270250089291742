/* lora.h - adding LoRA terms to the output of a linear layer, for groups of rows that each use
 * their own adapters (docs/architecture.md).
 *
 * A pair (A, B) changes one linear layer W (n_out rows of n_in): y += s * B (A x), with
 *   A: rank rows of n_in elements   (GGUF ne = [n_in, rank], PEFT lora_A [rank, n_in])
 *   B: n_out rows of rank elements  (GGUF ne = [rank, n_out], PEFT lora_B [n_out, rank])
 * stored in their own type (f32, f16, bf16, q8_0) and dotted with the kernels of the base
 * matmul; or, under a quantization profile (model/profile.h), in integers with its fixed scales:
 *   x8 = q(x, s_x), A8 = q(A, s_a) (a W8 weight), t = (s_a s_x) (A8 . x8) (the W8 kernel),
 *   t8 = q(t, s_t), y += (scale s_t s_b) (B8 . t8) with B8 = q(B, s_b), sums exact in int32,
 * where q(v, d) = clamp(round(v * (1 / d)), -127, 127). An adapter is a table of pairs, one slot per (layer, linear), rank 0 where it changes
 * nothing. A group is a set of rows (any order) that share a list of (adapter, scale) terms.
 *
 * el_lora_apply runs two jobs on the pool for all groups and terms of one linear layer at once
 * (el_lora_apply_many: of the linears that read the same x):
 * first every t = A x (one unit per row of A, so A is read once however many rows use it), then
 * every y += B t (threads split the output columns, so they never write the same element). The
 * number of dispatches is the same for one group as for a batch of differently-adapted rows. */
#ifndef EL_KERNELS_LORA_H
#define EL_KERNELS_LORA_H

#include <stdbool.h>
#include <stdint.h>

#include "core/threadpool.h"
#include "edgelora.h"
#include "kernels/matmul.h"

enum { EL_LORA_PACK = 32 }; /* outputs per block of a packed B */

typedef struct el_lora_pair {
    el_weight a;  /* n_in -> rank (a.n_out == rank; 0: the slot is empty) */
    el_weight b;  /* rank -> n_out (b.n_in == rank, b.n_out == n_out): n_out rows of rank, or
                   * with b_packed, in blocks of 32 outputs: P[o/32][k][o%32] = B[o][k] */
    bool b_packed; /* f32/f16/bf16 B with n_out % 32 == 0 is stored packed (the same values), so
                    * that y += B t reads it once in order, many outputs per vector, instead of
                    * n_out dot products of length rank */
    float scale;  /* the adapter's own factor: alpha / rank, alpha / sqrt(rank) (rsLoRA), or 1 */
    float x_scale; /* > 0: the pair runs in integers (above): a is W8, every row of scale s_a,
                    * b is i8 packed as the float types are (zeros after n_out in the last
                    * block), and these are s_x, s_t, s_b */
    float t_scale;
    float b_scale;
} el_lora_pair;

/* y[32b + j] += c * sum_k t[k] P[b][k][j] for the outputs j < n_out - 32b of the blocks
 * b < ceil(n_out / 32): packed int8 B against int8 t, each sum exact in int32. */
void el_lora_packed_i8(int64_t rank, int64_t n_out, const int8_t *t, const int8_t *p, float c,
                       float *y);

/* y[32b + j] += sum_k t[k] P[b][k][j] for b < n_blocks, j < 32: packed B of type f32, f16 (finite
 * values only) or bf16. */
void el_lora_packed(el_type type, int64_t rank, int64_t n_blocks, const float *t, const void *p,
                    float *y);

/* One adapter bound with a scale: its table of pairs (indexed by slot) and summary. */
typedef struct el_lora_term {
    const el_lora_pair *table;
    float scale;       /* the binding's scale (multiplies pair.scale) */
    int32_t rank_max;  /* largest rank in the table */
    bool quantized;    /* some A or B dots quantized activations (q8_0, or a profile's int8) */
} el_lora_term;

typedef struct el_lora_group {
    const int32_t *rows;        /* indices of the rows of x and y, ascending */
    int32_t n_rows;
    const el_lora_term *terms;
    int32_t n_terms;
} el_lora_group;

typedef struct el_lora_rows {
    const el_lora_group *groups;
    int32_t n_groups;
} el_lora_rows;

/* One (group, term) that changes the current slot; built per call in scratch. */
typedef struct el_lora_task {
    const el_lora_pair *pair;
    const el_lora_group *group;
    float scale;     /* binding scale * pair scale */
    int64_t unit0;   /* first unit (row of A) of this task in the flat numbering */
    size_t t_off;    /* floats: where this task's t rows start */
    size_t qt_off;   /* bytes: where its quantized t rows start */
    const char *qx;  /* x rows quantized for its slot's A (NULL: A dots float x) */
    float *y;        /* its slot's output rows, ldy floats apart, n_out each */
    int64_t ldy;
    int64_t n_out;
} el_lora_task;

/* Scratch grown by el_lora_reserve (outside the hot path) and reused by every call. */
typedef struct el_lora_scratch {
    el_lora_task *tasks;
    int32_t tasks_cap;
    float *t;          /* A x of every task's rows (= tscratch) */
    void *tscratch;
    size_t t_cap;      /* bytes */
    void *qt;          /* t quantized for a q8_0 or int8 B */
    size_t qt_cap;     /* bytes */
    void *qx;          /* x rows quantized for a q8_0 or W8 A */
    size_t qx_cap;     /* bytes */
} el_lora_scratch;

/* Makes the scratch big enough for any slot of these groups with inputs up to max_in floats.
 * Allocates only when something grows. */
el_status el_lora_reserve(el_lora_scratch *s, const el_lora_rows *lr, int64_t max_in);
void el_lora_scratch_free(el_lora_scratch *s);

/* y[r] += sum over the terms of r's group that have a pair in `slot` of
 * term.scale * pair.scale * B (A x[r]). x rows are ldx floats apart, y rows ldy; n_in is the
 * row length of x the pairs of this slot expect. tp may be NULL (one thread). */
void el_lora_apply(el_threadpool *tp, const el_lora_rows *lr, int32_t slot, const float *x,
                   int64_t ldx, int64_t n_in, float *y, int64_t ldy, el_lora_scratch *s);

/* Slots one el_lora_apply_many call takes at most: a layer's Q, K and V. */
enum { EL_LORA_MANY = 3 };

/* el_lora_apply for count (<= EL_LORA_MANY) slots of linears that read the same x (Q, K and V;
 * gate and up), y[c] and ldy[c] slot c's output, in the same two pool jobs: a decode step's
 * terms are small, so each job costs a dispatch as much as its work. Each y[c] gets what
 * el_lora_apply gives it. */
void el_lora_apply_many(el_threadpool *tp, const el_lora_rows *lr, int count,
                        const int32_t slots[], const float *x, int64_t ldx, int64_t n_in,
                        float *const y[], const int64_t ldy[], el_lora_scratch *s);

#endif
