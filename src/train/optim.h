/* optim.h - AdamW with decoupled weight decay (Loshchilov & Hutter; the update of
 * torch.optim.AdamW), the warmup + cosine learning-rate schedule, and global-norm gradient
 * clipping, over flat blocks laid out by a parameter table. */
#ifndef EL_TRAIN_OPTIM_H
#define EL_TRAIN_OPTIM_H

#include <stdint.h>

#include "train/tmodel.h"

typedef struct el_adamw {
    float beta1, beta2, eps, weight_decay;
} el_adamw;

/* lr at step (0-based): linear warmup from lr/warmup to lr over `warmup` steps, then a cosine
 * from lr down to lr * min_ratio at step n_steps. */
float el_lr_schedule(int64_t step, int64_t n_steps, int64_t warmup, float lr, float min_ratio);

/* Scales g (n floats) so that its L2 norm is at most max_norm (when max_norm > 0), as
 * torch.nn.utils.clip_grad_norm_ does (factor max_norm / (norm + 1e-6)). Returns the norm before
 * clipping. */
float el_clip_grad_norm(float *g, size_t n, float max_norm);

/* One AdamW step t (1-based) of the block p with gradients g and moments m, v, all laid out by
 * table tb; tensors with decay = false (norms) get no weight decay. */
void el_adamw_step(const el_adamw *o, const el_ttable *tb, float *p, const float *g, float *m,
                   float *v, int64_t t, float lr);

#endif
