/* kv_cache.h - the KV cache as a pool of cells with visibility (docs/architecture.md).
 *
 * A cell holds the K and V of one token for every layer, its position, and a bitset of the
 * sequences that may attend to it. A cell with no sequence bit is free. Sharing a prompt between
 * sequences sets more bits on the same cells; nothing is copied.
 *
 * K and V are fp16 (the default, el_context_params.kv_type: half the memory, and half the bytes
 * attention reads per token; rounding to fp16's 11-bit significand moves logits by a few 1e-4
 * relative) or float32 (exact), one type for the whole cache. They are laid out
 * [layer][kv head][cell][head_dim]: attention reads one kv head over many cells, and a
 * sequence's cells are mostly consecutive, so that read is one contiguous stream the hardware
 * prefetchers follow (with all heads of a cell together it was a slice every
 * n_head_kv * head_dim floats, which the prefetchers do not follow: docs/kernels.md). */
#ifndef EL_MODEL_KV_CACHE_H
#define EL_MODEL_KV_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgelora.h"
#include "kernels/types.h"

typedef struct el_kv_cache {
    int32_t n_ctx;      /* cells */
    int32_t n_seq_max;  /* sequence ids 0 .. n_seq_max-1 */
    int32_t n_layer;
    int32_t n_head_kv;
    el_type type;       /* of K and V: EL_TYPE_F16 or EL_TYPE_F32 */
    size_t elem;        /* bytes of one element of that type */
    int32_t head_dim_k; /* elements of K per cell, layer and kv head */
    int32_t head_dim_v;
    int32_t words;      /* uint64 words of each cell's sequence bitset */
    int32_t n_used;     /* cells with at least one sequence */
    int32_t *pos;       /* [n_ctx] position of each used cell */
    uint64_t *seqs;     /* [n_ctx][words] */
    void *k;            /* [n_layer][n_head_kv][n_ctx][head_dim_k] of type */
    void *v;            /* [n_layer][n_head_kv][n_ctx][head_dim_v] of type */
} el_kv_cache;

/* type: EL_TYPE_F16 or EL_TYPE_F32 (anything else is EL_ERR_INVALID_ARG). */
el_status el_kv_cache_init(el_kv_cache *c, el_type type, int32_t n_layer, int32_t n_ctx,
                           int32_t n_seq_max, int32_t n_head_kv, int32_t head_dim_k,
                           int32_t head_dim_v);
void el_kv_cache_free(el_kv_cache *c);
void el_kv_cache_clear(el_kv_cache *c);

static inline bool el_kv_cell_has_seq(const el_kv_cache *c, int32_t cell, int32_t seq) {
    return (c->seqs[(size_t)cell * c->words + (size_t)seq / 64] >> (seq % 64)) & 1u;
}
/* The K (V) of kv head `head` of a cell in a layer: head_dim_k (head_dim_v) elements of type. */
static inline void *el_kv_cell_k(const el_kv_cache *c, int32_t layer, int32_t head, int32_t cell) {
    size_t slice = ((size_t)layer * c->n_head_kv + (size_t)head) * c->n_ctx + (size_t)cell;
    return (char *)c->k + slice * c->head_dim_k * c->elem;
}
static inline void *el_kv_cell_v(const el_kv_cache *c, int32_t layer, int32_t head, int32_t cell) {
    size_t slice = ((size_t)layer * c->n_head_kv + (size_t)head) * c->n_ctx + (size_t)cell;
    return (char *)c->v + slice * c->head_dim_v * c->elem;
}
/* Bytes of K and V one cell holds over all layers and kv heads. */
static inline size_t el_kv_cache_cell_bytes(const el_kv_cache *c) {
    return (size_t)c->n_layer * c->n_head_kv * (size_t)(c->head_dim_k + c->head_dim_v) * c->elem;
}

/* Finds n free cells (lowest indices first) into cells[]; false, changing nothing, if there are
 * fewer than n. */
bool el_kv_cache_find_free(const el_kv_cache *c, int32_t n, int32_t *cells);
/* Takes a free cell for token position pos of sequence seq. */
void el_kv_cache_occupy(el_kv_cache *c, int32_t cell, int32_t pos, int32_t seq);

/* Positions [p0, p1) of seq (p1 < 0: to the end). */
void el_kv_cache_seq_remove(el_kv_cache *c, int32_t seq, int32_t p0, int32_t p1);
/* Frees one cell whatever sequences see it (nothing if it is free). */
void el_kv_cache_free_cell(el_kv_cache *c, int32_t cell);
void el_kv_cache_seq_share(el_kv_cache *c, int32_t src, int32_t dst, int32_t p0, int32_t p1);
int32_t el_kv_cache_seq_pos_max(const el_kv_cache *c, int32_t seq);
/* Cells at least one sequence of [seq0, seq1) sees. */
int32_t el_kv_cache_seqs_cells(const el_kv_cache *c, int32_t seq0, int32_t seq1);

#endif
