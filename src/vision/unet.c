/* unet.c - the UNet's parameter table, initialization, forward and backward (see unet.h). */
#include "vision/unet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "train/rng.h"
#include "vision/layers.h"
#include "vision/lora.h"
#include "vision/quant.h"

/* ------------------------------------------------------------------ the table */

enum { max_tensors = 128 };

static int32_t add_tensor(el_unet *u, const char *prefix, const char *name, int64_t n_out,
                          int64_t n_in, bool decay) {
    el_ttensor *t = &u->tb.t[u->tb.n];
    snprintf(t->name, sizeof t->name, "%s%s%s", prefix, *prefix ? "." : "", name);
    t->n_out = n_out;
    t->n_in = n_in;
    t->offset = u->tb.n_floats;
    t->decay = decay;
    u->tb.n_floats += (size_t)(n_out * n_in);
    return u->tb.n++;
}

static el_unet_conv add_conv(el_unet *u, const char *prefix, const char *name, int32_t cin,
                             int32_t cout, int32_t k) {
    char full[48];
    snprintf(full, sizeof full, "%s.weight", name);
    el_unet_conv c = {add_tensor(u, prefix, full, cout, (int64_t)cin * k * k, true), 0, cin, cout,
                      k};
    snprintf(full, sizeof full, "%s.bias", name);
    c.b = add_tensor(u, prefix, full, 1, cout, false);
    return c;
}

static el_unet_norm add_norm(el_unet *u, const char *prefix, const char *name, int32_t c) {
    char full[48];
    snprintf(full, sizeof full, "%s.weight", name);
    el_unet_norm n = {add_tensor(u, prefix, full, 1, c, false), 0, c};
    snprintf(full, sizeof full, "%s.bias", name);
    n.b = add_tensor(u, prefix, full, 1, c, false);
    return n;
}

static el_unet_res add_res(el_unet *u, const char *name, int32_t cin, int32_t cout) {
    el_unet_res r;
    r.n1 = add_norm(u, name, "norm1", cin);
    r.c1 = add_conv(u, name, "conv1", cin, cout, 3);
    r.tw = add_tensor(u, name, "temb.weight", cout, u->c.temb, true);
    r.tb = add_tensor(u, name, "temb.bias", 1, cout, false);
    r.n2 = add_norm(u, name, "norm2", cout);
    r.c2 = add_conv(u, name, "conv2", cout, cout, 3);
    if (cin != cout)
        r.skip = add_conv(u, name, "skip", cin, cout, 1);
    else
        r.skip = (el_unet_conv){-1, -1, cin, cout, 1};
    return r;
}

el_status el_unet_init(el_unet *u, const el_unet_config *c) {
    memset(u, 0, sizeof *u);
    if (c->ch <= 0 || c->temb <= 0 || c->temb % 2 || c->groups <= 0 || c->ch % c->groups ||
        c->n_class < 0 || c->n_steps <= 1)
        return el_error(EL_ERR_INVALID_ARG,
                        "image model: bad shape (ch %d, temb %d, groups %d, classes %d, steps %d)",
                        c->ch, c->temb, c->groups, c->n_class, c->n_steps);
    u->c = *c;
    u->tb.t = calloc(max_tensors, sizeof *u->tb.t);
    if (!u->tb.t) return el_error(EL_ERR_NOMEM, "image model: out of memory");
    int32_t C = c->ch, E = c->temb;
    /* the sinusoid is ch wide */
    u->t1w = add_tensor(u, "time", "fc1.weight", E, C, true);
    u->t1b = add_tensor(u, "time", "fc1.bias", 1, E, false);
    u->t2w = add_tensor(u, "time", "fc2.weight", E, E, true);
    u->t2b = add_tensor(u, "time", "fc2.bias", 1, E, false);
    u->cls = add_tensor(u, "", "class_embd.weight", c->n_class + 1, E, false);
    u->conv_in = add_conv(u, "", "conv_in", EL_UNET_IN, C, 3);
    u->d0 = add_res(u, "d0", C, C);
    u->d1 = add_res(u, "d1", C, 2 * C);
    u->m0 = add_res(u, "m0", 2 * C, 2 * C);
    u->attn.n = add_norm(u, "attn", "norm", 2 * C);
    u->attn.q = add_conv(u, "attn", "q", 2 * C, 2 * C, 1);
    u->attn.k = add_conv(u, "attn", "k", 2 * C, 2 * C, 1);
    u->attn.v = add_conv(u, "attn", "v", 2 * C, 2 * C, 1);
    u->attn.o = add_conv(u, "attn", "out", 2 * C, 2 * C, 1);
    u->m1 = add_res(u, "m1", 2 * C, 2 * C);
    u->u1 = add_res(u, "u1", 4 * C, 2 * C);
    u->u0 = add_res(u, "u0", 3 * C, C);
    u->out_norm = add_norm(u, "", "out_norm", C);
    u->conv_out = add_conv(u, "", "conv_out", C, 1, 3);
    return EL_OK;
}

void el_unet_free(el_unet *u) {
    free(u->tb.t);
    memset(u, 0, sizeof *u);
}

void el_unet_init_params(const el_unet *u, float *p, uint64_t seed) {
    el_rng r;
    el_rng_seed(&r, seed);
    memset(p, 0, u->tb.n_floats * sizeof *p);
    for (int32_t i = 0; i < u->tb.n; i++) {
        const el_ttensor *t = &u->tb.t[i];
        float *w = p + t->offset;
        size_t n = (size_t)(t->n_out * t->n_in);
        const char *tail = strrchr(t->name, '.');
        bool norm = strstr(t->name, "norm") != NULL;
        if (i == u->cls) {
            for (size_t j = 0; j < n; j++) w[j] = el_rng_normal(&r);
        } else if (norm && !strcmp(tail, ".weight")) {
            for (size_t j = 0; j < n; j++) w[j] = 1.0f;
        } else if (t->decay && i != u->conv_out.w) {
            float bound = 1.0f / sqrtf((float)t->n_in);
            for (size_t j = 0; j < n; j++) w[j] = bound * (2.0f * el_rng_uniform(&r) - 1.0f);
        }
    }
}

/* ------------------------------------------------------------------ layer helpers */

typedef struct res_acts {
    const float *x;
    float *y1, *m1, *r1, *a1, *h1, *tp, *y2, *m2, *r2, *a2, *out;
} res_acts;

typedef struct attn_acts {
    const float *x;
    float *y, *m, *r, *q, *k, *v, *p, *o, *out;
} attn_acts;

struct el_unet_acts {
    int64_t B;
    const float *x;
    const int32_t *cls;
    float *sin, *e1, *ea, *e2, *temb; /* temb: SiLU(e2), what every block's projection reads */
    float *h0, *p0, *p1, *up1, *cat1, *up0, *cat0;
    res_acts d0, d1, m0, m1, u1, u0;
    attn_acts at;
    float *yo, *mo, *ro, *ao;
};

static float *W(const el_unet *u, const float *p, int32_t i) {
    return (float *)p + u->tb.t[i].offset;
}

/* y = the convolution of x (in integers under bind->quant), plus the adapter's low-rank term if
 * bind->lora adapts it; bind (may be NULL) also records the input's range for calibration. */
static void conv_fwd(const el_unet *u, const float *p, const el_unet_bind *bind,
                     const el_unet_conv *c, int64_t B, int64_t side, const float *x, float *y,
                     el_arena *a) {
    el_conv_dims d = {B, c->cin, c->cout, side, side, c->k};
    const el_vlora *l = bind ? bind->lora : NULL;
    if (bind && bind->amax) {
        float mx = bind->amax[c->w];
        for (int64_t i = 0; i < B * c->cin * side * side; i++) mx = fmaxf(mx, fabsf(x[i]));
        bind->amax[c->w] = mx;
    }
    int32_t k = l ? l->slot[c->w] : -1;
    bool quant = bind && bind->quant;
    el_arena_mark m = el_arena_get_mark(a);
    float step = bind && bind->fake_step ? bind->fake_step[c->w] : 0.0f;
    if (step > 0.0f) { /* the input as the integer form sees it; gradients pass straight through */
        size_t n = (size_t)(B * c->cin * side * side);
        float *xq = el_arena_alloc(a, n), id = 1.0f / step, L = bind->fake_levels;
        if (!xq) return;
        for (size_t i = 0; i < n; i++) xq[i] = step * rintf(fminf(fmaxf(x[i] * id, -L), L));
        x = xq;
    }
    float *col = c->k > 1 && (!quant || k >= 0) ? el_arena_alloc(a, (size_t)el_conv_col_size(&d))
                                                : NULL;
    float *lx = k >= 0 ? el_arena_alloc(a, (size_t)(l->rank * side * side)) : NULL;
    if (!a->failed) {
        if (quant)
            el_unet_qconv_forward(bind->quant, c, W(u, p, c->b), B, side, x, y, a);
        else
            el_conv_forward(y, x, W(u, p, c->w), W(u, p, c->b), &d, col);
    }
    if (k >= 0 && !a->failed)
        el_conv_lora_forward(y, x, l->w + l->tb.t[k].offset, l->w + l->tb.t[k + 1].offset, l->scale,
                             l->rank, &d, col, lx);
    el_arena_release(a, m);
}

static void conv_bwd(const el_unet *u, const float *p, float *g, const el_unet_conv *c, int64_t B,
                     int64_t side, const float *x, const float *dy, float *dx, el_arena *a) {
    el_conv_dims d = {B, c->cin, c->cout, side, side, c->k};
    el_arena_mark m = el_arena_get_mark(a);
    size_t n = c->k > 1 ? (size_t)el_conv_col_size(&d) : 0;
    float *col = n ? el_arena_alloc(a, n) : NULL, *dcol = n ? el_arena_alloc(a, n) : NULL;
    if (!a->failed)
        el_conv_backward(dx, W(u, g, c->w), W(u, g, c->b), dy, x, W(u, p, c->w), &d, col, dcol);
    el_arena_release(a, m);
}

static void norm_fwd(const el_unet *u, const float *p, const el_unet_norm *n, int64_t B, int64_t HW,
                     const float *x, float *y, float *mean, float *rstd) {
    el_groupnorm_forward(y, mean, rstd, x, W(u, p, n->g), W(u, p, n->b), B, n->c, HW, u->c.groups,
                         1e-5f);
}

static void norm_bwd(const el_unet *u, const float *p, float *g, const el_unet_norm *n, int64_t B,
                     int64_t HW, const float *x, const float *mean, const float *rstd,
                     const float *dy, float *dx) {
    el_groupnorm_backward(dx, W(u, g, n->g), W(u, g, n->b), dy, x, W(u, p, n->g), mean, rstd, B,
                          n->c, HW, u->c.groups);
}

/* ------------------------------------------------------------------ residual block */

static void res_forward(const el_unet *u, const float *p, const el_unet_bind *bind,
                        const el_unet_res *r, int64_t B, int64_t side, const float *x,
                        const float *temb, res_acts *s, el_arena *a) {
    int64_t HW = side * side, ci = r->c1.cin, co = r->c1.cout, G = u->c.groups;
    size_t ni = (size_t)(B * ci * HW), no = (size_t)(B * co * HW);
    s->x = x;
    s->y1 = el_arena_alloc(a, ni), s->a1 = el_arena_alloc(a, ni);
    s->m1 = el_arena_alloc(a, (size_t)(B * G)), s->r1 = el_arena_alloc(a, (size_t)(B * G));
    s->h1 = el_arena_alloc(a, no), s->tp = el_arena_alloc(a, (size_t)(B * co));
    s->y2 = el_arena_alloc(a, no), s->a2 = el_arena_alloc(a, no), s->out = el_arena_alloc(a, no);
    s->m2 = el_arena_alloc(a, (size_t)(B * G)), s->r2 = el_arena_alloc(a, (size_t)(B * G));
    if (a->failed) return;
    norm_fwd(u, p, &r->n1, B, HW, x, s->y1, s->m1, s->r1);
    el_silu_forward(s->a1, s->y1, (int64_t)ni);
    conv_fwd(u, p, bind, &r->c1, B, side, s->a1, s->h1, a);
    el_dense_forward(s->tp, temb, W(u, p, r->tw), W(u, p, r->tb), B, u->c.temb, co);
    for (int64_t i = 0; i < B * co; i++)
        for (int64_t j = 0; j < HW; j++) s->h1[i * HW + j] += s->tp[i];
    norm_fwd(u, p, &r->n2, B, HW, s->h1, s->y2, s->m2, s->r2);
    el_silu_forward(s->a2, s->y2, (int64_t)no);
    conv_fwd(u, p, bind, &r->c2, B, side, s->a2, s->out, a);
    if (r->skip.w < 0) {
        for (size_t i = 0; i < no; i++) s->out[i] += x[i];
        return;
    }
    el_arena_mark m = el_arena_get_mark(a);
    float *sk = el_arena_alloc(a, no);
    if (!a->failed) {
        conv_fwd(u, p, bind, &r->skip, B, side, x, sk, a);
        for (size_t i = 0; i < no; i++) s->out[i] += sk[i];
    }
    el_arena_release(a, m);
}

/* dx += d/dx, dtemb += d/d SiLU(temb), gradients into g. */
static void res_backward(const el_unet *u, const float *p, float *g, const el_unet_res *r,
                         int64_t B, int64_t side, const float *temb, const res_acts *s,
                         const float *dout, float *dx, float *dtemb, el_arena *a) {
    int64_t HW = side * side, ci = r->c1.cin, co = r->c1.cout;
    size_t ni = (size_t)(B * ci * HW), no = (size_t)(B * co * HW);
    el_arena_mark m = el_arena_get_mark(a);
    float *da2 = el_arena_zalloc(a, no), *dy2 = el_arena_zalloc(a, no),
          *dh1 = el_arena_zalloc(a, no);
    float *dtp = el_arena_zalloc(a, (size_t)(B * co));
    float *da1 = el_arena_zalloc(a, ni), *dy1 = el_arena_zalloc(a, ni);
    if (a->failed) return;
    if (r->skip.w < 0)
        for (size_t i = 0; i < no; i++) dx[i] += dout[i];
    else
        conv_bwd(u, p, g, &r->skip, B, side, s->x, dout, dx, a);
    conv_bwd(u, p, g, &r->c2, B, side, s->a2, dout, da2, a);
    el_silu_backward(dy2, da2, s->y2, (int64_t)no);
    norm_bwd(u, p, g, &r->n2, B, HW, s->h1, s->m2, s->r2, dy2, dh1);
    for (int64_t i = 0; i < B * co; i++) {
        float sum = 0.0f;
        for (int64_t j = 0; j < HW; j++) sum += dh1[i * HW + j];
        dtp[i] = sum;
    }
    el_dense_backward(dtemb, W(u, g, r->tw), W(u, g, r->tb), dtp, temb, W(u, p, r->tw), B,
                      u->c.temb, co);
    conv_bwd(u, p, g, &r->c1, B, side, s->a1, dh1, da1, a);
    el_silu_backward(dy1, da1, s->y1, (int64_t)ni);
    norm_bwd(u, p, g, &r->n1, B, HW, s->x, s->m1, s->r1, dy1, dx);
    el_arena_release(a, m);
}

/* ------------------------------------------------------------------ attention block */

static void attn_forward(const el_unet *u, const float *p, const el_unet_bind *bind,
                         const el_unet_attn *at, int64_t B, int64_t side, const float *x,
                         attn_acts *s, el_arena *a) {
    int64_t N = side * side, C = at->n.c;
    size_t n = (size_t)(B * C * N);
    s->x = x;
    s->y = el_arena_alloc(a, n), s->q = el_arena_alloc(a, n), s->k = el_arena_alloc(a, n);
    s->v = el_arena_alloc(a, n), s->o = el_arena_alloc(a, n), s->out = el_arena_alloc(a, n);
    s->p = el_arena_alloc(a, (size_t)(B * N * N));
    s->m = el_arena_alloc(a, (size_t)(B * u->c.groups));
    s->r = el_arena_alloc(a, (size_t)(B * u->c.groups));
    if (a->failed) return;
    norm_fwd(u, p, &at->n, B, N, x, s->y, s->m, s->r);
    conv_fwd(u, p, bind, &at->q, B, side, s->y, s->q, a);
    conv_fwd(u, p, bind, &at->k, B, side, s->y, s->k, a);
    conv_fwd(u, p, bind, &at->v, B, side, s->y, s->v, a);
    el_spatial_attention_forward(s->o, s->p, s->q, s->k, s->v, B, C, N);
    conv_fwd(u, p, bind, &at->o, B, side, s->o, s->out, a);
    for (size_t i = 0; i < n; i++) s->out[i] += x[i];
}

static void attn_backward(const el_unet *u, const float *p, float *g, const el_unet_attn *at,
                          int64_t B, int64_t side, const attn_acts *s, const float *dout, float *dx,
                          el_arena *a) {
    int64_t N = side * side, C = at->n.c;
    size_t n = (size_t)(B * C * N);
    el_arena_mark m = el_arena_get_mark(a);
    float *dout_o = el_arena_zalloc(a, n), *dq = el_arena_zalloc(a, n), *dk = el_arena_zalloc(a, n);
    float *dv = el_arena_zalloc(a, n), *dy = el_arena_zalloc(a, n);
    float *ds = el_arena_alloc(a, (size_t)(N * N));
    if (a->failed) return;
    for (size_t i = 0; i < n; i++) dx[i] += dout[i];
    conv_bwd(u, p, g, &at->o, B, side, s->o, dout, dout_o, a);
    el_spatial_attention_backward(dq, dk, dv, ds, dout_o, s->p, s->q, s->k, s->v, B, C, N);
    conv_bwd(u, p, g, &at->q, B, side, s->y, dq, dy, a);
    conv_bwd(u, p, g, &at->k, B, side, s->y, dk, dy, a);
    conv_bwd(u, p, g, &at->v, B, side, s->y, dv, dy, a);
    norm_bwd(u, p, g, &at->n, B, N, s->x, s->m, s->r, dy, dx);
    el_arena_release(a, m);
}

/* ------------------------------------------------------------------ the network */

/* cat [B][c1 + c2][HW] of x1 [B][c1][HW] and x2 [B][c2][HW] */
static void concat(float *cat, const float *x1, int64_t c1, const float *x2, int64_t c2, int64_t B,
                   int64_t HW) {
    for (int64_t b = 0; b < B; b++) {
        memcpy(cat + b * (c1 + c2) * HW, x1 + b * c1 * HW, (size_t)(c1 * HW) * sizeof *cat);
        memcpy(cat + (b * (c1 + c2) + c1) * HW, x2 + b * c2 * HW, (size_t)(c2 * HW) * sizeof *cat);
    }
}

/* The inverse: d1 += the first c1 channels of dcat, d2 += the others. */
static void split_add(float *d1, int64_t c1, float *d2, int64_t c2, const float *dcat, int64_t B,
                      int64_t HW) {
    for (int64_t b = 0; b < B; b++) {
        const float *src = dcat + b * (c1 + c2) * HW;
        for (int64_t i = 0; i < c1 * HW; i++) d1[b * c1 * HW + i] += src[i];
        for (int64_t i = 0; i < c2 * HW; i++) d2[b * c2 * HW + i] += src[c1 * HW + i];
    }
}

el_status el_unet_forward(const el_unet *u, const float *p, const el_unet_bind *bind, int64_t B,
                          const float *x, const int32_t *t, const int32_t *cls, float *eps,
                          el_arena *a, el_unet_acts **acts) {
    int64_t C = u->c.ch, E = u->c.temb, S0 = EL_UNET_SIDE, S1 = S0 / 2, S2 = S1 / 2;
    int64_t HW0 = S0 * S0, HW1 = S1 * S1, HW2 = S2 * S2, G = u->c.groups;
    for (int64_t b = 0; b < B; b++)
        if (cls[b] < 0 || cls[b] > u->c.n_class || t[b] < 0 || t[b] >= u->c.n_steps)
            return el_error(EL_ERR_INVALID_ARG, "image model: class %d or timestep %d out of range",
                            cls[b], t[b]);
    el_unet_acts *s = (el_unet_acts *)el_arena_alloc(a, (sizeof *s + 3) / 4);
    if (!s) return el_error(EL_ERR_NOMEM, "image model: out of memory for activations");
    memset(s, 0, sizeof *s);
    s->B = B, s->x = x, s->cls = cls;
    s->sin = el_arena_alloc(a, (size_t)(B * C)), s->e1 = el_arena_alloc(a, (size_t)(B * E));
    s->ea = el_arena_alloc(a, (size_t)(B * E)), s->e2 = el_arena_alloc(a, (size_t)(B * E));
    s->temb = el_arena_alloc(a, (size_t)(B * E));
    s->h0 = el_arena_alloc(a, (size_t)(B * C * HW0));
    s->p0 = el_arena_alloc(a, (size_t)(B * C * HW1));
    s->p1 = el_arena_alloc(a, (size_t)(B * 2 * C * HW2));
    s->up1 = el_arena_alloc(a, (size_t)(B * 2 * C * HW1));
    s->cat1 = el_arena_alloc(a, (size_t)(B * 4 * C * HW1));
    s->up0 = el_arena_alloc(a, (size_t)(B * 2 * C * HW0));
    s->cat0 = el_arena_alloc(a, (size_t)(B * 3 * C * HW0));
    s->yo = el_arena_alloc(a, (size_t)(B * C * HW0)),
    s->ao = el_arena_alloc(a, (size_t)(B * C * HW0));
    s->mo = el_arena_alloc(a, (size_t)(B * G)), s->ro = el_arena_alloc(a, (size_t)(B * G));
    if (a->failed) return el_error(EL_ERR_NOMEM, "image model: out of memory for activations");

    el_timestep_embedding(s->sin, t, B, C);
    el_dense_forward(s->e1, s->sin, W(u, p, u->t1w), W(u, p, u->t1b), B, C, E);
    el_silu_forward(s->ea, s->e1, B * E);
    el_dense_forward(s->e2, s->ea, W(u, p, u->t2w), W(u, p, u->t2b), B, E, E);
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < E; i++) s->e2[b * E + i] += W(u, p, u->cls)[cls[b] * E + i];
    el_silu_forward(s->temb, s->e2, B * E);

    conv_fwd(u, p, bind, &u->conv_in, B, S0, x, s->h0, a);
    res_forward(u, p, bind, &u->d0, B, S0, s->h0, s->temb, &s->d0, a);
    if (a->failed) goto oom;
    el_avgpool2_forward(s->p0, s->d0.out, B * C, S0, S0);
    res_forward(u, p, bind, &u->d1, B, S1, s->p0, s->temb, &s->d1, a);
    if (a->failed) goto oom;
    el_avgpool2_forward(s->p1, s->d1.out, B * 2 * C, S1, S1);
    res_forward(u, p, bind, &u->m0, B, S2, s->p1, s->temb, &s->m0, a);
    if (a->failed) goto oom;
    attn_forward(u, p, bind, &u->attn, B, S2, s->m0.out, &s->at, a);
    if (a->failed) goto oom;
    res_forward(u, p, bind, &u->m1, B, S2, s->at.out, s->temb, &s->m1, a);
    if (a->failed) goto oom;
    el_upsample2_forward(s->up1, s->m1.out, B * 2 * C, S2, S2);
    concat(s->cat1, s->up1, 2 * C, s->d1.out, 2 * C, B, HW1);
    res_forward(u, p, bind, &u->u1, B, S1, s->cat1, s->temb, &s->u1, a);
    if (a->failed) goto oom;
    el_upsample2_forward(s->up0, s->u1.out, B * 2 * C, S1, S1);
    concat(s->cat0, s->up0, 2 * C, s->d0.out, C, B, HW0);
    res_forward(u, p, bind, &u->u0, B, S0, s->cat0, s->temb, &s->u0, a);
    if (a->failed) goto oom;
    norm_fwd(u, p, &u->out_norm, B, HW0, s->u0.out, s->yo, s->mo, s->ro);
    el_silu_forward(s->ao, s->yo, B * C * HW0);
    conv_fwd(u, p, bind, &u->conv_out, B, S0, s->ao, eps, a);
    if (a->failed) goto oom;
    if (acts) *acts = s;
    return EL_OK;
oom:
    return el_error(EL_ERR_NOMEM, "image model: out of memory for activations");
}

el_status el_unet_backward(const el_unet *u, const float *p, float *g, const el_unet_acts *s,
                           const float *deps, el_arena *a) {
    int64_t B = s->B, C = u->c.ch, E = u->c.temb, S0 = EL_UNET_SIDE, S1 = S0 / 2, S2 = S1 / 2;
    int64_t HW0 = S0 * S0, HW1 = S1 * S1, HW2 = S2 * S2;
    el_arena_mark m = el_arena_get_mark(a);
    float *dtemb = el_arena_zalloc(a, (size_t)(B * E));
    float *dao = el_arena_zalloc(a, (size_t)(B * C * HW0)),
          *dyo = el_arena_zalloc(a, (size_t)(B * C * HW0));
    float *du0 = el_arena_zalloc(a, (size_t)(B * C * HW0));
    float *dcat0 = el_arena_zalloc(a, (size_t)(B * 3 * C * HW0));
    float *dup0 = el_arena_zalloc(a, (size_t)(B * 2 * C * HW0));
    float *dd0 = el_arena_zalloc(a, (size_t)(B * C * HW0));
    float *du1 = el_arena_zalloc(a, (size_t)(B * 2 * C * HW1));
    float *dcat1 = el_arena_zalloc(a, (size_t)(B * 4 * C * HW1));
    float *dup1 = el_arena_zalloc(a, (size_t)(B * 2 * C * HW1));
    float *dd1 = el_arena_zalloc(a, (size_t)(B * 2 * C * HW1));
    float *dm1 = el_arena_zalloc(a, (size_t)(B * 2 * C * HW2));
    float *dat = el_arena_zalloc(a, (size_t)(B * 2 * C * HW2));
    float *dm0 = el_arena_zalloc(a, (size_t)(B * 2 * C * HW2));
    float *dp1 = el_arena_zalloc(a, (size_t)(B * 2 * C * HW2));
    float *dp0 = el_arena_zalloc(a, (size_t)(B * C * HW1));
    float *dh0 = el_arena_zalloc(a, (size_t)(B * C * HW0));
    float *de2 = el_arena_zalloc(a, (size_t)(B * E)), *dea = el_arena_zalloc(a, (size_t)(B * E));
    float *de1 = el_arena_zalloc(a, (size_t)(B * E));
    if (a->failed) return el_error(EL_ERR_NOMEM, "image model: out of memory for gradients");

    conv_bwd(u, p, g, &u->conv_out, B, S0, s->ao, deps, dao, a);
    el_silu_backward(dyo, dao, s->yo, B * C * HW0);
    norm_bwd(u, p, g, &u->out_norm, B, HW0, s->u0.out, s->mo, s->ro, dyo, du0);
    res_backward(u, p, g, &u->u0, B, S0, s->temb, &s->u0, du0, dcat0, dtemb, a);
    split_add(dup0, 2 * C, dd0, C, dcat0, B, HW0);
    el_upsample2_backward(du1, dup0, B * 2 * C, S1, S1);
    res_backward(u, p, g, &u->u1, B, S1, s->temb, &s->u1, du1, dcat1, dtemb, a);
    split_add(dup1, 2 * C, dd1, 2 * C, dcat1, B, HW1);
    el_upsample2_backward(dm1, dup1, B * 2 * C, S2, S2);
    res_backward(u, p, g, &u->m1, B, S2, s->temb, &s->m1, dm1, dat, dtemb, a);
    attn_backward(u, p, g, &u->attn, B, S2, &s->at, dat, dm0, a);
    res_backward(u, p, g, &u->m0, B, S2, s->temb, &s->m0, dm0, dp1, dtemb, a);
    el_avgpool2_backward(dd1, dp1, B * 2 * C, S1, S1);
    res_backward(u, p, g, &u->d1, B, S1, s->temb, &s->d1, dd1, dp0, dtemb, a);
    el_avgpool2_backward(dd0, dp0, B * C, S0, S0);
    res_backward(u, p, g, &u->d0, B, S0, s->temb, &s->d0, dd0, dh0, dtemb, a);
    conv_bwd(u, p, g, &u->conv_in, B, S0, s->x, dh0, NULL, a);

    el_silu_backward(de2, dtemb, s->e2, B * E);
    float *gcls = W(u, g, u->cls);
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < E; i++) gcls[s->cls[b] * E + i] += de2[b * E + i];
    el_dense_backward(dea, W(u, g, u->t2w), W(u, g, u->t2b), de2, s->ea, W(u, p, u->t2w), B, E, E);
    el_silu_backward(de1, dea, s->e1, B * E);
    el_dense_backward(NULL, W(u, g, u->t1w), W(u, g, u->t1b), de1, s->sin, W(u, p, u->t1w), B, C,
                      E);
    bool failed = a->failed;
    el_arena_release(a, m);
    return failed ? el_error(EL_ERR_NOMEM, "image model: out of memory for gradients") : EL_OK;
}
