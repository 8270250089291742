/* test_serve_cache.c - the prefix cache of `edgelora serve` (cli/serve_cache.c) on a real
 * context: which entry a prompt matches, what a newer entry replaces, least recently used
 * eviction, the cells entries alone hold, and that a prefix shared from an entry gives the
 * logits decoding the whole prompt gives (the plain path). Expected values are worked out by
 * hand in the comments. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cli/serve_cache.h"
#include "testutil.h"

enum { N_RUN = 2, N_ENTRIES = 3, N_CTX = 64 };

static el_context *new_context(el_model *m) {
    el_context_params cp = el_context_default_params();
    cp.n_ctx = N_CTX;
    cp.n_batch = N_CTX;
    cp.n_seq_max = N_RUN + N_ENTRIES;
    cp.n_threads = 1;
    cp.kv_type = EL_KV_F32;
    el_context *ctx = NULL;
    return el_context_create(m, &cp, &ctx) == EL_OK ? ctx : NULL;
}

/* Decodes tok[from..n) into seq at positions from..n-1, the last row's logits asked for. */
static el_status feed(el_context *ctx, int32_t seq, const int32_t *tok, int32_t from, int32_t n) {
    int32_t pos[N_CTX], sid[N_CTX];
    int8_t want[N_CTX] = {0};
    for (int32_t i = from; i < n; i++) pos[i - from] = i, sid[i - from] = seq;
    want[n - from - 1] = 1;
    el_batch b = {.n_rows = n - from, .token = tok + from, .pos = pos, .seq_id = sid,
                  .logits = want};
    return el_decode(ctx, &b);
}

/* A "request" in sequence 0: decodes tok[0..n), keeps it as an entry, frees sequence 0. */
static el_status finish(serve_cache *c, const int32_t *tok, int32_t n) {
    el_status st = feed(c->ctx, 0, tok, 0, n);
    if (st) return st;
    serve_cache_put(c, 0, tok, n, NULL, 0);
    return el_kv_seq_remove(c->ctx, 0, 0, -1);
}

static const int32_t A[] = {1, 10, 11, 12, 13, 14, 15, 16};     /* 8 tokens */
static const int32_t A4[] = {1, 10, 11, 12};                    /* A's first 4 */
static const int32_t B[] = {1, 20, 21, 22, 23, 24};             /* 6 */
static const int32_t C[] = {1, 30, 31, 32, 33};                 /* 5 */
static const int32_t D[] = {1, 40, 41, 42, 43, 44, 45};         /* 7 */

static int test_match_replace_evict(void) {
    el_model *m = test_load_stories();
    if (!m) return test_skip("stories260K is absent");
    el_context *ctx = new_context(m);
    CHECK(ctx);
    serve_cache c;
    CHECK(serve_cache_init(&c, ctx, N_RUN, N_ENTRIES) == EL_OK);
    /* A4 then A: A4 is a prefix of A, so A replaces it: one entry of 8 cells */
    CHECK(finish(&c, A4, 4) == EL_OK && finish(&c, A, 8) == EL_OK);
    CHECK(serve_cache_entries(&c) == 1 && serve_cache_cells(&c) == 8);
    /* A4 again adds nothing (A holds it) */
    CHECK(finish(&c, A4, 4) == EL_OK);
    CHECK(serve_cache_entries(&c) == 1 && el_kv_used_cells(ctx) == 8);
    CHECK(finish(&c, B, 6) == EL_OK && finish(&c, C, 5) == EL_OK);
    CHECK(serve_cache_entries(&c) == 3 && serve_cache_cells(&c) == 8 + 6 + 5);
    /* a prompt 1 10 11 99: A's first 3 tokens; 1 20 21 22 23 24 (lim 5): B's first 5 */
    int32_t q[] = {1, 10, 11, 99}, seq = -1;
    CHECK(serve_cache_match(&c, q, 4, NULL, 0, &seq) == 3 && seq == N_RUN + 0);
    CHECK(serve_cache_match(&c, B, 5, NULL, 0, &seq) == 5 && seq == N_RUN + 1);
    /* another binding matches nothing */
    el_binding other = {.adapter = (el_adapter *)&other, .scale = 1};
    CHECK(serve_cache_match(&c, B, 5, &other, 1, &seq) == 0);
    /* used order now (oldest first): C (stored), A (matched), B (matched): D evicts C */
    CHECK(finish(&c, D, 7) == EL_OK);
    CHECK(serve_cache_entries(&c) == 3 && c.evicted == 1);
    /* C is gone: only its BOS matches, A's (the first entry with it), which A's use makes the
     * most recent: B, D, A */
    CHECK(serve_cache_match(&c, C, 4, NULL, 0, &seq) == 1 && seq == N_RUN + 0);
    CHECK(serve_cache_cells(&c) == 8 + 6 + 7);
    /* a running sequence 1 shares A's 8 cells: they are its, no longer the entries' alone */
    CHECK(el_kv_seq_share(ctx, N_RUN + 0, 1, 0, 8) == EL_OK);
    CHECK(serve_cache_cells(&c) == 6 + 7 && el_kv_used_cells(ctx) == 21);
    /* room for 7: B goes (the least recently used), leaving D's 7 */
    serve_cache_fit(&c, 7);
    CHECK(serve_cache_entries(&c) == 2 && serve_cache_cells(&c) == 7 && c.evicted == 2);
    CHECK(serve_cache_match(&c, B, 5, NULL, 0, &seq) == 1);
    CHECK(serve_cache_match(&c, D, 6, NULL, 0, &seq) == 6 && seq == N_RUN + 2);
    /* room for none: now A (matched for B's BOS before D) goes first, freeing nothing (sequence
     * 1 sees its cells), then D; A's cells stay */
    serve_cache_fit(&c, 0);
    CHECK(serve_cache_entries(&c) == 0 && c.evicted == 4 && el_kv_used_cells(ctx) == 8);
    serve_cache_free(&c);
    el_context_free(ctx);
    el_model_free(m);
    return TEST_PASS;
}

/* The logits after a prompt whose first tokens were shared from an entry equal those of the
 * whole prompt decoded in a fresh context. */
static int test_shared_logits(void) {
    el_model *m = test_load_stories();
    if (!m) return test_skip("stories260K is absent");
    el_context *ctx = new_context(m), *plain = new_context(m);
    CHECK(ctx && plain);
    serve_cache c;
    CHECK(serve_cache_init(&c, ctx, N_RUN, N_ENTRIES) == EL_OK);
    CHECK(finish(&c, A, 8) == EL_OK);
    const int32_t p[] = {1, 10, 11, 12, 13, 50, 51}; /* A's first 5, then its own */
    int32_t seq = -1, n = serve_cache_match(&c, p, 6, NULL, 0, &seq);
    CHECK(n == 5);
    CHECK(el_kv_seq_share(ctx, seq, 1, 0, n) == EL_OK && feed(ctx, 1, p, n, 7) == EL_OK);
    CHECK(feed(plain, 0, p, 0, 7) == EL_OK);
    el_model_info info;
    el_model_get_info(m, &info);
    const float *got = el_get_logits(ctx, 7 - n - 1), *want = el_get_logits(plain, 6);
    CHECK(got && want);
    double err = test_max_rel_err(got, want, (size_t)info.n_vocab);
    if (err > 1e-5) test_note("max relative error %g", err);
    CHECK(err <= 1e-5);
    serve_cache_free(&c);
    el_context_free(ctx);
    el_context_free(plain);
    el_model_free(m);
    return TEST_PASS;
}

int main(void) {
    run_test("match_replace_evict", test_match_replace_evict);
    run_test("shared_logits", test_shared_logits);
    return tests_exit_code();
}
