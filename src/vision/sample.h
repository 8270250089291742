/* sample.h - the samplers: the reverse diffusion from noise to an image, over any noise
 * predictor (the UNet at run time, a fixed function in the tests that compare with NumPy). */
#ifndef EL_VISION_SAMPLE_H
#define EL_VISION_SAMPLE_H

#include "vision/schedule.h"

/* eps [n][784] predicted for the images x [n][784] at timestep t. */
typedef el_status (*el_eps_fn)(void *user, const float *x, int32_t t, float *eps);
/* z [n] standard normal values (DDPM's noise of one step). */
typedef void (*el_noise_fn)(void *user, float *z, int64_t n);

/* DDIM (eta 0) in n_steps steps (el_schedule_ddim_steps), x [n_img][784] from the starting noise
 * to the image, in place. */
el_status el_sample_ddim(const el_schedule *s, int32_t n_steps, int64_t n_img, float *x,
                         el_eps_fn eps, void *user);
/* DDPM over every timestep, T - 1 down to 0; noise gives each step's z (not asked at t = 0). */
el_status el_sample_ddpm(const el_schedule *s, int64_t n_img, float *x, el_eps_fn eps, void *user,
                         el_noise_fn noise, void *noise_user);

#endif
