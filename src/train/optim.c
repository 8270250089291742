/* optim.c - AdamW, the learning-rate schedule and gradient clipping (see optim.h). */
#include "train/optim.h"

#include <math.h>

float el_lr_schedule(int64_t step, int64_t n_steps, int64_t warmup, float lr, float min_ratio) {
    if (step < warmup)
        return lr * (float)(step + 1) / (float)warmup;
    int64_t span = n_steps - warmup;
    double progress = span > 0 ? (double)(step - warmup) / (double)span : 1.0;
    if (progress > 1.0)
        progress = 1.0;
    double min_lr = (double)lr * min_ratio;
    return (float)(min_lr + 0.5 * ((double)lr - min_lr) * (1.0 + cos(M_PI * progress)));
}

float el_clip_grad_norm(float *g, size_t n, float max_norm) {
    double ss = 0.0;
    for (size_t i = 0; i < n; i++)
        ss += (double)g[i] * g[i];
    float norm = (float)sqrt(ss);
    if (max_norm > 0.0f) {
        float coef = max_norm / (norm + 1e-6f);
        if (coef < 1.0f)
            for (size_t i = 0; i < n; i++)
                g[i] *= coef;
    }
    return norm;
}

void el_adamw_step(const el_adamw *o, const el_ttable *tb, float *p, const float *g, float *m,
                   float *v, int64_t t, float lr) {
    float bc1 = 1.0f - powf(o->beta1, (float)t), bc2 = 1.0f - powf(o->beta2, (float)t);
    float step_size = lr / bc1, bc2_sqrt = sqrtf(bc2);
    for (int32_t k = 0; k < tb->n; k++) {
        const el_ttensor *tt = &tb->t[k];
        float decay = tt->decay ? 1.0f - lr * o->weight_decay : 1.0f;
        size_t end = tt->offset + (size_t)(tt->n_out * tt->n_in);
        for (size_t i = tt->offset; i < end; i++) {
            p[i] *= decay;
            m[i] = o->beta1 * m[i] + (1.0f - o->beta1) * g[i];
            v[i] = o->beta2 * v[i] + (1.0f - o->beta2) * g[i] * g[i];
            p[i] -= step_size * m[i] / (sqrtf(v[i]) / bc2_sqrt + o->eps);
        }
    }
}
