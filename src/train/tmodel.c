/* tmodel.c - the training model's parameter tables, and its forward and backward passes. */
#include "train/tmodel.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "train/fakequant.h"
#include "train/layers.h"
#include "train/rng.h"

static const char *const kind_names[EL_TK_COUNT] = {
    [EL_TK_ATTN_NORM] = "attn_norm", [EL_TK_FFN_NORM] = "ffn_norm", [EL_TK_Q] = "attn_q",
    [EL_TK_K] = "attn_k",           [EL_TK_V] = "attn_v",          [EL_TK_O] = "attn_output",
    [EL_TK_GATE] = "ffn_gate",      [EL_TK_UP] = "ffn_up",         [EL_TK_DOWN] = "ffn_down",
};
static const char *const target_names[EL_TN_LINEAR] = {"q", "k", "v", "o", "gate", "up", "down"};

el_status el_lora_parse_targets(const char *s, uint32_t *out) {
    uint32_t bits = 0;
    while (*s) {
        size_t n = strcspn(s, ",");
        int i = 0;
        while (i < EL_TN_LINEAR && !(strlen(target_names[i]) == n && !strncmp(s, target_names[i], n)))
            i++;
        if (i == EL_TN_LINEAR)
            return el_error(EL_ERR_INVALID_ARG, "LoRA target '%.*s' is not one of "
                            "q,k,v,o,gate,up,down", (int)n, s);
        bits |= 1u << i;
        s += n + (s[n] == ',');
    }
    if (!bits)
        return el_error(EL_ERR_INVALID_ARG, "no LoRA targets given");
    *out = bits;
    return EL_OK;
}

/* [n_out][n_in] of linear kind k */
static void linear_shape(const el_tconfig *c, el_tkind k, int64_t *n_out, int64_t *n_in) {
    int64_t hd = c->dim / c->n_head, qd = c->n_head * hd, kvd = c->n_head_kv * hd;
    switch (k) {
    case EL_TK_Q: *n_out = qd, *n_in = c->dim; break;
    case EL_TK_K:
    case EL_TK_V: *n_out = kvd, *n_in = c->dim; break;
    case EL_TK_O: *n_out = c->dim, *n_in = qd; break;
    case EL_TK_GATE:
    case EL_TK_UP: *n_out = c->n_ff, *n_in = c->dim; break;
    case EL_TK_DOWN: *n_out = c->dim, *n_in = c->n_ff; break;
    default: *n_out = 1, *n_in = c->dim; break; /* norms */
    }
}

static void table_add(el_ttable *tb, const char *name, int64_t n_out, int64_t n_in, bool decay) {
    el_ttensor *t = &tb->t[tb->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->n_out = n_out;
    t->n_in = n_in;
    t->offset = tb->n_floats;
    t->decay = decay;
    tb->n_floats += (size_t)(n_out * n_in);
}

el_status el_tmodel_init(el_tmodel *m, const el_tconfig *c) {
    memset(m, 0, sizeof *m);
    if (c->dim <= 0 || c->n_layer <= 0 || c->n_head <= 0 || c->n_head_kv <= 0 || c->n_ff <= 0 ||
        c->n_ctx <= 0 || c->n_vocab <= 0 || c->dim % c->n_head || c->n_head % c->n_head_kv ||
        (c->dim / c->n_head) % 2)
        return el_error(EL_ERR_INVALID_ARG, "model shape dim=%d layers=%d heads=%d kv_heads=%d "
                        "ffn=%d ctx=%d vocab=%d is not valid (sizes > 0, heads divide dim, kv_heads "
                        "divide heads, even head size)", c->dim, c->n_layer, c->n_head,
                        c->n_head_kv, c->n_ff, c->n_ctx, c->n_vocab);
    m->c = *c;
    m->base.t = calloc((size_t)c->n_layer * EL_TK_COUNT + 3, sizeof *m->base.t);
    if (!m->base.t)
        return el_error(EL_ERR_NOMEM, "out of memory for the model table");
    table_add(&m->base, "token_embd.weight", c->n_vocab, c->dim, true);
    for (int il = 0; il < c->n_layer; il++)
        for (int k = 0; k < EL_TK_COUNT; k++) {
            char name[64];
            int64_t n_out, n_in;
            linear_shape(c, (el_tkind)k, &n_out, &n_in);
            snprintf(name, sizeof name, "blk.%d.%s.weight", il, kind_names[k]);
            table_add(&m->base, name, n_out, n_in, k >= EL_TK_FIRST_LINEAR);
        }
    table_add(&m->base, "output_norm.weight", 1, c->dim, false);
    if (!c->tied)
        table_add(&m->base, "output.weight", c->n_vocab, c->dim, true);
    m->w = calloc(m->base.n_floats, sizeof(float));
    if (!m->w) {
        el_tmodel_free(m);
        return el_error(EL_ERR_NOMEM, "out of memory for %zu parameters", m->base.n_floats);
    }
    return EL_OK;
}

el_status el_tmodel_add_lora(el_tmodel *m, int32_t rank, float alpha, uint32_t targets,
                             uint64_t seed) {
    const el_tconfig *c = &m->c;
    if (rank <= 0 || !targets)
        return el_error(EL_ERR_INVALID_ARG, "LoRA rank %d must be positive, with targets", rank);
    m->rank = rank;
    m->alpha = alpha;
    m->targets = targets;
    m->lora.t = calloc((size_t)c->n_layer * EL_TN_LINEAR * 2, sizeof *m->lora.t);
    m->lora_idx = malloc((size_t)c->n_layer * EL_TN_LINEAR * sizeof *m->lora_idx);
    if (!m->lora.t || !m->lora_idx)
        return el_error(EL_ERR_NOMEM, "out of memory for the LoRA table");
    for (int il = 0; il < c->n_layer; il++)
        for (int i = 0; i < EL_TN_LINEAR; i++) {
            m->lora_idx[il * EL_TN_LINEAR + i] = -1;
            if (!(targets & (1u << i)))
                continue;
            int64_t n_out, n_in;
            el_tkind k = (el_tkind)(EL_TK_FIRST_LINEAR + i);
            linear_shape(c, k, &n_out, &n_in);
            char name[64];
            m->lora_idx[il * EL_TN_LINEAR + i] = m->lora.n;
            snprintf(name, sizeof name, "blk.%d.%s.weight.lora_a", il, kind_names[k]);
            table_add(&m->lora, name, rank, n_in, false);
            snprintf(name, sizeof name, "blk.%d.%s.weight.lora_b", il, kind_names[k]);
            table_add(&m->lora, name, n_out, rank, false);
        }
    m->lw = calloc(m->lora.n_floats, sizeof(float));
    if (!m->lw)
        return el_error(EL_ERR_NOMEM, "out of memory for %zu LoRA parameters", m->lora.n_floats);
    /* A ~ U(-1/sqrt(n_in), 1/sqrt(n_in)) (PEFT's kaiming-uniform default), B = 0: training starts
     * from the base model exactly */
    el_rng rng;
    el_rng_seed(&rng, seed);
    for (int32_t i = 0; i < m->lora.n; i += 2) {
        const el_ttensor *a = &m->lora.t[i];
        float bound = 1.0f / sqrtf((float)a->n_in);
        for (int64_t j = 0; j < a->n_out * a->n_in; j++)
            m->lw[a->offset + (size_t)j] = bound * (2.0f * el_rng_uniform(&rng) - 1.0f);
    }
    return EL_OK;
}

el_status el_tmodel_add_forecast(el_tmodel *m, int32_t n_slots, uint64_t seed) {
    int64_t D = m->c.dim;
    if (n_slots <= 0)
        return el_error(EL_ERR_INVALID_ARG, "%d forecast slots: must be positive", n_slots);
    if (!(m->forecast.t = calloc(1, sizeof *m->forecast.t)))
        return el_error(EL_ERR_NOMEM, "out of memory for the forecast table");
    table_add(&m->forecast, "forecast.embd", n_slots, D, false);
    if (!(m->fw = calloc(m->forecast.n_floats, sizeof(float))))
        return el_error(EL_ERR_NOMEM, "out of memory for %d forecast vectors", n_slots);
    const float *e = el_tm_embd(m, m->w);
    el_rng rng;
    el_rng_seed(&rng, seed);
    for (int64_t j = 0; j < D; j++) {
        double mean = 0;
        for (int64_t t = 0; t < m->c.n_vocab; t++) mean += e[t * D + j];
        mean /= m->c.n_vocab;
        for (int32_t k = 0; k < n_slots; k++)
            m->fw[k * D + j] = (float)mean + 0.02f * el_rng_normal(&rng);
    }
    return EL_OK;
}

el_status el_tmodel_set_qat(el_tmodel *m, bool int4_weights, float momentum) {
    const el_tconfig *c = &m->c;
    for (int i = 0; int4_weights && i < EL_TN_LINEAR; i++) {
        int64_t n_out, n_in;
        linear_shape(c, (el_tkind)(EL_TK_FIRST_LINEAR + i), &n_out, &n_in);
        if (n_in % 32)
            return el_error(EL_ERR_INVALID_ARG, "int4 weights: the %s rows hold %lld values, not "
                            "whole 32-value chunks as the W4 type needs (make dim and ffn "
                            "multiples of 32; train --init widens a model's ffn with --ffn)",
                            kind_names[EL_TK_FIRST_LINEAR + i], (long long)n_in);
    }
    if (!(momentum >= 0.0f && momentum <= 1.0f))
        return el_error(EL_ERR_INVALID_ARG, "QAT scale momentum %g is not in 0..1",
                        (double)momentum);
    free(m->qat.x_scale);
    free(m->qat.wq);
    free(m->qat.lora_scale);
    free(m->qat.lwq);
    m->qat = (el_tqat){.int4_weights = int4_weights, .momentum = momentum};
    m->qat.x_scale = calloc((size_t)c->n_layer * EL_TN_LINEAR + 1, sizeof(float));
    if (int4_weights) m->qat.wq = calloc(m->base.n_floats, sizeof(float));
    if (!m->qat.x_scale || (int4_weights && !m->qat.wq))
        return el_error(EL_ERR_NOMEM, "out of memory for quantization-aware training");
    return EL_OK;
}

el_status el_tmodel_set_qat_lora(el_tmodel *m) {
    if (!m->qat.x_scale || !m->rank)
        return el_error(EL_ERR_INVALID_ARG, "int8 adapter terms need quantization-aware "
                        "training and a LoRA block");
    free(m->qat.lora_scale);
    free(m->qat.lwq);
    m->qat.lora_scale = calloc((size_t)m->c.n_layer * EL_TN_LINEAR * 4, sizeof(float));
    m->qat.lwq = calloc(m->lora.n_floats, sizeof(float));
    if (!m->qat.lora_scale || !m->qat.lwq)
        return el_error(EL_ERR_NOMEM, "out of memory for int8 adapter terms");
    return EL_OK;
}

el_status el_tmodel_set_rope_pairs(el_tmodel *m, const int32_t *pairs) {
    const el_tconfig *c = &m->c;
    int64_t half = c->dim / c->n_head / 2, n = (int64_t)c->n_layer * c->n_head_kv * half;
    char *seen = malloc((size_t)half);
    int32_t *copy = malloc((size_t)n * sizeof *pairs);
    if (!seen || !copy) {
        free(seen);
        free(copy);
        return el_error(EL_ERR_NOMEM, "out of memory for the RoPE pair index");
    }
    for (int64_t h = 0; h < n; h += half) {
        memset(seen, 0, (size_t)half);
        for (int64_t i = 0; i < half; i++) {
            int32_t p = pairs[h + i];
            if (p < 0 || p >= half || seen[p]) {
                free(seen);
                free(copy);
                return el_error(EL_ERR_INVALID_ARG, "RoPE pair index of layer %lld, KV head "
                                "%lld is not a permutation of its %lld pairs",
                                (long long)(h / half / c->n_head_kv),
                                (long long)(h / half % c->n_head_kv), (long long)half);
            }
            seen[p] = 1;
        }
    }
    free(seen);
    memcpy(copy, pairs, (size_t)n * sizeof *pairs);
    free(m->rope_pairs);
    m->rope_pairs = copy;
    return EL_OK;
}

void el_tmodel_free(el_tmodel *m) {
    free(m->rope_pairs);
    free(m->qat.x_scale);
    free(m->qat.wq);
    free(m->qat.lora_scale);
    free(m->qat.lwq);
    free(m->forecast.t);
    free(m->fw);
    free(m->base.t);
    free(m->w);
    free(m->lora.t);
    free(m->lora_idx);
    free(m->lw);
    memset(m, 0, sizeof *m);
}

void el_tmodel_randomize(el_tmodel *m, uint64_t seed) {
    el_rng rng;
    el_rng_seed(&rng, seed);
    float proj_scale = 1.0f / sqrtf(2.0f * (float)m->c.n_layer);
    for (int32_t i = 0; i < m->base.n; i++) {
        const el_ttensor *t = &m->base.t[i];
        float *p = m->w + t->offset;
        size_t n = (size_t)(t->n_out * t->n_in);
        bool proj = strstr(t->name, "attn_output") || strstr(t->name, "ffn_down");
        for (size_t j = 0; j < n; j++)
            p[j] = t->decay ? 0.02f * el_rng_normal(&rng) * (proj ? proj_scale : 1.0f) : 1.0f;
    }
}

float *el_tm_layer(const el_tmodel *m, float *block, int il, el_tkind k) {
    return block + m->base.t[1 + il * EL_TK_COUNT + k].offset;
}
float *el_tm_embd(const el_tmodel *m, float *block) { return block + m->base.t[0].offset; }
float *el_tm_out_norm(const el_tmodel *m, float *block) {
    return block + m->base.t[1 + m->c.n_layer * EL_TK_COUNT].offset;
}
float *el_tm_output(const el_tmodel *m, float *block) {
    return m->c.tied ? el_tm_embd(m, block)
                     : block + m->base.t[2 + m->c.n_layer * EL_TK_COUNT].offset;
}

/* ------------------------------------------------------------- activations */

struct el_tacts {
    int64_t B, T, N;
    const int32_t *tokens, *targets;
    const float *mask;
    float loss_norm;   /* masked positions of the last forward */
    float *cs, *sn;    /* [T][hd/2] */
    /* kept, per layer l */
    float *x;          /* [L+1][N][D] residual stream entering layer l (x[L]: final) */
    float *xmid;       /* [L][N][D] after attention */
    float *rs1, *rs2;  /* [L][N] */
    float *xn1, *xn2;  /* [L][N][D] */
    float *q;          /* [L][N][qd] after rope */
    float *k, *v;      /* [L][N][kvd] (k after rope) */
    float *att;        /* [L][B][H][T][T] */
    float *ao;         /* [L][N][qd] */
    float *g, *u, *h;  /* [L][N][F] */
    float *lx;         /* [L][7][N][R] x A^T of each LoRA target */
    float *rsf;        /* [N] */
    float *xnf;        /* [N][D] */
    float *probs;      /* [N][V] */
    /* backward scratch */
    float *dx, *dxn, *dq, *dk, *dv, *dao, *dg, *du, *dh, *dlogits, *dlx, *tmp;
    float *datt;       /* [B][H][T][T] attention backward scratch */
    float *teacher;    /* [N][V] distillation targets (el_tacts_set_teacher), or NULL */
    el_tprune prune;   /* masked training (el_tacts_set_prune); ff NULL: none */
    /* quantization-aware training (m->qat) */
    bool training;     /* forwards track the scales */
    int64_t max_in;    /* the widest linear input */
    float *xq, *dxq;   /* [N][max_in] a site's input on its grid, and its gradient */
    float *ltq;        /* [L][7][N][R] x A on its grid, under int8 adapter terms (lx: before) */
    float *lgrad;      /* [max_in * R] an int8 adapter's A or B gradient before its clip mask */
    enum { HOLD_OFF, HOLD_RECORD, HOLD_KEEP } hold;
    float *held_w;     /* base layout: each weight's grid value less the weight */
    float *held_x;     /* [site][N][max_in]: the same for inputs; NAN where clipped */
};

el_status el_tacts_create(const el_tmodel *m, int32_t B, int32_t T, el_tacts **out) {
    const el_tconfig *c = &m->c;
    el_tacts *a = calloc(1, sizeof *a);
    if (!a)
        return el_error(EL_ERR_NOMEM, "out of memory for activations");
    size_t L = (size_t)c->n_layer, N = (size_t)B * T, D = (size_t)c->dim;
    size_t hd = D / (size_t)c->n_head, qd = (size_t)c->n_head * hd, kvd = (size_t)c->n_head_kv * hd;
    size_t F = (size_t)c->n_ff, V = (size_t)c->n_vocab, R = (size_t)m->rank;
    size_t big = D > F ? D : F;
    a->B = B, a->T = T, a->N = (int64_t)N;
    struct {
        float **p;
        size_t n;
    } bufs[] = {
        {&a->cs, (size_t)T * hd / 2}, {&a->sn, (size_t)T * hd / 2},
        {&a->x, (L + 1) * N * D},     {&a->xmid, L * N * D},
        {&a->rs1, L * N},             {&a->rs2, L * N},
        {&a->xn1, L * N * D},         {&a->xn2, L * N * D},
        {&a->q, L * N * qd},          {&a->k, L * N * kvd},
        {&a->v, L * N * kvd},         {&a->att, L * (size_t)B * c->n_head * T * T},
        {&a->ao, L * N * qd},         {&a->g, L * N * F},
        {&a->u, L * N * F},           {&a->h, L * N * F},
        {&a->lx, R ? L * EL_TN_LINEAR * N * R : 1},
        {&a->rsf, N},                 {&a->xnf, N * D},
        {&a->probs, N * V},           {&a->dx, N * D},
        {&a->dxn, N * D},             {&a->dq, N * qd},
        {&a->dk, N * kvd},            {&a->dv, N * kvd},
        {&a->dao, N * qd},            {&a->dg, N * F},
        {&a->du, N * F},              {&a->dh, N * F},
        {&a->dlogits, N * V},         {&a->dlx, N * (R ? R : 1)},
        {&a->tmp, N * big},           {&a->datt, (size_t)B * c->n_head * T * T},
        {&a->xq, m->qat.x_scale ? N * (big > qd ? big : qd) : 1},
        {&a->dxq, m->qat.x_scale ? N * (big > qd ? big : qd) : 1},
        {&a->ltq, m->qat.lora_scale ? L * EL_TN_LINEAR * N * R : 1},
        {&a->lgrad, m->qat.lora_scale ? (big > qd ? big : qd) * R : 1},
    };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (!(*bufs[i].p = malloc(bufs[i].n * sizeof(float)))) {
            el_tacts_free(a);
            return el_error(EL_ERR_NOMEM, "out of memory for the activations of %d x %d tokens",
                            B, T);
        }
    el_rope_tables(a->cs, a->sn, T, (int64_t)hd, c->rope_base);
    a->max_in = (int64_t)(big > qd ? big : qd);
    *out = a;
    return EL_OK;
}

void el_tacts_free(el_tacts *a) {
    if (!a)
        return;
    float *bufs[] = {a->cs, a->sn, a->x, a->xmid, a->rs1, a->rs2, a->xn1, a->xn2, a->q, a->k,
                     a->v, a->att, a->ao, a->g, a->u, a->h, a->lx, a->rsf, a->xnf, a->probs,
                     a->dx, a->dxn, a->dq, a->dk, a->dv, a->dao, a->dg, a->du, a->dh, a->dlogits,
                     a->dlx, a->tmp, a->datt, a->xq, a->dxq, a->held_w, a->held_x,
                     a->ltq, a->lgrad};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    free(a);
}

void el_tacts_set_training(el_tacts *a, bool training) { a->training = training; }

void el_tacts_set_teacher(el_tacts *a, float *teacher) { a->teacher = teacher; }

void el_tacts_set_prune(el_tacts *a, const el_tprune *kept) {
    a->prune = kept ? *kept : (el_tprune){0};
}

el_status el_tacts_hold_rounding(el_tacts *a, const el_tmodel *m) {
    if (!m->qat.x_scale || m->qat.lora_scale)
        return el_error(EL_ERR_INVALID_ARG, "holding the rounding needs quantization-aware "
                        "training with float adapter terms");
    size_t sites = (size_t)m->c.n_layer * EL_TN_LINEAR + 1;
    free(a->held_w);
    free(a->held_x);
    a->held_w = calloc(m->base.n_floats, sizeof(float));
    a->held_x = malloc(sites * (size_t)(a->N * a->max_in) * sizeof(float));
    if (!a->held_w || !a->held_x)
        return el_error(EL_ERR_NOMEM, "out of memory for the held rounding");
    a->hold = HOLD_RECORD;
    return EL_OK;
}

/* ------------------------------------------------------------- quantization-aware training */

/* The weight linear i of layer il computes with: on the grid under int4 QAT (wq, made at the
 * start of each forward), else as it is. */
static const float *linear_weight(const el_tmodel *m, int il, int i) {
    el_tkind k = (el_tkind)(EL_TK_FIRST_LINEAR + i);
    return el_tm_layer(m, m->qat.int4_weights ? m->qat.wq : m->w, il, k);
}

static void qat_weights(const el_tmodel *m, el_tacts *a) {
    for (int il = 0; il < m->c.n_layer; il++)
        for (int i = 0; i < EL_TN_LINEAR; i++) {
            el_tkind k = (el_tkind)(EL_TK_FIRST_LINEAR + i);
            int64_t n_out, n_in;
            linear_shape(&m->c, k, &n_out, &n_in);
            const float *w = el_tm_layer(m, m->w, il, k);
            float *wq = el_tm_layer(m, m->qat.wq, il, k);
            float *r = a->hold != HOLD_OFF ? el_tm_layer(m, a->held_w, il, k) : NULL;
            if (a->hold == HOLD_KEEP) {
                for (int64_t j = 0; j < n_out * n_in; j++) wq[j] = w[j] + r[j];
                continue;
            }
            el_fq_int4_rows(wq, w, n_out, n_in);
            if (r)
                for (int64_t j = 0; j < n_out * n_in; j++) r[j] = wq[j] - w[j];
        }
}

/* The input x [N][n] of site `site` on its int8 grid, into a->xq (the scale tracked first in a
 * training forward); NULL where the site takes floats. */
static const float *qat_input(const el_tmodel *m, el_tacts *a, size_t site, const float *x,
                              int64_t n, bool forward) {
    if (!m->qat.x_scale) return NULL;
    float *d = &m->qat.x_scale[site], mu = m->qat.momentum;
    int64_t len = a->N * n;
    if (forward && a->training && mu > 0.0f && site < (size_t)m->c.n_layer * EL_TN_LINEAR &&
        a->hold == HOLD_OFF) {
        float target = el_fq_absmax(x, len) / 127.0f;
        *d = *d > 0.0f ? *d + mu * (target - *d) : target;
    }
    if (!(*d > 0.0f)) return NULL;
    float *r = a->hold != HOLD_OFF ? a->held_x + site * (size_t)(a->N * a->max_in) : NULL;
    if (a->hold == HOLD_KEEP) {
        for (int64_t j = 0; j < len; j++)
            a->xq[j] = isnan(r[j]) ? copysignf(127.0f * *d, x[j]) : x[j] + r[j];
        return a->xq;
    }
    el_fq_int8(a->xq, x, len, *d);
    if (r)
        for (int64_t j = 0; j < len; j++)
            r[j] = el_fq_int8_clipped(x[j], *d) ? NAN : a->xq[j] - x[j];
    return a->xq;
}

/* dx += a->dxq where site's input x was not clipped (the straight-through gradient). */
static void qat_input_backward(const el_tmodel *m, el_tacts *a, size_t site, float *dx,
                               const float *x, int64_t n) {
    int64_t len = a->N * n;
    if (a->hold == HOLD_OFF) {
        el_fq_int8_backward(dx, a->dxq, x, len, m->qat.x_scale[site]);
        return;
    }
    const float *r = a->held_x + site * (size_t)(a->N * a->max_in);
    for (int64_t j = 0; j < len; j++)
        if (!isnan(r[j])) dx[j] += a->dxq[j];
}

/* A and B of every adapter term on their slots' int8 grids, into m->qat.lwq. */
static void qat_lora_weights(const el_tmodel *m) {
    for (int il = 0; il < m->c.n_layer; il++)
        for (int i = 0; i < EL_TN_LINEAR; i++) {
            int32_t li = m->lora_idx[il * EL_TN_LINEAR + i];
            if (li < 0) continue;
            const float *sc = m->qat.lora_scale + ((size_t)il * EL_TN_LINEAR + i) * 4;
            for (int ab = 0; ab < 2; ab++) {
                const el_ttensor *t = &m->lora.t[li + ab];
                el_fq_int8(m->qat.lwq + t->offset, m->lw + t->offset, t->n_out * t->n_in,
                           sc[ab ? 3 : 1]);
            }
        }
}

/* y += s (x_q A_q^T)_q B_q^T: the run time's int8 adapter term (kernels/lora.c), whose integer
 * sums are these products of grid values; t (before its grid) into lx, after it into tq. */
static void lora_int8_fwd(const el_tmodel *m, el_tacts *a, size_t slot, int32_t li, float *y,
                          const float *x, int64_t n_in, int64_t n_out) {
    const float *sc = m->qat.lora_scale + slot * 4;
    int64_t N = a->N, R = m->rank;
    float *lx = a->lx + slot * N * R, *tq = a->ltq + slot * N * R;
    el_fq_int8(a->xq, x, N * n_in, sc[0]);
    el_linear_forward(lx, a->xq, m->qat.lwq + m->lora.t[li].offset, N, n_in, R);
    el_fq_int8(tq, lx, N * R, sc[2]);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)n_out, (int)R,
                m->alpha / (float)R, tq, (int)R, m->qat.lwq + m->lora.t[li + 1].offset, (int)R,
                1.0f, y, (int)n_out);
}

/* The straight-through backward of lora_int8_fwd: dx += (clip mask of x) dt A_q, and with
 * lgrads dA and dB, each through its clip mask; dt = (clip mask of t) s dy B_q. */
static void lora_int8_bwd(const el_tmodel *m, el_tacts *a, size_t slot, int32_t li, float *dx,
                          const float *dy, const float *x, float *lgrads, int64_t n_in,
                          int64_t n_out) {
    const float *sc = m->qat.lora_scale + slot * 4;
    int64_t N = a->N, R = m->rank;
    float s = m->alpha / (float)R;
    const float *lx = a->lx + slot * N * R, *tq = a->ltq + slot * N * R;
    size_t oa = m->lora.t[li].offset, ob = m->lora.t[li + 1].offset;
    const float *aq = m->qat.lwq + oa, *bq = m->qat.lwq + ob;
    if (lgrads) { /* dB = s dy^T tq */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n_out, (int)R, (int)N, s, dy,
                    (int)n_out, tq, (int)R, 0.0f, a->lgrad, (int)R);
        el_fq_int8_backward(lgrads + ob, a->lgrad, m->lw + ob, n_out * R, sc[3]);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)R, (int)n_out, s, dy,
                (int)n_out, bq, (int)R, 0.0f, a->dlx, (int)R);
    for (int64_t j = 0; j < N * R; j++)
        if (el_fq_int8_clipped(lx[j], sc[2])) a->dlx[j] = 0.0f;
    el_fq_int8(a->xq, x, N * n_in, sc[0]);
    if (lgrads) { /* dA = dt^T xq */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)R, (int)n_in, (int)N, 1.0f,
                    a->dlx, (int)R, a->xq, (int)n_in, 0.0f, a->lgrad, (int)n_in);
        el_fq_int8_backward(lgrads + oa, a->lgrad, m->lw + oa, R * n_in, sc[1]);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)n_in, (int)R, 1.0f,
                a->dlx, (int)R, aq, (int)n_in, 0.0f, a->dxq, (int)n_in);
    el_fq_int8_backward(dx, a->dxq, x, N * n_in, sc[0]);
}

/* ------------------------------------------------------------- masked training */

/* Zeroes dims [kept, hd) of each of the n_heads heads of rows [N][n_heads * hd]. */
static void mask_heads(float *x, int64_t N, int64_t n_heads, int64_t hd, int64_t kept) {
    if (kept >= hd) return;
    for (int64_t r = 0; r < N * n_heads; r++)
        memset(x + r * hd + kept, 0, (size_t)(hd - kept) * sizeof *x);
}

/* The pair index of layer il's KV heads, or NULL. */
static const int32_t *layer_pairs(const el_tmodel *m, int il) {
    int64_t half = m->c.dim / m->c.n_head / 2;
    return m->rope_pairs ? m->rope_pairs + (size_t)il * m->c.n_head_kv * half : NULL;
}

/* ------------------------------------------------------------- forward */

/* y = x W^T (+ the LoRA term of linear i of layer il) */
static void linear_fwd(const el_tmodel *m, el_tacts *a, int il, int i, float *y, const float *x) {
    int64_t n_out, n_in;
    linear_shape(&m->c, (el_tkind)(EL_TK_FIRST_LINEAR + i), &n_out, &n_in);
    const float *xq = qat_input(m, a, (size_t)il * EL_TN_LINEAR + i, x, n_in, true);
    el_linear_forward(y, xq ? xq : x, linear_weight(m, il, i), a->N, n_in, n_out);
    /* the adapter's term takes the float input, as the run time's float adapters do */
    int32_t li = m->rank ? m->lora_idx[il * EL_TN_LINEAR + i] : -1;
    if (li >= 0 && m->qat.lora_scale) {
        lora_int8_fwd(m, a, (size_t)il * EL_TN_LINEAR + i, li, y, x, n_in, n_out);
    } else if (li >= 0) {
        float *lx = a->lx + ((size_t)il * EL_TN_LINEAR + i) * a->N * m->rank;
        el_lora_forward(y, lx, x, m->lw + m->lora.t[li].offset, m->lw + m->lora.t[li + 1].offset,
                        m->alpha / (float)m->rank, a->N, n_in, n_out, m->rank);
    }
}

/* dx += dy W (+ LoRA), dW += dy^T x if grads, dA/dB if lgrads; under QAT W and x on their grids
 * and dx straight through them */
static void linear_bwd(const el_tmodel *m, el_tacts *a, int il, int i, float *dx, const float *dy,
                       const float *x, float *grads, float *lgrads) {
    int64_t n_out, n_in;
    el_tkind k = (el_tkind)(EL_TK_FIRST_LINEAR + i);
    linear_shape(&m->c, k, &n_out, &n_in);
    size_t site = (size_t)il * EL_TN_LINEAR + i;
    const float *xq = qat_input(m, a, site, x, n_in, false);
    if (xq) memset(a->dxq, 0, (size_t)(a->N * n_in) * sizeof(float));
    el_linear_backward(xq ? a->dxq : dx, grads ? el_tm_layer(m, grads, il, k) : NULL, dy,
                       xq ? xq : x, linear_weight(m, il, i), a->N, n_in, n_out);
    if (xq) qat_input_backward(m, a, site, dx, x, n_in);
    int32_t li = m->rank ? m->lora_idx[il * EL_TN_LINEAR + i] : -1;
    if (li >= 0 && m->qat.lora_scale) {
        lora_int8_bwd(m, a, site, li, dx, dy, x, lgrads, n_in, n_out);
    } else if (li >= 0) { /* a frozen adapter (no lgrads) still carries gradient down to the inputs */
        const float *lx = a->lx + ((size_t)il * EL_TN_LINEAR + i) * a->N * m->rank;
        size_t oa = m->lora.t[li].offset, ob = m->lora.t[li + 1].offset;
        el_lora_backward(dx, lgrads ? lgrads + oa : NULL, lgrads ? lgrads + ob : NULL, a->dlx, dy,
                         x, lx, m->lw + oa, m->lw + ob, m->alpha / (float)m->rank, a->N, n_in,
                         n_out, m->rank);
    }
}

float el_tmodel_forward(const el_tmodel *m, el_tacts *a, el_threadpool *tp, const int32_t *tokens,
                        const int32_t *targets, const float *mask, float *logits) {
    const el_tconfig *c = &m->c;
    int64_t N = a->N, D = c->dim, F = c->n_ff, V = c->n_vocab;
    int64_t hd = D / c->n_head, qd = c->n_head * hd, kvd = c->n_head_kv * hd;
    int64_t group = c->n_head / c->n_head_kv;
    el_attn_dims ad = {a->B, a->T, c->n_head, c->n_head_kv, hd};
    a->tokens = tokens, a->targets = targets, a->mask = mask;
    if (m->qat.int4_weights) qat_weights(m, a);
    if (m->qat.lora_scale) qat_lora_weights(m);
    const float *embd = el_tm_embd(m, m->w);
    for (int64_t r = 0; r < N; r++) /* x[0][N][D] = embedding rows, or forecast vectors */
        memcpy(a->x + r * D, tokens[r] >= 0 ? embd + (size_t)tokens[r] * D
                                            : m->fw + (size_t)(-1 - tokens[r]) * D,
               (size_t)D * sizeof(float));
    for (int il = 0; il < c->n_layer; il++) {
        float *x = a->x + il * N * D, *xmid = a->xmid + il * N * D, *xo = x + N * D;
        float *xn1 = a->xn1 + il * N * D, *xn2 = a->xn2 + il * N * D;
        float *q = a->q + il * N * qd, *k = a->k + il * N * kvd, *v = a->v + il * N * kvd;
        float *ao = a->ao + il * N * qd, *att = a->att + il * a->B * c->n_head * a->T * a->T;
        float *g = a->g + il * N * F, *u = a->u + il * N * F, *h = a->h + il * N * F;
        el_rmsnorm_forward(xn1, a->rs1 + il * N, x, el_tm_layer(m, m->w, il, EL_TK_ATTN_NORM), N, D,
                           c->rms_eps);
        linear_fwd(m, a, il, 0, q, xn1);
        linear_fwd(m, a, il, 1, k, xn1);
        linear_fwd(m, a, il, 2, v, xn1);
        /* a pruned model drops whole pairs, so the mask commutes with the rotation */
        if (a->prune.ff) {
            mask_heads(q, N, c->n_head, hd, a->prune.qk[il]);
            mask_heads(k, N, c->n_head_kv, hd, a->prune.qk[il]);
            mask_heads(v, N, c->n_head_kv, hd, a->prune.vo[il]);
        }
        el_rope_apply(q, a->cs, a->sn, N, a->T, c->n_head, hd, layer_pairs(m, il), group, false);
        el_rope_apply(k, a->cs, a->sn, N, a->T, c->n_head_kv, hd, layer_pairs(m, il), 1, false);
        el_attention_forward(tp, &ad, ao, att, q, k, v);
        linear_fwd(m, a, il, 3, a->tmp, ao); /* tmp[N][D] */
        for (int64_t j = 0; j < N * D; j++)
            xmid[j] = x[j] + a->tmp[j];
        el_rmsnorm_forward(xn2, a->rs2 + il * N, xmid, el_tm_layer(m, m->w, il, EL_TK_FFN_NORM), N,
                           D, c->rms_eps);
        linear_fwd(m, a, il, 4, g, xn2);
        linear_fwd(m, a, il, 5, u, xn2);
        el_swiglu_forward(h, g, u, N * F);
        if (a->prune.ff) mask_heads(h, N, 1, F, a->prune.ff[il]);
        linear_fwd(m, a, il, 6, a->tmp, h);
        for (int64_t j = 0; j < N * D; j++)
            xo[j] = xmid[j] + a->tmp[j];
    }
    el_rmsnorm_forward(a->xnf, a->rsf, a->x + c->n_layer * N * D, el_tm_out_norm(m, m->w), N, D,
                       c->rms_eps);
    size_t head = (size_t)c->n_layer * EL_TN_LINEAR;
    const float *xq = qat_input(m, a, head, a->xnf, D, true);
    el_linear_forward(a->probs, xq ? xq : a->xnf, el_tm_output(m, m->w), N, D, V);
    if (a->hold == HOLD_RECORD) a->hold = HOLD_KEEP;
    if (logits)
        memcpy(logits, a->probs, (size_t)(N * V) * sizeof(float));
    if (!targets)
        return 0.0f;
    double n_mask = 0.0;
    double loss = a->teacher ? el_kl_forward(a->probs, a->probs, a->teacher, mask, N, V, &n_mask)
                             : el_xent_forward(a->probs, a->probs, targets, mask, N, V, &n_mask);
    a->loss_norm = (float)n_mask;
    return n_mask > 0 ? (float)(loss / n_mask) : 0.0f;
}

/* ------------------------------------------------------------- backward */

void el_tmodel_backward(const el_tmodel *m, el_tacts *a, el_threadpool *tp, float *grads,
                        float *lgrads, float *fgrads, float scale) {
    const el_tconfig *c = &m->c;
    int64_t N = a->N, D = c->dim, F = c->n_ff, V = c->n_vocab;
    int64_t hd = D / c->n_head, qd = c->n_head * hd, kvd = c->n_head_kv * hd;
    int64_t group = c->n_head / c->n_head_kv;
    el_attn_dims ad = {a->B, a->T, c->n_head, c->n_head_kv, hd};
    float s = a->loss_norm > 0 ? scale / a->loss_norm : 0.0f;
    if (a->teacher)
        el_kl_backward(a->dlogits, a->probs, a->teacher, a->mask, N, V, s);
    else
        el_xent_backward(a->dlogits, a->probs, a->targets, a->mask, N, V, s);
    /* logits = xnf E^T: dxnf = dlogits E, dE += dlogits^T xnf */
    memset(a->dxn, 0, (size_t)(N * D) * sizeof(float));
    size_t head = (size_t)c->n_layer * EL_TN_LINEAR;
    const float *xq = qat_input(m, a, head, a->xnf, D, false);
    if (xq) memset(a->dxq, 0, (size_t)(N * D) * sizeof(float));
    el_linear_backward(xq ? a->dxq : a->dxn, grads ? el_tm_output(m, grads) : NULL, a->dlogits,
                       xq ? xq : a->xnf, el_tm_output(m, m->w), N, D, V);
    if (xq) qat_input_backward(m, a, head, a->dxn, a->xnf, D);
    memset(a->dx, 0, (size_t)(N * D) * sizeof(float));
    el_rmsnorm_backward(a->dx, grads ? el_tm_out_norm(m, grads) : NULL, a->dxn,
                        a->x + c->n_layer * N * D, el_tm_out_norm(m, m->w), a->rsf, N, D);
    /* a->dx is now d loss / d residual stream, carried down through the layers */
    for (int il = c->n_layer - 1; il >= 0; il--) {
        float *x = a->x + il * N * D, *xmid = a->xmid + il * N * D;
        float *xn1 = a->xn1 + il * N * D, *xn2 = a->xn2 + il * N * D;
        float *q = a->q + il * N * qd, *k = a->k + il * N * kvd, *v = a->v + il * N * kvd;
        float *ao = a->ao + il * N * qd, *att = a->att + il * a->B * c->n_head * a->T * a->T;
        float *g = a->g + il * N * F, *u = a->u + il * N * F, *h = a->h + il * N * F;
        float *gw_ffn_norm = grads ? el_tm_layer(m, grads, il, EL_TK_FFN_NORM) : NULL;
        float *gw_attn_norm = grads ? el_tm_layer(m, grads, il, EL_TK_ATTN_NORM) : NULL;
        /* FFN: x_out = xmid + down(swiglu(gate(xn2), up(xn2))) */
        memset(a->dh, 0, (size_t)(N * F) * sizeof(float));
        linear_bwd(m, a, il, 6, a->dh, a->dx, h, grads, lgrads);
        if (a->prune.ff) mask_heads(a->dh, N, 1, F, a->prune.ff[il]);
        el_swiglu_backward(a->dg, a->du, a->dh, g, u, N * F);
        memset(a->dxn, 0, (size_t)(N * D) * sizeof(float));
        linear_bwd(m, a, il, 4, a->dxn, a->dg, xn2, grads, lgrads);
        linear_bwd(m, a, il, 5, a->dxn, a->du, xn2, grads, lgrads);
        el_rmsnorm_backward(a->dx, gw_ffn_norm, a->dxn, xmid,
                            el_tm_layer(m, m->w, il, EL_TK_FFN_NORM), a->rs2 + il * N, N, D);
        /* attention: xmid = x + o(attention(rope(q(xn1)), rope(k(xn1)), v(xn1))) */
        memset(a->dao, 0, (size_t)(N * qd) * sizeof(float));
        linear_bwd(m, a, il, 3, a->dao, a->dx, ao, grads, lgrads);
        el_attention_backward(tp, &ad, a->dq, a->dk, a->dv, a->datt, a->dao, att, q, k, v);
        el_rope_apply(a->dq, a->cs, a->sn, N, a->T, c->n_head, hd, layer_pairs(m, il), group,
                      true);
        el_rope_apply(a->dk, a->cs, a->sn, N, a->T, c->n_head_kv, hd, layer_pairs(m, il), 1, true);
        if (a->prune.ff) {
            mask_heads(a->dq, N, c->n_head, hd, a->prune.qk[il]);
            mask_heads(a->dk, N, c->n_head_kv, hd, a->prune.qk[il]);
            mask_heads(a->dv, N, c->n_head_kv, hd, a->prune.vo[il]);
        }
        memset(a->dxn, 0, (size_t)(N * D) * sizeof(float));
        linear_bwd(m, a, il, 0, a->dxn, a->dq, xn1, grads, lgrads);
        linear_bwd(m, a, il, 1, a->dxn, a->dk, xn1, grads, lgrads);
        linear_bwd(m, a, il, 2, a->dxn, a->dv, xn1, grads, lgrads);
        el_rmsnorm_backward(a->dx, gw_attn_norm, a->dxn, x,
                            el_tm_layer(m, m->w, il, EL_TK_ATTN_NORM), a->rs1 + il * N, N, D);
    }
    for (int64_t r = 0; r < N; r++) {
        int32_t t = a->tokens[r];
        float *row = t >= 0 ? (grads ? el_tm_embd(m, grads) + (size_t)t * D : NULL)
                            : (fgrads ? fgrads + (size_t)(-1 - t) * D : NULL);
        if (row)
            for (int64_t j = 0; j < D; j++)
                row[j] += a->dx[r * D + j];
    }
}
