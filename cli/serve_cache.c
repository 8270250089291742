/* serve_cache.c - the prefix cache of finished requests (serve_cache.h says what it does). */
#include <stdlib.h>
#include <string.h>

#include "serve_cache.h"

bool serve_same_bindings(const el_binding *a, int32_t na, const el_binding *b, int32_t nb) {
    if (na != nb) return false;
    for (int32_t i = 0; i < na; i++)
        if (a[i].adapter != b[i].adapter || a[i].scale != b[i].scale) return false;
    return true;
}

el_status serve_cache_init(serve_cache *c, el_context *ctx, int32_t seq0, int32_t n) {
    *c = (serve_cache){.ctx = ctx, .n = n, .seq0 = seq0};
    if (n > 0 && !(c->e = calloc((size_t)n, sizeof *c->e))) {
        c->n = 0; /* serve_cache_free has nothing to drop */
        return EL_ERR_NOMEM;
    }
    return EL_OK;
}

/* Entry i's cells and binding go (the adapters it held are released). */
static void drop(serve_cache *c, int32_t i) {
    serve_cache_entry *e = &c->e[i];
    el_kv_seq_remove(c->ctx, c->seq0 + i, 0, -1);
    el_context_bind(c->ctx, c->seq0 + i, NULL, 0);
    free(e->tokens);
    *e = (serve_cache_entry){0};
}

void serve_cache_free(serve_cache *c) {
    for (int32_t i = 0; i < c->n; i++)
        if (c->e[i].n_tokens) drop(c, i);
    free(c->e);
    *c = (serve_cache){0};
}

static bool evict_lru(serve_cache *c) {
    int32_t lru = -1;
    for (int32_t i = 0; i < c->n; i++)
        if (c->e[i].n_tokens && (lru < 0 || c->e[i].used < c->e[lru].used)) lru = i;
    if (lru < 0) return false;
    drop(c, lru);
    c->evicted++;
    return true;
}

void serve_cache_put(serve_cache *c, int32_t seq, const int32_t *tokens, int32_t n,
                     const el_binding *bind, int32_t n_bind) {
    if (c->n == 0 || n <= 0) return;
    int32_t slot = -1;
    for (int32_t i = 0; i < c->n; i++) {
        serve_cache_entry *e = &c->e[i];
        if (!e->n_tokens || !serve_same_bindings(e->bind, e->n_bind, bind, n_bind)) continue;
        int32_t k = e->n_tokens < n ? e->n_tokens : n;
        if (memcmp(e->tokens, tokens, (size_t)k * sizeof *tokens)) continue;
        if (e->n_tokens >= n) { /* it already holds all of these */
            e->used = ++c->clock;
            return;
        }
        drop(c, i); /* these hold all of it */
    }
    for (int32_t i = 0; i < c->n && slot < 0; i++)
        if (!c->e[i].n_tokens) slot = i;
    if (slot < 0) {
        evict_lru(c);
        for (int32_t i = 0; i < c->n && slot < 0; i++)
            if (!c->e[i].n_tokens) slot = i;
    }
    serve_cache_entry *e = &c->e[slot];
    int32_t id = c->seq0 + slot;
    if (!(e->tokens = malloc((size_t)n * sizeof *e->tokens))) return;
    if (el_context_bind(c->ctx, id, bind, n_bind) != EL_OK ||
        el_kv_seq_share(c->ctx, seq, id, 0, n) != EL_OK) {
        drop(c, slot);
        return;
    }
    memcpy(e->tokens, tokens, (size_t)n * sizeof *tokens);
    if (n_bind > 0) memcpy(e->bind, bind, (size_t)n_bind * sizeof *bind);
    e->n_bind = n_bind;
    e->n_tokens = n;
    e->used = ++c->clock;
}

int32_t serve_cache_match(serve_cache *c, const int32_t *tokens, int32_t lim,
                          const el_binding *bind, int32_t n_bind, int32_t *seq) {
    int32_t best = 0, at = -1;
    for (int32_t i = 0; i < c->n; i++) {
        const serve_cache_entry *e = &c->e[i];
        if (!e->n_tokens || !serve_same_bindings(e->bind, e->n_bind, bind, n_bind)) continue;
        int32_t k = 0, end = e->n_tokens < lim ? e->n_tokens : lim;
        while (k < end && e->tokens[k] == tokens[k]) k++;
        if (k > best) best = k, at = i;
    }
    if (at >= 0) {
        c->e[at].used = ++c->clock;
        *seq = c->seq0 + at;
    }
    return best;
}

int32_t serve_cache_cells(const serve_cache *c) {
    if (c->n == 0) return 0;
    return el_kv_used_cells(c->ctx) - el_kv_seqs_cells(c->ctx, 0, c->seq0);
}

void serve_cache_fit(serve_cache *c, int32_t room) {
    while (serve_cache_cells(c) > room)
        if (!evict_lru(c)) return;
}

void serve_cache_forget(serve_cache *c, const el_adapter *const *a, int32_t n, bool bound) {
    for (int32_t i = 0; i < c->n; i++) {
        const serve_cache_entry *e = &c->e[i];
        bool hit = bound && e->n_bind > 0;
        for (int32_t b = 0; b < e->n_bind && !hit; b++)
            for (int32_t k = 0; k < n && !hit; k++) hit = e->bind[b].adapter == a[k];
        if (e->n_tokens && hit) drop(c, i);
    }
}

void serve_cache_clear(serve_cache *c) {
    for (int32_t i = 0; i < c->n; i++)
        if (c->e[i].n_tokens) drop(c, i);
}

int32_t serve_cache_entries(const serve_cache *c) {
    int32_t n = 0;
    for (int32_t i = 0; i < c->n; i++) n += c->e[i].n_tokens > 0;
    return n;
}
