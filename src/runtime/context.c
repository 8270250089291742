/* context.c - contexts, el_decode and the KV cache calls of the public API. */
#include "runtime/context.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/prune.h"
#include "runtime/adapter.h"

/* Sequences are bits of a cell's bitset; a generous bound keeps the bitsets small. Chunks of 128
 * rows keep the forward's scratch small (19 MB for Llama-3.2-1B at n_batch 512, against 63 for
 * 512-row chunks) and are as fast as larger ones: the matmuls stream the weights once per 64
 * activation rows anyway. */
enum { EL_MAX_SEQ = 4096, EL_DEFAULT_MAX_CTX = 4096, EL_DEFAULT_UBATCH = 128 };

el_context_params el_context_default_params(void) {
    return (el_context_params){
        .n_ctx = 0, .n_batch = 512, .n_ubatch = 0, .n_seq_max = 1, .n_threads = 0,
        .kv_type = EL_KV_F16};
}

el_status el_context_create(el_model *model, const el_context_params *params, el_context **out) {
    *out = NULL;
    if (!model)
        return el_error(EL_ERR_INVALID_ARG, "el_context_create: NULL model");
    if (!model->has_weights)
        return el_error(EL_ERR_INVALID_ARG,
                        "%s: the model has no weights (vocabulary only): it can tokenize but "
                        "cannot run a context", model->path);
    el_context_params p = params ? *params : el_context_default_params();
    if (p.n_ctx == 0)
        p.n_ctx = model->hp.n_ctx_train < EL_DEFAULT_MAX_CTX ? model->hp.n_ctx_train
                                                              : EL_DEFAULT_MAX_CTX;
    if (p.n_ubatch == 0)
        p.n_ubatch = EL_DEFAULT_UBATCH;
    if (p.n_ctx < 1 || p.n_batch < 1 || p.n_ubatch < 1 || p.n_seq_max < 1 ||
        p.n_seq_max > EL_MAX_SEQ || p.n_threads < 0)
        return el_error(EL_ERR_INVALID_ARG,
                        "context: invalid parameters (n_ctx %d, n_batch %d, n_ubatch %d, n_seq_max "
                        "%d (1..%d), n_threads %d)", p.n_ctx, p.n_batch, p.n_ubatch, p.n_seq_max,
                        EL_MAX_SEQ, p.n_threads);
    if (p.kv_type != EL_KV_F16 && p.kv_type != EL_KV_F32)
        return el_error(EL_ERR_INVALID_ARG, "context: invalid kv_type %d (EL_KV_F16 %d or "
                        "EL_KV_F32 %d)", (int)p.kv_type, (int)EL_KV_F16, (int)EL_KV_F32);
    if (p.n_batch > p.n_ctx)
        p.n_batch = p.n_ctx;
    if (p.n_ubatch > p.n_batch)
        p.n_ubatch = p.n_batch;

    el_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return el_error(EL_ERR_NOMEM, "context: out of memory");
    ctx->model = model;
    ctx->params = p;
    const el_hparams *hp = &model->hp;
    el_status st = el_threadpool_create(p.n_threads, &ctx->tp);
    if (!st)
        st = el_kv_cache_init(&ctx->kv, p.kv_type == EL_KV_F16 ? EL_TYPE_F16 : EL_TYPE_F32,
                              hp->n_layer, p.n_ctx, p.n_seq_max, hp->n_head_kv, hp->head_dim_k,
                              hp->head_dim_v);
    if (!st)
        st = el_forward_init(&ctx->fwd, model, &ctx->kv, ctx->tp, p.n_batch, p.n_ubatch);
    if (!st) {
        ctx->cells = malloc((size_t)p.n_batch * sizeof *ctx->cells);
        ctx->out_rows = malloc((size_t)p.n_batch * sizeof *ctx->out_rows);
        ctx->logit_index = malloc((size_t)p.n_batch * sizeof *ctx->logit_index);
        ctx->bind = calloc((size_t)p.n_seq_max, sizeof *ctx->bind);
        ctx->row_group = malloc((size_t)p.n_batch * sizeof *ctx->row_group);
        ctx->group_rows = malloc((size_t)p.n_batch * sizeof *ctx->group_rows);
        ctx->groups = malloc((size_t)p.n_batch * sizeof *ctx->groups);
        ctx->group_seq = malloc((size_t)p.n_batch * sizeof *ctx->group_seq);
        if (!ctx->cells || !ctx->out_rows || !ctx->logit_index || !ctx->bind ||
            !ctx->row_group || !ctx->group_rows || !ctx->groups || !ctx->group_seq)
            st = el_error(EL_ERR_NOMEM, "context: out of memory");
    }
    if (!st && model->prune) {
        ctx->seq_rate = malloc((size_t)p.n_seq_max * sizeof *ctx->seq_rate);
        ctx->row_rate = malloc((size_t)p.n_batch * sizeof *ctx->row_rate);
        if (!ctx->seq_rate || !ctx->row_rate)
            st = el_error(EL_ERR_NOMEM, "context: out of memory");
        else
            for (int32_t i = 0; i < p.n_seq_max; i++)
                ctx->seq_rate[i] = -1;
        ctx->prune_rate = model->prune->context_rate;
        if (ctx->prune_rate > 0)
            el_prune_release(model, ctx->prune_rate);
    }
    if (st) {
        el_context_free(ctx);
        return st;
    }
    *out = ctx;
    return EL_OK;
}

void el_context_free(el_context *ctx) {
    if (!ctx)
        return;
    el_forward_free(&ctx->fwd);
    el_kv_cache_free(&ctx->kv);
    if (ctx->tp)
        el_threadpool_free(ctx->tp);
    free(ctx->cells);
    free(ctx->out_rows);
    free(ctx->logit_index);
    if (ctx->bind)
        for (int32_t i = 0; i < ctx->params.n_seq_max; i++)
            el_context_bind(ctx, i, NULL, 0);
    free(ctx->bind);
    free(ctx->row_group);
    free(ctx->group_rows);
    free(ctx->groups);
    free(ctx->group_seq);
    free(ctx->seq_rate);
    free(ctx->row_rate);
    free(ctx);
}

el_status el_context_bind(el_context *ctx, int32_t seq_id, const el_binding *bindings,
                          int32_t n) {
    if (!ctx || n < 0 || (n > 0 && !bindings))
        return el_error(EL_ERR_INVALID_ARG, "el_context_bind: NULL argument or negative count");
    if (seq_id < 0 || seq_id >= ctx->params.n_seq_max)
        return el_error(EL_ERR_INVALID_ARG, "el_context_bind: seq_id %d out of range (n_seq_max "
                        "%d)", seq_id, ctx->params.n_seq_max);
    for (int32_t i = 0; i < n; i++) {
        const el_adapter *ad = bindings[i].adapter;
        if (!ad)
            return el_error(EL_ERR_INVALID_ARG, "el_context_bind: binding %d has no adapter", i);
        if (ad->model != ctx->model)
            return el_error(EL_ERR_MISMATCH, "el_context_bind: adapter '%s' was loaded for "
                            "another model than this context's", ad->name);
        if (!isfinite(bindings[i].scale))
            return el_error(EL_ERR_INVALID_ARG, "el_context_bind: adapter '%s' has a scale that "
                            "is not finite", ad->name);
    }
    el_binding *items = NULL;
    el_lora_term *terms = NULL;
    if (n > 0) {
        items = malloc((size_t)n * sizeof *items);
        terms = malloc((size_t)n * sizeof *terms);
        if (!items || !terms) {
            free(items);
            free(terms);
            return el_error(EL_ERR_NOMEM, "el_context_bind: out of memory");
        }
        for (int32_t i = 0; i < n; i++) {
            items[i] = bindings[i];
            terms[i] = el_adapter_term(items[i].adapter, items[i].scale);
            el_adapter_retain(items[i].adapter);
        }
    }
    struct el_seq_binding *b = &ctx->bind[seq_id];
    for (int32_t i = 0; i < b->n; i++)
        el_adapter_release(b->items[i].adapter);
    free(b->items);
    free(b->terms);
    *b = (struct el_seq_binding){.items = items, .terms = terms, .n = n};
    return EL_OK;
}

static bool same_binding(const struct el_seq_binding *a, const struct el_seq_binding *b) {
    if (a->n != b->n) return false;
    for (int32_t i = 0; i < a->n; i++)
        if (a->items[i].adapter != b->items[i].adapter || a->items[i].scale != b->items[i].scale)
            return false;
    return true;
}

/* Groups the rows of a batch that use adapters by binding (sequences bound alike share a
 * group), into ctx's arrays. Rows keep their order within a group. */
static void group_rows(el_context *ctx, const el_batch *b, el_lora_rows *lr) {
    int32_t n_groups = 0;
    for (int32_t r = 0; r < b->n_rows; r++) {
        const struct el_seq_binding *sb = &ctx->bind[b->seq_id[r]];
        ctx->row_group[r] = -1;
        if (sb->n == 0) continue;
        int32_t g = 0;
        while (g < n_groups && !same_binding(&ctx->bind[ctx->group_seq[g]], sb)) g++;
        if (g == n_groups) {
            ctx->group_seq[n_groups++] = b->seq_id[r];
            ctx->groups[g] = (el_lora_group){.terms = sb->terms, .n_terms = sb->n};
        }
        ctx->row_group[r] = g;
    }
    int32_t off = 0;
    for (int32_t g = 0; g < n_groups; g++) {
        int32_t cnt = 0;
        for (int32_t r = 0; r < b->n_rows; r++)
            if (ctx->row_group[r] == g) ctx->group_rows[off + cnt++] = r;
        ctx->groups[g].rows = ctx->group_rows + off;
        ctx->groups[g].n_rows = cnt;
        off += cnt;
    }
    *lr = (el_lora_rows){.groups = ctx->groups, .n_groups = n_groups};
}

/* Every field of every row, before anything changes. */
static el_status validate_batch(const el_context *ctx, const el_batch *b) {
    const el_hparams *hp = &ctx->model->hp;
    if (b->n_rows < 1 || b->n_rows > ctx->params.n_batch)
        return el_error(EL_ERR_INVALID_ARG, "el_decode: n_rows is %d, must be 1..n_batch (%d)",
                        b->n_rows, ctx->params.n_batch);
    if (!b->pos || !b->seq_id)
        return el_error(EL_ERR_INVALID_ARG, "el_decode: pos and seq_id are required");
    if (!b->token && !b->embd)
        return el_error(EL_ERR_INVALID_ARG, "el_decode: the batch has neither tokens nor embd");
    for (int32_t i = 0; i < b->n_rows; i++) {
        bool is_token = b->token && b->token[i] >= 0;
        if (is_token && b->token[i] >= hp->n_vocab)
            return el_error(EL_ERR_INVALID_ARG, "el_decode: row %d: token %d out of range "
                            "(n_vocab %d)", i, b->token[i], hp->n_vocab);
        if (!is_token && !b->embd)
            return el_error(EL_ERR_INVALID_ARG, "el_decode: row %d has no token and the batch no "
                            "embd", i);
        if (b->pos[i] < 0)
            return el_error(EL_ERR_INVALID_ARG, "el_decode: row %d: negative position %d", i,
                            b->pos[i]);
        if (b->seq_id[i] < 0 || b->seq_id[i] >= ctx->params.n_seq_max)
            return el_error(EL_ERR_INVALID_ARG, "el_decode: row %d: seq_id %d out of range "
                            "(n_seq_max %d)", i, b->seq_id[i], ctx->params.n_seq_max);
        if (b->parent) {
            int32_t p = b->parent[i];
            if (p < -1 || p >= i)
                return el_error(EL_ERR_INVALID_ARG, "el_decode: row %d: parent %d must be -1 or "
                                "a row before it", i, p);
            /* an ancestor must be visible to the row: same sequence, earlier position */
            if (p >= 0 && (b->seq_id[p] != b->seq_id[i] || b->pos[p] >= b->pos[i]))
                return el_error(EL_ERR_INVALID_ARG, "el_decode: row %d: parent row %d must have "
                                "the same seq_id and an earlier position", i, p);
        }
    }
    return EL_OK;
}

el_status el_decode(el_context *ctx, const el_batch *b) {
    if (!ctx || !b)
        return el_error(EL_ERR_INVALID_ARG, "el_decode: NULL argument");
    el_status st = validate_batch(ctx, b);
    if (st)
        return st;
    int32_t n = b->n_rows, n_out = 0;
    for (int32_t i = 0; i < n; i++)
        if (b->logits ? b->logits[i] != 0 : i == n - 1)
            ctx->out_rows[n_out++] = i;
    if ((st = el_forward_reserve_logits(&ctx->fwd, n_out)))
        return st;
    el_lora_rows lr;
    group_rows(ctx, b, &lr);
    const el_hparams *hp = &ctx->model->hp;
    int64_t o_in = (int64_t)hp->n_head * hp->head_dim_v;
    int64_t max_in = hp->n_embd > hp->n_ff ? hp->n_embd : hp->n_ff;
    if (o_in > max_in) max_in = o_in;
    if (lr.n_groups > 0 && (st = el_lora_reserve(&ctx->fwd.lora, &lr, max_in)))
        return st;
    if (!el_kv_cache_find_free(&ctx->kv, n, ctx->cells))
        return el_error(EL_ERR_CONTEXT_FULL, "el_decode: the KV cache has %d free cells, the batch "
                        "needs %d (n_ctx %d)", ctx->kv.n_ctx - ctx->kv.n_used, n, ctx->kv.n_ctx);
    for (int32_t i = 0; i < n; i++)
        el_kv_cache_occupy(&ctx->kv, ctx->cells[i], b->pos[i], b->seq_id[i]);
    if (ctx->row_rate)
        for (int32_t i = 0; i < n; i++) {
            int32_t *sr = &ctx->seq_rate[b->seq_id[i]];
            if (*sr < 0)
                *sr = ctx->prune_rate; /* a new request: the rate of now, until it ends */
            ctx->row_rate[i] = *sr;
        }
    el_rows rows = {
        .n = n, .token = b->token, .embd = b->embd, .pos = b->pos, .seq_id = b->seq_id,
        .parent = b->parent, .cell = ctx->cells, .out_rows = ctx->out_rows, .n_out = n_out,
        .lora = lr.n_groups > 0 ? &lr : NULL, .rate = ctx->row_rate,
    };
    el_forward_run(&ctx->fwd, &rows);
    for (int32_t i = 0; i < n; i++)
        ctx->logit_index[i] = -1;
    for (int32_t j = 0; j < n_out; j++)
        ctx->logit_index[ctx->out_rows[j]] = j;
    ctx->last_n_rows = n;
    ctx->cells_current = true;
    return EL_OK;
}

const float *el_get_logits(el_context *ctx, int32_t row) {
    if (!ctx || row < 0 || row >= ctx->last_n_rows || ctx->logit_index[row] < 0)
        return NULL;
    return ctx->fwd.logits + (size_t)ctx->logit_index[row] * ctx->model->hp.n_vocab;
}

static el_status check_seq(const el_context *ctx, const char *fn, int32_t seq) {
    if (!ctx)
        return el_error(EL_ERR_INVALID_ARG, "%s: NULL context", fn);
    if (seq < 0 || seq >= ctx->params.n_seq_max)
        return el_error(EL_ERR_INVALID_ARG, "%s: seq_id %d out of range (n_seq_max %d)", fn, seq,
                        ctx->params.n_seq_max);
    return EL_OK;
}

el_status el_kv_seq_remove(el_context *ctx, int32_t seq_id, int32_t p0, int32_t p1) {
    el_status st = check_seq(ctx, "el_kv_seq_remove", seq_id);
    if (st)
        return st;
    el_kv_cache_seq_remove(&ctx->kv, seq_id, p0 < 0 ? 0 : p0, p1);
    ctx->cells_current = false;
    if (ctx->seq_rate && el_kv_cache_seq_pos_max(&ctx->kv, seq_id) < 0)
        ctx->seq_rate[seq_id] = -1; /* its request ended: the next one takes the rate of then */
    return EL_OK;
}

el_status el_kv_seq_share(el_context *ctx, int32_t src, int32_t dst, int32_t p0, int32_t p1) {
    el_status st = check_seq(ctx, "el_kv_seq_share", src);
    if (!st)
        st = check_seq(ctx, "el_kv_seq_share", dst);
    if (st)
        return st;
    el_kv_cache_seq_share(&ctx->kv, src, dst, p0 < 0 ? 0 : p0, p1);
    ctx->cells_current = false;
    if (ctx->seq_rate && ctx->seq_rate[src] >= 0)
        ctx->seq_rate[dst] = ctx->seq_rate[src]; /* cells computed at src's rate */
    return EL_OK;
}

el_status el_kv_remove_rows(el_context *ctx, const int32_t *rows, int32_t n) {
    if (!ctx || (n > 0 && !rows))
        return el_error(EL_ERR_INVALID_ARG, "el_kv_remove_rows: NULL argument");
    if (!ctx->cells_current)
        return el_error(EL_ERR_INVALID_ARG, "el_kv_remove_rows: the cache changed since the last "
                        "el_decode (or there was none): its rows are gone");
    for (int32_t i = 0; i < n; i++)
        if (rows[i] < 0 || rows[i] >= ctx->last_n_rows)
            return el_error(EL_ERR_INVALID_ARG, "el_kv_remove_rows: row %d is not a row of the "
                            "last el_decode (%d rows)", rows[i], ctx->last_n_rows);
    for (int32_t i = 0; i < n; i++) /* free cells are not reused before the next decode */
        el_kv_cache_free_cell(&ctx->kv, ctx->cells[rows[i]]);
    return EL_OK;
}

void el_kv_clear(el_context *ctx) {
    if (ctx) {
        el_kv_cache_clear(&ctx->kv);
        ctx->cells_current = false;
        for (int32_t i = 0; ctx->seq_rate && i < ctx->params.n_seq_max; i++)
            ctx->seq_rate[i] = -1;
    }
}

int32_t el_kv_used_cells(const el_context *ctx) { return ctx ? ctx->kv.n_used : 0; }

int32_t el_kv_seqs_cells(const el_context *ctx, int32_t seq0, int32_t seq1) {
    if (!ctx)
        return 0;
    if (seq0 < 0)
        seq0 = 0;
    if (seq1 > ctx->params.n_seq_max)
        seq1 = ctx->params.n_seq_max;
    return el_kv_cache_seqs_cells(&ctx->kv, seq0, seq1);
}

int32_t el_kv_seq_pos_max(const el_context *ctx, int32_t seq_id) {
    if (!ctx || seq_id < 0 || seq_id >= ctx->params.n_seq_max)
        return -1;
    return el_kv_cache_seq_pos_max(&ctx->kv, seq_id);
}

size_t el_kv_cell_bytes(const el_context *ctx) {
    if (!ctx)
        return 0;
    return el_kv_cache_cell_bytes(&ctx->kv);
}
