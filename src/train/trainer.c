/* trainer.c - the optimizer step (see trainer.h). */
#include "train/trainer.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"

el_status el_trainer_init(el_trainer *t, el_tmodel *m, el_train_block what,
                          const el_trainer_hp *hp, el_threadpool *tp) {
    memset(t, 0, sizeof *t);
    if (hp->B <= 0 || hp->T <= 0 || hp->accum <= 0 || hp->n_steps <= 0 || hp->warmup < 0)
        return el_error(EL_ERR_INVALID_ARG, "batch %d x %d, accumulation %d, %lld steps, warmup "
                        "%lld: all must be positive", hp->B, hp->T, hp->accum,
                        (long long)hp->n_steps, (long long)hp->warmup);
    if (what == EL_TRAIN_LORA && !m->rank)
        return el_error(EL_ERR_INVALID_ARG, "LoRA training needs a model with a LoRA block");
    if (what == EL_TRAIN_FORECAST && !m->fw)
        return el_error(EL_ERR_INVALID_ARG, "forecast training needs a model with forecast slots");
    t->m = m;
    t->what = what;
    t->tb = what == EL_TRAIN_LORA ? &m->lora : what == EL_TRAIN_FORECAST ? &m->forecast : &m->base;
    t->p = what == EL_TRAIN_LORA ? m->lw : what == EL_TRAIN_FORECAST ? m->fw : m->w;
    t->n = t->tb->n_floats;
    t->hp = *hp;
    t->tp = tp;
    t->g = calloc(t->n, sizeof(float));
    t->mom = calloc(t->n, sizeof(float));
    t->vel = calloc(t->n, sizeof(float));
    if (!t->g || !t->mom || !t->vel) {
        el_trainer_free(t);
        return el_error(EL_ERR_NOMEM, "out of memory for the optimizer state of %zu parameters",
                        t->n);
    }
    el_status st = el_tacts_create(m, hp->B, hp->T, &t->acts);
    if (st)
        el_trainer_free(t);
    return st;
}

el_status el_trainer_set_teacher(el_trainer *t, const el_tmodel *teacher) {
    if (teacher->c.n_vocab != t->m->c.n_vocab)
        return el_error(EL_ERR_MISMATCH, "a teacher of %d tokens for a model of %d",
                        teacher->c.n_vocab, t->m->c.n_vocab);
    if (t->teacher)
        return el_error(EL_ERR_INVALID_ARG, "the trainer has a teacher already");
    el_status st = el_tacts_create(teacher, t->hp.B, t->hp.T, &t->teacher_acts);
    if (st != EL_OK) return st;
    t->teacher_logits = malloc((size_t)t->hp.B * t->hp.T * teacher->c.n_vocab * sizeof(float));
    if (!t->teacher_logits)
        return el_error(EL_ERR_NOMEM, "out of memory for the teacher's logits");
    t->teacher = teacher;
    t->teacher_hash = el_fnv1a(el_fnv_offset, teacher->w, teacher->base.n_floats * sizeof(float));
    if (teacher->rank)
        t->teacher_hash = el_fnv1a(t->teacher_hash, teacher->lw,
                                   teacher->lora.n_floats * sizeof(float));
    el_tacts_set_teacher(t->acts, t->teacher_logits);
    return EL_OK;
}

/* The teacher's logits for a micro-batch, where the next forward of t->acts reads them. */
static void teach(el_trainer *t, const int32_t *tokens) {
    if (t->teacher)
        el_tmodel_forward(t->teacher, t->teacher_acts, t->tp, tokens, NULL, NULL,
                          t->teacher_logits);
}

void el_trainer_free(el_trainer *t) {
    el_tacts_free(t->teacher_acts);
    free(t->teacher_logits);
    free(t->g);
    free(t->mom);
    free(t->vel);
    el_tacts_free(t->acts);
    memset(t, 0, sizeof *t);
}

float el_trainer_step(el_trainer *t, const int32_t *tokens, const int32_t *targets,
                      const float *mask) {
    size_t mb = (size_t)t->hp.B * t->hp.T;
    float scale = 1.0f / (float)t->hp.accum, total = 0.0f;
    memset(t->g, 0, t->n * sizeof(float));
    el_tacts_set_training(t->acts, true);
    for (int32_t a = 0; a < t->hp.accum; a++) {
        teach(t, tokens + a * mb);
        float loss = el_tmodel_forward(t->m, t->acts, t->tp, tokens + a * mb, targets + a * mb,
                                       mask ? mask + a * mb : NULL, NULL);
        el_tmodel_backward(t->m, t->acts, t->tp, t->what == EL_TRAIN_BASE ? t->g : NULL,
                           t->what == EL_TRAIN_LORA ? t->g : NULL,
                           t->what == EL_TRAIN_FORECAST ? t->g : NULL, scale);
        total += loss * scale;
    }
    el_tacts_set_training(t->acts, false);
    t->last_norm = el_clip_grad_norm(t->g, t->n, t->hp.clip);
    t->last_lr = el_lr_schedule(t->step, t->hp.n_steps, t->hp.warmup, t->hp.lr, t->hp.min_ratio);
    t->step++;
    el_adamw_step(&t->hp.adamw, t->tb, t->p, t->g, t->mom, t->vel, t->step, t->last_lr);
    return total;
}

float el_trainer_eval(el_trainer *t, const int32_t *tokens, const int32_t *targets,
                      const float *mask) {
    teach(t, tokens);
    return el_tmodel_forward(t->m, t->acts, t->tp, tokens, targets, mask, NULL);
}
