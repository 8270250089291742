/* classifier.c - the digit classifier's table, forward and backward (see classifier.h). */
#include "vision/classifier.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "train/rng.h"
#include "vision/layers.h"

enum { SIDE = 28, HALF = 14, QUARTER = 7, max_tensors = 8 };

static int32_t add_tensor(el_cnet *n, const char *name, int64_t n_out, int64_t n_in, bool decay) {
    el_ttensor *t = &n->tb.t[n->tb.n];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->n_out = n_out;
    t->n_in = n_in;
    t->offset = n->tb.n_floats;
    t->decay = decay;
    n->tb.n_floats += (size_t)(n_out * n_in);
    return n->tb.n++;
}

el_status el_cnet_init(el_cnet *n, const el_cnet_config *c) {
    memset(n, 0, sizeof *n);
    if (c->c1 <= 0 || c->c2 <= 0 || c->n_feat <= 1 || c->n_class <= 1 || c->c1 > 4096 ||
        c->c2 > 4096 || c->n_feat > 4096 || c->n_class > 4096)
        return el_error(EL_ERR_INVALID_ARG,
                        "digit classifier: bad shape (channels %d and %d, %d features, %d classes)",
                        c->c1, c->c2, c->n_feat, c->n_class);
    n->c = *c;
    n->tb.t = calloc(max_tensors, sizeof *n->tb.t);
    if (!n->tb.t) return el_error(EL_ERR_NOMEM, "digit classifier: out of memory");
    n->w1 = add_tensor(n, "conv1.weight", c->c1, 9, true);
    n->b1 = add_tensor(n, "conv1.bias", 1, c->c1, false);
    n->w2 = add_tensor(n, "conv2.weight", c->c2, (int64_t)c->c1 * 9, true);
    n->b2 = add_tensor(n, "conv2.bias", 1, c->c2, false);
    n->w3 = add_tensor(n, "features.weight", c->n_feat, (int64_t)c->c2 * QUARTER * QUARTER, true);
    n->b3 = add_tensor(n, "features.bias", 1, c->n_feat, false);
    n->w4 = add_tensor(n, "logits.weight", c->n_class, c->n_feat, true);
    n->b4 = add_tensor(n, "logits.bias", 1, c->n_class, false);
    return EL_OK;
}

void el_cnet_free(el_cnet *n) {
    free(n->tb.t);
    memset(n, 0, sizeof *n);
}

void el_cnet_init_params(const el_cnet *n, float *p, uint64_t seed) {
    el_rng r;
    el_rng_seed(&r, seed);
    memset(p, 0, n->tb.n_floats * sizeof *p);
    for (int32_t i = 0; i < n->tb.n; i++) {
        const el_ttensor *t = &n->tb.t[i];
        if (!t->decay) continue;
        float bound = 1.0f / sqrtf((float)t->n_in);
        for (int64_t j = 0; j < t->n_out * t->n_in; j++)
            p[t->offset + (size_t)j] = bound * (2.0f * el_rng_uniform(&r) - 1.0f);
    }
}

struct el_cnet_acts {
    int64_t B;
    const float *x;
    float *y1, *a1, *p1, *y2, *a2, *p2, *h, *f;
};

static const float *T(const el_cnet *n, const float *p, int32_t i) {
    return p + n->tb.t[i].offset;
}

el_status el_cnet_forward(const el_cnet *n, const float *p, int64_t B, const float *x,
                          float *logits, float *feat, el_arena *a, el_cnet_acts **acts) {
    int64_t c1 = n->c.c1, c2 = n->c.c2, F = n->c.n_feat;
    el_cnet_acts *s = (el_cnet_acts *)el_arena_alloc(a, (sizeof *s + 3) / 4);
    size_t n1 = (size_t)(B * c1 * SIDE * SIDE), n2 = (size_t)(B * c2 * HALF * HALF);
    el_conv_dims d1 = {B, 1, c1, SIDE, SIDE, 3}, d2 = {B, c1, c2, HALF, HALF, 3};
    int64_t cols = el_conv_col_size(&d2) > el_conv_col_size(&d1) ? el_conv_col_size(&d2)
                                                                   : el_conv_col_size(&d1);
    if (s) {
        s->B = B, s->x = x;
        s->y1 = el_arena_alloc(a, n1), s->a1 = el_arena_alloc(a, n1);
        s->p1 = el_arena_alloc(a, n1 / 4);
        s->y2 = el_arena_alloc(a, n2), s->a2 = el_arena_alloc(a, n2);
        s->p2 = el_arena_alloc(a, n2 / 4);
        s->h = el_arena_alloc(a, (size_t)(B * F)), s->f = el_arena_alloc(a, (size_t)(B * F));
    }
    el_arena_mark m = el_arena_get_mark(a);
    float *col = el_arena_alloc(a, (size_t)cols);
    if (a->failed) return el_error(EL_ERR_NOMEM, "digit classifier: out of memory");
    el_conv_forward(s->y1, x, T(n, p, n->w1), T(n, p, n->b1), &d1, col);
    el_silu_forward(s->a1, s->y1, (int64_t)n1);
    el_avgpool2_forward(s->p1, s->a1, B * c1, SIDE, SIDE);
    el_conv_forward(s->y2, s->p1, T(n, p, n->w2), T(n, p, n->b2), &d2, col);
    el_silu_forward(s->a2, s->y2, (int64_t)n2);
    el_avgpool2_forward(s->p2, s->a2, B * c2, HALF, HALF);
    el_arena_release(a, m);
    el_dense_forward(s->h, s->p2, T(n, p, n->w3), T(n, p, n->b3), B, c2 * QUARTER * QUARTER, F);
    el_silu_forward(s->f, s->h, B * F);
    el_dense_forward(logits, s->f, T(n, p, n->w4), T(n, p, n->b4), B, F, n->c.n_class);
    if (feat) memcpy(feat, s->f, (size_t)(B * F) * sizeof *feat);
    if (acts) *acts = s;
    return EL_OK;
}

el_status el_cnet_backward(const el_cnet *n, const float *p, float *grad, const el_cnet_acts *s,
                           const float *dlogits, el_arena *a) {
    int64_t B = s->B, c1 = n->c.c1, c2 = n->c.c2, F = n->c.n_feat, nq = c2 * QUARTER * QUARTER;
    size_t n1 = (size_t)(B * c1 * SIDE * SIDE), n2 = (size_t)(B * c2 * HALF * HALF);
    el_conv_dims d1 = {B, 1, c1, SIDE, SIDE, 3}, d2 = {B, c1, c2, HALF, HALF, 3};
    el_arena_mark m = el_arena_get_mark(a);
    float *df = el_arena_zalloc(a, (size_t)(B * F)), *dh = el_arena_zalloc(a, (size_t)(B * F));
    float *dp2 = el_arena_zalloc(a, n2 / 4), *da2 = el_arena_zalloc(a, n2);
    float *dy2 = el_arena_zalloc(a, n2), *dp1 = el_arena_zalloc(a, n1 / 4);
    float *da1 = el_arena_zalloc(a, n1), *dy1 = el_arena_zalloc(a, n1);
    size_t cols = (size_t)el_conv_col_size(&d1);
    if ((size_t)el_conv_col_size(&d2) > cols) cols = (size_t)el_conv_col_size(&d2);
    float *col = el_arena_alloc(a, cols), *dcol = el_arena_alloc(a, cols);
    if (a->failed) return el_error(EL_ERR_NOMEM, "digit classifier: out of memory");
    float *g = grad;
    el_dense_backward(df, g + n->tb.t[n->w4].offset, g + n->tb.t[n->b4].offset, dlogits, s->f,
                      T(n, p, n->w4), B, F, n->c.n_class);
    el_silu_backward(dh, df, s->h, B * F);
    el_dense_backward(dp2, g + n->tb.t[n->w3].offset, g + n->tb.t[n->b3].offset, dh, s->p2,
                      T(n, p, n->w3), B, nq, F);
    el_avgpool2_backward(da2, dp2, B * c2, HALF, HALF);
    el_silu_backward(dy2, da2, s->y2, (int64_t)n2);
    el_conv_backward(dp1, g + n->tb.t[n->w2].offset, g + n->tb.t[n->b2].offset, dy2, s->p1,
                     T(n, p, n->w2), &d2, col, dcol);
    el_avgpool2_backward(da1, dp1, B * c1, SIDE, SIDE);
    el_silu_backward(dy1, da1, s->y1, (int64_t)n1);
    el_conv_backward(NULL, g + n->tb.t[n->w1].offset, g + n->tb.t[n->b1].offset, dy1, s->x,
                     T(n, p, n->w1), &d1, col, dcol);
    el_arena_release(a, m);
    return EL_OK;
}
