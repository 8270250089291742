/* kv_cache.c - cells, positions and sequence visibility of the KV cache. */
#include "model/kv_cache.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/pages.h"

el_status el_kv_cache_init(el_kv_cache *c, el_type type, int32_t n_layer, int32_t n_ctx,
                           int32_t n_seq_max, int32_t n_head_kv, int32_t head_dim_k,
                           int32_t head_dim_v) {
    memset(c, 0, sizeof *c);
    if (type != EL_TYPE_F16 && type != EL_TYPE_F32)
        return el_error(EL_ERR_INVALID_ARG, "KV cache: element type %d is neither f16 nor f32",
                        (int)type);
    c->type = type;
    c->elem = type == EL_TYPE_F16 ? sizeof(uint16_t) : sizeof(float);
    c->n_ctx = n_ctx;
    c->n_seq_max = n_seq_max;
    c->n_layer = n_layer;
    c->n_head_kv = n_head_kv;
    c->head_dim_k = head_dim_k;
    c->head_dim_v = head_dim_v;
    c->words = (n_seq_max + 63) / 64;
    c->pos = malloc((size_t)n_ctx * sizeof *c->pos);
    c->seqs = calloc((size_t)n_ctx * c->words, sizeof *c->seqs);
    /* K and V in 2 MB pages (once they are that large): a decode step reads every layer's and
     * kv head's cells, and through 4 KB pages their TLB misses cost (1B shape, 1 thread, ~576
     * cells: 104-116 -> 95-98 us of attention a layer) */
    size_t slices = (size_t)n_layer * n_head_kv * n_ctx;
    c->k = el_alloc_pages(slices * head_dim_k * c->elem);
    c->v = el_alloc_pages(slices * head_dim_v * c->elem);
    if (!c->pos || !c->seqs || !c->k || !c->v) {
        el_kv_cache_free(c);
        return el_error(EL_ERR_NOMEM, "KV cache: out of memory for %d cells", n_ctx);
    }
    el_kv_cache_clear(c);
    return EL_OK;
}

void el_kv_cache_free(el_kv_cache *c) {
    free(c->pos);
    free(c->seqs);
    free(c->k);
    free(c->v);
    memset(c, 0, sizeof *c);
}

void el_kv_cache_clear(el_kv_cache *c) {
    for (int32_t i = 0; i < c->n_ctx; i++)
        c->pos[i] = -1;
    memset(c->seqs, 0, (size_t)c->n_ctx * c->words * sizeof *c->seqs);
    c->n_used = 0;
}

static bool cell_is_free(const el_kv_cache *c, int32_t cell) {
    const uint64_t *w = c->seqs + (size_t)cell * c->words;
    for (int32_t i = 0; i < c->words; i++)
        if (w[i])
            return false;
    return true;
}

bool el_kv_cache_find_free(const el_kv_cache *c, int32_t n, int32_t *cells) {
    if (c->n_ctx - c->n_used < n)
        return false;
    int32_t found = 0;
    for (int32_t i = 0; i < c->n_ctx && found < n; i++)
        if (cell_is_free(c, i))
            cells[found++] = i;
    return found == n;
}

static void set_bit(el_kv_cache *c, int32_t cell, int32_t seq) {
    c->seqs[(size_t)cell * c->words + (size_t)seq / 64] |= (uint64_t)1 << (seq % 64);
}

void el_kv_cache_occupy(el_kv_cache *c, int32_t cell, int32_t pos, int32_t seq) {
    c->pos[cell] = pos;
    set_bit(c, cell, seq);
    c->n_used++;
}

static bool in_range(int32_t pos, int32_t p0, int32_t p1) {
    return pos >= p0 && (p1 < 0 || pos < p1);
}

void el_kv_cache_seq_remove(el_kv_cache *c, int32_t seq, int32_t p0, int32_t p1) {
    for (int32_t i = 0; i < c->n_ctx; i++) {
        if (!el_kv_cell_has_seq(c, i, seq) || !in_range(c->pos[i], p0, p1))
            continue;
        c->seqs[(size_t)i * c->words + (size_t)seq / 64] &= ~((uint64_t)1 << (seq % 64));
        if (cell_is_free(c, i)) {
            c->pos[i] = -1;
            c->n_used--;
        }
    }
}

void el_kv_cache_free_cell(el_kv_cache *c, int32_t cell) {
    if (cell_is_free(c, cell))
        return;
    memset(c->seqs + (size_t)cell * c->words, 0, (size_t)c->words * sizeof(uint64_t));
    c->pos[cell] = -1;
    c->n_used--;
}

void el_kv_cache_seq_share(el_kv_cache *c, int32_t src, int32_t dst, int32_t p0, int32_t p1) {
    for (int32_t i = 0; i < c->n_ctx; i++)
        if (el_kv_cell_has_seq(c, i, src) && in_range(c->pos[i], p0, p1))
            set_bit(c, i, dst);
}

int32_t el_kv_cache_seq_pos_max(const el_kv_cache *c, int32_t seq) {
    int32_t best = -1;
    for (int32_t i = 0; i < c->n_ctx; i++)
        if (el_kv_cell_has_seq(c, i, seq) && c->pos[i] > best)
            best = c->pos[i];
    return best;
}

int32_t el_kv_cache_seqs_cells(const el_kv_cache *c, int32_t seq0, int32_t seq1) {
    int32_t n = 0;
    for (int32_t i = 0; i < c->n_ctx; i++)
        for (int32_t q = seq0; q < seq1; q++)
            if (el_kv_cell_has_seq(c, i, q)) {
                n++;
                break;
            }
    return n;
}
