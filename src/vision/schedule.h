/* schedule.h - the diffusion process: DDPM's linear noise schedule, noising an image for
 * training, and one reverse step of the DDPM and DDIM samplers.
 *
 * x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) e, abar_t = prod_{s <= t} (1 - beta_s), beta linear
 * from beta_1 to beta_T over T steps (Ho et al. 2020); the model predicts e. */
#ifndef EL_VISION_SCHEDULE_H
#define EL_VISION_SCHEDULE_H

#include <stdint.h>

#include "edgelora.h"

typedef struct el_schedule {
    int32_t T;
    float *beta, *abar; /* [T] */
} el_schedule;

el_status el_schedule_init(el_schedule *s, int32_t T, float beta_1, float beta_T);
void el_schedule_free(el_schedule *s);

/* xt [n] = sqrt(abar_t) x0 + sqrt(1 - abar_t) e */
void el_schedule_noise(const el_schedule *s, int32_t t, const float *x0, const float *e, float *xt,
                       int64_t n);

/* The timesteps of an n_steps DDIM run, from T - 1 down (ts[n_steps]): evenly spaced,
 * ts[i] = (n_steps - 1 - i) * T / n_steps rounded down (so the last is 0). */
void el_schedule_ddim_steps(const el_schedule *s, int32_t n_steps, int32_t *ts);

/* One DDIM step (eta = 0, deterministic) from t to t_prev (-1: to x_0):
 * x0' = (x - sqrt(1 - abar_t) e) / sqrt(abar_t), clipped to [-1, 1];
 * x <- sqrt(abar_prev) x0' + sqrt(1 - abar_prev) e', with e' = (x - sqrt(abar_t) x0') /
 * sqrt(1 - abar_t) (the noise consistent with the clipped x0'); abar_prev = 1 at t_prev = -1. */
void el_schedule_ddim_step(const el_schedule *s, int32_t t, int32_t t_prev, float *x,
                           const float *e, int64_t n);

/* One DDPM ancestral step from t to t - 1: the posterior mean of x_{t-1} given x and the clipped
 * x0', plus sqrt(beta~_t) z (z [n] standard normal; unused at t = 0). */
void el_schedule_ddpm_step(const el_schedule *s, int32_t t, float *x, const float *e,
                           const float *z, int64_t n);

#endif
