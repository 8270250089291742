/* loop.h - the training loop shared by pretraining and LoRA fine-tuning: batches from the
 * loader, optimizer steps, held-out evaluation at intervals, progress reports, checkpoints and
 * resume, and the loss plot. */
#ifndef EL_TRAIN_LOOP_H
#define EL_TRAIN_LOOP_H

#include "train/checkpoint.h"

/* Reshapes each micro-batch the loader dealt (B items of T tokens: tokens, targets, mask) before
 * the trainer sees it: forecast training puts its slots in. */
typedef struct el_batch_hook {
    void (*fn)(void *user, int32_t B, int32_t T, int32_t *tokens, int32_t *targets, float *mask);
    void *user;
} el_batch_hook;

/* Runs steps until p->n_steps or until the progress callback stops it (*stopped = true, the
 * checkpoint written). eval and hook may be NULL. */
el_status el_train_loop(const el_train_params *p, el_trainer *t, el_loader *train,
                        el_loader *eval, const char *plot_title, const el_batch_hook *hook,
                        bool *stopped);

/* The trainer's hyper-parameters from the public parameters. */
el_trainer_hp el_trainer_hp_from(const el_train_params *p, int32_t T);

/* Creates the pool and sets OpenBLAS's thread count (n <= 0: all cores). */
el_status el_train_threads(int32_t n, el_threadpool **tp);

#endif
