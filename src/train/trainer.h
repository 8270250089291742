/* trainer.h - one optimizer step of a training model: gradient accumulation over micro-batches,
 * global-norm clipping, the scheduled learning rate and AdamW. Trains the base block, or only the
 * LoRA block or the forecast vectors (the base is then frozen: no base gradient is computed). */
#ifndef EL_TRAIN_TRAINER_H
#define EL_TRAIN_TRAINER_H

#include <stdbool.h>
#include <stdint.h>

#include "train/optim.h"
#include "train/tmodel.h"

typedef struct el_trainer_hp {
    int32_t B, T;          /* micro-batch: B sequences of T tokens */
    int32_t accum;         /* micro-batches per optimizer step */
    int64_t n_steps, warmup;
    float lr, min_ratio, clip;
    el_adamw adamw;
} el_trainer_hp;

/* Which block a trainer trains; the others stay frozen (no gradient is computed for them). */
typedef enum el_train_block {
    EL_TRAIN_BASE,          /* m->w */
    EL_TRAIN_LORA,          /* m->lw */
    EL_TRAIN_FORECAST,      /* m->fw */
} el_train_block;

typedef struct el_trainer {
    el_tmodel *m;
    el_train_block what;
    const el_ttable *tb;    /* the trained block's table */
    float *p;               /* the trained block */
    float *g, *mom, *vel;   /* its gradients and AdamW moments, laid out like p */
    size_t n;               /* floats in the block */
    int64_t step;           /* optimizer steps done */
    el_trainer_hp hp;
    el_tacts *acts;
    el_threadpool *tp;
    float last_lr, last_norm;
    /* distillation (el_trainer_set_teacher), or all NULL */
    const el_tmodel *teacher;
    el_tacts *teacher_acts;
    float *teacher_logits;  /* [B*T][n_vocab] */
    uint64_t teacher_hash;  /* of its weights (and adapter), which checkpoints keep */
} el_trainer;

el_status el_trainer_init(el_trainer *t, el_tmodel *m, el_train_block what,
                          const el_trainer_hp *hp, el_threadpool *tp);
void el_trainer_free(el_trainer *t);

/* Distillation: every later step and evaluation runs the teacher (a model of the same
 * vocabulary, frozen, kept by the caller) over the same tokens, and the loss is the masked mean
 * of KL(teacher || model) in place of the cross-entropy with the targets. */
el_status el_trainer_set_teacher(el_trainer *t, const el_tmodel *teacher);

/* One optimizer step over hp.accum micro-batches: tokens, targets and mask are
 * [accum][B][T] (mask may be NULL). Returns the mean of the micro-batch losses. */
float el_trainer_step(el_trainer *t, const int32_t *tokens, const int32_t *targets,
                      const float *mask);

/* Mean loss of one micro-batch without a step (held-out evaluation). */
float el_trainer_eval(el_trainer *t, const int32_t *tokens, const int32_t *targets,
                      const float *mask);

#endif
