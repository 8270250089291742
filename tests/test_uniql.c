/* test_uniql.c - the UniQL layout and the pruned forward pass against independent references.
 *  - RoPE with index (kernels/rope.h) against the rotation written out per pair with the angle
 *    of the pair's original frequency in double, NORM and NEOX, a different order per KV head.
 *  - At every rate of a table, the compressed default model (f16; a non-identity RoPE order)
 *    gives the logits of an ORDINARY model that this test slices from the sorted one: the kept
 *    rows and columns of every matrix as smaller tensors (n_ff, head dims, n_rot), rope_freqs
 *    divisors that give each kept pair its original frequency, q_scale keeping the original
 *    1/sqrt(head_dim) score scale, run by the engine's normal path.
 *  - Rows at different rates in one batch get the logits of their sequence run alone.
 *  - An adapter at rate 0 of a compressed file gives the logits of the sorted model with it.
 *  - Bad input: plans the writer refuses, a damaged rate table at load, a rate outside the
 *    table, a budget no rate fits: each a message naming the problem. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress/uniql.h"
#include "edgelora.h"
#include "formats/gguf.h"
#include "kernels/rope.h"
#include "model/model.h"
#include "testutil.h"

enum { N_TOK = 12, N_RATES = 4 };
static const float RATES[N_RATES] = {0.0f, 0.1f, 0.25f, 0.35f};

/* ---------------------------------------------------------------- RoPE with index */

static int test_rope_index(void) {
    enum { HEADS = 4, KV = 2, HD = 16, HALF = HD / 2 };
    test_rng rng = {7};
    for (int neox = 0; neox < 2; neox++) {
        int32_t pairs[KV * HALF];
        for (int h = 0; h < KV; h++) {
            for (int i = 0; i < HALF; i++) pairs[h * HALF + i] = i;
            for (int i = HALF - 1; i > 0; i--) { /* a shuffle per KV head */
                int j = (int)(test_rand_u32(&rng) % (uint32_t)(i + 1));
                int32_t t = pairs[h * HALF + i];
                pairs[h * HALF + i] = pairs[h * HALF + j];
                pairs[h * HALF + j] = t;
            }
        }
        float x[HEADS * HD], y[HEADS * HD], cs[HALF], sn[HALF];
        double pos = 37, base = 10000;
        for (int i = 0; i < HALF; i++) {
            cs[i] = (float)cos(pos * pow(base, -2.0 * i / HD));
            sn[i] = (float)sin(pos * pow(base, -2.0 * i / HD));
        }
        for (int i = 0; i < HEADS * HD; i++) x[i] = y[i] = test_rand_uniform(&rng, -1, 1);
        el_rope_rotate(y, HEADS, HD, HD, neox, cs, sn, pairs, HEADS / KV);
        for (int h = 0; h < HEADS; h++)
            for (int i = 0; i < HALF; i++) {
                double th = pos * pow(base, -2.0 * pairs[(h / (HEADS / KV)) * HALF + i] / HD);
                int a = h * HD + (neox ? i : 2 * i), b = h * HD + (neox ? i + HALF : 2 * i + 1);
                double ra = x[a] * cos(th) - x[b] * sin(th), rb = x[a] * sin(th) + x[b] * cos(th);
                if (fabs(ra - y[a]) > 1e-5 || fabs(rb - y[b]) > 1e-5) {
                    test_note("neox %d head %d pair %d: %g %g, expected %g %g", neox, h, i, y[a],
                              y[b], ra, rb);
                    return TEST_FAIL;
                }
            }
    }
    return TEST_PASS;
}

/* ---------------------------------------------------------------- files */

static const char *base_path(void) {
    static const char *p = "models/base.gguf";
    FILE *f = fopen(p, "rb");
    if (!f)
        return NULL;
    fclose(f);
    return p;
}

static char *tmp_path(const char *name) {
    static char buf[4][512];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", test_tmp_dir(), name);
    return b;
}

/* A RoPE order shared by every layer and head (the reference's rope_freqs is one vector). */
static int32_t *shared_pairs(const el_hparams *hp) {
    int half = hp->n_rot / 2;
    int32_t *p = malloc((size_t)hp->n_layer * hp->n_head_kv * half * sizeof *p);
    for (int h = 0; h < hp->n_layer * hp->n_head_kv; h++)
        for (int i = 0; i < half; i++)
            p[h * half + i] = (i * 5 + 3) % half; /* 5 is prime to 16 pairs: a permutation */
    return p;
}

/* ---------------------------------------------------------------- the sliced reference */

typedef struct sliced {
    void *bufs[512];
    int n;
} sliced;

static void *keep(sliced *s, size_t bytes) { return s->bufs[s->n++] = malloc(bytes); }

/* Rows [r0, r0 + n) of each of n_groups groups of stride rows of a 2-D f16/f32 tensor. */
static void *rows_of(sliced *s, const gguf_tensor *t, int64_t stride, int64_t n, size_t *bytes) {
    size_t el = t->type == EL_TYPE_F16 ? 2 : 4, rb = (size_t)t->ne[0] * el;
    int64_t groups = t->ne[1] / stride;
    *bytes = (size_t)(groups * n) * rb;
    uint8_t *out = keep(s, *bytes);
    for (int64_t g = 0; g < groups; g++)
        memcpy(out + (size_t)(g * n) * rb, (const uint8_t *)t->data + (size_t)(g * stride) * rb,
               (size_t)n * rb);
    return out;
}

/* Columns: the first n of each group of stride columns of every row. */
static void *cols_of(sliced *s, const gguf_tensor *t, int64_t stride, int64_t n, size_t *bytes,
                     int64_t *ne0) {
    size_t el = t->type == EL_TYPE_F16 ? 2 : 4;
    int64_t groups = t->ne[0] / stride;
    *ne0 = groups * n;
    *bytes = (size_t)(*ne0 * t->ne[1]) * el;
    uint8_t *out = keep(s, *bytes), *o = out;
    for (int64_t r = 0; r < t->ne[1]; r++)
        for (int64_t g = 0; g < groups; g++) {
            size_t len = (size_t)n * el;
            memcpy(o, (const uint8_t *)t->data + ((size_t)r * t->ne[0] + (size_t)(g * stride)) * el,
                   len);
            o += len;
        }
    return out;
}

/* Writes the sorted model at src physically sliced to rate index r of plan as an ordinary
 * llama GGUF (NORM rope: the kept dims of a head are its first qk). */
static el_status write_sliced(const char *src, const el_uniql_plan *plan, int r, const char *dst) {
    gguf_file *g;
    el_status st = gguf_open(src, &g);
    if (st) return st;
    el_model *m;
    if ((st = el_model_load(src, NULL, &m))) { gguf_close(g); return st; }
    const el_hparams *hp = &m->hp;
    int nl = hp->n_layer, ff = plan->ff_kept[r * nl], qk = plan->qk_kept[r * nl],
        vo = plan->vo_kept[r * nl];
    gguf_writer *w = gguf_writer_create();
    sliced s = {0};
    gguf_writer_copy_kv(w, g);
    gguf_writer_set_u32(w, "llama.feed_forward_length", (uint32_t)ff);
    gguf_writer_set_u32(w, "llama.attention.key_length", (uint32_t)qk);
    gguf_writer_set_u32(w, "llama.attention.value_length", (uint32_t)vo);
    gguf_writer_set_u32(w, "llama.rope.dimension_count", (uint32_t)qk);
    for (uint64_t i = 0; i < g->n_tensors && !st; i++) {
        const gguf_tensor *t = &g->tensors[i];
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        int64_t ne[2] = {t->ne[0], t->ne[1]};
        size_t bytes = t->nbytes;
        const void *data = t->data;
        if (strstr(name, "attn_q.weight") || strstr(name, "attn_k.weight")) {
            data = rows_of(&s, t, hp->head_dim_k, qk, &bytes);
            ne[1] = ne[1] / hp->head_dim_k * qk;
        } else if (strstr(name, "attn_v.weight")) {
            data = rows_of(&s, t, hp->head_dim_v, vo, &bytes);
            ne[1] = ne[1] / hp->head_dim_v * vo;
        } else if (strstr(name, "ffn_gate.weight") || strstr(name, "ffn_up.weight")) {
            data = rows_of(&s, t, t->ne[1], ff, &bytes);
            ne[1] = ff;
        } else if (strstr(name, "attn_output.weight")) {
            data = cols_of(&s, t, hp->head_dim_v, vo, &bytes, &ne[0]);
        } else if (strstr(name, "ffn_down.weight")) {
            data = cols_of(&s, t, t->ne[0], ff, &bytes, &ne[0]);
        }
        st = gguf_writer_add_tensor(w, name, t->type, t->n_dims, ne, data, bytes);
    }
    /* divisors base^(2 p_i / n_rot - 2 i / n_rot'): kept pair i turns at its original pair's
     * frequency base^(-2 p_i / n_rot) */
    float *div = keep(&s, (size_t)(qk / 2) * sizeof *div);
    for (int i = 0; i < qk / 2; i++) {
        int p = plan->rope_pairs ? plan->rope_pairs[i] : i;
        div[i] = (float)pow(hp->rope_freq_base, 2.0 * p / hp->n_rot - 2.0 * i / qk);
    }
    const int64_t ne_div[1] = {qk / 2};
    if (!st)
        st = gguf_writer_add_tensor(w, "rope_freqs.weight", EL_TYPE_F32, 1, ne_div, div,
                                    (size_t)(qk / 2) * sizeof *div);
    if (!st)
        st = gguf_writer_write(w, dst);
    gguf_writer_free(w);
    for (int i = 0; i < s.n; i++) free(s.bufs[i]);
    el_model_free(m);
    gguf_close(g);
    return st;
}

/* ---------------------------------------------------------------- running */

/* The logits of every row of tokens 0..N_TOK-1 of one sequence. */
static int run_logits(el_model *m, float rate, const el_binding *bind, float *out) {
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 64;
    cp.kv_type = EL_KV_F32;
    cp.n_threads = 2;
    el_context *c;
    if (el_context_create(m, &cp, &c)) return -1;
    if (el_context_set_prune(c, rate) || (bind && el_context_bind(c, 0, bind, 1))) {
        el_context_free(c);
        return -1;
    }
    int32_t tok[N_TOK], pos[N_TOK], seq[N_TOK];
    int8_t want[N_TOK];
    for (int i = 0; i < N_TOK; i++) {
        tok[i] = (i * 397 + 11) % m->hp.n_vocab;
        pos[i] = i;
        seq[i] = 0;
        want[i] = 1;
    }
    el_batch b = {.n_rows = N_TOK, .token = tok, .pos = pos, .seq_id = seq, .logits = want};
    int rc = el_decode(c, &b) ? -1 : 0;
    for (int i = 0; i < N_TOK && !rc; i++)
        memcpy(out + (size_t)i * m->hp.n_vocab, el_get_logits(c, i),
               (size_t)m->hp.n_vocab * sizeof *out);
    el_context_free(c);
    return rc;
}

static el_status write_compressed(const char *src, bool pairs, const char *dst,
                                  el_uniql_plan *plan) {
    el_status st = el_uniql_plan_uniform(src, RATES, N_RATES, plan);
    if (st) return st;
    if (pairs) {
        el_model *m;
        if ((st = el_model_load(src, NULL, &m))) return st;
        plan->rope_pairs = shared_pairs(&m->hp);
        el_model_free(m);
    }
    return el_uniql_write(src, plan, dst);
}

static int test_against_sliced(void) {
    const char *src = base_path();
    if (!src) return test_skip("models/base.gguf is absent");
    el_uniql_plan plan;
    char *comp = tmp_path("base.uniql.gguf");
    if (write_compressed(src, true, comp, &plan)) {
        test_note("%s", el_last_error());
        return TEST_FAIL;
    }
    el_model *cm;
    CHECK(el_model_load(comp, NULL, &cm) == EL_OK);
    const float *rates;
    CHECK(el_model_prune_rates(cm, &rates) == N_RATES && rates[2] == RATES[2]);
    size_t nv = (size_t)cm->hp.n_vocab;
    float *a = malloc(N_TOK * nv * sizeof *a), *b = malloc(N_TOK * nv * sizeof *b);
    int rc = TEST_PASS;
    uint64_t prev = UINT64_MAX;
    for (int r = 0; r < N_RATES && rc == TEST_PASS; r++) {
        char *ref = tmp_path("sliced.gguf");
        el_model *rm = NULL;
        uint64_t bytes = 0;
        if (write_sliced(src, &plan, r, ref) || el_model_load(ref, NULL, &rm) ||
            el_model_prune_bytes(cm, RATES[r], &bytes)) {
            test_note("rate %g: %s", (double)RATES[r], el_last_error());
            rc = TEST_FAIL;
            break;
        }
        /* the score scale stays 1/sqrt(head_dim) of the full model */
        rm->hp.q_scale = sqrtf((float)rm->hp.head_dim_k / (float)cm->hp.head_dim_k);
        if (run_logits(cm, RATES[r], NULL, a) || run_logits(rm, 0.0f, NULL, b)) {
            test_note("%s", el_last_error());
            rc = TEST_FAIL;
        }
        double err = test_max_rel_err(a, b, N_TOK * nv);
        test_note("rate %.2f (ff %d, qk %d, vo %d, %llu weight bytes): max rel err %.2e",
                  (double)RATES[r], plan.ff_kept[r * cm->hp.n_layer],
                  plan.qk_kept[r * cm->hp.n_layer], plan.vo_kept[r * cm->hp.n_layer],
                  (unsigned long long)bytes, err);
        if (err > 1e-5 || !(bytes < prev)) rc = TEST_FAIL;
        prev = bytes;
        el_model_free(rm);
    }
    free(a);
    free(b);
    el_model_free(cm);
    el_uniql_plan_free(&plan);
    return rc;
}

/* Rows at different rates in one batch: each gets its sequence's logits run alone. */
static int test_mixed_rates(void) {
    const char *src = base_path();
    if (!src) return test_skip("models/base.gguf is absent");
    el_uniql_plan plan;
    char *comp = tmp_path("base.mixed.gguf");
    CHECK(write_compressed(src, false, comp, &plan) == EL_OK);
    el_uniql_plan_free(&plan);
    el_model *m;
    CHECK(el_model_load(comp, NULL, &m) == EL_OK);
    size_t nv = (size_t)m->hp.n_vocab;
    float *alone[2] = {malloc(N_TOK * nv * sizeof(float)), malloc(N_TOK * nv * sizeof(float))};
    CHECK(run_logits(m, RATES[0], NULL, alone[0]) == 0);
    CHECK(run_logits(m, RATES[3], NULL, alone[1]) == 0);
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 64;
    cp.kv_type = EL_KV_F32;
    cp.n_seq_max = 2;
    el_context *c;
    CHECK(el_context_create(m, &cp, &c) == EL_OK);
    int32_t tok[2], pos[2], seq[2] = {0, 1};
    int8_t want[2] = {1, 1};
    int rc = TEST_PASS;
    /* seq 0 starts at rate 0, seq 1 at 0.35 after the change; both then decode together */
    for (int i = 0; i < N_TOK && rc == TEST_PASS; i++) {
        if (i == 0) {
            el_batch b0 = {.n_rows = 1, .token = tok, .pos = pos, .seq_id = seq, .logits = want};
            tok[0] = 11;
            pos[0] = 0;
            CHECK(el_decode(c, &b0) == EL_OK);
            CHECK(test_max_rel_err(el_get_logits(c, 0), alone[0], nv) < 1e-4);
            CHECK(el_context_set_prune(c, 0.3f) == EL_OK); /* rounds up to 0.35 */
            CHECK(fabsf(el_context_get_prune(c) - 0.35f) < 1e-6f);
            el_batch b1 = {.n_rows = 1, .token = tok, .pos = pos, .seq_id = seq + 1,
                           .logits = want};
            CHECK(el_decode(c, &b1) == EL_OK);
            CHECK(test_max_rel_err(el_get_logits(c, 0), alone[1], nv) < 1e-4);
            continue;
        }
        tok[0] = tok[1] = (i * 397 + 11) % m->hp.n_vocab;
        pos[0] = pos[1] = i;
        el_batch b = {.n_rows = 2, .token = tok, .pos = pos, .seq_id = seq, .logits = want};
        CHECK(el_decode(c, &b) == EL_OK);
        for (int s = 0; s < 2; s++) {
            double e = test_max_rel_err(el_get_logits(c, s), alone[s] + (size_t)i * nv, nv);
            if (e > 1e-4) {
                test_note("token %d, sequence %d (rate %g): max rel err %.2e", i, s,
                          (double)RATES[s ? 3 : 0], e);
                rc = TEST_FAIL;
            }
        }
    }
    el_context_free(c);
    free(alone[0]);
    free(alone[1]);
    el_model_free(m);
    return rc;
}

/* An adapter on the compressed file at rate 0 equals it on the sorted model. */
static int test_adapter_rate0(void) {
    const char *src = base_path();
    if (!src || !fopen("models/translate-de.gguf", "rb"))
        return test_skip("models/base.gguf or translate-de.gguf is absent");
    el_uniql_plan plan;
    char *comp = tmp_path("base.adapter.gguf");
    CHECK(write_compressed(src, false, comp, &plan) == EL_OK);
    el_uniql_plan_free(&plan);
    el_model *m, *sm;
    CHECK(el_model_load(comp, NULL, &m) == EL_OK && el_model_load(src, NULL, &sm) == EL_OK);
    el_adapter *ad, *sad;
    CHECK(el_adapter_load(m, "models/translate-de.gguf", &ad) == EL_OK);
    CHECK(el_adapter_load(sm, "models/translate-de.gguf", &sad) == EL_OK);
    size_t nv = (size_t)m->hp.n_vocab;
    float *a = malloc(N_TOK * nv * sizeof *a), *b = malloc(N_TOK * nv * sizeof *b),
          *p = malloc(N_TOK * nv * sizeof *p);
    el_binding bd = {.adapter = ad, .scale = 1.0f}, sbd = {.adapter = sad, .scale = 1.0f};
    CHECK(run_logits(m, 0.0f, &bd, a) == 0 && run_logits(sm, 0.0f, &sbd, b) == 0);
    CHECK(run_logits(m, 0.25f, &bd, p) == 0);
    double e = test_max_rel_err(a, b, N_TOK * nv), moved = test_max_rel_err(p, a, N_TOK * nv);
    test_note("rate 0: max rel err %.2e; rate 0.25 moves the logits by %.2e", e, moved);
    int rc = e < 1e-4 && moved > 1e-3 ? TEST_PASS : TEST_FAIL;
    free(a);
    free(b);
    free(p);
    el_adapter_free(ad);
    el_adapter_free(sad);
    el_model_free(m);
    el_model_free(sm);
    return rc;
}

/* ---------------------------------------------------------------- bad input */

static bool refused(el_status st, const char *needle) {
    if (st == EL_OK) {
        test_note("accepted; expected a message with '%s'", needle);
        return false;
    }
    if (!strstr(el_last_error(), needle)) {
        test_note("message '%s' lacks '%s'", el_last_error(), needle);
        return false;
    }
    return true;
}

static int test_bad_plans(void) {
    const char *src = base_path();
    if (!src) return test_skip("models/base.gguf is absent");
    el_uniql_plan plan;
    CHECK(el_uniql_plan_uniform(src, RATES, N_RATES, &plan) == EL_OK);
    int nl = 6;
    char *dst = tmp_path("bad.gguf");
    plan.qk_kept[2 * nl + 1] = 27;
    CHECK(refused(el_uniql_write(src, &plan, dst), "is odd"));
    plan.qk_kept[2 * nl + 1] = plan.qk_kept[nl + 1] + 2;
    CHECK(refused(el_uniql_write(src, &plan, dst), "grows with the rate"));
    plan.qk_kept[2 * nl + 1] = plan.qk_kept[nl + 1];
    plan.ff_kept[0] = 600;
    CHECK(refused(el_uniql_write(src, &plan, dst), "not the full size at rate 0"));
    plan.ff_kept[0] = 688;
    plan.rates[2] = plan.rates[1];
    CHECK(refused(el_uniql_write(src, &plan, dst), "rise strictly"));
    plan.rates[2] = RATES[2];
    FILE *f = fopen(dst, "rb");
    CHECK(f == NULL); /* nothing left behind */
    el_uniql_plan_free(&plan);
    /* a compressed file is not a source */
    char *comp = tmp_path("base.bad.gguf");
    CHECK(write_compressed(src, false, comp, &plan) == EL_OK);
    CHECK(refused(el_uniql_write(comp, &plan, dst), "already a UniQL compressed file"));
    el_uniql_plan_free(&plan);
    return TEST_PASS;
}

/* The compressed file with one key replaced by an array of the same size. */
static el_status damage(const char *src, const char *key, const int32_t *v, uint64_t n,
                        const char *dst) {
    gguf_file *g;
    el_status st = gguf_open(src, &g);
    if (st) return st;
    gguf_writer *w = gguf_writer_create();
    gguf_writer_copy_kv(w, g);
    gguf_writer_set_arr(w, key, GGUF_TYPE_INT32, v, n);
    for (uint64_t i = 0; i < g->n_tensors && !st; i++) {
        const gguf_tensor *t = &g->tensors[i];
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        st = gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
    }
    if (!st) st = gguf_writer_write(w, dst);
    gguf_writer_free(w);
    gguf_close(g);
    return st;
}

static int test_bad_runtime(void) {
    const char *src = base_path();
    if (!src) return test_skip("models/base.gguf is absent");
    el_uniql_plan plan;
    char *comp = tmp_path("base.rt.gguf");
    CHECK(write_compressed(src, false, comp, &plan) == EL_OK);
    int nl = 6;
    char *bad = tmp_path("damaged.gguf");
    el_model *m = NULL;
    plan.ff_kept[3 * nl + 2] = plan.ff_kept[2 * nl + 2] + 8; /* grows from 0.25 to 0.35 */
    CHECK(damage(comp, "uniql.ff_kept", plan.ff_kept, (uint64_t)N_RATES * nl, bad) == EL_OK);
    CHECK(refused(el_model_load(bad, NULL, &m), "damaged rate table"));
    CHECK(damage(comp, "uniql.ff_kept", plan.ff_kept, 5, bad) == EL_OK);
    CHECK(refused(el_model_load(bad, NULL, &m), "damaged rate table"));
    el_uniql_plan_free(&plan);

    CHECK(el_model_load(comp, NULL, &m) == EL_OK);
    el_context *c;
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 64;
    CHECK(el_context_create(m, &cp, &c) == EL_OK);
    CHECK(refused(el_context_set_prune(c, 0.5f), "outside what"));
    CHECK(refused(el_context_set_prune(c, -0.1f), "outside what"));
    CHECK(el_context_get_prune(c) == 0.0f);
    float rate;
    uint64_t at35, at0;
    CHECK(el_model_prune_bytes(m, 0.35f, &at35) == EL_OK && el_model_prune_bytes(m, 0, &at0) == 0);
    CHECK(refused(el_model_prune_fit(m, &cp, 1000, &rate), "the smallest that would is"));
    /* a budget between the two: some rate above 0 */
    CHECK(el_model_prune_fit(m, &cp, at35 + (at0 - at35) / 2 + (1u << 20), &rate) == EL_OK);
    CHECK(rate > 0.0f && rate <= 0.35f);
    el_context_free(c);
    el_model_free(m);

    el_model *plain;
    CHECK(el_model_load(src, NULL, &plain) == EL_OK);
    CHECK(el_model_prune_rates(plain, NULL) == 0);
    CHECK(el_context_create(plain, &cp, &c) == EL_OK);
    CHECK(refused(el_context_set_prune(c, 0.1f), "not a UniQL compressed model"));
    CHECK(el_context_set_prune(c, 0.0f) == EL_OK);
    el_context_free(c);
    el_model_free(plain);
    return TEST_PASS;
}

int main(void) {
    run_test("rope_index", test_rope_index);
    run_test("against_sliced", test_against_sliced);
    run_test("mixed_rates", test_mixed_rates);
    run_test("adapter_rate0", test_adapter_rate0);
    run_test("bad_plans", test_bad_plans);
    run_test("bad_runtime", test_bad_runtime);
    return tests_exit_code();
}
