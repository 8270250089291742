/* serve_cache.h - the cells of finished requests, kept so that a later request beginning the
 * same way (a system prompt, a few-shot header, an earlier turn of the chat) shares them
 * instead of decoding its prefix again (docs/serve.md).
 *
 * An entry is a sequence of the context of its own (ids seq0 .. seq0+n-1, after the requests'
 * sequences) that sees the cells of a finished request: its prompt and generated tokens, bound
 * to the adapters that computed them. The binding is what a match compares (cells computed
 * under other adapters hold other K and V), and holding it keeps those adapters alive, so a
 * pointer compared is never one freed and reused. Nothing is copied: the entry shares the
 * cells (el_kv_seq_share). Entries go least recently used first whenever running work needs
 * their cells (serve_cache_fit), so the cache never delays or fails a request. */
#ifndef EL_CLI_SERVE_CACHE_H
#define EL_CLI_SERVE_CACHE_H

#include "cli.h"
#include "serve_request.h"

typedef struct serve_cache_entry {
    int32_t *tokens;      /* of its cells, at positions 0 .. n_tokens-1 */
    int32_t n_tokens;     /* 0: the entry is free */
    el_binding bind[SERVE_MAX_ADAPTERS];
    int32_t n_bind;
    uint64_t used;        /* the clock when it was stored or last matched */
} serve_cache_entry;

typedef struct serve_cache {
    el_context *ctx;
    serve_cache_entry *e; /* [n]; entry i is sequence seq0 + i */
    int32_t n, seq0;      /* n 0: the cache is off */
    uint64_t clock;
    int64_t evicted;      /* entries evicted for room (or for a newer one) */
} serve_cache;

/* Whether two adapter bindings are the same adapters at the same scales, in the same order. */
bool serve_same_bindings(const el_binding *a, int32_t na, const el_binding *b, int32_t nb);

/* An empty cache of n entries, sequences seq0 .. seq0+n-1 of ctx (which outlives it). */
el_status serve_cache_init(serve_cache *c, el_context *ctx, int32_t seq0, int32_t n);
/* Evicts every entry and frees the cache. */
void serve_cache_free(serve_cache *c);

/* Keeps positions [0, n) of sequence seq, tokens[0..n) computed under bind, as an entry (an
 * entry that is a prefix of it is dropped; if it is a prefix of an entry, that one is kept
 * instead). With every entry taken, the least recently used goes. A failure keeps nothing. */
void serve_cache_put(serve_cache *c, int32_t seq, const int32_t *tokens, int32_t n,
                     const el_binding *bind, int32_t n_bind);
/* The longest prefix of tokens[0..lim) an entry with the same binding holds (0: none), that
 * entry's sequence in *seq; the entry counts as used now. */
int32_t serve_cache_match(serve_cache *c, const int32_t *tokens, int32_t lim,
                          const el_binding *bind, int32_t n_bind, int32_t *seq);
/* The cells entries alone see (cells sequences below seq0 see too are not theirs to free). */
int32_t serve_cache_cells(const serve_cache *c);
/* Evicts entries, least recently used first, until the cells they alone hold are at most
 * room (the cells no running request has reserved). */
void serve_cache_fit(serve_cache *c, int32_t room);
/* Drops the entries bound to any of a[0..n), or with bound: to any adapter at all. */
void serve_cache_forget(serve_cache *c, const el_adapter *const *a, int32_t n, bool bound);
/* Drops every entry (the pruning rate changed: their cells were computed at the old one). */
void serve_cache_clear(serve_cache *c);
int32_t serve_cache_entries(const serve_cache *c);

#endif
