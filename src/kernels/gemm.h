/* gemm.h - packed multi-row products (prompt processing, small batches of concurrent rows).
 *
 * el_matmul dots every output with one activation row at a time (vec_dot) or 4 at a time
 * (tiles). A gemm kernel instead works on panels of EL_GEMM_PANEL consecutive weight rows: it
 * unpacks a panel once into bytes interleaved as [k/4][16 rows][4 bytes] in a per-thread
 * buffer, so one byte dot instruction (x86 vpdpbusd with the activation's 4 bytes broadcast;
 * aarch64 takes four SDOTs by lane) accumulates all 16 outputs of an activation row at once,
 * with no shuffles and no horizontal sums, and then runs every activation row over the panel
 * while it sits in cache. (Without a byte dot instruction, x86 AVX2 takes vpmaddubsw and its
 * own layout of the panel buffer: gemm_avx2.c.)
 *
 * Unsigned weights: int4 quants as their nibble u = q + 8, int8 quants as u = q + 128. Then
 * sum q a = sum u a - off * sum a, with off 8 or 128: the offset term is one integer per
 * activation row and weight scale group, computed when the activations are quantized
 * (el_gemm_aux), and it starts the integer accumulator of that group.
 * Signed weights: kernels whose byte dot instruction takes both operands signed (aarch64 SDOT,
 * gemm_neon_dotprod.c) unpack the quants as q itself and need no offset term; the kernel table says
 * which kind its gemm kernels are (el_kernels.gemm_signed), and their aux comp is 0.
 *
 * A weight type's scale group is the span of elements sharing a scale: a block of 32 for
 * q4_0 / q8_0 (times the activation block's scale), a group for w4g*, the whole kept row for
 * w4 / w8 (with the a8 row scale), a sub-block for the K-quants (32 elements of q4_K / q5_K,
 * whose scale is d * sc and whose min dmin * m multiplies the activation's sum over the group;
 * 16 of q6_K, whose quants are unsigned as q + 32, with d * sc), times the scale of the Q8_K
 * block. The K-quants have no el_gemm_layout: their kernels unpack the blocks themselves.
 * Each group's integer sum is exact; it is scaled and accumulated in float, in group order (or,
 * where the sub-block scales are integers, a K-quant super-block's scaled sums are summed exactly
 * in int32 first and scaled once: gemm_kquant_avx2.c), so every output's value depends only on its
 * weight row and its activation row, never on the panel, tile or thread it was computed in. */
#ifndef EL_KERNELS_GEMM_H
#define EL_KERNELS_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/matmul.h"

enum {
    EL_GEMM_PANEL = 16, /* weight rows per panel */
    EL_GEMM_CHUNK = 32, /* elements per chunk of a weight row: 16 bytes if int4, 32 if int8 */
};

/* Where a weight type keeps its quants and scales, per row: the quants of chunk c at
 * row + el_gemm_quant_offset(c); the scale of group g an fp16 at row + g * group_bytes, or for
 * per-row types a float at the start of the row. */
typedef struct el_gemm_layout {
    size_t header;      /* bytes before the first group (the per-row float scale) */
    size_t group_bytes; /* bytes per scale group (fp16 scale + quants); 0 for per-row types */
    size_t scale_bytes; /* bytes of the scale at the start of each group (2, or 0) */
    int64_t chunks_per_group;
    bool int8;
} el_gemm_layout;

/* Per activation row and weight scale group: the activation's scale for the group and, for
 * kernels taking unsigned weights, -off * (sum of its int8 quants over the group); 0 for kernels
 * taking signed ones (q4_K and q5_K have no offset: 0 either way). */
typedef struct el_gemm_aux {
    float d;
    int32_t comp;
    float s; /* the activation group's sum as a weight type with mins needs it, else 0: Q8_1's
              * s (its scale times the sum) for Q4_1, Q5_1; the sum of the int8 quants for
              * Q4_K, Q5_K (their kernels scale it) */
} el_gemm_aux;

/* y[r * ldy + o] = dot(weight row o, activation row r) for o in [o0, o0 + n_out), n_out <=
 * EL_GEMM_PANEL, and r < n_rows. Activation row r (of w->k_in elements, the weight's
 * vec_dot_type) is at act + r * act_stride, its groups' aux at aux + r * el_gemm_groups(w).
 * panel is el_gemm_panel_size(w) bytes, 64-byte aligned, private to the calling thread. */
typedef void (*el_gemm_fn)(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                           size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y,
                           int64_t ldy, void *panel);

/* Elements per scale group of w's type over its kept row; 0 for types no gemm kernel covers. */
int64_t el_gemm_group_size(const el_weight *w);
/* Scale groups per kept row (k_in / el_gemm_group_size). */
int64_t el_gemm_groups(const el_weight *w);
/* Bytes of one thread's panel buffer for w (a multiple of 64): the unpacked quants, a float
 * scale per row and group, and for weights with a min (Q4_1, Q5_1, Q4_K, Q5_K) a float min per
 * row and group after them ([groups][16]). */
size_t el_gemm_panel_size(const el_weight *w);
/* The layout of w's type (one gemm.h covers). */
el_gemm_layout el_gemm_layout_of(const el_weight *w);
/* Byte offset of chunk c's quants in a row. */
size_t el_gemm_quant_offset(const el_gemm_layout *l, int64_t c);
/* The aux of one activation row (quantized, of w->k_in elements) for the groups of w, for
 * kernels taking signed weights (signed_weights) or unsigned ones. */
void el_gemm_aux_row(const el_weight *w, bool signed_weights, const void *act_row,
                     el_gemm_aux *aux);

#endif
