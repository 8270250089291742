/* schedule.c - the noise schedule and the two samplers' steps (see schedule.h). */
#include "vision/schedule.h"

#include <math.h>
#include <stdlib.h>

#include "core/error.h"

el_status el_schedule_init(el_schedule *s, int32_t T, float beta_1, float beta_T) {
    s->T = T;
    s->beta = malloc((size_t)T * sizeof *s->beta);
    s->abar = malloc((size_t)T * sizeof *s->abar);
    if (!s->beta || !s->abar) {
        el_schedule_free(s);
        return el_error(EL_ERR_NOMEM, "diffusion schedule: out of memory");
    }
    double prod = 1.0;
    for (int32_t t = 0; t < T; t++) {
        double b = beta_1 + (beta_T - beta_1) * (double)t / (double)(T - 1);
        prod *= 1.0 - b;
        s->beta[t] = (float)b;
        s->abar[t] = (float)prod;
    }
    return EL_OK;
}

void el_schedule_free(el_schedule *s) {
    free(s->beta);
    free(s->abar);
    s->beta = s->abar = NULL;
}

void el_schedule_noise(const el_schedule *s, int32_t t, const float *x0, const float *e, float *xt,
                       int64_t n) {
    float a = sqrtf(s->abar[t]), b = sqrtf(1.0f - s->abar[t]);
    for (int64_t i = 0; i < n; i++) xt[i] = a * x0[i] + b * e[i];
}

void el_schedule_ddim_steps(const el_schedule *s, int32_t n_steps, int32_t *ts) {
    for (int32_t i = 0; i < n_steps; i++)
        ts[i] = (int32_t)((int64_t)(n_steps - 1 - i) * s->T / n_steps);
}

static float clip1(float v) { return v < -1.0f ? -1.0f : v > 1.0f ? 1.0f : v; }

void el_schedule_ddim_step(const el_schedule *s, int32_t t, int32_t t_prev, float *x,
                           const float *e, int64_t n) {
    float at = s->abar[t], ap = t_prev >= 0 ? s->abar[t_prev] : 1.0f;
    float sa = sqrtf(at), sb = sqrtf(1.0f - at), pa = sqrtf(ap), pb = sqrtf(1.0f - ap);
    for (int64_t i = 0; i < n; i++) {
        float x0 = clip1((x[i] - sb * e[i]) / sa), ee = (x[i] - sa * x0) / sb;
        x[i] = pa * x0 + pb * ee;
    }
}

/* mean = sqrt(abar_{t-1}) beta_t / (1 - abar_t) x0' + sqrt(1 - beta_t) (1 - abar_{t-1}) /
 * (1 - abar_t) x, variance beta~_t = (1 - abar_{t-1}) / (1 - abar_t) beta_t */
void el_schedule_ddpm_step(const el_schedule *s, int32_t t, float *x, const float *e,
                           const float *z, int64_t n) {
    float at = s->abar[t], ap = t > 0 ? s->abar[t - 1] : 1.0f, b = s->beta[t];
    float c0 = sqrtf(ap) * b / (1.0f - at), ct = sqrtf(1.0f - b) * (1.0f - ap) / (1.0f - at);
    float sd = t > 0 ? sqrtf((1.0f - ap) / (1.0f - at) * b) : 0.0f;
    float sa = sqrtf(at), sb = sqrtf(1.0f - at);
    for (int64_t i = 0; i < n; i++) {
        float x0 = clip1((x[i] - sb * e[i]) / sa);
        x[i] = c0 * x0 + ct * x[i] + (t > 0 ? sd * z[i] : 0.0f);
    }
}
