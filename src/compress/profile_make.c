/* profile_make.c - a quantization profile (model/profile.h) from calibration text run through
 * the model with each adapter bound in turn.
 *
 * Per slot: x from the percentile of |x| at the linear's input over every run (the bare base's
 * too when no adapter is given), t from the percentile of |A x| over the runs of the adapters
 * that change the slot (A x in float, from the adapter's own A, on the x the forward gave it),
 * a and b from the largest |value| of any adapter's A and B there. Each maps its range to 127.
 * Weights have no outliers that a percentile would clip usefully, so theirs is the maximum: an
 * adapter calibrated into the profile is held without clamping. A base that has static scales
 * of its own (quantization-aware training's, quantize --calibrate's) keeps them as the x of
 * their slots: it was trained, or chosen, at those grids; the profile adds the adapters'. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compress/calibrate.h"
#include "core/error.h"
#include "edgelora-tools.h"
#include "model/profile.h"
#include "runtime/adapter.h"
#include "runtime/context.h"

typedef struct profile_observer {
    const el_model *m;
    int32_t n_slots;
    el_top_k *x;            /* [n_slots + 1]: the head last */
    el_top_k *t;            /* [n_slots] */
    const float *const *a;  /* [n_slots]: the bound adapter's A as floats (NULL: none) */
    const int64_t *rank;    /* [n_slots] */
} profile_observer;

static void observe(void *user, int il, el_linear which, const float *x, int64_t ldx,
                    int32_t n_rows) {
    profile_observer *o = user;
    int32_t slot = il < 0 ? o->n_slots : el_linear_slot(il, which);
    const el_weight *w = il < 0 ? &o->m->output : el_layer_weight(&o->m->layers[il], which);
    el_top_k *tx = &o->x[slot];
    for (int32_t r = 0; r < n_rows; r++)
        for (int64_t i = 0; i < w->k_in; i++) {
            float v = fabsf(x[r * ldx + i]);
            if (tx->n < tx->k || v > tx->v[0]) el_top_k_add(tx, v);
        }
    if (il < 0 || !o->a[slot]) return;
    const float *a = o->a[slot];
    el_top_k *tt = &o->t[slot];
    for (int32_t r = 0; r < n_rows; r++)
        for (int64_t k = 0; k < o->rank[slot]; k++) {
            float acc = 0.0f;
            for (int64_t i = 0; i < w->n_in; i++) acc += a[k * w->n_in + i] * x[r * ldx + i];
            float v = fabsf(acc);
            if (tt->n < tt->k || v > tt->v[0]) el_top_k_add(tt, v);
        }
}

static float amax(const float *v, size_t n) {
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(v[i]));
    return m;
}

/* The adapters, loaded for m, and per slot each one's A as floats and the largest |A|, |B|. */
typedef struct adapter_set {
    el_adapter **ads;
    int32_t n;
    float **a;        /* [n][n_slots] */
    int64_t *rank;    /* [n][n_slots] */
    int64_t *n_rows;  /* [n_slots]: calibration rows that see the slot's t */
} adapter_set;

static void adapter_set_free(adapter_set *s, int32_t n_slots) {
    for (int32_t i = 0; s->a && i < s->n * n_slots; i++) free(s->a[i]);
    for (int32_t i = 0; s->ads && i < s->n; i++) el_adapter_free(s->ads[i]);
    free(s->ads);
    free(s->a);
    free(s->rank);
    free(s->n_rows);
}

static el_status load_adapters(const el_model *m, const el_profile_params *pp,
                               int64_t rows_per_run, el_profile *pf, adapter_set *s) {
    int32_t n_slots = pf->n_slots;
    s->n = pp->n_adapters;
    s->ads = calloc((size_t)s->n + 1, sizeof *s->ads);
    s->a = calloc((size_t)(s->n + 1) * n_slots, sizeof *s->a);
    s->rank = calloc((size_t)(s->n + 1) * n_slots, sizeof *s->rank);
    s->n_rows = calloc((size_t)n_slots, sizeof *s->n_rows);
    if (!s->ads || !s->a || !s->rank || !s->n_rows)
        return el_error(EL_ERR_NOMEM, "%s: out of memory", m->path);
    for (int32_t j = 0; j < s->n; j++) {
        el_status st = el_adapter_load_exact(m, pp->adapters[j], &s->ads[j]);
        if (st) return st;
        for (int32_t i = 0; i < n_slots; i++) {
            const el_lora_pair *p = &s->ads[j]->table[i];
            if (!p->a.n_out) continue;
            size_t na = (size_t)(p->a.n_in * p->a.n_out), nb = (size_t)(p->b.n_out * p->a.n_out);
            float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
            s->a[j * n_slots + i] = a;
            if (!a || !b) {
                free(b);
                return el_error(EL_ERR_NOMEM, "%s: out of memory", pp->adapters[j]);
            }
            el_weight_floats(&p->a, a);
            st = el_lora_b_floats(p, b);
            el_profile_slot *ps = &pf->slots[i];
            ps->a_scale = fmaxf(ps->a_scale, amax(a, na) / 127.0f);
            ps->b_scale = fmaxf(ps->b_scale, amax(b, nb) / 127.0f);
            free(b);
            if (st) return st;
            s->rank[j * n_slots + i] = p->a.n_out;
            s->n_rows[i] += rows_per_run * p->a.n_out;
        }
    }
    return EL_OK;
}

static el_status observer_init(profile_observer *o, const el_model *m, const adapter_set *s,
                               int64_t n_rows, double percentile) {
    int32_t n_slots = m->hp.n_layer * EL_N_LINEAR;
    *o = (profile_observer){.m = m, .n_slots = n_slots};
    o->x = calloc((size_t)n_slots + 1, sizeof *o->x);
    o->t = calloc((size_t)n_slots, sizeof *o->t);
    if (!o->x || !o->t) return el_error(EL_ERR_NOMEM, "%s: out of memory", m->path);
    el_status st = EL_OK;
    for (int32_t i = 0; i <= n_slots && st == EL_OK; i++) {
        const el_weight *w = i == n_slots ? &m->output
                                          : el_layer_weight(&m->layers[i / EL_N_LINEAR],
                                                            (el_linear)(i % EL_N_LINEAR));
        st = el_top_k_init(&o->x[i], (double)n_rows * (double)w->k_in, percentile);
        if (st == EL_OK && i < n_slots && s->n_rows[i] > 0)
            st = el_top_k_init(&o->t[i], (double)s->n_rows[i], percentile);
    }
    return st;
}

static void observer_free(profile_observer *o) {
    for (int32_t i = 0; o->x && i <= o->n_slots; i++) free(o->x[i].v);
    for (int32_t i = 0; o->t && i < o->n_slots; i++) free(o->t[i].v);
    free(o->x);
    free(o->t);
}

/* Progress across the runs: tokens of every run so far. */
typedef struct run_progress {
    const el_profile_params *pp;
    int64_t before, total;
} run_progress;

static bool run_step(void *user, int64_t done, int64_t total) {
    run_progress *rp = user;
    (void)total;
    return !rp->pp->progress || rp->pp->progress(rp->pp->user, rp->before + done, rp->total);
}

static el_status check_params(const el_profile_params *pp) {
    if (pp->n_adapters < 0 || (pp->n_adapters > 0 && !pp->adapters))
        return el_error(EL_ERR_INVALID_ARG, "profile: %d adapters without their paths",
                        pp->n_adapters);
    if (!pp->text_path && (!pp->tokens || pp->n_tokens <= 0))
        return el_error(EL_ERR_INVALID_ARG, "profile: no calibration text");
    return EL_OK;
}

/* The x of every slot (and the head) whose weight has a static scale in the model file: that
 * scale. The model was measured with per-token scales (el_calib_open); they are read now. */
static el_status keep_base_scales(el_model *m, el_profile *pf) {
    el_status st = el_model_load_act_scales(m);
    for (int32_t i = 0; st == EL_OK && i < pf->n_slots; i++) {
        const el_weight *w = el_layer_weight(&m->layers[i / EL_N_LINEAR],
                                             (el_linear)(i % EL_N_LINEAR));
        if (w->act_scale > 0.0f) pf->slots[i].x_scale = w->act_scale;
    }
    if (st == EL_OK && m->output.act_scale > 0.0f) pf->output_x_scale = m->output.act_scale;
    return st;
}

el_profile_params el_profile_default_params(void) {
    return (el_profile_params){.max_tokens = 4096, .percentile = 99.99};
}

el_status el_profile_make(const char *model_path, const el_profile_params *pp,
                          const char *out_path) {
    el_status st = check_params(pp);
    el_calib_run r = {0};
    if (st == EL_OK)
        st = el_calib_open(model_path, pp->text_path, pp->tokens, (size_t)pp->n_tokens,
                           pp->max_tokens, pp->percentile, pp->n_threads, "profile", &r);
    if (st) return st;
    el_model *m = r.m;
    adapter_set set = {0};
    profile_observer o = {0};
    el_profile pf = {.n_slots = m->hp.n_layer * EL_N_LINEAR, .base = el_model_fingerprint(m)};
    int32_t n_runs = pp->n_adapters > 0 ? pp->n_adapters : 1;
    if (!(pf.slots = calloc((size_t)pf.n_slots, sizeof *pf.slots)))
        st = el_error(EL_ERR_NOMEM, "%s: out of memory", model_path);
    if (st == EL_OK) st = load_adapters(m, pp, r.n_rows, &pf, &set);
    if (st == EL_OK) st = observer_init(&o, m, &set, r.n_rows * n_runs, pp->percentile);
    run_progress rp = {.pp = pp, .total = (int64_t)r.tokens.n * n_runs};
    for (int32_t j = 0; j < n_runs && st == EL_OK; j++) {
        el_binding b = {set.n ? set.ads[j] : NULL, 1.0f};
        if ((st = el_context_bind(r.ctx, 0, &b, set.n ? 1 : 0))) break;
        o.a = (const float *const *)set.a + (size_t)j * pf.n_slots;
        o.rank = set.rank + (size_t)j * pf.n_slots;
        r.ctx->fwd.observe = observe;
        r.ctx->fwd.observe_user = &o;
        rp.before = (int64_t)r.tokens.n * j;
        st = el_calib_run_chunks(r.ctx, r.tokens.ids, r.tokens.n, r.n_ctx, run_step, &rp);
    }
    for (int32_t i = 0; st == EL_OK && i < pf.n_slots; i++) {
        el_profile_slot *s = &pf.slots[i];
        s->x_scale = el_top_k_value(&o.x[i]) / 127.0f;
        s->t_scale = el_top_k_value(&o.t[i]) / 127.0f;
        if (!(s->x_scale > 0 && s->t_scale > 0 && s->a_scale > 0 && s->b_scale > 0))
            s->a_scale = s->t_scale = s->b_scale = 0.0f; /* no adapter (or only zeros) here */
    }
    if (st == EL_OK) {
        pf.output_x_scale = el_top_k_value(&o.x[pf.n_slots]) / 127.0f;
        st = keep_base_scales(m, &pf);
    }
    if (st == EL_OK) st = el_profile_write(&pf, out_path);
    free(pf.slots);
    observer_free(&o);
    /* the adapters go before the model they were loaded for */
    adapter_set_free(&set, pf.n_slots);
    el_calib_close(&r);
    return st;
}
