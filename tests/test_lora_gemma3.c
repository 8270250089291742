/* test_lora_gemma3.c - LoRA adapters on a gemma3 base against independent references.
 *
 * The base is tests/golden/gemma3_f32_swa.gguf (its own logits are checked against NumPy in
 * test_model_golden.c): per-head Q/K norms, post norms, GeGLU, and a window of 3 positions in
 * layers 0 and 1, which the 12-token prompt here overruns, so adapter terms meet every gemma3
 * feature, the window included.
 *  - Runtime == merged: an adapter on all seven linears bound at run time gives the logits of
 *    the model el_merge_adapters wrote (W + s B A in plain float loops), and the same greedy text.
 *  - A batch of three sequences (adapter, none, the adapter at another scale), rows interleaved,
 *    in chunks of 5 rows that cut the groups of rows sharing a binding, gives each row the
 *    logits of its sequence run alone.
 *  - Concurrent variants over one shared prompt, one bound to the adapter and one bare, give the
 *    tokens of a single sequence that decodes the prompt bare and then binds the adapter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelora.h"
#include "edgelora-tools.h"
#include "formats/gguf.h"
#include "model/model.h"
#include "testutil.h"

#define BASE "tests/golden/gemma3_f32_swa.gguf"

enum { PROMPT = 12, RANK = 4, MAX_VOCAB = 512 };
static const int32_t prompt_tokens[PROMPT] = {1, 17, 42, 5, 88, 63, 30, 250, 7, 199, 64, 12};

/* A rank-RANK F32 adapter on every linear of every block of m, random A and B. */
static int write_adapter(const el_model *m, const char *path, uint64_t seed) {
    gguf_writer *w = gguf_writer_create();
    int ok = w && gguf_writer_set_str(w, "general.architecture", "gemma3") == EL_OK &&
             gguf_writer_set_str(w, "general.type", "adapter") == EL_OK &&
             gguf_writer_set_str(w, "adapter.type", "lora") == EL_OK &&
             gguf_writer_set_f32(w, "adapter.lora.alpha", 8.0f) == EL_OK;
    test_rng rng = {seed};
    float *keep[2 * 7 * 8] = {0};
    int n_keep = 0;
    for (int il = 0; ok && il < m->hp.n_layer && il < 8; il++)
        for (el_linear l = EL_LINEAR_Q; ok && l <= EL_LINEAR_DOWN; l++) {
            const el_weight *wt = el_layer_weight(&m->layers[il], l);
            int64_t in = wt->n_in, out = wt->n_out, ne_a[2] = {in, RANK}, ne_b[2] = {RANK, out};
            float *a = malloc(sizeof(float) * RANK * in), *b = malloc(sizeof(float) * RANK * out);
            keep[n_keep++] = a;
            keep[n_keep++] = b;
            ok = a && b;
            for (int64_t i = 0; ok && i < RANK * in; i++) a[i] = test_rand_uniform(&rng, -0.3f, 0.3f);
            for (int64_t i = 0; ok && i < RANK * out; i++) b[i] = test_rand_uniform(&rng, -0.3f, 0.3f);
            char name[96];
            const char *suffix = el_linear_tensor_suffix(l);
            snprintf(name, sizeof name, "blk.%d.%s.lora_a", il, suffix);
            ok = ok && gguf_writer_add_tensor(w, name, EL_TYPE_F32, 2, ne_a, a,
                                              (uint64_t)(RANK * in) * 4) == EL_OK;
            snprintf(name, sizeof name, "blk.%d.%s.lora_b", il, suffix);
            ok = ok && gguf_writer_add_tensor(w, name, EL_TYPE_F32, 2, ne_b, b,
                                              (uint64_t)(RANK * out) * 4) == EL_OK;
        }
    ok = ok && gguf_writer_write(w, path) == EL_OK;
    gguf_writer_free(w);
    for (int i = 0; i < n_keep; i++) free(keep[i]);
    return ok;
}

static el_context *new_ctx(el_model *m, int n_seq, int n_ubatch) {
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 128;
    cp.n_batch = 64;
    cp.n_ubatch = n_ubatch;
    cp.n_seq_max = n_seq;
    cp.n_threads = 2;
    el_context *ctx = NULL;
    if (el_context_create(m, &cp, &ctx) != EL_OK) test_note("%s", el_last_error());
    return ctx;
}

/* The logits of every prompt position (one batch) with a binding, into out [PROMPT][n_vocab]. */
static int prompt_logits(el_model *m, const el_binding *bind, int n_bind, float *out) {
    el_context *ctx = new_ctx(m, 1, 0);
    int32_t pos[PROMPT], seq[PROMPT] = {0};
    int8_t want[PROMPT];
    for (int i = 0; i < PROMPT; i++) pos[i] = i, want[i] = 1;
    el_batch b = {.n_rows = PROMPT, .token = prompt_tokens, .pos = pos, .seq_id = seq,
                  .logits = want};
    int ok = ctx && el_context_bind(ctx, 0, bind, n_bind) == EL_OK && el_decode(ctx, &b) == EL_OK;
    int32_t nv = m->hp.n_vocab;
    for (int i = 0; ok && i < PROMPT; i++)
        memcpy(out + (size_t)i * nv, el_get_logits(ctx, i), sizeof(float) * nv);
    el_context_free(ctx);
    return ok;
}

static int32_t argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* From the prompt decoded bare, with `bind` bound after it: first, then n - 1 greedy tokens. */
static int greedy_after_prompt(el_model *m, const el_binding *bind, int n_bind, int32_t first,
                               int n, int32_t *out) {
    el_context *ctx = new_ctx(m, 1, 0);
    int32_t pos[PROMPT], seq = 0;
    for (int i = 0; i < PROMPT; i++) pos[i] = i;
    el_batch b = {.n_rows = PROMPT, .token = prompt_tokens, .pos = pos,
                  .seq_id = (int32_t[PROMPT]){0}};
    int ok = ctx && el_decode(ctx, &b) == EL_OK && el_context_bind(ctx, 0, bind, n_bind) == EL_OK;
    int32_t tok = first;
    for (int i = 0; ok && i < n; i++) {
        out[i] = tok;
        int32_t p = PROMPT + i;
        el_batch s = {.n_rows = 1, .token = &tok, .pos = &p, .seq_id = &seq};
        ok = el_decode(ctx, &s) == EL_OK;
        if (ok) tok = argmax(el_get_logits(ctx, 0), m->hp.n_vocab);
    }
    el_context_free(ctx);
    return ok;
}

static int test_runtime_equals_merged(void) {
    el_model *base = NULL, *merged = NULL;
    CHECK(el_model_load(BASE, NULL, &base) == EL_OK);
    CHECK(base->hp.n_vocab <= MAX_VOCAB && base->hp.n_swa > 0 && base->layers[0].swa);
    const char *ap = test_tmp_path("gemma3_lora.gguf"), *mp = test_tmp_path("gemma3_merged.gguf");
    CHECK(write_adapter(base, ap, 7));
    const float scale = 0.8f;
    CHECK(el_merge_adapters(BASE, &ap, &scale, 1, mp) == EL_OK);
    CHECK(el_model_load(mp, NULL, &merged) == EL_OK);
    el_adapter *a = NULL;
    CHECK(el_adapter_load_exact(base, ap, &a) == EL_OK);
    el_binding bind = {a, scale};
    size_t n = (size_t)PROMPT * base->hp.n_vocab;
    float *rt = malloc(n * sizeof *rt), *ref = malloc(n * sizeof *ref), *bare = malloc(n * 4);
    CHECK(rt && ref && bare);
    CHECK(prompt_logits(base, &bind, 1, rt) && prompt_logits(merged, NULL, 0, ref) &&
          prompt_logits(base, NULL, 0, bare));
    double err = test_max_rel_err(rt, ref, n), effect = test_max_rel_err(bare, ref, n);
    test_note("runtime vs merged %.2e (the adapter moves the logits %.2e)", err, effect);
    CHECK(err < 1e-4 && effect > 1e-2);
    int32_t g1[10], g2[10];
    int32_t first = argmax(rt + (size_t)(PROMPT - 1) * base->hp.n_vocab, base->hp.n_vocab);
    /* the merged model has the adapter in the prompt too: bind it from the start here */
    el_context *c1 = new_ctx(base, 1, 0), *c2 = new_ctx(merged, 1, 0);
    CHECK(c1 && c2 && el_context_bind(c1, 0, &bind, 1) == EL_OK);
    int32_t tok1 = prompt_tokens[0], tok2 = tok1, seq = 0;
    for (int32_t p = 0; p < PROMPT + 9; p++) {
        el_batch b1 = {.n_rows = 1, .token = &tok1, .pos = &p, .seq_id = &seq};
        el_batch b2 = {.n_rows = 1, .token = &tok2, .pos = &p, .seq_id = &seq};
        CHECK(el_decode(c1, &b1) == EL_OK && el_decode(c2, &b2) == EL_OK);
        int32_t n1 = argmax(el_get_logits(c1, 0), base->hp.n_vocab);
        int32_t n2 = argmax(el_get_logits(c2, 0), base->hp.n_vocab);
        if (p >= PROMPT - 1) g1[p - PROMPT + 1] = n1, g2[p - PROMPT + 1] = n2;
        tok1 = p + 1 < PROMPT ? prompt_tokens[p + 1] : n1;
        tok2 = p + 1 < PROMPT ? prompt_tokens[p + 1] : n2;
    }
    CHECK(g1[0] == first && !memcmp(g1, g2, sizeof g1));
    el_context_free(c1);
    el_context_free(c2);
    el_adapter_free(a);
    free(rt), free(ref), free(bare);
    el_model_free(base);
    el_model_free(merged);
    return TEST_PASS;
}

static int test_mixed_batch_chunked(void) {
    el_model *m = NULL;
    CHECK(el_model_load(BASE, NULL, &m) == EL_OK);
    const char *ap = test_tmp_path("gemma3_lora_mix.gguf");
    CHECK(write_adapter(m, ap, 11));
    el_adapter *a = NULL;
    CHECK(el_adapter_load(m, ap, &a) == EL_OK);
    el_binding b0 = {a, 1.0f}, b2 = {a, -0.5f};
    const el_binding *binds[3] = {&b0, NULL, &b2};
    int n_binds[3] = {1, 0, 1};
    int32_t nv = m->hp.n_vocab;
    float *alone[3];
    for (int s = 0; s < 3; s++) {
        CHECK((alone[s] = malloc(sizeof(float) * PROMPT * nv)));
        CHECK(prompt_logits(m, binds[s], n_binds[s], alone[s]));
    }
    CHECK(test_max_rel_err(alone[0], alone[1], (size_t)PROMPT * nv) > 1e-2);
    el_context *ctx = new_ctx(m, 3, 5);
    CHECK(ctx);
    for (int s = 0; s < 3; s++) CHECK(el_context_bind(ctx, s, binds[s], n_binds[s]) == EL_OK);
    int32_t tok[3 * PROMPT], pos[3 * PROMPT], seq[3 * PROMPT];
    int8_t want[3 * PROMPT];
    for (int i = 0; i < PROMPT; i++)
        for (int s = 0; s < 3; s++) {
            int r = i * 3 + s;
            tok[r] = prompt_tokens[i], pos[r] = i, seq[r] = s, want[r] = 1;
        }
    el_batch b = {.n_rows = 3 * PROMPT, .token = tok, .pos = pos, .seq_id = seq, .logits = want};
    CHECK(el_decode(ctx, &b) == EL_OK);
    double worst = 0;
    for (int r = 0; r < 3 * PROMPT; r++) {
        double e = test_max_rel_err(el_get_logits(ctx, r), alone[seq[r]] + (size_t)pos[r] * nv, nv);
        worst = e > worst ? e : worst;
    }
    test_note("mixed batch in chunks of 5 rows vs alone: %.2e", worst);
    CHECK(worst < 1e-5);
    for (int s = 0; s < 3; s++) free(alone[s]);
    el_context_free(ctx);
    el_adapter_free(a);
    el_model_free(m);
    return TEST_PASS;
}

static int test_variants(void) {
    el_model *m = NULL;
    CHECK(el_model_load(BASE, NULL, &m) == EL_OK);
    const char *ap = test_tmp_path("gemma3_lora_var.gguf");
    CHECK(write_adapter(m, ap, 13));
    el_adapter *a = NULL;
    CHECK(el_adapter_load(m, ap, &a) == EL_OK);
    el_binding bind = {a, 1.0f};
    enum { N_TOK = 8 };
    el_variant_params vp[2] = {el_variant_default_params(), el_variant_default_params()};
    const int32_t firsts[2] = {40, 41};
    for (int i = 0; i < 2; i++) {
        vp[i].sampler.temperature = 0.0f;
        vp[i].first_token = firsts[i];
        vp[i].max_tokens = N_TOK;
        vp[i].ignore_eos = true;
    }
    vp[0].bindings = &bind;
    vp[0].n_bindings = 1;
    el_variants_params gp = el_variants_default_params();
    gp.n_variants = 2;
    gp.variants = vp;
    el_context *ctx = new_ctx(m, 2, 0);
    el_variants *g = NULL;
    CHECK(ctx && el_variants_generate(ctx, &gp, prompt_tokens, PROMPT, &g) == EL_OK);
    int32_t tokens[2][N_TOK];
    for (int i = 0; i < 2; i++) {
        el_variant_result r;
        int32_t ref[N_TOK];
        CHECK(el_variants_result(g, i, &r) == EL_OK && r.n_tokens == N_TOK);
        CHECK(greedy_after_prompt(m, i == 0 ? &bind : NULL, i == 0, firsts[i], N_TOK, ref));
        if (memcmp(r.tokens, ref, sizeof ref)) {
            test_note("variant %d's tokens differ from its sequence run alone", i);
            return TEST_FAIL;
        }
        memcpy(tokens[i], r.tokens, sizeof ref);
    }
    CHECK(memcmp(tokens[0] + 1, tokens[1] + 1, sizeof(int32_t) * (N_TOK - 1)) != 0);
    el_variants_free(g);
    el_context_free(ctx);
    el_adapter_free(a);
    el_model_free(m);
    return TEST_PASS;
}

int main(void) {
    run_test("runtime_equals_merged", test_runtime_equals_merged);
    run_test("mixed_batch_chunked", test_mixed_batch_chunked);
    run_test("variants", test_variants);
    return tests_exit_code();
}
