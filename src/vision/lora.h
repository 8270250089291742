/* lora.h - a task adapter of the image model: LoRA on every convolution (the 3 x 3 ones, the
 * skips, and the attention's q, k, v and output projections). For a convolution weight W
 * [cout][cin k k]: A [rank][cin k k], B [cout][rank], W' = W + (alpha / rank) B A.
 *
 * At run time the base is never changed: each adapted convolution adds the low-rank term
 * s B (A col) to its output (el_conv_lora_forward). Training runs the base's forward and backward
 * on the merged weights W' and takes dA = s B^T dW', dB = s dW' A^T from the merged weights'
 * gradient: the output is linear in W', so this is the exact gradient.
 *
 * File: a GGUF with general.type "adapter", general.architecture "edgelora-unet", adapter.type
 * "lora", adapter.lora.alpha, edgelora-unet.task (the task's name) and, per adapted
 * convolution NAME.weight, NAME.lora_a (ne {cin k k, rank}) and NAME.lora_b (ne {rank, cout}). */
#ifndef EL_VISION_LORA_H
#define EL_VISION_LORA_H

#include "vision/unet.h"

struct el_vlora {
    int32_t rank;
    float alpha, scale; /* scale = alpha / rank */
    el_ttable tb;       /* A then B of each adapted convolution */
    float *w;
    int32_t *slot; /* per base tensor: the index in tb of its A, or -1 */
    char task[32];
};

/* An adapter of every convolution of u: A uniform in +-1/sqrt(fan_in) from seed, B zero (so it
 * starts as the base). */
el_status el_vlora_init(el_vlora *l, const el_unet *u, int32_t rank, float alpha, const char *task,
                        uint64_t seed);
void el_vlora_free(el_vlora *l);

/* merged = base with every adapted weight W + s B A. */
void el_vlora_merge(const el_vlora *l, const el_unet *u, const float *base, float *merged);
/* The adapter's gradient (overwritten) from the merged weights' gradient gbase. */
void el_vlora_grad(const el_vlora *l, const el_unet *u, const float *gbase, float *g);

el_status el_vlora_save(const char *path, const el_vlora *l, const el_unet *u);
/* Refuses an adapter of another architecture (a language model's), of another rank layout, or
 * for convolutions u does not have, naming the file and what differs. */
el_status el_vlora_load(const char *path, el_vlora *l, const el_unet *u);

#endif
