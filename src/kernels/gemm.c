/* gemm.c - the portable side of the packed products (gemm.h): scale groups, panel sizes and the
 * per-group activation sums. The kernels themselves are per ISA (gemm_avx2.c, gemm_avx512.c,
 * gemm_neon_dotprod.c). */
#include "kernels/gemm.h"

#include <string.h>

#include "kernels/blocks.h"
#include "kernels/edge.h"

int64_t el_gemm_group_size(const el_weight *w) {
    switch (w->type) {
    case EL_TYPE_Q4_0:
    case EL_TYPE_Q8_0:
    case EL_TYPE_Q5_0:
    case EL_TYPE_Q4_1:
    case EL_TYPE_Q5_1:
    case EL_TYPE_IQ4_NL:
    case EL_TYPE_IQ4_XS: /* its sub-blocks */
    case EL_TYPE_W4G32:
    case EL_TYPE_Q4_K:
    case EL_TYPE_Q5_K: return 32;
    case EL_TYPE_Q6_K: return 16;
    case EL_TYPE_W4G64: return 64;
    case EL_TYPE_W4G128: return 128;
    case EL_TYPE_W4:
    case EL_TYPE_W8: return w->k_in;
    case EL_TYPE_Q2_K:
    case EL_TYPE_Q3_K: return EL_QK_K; /* the super-block: its own kernels (gemm_q23k_*.c) */
    default: return 0;
    }
}

int64_t el_gemm_groups(const el_weight *w) {
    int64_t g = el_gemm_group_size(w);
    return g > 0 ? w->k_in / g : 0;
}

el_gemm_layout el_gemm_layout_of(const el_weight *w) {
    int64_t g = el_gemm_group_size(w);
    switch (w->type) {
    case EL_TYPE_Q4_0: return (el_gemm_layout){0, sizeof(el_block_q4_0), 2, 1, false};
    case EL_TYPE_Q8_0: return (el_gemm_layout){0, sizeof(el_block_q8_0), 2, 1, true};
    case EL_TYPE_W4: return (el_gemm_layout){sizeof(float), 0, 0, w->k_in / EL_GEMM_CHUNK, false};
    case EL_TYPE_W8: return (el_gemm_layout){sizeof(float), 0, 0, w->k_in / EL_GEMM_CHUNK, true};
    default: /* w4g: an fp16 scale, then g / 2 bytes of nibbles */
        return (el_gemm_layout){0, 2 + (size_t)g / 2, 2, g / EL_GEMM_CHUNK, false};
    }
}

size_t el_gemm_quant_offset(const el_gemm_layout *l, int64_t c) {
    return l->header + (size_t)(c / l->chunks_per_group) * l->group_bytes + l->scale_bytes +
           (size_t)(c % l->chunks_per_group) * (l->int8 ? 32 : 16);
}

/* Whether w's type has mins (a per-group term against the activation's sum). */
static bool has_mins(el_type t) { return t == EL_TYPE_Q4_K || t == EL_TYPE_Q5_K; }

size_t el_gemm_panel_size(const el_weight *w) {
    bool min = has_mins(w->type) || w->type == EL_TYPE_Q4_1 || w->type == EL_TYPE_Q5_1;
    size_t bytes = (size_t)w->k_in * EL_GEMM_PANEL +
                   (size_t)el_gemm_groups(w) * EL_GEMM_PANEL * sizeof(float) * (min ? 2 : 1);
    if (w->type == EL_TYPE_Q2_K) /* and per block the rows' dmin and 16 int16 mins */
        bytes += (size_t)el_gemm_groups(w) * EL_GEMM_PANEL * (sizeof(float) + 16 * sizeof(int16_t));
    return (bytes + 63) / 64 * 64;
}

/* The offset taken off each unsigned weight quant: 8 for int4, 16 for Q5_0's 5 bits, 32 for
 * q6_K's 6 bits, 128 for int8 and IQ4's levels, none for the levels of the types with a min;
 * Q3_K's packed weights are level * scale + 127 (gemm_q23k_avx512.c), Q2_K's level * scale
 * itself. */
static int32_t weight_offset(el_type t) {
    switch (t) {
    case EL_TYPE_Q8_0:
    case EL_TYPE_W8:
    case EL_TYPE_IQ4_NL:
    case EL_TYPE_IQ4_XS: return 128;
    case EL_TYPE_Q5_0: return 16;
    case EL_TYPE_Q6_K: return 32;
    case EL_TYPE_Q3_K: return 127;
    case EL_TYPE_Q4_1:
    case EL_TYPE_Q5_1:
    case EL_TYPE_Q4_K:
    case EL_TYPE_Q5_K:
    case EL_TYPE_Q2_K: return 0;
    default: return 8;
    }
}

/* Q8_K activation blocks: each group's sum from the block's sums of 16 (one or two of them). */
static void aux_row_q8_k(const el_weight *w, int32_t off, const el_block_q8_k *b,
                         el_gemm_aux *aux) {
    int64_t g = el_gemm_group_size(w), per_block = EL_QK_K / g;
    for (int64_t i = 0; i < w->k_in / EL_QK_K; i++)
        for (int64_t j = 0; j < per_block; j++) {
            int32_t sum = 0;
            for (int64_t k = j * g / 16; k < (j + 1) * g / 16; k++) sum += b[i].bsums[k];
            aux[i * per_block + j] =
                (el_gemm_aux){b[i].d, -off * sum, has_mins(w->type) ? (float)sum : 0.0f};
        }
}

static int32_t sum_i8(const int8_t *q, int64_t n) {
    int32_t s = 0;
    for (int64_t i = 0; i < n; i++) s += q[i];
    return s;
}

void el_gemm_aux_row(const el_weight *w, bool signed_weights, const void *act_row,
                     el_gemm_aux *aux) {
    /* signed weights need no offset, so no sums */
    int32_t off = signed_weights ? 0 : weight_offset(w->type);
    if (w->type == EL_TYPE_Q4_K || w->type == EL_TYPE_Q5_K || w->type == EL_TYPE_Q6_K) {
        aux_row_q8_k(w, off, act_row, aux);
        return;
    }
    if (w->type == EL_TYPE_Q4_1 || w->type == EL_TYPE_Q5_1) { /* q8_1 blocks: no offset */
        const el_block_q8_1 *b = act_row;
        for (int64_t i = 0; i < w->k_in / EL_QK8_0; i++)
            aux[i] = (el_gemm_aux){el_fp16_to_fp32(b[i].d), 0, el_fp16_to_fp32(b[i].s)};
        return;
    }
    if (w->type == EL_TYPE_IQ4_XS) { /* q8_k activation blocks: groups of 32 in each */
        const el_block_q8_k *b = act_row;
        for (int64_t g = 0; g < w->k_in / 32; g++) {
            const int16_t *bs = b[g / 8].bsums + 2 * (g % 8);
            aux[g] = (el_gemm_aux){b[g / 8].d, -off * (bs[0] + bs[1]), 0.0f};
        }
        return;
    }
    if (w->type == EL_TYPE_Q4_0 || w->type == EL_TYPE_Q8_0 || w->type == EL_TYPE_Q5_0 ||
        w->type == EL_TYPE_IQ4_NL) { /* q8_0 activation blocks */
        const el_block_q8_0 *b = act_row;
        for (int64_t i = 0; i < w->k_in / EL_QK8_0; i++) {
            int32_t sum = off != 0 ? sum_i8(b[i].qs, EL_QK8_0) : 0;
            aux[i] = (el_gemm_aux){el_fp16_to_fp32(b[i].d), -off * sum, 0.0f};
        }
        return;
    }
    if (w->type == EL_TYPE_Q2_K || w->type == EL_TYPE_Q3_K) { /* q8_k activation blocks */
        const el_block_q8_k *b = act_row;
        for (int64_t i = 0; i < w->k_in / EL_QK_K; i++) {
            int32_t sum = 0;
            for (int s = 0; s < EL_QK_K / 16; s++) sum += b[i].bsums[s];
            aux[i] = (el_gemm_aux){b[i].d, -off * sum, 0.0f};
        }
        return;
    }
    el_a8_header h; /* a8 rows: one scale; the row sum is in the header */
    memcpy(&h, act_row, sizeof h);
    const int8_t *q = (const int8_t *)act_row + sizeof h;
    int64_t g = el_gemm_group_size(w), n = el_gemm_groups(w);
    for (int64_t i = 0; i < n; i++) {
        int32_t sum = n == 1 ? h.sum : off != 0 ? sum_i8(q + i * g, g) : 0;
        aux[i] = (el_gemm_aux){h.d, -off * sum, 0.0f};
    }
}
