/* calibrate.c - the range of |x| at the input of every matmul, over calibration text.
 *
 * The model is run by the inference forward itself (an el_context and el_decode), with an
 * observer on its matmuls (model/forward.h), so the activations measured are exactly those the
 * runtime will quantize. Every row's logits are asked for, so the output head sees every token
 * as the layer weights do.
 *
 * The range is a percentile of |x| over every element (el_quantize's default: 99.99), the
 * maximum at 100. The maximum is set by a handful of outliers and grows with the amount of
 * calibration text, coarsening the step of every other value; a high percentile clips those
 * few and is stable; a lower one clips too much (docs/quantize.md measures each). The
 * percentile is exact: each
 * input keeps a heap of its largest values, as many as lie above the percentile (which the
 * number of rows fixes before the run), so no histogram binning is involved. */
#include "compress/calibrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mapfile.h"
#include "model/prune.h"
#include "runtime/context.h"
#include "tokenizer/vocab.h"

enum {
    MAX_CHUNK = 512,          /* tokens per chunk at most (a longer context gains nothing) */
    BYTES_PER_TOKEN_MAX = 16, /* to tokenize only the prefix of the text that is needed */
    MIN_PERCENTILE = 90       /* lower ones clip too much to be useful, and hold many values */
};

void el_top_k_add(el_top_k *t, float a) {
    if (t->n < t->k) {
        int64_t i = t->n++;
        for (; i > 0 && t->v[(i - 1) / 2] > a; i = (i - 1) / 2) t->v[i] = t->v[(i - 1) / 2];
        t->v[i] = a;
        return;
    }
    if (a <= t->v[0]) return;
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= t->n) break;
        if (c + 1 < t->n && t->v[c + 1] < t->v[c]) c++;
        if (t->v[c] >= a) break;
        t->v[i] = t->v[c];
        i = c;
    }
    t->v[i] = a;
}

el_status el_top_k_init(el_top_k *t, double n_values, double percentile) {
    t->n = 0;
    t->k = (int64_t)floor(n_values * (100.0 - percentile) / 100.0) + 1;
    t->v = malloc((size_t)t->k * sizeof(float));
    return t->v ? EL_OK
                : el_error(EL_ERR_NOMEM, "out of memory for the calibration of %lld values",
                           (long long)t->k);
}

float el_top_k_value(const el_top_k *t) { return t->n > 0 ? t->v[0] : 0.0f; }

typedef struct observer {
    const el_model *m;
    el_top_k *top; /* [n_ranges] */
    int32_t n_ranges;
} observer;

static void observe(void *user, int il, el_linear which, const float *x, int64_t ldx,
                    int32_t n_rows) {
    const observer *o = user;
    const el_weight *w = il < 0 ? &o->m->output : el_layer_weight(&o->m->layers[il], which);
    el_top_k *t = &o->top[il < 0 ? o->n_ranges - 1 : el_linear_slot(il, which)];
    for (int32_t row = 0; row < n_rows; row++)
        for (int64_t i = 0; i < w->k_in; i++) {
            float a = fabsf(x[row * ldx + i]);
            if (t->n < t->k || a > t->v[0]) el_top_k_add(t, a);
        }
}

/* Heaps of the largest |x| each range needs: the values above the percentile among the n_rows
 * rows of its input, and the one at it. */
static el_status observer_init(observer *o, const el_model *m, int32_t n_ranges, int64_t n_rows,
                               double percentile) {
    *o = (observer){.m = m, .n_ranges = n_ranges};
    o->top = calloc((size_t)n_ranges, sizeof *o->top);
    if (!o->top) return el_error(EL_ERR_NOMEM, "%s: out of memory", m->path);
    for (int32_t i = 0; i < n_ranges; i++) {
        const el_weight *w = i == n_ranges - 1
                                 ? &m->output
                                 : el_layer_weight(&m->layers[i / EL_N_LINEAR],
                                                   (el_linear)(i % EL_N_LINEAR));
        el_status st = el_top_k_init(&o->top[i], (double)n_rows * (double)w->k_in, percentile);
        if (st) return st;
    }
    return EL_OK;
}

static void observer_free(observer *o) {
    for (int32_t i = 0; o->top && i < o->n_ranges; i++) free(o->top[i].v);
    free(o->top);
}

static el_status name_ranges(const el_model *m, el_calibration *c) {
    c->n_ranges = m->hp.n_layer * EL_N_LINEAR + 1;
    c->ranges = calloc((size_t)c->n_ranges, sizeof *c->ranges);
    if (!c->ranges) return el_error(EL_ERR_NOMEM, "%s: out of memory", m->path);
    for (int il = 0; il < m->hp.n_layer; il++)
        for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++)
            /* the parts of a fused tensor share their input, so their ranges agree and the
             * tensor's one scale is any of them */
            snprintf(c->ranges[el_linear_slot(il, w)].name, sizeof c->ranges[0].name, "blk.%d.%s",
                     il, el_model_linear_tensor(m, w, &(int64_t){0}));
    bool tied = !gguf_find_tensor(m->gguf, "output.weight");
    snprintf(c->ranges[c->n_ranges - 1].name, sizeof c->ranges[0].name, "%s",
             tied ? "token_embd.weight" : "output.weight");
    return EL_OK;
}

el_status el_calib_read_tokens(const el_model *m, const char *text_path, int64_t max_tokens,
                               el_tokens *t) {
    el_mapped_file f;
    el_status st = el_map_file(text_path, &f);
    if (st) return st;
    size_t len = f.size;
    if ((uint64_t)max_tokens < SIZE_MAX / BYTES_PER_TOKEN_MAX &&
        len > (size_t)max_tokens * BYTES_PER_TOKEN_MAX)
        len = (size_t)max_tokens * BYTES_PER_TOKEN_MAX;
    st = el_vocab_tokenize(m->vocab, f.data ? (const char *)f.data : "", len, false, false, t);
    el_unmap_file(&f);
    if (st) return st;
    if (t->n == 0) return el_error(EL_ERR_INVALID_ARG, "%s: no calibration text", text_path);
    if (t->n > (size_t)max_tokens) t->n = (size_t)max_tokens;
    return EL_OK;
}

el_status el_calib_run_chunks(el_context *ctx, const int32_t *tokens, size_t n, int32_t n_ctx,
                              el_calib_progress_fn progress, void *user) {
    const el_model *m = ctx->model;
    int32_t bos = el_token_adds_bos(m) ? el_token_bos(m) : -1; /* as perplexity chunks */
    int32_t per_chunk = n_ctx - (bos >= 0);
    int32_t *chunk = malloc((size_t)n_ctx * sizeof *chunk);
    int32_t *pos = malloc((size_t)n_ctx * sizeof *pos);
    int32_t *seq = calloc((size_t)n_ctx, sizeof *seq);
    int8_t *want = malloc((size_t)n_ctx);
    el_status st = chunk && pos && seq && want ? EL_OK
                                               : el_error(EL_ERR_NOMEM, "%s: out of memory",
                                                          m->path);
    for (size_t done = 0; st == EL_OK && done < n; done += (size_t)per_chunk) {
        int32_t k = 0;
        if (bos >= 0) chunk[k++] = bos;
        for (size_t i = done; i < n && k < n_ctx; i++) chunk[k++] = tokens[i];
        for (int32_t i = 0; i < k; i++) {
            pos[i] = i;
            want[i] = 1;
        }
        el_kv_clear(ctx);
        el_batch b = {.n_rows = k, .token = chunk, .pos = pos, .seq_id = seq, .logits = want};
        st = el_decode(ctx, &b);
        size_t now = done + (size_t)per_chunk < n ? done + (size_t)per_chunk : n;
        if (st == EL_OK && progress && !progress(user, (int64_t)now, (int64_t)n))
            st = el_error(EL_ERR_CANCELLED, "calibration cancelled");
    }
    free(chunk);
    free(pos);
    free(seq);
    free(want);
    return st;
}

/* The first max_tokens of n ids, each a token of m's vocabulary. */
static el_status calib_copy_ids(const el_model *m, const int32_t *ids, size_t n,
                                int64_t max_tokens, el_tokens *t) {
    if (n == 0) return el_error(EL_ERR_INVALID_ARG, "calibration: no tokens given");
    if (n > (size_t)max_tokens) n = (size_t)max_tokens;
    el_status st = EL_OK;
    for (size_t i = 0; i < n && st == EL_OK; i++)
        st = ids[i] >= 0 && ids[i] < m->hp.n_vocab
                 ? el_tokens_push(t, ids[i])
                 : el_error(EL_ERR_INVALID_ARG, "calibration: token id %d is not one of "
                            "the %d of %s", ids[i], m->hp.n_vocab, m->path);
    return st;
}

el_status el_calib_open(const char *model_path, const char *text_path, const int32_t *ids,
                        size_t n_ids, int64_t max_tokens, double percentile, int32_t n_threads,
                        const char *what, el_calib_run *r) {
    memset(r, 0, sizeof *r);
    if (max_tokens < 1)
        return el_error(EL_ERR_INVALID_ARG, "%s: %lld tokens, need at least 1", what,
                        (long long)max_tokens);
    if (!(percentile >= MIN_PERCENTILE && percentile <= 100.0))
        return el_error(EL_ERR_INVALID_ARG, "%s: percentile %g is not from %g to 100", what,
                        percentile, (double)MIN_PERCENTILE);
    /* a model with static scales of its own is measured with per-token ones */
    el_model_params mp = el_model_default_params();
    mp.ignore_act_scales = true;
    el_status st = el_model_load(model_path, &mp, &r->m);
    if (st == EL_OK) st = el_prune_refuse(r->m, what);
    if (st == EL_OK && !r->m->vocab)
        st = el_error(EL_ERR_INVALID_ARG, "%s: calibration needs a tokenizer in the model file",
                      model_path);
    if (st == EL_OK)
        st = text_path ? el_calib_read_tokens(r->m, text_path, max_tokens, &r->tokens)
                       : calib_copy_ids(r->m, ids, n_ids, max_tokens, &r->tokens);
    r->n_ctx = r->m && r->m->hp.n_ctx_train < MAX_CHUNK ? r->m->hp.n_ctx_train : MAX_CHUNK;
    if (st == EL_OK && r->n_ctx < 2)
        st = el_error(EL_ERR_UNSUPPORTED, "%s: a context of %d tokens is too short to calibrate",
                      model_path, r->n_ctx);
    el_context_params cp = el_context_default_params();
    cp.n_ctx = r->n_ctx;
    cp.n_batch = r->n_ctx;
    cp.n_threads = n_threads;
    cp.kv_type = EL_KV_F32; /* the activations of exact float arithmetic, whatever runs later */
    if (st == EL_OK) st = el_context_create(r->m, &cp, &r->ctx);
    if (st == EL_OK) {
        /* rows: every token, and the BOS each chunk starts with */
        int64_t per_chunk = r->n_ctx - el_token_adds_bos(r->m);
        int64_t n_chunks = ((int64_t)r->tokens.n + per_chunk - 1) / per_chunk;
        r->n_rows = (int64_t)r->tokens.n + (per_chunk < r->n_ctx ? n_chunks : 0);
    }
    if (st) el_calib_close(r);
    return st;
}

void el_calib_close(el_calib_run *r) {
    el_tokens_free(&r->tokens);
    el_context_free(r->ctx);
    el_model_free(r->m);
    memset(r, 0, sizeof *r);
}

el_status el_calibrate(const char *model_path, const char *text_path, int64_t max_tokens,
                       double percentile, int32_t n_threads, el_calib_progress_fn progress,
                       void *user, el_calibration *out) {
    memset(out, 0, sizeof *out);
    el_calib_run r;
    observer o = {0};
    el_status st = el_calib_open(model_path, text_path, NULL, 0, max_tokens, percentile,
                                 n_threads, "calibration", &r);
    if (st) return st;
    st = name_ranges(r.m, out);
    if (st == EL_OK) st = observer_init(&o, r.m, out->n_ranges, r.n_rows, percentile);
    if (st == EL_OK) {
        r.ctx->fwd.observe = observe;
        r.ctx->fwd.observe_user = &o;
        st = el_calib_run_chunks(r.ctx, r.tokens.ids, r.tokens.n, r.n_ctx, progress, user);
        out->n_tokens = (int64_t)r.tokens.n;
        for (int32_t i = 0; i < out->n_ranges; i++)
            out->ranges[i].amax = el_top_k_value(&o.top[i]);
    }
    observer_free(&o);
    el_calib_close(&r);
    if (st) el_calibration_free(out);
    return st;
}

void el_calibration_free(el_calibration *c) {
    free(c->ranges);
    memset(c, 0, sizeof *c);
}

float el_calibration_scale(const el_calibration *c, const char *weight_name) {
    for (int32_t i = 0; i < c->n_ranges; i++)
        if (strcmp(c->ranges[i].name, weight_name) == 0) return c->ranges[i].amax / 127.0f;
    return 0.0f;
}
