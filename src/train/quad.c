/* quad.c - QUAD: one quantization profile for every adapter of a base (edgelora-tools.h,
 * el_quad; docs/training.md). Each adapter gets a profile of its own from its training text;
 * its sensitivity is how far it moves as int8 under that profile, KL(float || int8) over its
 * held-out response tokens (a loss against float that is 0 without damage, where the
 * cross-entropy's change can have either sign on a small model); the most
 * sensitive adapter's profile becomes the one all share (the adapter that loses most keeps the
 * grids it needs), and every other adapter is tuned by distillation into it: the teacher is the
 * float base with the float adapter, the student the base under the shared profile with the
 * adapter's terms on its int8 grids (fake-quantized, straight-through), the loss KL(teacher ||
 * student) over the response tokens. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "model/model.h"
#include "model/profile.h"
#include "runtime/adapter.h"
#include "train/data.h"
#include "train/export.h"
#include "train/loop.h"

el_quad_params el_quad_default_params(void) {
    el_quad_params p = {.calib_tokens = 4096, .percentile = 99.99, .train = el_train_default_params()};
    p.train.n_steps = 100;
    p.train.lr = 1e-4f;
    p.train.weight_decay = 0.0f;
    p.train.n_ctx = 128;
    p.train.eval_every = 25;
    return p;
}

/* One adapter's files and data. */
typedef struct quad_adapter {
    const char *path;
    char train_path[4096], eval_path[4096], own_profile[4096], out_path[4096], plot_path[4096];
    el_tdata train, eval;
    el_adapter *ad;  /* loaded on the float base: its float values */
} quad_adapter;

/* What a run holds: the float base and each adapter's data. */
typedef struct quad_run {
    const char *base_path;
    const el_quad_params *p;
    el_model *base;
    quad_adapter *a;
    el_threadpool *tp;
    int32_t n_ctx;
} quad_run;

static el_status stage(const quad_run *r, const char *what, int32_t i) {
    if (r->p->stage && !r->p->stage(r->p->user, what, i, r->p->n_adapters))
        return el_error(EL_ERR_CANCELLED, "quad: stopped by its progress callback at %s", what);
    return EL_OK;
}

/* The name of an adapter file: without folders and ".gguf". */
static el_status adapter_name(const char *path, char *name, size_t cap) {
    const char *s = strrchr(path, '/');
    s = s ? s + 1 : path;
    size_t n = strlen(s);
    if (n > 5 && !strcmp(s + n - 5, ".gguf")) n -= 5;
    if (n == 0 || n >= cap)
        return el_error(EL_ERR_INVALID_ARG, "%s: an adapter's name (its file name without "
                        ".gguf) must have 1 to %zu characters", path, cap - 1);
    memcpy(name, s, n);
    name[n] = '\0';
    return EL_OK;
}

/* dst = the printf of fmt, or an error if it does not fit. */
static el_status path_of(char *dst, size_t cap, const char *fmt, const char *dir,
                         const char *name) {
    if ((size_t)snprintf(dst, cap, fmt, dir, name) >= cap)
        return el_error(EL_ERR_INVALID_ARG, "quad: the path for %s in %s is too long", name, dir);
    return EL_OK;
}

static el_status file_exists(const char *path, const char *what) {
    struct stat sb;
    if (stat(path, &sb) != 0)
        return el_error(EL_ERR_IO, "%s: %s (QUAD reads <name>.train.jsonl and "
                        "<name>.eval.jsonl for each adapter): %s", path, what, strerror(errno));
    return EL_OK;
}

static el_status open_adapters(quad_run *r, const char *out_dir, el_quad_adapter *res) {
    const el_quad_params *p = r->p;
    el_status st = EL_OK;
    for (int32_t i = 0; i < p->n_adapters && st == EL_OK; i++) {
        quad_adapter *a = &r->a[i];
        char *name = res[i].name;
        if ((st = adapter_name(p->adapters[i], name, sizeof res[i].name)) != EL_OK) return st;
        for (int32_t j = 0; j < i; j++)
            if (!strcmp(res[j].name, name))
                return el_error(EL_ERR_INVALID_ARG, "quad: two adapters named %s", name);
        a->path = p->adapters[i];
        if ((st = path_of(a->train_path, sizeof a->train_path, "%s/%s.train.jsonl", p->data_dir,
                          name)) != EL_OK ||
            (st = path_of(a->eval_path, sizeof a->eval_path, "%s/%s.eval.jsonl", p->data_dir,
                          name)) != EL_OK ||
            (st = path_of(a->own_profile, sizeof a->own_profile, "%s/%s.own.profile.gguf",
                          out_dir, name)) != EL_OK ||
            (st = path_of(a->out_path, sizeof a->out_path, "%s/%s.gguf", out_dir, name)) !=
                EL_OK ||
            (st = path_of(a->plot_path, sizeof a->plot_path, "%s/%s.loss.svg", out_dir, name)) !=
                EL_OK)
            return st;
        const char *tr[1] = {a->train_path}, *ev[1] = {a->eval_path};
        if ((st = file_exists(a->train_path, "training examples")) == EL_OK &&
            (st = file_exists(a->eval_path, "held-out examples")) == EL_OK &&
            (st = el_adapter_load_exact(r->base, a->path, &a->ad)) == EL_OK &&
            (st = el_examples_load(&a->train, tr, 1, r->base)) == EL_OK)
            st = el_examples_load(&a->eval, ev, 1, r->base);
    }
    return st;
}

/* The model at base_path under profile (its profile in ->profile). */
static el_status under(const quad_run *r, const char *profile, el_model **m) {
    el_model_params mp = el_model_default_params();
    mp.profile_path = profile;
    return el_model_load(r->base_path, &mp, m);
}

/* The training model of the base (float; under_profile: loaded under that profile, with the
 * adapter's terms on its int8 grids) with adapter a's float values. */
static el_status student(const quad_run *r, const quad_adapter *a, const char *under_profile,
                         el_tmodel *tm) {
    el_model *m = r->base;
    el_status st = under_profile ? under(r, under_profile, &m) : EL_OK;
    if (st == EL_OK && (st = el_tmodel_from_model(tm, m, r->n_ctx)) == EL_OK &&
        (st = el_tmodel_add_adapter(tm, a->ad, a->path)) == EL_OK && under_profile)
        st = el_tmodel_qat_from_model(tm, m);
    if (m != r->base) el_model_free(m);
    return st;
}

/* The mean over the held-out examples' response tokens of the cross-entropy (teacher NULL) or of
 * KL(teacher || tm), every example once. */
static el_status heldout(const quad_run *r, const el_tmodel *tm, const el_tmodel *teacher,
                         const el_tdata *data, double *out) {
    enum { BATCH = 8 };
    int32_t T = r->n_ctx;
    el_loader l = {0};
    el_tacts *a = NULL, *ta = NULL;
    size_t n = (size_t)BATCH * T;
    int32_t *tok = malloc(n * sizeof *tok), *tgt = malloc(n * sizeof *tgt);
    float *mask = malloc(n * sizeof *mask);
    float *tl = teacher ? malloc(n * (size_t)tm->c.n_vocab * sizeof *tl) : NULL;
    el_status st = tok && tgt && mask && (!teacher || tl)
                       ? EL_OK
                       : el_error(EL_ERR_NOMEM, "quad: out of memory for a held-out batch");
    if (st == EL_OK) st = el_loader_init(&l, data, T, 1, false, "held-out examples");
    if (st == EL_OK) st = el_tacts_create(tm, BATCH, T, &a);
    if (st == EL_OK && teacher) st = el_tacts_create(teacher, BATCH, T, &ta);
    double sum = 0, weight = 0;
    for (int64_t done = 0; st == EL_OK && done < l.n_items; done += BATCH) {
        el_loader_next(&l, BATCH, tok, tgt, mask);
        double w = 0;
        for (int32_t b = 0; b < BATCH; b++)
            for (int32_t t = 0; t < T; t++) {
                if (done + b >= l.n_items) mask[b * T + t] = 0.0f; /* the loader wrapped */
                w += mask[b * T + t];
            }
        if (teacher) {
            el_tmodel_forward(teacher, ta, r->tp, tok, NULL, NULL, tl);
            el_tacts_set_teacher(a, tl);
        }
        if (w > 0) sum += w * el_tmodel_forward(tm, a, r->tp, tok, tgt, mask, NULL);
        weight += w;
    }
    *out = weight > 0 ? sum / weight : 0.0;
    el_tacts_free(a);
    el_tacts_free(ta);
    el_loader_free(&l);
    free(tok);
    free(tgt);
    free(mask);
    free(tl);
    return st;
}

/* Up to max of the tokens of t's examples into ids[max] (returns how many): examples evenly
 * spaced over the whole set, as many as max tokens hold on average (the last one cut at max).
 * The examples come grouped (by language, for the tasks of every language), and the first max
 * tokens would see only the first group. */
static int64_t spread_tokens(const el_tdata *t, int64_t max, int32_t *ids) {
    if (t->n == 0 || t->n_items == 0) return 0;
    int64_t want = (int64_t)ceil((double)max * (double)t->n_items / (double)t->n), n = 0;
    if (want > t->n_items) want = t->n_items;
    for (int64_t k = 0; k < want && n < max; k++) {
        int64_t i = (int64_t)((double)k * (double)t->n_items / (double)want);
        int64_t end = i + 1 < t->n_items ? t->starts[i + 1] : (int64_t)t->n;
        for (int64_t j = t->starts[i]; j < end && n < max; j++) ids[n++] = t->ids[j];
    }
    return n;
}

/* Adapter a's own profile, from the tokens of its training examples. */
static el_status own_profile(const quad_run *r, const quad_adapter *a) {
    int64_t max = r->p->calib_tokens;
    if (max < 1)
        return el_error(EL_ERR_INVALID_ARG, "quad: %lld calibration tokens, need at least 1",
                        (long long)max);
    int32_t *ids = malloc((size_t)max * sizeof *ids);
    if (!ids) return el_error(EL_ERR_NOMEM, "quad: out of memory for calibration tokens");
    el_profile_params pp = el_profile_default_params();
    pp.adapters = &a->path;
    pp.n_adapters = 1;
    pp.tokens = ids;
    pp.n_tokens = spread_tokens(&a->train, max, ids);
    pp.max_tokens = max;
    pp.percentile = r->p->percentile;
    pp.n_threads = r->p->train.n_threads;
    el_status st = el_profile_make(r->base_path, &pp, a->own_profile);
    free(ids);
    return st;
}

/* The shared profile: the chosen adapter's own, with the slots whose adapter scales it leaves
 * unset (layers its adapter does not change; every slot has its x scale) taken from the others'
 * own profiles, the widest grids there. */
static el_status shared_profile(const quad_run *r, int32_t chosen, const char *out_path,
                                uint64_t *id) {
    el_model *mc;
    el_status st = under(r, r->a[chosen].own_profile, &mc);
    if (st != EL_OK) return st;
    el_profile *p = mc->profile;
    bool *unset = calloc((size_t)p->n_slots, sizeof *unset);
    if (!unset) st = el_error(EL_ERR_NOMEM, "quad: out of memory");
    for (int32_t s = 0; st == EL_OK && s < p->n_slots; s++) unset[s] = !(p->slots[s].a_scale > 0);
    for (int32_t i = 0; st == EL_OK && i < r->p->n_adapters; i++) {
        el_model *mo;
        if (i == chosen || (st = under(r, r->a[i].own_profile, &mo)) != EL_OK) continue;
        for (int32_t s = 0; s < p->n_slots; s++) {
            const el_profile_slot *o = &mo->profile->slots[s];
            el_profile_slot *d = &p->slots[s];
            if (!unset[s] || !(o->a_scale > 0.0f)) continue;
            d->x_scale = fmaxf(d->x_scale, o->x_scale);
            d->a_scale = fmaxf(d->a_scale, o->a_scale);
            d->t_scale = fmaxf(d->t_scale, o->t_scale);
            d->b_scale = fmaxf(d->b_scale, o->b_scale);
        }
        el_model_free(mo);
    }
    if (st == EL_OK) {
        p->id = el_profile_id(p);
        *id = p->id;
        st = el_profile_write(p, out_path);
    }
    free(unset);
    el_model_free(mc);
    return st;
}

static el_status copy_of(const float *v, size_t n, float **out) {
    if (!(*out = malloc(n * sizeof **out))) return el_error(EL_ERR_NOMEM, "quad: out of memory");
    memcpy(*out, v, n * sizeof **out);
    return EL_OK;
}

/* Adapter a as it came under the shared profile (res->shared_loss, res->kl_before), then tuned
 * by distillation into it and written, if the tuning brought it closer to its float self on the
 * held-out examples; else written as it came. res gets the figures after. */
static el_status distill(const quad_run *r, int32_t i, const char *profile, uint64_t id,
                         el_quad_adapter *res) {
    quad_adapter *a = &r->a[i];
    el_tmodel teacher = {0}, st_m = {0};
    el_trainer tr = {0};
    el_loader lt = {0}, le = {0};
    el_train_params tp = r->p->train;
    tp.plot_path = a->plot_path;
    tp.checkpoint_path = NULL;
    el_trainer_hp hp = el_trainer_hp_from(&tp, r->n_ctx);
    bool stop = false;
    float *keep = NULL; /* the adapter as it came */
    el_status st;
    if ((st = student(r, a, NULL, &teacher)) == EL_OK &&
        (st = student(r, a, profile, &st_m)) == EL_OK &&
        (st = heldout(r, &st_m, NULL, &a->eval, &res->shared_loss)) == EL_OK &&
        (st = heldout(r, &st_m, &teacher, &a->eval, &res->kl_before)) == EL_OK &&
        (st = stage(r, "distillation", i)) == EL_OK &&
        (st = el_loader_init(&lt, &a->train, r->n_ctx, tp.seed, true, "training examples")) ==
            EL_OK &&
        (st = el_loader_init(&le, &a->eval, r->n_ctx, tp.seed, false, "held-out examples")) ==
            EL_OK &&
        (st = el_trainer_init(&tr, &st_m, EL_TRAIN_LORA, &hp, r->tp)) == EL_OK &&
        (st = el_trainer_set_teacher(&tr, &teacher)) == EL_OK &&
        (st = copy_of(st_m.lw, st_m.lora.n_floats, &keep)) == EL_OK &&
        (st = el_train_loop(&tp, &tr, &lt, &le, "QUAD distillation: KL(float || int8)", NULL,
                            &stop)) == EL_OK) {
        if (stop)
            st = el_error(EL_ERR_CANCELLED, "quad: stopped by its progress callback while "
                          "tuning %s; no adapter written for it", a->path);
        if (st == EL_OK) st = heldout(r, &st_m, &teacher, &a->eval, &res->kl_after);
        if (st == EL_OK) st = heldout(r, &st_m, NULL, &a->eval, &res->tuned_loss);
        res->tuned = res->kl_after < res->kl_before;
        if (st == EL_OK && !res->tuned) { /* no closer: as it came */
            memcpy(st_m.lw, keep, st_m.lora.n_floats * sizeof *keep);
            res->kl_after = res->kl_before;
            res->tuned_loss = res->shared_loss;
        }
        if (st == EL_OK)
            st = el_export_lora(&st_m, r->base->arch, id, r->base->uniql_basis, a->out_path);
    }
    free(keep);
    el_trainer_free(&tr);
    el_loader_free(&lt);
    el_loader_free(&le);
    el_tmodel_free(&st_m);
    el_tmodel_free(&teacher);
    return st;
}

/* Adapter a as int8 under a profile: its cross-entropy, its distance KL(float || int8) and
 * (float_loss not NULL) the float adapter's cross-entropy; with out (not NULL) written for the
 * profile as it is. */
static el_status losses(const quad_run *r, const quad_adapter *a, const char *profile,
                        double *float_loss, double *int8_loss, double *kl, const char *out,
                        uint64_t id) {
    el_tmodel f = {0}, q = {0};
    el_status st;
    if ((st = student(r, a, NULL, &f)) == EL_OK && float_loss)
        st = heldout(r, &f, NULL, &a->eval, float_loss);
    if (st == EL_OK && (st = student(r, a, profile, &q)) == EL_OK &&
        (st = heldout(r, &q, NULL, &a->eval, int8_loss)) == EL_OK)
        st = heldout(r, &q, &f, &a->eval, kl);
    if (st == EL_OK && out)
        st = el_export_lora(&q, r->base->arch, id, r->base->uniql_basis, out);
    el_tmodel_free(&f);
    el_tmodel_free(&q);
    return st;
}

el_status el_quad(const char *base_path, const el_quad_params *p, const char *out_dir,
                  el_quad_adapter *results) {
    if (!p || p->n_adapters < 1 || !p->adapters || !p->data_dir || !results)
        return el_error(EL_ERR_INVALID_ARG, "quad: needs adapters, a data folder and room for "
                        "the results");
    if (p->n_adapters > 64)
        return el_error(EL_ERR_INVALID_ARG, "quad: %d adapters, at most 64", p->n_adapters);
    if (mkdir(out_dir, 0777) != 0 && errno != EEXIST)
        return el_error(EL_ERR_IO, "%s: cannot create the folder: %s", out_dir, strerror(errno));
    memset(results, 0, (size_t)p->n_adapters * sizeof *results);
    quad_run r = {.base_path = base_path, .p = p};
    r.a = calloc((size_t)p->n_adapters, sizeof *r.a);
    if (!r.a) return el_error(EL_ERR_NOMEM, "quad: out of memory");
    el_status st = el_model_load(base_path, NULL, &r.base);
    if (st == EL_OK) {
        r.n_ctx = p->train.n_ctx > 0 ? p->train.n_ctx : r.base->hp.n_ctx_train;
        st = el_train_threads(p->train.n_threads, &r.tp);
    }
    if (st == EL_OK) st = open_adapters(&r, out_dir, results);
    /* (a) own profiles, (b) sensitivities */
    for (int32_t i = 0; i < p->n_adapters && st == EL_OK; i++) {
        if ((st = stage(&r, "own profile", i)) == EL_OK && (st = own_profile(&r, &r.a[i])) == EL_OK &&
            (st = stage(&r, "sensitivity", i)) == EL_OK)
            st = losses(&r, &r.a[i], r.a[i].own_profile, &results[i].float_loss,
                        &results[i].own_loss, &results[i].sensitivity, NULL, 0);
    }
    /* (c) the most sensitive adapter's profile is shared */
    int32_t chosen = 0;
    for (int32_t i = 1; i < p->n_adapters; i++)
        if (results[i].sensitivity > results[chosen].sensitivity) chosen = i;
    char shared[4096];
    snprintf(shared, sizeof shared, "%s/profile.gguf", out_dir);
    uint64_t id = 0;
    if (st == EL_OK) {
        results[chosen].sets_profile = true;
        st = shared_profile(&r, chosen, shared, &id);
    }
    /* (d) every adapter tuned into it, (e) written for it */
    for (int32_t i = 0; i < p->n_adapters && st == EL_OK; i++) {
        if ((st = stage(&r, "shared profile", i)) != EL_OK) break;
        if (i != chosen) {
            st = distill(&r, i, shared, id, &results[i]);
            continue;
        }
        /* the chosen one keeps its own grids: written as it is, for the profile */
        st = losses(&r, &r.a[i], shared, NULL, &results[i].shared_loss, &results[i].kl_before,
                    r.a[i].out_path, id);
        results[i].tuned_loss = results[i].shared_loss;
        results[i].kl_after = results[i].kl_before;
    }
    for (int32_t i = 0; i < p->n_adapters; i++) {
        el_tdata_free(&r.a[i].train);
        el_tdata_free(&r.a[i].eval);
        el_adapter_free(r.a[i].ad);
    }
    free(r.a);
    el_threadpool_free(r.tp);
    el_model_free(r.base);
    return st;
}
