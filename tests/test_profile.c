/* test_profile.c - quantization profiles (model/profile.h) against independent references, on
 * the default model and its adapters:
 *  - The int8 adapter terms equal, bit for bit, a plain-loop reference that quantizes x, A, A x
 *    and B with the profile's scales as kernels/lora.h defines, from the float adapter's values,
 *    with one thread and two; the clamped values are counted as the reference counts them.
 *  - A calibrated profile (el_profile_make) holds the adapters it was made with unclamped (its
 *    a and b scales are their largest values / 127), and the model under it follows the float
 *    model: the same greedy translation, logits close compared with what the adapter changes.
 *  - A W8 base takes the profile's activation scales.
 *  - Damaged profiles and adapters tuned for another profile are refused, naming the file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/threadpool.h"
#include "edgelora-tools.h"
#include "formats/gguf.h"
#include "kernels/dispatch.h"
#include "kernels/lora.h"
#include "model/model.h"
#include "model/profile.h"
#include "runtime/adapter.h"
#include "testutil.h"

static const char *const base_path = "models/base.gguf";
static const char *const de_path = "models/translate-de.gguf";

/* The profile's grid as lora.h defines it: clamp(round(v * (1 / d)), -127, 127). */
static int grid(float v, float d) {
    float r = v * (1.0f / d);
    return (int)lrintf(r < -127.0f ? -127.0f : r > 127.0f ? 127.0f : r);
}

static bool clamped(float v, float d) { return fabsf(v * (1.0f / d)) > 127.5f; }

static float amax(const float *v, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(v[i]));
    return m;
}

/* A pair's A [rank][n_in] and B [n_out][rank] as floats (malloc'd). */
static void pair_floats(const el_lora_pair *p, float **a, float **b) {
    *a = malloc(sizeof(float) * (size_t)(p->a.n_in * p->a.n_out));
    *b = malloc(sizeof(float) * (size_t)(p->b.n_out * p->a.n_out));
    el_weight_floats(&p->a, *a);
    el_lora_b_floats(p, *b);
}

/* A profile for model m with hand-chosen scales: where adapter ad has a pair, a and b at frac of
 * its largest |A| and |B| (frac < 1 clamps some values), x and t fixed. */
static el_profile hand_profile(const el_model *m, const el_adapter *ad, float frac) {
    el_profile p = {.n_slots = m->hp.n_layer * EL_N_LINEAR, .base = el_model_fingerprint(m),
                    .output_x_scale = 0.04f};
    p.slots = calloc((size_t)p.n_slots, sizeof *p.slots);
    for (int32_t i = 0; i < p.n_slots; i++) {
        p.slots[i].x_scale = 0.02f;
        const el_lora_pair *q = &ad->table[i];
        if (!q->a.n_out) continue;
        float *a, *b;
        pair_floats(q, &a, &b);
        p.slots[i].a_scale = frac * amax(a, (size_t)(q->a.n_in * q->a.n_out)) / 127.0f;
        p.slots[i].b_scale = frac * amax(b, (size_t)(q->b.n_out * q->a.n_out)) / 127.0f;
        p.slots[i].t_scale = 0.01f;
        free(a);
        free(b);
    }
    return p;
}

static el_model *load_with(const char *profile) {
    el_model_params mp = el_model_default_params();
    mp.profile_path = profile;
    el_model *m = NULL;
    if (el_model_load(base_path, &mp, &m) != EL_OK) test_note("%s", el_last_error());
    return m;
}

/* y[r] += the terms of r's group (lora.h) computed from the float pair fp and profile slot s in
 * plain loops: the definition, not the kernels. */
static void reference(const el_lora_pair *fp, float pair_scale, const el_profile_slot *s,
                      const el_lora_group *g, const float *x, int64_t n_in, float *y,
                      int64_t n_out) {
    float *a, *b;
    pair_floats(fp, &a, &b);
    int64_t rank = fp->a.n_out;
    int8_t tq[64];
    for (int32_t ti = 0; ti < g->n_terms; ti++)
        for (int32_t i = 0; i < g->n_rows; i++) {
            const float *xr = x + g->rows[i] * n_in;
            for (int64_t k = 0; k < rank; k++) {
                int32_t acc = 0;
                for (int64_t c = 0; c < n_in; c++)
                    acc += grid(a[k * n_in + c], s->a_scale) * grid(xr[c], s->x_scale);
                tq[k] = (int8_t)grid(s->a_scale * s->x_scale * (float)acc, s->t_scale);
            }
            float c = g->terms[ti].scale * pair_scale * s->t_scale * s->b_scale;
            for (int64_t o = 0; o < n_out; o++) {
                int32_t acc = 0;
                for (int64_t k = 0; k < rank; k++) acc += tq[k] * grid(b[o * rank + k], s->b_scale);
                y[g->rows[i] * n_out + o] += c * (float)acc;
            }
        }
    free(a);
    free(b);
}

static int test_int_terms_exact(void) {
    el_model *mf = load_with(NULL);
    el_adapter *af = NULL;
    CHECK(mf && el_adapter_load_exact(mf, de_path, &af) == EL_OK);
    el_profile pf = hand_profile(mf, af, 0.9f);
    const char *path = test_tmp_path("hand.profile.gguf");
    CHECK(el_profile_write(&pf, path) == EL_OK);
    el_model *mp = load_with(path);
    el_adapter *ap = NULL;
    CHECK(mp && el_adapter_load(mp, de_path, &ap) == EL_OK);
    /* the clamped values, counted from the float adapter */
    uint64_t n_values = 0, n_clamped = 0;
    for (int32_t i = 0; i < pf.n_slots; i++) {
        const el_lora_pair *q = &af->table[i];
        if (!q->a.n_out) continue;
        float *a, *b;
        pair_floats(q, &a, &b);
        size_t na = (size_t)(q->a.n_in * q->a.n_out), nb = (size_t)(q->b.n_out * q->a.n_out);
        for (size_t k = 0; k < na; k++) n_clamped += clamped(a[k], pf.slots[i].a_scale);
        for (size_t k = 0; k < nb; k++) n_clamped += clamped(b[k], pf.slots[i].b_scale);
        n_values += na + nb;
        free(a);
        free(b);
    }
    el_adapter_info info;
    CHECK(el_adapter_get_info(ap, &info) == EL_OK);
    test_note("%llu of %llu values clamped (reference %llu)", (unsigned long long)info.n_clipped,
              (unsigned long long)info.n_values, (unsigned long long)n_clamped);
    CHECK(info.profiled && info.n_values == n_values && info.n_clipped == n_clamped);
    CHECK(n_clamped > 0);

    el_threadpool *tp = NULL;
    CHECK(el_threadpool_create(2, &tp) == EL_OK);
    enum { ROWS = 5 };
    const int32_t slots[] = {el_linear_slot(0, EL_LINEAR_Q), el_linear_slot(5, EL_LINEAR_DOWN),
                             el_linear_slot(2, EL_LINEAR_UP)};
    const int32_t rows_a[] = {0, 2, 3}, rows_b[] = {1, 4};
    el_lora_term ta[1] = {el_adapter_term(ap, 1.0f)};
    el_lora_term tb[2] = {el_adapter_term(ap, 0.5f), el_adapter_term(ap, -1.25f)};
    el_lora_group groups[2] = {{rows_a, 3, ta, 1}, {rows_b, 2, tb, 2}};
    el_lora_rows lr = {groups, 2};
    test_rng rng = {77};
    for (size_t si = 0; si < sizeof slots / sizeof slots[0]; si++) {
        int32_t slot = slots[si];
        const el_lora_pair *fp = &af->table[slot];
        CHECK(fp->a.n_out > 0 && fp->a.n_out <= 64);
        int64_t n_in = fp->a.n_in, n_out = fp->b.n_out;
        float *x = malloc(sizeof(float) * (size_t)(ROWS * n_in));
        float *y0 = malloc(sizeof(float) * (size_t)(ROWS * n_out));
        float *y = malloc(sizeof(float) * (size_t)(ROWS * n_out));
        float *ref = malloc(sizeof(float) * (size_t)(ROWS * n_out));
        for (int64_t i = 0; i < ROWS * n_in; i++) x[i] = test_rand_uniform(&rng, -3, 3);
        for (int64_t i = 0; i < ROWS * n_out; i++) y0[i] = test_rand_uniform(&rng, -1, 1);
        memcpy(ref, y0, sizeof(float) * (size_t)(ROWS * n_out));
        for (int g = 0; g < 2; g++)
            reference(fp, fp->scale, &pf.slots[slot], &groups[g], x, n_in, ref, n_out);
        double moved = 0;
        for (int64_t i = 0; i < ROWS * n_out; i++) moved = fmax(moved, fabs(ref[i] - y0[i]));
        CHECK(moved > 1e-3);
        for (int threads = 1; threads <= 2; threads++) {
            el_lora_scratch sc = {0};
            CHECK(el_lora_reserve(&sc, &lr, n_in) == EL_OK);
            memcpy(y, y0, sizeof(float) * (size_t)(ROWS * n_out));
            el_lora_apply(threads == 2 ? tp : NULL, &lr, slot, x, n_in, n_in, y, n_out, &sc);
            el_lora_scratch_free(&sc);
            int64_t bad = -1;
            for (int64_t i = 0; i < ROWS * n_out && bad < 0; i++)
                if (y[i] != ref[i]) bad = i;
            if (bad >= 0)
                test_note("slot %d, %d thread(s): y[%lld] = %.9g, reference %.9g", slot, threads,
                          (long long)bad, y[bad], ref[bad]);
            CHECK(bad < 0);
        }
        free(x), free(y0), free(y), free(ref);
    }
    el_threadpool_free(tp);
    free(pf.slots);
    el_adapter_free(ap);
    el_adapter_free(af);
    el_model_free(mp);
    el_model_free(mf);
    return TEST_PASS;
}

/* Logits after a prompt and the greedy continuation, with adapter path bound on model m. */
static int run_prompt(el_model *m, const char *adapter, float *logits, char **text) {
    el_adapter *ad = NULL;
    if (el_adapter_load(m, adapter, &ad) != EL_OK) return 0;
    el_binding b = {ad, 1.0f};
    el_generate_params p = el_generate_default_params();
    p.n_predict = 12;
    p.n_threads = 1;
    p.sampler.temperature = 0;
    p.bindings = &b;
    p.n_bindings = 1;
    const char *prompt = "German: The file could not be saved.\n";
    int ok = el_generate(m, prompt, &p, text) == EL_OK;
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 1;
    el_context *ctx = NULL;
    int32_t tok[64];
    size_t n = 0;
    ok = ok && el_tokenize(m, prompt, strlen(prompt), true, false, tok, 64, &n) == EL_OK &&
         el_context_create(m, &cp, &ctx) == EL_OK && el_context_bind(ctx, 0, &b, 1) == EL_OK;
    for (size_t i = 0; ok && i < n; i++) {
        int32_t pos = (int32_t)i, seq = 0;
        el_batch batch = {.n_rows = 1, .token = &tok[i], .pos = &pos, .seq_id = &seq};
        ok = el_decode(ctx, &batch) == EL_OK;
    }
    if (ok) memcpy(logits, el_get_logits(ctx, 0), sizeof(float) * (size_t)m->hp.n_vocab);
    el_context_free(ctx);
    el_adapter_free(ad);
    return ok;
}

static int test_calibrated_profile(void) {
    const char *text = test_data_path("corpus/en.txt");
    if (!text) return test_skip("../shared/data/corpus/en.txt is absent");
    const char *adapters[] = {de_path, "models/typo-en.gguf"};
    el_profile_params pp = el_profile_default_params();
    pp.adapters = adapters;
    pp.n_adapters = 2;
    pp.text_path = text;
    pp.max_tokens = 1024;
    pp.n_threads = 2;
    const char *path = test_tmp_path("made.profile.gguf");
    CHECK(el_profile_make(base_path, &pp, path) == EL_OK);
    el_model *mf = load_with(NULL), *mp = load_with(path);
    CHECK(mf && mp && mp->profile);
    /* a and b: the largest |value| of either adapter, as measured here */
    el_adapter *ad[2] = {0};
    CHECK(el_adapter_load_exact(mf, adapters[0], &ad[0]) == EL_OK &&
          el_adapter_load_exact(mf, adapters[1], &ad[1]) == EL_OK);
    for (int32_t i = 0; i < mp->profile->n_slots; i++) {
        float want_a = 0, want_b = 0;
        for (int j = 0; j < 2; j++) {
            const el_lora_pair *q = &ad[j]->table[i];
            if (!q->a.n_out) continue;
            float *a, *b;
            pair_floats(q, &a, &b);
            want_a = fmaxf(want_a, amax(a, (size_t)(q->a.n_in * q->a.n_out)) / 127.0f);
            want_b = fmaxf(want_b, amax(b, (size_t)(q->b.n_out * q->a.n_out)) / 127.0f);
            free(a), free(b);
        }
        const el_profile_slot *s = &mp->profile->slots[i];
        CHECK(s->a_scale == want_a && s->b_scale == want_b);
        CHECK(s->x_scale > 0 && (want_a == 0) == (s->t_scale == 0));
    }
    el_adapter_free(ad[0]);
    el_adapter_free(ad[1]);
    el_adapter *ap = NULL;
    el_adapter_info info;
    CHECK(el_adapter_load(mp, adapters[1], &ap) == EL_OK && el_adapter_get_info(ap, &info) == 0);
    CHECK(info.profiled && info.n_clipped == 0);
    el_adapter_free(ap);
    /* the model under the profile follows the float one */
    int nv = mf->hp.n_vocab;
    float *lf = malloc(sizeof(float) * (size_t)nv), *lp = malloc(sizeof(float) * (size_t)nv);
    float *lb = malloc(sizeof(float) * (size_t)nv);
    char *tf = NULL, *tq = NULL, *tb = NULL;
    CHECK(run_prompt(mf, de_path, lf, &tf) && run_prompt(mp, de_path, lp, &tq));
    CHECK(run_prompt(mf, "models/shout-en.gguf", lb, &tb)); /* another adapter: a scale */
    double err = 0, effect = 0;
    for (int i = 0; i < nv; i++) {
        err = fmax(err, fabs(lp[i] - lf[i]));
        effect = fmax(effect, fabs(lb[i] - lf[i]));
    }
    test_note("float [%s], profile [%s]; logits differ by %.4f (another adapter's: %.4f)", tf,
              tq, err, effect);
    CHECK(strcmp(tf, tq) == 0);
    CHECK(err < 0.1 * effect);
    free(lf), free(lp), free(lb), free(tf), free(tq), free(tb);
    el_model_free(mf);
    el_model_free(mp);
    return TEST_PASS;
}

static int cmp_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* The profile's x and t scales of layer 0's q against the percentile computed here: its input
 * is rmsnorm(embedding) * attn_norm of every calibration row (each chunk starts with BOS), the
 * same in the run of either adapter, and its t = A x for each adapter's A. */
static int test_percentiles(void) {
    const char *adapters[] = {de_path, "models/typo-en.gguf"};
    el_model *m = load_with(NULL);
    CHECK(m);
    const char *sentence = "The quick brown fox jumps over the lazy dog near the river bank. ";
    int32_t ids[700];
    size_t n = 0;
    while (n < 500) {
        size_t k;
        CHECK(el_tokenize(m, sentence, strlen(sentence), false, false, ids + n, 700 - n, &k) ==
              EL_OK);
        n += k;
    }
    const double percentile = 99.0;
    el_profile_params pp = el_profile_default_params();
    pp.adapters = adapters, pp.n_adapters = 2, pp.tokens = ids, pp.n_tokens = (int64_t)n;
    pp.max_tokens = (int64_t)n, pp.percentile = percentile, pp.n_threads = 2;
    const char *path = test_tmp_path("percentile.profile.gguf");
    CHECK(el_profile_make(base_path, &pp, path) == EL_OK);
    el_model *mp = load_with(path);
    CHECK(mp && mp->profile);
    const el_profile_slot *slot = &mp->profile->slots[el_linear_slot(0, EL_LINEAR_Q)];
    int E = m->hp.n_embd, bos = el_token_bos(m);
    size_t per_chunk = (size_t)m->hp.n_ctx_train - 1, rows = n + (n + per_chunk - 1) / per_chunk;
    double *x = malloc(sizeof(double) * rows * E), *xs = malloc(sizeof(double) * rows * E);
    float *e = malloc(sizeof(float) * E);
    el_adapter *ad[2] = {0};
    CHECK(x && xs && e && el_adapter_load_exact(m, adapters[0], &ad[0]) == EL_OK &&
          el_adapter_load_exact(m, adapters[1], &ad[1]) == EL_OK);
    for (size_t r = 0; r < rows; r++) {
        size_t c = r / (per_chunk + 1), j = r % (per_chunk + 1);
        int32_t tok = j == 0 ? bos : ids[c * per_chunk + j - 1];
        el_type_kernels_get(m->tok_embd.type)
            ->to_float((const uint8_t *)m->tok_embd.data + (size_t)tok * m->tok_embd.row_bytes, e, E);
        double ss = 0;
        for (int i = 0; i < E; i++) ss += (double)e[i] * e[i];
        double sc = 1.0 / sqrt(ss / E + m->hp.rms_eps);
        for (int i = 0; i < E; i++) x[r * E + i] = m->layers[0].attn_norm[i] * (sc * e[i]);
    }
    /* x: the values of both runs, each row twice; the k-th largest of 2 N is the ceil(k/2)-th
     * of N */
    size_t nx = rows * E;
    for (size_t i = 0; i < nx; i++) xs[i] = fabs(x[i]);
    qsort(xs, nx, sizeof *xs, cmp_desc);
    size_t kx = (size_t)floor(2.0 * nx * (100.0 - percentile) / 100.0) + 1;
    double want_x = xs[(kx + 1) / 2 - 1] / 127.0;
    test_note("x: %.6g, computed %.6g, the largest %.6g", slot->x_scale, want_x, xs[0] / 127.0);
    CHECK(fabs(slot->x_scale - want_x) <= 1e-5 * want_x && xs[0] / 127.0 > 1.05 * want_x);
    /* t: |A_j x| of every row, rank values per row and adapter */
    size_t nt = 0;
    double *ts = malloc(sizeof(double) * rows * 64 * 2);
    CHECK(ts);
    for (int j = 0; j < 2; j++) {
        const el_lora_pair *q = &ad[j]->table[el_linear_slot(0, EL_LINEAR_Q)];
        float *a, *b;
        pair_floats(q, &a, &b);
        CHECK(q->a.n_out <= 64 && q->a.n_in == E);
        for (size_t r = 0; r < rows; r++)
            for (int64_t k = 0; k < q->a.n_out; k++) {
                double t = 0;
                for (int i = 0; i < E; i++) t += (double)a[k * E + i] * x[r * E + i];
                ts[nt++] = fabs(t);
            }
        free(a), free(b);
    }
    qsort(ts, nt, sizeof *ts, cmp_desc);
    size_t kt = (size_t)floor(nt * (100.0 - percentile) / 100.0) + 1;
    double want_t = ts[kt - 1] / 127.0;
    test_note("t: %.6g, computed %.6g, the largest %.6g", slot->t_scale, want_t, ts[0] / 127.0);
    CHECK(fabs(slot->t_scale - want_t) <= 1e-4 * want_t && ts[0] / 127.0 > 1.05 * want_t);
    free(ts), free(x), free(xs), free(e);
    el_adapter_free(ad[0]);
    el_adapter_free(ad[1]);
    el_model_free(m);
    el_model_free(mp);
    return TEST_PASS;
}

/* A base with static scales of its own (quantize --calibrate) keeps them in a profile made for
 * it; the adapters' scales are the profile's. */
static int test_profile_keeps_base_scales(void) {
    const char *text = test_data_path("corpus/en.txt");
    if (!text) return test_skip("../shared/data/corpus/en.txt is absent");
    const char *w8 = test_tmp_path("base.w8cal.gguf");
    el_quantize_params qp = el_quantize_default_params();
    qp.type = "w8";
    qp.calib_path = text;
    qp.calib_tokens = 512;
    CHECK(el_quantize(base_path, w8, &qp) == EL_OK);
    el_profile_params pp = el_profile_default_params();
    const char *adapters[] = {de_path};
    pp.adapters = adapters;
    pp.n_adapters = 1;
    pp.text_path = test_data_path("corpus/de.txt");
    CHECK(pp.text_path);
    pp.max_tokens = 512;
    pp.n_threads = 2;
    const char *path = test_tmp_path("w8cal.profile.gguf");
    CHECK(el_profile_make(w8, &pp, path) == EL_OK);
    el_model *m = NULL, *mp = NULL;
    el_model_params lp = el_model_default_params();
    lp.profile_path = path;
    CHECK(el_model_load(w8, NULL, &m) == EL_OK && el_model_load(w8, &lp, &mp) == EL_OK);
    const el_profile *pf = mp->profile;
    int kept = 0;
    for (int32_t i = 0; i < pf->n_slots; i++) {
        const el_weight *w = el_layer_weight(&m->layers[i / EL_N_LINEAR],
                                             (el_linear)(i % EL_N_LINEAR));
        /* (down's 688 inputs are no whole 32-value chunks: it stays f16, with float inputs) */
        CHECK(w->act_scale > 0 ? pf->slots[i].x_scale == w->act_scale : pf->slots[i].x_scale > 0);
        CHECK(pf->slots[i].a_scale > 0 && pf->slots[i].t_scale > 0);
        kept += w->act_scale > 0;
    }
    test_note("%d of %d slots keep the file's scales", kept, pf->n_slots);
    CHECK(kept >= pf->n_slots / 2);
    el_model_free(mp);
    el_model_free(m);
    return TEST_PASS;
}

/* A base of type `type` (its block type tb) under a profile takes the profile's x scales. */
static int base_takes_scales(const char *type, el_type tb) {
    char name[64];
    snprintf(name, sizeof name, "base.%s.gguf", type);
    const char *w8 = test_tmp_path(name);
    el_quantize_params qp = el_quantize_default_params();
    qp.type = type;
    CHECK(el_quantize(base_path, w8, &qp) == EL_OK);
    el_model *m = NULL;
    CHECK(el_model_load(w8, NULL, &m) == EL_OK);
    el_profile pf = {.n_slots = m->hp.n_layer * EL_N_LINEAR, .base = el_model_fingerprint(m),
                     .output_x_scale = 0.25f};
    pf.slots = calloc((size_t)pf.n_slots, sizeof *pf.slots);
    for (int32_t i = 0; i < pf.n_slots; i++) pf.slots[i].x_scale = 0.001f * (float)(i + 1);
    const char *path = test_tmp_path("w8.profile.gguf");
    CHECK(el_profile_write(&pf, path) == EL_OK);
    el_model_free(m);
    el_model_params mp = el_model_default_params();
    mp.profile_path = path;
    CHECK(el_model_load(w8, &mp, &m) == EL_OK);
    for (int32_t i = 0; i < pf.n_slots; i++) {
        const el_weight *w = el_layer_weight(&m->layers[i / EL_N_LINEAR],
                                             (el_linear)(i % EL_N_LINEAR));
        CHECK(w->act_scale == (w->type == tb ? pf.slots[i].x_scale : 0.0f));
    }
    CHECK(m->layers[0].wq.type == tb);
    /* the head: w8's, or q4_0's q6_k (q8_K activations), takes the profile's scale too */
    el_type head_act = el_type_kernels_get(m->output.type)->vec_dot_type;
    bool head_static = el_kernels_get()->quantize_static[head_act] != NULL;
    test_note("%s base: head %s, %s", type, el_type_layout_get(m->output.type)->name,
              head_static ? "static" : "its own scales");
    CHECK(m->output.act_scale == (head_static ? 0.25f : 0.0f));
    el_model_free(m);
    /* a scale the f16 of a q8_0 block cannot hold is refused when the profile loads */
    if (tb == EL_TYPE_Q4_0) {
        for (int k = 0; k < 2; k++) {
            pf.slots[0].x_scale = k ? 1e5f : 1e-6f;
            CHECK(el_profile_write(&pf, path) == EL_OK);
            CHECK(el_model_load(w8, &mp, &m) == EL_ERR_MISMATCH);
            CHECK(strstr(el_last_error(), "layer 0 attn_q.weight: scale x = ") &&
                  strstr(el_last_error(), "does not fit the f16 scale of q4_0's activation"));
        }
    }
    free(pf.slots);
    return TEST_PASS;
}

/* W8 (int8 activations at a static scale) and Q4_0, whose q8_0 activation blocks then all hold
 * the profile's scale (the product: test_act_scales). */
static int test_base_takes_scales(void) {
    CHECK(base_takes_scales("w8", EL_TYPE_W8) == TEST_PASS);
    return base_takes_scales("q4_0", EL_TYPE_Q4_0);
}

/* Loading the base with the profile at path fails with want, the message naming the file and
 * holding needle. */
static int refused(const char *path, el_status want, const char *needle) {
    el_model_params mp = el_model_default_params();
    mp.profile_path = path;
    el_model *m = NULL;
    el_status st = el_model_load(base_path, &mp, &m);
    if (st == want && !m && strstr(el_last_error(), path) && strstr(el_last_error(), needle))
        return 1;
    test_note("%s: status %d, '%s' (wanted %d and '%s')", path, st, el_last_error(), want,
              needle);
    el_model_free(m);
    return 0;
}

/* The adapter at src written again with adapter.profile = id. */
static int retag(const char *src, const char *dst, uint64_t id) {
    gguf_file *f = NULL;
    if (gguf_open(src, &f) != EL_OK) return 0;
    gguf_writer *w = gguf_writer_create();
    int ok = w && gguf_writer_copy_kv(w, f) == EL_OK &&
             gguf_writer_set_u64(w, "adapter.profile", id) == EL_OK;
    for (uint64_t i = 0; ok && i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        ok = gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->nbytes) ==
             EL_OK;
    }
    ok = ok && gguf_writer_write(w, dst) == EL_OK;
    gguf_writer_free(w);
    gguf_close(f);
    return ok;
}

static int test_refusals(void) {
    el_model *mf = load_with(NULL);
    el_adapter *af = NULL;
    CHECK(mf && el_adapter_load_exact(mf, de_path, &af) == EL_OK);
    el_profile good = hand_profile(mf, af, 1.0f);
    good.slots[0].x_scale = 0.0123456f; /* a value to find in the file */
    const char *path = test_tmp_path("bad.profile.gguf");

    el_profile p = good;
    p.base ^= 1;
    CHECK(el_profile_write(&p, path) == EL_OK && refused(path, EL_ERR_MISMATCH, "another model"));
    p = good;
    p.slots = malloc(sizeof *p.slots * (size_t)p.n_slots);
    memcpy(p.slots, good.slots, sizeof *p.slots * (size_t)p.n_slots);
    p.slots[3].t_scale = NAN;
    CHECK(el_profile_write(&p, path) == EL_OK && refused(path, EL_ERR_FORMAT, "scale t = nan"));
    p.slots[3].t_scale = 0; /* a, b set, t not */
    CHECK(el_profile_write(&p, path) == EL_OK && refused(path, EL_ERR_FORMAT, "partly zero"));
    p.slots[3].t_scale = -1;
    CHECK(el_profile_write(&p, path) == EL_OK && refused(path, EL_ERR_FORMAT, "scale t = -1"));
    free(p.slots);
    CHECK(refused(de_path, EL_ERR_FORMAT, "not a quantization profile"));

    /* a scale changed in the file: the id no longer matches */
    CHECK(el_profile_write(&good, path) == EL_OK);
    size_t size = 0;
    char *bytes = test_read_file(path, &size);
    CHECK(bytes);
    char *at = memmem(bytes, size, &good.slots[0].x_scale, sizeof(float));
    CHECK(at);
    at[0] ^= 1;
    FILE *fo = fopen(path, "wb");
    CHECK(fo && fwrite(bytes, 1, size, fo) == size && fclose(fo) == 0);
    CHECK(refused(path, EL_ERR_FORMAT, "damaged"));
    /* truncated */
    fo = fopen(path, "wb");
    CHECK(fo && fwrite(bytes, 1, size - 9, fo) == size - 9 && fclose(fo) == 0);
    CHECK(refused(path, EL_ERR_FORMAT, ""));
    free(bytes);

    /* an adapter changing a slot the profile has no scales for */
    p = good;
    p.slots = calloc((size_t)p.n_slots, sizeof *p.slots);
    for (int32_t i = 0; i < p.n_slots; i++) p.slots[i].x_scale = 0.02f;
    CHECK(el_profile_write(&p, path) == EL_OK);
    free(p.slots);
    el_model *mp = load_with(path);
    el_adapter *ad = NULL;
    CHECK(mp && el_adapter_load(mp, de_path, &ad) == EL_ERR_MISMATCH && !ad);
    CHECK(strstr(el_last_error(), de_path) && strstr(el_last_error(), "no adapter scales"));
    el_model_free(mp);

    /* adapters tuned for a profile: refused without it or under another, taken under it */
    CHECK(el_profile_write(&good, path) == EL_OK);
    mp = load_with(path);
    CHECK(mp);
    const char *tagged = test_tmp_path("tagged.gguf");
    CHECK(retag(de_path, tagged, mp->profile->id ^ 1));
    CHECK(el_adapter_load(mp, tagged, &ad) == EL_ERR_MISMATCH);
    CHECK(strstr(el_last_error(), tagged) && strstr(el_last_error(), path));
    CHECK(el_adapter_load(mf, tagged, &ad) == EL_ERR_MISMATCH);
    CHECK(strstr(el_last_error(), "--profile"));
    CHECK(retag(de_path, tagged, mp->profile->id));
    CHECK(el_adapter_load(mp, tagged, &ad) == EL_OK);
    /* the model still serves after the refusals */
    char *text = NULL;
    float *logits = malloc(sizeof(float) * (size_t)mp->hp.n_vocab);
    CHECK(run_prompt(mp, tagged, logits, &text) && strlen(text) > 0);
    free(text);
    free(logits);
    el_adapter_free(ad);
    el_model_free(mp);
    free(good.slots);
    el_adapter_free(af);
    el_model_free(mf);
    return TEST_PASS;
}

int main(void) {
    run_test("int_terms_exact", test_int_terms_exact);
    run_test("calibrated_profile", test_calibrated_profile);
    run_test("profile_keeps_base_scales", test_profile_keeps_base_scales);
    run_test("percentiles_of_x_and_t", test_percentiles);
    run_test("base_takes_scales", test_base_takes_scales);
    run_test("refusals", test_refusals);
    return tests_exit_code();
}
