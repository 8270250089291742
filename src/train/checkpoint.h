/* checkpoint.h - the whole state of a training run in one file, written atomically
 * (core/outfile.h): model shape, the trained block (base or LoRA) with its AdamW moments, the
 * step, the data loader's position (seed, epoch, index) and the loss history. A run resumed from it
 * continues bit for bit as if it had never stopped.
 *
 * Layout (little-endian): "ELCK", u32 version 2, i32 dim n_layer n_head n_head_kv n_ff n_ctx
 * n_vocab tied, f32 rms_eps rope_base, i32 lora rank, f32 alpha, u32 targets, u64 floats,
 * i64 step, u64 seed, i64 epoch index, u64 n_train n_eval, f32 history [n_train][2] [n_eval][2],
 * f32 params[floats] m[floats] v[floats], u64 FNV-1a (64-bit) of every byte before it. A
 * damaged file (a byte changed, a truncated end) is refused. */
#ifndef EL_TRAIN_CHECKPOINT_H
#define EL_TRAIN_CHECKPOINT_H

#include "train/data.h"
#include "train/trainer.h"

/* (step, loss) points of the training and held-out curves */
typedef struct el_history {
    float *train;  /* [n_train][2] */
    size_t n_train, cap_train;
    float *eval;   /* [n_eval][2] */
    size_t n_eval, cap_eval;
} el_history;

el_status el_history_add(el_history *h, bool eval, float step, float loss);
void el_history_free(el_history *h);
/* The training and held-out curves as an SVG plot (train/svg.h) against the step. */
el_status el_history_plot(const el_history *h, const char *path, const char *title,
                          const char *y_label);

el_status el_checkpoint_save(const char *path, const el_trainer *t, const el_loader *l,
                             const el_history *h);
/* Restores into a trainer made for the same model shape and LoRA settings (else
 * EL_ERR_MISMATCH naming what differs). */
el_status el_checkpoint_load(const char *path, el_trainer *t, el_loader *l, el_history *h);

#endif
