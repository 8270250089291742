/* finetune.c - masked LoRA fine-tuning of a sorted model (see finetune.h). */
#include "compress/finetune.h"

#include <cblas.h>
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "train/data.h"
#include "train/export.h"
#include "train/loop.h"
#include "train/rng.h"
#include "train/trainer.h"

/* The training model's linear i of layer il is the engine's el_linear i: both in the order
 * q, k, v, o, gate, up, down. */
static float *tlinear(const el_tmodel *t, float *block, int il, int i) {
    return el_tm_layer(t, block, il, (el_tkind)(EL_TK_FIRST_LINEAR + i));
}

static const char *finetune_text(const el_compress_params *p) {
    return p->finetune_path ? p->finetune_path : p->calib_path;
}

/* W += s B A of every adapter term, into the sorted weights. */
static void merge(const el_tmodel *t, el_flayer *w) {
    float s = t->alpha / (float)t->rank;
    for (int il = 0; il < t->c.n_layer; il++)
        for (int i = 0; i < EL_TN_LINEAR; i++) {
            int32_t li = t->lora_idx[il * EL_TN_LINEAR + i];
            if (li < 0) continue;
            const el_ttensor *a = &t->lora.t[li], *b = &t->lora.t[li + 1];
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)b->n_out, (int)a->n_in,
                        t->rank, s, t->lw + b->offset, t->rank, t->lw + a->offset,
                        (int)a->n_in, 1.0f, w[il].w[i], (int)a->n_in);
        }
}

static el_status plot(const char *path, const float *loss, int64_t n) {
    float *x = malloc((size_t)n * sizeof *x);
    if (!x) return el_error(EL_ERR_NOMEM, "out of memory for the plot");
    for (int64_t i = 0; i < n; i++) x[i] = (float)(i + 1);
    el_series s = {"train (a random rate each step)", "#1f77b4", x, loss, (size_t)n};
    el_status st = el_svg_plot(path, "UniQL masked LoRA fine-tuning", "step",
                               "KL(original || pruned) (nats/token)", &s, 1);
    free(x);
    return st;
}

typedef struct ft_run {
    el_tmodel student, teacher;
    el_tdata data;
    el_loader loader;
    el_trainer tr;
    el_threadpool *tp;
    int32_t *tok, *tgt;
    float *mask, *loss;
} ft_run;

static void ft_free(ft_run *r) {
    el_trainer_free(&r->tr);
    el_threadpool_free(r->tp);
    el_loader_free(&r->loader);
    el_tdata_free(&r->data);
    el_tmodel_free(&r->student);
    el_tmodel_free(&r->teacher);
    free(r->tok);
    free(r->tgt);
    free(r->mask);
    free(r->loss);
}

/* The student: the original model's norms and embeddings with the sorted weights, the pair
 * index, and the adapter on every linear. */
static el_status make_student(ft_run *r, const el_model *m, const el_flayer *w,
                              const el_uniql_plan *plan, const el_compress_params *p) {
    el_tmodel *t = &r->student;
    el_status st = el_tmodel_from_model(t, m, p->finetune_ctx);
    for (int il = 0; st == EL_OK && il < t->c.n_layer; il++)
        for (int i = 0; i < EL_TN_LINEAR; i++) {
            const el_weight *s = el_layer_weight(&m->layers[il], (el_linear)i);
            memcpy(tlinear(t, t->w, il, i), w[il].w[i],
                   (size_t)(s->n_out * s->n_in) * sizeof(float));
        }
    if (st == EL_OK && plan->rope_pairs) st = el_tmodel_set_rope_pairs(t, plan->rope_pairs);
    uint32_t all = (1u << EL_TN_LINEAR) - 1;
    /* alpha = rank: the adapter's scale 1, whatever the rank */
    if (st == EL_OK)
        st = el_tmodel_add_lora(t, p->finetune_rank, (float)p->finetune_rank, all, p->seed);
    return st;
}

el_status el_masked_finetune_check(const el_compress_params *p) {
    if (p->finetune_rank <= 0 || p->finetune_ctx < 2 || p->finetune_batch <= 0 ||
        !(p->finetune_lr > 0 && p->finetune_lr < 1))
        return el_error(EL_ERR_INVALID_ARG, "compress --finetune: rank %d, context %d, batch %d "
                        "and learning rate %g must be positive (the rate below 1)",
                        p->finetune_rank, p->finetune_ctx, p->finetune_batch,
                        (double)p->finetune_lr);
    const char *text = finetune_text(p);
    FILE *f = fopen(text, "rb");
    if (!f)
        return el_error(EL_ERR_IO, "%s: cannot open the fine-tuning text: %s", text,
                        strerror(errno));
    fclose(f);
    return EL_OK;
}

el_status el_masked_finetune(const el_model *m, el_flayer *w, const el_uniql_plan *plan,
                             uint64_t basis, const el_compress_params *p) {
    ft_run r = {0};
    const char *text = finetune_text(p);
    int64_t steps = p->finetune_steps, L = m->hp.n_layer;
    el_status st = make_student(&r, m, w, plan, p);
    if (st == EL_OK) st = el_tmodel_from_model(&r.teacher, m, p->finetune_ctx);
    if (st == EL_OK)
        st = el_tdata_load_stream(&r.data, &text, 1, m, r.student.c.n_vocab);
    if (st == EL_OK)
        st = el_loader_init(&r.loader, &r.data, p->finetune_ctx, p->seed, true,
                            "fine-tuning text");
    if (st == EL_OK) st = el_train_threads(p->n_threads, &r.tp);
    el_trainer_hp hp = {.B = p->finetune_batch, .T = p->finetune_ctx, .accum = 1,
                        .n_steps = steps, .warmup = steps / 10, .lr = p->finetune_lr,
                        .min_ratio = 0.1f, .clip = 1.0f,
                        .adamw = {0.9f, 0.999f, 1e-8f, 0.0f}};
    if (st == EL_OK) st = el_trainer_init(&r.tr, &r.student, EL_TRAIN_LORA, &hp, r.tp);
    if (st == EL_OK) st = el_trainer_set_teacher(&r.tr, &r.teacher);
    size_t n = (size_t)hp.B * hp.T;
    r.tok = malloc(n * sizeof *r.tok);
    r.tgt = malloc(n * sizeof *r.tgt);
    r.mask = malloc(n * sizeof *r.mask);
    r.loss = malloc((size_t)steps * sizeof *r.loss);
    if (st == EL_OK && (!r.tok || !r.tgt || !r.mask || !r.loss))
        st = el_error(EL_ERR_NOMEM, "compress --finetune: out of memory");
    el_rng rng;
    el_rng_seed(&rng, p->seed ^ 0x5eedull);
    double t0 = el_now_seconds();
    for (int64_t s = 0; st == EL_OK && s < steps; s++) {
        /* one rate of the table for the whole step, rate 0 among them: the unpruned model
         * must stay the original */
        int64_t ri = (int64_t)(el_rng_u64(&rng) % (uint64_t)plan->n_rates);
        el_tprune kept = {plan->ff_kept + ri * L, plan->qk_kept + ri * L,
                          plan->vo_kept + ri * L};
        el_tacts_set_prune(r.tr.acts, &kept);
        el_loader_next(&r.loader, hp.B, r.tok, r.tgt, r.mask);
        r.loss[s] = el_trainer_step(&r.tr, r.tok, r.tgt, r.mask);
        el_compress_progress pr = {.stage = "finetune", .done = s + 1, .total = steps,
                                   .stage_s = el_now_seconds() - t0, .rate = plan->rates[ri],
                                   .loss = r.loss[s]};
        if (!isfinite(r.loss[s]))
            st = el_error(EL_ERR_INVALID_ARG, "compress --finetune: the loss is %g at step %lld "
                          "(lower the learning rate %g)", (double)r.loss[s], (long long)s + 1,
                          (double)p->finetune_lr);
        else if (p->progress && !p->progress(p->user, &pr))
            st = el_error(EL_ERR_CANCELLED, "compress cancelled");
    }
    if (st == EL_OK && p->finetune_plot) st = plot(p->finetune_plot, r.loss, steps);
    if (st == EL_OK && p->finetune_adapter_path)
        st = el_export_lora(&r.student, m->arch, 0, basis, p->finetune_adapter_path);
    if (st == EL_OK) merge(&r.student, w);
    ft_free(&r);
    return st;
}
