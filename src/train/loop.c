/* loop.c - the training loop (see loop.h). */
#include "train/loop.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"

el_trainer_hp el_trainer_hp_from(const el_train_params *p, int32_t T) {
    el_trainer_hp hp = {.B = p->batch, .T = T, .accum = p->grad_accum, .n_steps = p->n_steps,
                        .warmup = p->warmup, .lr = p->lr, .min_ratio = p->min_lr_ratio,
                        .clip = p->grad_clip,
                        .adamw = {p->beta1, p->beta2, p->eps, p->weight_decay}};
    return hp;
}

el_status el_train_threads(int32_t n, el_threadpool **tp) {
    el_status st = el_threadpool_create(n, tp);
    if (st == EL_OK)
        openblas_set_num_threads(el_threadpool_size(*tp));
    return st;
}

/* Mean loss over the first eval_batches micro-batches of the held-out data (always the same
 * ones, so that evaluations are comparable). */
static void next_batch(el_loader *l, const el_batch_hook *hook, int32_t B, int32_t T,
                       int32_t *tok, int32_t *tgt, float *mask) {
    el_loader_next(l, B, tok, tgt, mask);
    if (hook) hook->fn(hook->user, B, T, tok, tgt, mask);
}

static float evaluate(const el_train_params *p, el_trainer *t, el_loader *eval,
                      const el_batch_hook *hook, int32_t *tok, int32_t *tgt, float *mask) {
    el_loader_seek(eval, 0, 0);
    int32_t n = p->eval_batches > 0 ? p->eval_batches : 1;
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++) {
        next_batch(eval, hook, t->hp.B, t->hp.T, tok, tgt, mask);
        sum += el_trainer_eval(t, tok, tgt, mask);
    }
    return (float)(sum / n);
}

el_status el_train_loop(const el_train_params *p, el_trainer *t, el_loader *train,
                        el_loader *eval, const char *plot_title, const el_batch_hook *hook,
                        bool *stopped) {
    el_history hist = {0};
    el_status st = EL_OK;
    *stopped = false;
    if (p->resume && p->checkpoint_path && access(p->checkpoint_path, F_OK) != 0)
        el_warn("%s: no checkpoint there yet: the run starts fresh", p->checkpoint_path);
    else if (p->resume && p->checkpoint_path &&
             (st = el_checkpoint_load(p->checkpoint_path, t, train, &hist)))
        return st;
    size_t mb = (size_t)t->hp.B * t->hp.T, n = mb * (size_t)t->hp.accum;
    int32_t *tok = malloc(n * sizeof *tok), *tgt = malloc(n * sizeof *tgt);
    float *mask = malloc(n * sizeof *mask);
    if (!tok || !tgt || !mask)
        st = el_error(EL_ERR_NOMEM, "out of memory for a batch of %zu tokens", n);
    double t0 = el_now_seconds();
    int64_t first = t->step;
    while (st == EL_OK && t->step < p->n_steps) {
        for (int32_t a = 0; a < t->hp.accum; a++)
            next_batch(train, hook, t->hp.B, t->hp.T, tok + a * mb, tgt + a * mb, mask + a * mb);
        float loss = el_trainer_step(t, tok, tgt, mask);
        if ((st = el_history_add(&hist, false, (float)t->step, loss)))
            break;
        el_train_progress pr = {.step = t->step, .n_steps = p->n_steps, .loss = loss,
                                .eval_loss = NAN, .lr = t->last_lr};
        bool at_eval = eval && ((p->eval_every > 0 && t->step % p->eval_every == 0) ||
                                t->step == p->n_steps);
        if (at_eval) {
            pr.eval_loss = evaluate(p, t, eval, hook, tok, tgt, mask);
            if ((st = el_history_add(&hist, true, (float)t->step, pr.eval_loss)))
                break;
        }
        pr.elapsed_s = el_now_seconds() - t0;
        pr.tokens_per_s = pr.elapsed_s > 0 ? (double)(t->step - first) * (double)n / pr.elapsed_s
                                           : 0.0;
        bool go_on = p->progress ? p->progress(p->user, &pr) : true;
        /* on a stop, every checkpoint_every steps, and at the end (so a finished run's state
         * is there to continue from with more steps) */
        bool save = p->checkpoint_path &&
                    (!go_on || t->step == p->n_steps ||
                     (p->checkpoint_every > 0 && t->step % p->checkpoint_every == 0));
        if (save && (st = el_checkpoint_save(p->checkpoint_path, t, train, &hist)))
            break;
        if (!go_on && t->step < p->n_steps) {
            *stopped = true;
            break;
        }
    }
    if (st == EL_OK && p->plot_path)
        st = el_history_plot(&hist, p->plot_path, plot_title, "loss (nats/token)");
    free(tok);
    free(tgt);
    free(mask);
    el_history_free(&hist);
    return st;
}
