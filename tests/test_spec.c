/* test_spec.c - self-speculative decoding against plain decoding: the same tokens for every tree
 * shape, forecast set, sampler and adapter; the cache holds exactly the accepted tokens; forecast
 * files are refused for another model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelora.h"
#include "formats/gguf.h"
#include "model/model.h"
#include "runtime/context.h"
#include "runtime/forecast.h"
#include "testutil.h"

enum { MAXP = 64, MAXT = 200, N_BATCH = 64 };

static int32_t tokenize(el_model *m, const char *text, int32_t *out) {
    size_t n = 0;
    if (el_tokenize(m, text, strlen(text), true, false, out, MAXP, &n) != EL_OK) return -1;
    return (int32_t)n;
}

static el_context *new_ctx(el_model *m, int32_t n_ctx) {
    el_context_params cp = el_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = N_BATCH;
    cp.n_seq_max = 2;
    cp.n_threads = 1;
    el_context *ctx;
    return el_context_create(m, &cp, &ctx) == EL_OK ? ctx : NULL;
}

static el_sampler_params sampling(uint64_t seed) {
    el_sampler_params p = el_sampler_default_params();
    if (seed == 0) {
        p.temperature = 0.0f;
    } else {
        p.temperature = 1.0f;
        p.top_k = 0;
        p.top_p = 1.0f;
        p.min_p = 0.0f;
        p.seed = seed;
    }
    return p;
}

/* Plain decoding, one row per step: the reference. Returns the token count (< 0: failure). */
static int32_t plain_run(el_model *m, const int32_t *prompt, int32_t np, uint64_t seed,
                         el_adapter *ad, int32_t n, int32_t *out) {
    el_context *ctx = new_ctx(m, np + n + 1);
    el_sampler *smp = NULL;
    el_sampler_params sp = sampling(seed);
    el_model_info info;
    el_model_get_info(m, &info);
    if (!ctx || el_sampler_create(&sp, info.n_vocab, &smp) != EL_OK) return -1;
    el_binding b = {ad, 1.0f};
    int32_t pos[MAXP], seq[MAXP] = {0}, got = 0, t = -1;
    for (int32_t i = 0; i < np; i++) pos[i] = i;
    el_batch batch = {.n_rows = np, .token = prompt, .pos = pos, .seq_id = seq};
    bool ok = (!ad || el_context_bind(ctx, 0, &b, 1) == EL_OK) && el_decode(ctx, &batch) == EL_OK;
    ok = ok && el_sampler_sample(smp, el_get_logits(ctx, np - 1), &t) == EL_OK;
    while (ok && got < n) {
        out[got++] = t;
        el_sampler_accept(smp, t);
        if (el_token_is_eog(m, t) || got == n) break;
        int32_t p = np + got - 1;
        el_batch one = {.n_rows = 1, .token = &t, .pos = &p, .seq_id = seq};
        ok = el_decode(ctx, &one) == EL_OK &&
             el_sampler_sample(smp, el_get_logits(ctx, 0), &t) == EL_OK;
    }
    el_sampler_free(smp);
    el_context_free(ctx);
    return ok ? got : -1;
}

typedef struct spec_out {
    int32_t n;
    el_spec_stats stats;
    int32_t cells;      /* KV cells the sequence holds at the end */
} spec_out;

/* Speculative decoding of the prompt, whose first `cached` tokens are decoded plainly into the
 * cache before the speculation starts (as a conversation's earlier turns are), in a context of
 * n_ctx cells (0: room for every step's tree). */
static int spec_run_cached(el_model *m, const el_forecast *f, const el_spec_params *sp_tree,
                           const int32_t *prompt, int32_t np, int32_t cached, int32_t n_ctx,
                           uint64_t seed, el_adapter *ad, int32_t n, int32_t *out,
                           spec_out *res) {
    el_context *ctx = new_ctx(m, n_ctx ? n_ctx : np + n + N_BATCH + 1);
    el_sampler *smp = NULL;
    el_sampler_params sp = sampling(seed);
    el_model_info info;
    el_model_get_info(m, &info);
    if (!ctx || el_sampler_create(&sp, info.n_vocab, &smp) != EL_OK) return 0;
    el_binding b = {ad, 1.0f};
    el_spec *s = NULL;
    int32_t got = 0, first, pos[MAXP], seq[MAXP] = {0};
    for (int32_t i = 0; i < cached; i++) pos[i] = i;
    el_batch pre = {.n_rows = cached, .token = prompt, .pos = pos, .seq_id = seq};
    bool ok = (!ad || el_context_bind(ctx, 0, &b, 1) == EL_OK) &&
              (cached == 0 || el_decode(ctx, &pre) == EL_OK) &&
              el_spec_create(ctx, f, smp, sp_tree, &s) == EL_OK &&
              el_spec_start(s, prompt, np, &first) == EL_OK;
    if (ok) out[got++] = first;
    while (ok && got < n && !el_token_is_eog(m, out[got - 1])) {
        int32_t k = 0;
        ok = el_spec_step(s, out + got, n - got, &k) == EL_OK && k >= 1;
        got += k;
    }
    res->n = got;
    ok = ok && el_spec_get_stats(s, &res->stats) == EL_OK;
    res->cells = el_kv_used_cells(ctx);
    el_spec_free(s);
    el_sampler_free(smp);
    el_context_free(ctx);
    return ok;
}

static int spec_run(el_model *m, const el_forecast *f, const el_spec_params *sp_tree,
                    const int32_t *prompt, int32_t np, uint64_t seed, el_adapter *ad, int32_t n,
                    int32_t *out, spec_out *res) {
    return spec_run_cached(m, f, sp_tree, prompt, np, 0, 0, seed, ad, n, out, res);
}

static el_forecast *random_forecast(el_model *m, int32_t slots, uint64_t seed, float amp) {
    el_model_info info;
    el_model_get_info(m, &info);
    size_t n = (size_t)slots * info.n_embd;
    float *v = malloc(n * sizeof *v);
    test_rng rng = {seed};
    for (size_t i = 0; v && i < n; i++) v[i] = test_rand_uniform(&rng, -amp, amp);
    el_forecast *f = NULL;
    if (v && el_forecast_create(m, slots, v, &f) != EL_OK) f = NULL;
    free(v);
    return f;
}

static el_spec_params tree(int32_t depth, const int32_t *width) {
    el_spec_params p = {.seq_id = 0, .n_depth = depth};
    for (int32_t d = 0; d < depth; d++) p.width[d] = width[d];
    return p;
}

/* The tokens are plain decoding's, for each tree shape and prompt; the cache holds the prompt
 * and the generated tokens but the last (pending) one; some candidates are accepted (the walk is
 * exercised). */
static int test_greedy_identical(void) {
    el_model *m = test_load_stories();
    if (!m) return test_skip("stories260K is absent");
    static const char *prompts[] = {"Once upon a time", "The cat sat", "Lily and Ben went to the"};
    static const int32_t w1[] = {1}, w421[] = {4, 2, 1}, w333[] = {3, 3, 3}, w8[] = {8, 1};
    el_spec_params trees[] = {tree(0, NULL), tree(1, w1), tree(3, w421), tree(3, w333),
                              tree(2, w8), {.seq_id = 0, .tree_auto = true}};
    el_forecast *f = random_forecast(m, 3, 7, 0.5f);
    CHECK(f);
    int64_t accepted = 0;
    for (size_t ip = 0; ip < sizeof prompts / sizeof prompts[0]; ip++) {
        int32_t prompt[MAXP], np = tokenize(m, prompts[ip], prompt);
        int32_t ref[MAXT], got[MAXT];
        int32_t nref = plain_run(m, prompt, np, 0, NULL, 120, ref);
        CHECK(nref > 10);
        for (size_t it = 0; it < sizeof trees / sizeof trees[0]; it++) {
            spec_out r;
            CHECK(spec_run(m, f, &trees[it], prompt, np, 0, NULL, 120, got, &r));
            if (r.n != nref || memcmp(got, ref, (size_t)nref * sizeof *ref) != 0) {
                test_note("prompt %zu tree %zu: %d tokens vs %d, differ", ip, it, r.n, nref);
                return TEST_FAIL;
            }
            CHECK(r.cells == np + r.n - 1);
            accepted += r.stats.tokens - r.stats.steps;
        }
    }
    test_note("%lld candidate tokens accepted in all", (long long)accepted);
    CHECK(accepted > 0);
    el_forecast_free(f);
    el_model_free(m);
    return TEST_PASS;
}

/* A prompt whose first tokens the cache holds already decodes only the rest, and gives the
 * tokens of the whole prompt decoded plainly, greedy and sampled; so does a cache with no room
 * for trees at the end; a prompt the cache holds whole is refused and the cache stays as it
 * was. */
static int test_cached_prefix(void) {
    el_model *m = test_load_stories();
    if (!m) return test_skip("stories260K is absent");
    static const int32_t w421[] = {4, 2, 1};
    el_spec_params trees[] = {tree(3, w421), {.seq_id = 0, .tree_auto = true}};
    el_forecast *f = random_forecast(m, 3, 7, 0.5f);
    int32_t prompt[MAXP], np = tokenize(m, "Lily and Ben went to the park with", prompt);
    CHECK(f && np > 6);
    for (uint64_t seed = 0; seed < 3; seed++) {
        int32_t ref[MAXT], got[MAXT];
        int32_t nref = plain_run(m, prompt, np, seed, NULL, 60, ref);
        CHECK(nref > 10);
        for (int32_t k = 1; k < np; k += 2) {
            spec_out r;
            CHECK(spec_run_cached(m, f, &trees[k % 2], prompt, np, k, 0, seed, NULL, 60, got,
                                  &r));
            if (r.n != nref || memcmp(got, ref, (size_t)nref * sizeof *ref) != 0) {
                test_note("seed %llu, %d cached: %d tokens vs %d, differ",
                          (unsigned long long)seed, k, r.n, nref);
                return TEST_FAIL;
            }
            CHECK(r.cells == np + r.n - 1);
        }
    }
    /* a context as small as plain decoding needs: the last steps find no room for a tree */
    for (int32_t extra = 0; extra < 4; extra++) {
        int32_t ref[MAXT], got[MAXT];
        int32_t nref = plain_run(m, prompt, np, 0, NULL, 60, ref);
        spec_out r;
        CHECK(spec_run_cached(m, f, &trees[0], prompt, np, 0, np + nref + extra, 0, NULL, 60,
                              got, &r));
        CHECK(r.n == nref && memcmp(got, ref, (size_t)nref * sizeof *ref) == 0);
    }
    el_context *ctx = new_ctx(m, np + N_BATCH + 1);
    el_sampler *smp = NULL;
    el_sampler_params sp = sampling(0);
    el_model_info info;
    el_model_get_info(m, &info);
    CHECK(ctx && el_sampler_create(&sp, info.n_vocab, &smp) == EL_OK);
    int32_t pos[MAXP], seq[MAXP] = {0}, first;
    for (int32_t i = 0; i < np; i++) pos[i] = i;
    el_batch all = {.n_rows = np, .token = prompt, .pos = pos, .seq_id = seq};
    el_spec *s = NULL;
    CHECK(el_decode(ctx, &all) == EL_OK && el_spec_create(ctx, f, smp, &trees[0], &s) == EL_OK);
    CHECK(el_spec_start(s, prompt, np, &first) == EL_ERR_INVALID_ARG);
    CHECK(strstr(el_last_error(), "at least its last token"));
    CHECK(el_kv_used_cells(ctx) == np && el_kv_seq_pos_max(ctx, 0) == np - 1);
    el_spec_free(s);
    el_sampler_free(smp);
    el_context_free(ctx);
    el_forecast_free(f);
    el_model_free(m);
    return TEST_PASS;
}

/* With a sampler, the same seed gives plain decoding's draws exactly, with and without an
 * adapter-free tree; and over many seeds the distribution of a later token matches plain
 * sampling's (chi-square on independent seeds). */
static int test_sampling(void) {
    el_model *m = test_load_stories();
    if (!m) return test_skip("stories260K is absent");
    static const int32_t w[] = {4, 2, 1};
    el_spec_params tp = tree(3, w);
    el_forecast *f = random_forecast(m, 3, 9, 0.5f);
    int32_t prompt[MAXP], np = tokenize(m, "Once upon a time", prompt);
    CHECK(f && np > 0);
    for (uint64_t seed = 1; seed <= 5; seed++) {
        int32_t ref[MAXT], got[MAXT];
        spec_out r;
        int32_t nref = plain_run(m, prompt, np, seed, NULL, 60, ref);
        CHECK(nref > 0 && spec_run(m, f, &tp, prompt, np, seed, NULL, 60, got, &r));
        CHECK(r.n == nref && memcmp(got, ref, (size_t)nref * sizeof *ref) == 0);
    }
    /* the 4th generated token over 300 seeds each: plain on seeds 1000.., speculative on 5000.. */
    enum { DRAWS = 300, POS = 3 };
    int32_t *cp = calloc(512, sizeof *cp), *cs = calloc(512, sizeof *cs);
    CHECK(cp && cs);
    for (int i = 0; i < DRAWS; i++) {
        int32_t a[MAXT], b[MAXT];
        spec_out r;
        CHECK(plain_run(m, prompt, np, 1000 + i, NULL, POS + 1, a) == POS + 1);
        CHECK(spec_run(m, f, &tp, prompt, np, 5000 + i, NULL, POS + 1, b, &r) && r.n == POS + 1);
        cp[a[POS]]++, cs[b[POS]]++;
    }
    /* pool tokens seen fewer than 5 times in total into one bin */
    double chi = 0, pooled_p = 0, pooled_s = 0;
    int bins = 0;
    for (int t = 0; t < 512; t++) {
        if (cp[t] + cs[t] < 10) {
            pooled_p += cp[t], pooled_s += cs[t];
            continue;
        }
        chi += (double)(cp[t] - cs[t]) * (cp[t] - cs[t]) / (cp[t] + cs[t]);
        bins++;
    }
    if (pooled_p + pooled_s > 0) {
        chi += (pooled_p - pooled_s) * (pooled_p - pooled_s) / (pooled_p + pooled_s);
        bins++;
    }
    /* two-sample chi-square with bins-1 degrees of freedom: the 0.999 quantile is below
     * df + 3.1 sqrt(2 df) + 10 for the df seen here */
    double df = bins - 1, limit = df + 3.1 * sqrt(2 * df) + 10;
    test_note("chi-square %.1f over %d bins (limit %.1f)", chi, bins, limit);
    CHECK(bins >= 3 && chi < limit);
    free(cp);
    free(cs);
    el_forecast_free(f);
    el_model_free(m);
    return TEST_PASS;
}

/* A rank-4 LoRA on attn_v of every block of stories260K. */
static int write_adapter(const char *path, uint64_t seed) {
    enum { RANK = 4, N_LAYER = 5, N_IN = 64, N_OUT = 32 };
    float a[N_IN * RANK], b[N_OUT * RANK];
    test_rng rng = {seed};
    gguf_writer *w = gguf_writer_create();
    int ok = w && gguf_writer_set_str(w, "general.architecture", "llama") == EL_OK &&
             gguf_writer_set_str(w, "general.type", "adapter") == EL_OK &&
             gguf_writer_set_str(w, "adapter.type", "lora") == EL_OK &&
             gguf_writer_set_f32(w, "adapter.lora.alpha", 4.0f) == EL_OK;
    for (int il = 0; il < N_LAYER && ok; il++) {
        for (int i = 0; i < N_IN * RANK; i++) a[i] = test_rand_uniform(&rng, -0.5f, 0.5f);
        for (int i = 0; i < N_OUT * RANK; i++) b[i] = test_rand_uniform(&rng, -0.5f, 0.5f);
        char name[64];
        int64_t ne_a[2] = {N_IN, RANK}, ne_b[2] = {RANK, N_OUT};
        snprintf(name, sizeof name, "blk.%d.attn_v.weight.lora_a", il);
        ok &= gguf_writer_add_tensor(w, name, EL_TYPE_F32, 2, ne_a, a, sizeof a) == EL_OK;
        snprintf(name, sizeof name, "blk.%d.attn_v.weight.lora_b", il);
        ok &= gguf_writer_add_tensor(w, name, EL_TYPE_F32, 2, ne_b, b, sizeof b) == EL_OK;
    }
    ok = ok && gguf_writer_write(w, path) == EL_OK;
    gguf_writer_free(w);
    return ok;
}

/* With an adapter bound, the tokens are plain decoding's with that adapter (which differ from
 * the base's). */
static int test_with_adapter(void) {
    el_model *m = test_load_stories();
    if (!m) return test_skip("stories260K is absent");
    char path[512];
    snprintf(path, sizeof path, "%s/style.gguf", test_tmp_dir());
    el_adapter *ad;
    CHECK(write_adapter(path, 5) && el_adapter_load(m, path, &ad) == EL_OK);
    static const int32_t w[] = {3, 2};
    el_spec_params tp = tree(2, w);
    el_forecast *f = random_forecast(m, 2, 3, 0.5f);
    int32_t prompt[MAXP], np = tokenize(m, "Once upon a time", prompt);
    int32_t ref[MAXT], base[MAXT], got[MAXT];
    spec_out r;
    int32_t nref = plain_run(m, prompt, np, 0, ad, 80, ref);
    int32_t nbase = plain_run(m, prompt, np, 0, NULL, 80, base);
    CHECK(f && nref > 0 && nbase > 0);
    CHECK(nref != nbase || memcmp(ref, base, (size_t)nref * sizeof *ref) != 0);
    CHECK(spec_run(m, f, &tp, prompt, np, 0, ad, 80, got, &r));
    CHECK(r.n == nref && memcmp(got, ref, (size_t)nref * sizeof *ref) == 0);
    el_forecast_free(f);
    el_adapter_free(ad);
    el_model_free(m);
    return TEST_PASS;
}

/* Two sequences in one batch, each with its own tree (and the second with an adapter), through
 * el_spec_next_rows / el_spec_accept: each gives its plain run's tokens. */
static int test_two_sequences(void) {
    el_model *m = test_load_stories();
    if (!m) return test_skip("stories260K is absent");
    char path[512];
    snprintf(path, sizeof path, "%s/two.gguf", test_tmp_dir());
    el_adapter *ad;
    CHECK(write_adapter(path, 8) && el_adapter_load(m, path, &ad) == EL_OK);
    el_forecast *f = random_forecast(m, 2, 4, 0.5f);
    static const int32_t wa[] = {2, 1}, wb[] = {3, 2};
    el_spec_params pa = tree(2, wa), pb = tree(2, wb);
    pb.seq_id = 1;
    int32_t p0[MAXP], p1[MAXP], n0 = tokenize(m, "Once upon a time", p0),
                                n1 = tokenize(m, "The little dog", p1);
    enum { N = 60 };
    int32_t ref0[MAXT], ref1[MAXT], got0[MAXT], got1[MAXT];
    CHECK(f && plain_run(m, p0, n0, 0, NULL, N, ref0) == N && plain_run(m, p1, n1, 0, ad, N, ref1) == N);
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 512, cp.n_batch = 128, cp.n_seq_max = 2, cp.n_threads = 1;
    el_context *ctx;
    el_sampler *s0, *s1;
    el_sampler_params gp = sampling(0);
    el_binding b = {ad, 1.0f};
    el_spec *a = NULL, *c = NULL;
    CHECK(el_context_create(m, &cp, &ctx) == EL_OK && el_context_bind(ctx, 1, &b, 1) == EL_OK);
    CHECK(el_sampler_create(&gp, 512, &s0) == EL_OK && el_sampler_create(&gp, 512, &s1) == EL_OK);
    CHECK(el_spec_create(ctx, f, s0, &pa, &a) == EL_OK && el_spec_create(ctx, f, s1, &pb, &c) == EL_OK);
    CHECK(el_spec_start(a, p0, n0, &got0[0]) == EL_OK && el_spec_start(c, p1, n1, &got1[0]) == EL_OK);
    int32_t g0 = 1, g1 = 1, tok[128], pos[128], seq[128], par[128];
    int8_t want[128];
    float *embd = calloc(128 * 64, sizeof *embd);
    CHECK(embd);
    while (g0 < N || g1 < N) {
        int32_t na = g0 < N ? el_spec_next_rows(a, 0, 128, tok, embd, pos, seq, par, want) : 0;
        int32_t nc = g1 < N ? el_spec_next_rows(c, na, 128, tok, embd, pos, seq, par, want) : 0;
        CHECK(na + nc > 0);
        el_batch batch = {.n_rows = na + nc, .token = tok, .embd = embd, .pos = pos,
                          .seq_id = seq, .parent = par, .logits = want};
        CHECK(el_decode(ctx, &batch) == EL_OK);
        int32_t k = 0;
        if (na) {
            CHECK(el_spec_accept(a, 0, got0 + g0, N - g0, &k) == EL_OK);
            g0 += k;
        }
        if (nc) {
            CHECK(el_spec_accept(c, na, got1 + g1, N - g1, &k) == EL_OK);
            g1 += k;
        }
    }
    CHECK(memcmp(got0, ref0, sizeof(int32_t) * N) == 0 && memcmp(got1, ref1, sizeof(int32_t) * N) == 0);
    /* each sequence holds its prompt and its tokens but the pending one */
    CHECK(el_kv_used_cells(ctx) == n0 + N - 1 + n1 + N - 1);
    free(embd);
    el_spec_free(a);
    el_spec_free(c);
    el_sampler_free(s0);
    el_sampler_free(s1);
    el_context_free(ctx);
    el_forecast_free(f);
    el_adapter_free(ad);
    el_model_free(m);
    return TEST_PASS;
}

/* --tree auto's step times belong to the context: the first decoder on it times its steps, a
 * later one takes those times (no calibration: the timed sizes keep their values); where the
 * times say that no tree can pay, the start drafts nothing and the first step is plain, and where
 * rows cost nothing extra, the first step is a tree. The tokens stay plain decoding's. */
static int test_step_times_kept(void) {
    el_model *m = test_load_stories();
    if (!m) return test_skip("stories260K is absent");
    el_forecast *f = random_forecast(m, 3, 7, 0.5f);
    int32_t prompt[MAXP], np = tokenize(m, "Lily and Ben went to the park with", prompt);
    CHECK(f && np > 6); /* its rows (with or without slots) are no timed size below */
    int32_t ref[MAXT];
    int32_t nref = plain_run(m, prompt, np, 0, NULL, 40, ref);
    CHECK(nref == 40);
    el_model_info info;
    el_model_get_info(m, &info);
    el_sampler_params gp = sampling(0);
    el_sampler *smp = NULL;
    CHECK(el_sampler_create(&gp, info.n_vocab, &smp) == EL_OK);
    el_context *ctx = new_ctx(m, np + 40 + N_BATCH + 1);
    CHECK(ctx && ctx->spec_seconds[1] == 0);
    el_spec_params ap = {.seq_id = 0, .tree_auto = true};
    /* 0: a fresh context (times measured), 1: the times of 0 kept, 2: compute-bound times (a
     * step of n rows n times one), 3: memory-bound ones (every size as one) */
    double kept[EL_SPEC_TIME_BUCKETS];
    for (int round = 0; round < 4; round++) {
        el_kv_clear(ctx);
        if (round >= 2)
            for (int32_t n = 1; n < EL_SPEC_TIME_BUCKETS; n++)
                ctx->spec_seconds[n] = round == 2 ? n * 1e-3 : 1e-3;
        memcpy(kept, ctx->spec_seconds, sizeof kept);
        el_spec *s = NULL;
        int32_t out[MAXT], got = 0, first;
        CHECK(el_spec_create(ctx, f, smp, &ap, &s) == EL_OK);
        CHECK(el_spec_start(s, prompt, np, &first) == EL_OK);
        if (round == 0) CHECK(ctx->spec_seconds[1] > 0 && ctx->spec_seconds[2] > 0);
        else CHECK(ctx->spec_seconds[2] == kept[2] && ctx->spec_seconds[4] == kept[4]);
        /* the start's decode times its rows: the prompt and 3 slots, or the prompt alone */
        if (round == 2) CHECK(ctx->spec_seconds[np + 3] == kept[np + 3]);
        if (round == 3) CHECK(ctx->spec_seconds[np + 3] != kept[np + 3]);
        out[got++] = first;
        el_spec_step_info step;
        for (int i = 0; got < 40; i++) {
            int32_t k = 0;
            CHECK(el_spec_step(s, out + got, 40 - got, &k) == EL_OK && k >= 1);
            got += k;
            CHECK(el_spec_last_step(s, &step) == EL_OK);
            if (i == 0 && round == 2) CHECK(step.n_depth == 0 && !step.slots && step.n_rows == 1);
            if (i == 0 && round == 3) CHECK(step.n_depth > 0);
        }
        CHECK(memcmp(out, ref, sizeof ref[0] * 40) == 0);
        el_spec_free(s);
    }
    el_sampler_free(smp);
    el_context_free(ctx);
    el_forecast_free(f);
    el_model_free(m);
    return TEST_PASS;
}

/* el_kv_remove_rows frees exactly the rows named, and only right after the decode. */
static int test_remove_rows(void) {
    el_model *m = test_load_stories();
    if (!m) return test_skip("stories260K is absent");
    el_context *ctx = new_ctx(m, 32);
    int32_t tok[4] = {1, 2, 3, 4}, pos[4] = {0, 1, 1, 2}, seq[4] = {0}, par[4] = {-1, 0, 0, 1};
    el_batch b = {.n_rows = 4, .token = tok, .pos = pos, .seq_id = seq, .parent = par};
    CHECK(ctx && el_decode(ctx, &b) == EL_OK && el_kv_used_cells(ctx) == 4);
    int32_t drop[2] = {2, 5};
    CHECK(el_kv_remove_rows(ctx, drop, 2) == EL_ERR_INVALID_ARG); /* row 5 is not a row */
    CHECK(el_kv_used_cells(ctx) == 4);
    CHECK(el_kv_remove_rows(ctx, drop, 1) == EL_OK && el_kv_used_cells(ctx) == 3);
    CHECK(el_kv_remove_rows(ctx, drop, 1) == EL_OK && el_kv_used_cells(ctx) == 3); /* again */
    CHECK(el_kv_seq_pos_max(ctx, 0) == 2);
    CHECK(el_kv_seq_remove(ctx, 0, 2, -1) == EL_OK);
    CHECK(el_kv_remove_rows(ctx, drop, 1) == EL_ERR_INVALID_ARG); /* the cache changed */
    el_context_free(ctx);
    el_model_free(m);
    return TEST_PASS;
}

/* A forecast file loads for its model and is refused for another, damaged or of the wrong kind. */
static int write_forecast(const char *path, const el_model *m, uint64_t fp, int32_t slots,
                          float value) {
    size_t n = (size_t)slots * m->hp.n_embd;
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; v && i < n; i++) v[i] = value;
    gguf_writer *w = gguf_writer_create();
    int64_t ne[2] = {m->hp.n_embd, slots};
    int ok = v && w && gguf_writer_set_str(w, "general.architecture", m->arch) == EL_OK &&
             gguf_writer_set_str(w, "general.type", "forecast") == EL_OK &&
             gguf_writer_set_u32(w, "forecast.n_slots", (uint32_t)slots) == EL_OK &&
             gguf_writer_set_u64(w, "forecast.base.fingerprint", fp) == EL_OK &&
             gguf_writer_set_str(w, "forecast.base.name", "stories260K") == EL_OK &&
             gguf_writer_add_tensor(w, EL_FORECAST_TENSOR, EL_TYPE_F32, 2, ne, v,
                                    n * sizeof *v) == EL_OK &&
             gguf_writer_write(w, path) == EL_OK;
    gguf_writer_free(w);
    free(v);
    return ok;
}

static int test_forecast_files(void) {
    el_model *m = test_load_stories();
    if (!m) return test_skip("stories260K is absent");
    char path[512];
    snprintf(path, sizeof path, "%s/f.gguf", test_tmp_dir());
    uint64_t fp = el_model_fingerprint(m);
    el_forecast *f = NULL;
    CHECK(write_forecast(path, m, fp, 3, 0.25f) && el_forecast_load(m, path, &f) == EL_OK);
    CHECK(el_forecast_n_slots(f) == 3 && f->vectors[5] == 0.25f);
    el_forecast_free(f);
    CHECK(write_forecast(path, m, fp ^ 1, 3, 0.25f));
    CHECK(el_forecast_load(m, path, &f) == EL_ERR_MISMATCH && !f);
    CHECK(strstr(el_last_error(), "another model"));
    CHECK(write_forecast(path, m, fp, 3, NAN) && el_forecast_load(m, path, &f) == EL_ERR_FORMAT);
    CHECK(write_forecast(path, m, fp, 0, 0.f) && el_forecast_load(m, path, &f) == EL_ERR_FORMAT);
    const char *stories = test_data_path("models/stories260K.bin");
    CHECK(el_forecast_load(m, stories, &f) != EL_OK && !f);
    /* a tree deeper than the set, or wider than allowed */
    el_context *ctx = new_ctx(m, 64);
    el_forecast *r = random_forecast(m, 2, 1, 0.1f);
    el_sampler *smp;
    el_sampler_params sp = sampling(0);
    el_spec *s = NULL;
    static const int32_t deep[] = {1, 1, 1}, wide[] = {9};
    el_spec_params p3 = tree(3, deep), pw = tree(1, wide);
    CHECK(ctx && r && el_sampler_create(&sp, 512, &smp) == EL_OK);
    CHECK(el_spec_create(ctx, r, smp, &p3, &s) == EL_ERR_INVALID_ARG && !s);
    CHECK(el_spec_create(ctx, r, smp, &pw, &s) == EL_ERR_INVALID_ARG && !s);
    el_sampler_free(smp);
    el_forecast_free(r);
    el_context_free(ctx);
    el_model_free(m);
    return TEST_PASS;
}

int main(void) {
    run_test("remove_rows", test_remove_rows);
    run_test("greedy_identical", test_greedy_identical);
    run_test("sampling", test_sampling);
    run_test("cached_prefix", test_cached_prefix);
    run_test("step_times_kept", test_step_times_kept);
    run_test("with_adapter", test_with_adapter);
    run_test("two_sequences", test_two_sequences);
    run_test("forecast_files", test_forecast_files);
    return tests_exit_code();
}
