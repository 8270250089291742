/* train_state.h - the whole state of a diffusion training run, and its checkpoint file.
 *
 * Checkpoint layout (little-endian): "ELVC", u32 version 1, i32 ch temb groups n_class
 * timesteps, f32 beta_1 beta_T, u32 0, u64 floats, i64 step, u64 seed, u64 rng state, u64 n_train
 * n_eval, f32 history [n_train][2] [n_eval][2], f32 params[floats] m[floats] v[floats]
 * ema[floats], u64 FNV-1a (64-bit) of every byte before it. A damaged file is refused; a run
 * resumed from it continues bit for bit (the batches come from the stored generator). */
#ifndef EL_VISION_TRAIN_STATE_H
#define EL_VISION_TRAIN_STATE_H

#include "train/checkpoint.h"
#include "train/rng.h"
#include "vision/model_file.h"

typedef struct el_dstate {
    el_unet u;
    el_unet_file_info sched;
    float *p, *g, *m, *v, *ema; /* parameters, gradients, AdamW moments, moving average */
    int64_t step;
    uint64_t seed;
    el_rng rng; /* batches: images, classes dropped, timesteps, noise */
    el_history hist;
} el_dstate;

/* A fresh state for shape c (parameters initialized from seed). */
el_status el_dstate_init(el_dstate *s, const el_unet_config *c, const el_unet_file_info *sched,
                         uint64_t seed);
void el_dstate_free(el_dstate *s);

el_status el_dstate_save(const char *path, const el_dstate *s);
/* Into a state made for the same shape and schedule (else EL_ERR_MISMATCH naming what differs). */
el_status el_dstate_load(const char *path, el_dstate *s);

#endif
