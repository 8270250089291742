/* corr.c - x x^T at the input of every weight, accumulated by an observer on the inference
 * forward's matmuls (model/forward.h), so the statistics are those of the activations the
 * runtime computes. Each observed batch of rows is widened to double and added with one dsyrk
 * (upper triangle), mirrored once at the end. Q, K and V share one input, as do gate and up, so
 * only Q's, gate's, down's and O's inputs are observed. */
#include "compress/corr.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "runtime/context.h"

enum { MAX_CHUNK = 512 }; /* tokens per chunk at most, as the activation calibration */

typedef struct corr_observer {
    const el_model *m;
    int32_t l0, l1;
    el_layer_corr *out;
    double *head; /* the output head's, or NULL */
    double *xd;   /* [n_ctx][widest input] the observed rows as doubles */
} corr_observer;

static int64_t widest_input(const el_hparams *hp) {
    int64_t w = hp->n_embd > hp->n_ff ? hp->n_embd : hp->n_ff;
    int64_t o = (int64_t)hp->n_head * hp->head_dim_v;
    return w > o ? w : o;
}

/* dst (n x n, upper triangle) += the rows' x x^T */
static void accumulate(corr_observer *o, double *dst, int64_t n, const float *x, int64_t ldx,
                       int32_t n_rows) {
    for (int32_t r = 0; r < n_rows; r++)
        for (int64_t i = 0; i < n; i++) o->xd[r * n + i] = x[r * ldx + i];
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)n, n_rows, 1.0, o->xd, (int)n, 1.0, dst,
                (int)n);
}

static void observe(void *user, int il, el_linear which, const float *x, int64_t ldx,
                    int32_t n_rows) {
    corr_observer *o = user;
    if (il < 0 && o->head) {
        accumulate(o, o->head, o->m->hp.n_embd, x, ldx, n_rows);
        return;
    }
    if (il < o->l0 || il >= o->l1) return;
    el_layer_corr *c = &o->out[il - o->l0];
    double *dst = which == EL_LINEAR_Q      ? c->attn_in
                  : which == EL_LINEAR_GATE ? c->ffn_in
                  : which == EL_LINEAR_DOWN ? c->ffn_mid
                  : which == EL_LINEAR_O    ? c->attn_out
                                            : NULL;
    if (!dst) return;
    accumulate(o, dst, el_layer_weight(&o->m->layers[il], which)->n_in, x, ldx, n_rows);
}

static void mirror(double *c, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < i; j++) c[i * n + j] = c[j * n + i];
}

uint64_t el_layer_corr_bytes(const el_model *m) {
    const el_hparams *hp = &m->hp;
    uint64_t e = (uint64_t)hp->n_embd, f = (uint64_t)hp->n_ff,
             o = (uint64_t)hp->n_head * (uint64_t)hp->head_dim_v;
    return (2 * e * e + f * f + o * o) * sizeof(double);
}

void el_layer_corr_free(el_layer_corr *c) {
    free(c->attn_in);
    free(c->ffn_in);
    free(c->ffn_mid);
    free(c->attn_out);
    memset(c, 0, sizeof *c);
}

static el_status layer_corr_alloc(const el_model *m, el_layer_corr *c) {
    const el_hparams *hp = &m->hp;
    size_t e = (size_t)hp->n_embd, f = (size_t)hp->n_ff, o = (size_t)hp->n_head * hp->head_dim_v;
    c->attn_in = calloc(e * e, sizeof(double));
    c->ffn_in = calloc(e * e, sizeof(double));
    c->ffn_mid = calloc(f * f, sizeof(double));
    c->attn_out = calloc(o * o, sizeof(double));
    if (c->attn_in && c->ffn_in && c->ffn_mid && c->attn_out) return EL_OK;
    el_layer_corr_free(c);
    return el_error(EL_ERR_NOMEM, "%s: out of memory for the correlations of a layer (%.0f MB)",
                    m->path, (double)el_layer_corr_bytes(m) / 1e6);
}

el_status el_corr_open(const char *model_path, const char *text_path, int64_t max_tokens,
                       int64_t min_tokens, int32_t n_threads, el_corr_run *run) {
    memset(run, 0, sizeof *run);
    el_model_params mp = el_model_default_params();
    mp.ignore_act_scales = true;
    el_status st = el_model_load(model_path, &mp, &run->model);
    el_model *m = run->model;
    if (st == EL_OK && !m->vocab)
        st = el_error(EL_ERR_INVALID_ARG, "%s: calibration needs a tokenizer in the model file",
                      model_path);
    if (st == EL_OK) st = el_calib_read_tokens(m, text_path, max_tokens, &run->tokens);
    if (st == EL_OK && (int64_t)run->tokens.n < min_tokens)
        st = el_error(EL_ERR_INVALID_ARG,
                      "%s: calibration text too short: %zu tokens, need at least %lld", text_path,
                      run->tokens.n, (long long)min_tokens);
    run->n_ctx = m && m->hp.n_ctx_train < MAX_CHUNK ? m->hp.n_ctx_train : MAX_CHUNK;
    if (st == EL_OK && run->n_ctx < 2)
        st = el_error(EL_ERR_UNSUPPORTED, "%s: a context of %d tokens is too short to calibrate",
                      model_path, run->n_ctx);
    el_context_params cp = el_context_default_params();
    cp.n_ctx = run->n_ctx;
    cp.n_batch = run->n_ctx;
    cp.n_threads = n_threads;
    cp.kv_type = EL_KV_F32; /* the activations of exact float arithmetic */
    if (st == EL_OK) st = el_context_create(m, &cp, &run->ctx);
    if (st) el_corr_close(run);
    return st;
}

void el_corr_close(el_corr_run *run) {
    el_context_free(run->ctx);
    el_tokens_free(&run->tokens);
    el_model_free(run->model);
    memset(run, 0, sizeof *run);
}

el_status el_corr_collect(el_corr_run *run, int32_t l0, int32_t l1, double *head,
                          el_calib_progress_fn progress, void *user, el_layer_corr *out) {
    const el_model *m = run->model;
    memset(out, 0, (size_t)(l1 - l0) * sizeof *out);
    corr_observer o = {.m = m, .l0 = l0, .l1 = l1, .out = out, .head = head};
    el_status st = EL_OK;
    for (int32_t il = l0; st == EL_OK && il < l1; il++) st = layer_corr_alloc(m, &out[il - l0]);
    if (st == EL_OK &&
        !(o.xd = malloc((size_t)run->n_ctx * (size_t)widest_input(&m->hp) * sizeof(double))))
        st = el_error(EL_ERR_NOMEM, "%s: out of memory", m->path);
    if (st == EL_OK) {
        run->ctx->fwd.observe = observe;
        run->ctx->fwd.observe_user = &o;
        st = el_calib_run_chunks(run->ctx, run->tokens.ids, run->tokens.n, run->n_ctx, progress,
                                 user);
        run->ctx->fwd.observe = NULL;
    }
    free(o.xd);
    for (int32_t il = l0; st == EL_OK && il < l1; il++) {
        el_layer_corr *c = &out[il - l0];
        mirror(c->attn_in, m->hp.n_embd);
        mirror(c->ffn_in, m->hp.n_embd);
        mirror(c->ffn_mid, m->hp.n_ff);
        mirror(c->attn_out, (int64_t)m->hp.n_head * m->hp.head_dim_v);
    }
    if (st == EL_OK && head) mirror(head, m->hp.n_embd);
    if (st)
        for (int32_t il = l0; il < l1; il++) el_layer_corr_free(&out[il - l0]);
    return st;
}
