/* classifier.h - a small digit classifier, the feature extractor of FID-MNIST (docs/vision.md):
 *
 *   x [B][1][28][28] -> conv 3x3 (c1) -> SiLU -> pool -> conv 3x3 (c2) -> SiLU -> pool
 *   -> dense (n_feat) -> SiLU = the features -> dense (n_class) = the logits
 *
 * Parameters are one float block laid out by an el_ttable, as the UNet's (vision/unet.h). */
#ifndef EL_VISION_CLASSIFIER_H
#define EL_VISION_CLASSIFIER_H

#include "train/tmodel.h"
#include "vision/arena.h"

typedef struct el_cnet_config {
    int32_t c1, c2, n_feat, n_class;
} el_cnet_config;

typedef struct el_cnet {
    el_cnet_config c;
    el_ttable tb;
    int32_t w1, b1, w2, b2, w3, b3, w4, b4; /* conv1, conv2, features, logits */
} el_cnet;

el_status el_cnet_init(el_cnet *n, const el_cnet_config *c);
void el_cnet_free(el_cnet *n);
/* Convolutions and dense layers uniform in +-1/sqrt(fan_in), biases 0. */
void el_cnet_init_params(const el_cnet *n, float *p, uint64_t seed);

typedef struct el_cnet_acts el_cnet_acts;

/* logits [B][n_class] and (if feat is not NULL) the features [B][n_feat] of the images x
 * [B][784] (values in [-1, 1]); with acts the activations are kept in a for el_cnet_backward. */
el_status el_cnet_forward(const el_cnet *n, const float *p, int64_t B, const float *x,
                          float *logits, float *feat, el_arena *a, el_cnet_acts **acts);
/* grad += d loss / d p, given dlogits = d loss / d logits. */
el_status el_cnet_backward(const el_cnet *n, const float *p, float *grad, const el_cnet_acts *acts,
                           const float *dlogits, el_arena *a);

/* The file (docs/formats.md, "edgelora-digit-classifier"): the shape as keys, every tensor F32. */
el_status el_cnet_save(const char *path, const el_cnet *n, const float *p);
el_status el_cnet_load(const char *path, el_cnet *n, float **p);

#endif
