/* sample.c - the DDIM and DDPM loops over a noise predictor. */
#include "vision/sample.h"

#include <stdlib.h>

#include "core/error.h"

enum { PIX = 28 * 28 };

el_status el_sample_ddim(const el_schedule *s, int32_t n_steps, int64_t n_img, float *x,
                         el_eps_fn eps, void *user) {
    if (n_steps < 1 || n_steps > s->T)
        return el_error(EL_ERR_INVALID_ARG, "DDIM: %d steps (1 to %d)", n_steps, s->T);
    int32_t *ts = malloc((size_t)n_steps * sizeof *ts);
    float *e = malloc((size_t)(n_img * PIX) * sizeof *e);
    el_status st = ts && e ? EL_OK : el_error(EL_ERR_NOMEM, "DDIM: out of memory");
    if (st == EL_OK) el_schedule_ddim_steps(s, n_steps, ts);
    for (int32_t i = 0; i < n_steps && st == EL_OK; i++) {
        if ((st = eps(user, x, ts[i], e)) != EL_OK) break;
        el_schedule_ddim_step(s, ts[i], i + 1 < n_steps ? ts[i + 1] : -1, x, e, n_img * PIX);
    }
    free(ts);
    free(e);
    return st;
}

el_status el_sample_ddpm(const el_schedule *s, int64_t n_img, float *x, el_eps_fn eps, void *user,
                         el_noise_fn noise, void *noise_user) {
    float *e = malloc((size_t)(n_img * PIX) * sizeof *e),
          *z = malloc((size_t)(n_img * PIX) * sizeof *z);
    el_status st = e && z ? EL_OK : el_error(EL_ERR_NOMEM, "DDPM: out of memory");
    for (int32_t t = s->T - 1; t >= 0 && st == EL_OK; t--) {
        if ((st = eps(user, x, t, e)) != EL_OK) break;
        if (t > 0) noise(noise_user, z, n_img * PIX);
        el_schedule_ddpm_step(s, t, x, e, z, n_img * PIX);
    }
    free(e);
    free(z);
    return st;
}
