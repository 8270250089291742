/* calibrate.c - the largest |x| at the input of every matmul, over calibration text.
 *
 * The model is run by the inference forward itself (an el_context and el_decode), with an
 * observer on its matmuls (model/forward.h), so the activations measured are exactly those the
 * runtime will quantize. Every row's logits are asked for, so the output head sees every token
 * as the layer weights do.
 *
 * The statistic is the maximum, not a percentile: the few channels of large magnitude that
 * transformer activations have carry much of the signal, and clipping them (what a 99.9th
 * percentile would do) hurts more than the coarser step the maximum gives the rest; a
 * maximum also needs no histogram. docs/quantize.md has the figures. */
#include "compress/calibrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mapfile.h"
#include "runtime/context.h"
#include "tokenizer/vocab.h"

enum {
    MAX_CHUNK = 512,          /* tokens per chunk at most (a longer context gains nothing) */
    BYTES_PER_TOKEN_MAX = 16  /* to tokenize only the prefix of the text that is needed */
};

static int32_t n_linear(void) { return EL_LINEAR_DOWN + 1; }

typedef struct observer {
    const el_model *m;
    el_calibration *c;
} observer;

static void observe(void *user, int il, el_linear which, const float *x, int64_t ldx,
                    int32_t n_rows) {
    const observer *o = user;
    const el_weight *w = il < 0 ? &o->m->output : el_layer_weight(&o->m->layers[il], which);
    int32_t k = il < 0 ? o->c->n_ranges - 1 : il * n_linear() + (int32_t)which;
    el_act_range *r = &o->c->ranges[k];
    float amax = r->amax;
    for (int32_t row = 0; row < n_rows; row++)
        for (int64_t i = 0; i < w->k_in; i++) amax = fmaxf(amax, fabsf(x[row * ldx + i]));
    r->amax = amax;
}

static el_status name_ranges(const el_model *m, el_calibration *c) {
    c->n_ranges = m->hp.n_layer * n_linear() + 1;
    c->ranges = calloc((size_t)c->n_ranges, sizeof *c->ranges);
    if (!c->ranges) return el_error(EL_ERR_NOMEM, "%s: out of memory", m->path);
    for (int il = 0; il < m->hp.n_layer; il++)
        for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++)
            snprintf(c->ranges[il * n_linear() + w].name, sizeof c->ranges[0].name, "blk.%d.%s",
                     il, el_linear_tensor_suffix(w));
    bool tied = !gguf_find_tensor(m->gguf, "output.weight");
    snprintf(c->ranges[c->n_ranges - 1].name, sizeof c->ranges[0].name, "%s",
             tied ? "token_embd.weight" : "output.weight");
    return EL_OK;
}

/* The first max_tokens tokens of the text (fewer if it is shorter), into t. */
static el_status read_tokens(const el_model *m, const char *text_path, int64_t max_tokens,
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

/* Runs the chunks of tokens through ctx, reporting after each. */
static el_status run_chunks(el_context *ctx, const int32_t *tokens, size_t n, int32_t n_ctx,
                            el_calib_progress_fn progress, void *user) {
    const el_model *m = ctx->model;
    int32_t bos = el_token_bos(m);
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
            st = el_error(EL_ERR_IO, "calibration cancelled");
    }
    free(chunk);
    free(pos);
    free(seq);
    free(want);
    return st;
}

el_status el_calibrate(const char *model_path, const char *text_path, int64_t max_tokens,
                       int32_t n_threads, el_calib_progress_fn progress, void *user,
                       el_calibration *out) {
    memset(out, 0, sizeof *out);
    if (max_tokens < 1)
        return el_error(EL_ERR_INVALID_ARG, "calibration: %lld tokens, need at least 1",
                        (long long)max_tokens);
    el_model *m = NULL;
    el_context *ctx = NULL;
    el_tokens tokens = {0};
    /* a model with static scales of its own is measured with per-token ones */
    el_model_params mp = el_model_default_params();
    mp.ignore_act_scales = true;
    el_status st = el_model_load(model_path, &mp, &m);
    if (st == EL_OK && !m->vocab)
        st = el_error(EL_ERR_INVALID_ARG, "%s: calibration needs a tokenizer in the model file",
                      model_path);
    if (st == EL_OK) st = read_tokens(m, text_path, max_tokens, &tokens);
    int32_t n_ctx = m && m->hp.n_ctx_train < MAX_CHUNK ? m->hp.n_ctx_train : MAX_CHUNK;
    if (st == EL_OK && n_ctx < 2)
        st = el_error(EL_ERR_UNSUPPORTED, "%s: a context of %d tokens is too short to calibrate",
                      model_path, n_ctx);
    el_context_params cp = el_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = n_ctx;
    cp.n_threads = n_threads;
    if (st == EL_OK) st = el_context_create(m, &cp, &ctx);
    if (st == EL_OK) st = name_ranges(m, out);
    if (st == EL_OK) {
        observer o = {.m = m, .c = out};
        ctx->fwd.observe = observe;
        ctx->fwd.observe_user = &o;
        st = run_chunks(ctx, tokens.ids, tokens.n, n_ctx, progress, user);
        out->n_tokens = (int64_t)tokens.n;
    }
    el_tokens_free(&tokens);
    el_context_free(ctx);
    el_model_free(m);
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
