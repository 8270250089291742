/* image_model.c - the public image model (edgelora-tools.h): a loaded UNet with its noise
 * schedule, and image generation by DDIM or DDPM. */
#include <stdlib.h>
#include <string.h>

#include "vision/image_model.h"

#include "core/error.h"
#include "train/loop.h"
#include "train/rng.h"
#include "vision/lora.h"
#include "vision/model_file.h"
#include "vision/sample.h"
#include "vision/tasks.h"

enum { PIX = EL_UNET_SIDE * EL_UNET_SIDE, CHUNK = 16 };

el_status el_image_model_load(const char *path, el_image_model **out) {
    el_image_model *m = calloc(1, sizeof *m);
    if (!m) return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    el_unet_file_info info;
    el_status st = el_unet_load(path, &m->u, &m->p, &info);
    if (st == EL_OK) st = el_schedule_init(&m->sched, m->u.c.n_steps, info.beta_1, info.beta_T);
    if (st != EL_OK) {
        el_image_model_free(m);
        return st;
    }
    *out = m;
    return EL_OK;
}

void el_image_model_free(el_image_model *m) {
    if (!m) return;
    el_unet_free(&m->u);
    free(m->p);
    el_schedule_free(&m->sched);
    free(m);
}

int32_t el_image_model_n_class(const el_image_model *m) { return m->u.c.n_class; }

el_status el_image_adapter_load(const el_image_model *m, const char *path, el_image_adapter **out) {
    el_image_adapter *a = calloc(1, sizeof *a);
    if (!a) return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    el_status st = el_vlora_load(path, &a->l, &m->u);
    if (st == EL_OK && !(a->task = el_vtask_find(a->l.task))) {
        st = el_error(EL_ERR_UNSUPPORTED, "%s: an adapter for the task '%s', which this version "
                      "does not know (it knows %s)", path, a->l.task, el_vtask_names());
        el_vlora_free(&a->l);
    }
    if (st != EL_OK) {
        free(a);
        return st;
    }
    a->m = m;
    *out = a;
    return EL_OK;
}

void el_image_adapter_free(el_image_adapter *a) {
    if (!a) return;
    el_vlora_free(&a->l);
    free(a);
}

const char *el_image_adapter_task(const el_image_adapter *a) { return a->l.task; }

el_image_params el_image_default_params(void) {
    el_image_params p = {
        .cls = -1, .guidance = 1.0f, .n_steps = 20, .sampler = EL_IMAGE_DDIM, .seed = 1};
    return p;
}

/* The UNet as a noise predictor for a chunk of images (condition channels zero). */
typedef struct predictor {
    const el_image_model *m;
    el_unet_bind bind;
    int64_t n;
    float *in; /* [n][3][784] */
    int32_t *t, *cls, *none;
    float guidance;
    float *eps_none; /* [n][784], for guidance */
    el_arena arena;
} predictor;

static el_status predict(void *user, const float *x, int32_t t, float *eps) {
    predictor *pr = user;
    for (int64_t b = 0; b < pr->n; b++) {
        memcpy(pr->in + b * EL_UNET_IN * PIX, x + b * PIX, PIX * sizeof *x);
        pr->t[b] = t;
    }
    el_arena_reset(&pr->arena);
    el_status st = el_unet_forward(&pr->m->u, pr->m->p, &pr->bind, pr->n, pr->in, pr->t, pr->cls,
                                   eps, &pr->arena, NULL);
    if (st != EL_OK || !pr->eps_none) return st;
    el_arena_reset(&pr->arena);
    st = el_unet_forward(&pr->m->u, pr->m->p, &pr->bind, pr->n, pr->in, pr->t, pr->none,
                         pr->eps_none, &pr->arena, NULL);
    for (int64_t i = 0; st == EL_OK && i < pr->n * PIX; i++)
        eps[i] = pr->eps_none[i] + pr->guidance * (eps[i] - pr->eps_none[i]);
    return st;
}

static void normal_noise(void *user, float *z, int64_t n) {
    for (int64_t i = 0; i < n; i++) z[i] = el_rng_normal(user);
}

el_status el_image_generate(el_image_model *m, const el_image_params *p, int32_t n, uint8_t *out) {
    return el_image_generate_observed(m, p, n, out, NULL);
}

el_status el_image_generate_observed(el_image_model *m, const el_image_params *p, int32_t n,
                                     uint8_t *out, float *amax) {
    int32_t nc = m->u.c.n_class;
    if (p->cls < -1 || p->cls >= nc)
        return el_error(EL_ERR_INVALID_ARG,
                        "class %d: the model draws classes 0 to %d (or -1 "
                        "for any)",
                        p->cls, nc - 1);
    if (p->sampler == EL_IMAGE_DDIM && (p->n_steps < 1 || p->n_steps > m->sched.T))
        return el_error(EL_ERR_INVALID_ARG, "DDIM steps %d: 1 to the model's %d timesteps",
                        p->n_steps, m->sched.T);
    if (n <= 0) return el_error(EL_ERR_INVALID_ARG, "asked for %d images", n);
    if (!(p->guidance >= 0.0f && p->guidance <= 100.0f))
        return el_error(EL_ERR_INVALID_ARG, "guidance %g (0 to 100)", p->guidance);
    if (p->adapter && p->adapter->m != m)
        return el_error(EL_ERR_MISMATCH, "image adapter: loaded for another model");
    const el_image_profile *prof = amax ? NULL : p->profile;
    if (prof && prof->m != m)
        return el_error(EL_ERR_MISMATCH, "image profile: made for another model");
    const el_vtask *task = p->adapter ? p->adapter->task : el_vtask_find("inpaint");
    if (p->mask && !p->input)
        return el_error(EL_ERR_INVALID_ARG, "a mask needs an input image");
    if (p->input && !p->mask && task->blanks_mask)
        return el_error(EL_ERR_INVALID_ARG, "%s needs both the image and the mask", task->name);
    el_threadpool *tp;
    el_status st = el_train_threads(p->n_threads, &tp);
    if (st != EL_OK) return st;
    el_rng rng;
    el_rng_seed(&rng, p->seed);
    predictor pr = {.m = m, .bind.lora = p->adapter ? &p->adapter->l : NULL, .bind.amax = amax};
    /* the float products run on OpenBLAS's threads, the integer ones on the pool */
    el_unet_quant q;
    if (prof) {
        q = prof->q;
        q.tp = tp;
        pr.bind.quant = &q;
    } else {
        el_threadpool_free(tp);
        tp = NULL;
    }
    float *x = malloc((size_t)n * PIX * sizeof *x);
    pr.in = calloc((size_t)CHUNK * EL_UNET_IN * PIX, sizeof *pr.in);
    pr.t = malloc(CHUNK * sizeof *pr.t), pr.cls = malloc(CHUNK * sizeof *pr.cls);
    pr.none = malloc(CHUNK * sizeof *pr.none);
    pr.guidance = p->guidance;
    bool guided = p->cls >= 0 && p->guidance != 1.0f;
    if (guided) pr.eps_none = malloc((size_t)CHUNK * PIX * sizeof *pr.eps_none);
    if (!x || !pr.in || !pr.t || !pr.cls || !pr.none || (guided && !pr.eps_none))
        st = el_error(EL_ERR_NOMEM, "image generation: out of memory");
    /* all starting noise first, so that image i starts the same whatever n is */
    for (int64_t i = 0; st == EL_OK && i < (int64_t)n * PIX; i++) x[i] = el_rng_normal(&rng);
    for (int32_t first = 0; first < n && st == EL_OK; first += CHUNK) {
        pr.n = n - first < CHUNK ? n - first : CHUNK;
        for (int64_t b = 0; b < pr.n; b++) pr.cls[b] = p->cls >= 0 ? p->cls : nc, pr.none[b] = nc;
        /* the condition channels, as the task's training made them (vision/tasks.h) */
        for (int64_t b = 0; p->input && b < pr.n && (first == 0 || p->input_per_image); b++) {
            size_t at = p->input_per_image ? (size_t)(first + b) * PIX : 0;
            el_vtask_condition(task, p->input + at, p->mask ? p->mask + at : NULL,
                               pr.in + (b * EL_UNET_IN + 1) * PIX);
        }
        float *xc = x + (size_t)first * PIX;
        if (p->sampler == EL_IMAGE_DDIM)
            st = el_sample_ddim(&m->sched, p->n_steps, pr.n, xc, predict, &pr);
        else
            st = el_sample_ddpm(&m->sched, pr.n, xc, predict, &pr, normal_noise, &rng);
    }
    for (int64_t i = 0; st == EL_OK && i < (int64_t)n * PIX; i++) {
        float v = (x[i] + 1.0f) * 127.5f;
        out[i] = (uint8_t)(v < 0.0f ? 0 : v > 255.0f ? 255 : v + 0.5f);
        size_t at = p->input_per_image ? (size_t)i : (size_t)(i % PIX);
        if (p->mask && !p->mask[at]) out[i] = p->input[at]; /* known pixels kept */
    }
    el_arena_free(&pr.arena);
    el_threadpool_free(tp);
    free(x), free(pr.in), free(pr.t), free(pr.cls), free(pr.none), free(pr.eps_none);
    return st;
}
