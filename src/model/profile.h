/* profile.h - a quantization profile: the fixed scales an integer graph runs with, one set for
 * the base and every adapter bound to it (docs/formats.md, "Quantization profiles").
 *
 * Per linear layer (a slot: layer, linear) a profile fixes four per-tensor scales:
 *   x: the layer's int8 input activations, which its base weight (if it is dotted with int8
 *      activations) and every adapter's A read;
 *   a: the int8 values of every adapter's A;
 *   t: the int8 intermediate t = A x;
 *   b: the int8 values of every adapter's B;
 * and the output head's input scale. The model owns the profile it was loaded with
 * (el_model_params.profile_path); adapters loaded for that model are quantized with these
 * scales, not their own, so one graph serves them all. */
#ifndef EL_MODEL_PROFILE_H
#define EL_MODEL_PROFILE_H

#include <stdint.h>

#include "edgelora.h"

typedef struct el_profile_slot {
    float x_scale; /* 0: the slot's activations keep per-token scales and take no adapter */
    float a_scale; /* 0 (with t and b): no adapter may change this slot under the profile */
    float t_scale;
    float b_scale;
} el_profile_slot;

typedef struct el_profile {
    char *path;
    uint64_t id;            /* names the scales (el_profile_id); adapters tuned under it store it */
    uint64_t base;          /* el_model_fingerprint of the model it was made for */
    int32_t n_slots;        /* n_layer * EL_N_LINEAR */
    el_profile_slot *slots; /* [n_slots], slot = el_linear_slot(il, linear) */
    float output_x_scale;   /* the output head's input; 0: per-token scales */
} el_profile;

/* The profile's name for its scales: a hash of every slot's four values and the head's. */
uint64_t el_profile_id(const el_profile *p);

/* Reads the profile at path, checks it against m (the model it was made for, its slot count,
 * every scale finite and non-negative, a slot's adapter scales all set or all zero), sets the
 * activation scales of m's weights that are dotted with int8 activations (replacing the file's
 * own) and gives m the profile. Errors name the file and the problem. */
el_status el_profile_load(el_model *m, const char *path);

/* Writes p as a GGUF file (general.type = "profile"), whole or not at all. */
el_status el_profile_write(const el_profile *p, const char *path);

void el_profile_free(el_profile *p);

/* The largest |value| the int8 grid of scale d holds: 127 d. */
static inline float el_profile_limit(float d) { return 127.0f * d; }

#endif
