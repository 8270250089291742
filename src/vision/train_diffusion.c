/* train_diffusion.c - el_train_diffusion and el_finetune_diffusion: DDPM training of the image
 * model (noise prediction, mean squared error) with AdamW, a moving average of the weights,
 * held-out evaluation, progress, checkpoints and the loss plot; and the same loop training a
 * task adapter on the frozen model (vision/lora.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/outfile.h"
#include "train/loop.h"
#include "train/optim.h"
#include "vision/lora.h"
#include "vision/mnist.h"
#include "vision/quant.h"
#include "vision/schedule.h"
#include "vision/tasks.h"
#include "vision/train_state.h"

enum { PIX = EL_UNET_SIDE * EL_UNET_SIDE };

el_diffusion_train_params el_diffusion_train_default_params(void) {
    el_diffusion_train_params p = {
        .n_heldout = 1000,
        .ch = 32,
        .temb = 128,
        .groups = 8,
        .n_timesteps = 1000,
        .beta_1 = 1e-4f,
        .beta_T = 0.02f,
        .n_steps = 2000,
        .batch = 64,
        .lr = 2e-3f,
        .min_lr_ratio = 0.1f,
        .warmup = 100,
        .grad_clip = 1.0f,
        .ema = 0.999f,
        .p_uncond = 0.2f,
        .eval_every = 200,
        .eval_batches = 4,
        .seed = 1,
    };
    return p;
}

el_diffusion_lora_params el_diffusion_lora_default_params(void) {
    el_diffusion_lora_params p = {.task = "inpaint", .rank = 4, .alpha = 4.0f, .guidance = 3.0f};
    return p;
}

/* Everything a run holds; zero-initialized it frees at any stage. */
typedef struct drun {
    el_mnist data;
    int32_t n_train, n_eval;
    el_schedule sched;
    el_dstate s;
    el_arena arena;
    float *x, *noise, *eps, *deps; /* [B][3][28][28], [B][784] x 3 */
    int32_t *t, *cls;
    /* adapter training: the adapter, the base with it merged, its gradient and moments */
    bool tuning;
    const el_vtask *task;
    el_vlora lora;
    float *merged, *lg, *lm, *lv;
    /* distillation into a profile (QUAD): the teacher (the base in float with the adapter as it
     * started, merged), and the forward's rounding of each convolution's input */
    float *teacher, *fake_step;
    el_unet_bind bind;
    bool guided_target; /* training a guide: the target is the teacher guided this much */
    float guidance;
} drun;

static void drun_free(drun *r) {
    el_mnist_free(&r->data);
    el_schedule_free(&r->sched);
    el_dstate_free(&r->s);
    el_arena_free(&r->arena);
    free(r->x), free(r->noise), free(r->eps), free(r->deps), free(r->t), free(r->cls);
    el_vlora_free(&r->lora);
    free(r->merged), free(r->lg), free(r->lm), free(r->lv);
    free(r->teacher), free(r->fake_step);
}

/* Fills the batch: image idx[b] noised at a timestep from rng, its class or (with probability
 * p_uncond) none, the condition channels zero (base); in adapter training, the task's example
 * (vision/tasks.h: its condition channels, and its target as the image noised), no class. */
static void make_batch(drun *r, el_rng *rng, int32_t B, const int32_t *idx, float p_uncond) {
    int32_t T = r->sched.T, nc = r->s.u.c.n_class;
    memset(r->x, 0, (size_t)B * EL_UNET_IN * PIX * sizeof *r->x);
    for (int32_t b = 0; b < B; b++) {
        const uint8_t *img = r->data.pixels + (size_t)idx[b] * PIX;
        float x0[PIX], target[PIX], *e = r->noise + (size_t)b * PIX;
        float *xb = r->x + (size_t)b * EL_UNET_IN * PIX;
        uint8_t mask[PIX];
        for (int i = 0; i < PIX; i++) x0[i] = (float)img[i] / 127.5f - 1.0f;
        r->t[b] = (int32_t)(el_rng_u64(rng) % (uint64_t)T);
        r->cls[b] = el_rng_uniform(rng) < p_uncond ? nc : r->data.labels[idx[b]];
        for (int i = 0; i < PIX; i++) e[i] = el_rng_normal(rng);
        if (r->task) {
            r->cls[b] = r->task->guided ? r->data.labels[idx[b]] : nc;
            el_vtask_example(r->task, rng, x0, xb + PIX, target, mask);
        }
        el_schedule_noise(&r->sched, r->t[b], r->task ? target : x0, e, xb, PIX);
    }
}

/* In distillation, the target is not the noise but what the teacher predicts for the batch: for
 * a guided task, with classifier-free guidance, eps_none + g (eps_class - eps_none). */
static el_status distill_target(drun *r, int32_t B) {
    if (!r->teacher) return EL_OK;
    el_arena_reset(&r->arena);
    el_status st = el_unet_forward(&r->s.u, r->teacher, NULL, B, r->x, r->t, r->cls, r->noise,
                                   &r->arena, NULL);
    if (st != EL_OK || !r->guided_target) return st;
    int32_t *none = malloc((size_t)B * sizeof *none);
    if (!none) return el_error(EL_ERR_NOMEM, "image adapter training: out of memory");
    for (int32_t b = 0; b < B; b++) none[b] = r->s.u.c.n_class;
    el_arena_reset(&r->arena);
    st = el_unet_forward(&r->s.u, r->teacher, NULL, B, r->x, r->t, none, r->eps, &r->arena, NULL);
    free(none);
    for (size_t i = 0; st == EL_OK && i < (size_t)B * PIX; i++)
        r->noise[i] = r->eps[i] + r->guidance * (r->noise[i] - r->eps[i]);
    return st;
}

/* Mean squared error of eps against the noise; deps (if not NULL) its gradient. */
static float mse(const drun *r, int32_t B, float *deps) {
    double sum = 0.0;
    size_t n = (size_t)B * PIX;
    for (size_t i = 0; i < n; i++) {
        float d = r->eps[i] - r->noise[i];
        sum += (double)d * d;
        if (deps) deps[i] = 2.0f * d / (float)n;
    }
    return (float)(sum / (double)n);
}

/* The held-out loss: the first eval_batches batches of the held-out images, always with the same
 * timesteps, noise and classes, with the current weights. */
static el_status evaluate(drun *r, const el_diffusion_train_params *p, float *out) {
    el_rng rng;
    el_rng_seed(&rng, p->seed ^ 0xe7a1ull);
    int32_t B = p->batch;
    int32_t *ids = malloc((size_t)B * sizeof *ids);
    if (!ids) return el_error(EL_ERR_NOMEM, "image model training: out of memory");
    double sum = 0.0;
    el_status st = EL_OK;
    for (int32_t k = 0; k < p->eval_batches && st == EL_OK; k++) {
        for (int32_t b = 0; b < B; b++) ids[b] = r->n_train + (k * B + b) % r->n_eval;
        make_batch(r, &rng, B, ids, p->p_uncond);
        if ((st = distill_target(r, B)) != EL_OK) break;
        el_arena_reset(&r->arena);
        st = el_unet_forward(&r->s.u, r->tuning ? r->merged : r->s.p, &r->bind, B, r->x, r->t,
                             r->cls, r->eps, &r->arena, NULL);
        sum += mse(r, B, NULL);
    }
    free(ids);
    *out = (float)(sum / p->eval_batches);
    return st;
}

static el_status train_step(drun *r, const el_diffusion_train_params *p, float *loss, float *lr) {
    el_dstate *s = &r->s;
    int32_t B = p->batch;
    int32_t *ids = malloc((size_t)B * sizeof *ids);
    if (!ids) return el_error(EL_ERR_NOMEM, "image model training: out of memory");
    for (int32_t b = 0; b < B; b++) ids[b] = (int32_t)(el_rng_u64(&s->rng) % (uint64_t)r->n_train);
    make_batch(r, &s->rng, B, ids, p->p_uncond);
    free(ids);
    el_status st = distill_target(r, B);
    if (st != EL_OK) return st;
    el_arena_reset(&r->arena);
    el_unet_acts *acts;
    const float *w = r->tuning ? r->merged : s->p;
    st = el_unet_forward(&s->u, w, &r->bind, B, r->x, r->t, r->cls, r->eps, &r->arena, &acts);
    if (st != EL_OK) return st;
    *loss = mse(r, B, r->deps);
    size_t n = s->u.tb.n_floats;
    memset(s->g, 0, n * sizeof *s->g);
    if ((st = el_unet_backward(&s->u, w, s->g, acts, r->deps, &r->arena)) != EL_OK) return st;
    *lr = el_lr_schedule(s->step, p->n_steps, p->warmup, p->lr, p->min_lr_ratio);
    el_adamw o = {0.9f, 0.999f, 1e-8f, 0.0f};
    s->step++;
    if (r->tuning) {
        el_vlora_grad(&r->lora, &s->u, s->g, r->lg);
        el_clip_grad_norm(r->lg, r->lora.tb.n_floats, p->grad_clip);
        el_adamw_step(&o, &r->lora.tb, r->lora.w, r->lg, r->lm, r->lv, s->step, *lr);
        el_vlora_merge(&r->lora, &s->u, s->p, r->merged);
        return EL_OK;
    }
    el_clip_grad_norm(s->g, n, p->grad_clip);
    el_adamw_step(&o, &s->u.tb, s->p, s->g, s->m, s->v, s->step, *lr);
    /* the average warms up, so that early steps do not drag in the random start */
    float d = fminf(p->ema, (1.0f + (float)s->step) / (10.0f + (float)s->step));
    for (size_t i = 0; i < n; i++) s->ema[i] = d * s->ema[i] + (1.0f - d) * s->p[i];
    return EL_OK;
}

static el_status check_params(const el_diffusion_train_params *p, const char *out_path) {
    if (!p->images_path || !p->labels_path)
        return el_error(EL_ERR_INVALID_ARG, "image model training: images and labels needed");
    if (p->n_steps <= 0 || p->batch <= 0 || !(p->lr > 0) || p->warmup < 0 || p->n_heldout <= 0 ||
        p->eval_every < 0 || p->eval_batches <= 0 || p->checkpoint_every < 0 ||
        !(p->ema >= 0 && p->ema < 1) || !(p->p_uncond >= 0 && p->p_uncond <= 1))
        return el_error(EL_ERR_INVALID_ARG,
                        "image model training: steps, batch, lr, held-out "
                        "images and eval batches must be positive, ema and p_uncond in [0, 1)");
    if (p->resume && !p->checkpoint_path)
        return el_error(EL_ERR_INVALID_ARG, "resuming needs a checkpoint path");
    el_status st = el_outfile_check_folder(out_path);
    if (st == EL_OK && p->checkpoint_path) st = el_outfile_check_folder(p->checkpoint_path);
    if (st == EL_OK && p->plot_path) st = el_outfile_check_folder(p->plot_path);
    return st;
}

/* Distillation into a profile: the adapter starts as the teacher's copy; the teacher is the float
 * base with it merged; the student's base is the base with its convolutions on their int8 grids
 * (r->s.p, as the integer form computes them), its inputs rounded at the profile's steps. */
static el_status setup_distill(drun *r, const el_diffusion_lora_params *lp) {
    const el_unet *u = &r->s.u;
    el_status st = el_vlora_load(lp->teacher_path, &r->lora, u);
    if (st != EL_OK) return st;
    r->teacher = malloc(u->tb.n_floats * sizeof *r->teacher);
    r->fake_step = malloc((size_t)u->tb.n * sizeof *r->fake_step);
    if (!r->teacher || !r->fake_step)
        return el_error(EL_ERR_NOMEM, "image adapter distillation: out of memory");
    el_image_precision precision;
    if ((st = el_unet_profile_read(lp->profile_path, u, r->fake_step, &precision)) != EL_OK)
        return st;
    r->bind.fake_levels = el_unet_act_levels(precision);
    for (int32_t i = 0; i < u->tb.n; i++) r->fake_step[i] /= r->bind.fake_levels;
    r->bind.fake_step = r->fake_step;
    el_vlora_merge(&r->lora, u, r->s.p, r->teacher);
    el_unet_fake_quant_weights(u, r->s.p);
    return EL_OK;
}

/* The data, batch buffers and threads; then either a fresh (or resumed) model, or the frozen
 * base with a new adapter (lp non-NULL). */
static el_status setup(drun *r, const el_diffusion_train_params *p,
                       const el_diffusion_lora_params *lp) {
    el_status st = el_mnist_load(p->images_path, p->labels_path, &r->data);
    if (st != EL_OK) return st;
    if (p->n_heldout >= r->data.n)
        return el_error(EL_ERR_INVALID_ARG, "%s: %d images, not more than the %d held out",
                        p->images_path, r->data.n, p->n_heldout);
    r->n_eval = p->n_heldout;
    r->n_train = r->data.n - r->n_eval;
    el_unet_config c = {p->ch, p->temb, p->groups, 10, p->n_timesteps};
    el_unet_file_info info = {p->beta_1, p->beta_T};
    el_unet base;
    float *bp = NULL;
    if (lp) { /* the base's shape and schedule */
        if ((st = el_unet_load(lp->base_path, &base, &bp, &info)) != EL_OK) return st;
        c = base.c;
        el_unet_free(&base);
    }
    st = el_schedule_init(&r->sched, c.n_steps, info.beta_1, info.beta_T);
    if (st == EL_OK) st = el_dstate_init(&r->s, &c, &info, p->seed);
    if (st == EL_OK && lp) {
        memcpy(r->s.p, bp, r->s.u.tb.n_floats * sizeof *bp);
        r->tuning = true;
        if (lp->teacher_path)
            st = setup_distill(r, lp);
        else
            st = el_vlora_init(&r->lora, &r->s.u, lp->rank, lp->alpha, lp->task, p->seed);
        r->task = el_vtask_find(r->lora.task);
        if (st == EL_OK && r->task->guided && !r->teacher) { /* the float base with guidance */
            r->guided_target = true, r->guidance = lp->guidance;
            if (!(r->teacher = malloc(r->s.u.tb.n_floats * sizeof *r->teacher)))
                st = el_error(EL_ERR_NOMEM, "image adapter training: out of memory");
            else
                memcpy(r->teacher, r->s.p, r->s.u.tb.n_floats * sizeof *r->teacher);
        }
    }
    free(bp);
    if (st != EL_OK) return st;
    if (lp) {
        size_t nl = r->lora.tb.n_floats;
        r->merged = malloc(r->s.u.tb.n_floats * sizeof *r->merged);
        r->lg = calloc(nl, sizeof *r->lg), r->lm = calloc(nl, sizeof *r->lm);
        r->lv = calloc(nl, sizeof *r->lv);
        if (!r->merged || !r->lg || !r->lm || !r->lv)
            return el_error(EL_ERR_NOMEM, "image adapter training: out of memory");
        el_vlora_merge(&r->lora, &r->s.u, r->s.p, r->merged);
    }
    size_t B = (size_t)p->batch;
    r->x = malloc(B * EL_UNET_IN * PIX * sizeof *r->x);
    r->noise = malloc(B * PIX * sizeof *r->noise);
    r->eps = malloc(B * PIX * sizeof *r->eps), r->deps = malloc(B * PIX * sizeof *r->deps);
    r->t = malloc(B * sizeof *r->t), r->cls = malloc(B * sizeof *r->cls);
    if (!r->x || !r->noise || !r->eps || !r->deps || !r->t || !r->cls)
        return el_error(EL_ERR_NOMEM, "image model training: out of memory");
    el_threadpool *tp;
    if ((st = el_train_threads(p->n_threads, &tp)) != EL_OK) return st;
    el_threadpool_free(tp); /* only OpenBLAS's threads run here */
    if (!lp && p->resume && p->checkpoint_path) {
        FILE *f = fopen(p->checkpoint_path, "rb");
        if (f) {
            fclose(f);
            st = el_dstate_load(p->checkpoint_path, &r->s);
        }
    }
    return st;
}

static el_status run(const el_diffusion_train_params *p, const el_diffusion_lora_params *lp,
                     const char *out_path) {
    el_status st = check_params(p, out_path);
    if (st != EL_OK) return st;
    drun r = {0};
    if ((st = setup(&r, p, lp)) != EL_OK) {
        drun_free(&r);
        return st;
    }
    double t0 = el_now_seconds();
    int64_t first = r.s.step;
    bool stopped = false;
    while (r.s.step < p->n_steps && st == EL_OK && !stopped) {
        float loss = 0.0f, lr = 0.0f;
        if ((st = train_step(&r, p, &loss, &lr)) != EL_OK) break;
        if ((st = el_history_add(&r.s.hist, false, (float)r.s.step, loss)) != EL_OK) break;
        el_train_progress pr = {
            .step = r.s.step, .n_steps = p->n_steps, .loss = loss, .eval_loss = NAN, .lr = lr};
        if ((p->eval_every && r.s.step % p->eval_every == 0) || r.s.step == p->n_steps) {
            if ((st = evaluate(&r, p, &pr.eval_loss)) != EL_OK) break;
            if ((st = el_history_add(&r.s.hist, true, (float)r.s.step, pr.eval_loss)) != EL_OK)
                break;
        }
        pr.elapsed_s = el_now_seconds() - t0;
        pr.tokens_per_s = (double)(r.s.step - first) * p->batch / fmax(pr.elapsed_s, 1e-9);
        if (p->progress && !p->progress(p->user, &pr)) stopped = true;
        if (!lp && p->checkpoint_path &&
            (stopped || r.s.step == p->n_steps ||
             (p->checkpoint_every && r.s.step % p->checkpoint_every == 0)))
            st = el_dstate_save(p->checkpoint_path, &r.s);
    }
    if (st == EL_OK && p->plot_path)
        st = el_history_plot(&r.s.hist, p->plot_path, "image model (DDPM noise prediction)",
                             "loss (MSE of the noise)");
    if (st == EL_OK && stopped)
        st = el_error(EL_ERR_CANCELLED, "training stopped at step %lld", (long long)r.s.step);
    if (st == EL_OK)
        st = lp ? el_vlora_save(out_path, &r.lora, &r.s.u)
                : el_unet_save(out_path, &r.s.u, r.s.ema, &r.s.sched);
    drun_free(&r);
    return st;
}

el_status el_train_diffusion(const el_diffusion_train_params *p, const char *out_path) {
    return run(p, NULL, out_path);
}

el_status el_finetune_diffusion(const el_diffusion_train_params *p,
                                const el_diffusion_lora_params *lp, const char *out_path) {
    if (!lp || !lp->base_path)
        return el_error(EL_ERR_INVALID_ARG, "image adapter training: no base model given");
    if (!lp->teacher_path != !lp->profile_path)
        return el_error(EL_ERR_INVALID_ARG,
                        "image adapter distillation needs both the adapter and the profile");
    if (!(lp->guidance >= 0.0f && lp->guidance <= 100.0f))
        return el_error(EL_ERR_INVALID_ARG, "image adapter training: guidance %g (0 to 100)",
                        lp->guidance);
    if (!lp->teacher_path && !el_vtask_find(lp->task))
        return el_error(EL_ERR_INVALID_ARG,
                        "image adapter training: unknown task '%s' (this version trains: %s)",
                        lp->task ? lp->task : "", el_vtask_names());
    if (p->checkpoint_path || p->resume)
        return el_error(EL_ERR_UNSUPPORTED, "image adapter training: no checkpoints yet");
    return run(p, lp, out_path);
}
