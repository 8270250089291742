/* ctg.c - concurrent token generation: a group of variants of one prompt, from the shared prompt
 * to the last step (edgelora.h, "concurrent variants"). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "runtime/context.h"
#include "runtime/ctg.h"

el_variant_params el_variant_default_params(void) {
    return (el_variant_params){
        .sampler = el_sampler_default_params(),
        .first_token = -1,
        .max_tokens = 128,
    };
}

el_variants_params el_variants_default_params(void) {
    return (el_variants_params){.n_variants = 1, .first = EL_FIRST_TOP};
}

static el_status check_params(const el_context *ctx, const el_variants_params *p,
                              const int32_t *prompt, int32_t n_prompt) {
    if (!ctx || !p || !prompt || !p->variants)
        return el_error(EL_ERR_INVALID_ARG, "variants: NULL argument");
    int32_t k = p->n_variants, n_vocab = ctx->model->hp.n_vocab;
    if (k < 1 || n_prompt < 1 || p->n_prompt_bindings < 0 ||
        (p->n_prompt_bindings > 0 && !p->prompt_bindings))
        return el_error(EL_ERR_INVALID_ARG, "variants: need n_variants >= 1 (got %d), a prompt of "
                        "at least one token (got %d) and valid prompt bindings", k, n_prompt);
    if (p->first != EL_FIRST_TOP && p->first != EL_FIRST_SAMPLE)
        return el_error(EL_ERR_INVALID_ARG, "variants: unknown first-token policy %d", p->first);
    int32_t top_max = n_vocab < EL_MAX_TOP_LOGPROBS ? n_vocab : EL_MAX_TOP_LOGPROBS;
    if (p->logprobs && (p->top_logprobs < 0 || p->top_logprobs > top_max))
        return el_error(EL_ERR_INVALID_ARG, "variants: top_logprobs %d is not 0..%d",
                        p->top_logprobs, top_max);
    if (p->seq_id < 0 || p->seq_id > ctx->params.n_seq_max - k)
        return el_error(EL_ERR_INVALID_ARG, "variants: %d variants from sequence %d need "
                        "n_seq_max >= %d (the context has %d)", k, p->seq_id, p->seq_id + k,
                        ctx->params.n_seq_max);
    if (k > ctx->params.n_batch)
        return el_error(EL_ERR_INVALID_ARG, "variants: %d variants need n_batch >= %d (the "
                        "context has %d)", k, k, ctx->params.n_batch);
    for (int32_t i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= n_vocab)
            return el_error(EL_ERR_INVALID_ARG, "variants: prompt token %d is %d, out of range "
                            "(n_vocab %d)", i, prompt[i], n_vocab);
    if (p->n_past < 0 || p->n_past >= n_prompt)
        return el_error(EL_ERR_INVALID_ARG, "variants: n_past %d is not 0..%d (the prompt has %d "
                        "tokens, the last one decoded here)", p->n_past, n_prompt - 1, n_prompt);
    if (p->n_past == 0 && el_kv_seq_pos_max(ctx, p->seq_id) >= 0)
        return el_error(EL_ERR_INVALID_ARG, "variants: sequence %d is not empty", p->seq_id);
    if (el_kv_seq_pos_max(ctx, p->seq_id) != p->n_past - 1)
        return el_error(EL_ERR_INVALID_ARG, "variants: sequence %d must end at position %d "
                        "(n_past %d); its last position is %d", p->seq_id, p->n_past - 1,
                        p->n_past, el_kv_seq_pos_max(ctx, p->seq_id));
    int64_t cells = n_prompt - p->n_past;
    for (int32_t i = 0; i < k; i++) {
        const el_variant_params *v = &p->variants[i];
        if (v->max_tokens < 1 || v->first_token < -1 || v->first_token >= n_vocab ||
            v->n_bindings < 0 || (v->n_bindings > 0 && !v->bindings) || v->n_stop < 0 ||
            (v->n_stop > 0 && !v->stop))
            return el_error(EL_ERR_INVALID_ARG, "variants: variant %d: need max_tokens >= 1 (got "
                            "%d), first_token -1 or a token id (got %d), and valid bindings and "
                            "stop strings", i, v->max_tokens, v->first_token);
        if (v->n_stop > 0 && !ctx->model->vocab)
            return el_error(EL_ERR_INVALID_ARG, "variants: variant %d has stop strings but %s has "
                            "no vocabulary to make text with", i, ctx->model->path);
        for (int32_t s = 0; s < v->n_stop; s++)
            if (!v->stop[s] || !v->stop[s][0])
                return el_error(EL_ERR_INVALID_ARG, "variants: variant %d: stop string %d is "
                                "NULL or empty", i, s);
        cells += v->max_tokens - 1;
        if (i > 0 && el_kv_seq_pos_max(ctx, p->seq_id + i) >= 0)
            return el_error(EL_ERR_INVALID_ARG, "variants: sequence %d is not empty",
                            p->seq_id + i);
    }
    int32_t free_cells = ctx->kv.n_ctx - ctx->kv.n_used;
    if (cells > free_cells)
        return el_error(EL_ERR_CONTEXT_FULL, "variants: the prompt (%d tokens) and the variants "
                        "need up to %lld KV cells, the context has %d free (n_ctx %d)",
                        n_prompt, (long long)cells, free_cells, ctx->kv.n_ctx);
    return EL_OK;
}

/* Copies what variant i's settings point at, makes its sampler (which sees the prompt). */
static el_status init_variant(el_variants *g, int32_t i, const el_variant_params *p,
                              const int32_t *prompt) {
    ctg_variant *v = &g->v[i];
    v->p = *p;
    el_status st = el_sampler_create(&p->sampler, g->n_vocab, &v->smp);
    if (st)
        return st;
    v->seq = malloc((size_t)(g->n_prompt + p->max_tokens) * sizeof *v->seq);
    v->bindings = p->n_bindings ? malloc((size_t)p->n_bindings * sizeof *v->bindings) : NULL;
    v->stop = p->n_stop ? calloc((size_t)p->n_stop, sizeof *v->stop) : NULL;
    v->lp = g->logprobs >= 0 ? malloc((size_t)p->max_tokens * sizeof *v->lp) : NULL;
    if (!v->seq || (p->n_bindings && !v->bindings) || (p->n_stop && !v->stop) ||
        (g->logprobs >= 0 && !v->lp))
        return el_error(EL_ERR_NOMEM, "variants: out of memory");
    memcpy(v->seq, prompt, (size_t)g->n_prompt * sizeof *prompt);
    if (p->n_bindings)
        memcpy(v->bindings, p->bindings, (size_t)p->n_bindings * sizeof *v->bindings);
    v->p.bindings = v->bindings;
    v->stop_max = 0;
    for (int32_t s = 0; s < p->n_stop; s++) {
        if (!(v->stop[s] = strdup(p->stop[s])))
            return el_error(EL_ERR_NOMEM, "variants: out of memory");
        size_t m = strlen(v->stop[s]);
        v->stop_max = m > v->stop_max ? m : v->stop_max;
    }
    v->p.stop = (const char *const *)v->stop;
    for (int32_t t = 0; t < g->n_prompt; t++)
        el_sampler_accept(v->smp, prompt[t]);
    return EL_OK;
}

static el_status alloc_group(el_context *ctx, const el_variants_params *p, int32_t n_prompt,
                             el_variants **out) {
    el_variants *g = calloc(1, sizeof *g);
    *out = g;
    if (!g)
        return el_error(EL_ERR_NOMEM, "variants: out of memory");
    int32_t k = p->n_variants;
    g->ctx = ctx;
    g->model = ctx->model;
    g->n_variants = k;
    g->seq_id = p->seq_id;
    g->n_prompt = n_prompt;
    g->n_vocab = ctx->model->hp.n_vocab;
    g->first = p->first;
    g->logprobs = p->logprobs ? p->top_logprobs : -1;
    g->n_past = p->n_past;
    g->on_text = p->on_text;
    g->user = p->user;
    size_t nk = (size_t)k, nv = (size_t)g->n_vocab;
    g->v = calloc(nk, sizeof *g->v);
    g->row_variant = malloc(nk * sizeof *g->row_variant);
    g->row_token = malloc(nk * sizeof *g->row_token);
    g->row_pos = malloc(nk * sizeof *g->row_pos);
    g->row_seq = malloc(nk * sizeof *g->row_seq);
    g->row_logits = malloc(nk);
    g->taken = malloc(nv);
    g->cand = malloc(nv * sizeof *g->cand);
    g->masked = malloc(nv * sizeof *g->masked);
    if (!g->v || !g->row_variant || !g->row_token || !g->row_pos || !g->row_seq ||
        !g->row_logits || !g->taken || !g->cand || !g->masked)
        return el_error(EL_ERR_NOMEM, "variants: out of memory");
    memset(g->row_logits, 1, nk);
    return EL_OK;
}

/* Decodes the prompt after its n_past cached tokens into the first sequence in chunks of
 * n_batch; the last row's logits. */
static el_status decode_prompt(el_variants *g, const int32_t *prompt, const float **logits) {
    int32_t n_batch = g->ctx->params.n_batch, n = g->n_prompt;
    int32_t *pos = malloc((size_t)n_batch * sizeof *pos), *seq = malloc((size_t)n_batch * sizeof *seq);
    el_status st = pos && seq ? EL_OK : el_error(EL_ERR_NOMEM, "variants: out of memory");
    int32_t rows = 0;
    for (int32_t done = g->n_past; !st && done < n; done += rows) {
        rows = n - done < n_batch ? n - done : n_batch;
        for (int32_t r = 0; r < rows; r++) {
            pos[r] = done + r;
            seq[r] = g->seq_id;
        }
        el_batch b = {.n_rows = rows, .token = prompt + done, .pos = pos, .seq_id = seq};
        st = el_decode(g->ctx, &b);
    }
    free(pos);
    free(seq);
    *logits = st ? NULL : el_get_logits(g->ctx, rows - 1);
    return st;
}

/* Variant i takes token, sampled from logits: its log-probability first when they are kept. */
static el_status take_token(el_variants *g, int32_t i, const float *logits, int32_t token) {
    ctg_variant *v = &g->v[i];
    if (g->logprobs >= 0) {
        el_status st = el_token_logprobs(logits, g->n_vocab, token, g->logprobs,
                                         &v->lp[v->n_tokens]);
        if (st)
            return st;
    }
    return ctg_add_token(g, i, token);
}

el_status el_variants_start(el_context *ctx, const el_variants_params *params,
                            const int32_t *prompt, int32_t n_prompt, el_variants **out) {
    if (!out)
        return el_error(EL_ERR_INVALID_ARG, "variants: NULL argument");
    *out = NULL;
    el_status st = check_params(ctx, params, prompt, n_prompt);
    if (st)
        return st;
    el_variants *g;
    st = alloc_group(ctx, params, n_prompt, &g);
    for (int32_t i = 0; !st && i < g->n_variants; i++)
        st = init_variant(g, i, &params->variants[i], prompt);
    char *prompt_text = NULL;
    if (!st && g->model->vocab)
        st = el_detokenize(g->model, prompt, (size_t)n_prompt, false, true, &prompt_text);
    if (!st) {
        g->prompt_text_len = prompt_text ? strlen(prompt_text) : 0;
        free(prompt_text);
        st = el_context_bind(ctx, g->seq_id, params->prompt_bindings, params->n_prompt_bindings);
    }
    const float *logits = NULL;
    if (!st)
        st = decode_prompt(g, prompt, &logits);
    for (int32_t i = 0; !st && i < g->n_variants; i++) {
        if (i > 0)
            st = el_kv_seq_share(ctx, g->seq_id, g->seq_id + i, 0, -1);
        if (!st)
            st = el_context_bind(ctx, g->seq_id + i, g->v[i].bindings, g->v[i].p.n_bindings);
    }
    int32_t *first = st ? NULL : malloc((size_t)g->n_variants * sizeof *first);
    if (!st && !first)
        st = el_error(EL_ERR_NOMEM, "variants: out of memory");
    if (!st)
        st = ctg_choose_first(g, logits, first);
    for (int32_t i = 0; !st && i < g->n_variants; i++) {
        if (!g->v[i].p.ignore_eos && el_token_is_eog(g->model, first[i]))
            ctg_finish(g, i, EL_FINISH_EOS); /* only a forced first token can be one */
        else
            st = take_token(g, i, logits, first[i]);
    }
    free(first);
    if (st) {
        el_variants_free(g);
        return st;
    }
    *out = g;
    return EL_OK;
}

int32_t el_variants_running(const el_variants *g) {
    int32_t n = 0;
    for (int32_t i = 0; g && i < g->n_variants; i++)
        n += g->v[i].finish == EL_FINISH_NONE;
    return n;
}

int32_t el_variants_next_rows(el_variants *g, int32_t *token, int32_t *pos,
                              int32_t *seq_id) {
    if (!g)
        return 0;
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_variants; i++) {
        const ctg_variant *v = &g->v[i];
        if (v->finish != EL_FINISH_NONE)
            continue;
        token[n] = v->seq[g->n_prompt + v->n_tokens - 1];
        pos[n] = g->n_prompt + v->n_tokens - 1;
        seq_id[n] = g->seq_id + i;
        g->row_variant[n++] = i; /* for el_variants_accept */
    }
    g->n_pending = n;
    return n;
}

el_status el_variants_accept(el_variants *g, int32_t first_row) {
    if (!g)
        return el_error(EL_ERR_INVALID_ARG, "variants: NULL group");
    for (int32_t r = 0; r < g->n_pending; r++) {
        if (!el_get_logits(g->ctx, first_row + r))
            return el_error(EL_ERR_INVALID_ARG, "variants: the last el_decode has no logits for "
                            "row %d (the group's rows start at %d)", first_row + r, first_row);
    }
    int32_t n = g->n_pending;
    g->n_pending = 0;
    for (int32_t r = 0; r < n; r++) {
        int32_t i = g->row_variant[r], tok;
        ctg_variant *v = &g->v[i];
        v->n_cells++;
        const float *logits = el_get_logits(g->ctx, first_row + r);
        el_status st = el_sampler_sample(v->smp, logits, &tok);
        if (!st && !v->p.ignore_eos && el_token_is_eog(g->model, tok))
            ctg_finish(g, i, EL_FINISH_EOS);
        else if (!st)
            st = take_token(g, i, logits, tok);
        if (st)
            return st;
    }
    return EL_OK;
}

el_status el_variants_step(el_variants *g) {
    if (!g)
        return el_error(EL_ERR_INVALID_ARG, "variants: NULL group");
    int32_t n = el_variants_next_rows(g, g->row_token, g->row_pos, g->row_seq);
    if (n == 0)
        return EL_OK;
    el_batch b = {.n_rows = n, .token = g->row_token, .pos = g->row_pos, .seq_id = g->row_seq,
                  .logits = g->row_logits};
    el_status st = el_decode(g->ctx, &b);
    if (st) {
        g->n_pending = 0;
        return st;
    }
    return el_variants_accept(g, 0);
}

el_status el_variants_generate(el_context *ctx, const el_variants_params *params,
                               const int32_t *prompt, int32_t n_prompt, el_variants **out) {
    el_status st = el_variants_start(ctx, params, prompt, n_prompt, out);
    while (!st && el_variants_running(*out) > 0)
        st = el_variants_step(*out);
    if (st && *out) {
        el_variants_free(*out);
        *out = NULL;
    }
    return st;
}

el_status el_variants_result(const el_variants *g, int32_t i, el_variant_result *out) {
    if (!g || !out || i < 0 || i >= g->n_variants)
        return el_error(EL_ERR_INVALID_ARG, "variants: no variant %d (the group has %d)", i,
                        g ? g->n_variants : 0);
    const ctg_variant *v = &g->v[i];
    *out = (el_variant_result){
        .text = v->full ? v->full + g->prompt_text_len : "",
        .text_len = v->text_len,
        .first_token = v->n_tokens > 0 ? v->seq[g->n_prompt] : -1,
        .tokens = v->seq + g->n_prompt,
        .n_tokens = v->n_tokens,
        .n_cells = v->n_cells,
        .finish = v->finish,
        .logprobs = v->lp,
    };
    return EL_OK;
}

void el_variants_free(el_variants *g) {
    if (!g)
        return;
    for (int32_t i = 0; g->v && i < g->n_variants; i++) {
        ctg_variant *v = &g->v[i];
        el_kv_seq_remove(g->ctx, g->seq_id + i, 0, -1);
        el_context_bind(g->ctx, g->seq_id + i, NULL, 0);
        el_sampler_free(v->smp);
        free(v->seq);
        free(v->bindings);
        for (int32_t s = 0; v->stop && s < v->p.n_stop; s++)
            free(v->stop[s]);
        free(v->stop);
        free(v->full);
        free(v->lp);
    }
    free(g->v);
    free(g->row_variant);
    free(g->row_token);
    free(g->row_pos);
    free(g->row_seq);
    free(g->row_logits);
    free(g->taken);
    free(g->cand);
    free(g->masked);
    free(g);
}
