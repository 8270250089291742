/* unet.h - the image model: a small UNet that predicts the noise of a noised 28 x 28 image.
 *
 * Input [B][3][28][28]: the noised image, a masked image and its mask (the condition channels:
 * zero for plain generation, so that editing tasks train adapters, not a new graph). Output
 * [B][1][28][28]: the predicted noise. The timestep (sinusoidal embedding, then a two-layer MLP)
 * plus a class embedding (n_class rows and one more for "no class") is added to every residual
 * block. Resolutions 28, 14 and 7, channels ch, 2 ch, 2 ch; self-attention at 7 x 7.
 *
 *   conv_in -> d0 (res ch) -> pool -> d1 (res 2ch) -> pool -> m0 (res) -> attn -> m1 (res)
 *   -> up, concat d1 -> u1 (res 2ch) -> up, concat d0 -> u0 (res ch) -> norm, SiLU -> conv_out
 *
 * A residual block: h = conv1(SiLU(gn1(x))) + dense(SiLU(temb)); out = conv2(SiLU(gn2(h))) +
 * skip(x), skip a 1 x 1 convolution where the channels change. All convolutions are 3 x 3 but
 * the skips and the attention's q, k, v and output projections (1 x 1).
 *
 * Parameters live in one float block laid out by an el_ttable (src/train/tmodel.h), so that
 * gradients and AdamW moments are blocks of the same layout. A convolution weight is a tensor of
 * cout rows of cin * k * k values (input channel, kernel row, kernel column). */
#ifndef EL_VISION_UNET_H
#define EL_VISION_UNET_H

#include <stdint.h>

#include "train/tmodel.h"
#include "vision/arena.h"

enum { EL_UNET_SIDE = 28, EL_UNET_IN = 3 };

typedef struct el_unet_config {
    int32_t ch;      /* channels at 28 x 28 (a multiple of groups) */
    int32_t temb;    /* width of the timestep/class embedding */
    int32_t groups;  /* group norm groups */
    int32_t n_class; /* classes; row n_class of the class embedding means "no class" */
    int32_t n_steps; /* diffusion timesteps the model was trained for */
} el_unet_config;

/* A convolution's tensors: indices into the table. */
typedef struct el_unet_conv {
    int32_t w, b;
    int32_t cin, cout, k;
} el_unet_conv;

typedef struct el_unet_norm {
    int32_t g, b;
    int32_t c;
} el_unet_norm;

typedef struct el_unet_res {
    el_unet_norm n1, n2;
    el_unet_conv c1, c2, skip; /* skip.w < 0: identity */
    int32_t tw, tb;            /* the embedding's projection: [cout][temb], [cout] */
} el_unet_res;

typedef struct el_unet_attn {
    el_unet_norm n;
    el_unet_conv q, k, v, o;
} el_unet_attn;

typedef struct el_unet {
    el_unet_config c;
    el_ttable tb;
    int32_t t1w, t1b, t2w, t2b, cls; /* timestep MLP [temb][ch], [temb][temb]; class table */
    el_unet_conv conv_in, conv_out;
    el_unet_res d0, d1, m0, m1, u1, u0;
    el_unet_attn attn;
    el_unet_norm out_norm;
} el_unet;

/* Lays out the table for c (checked: positive sizes, ch a multiple of groups). */
el_status el_unet_init(el_unet *u, const el_unet_config *c);
void el_unet_free(el_unet *u);

/* Fresh parameters: convolutions and dense layers uniform in +-1/sqrt(fan_in) (PyTorch's
 * default), norms 1 and 0, biases 0, class embedding N(0, 1), and conv_out zero (so the first
 * prediction is zero noise). */
void el_unet_init_params(const el_unet *u, float *p, uint64_t seed);

/* What the forward keeps for the backward pass (inside the arena). */
typedef struct el_unet_acts el_unet_acts;

typedef struct el_vlora el_vlora;
typedef struct el_unet_quant el_unet_quant;

/* What a forward runs with besides the parameters; NULL fields (or a NULL bind) mean none. */
typedef struct el_unet_bind {
    const el_vlora *lora;        /* an adapter (vision/lora.h) */
    const el_unet_quant *quant;  /* integer convolutions (vision/quant.h) */
    float *amax;                 /* by tensor index: raised to the largest |input| each
                                  * convolution sees (calibration) */
    /* training for an integer form: each convolution's input rounded to its static grid
     * (by tensor index, the step d; levels the largest |q|) before a float product */
    const float *fake_step;
    float fake_levels;
} el_unet_bind;

/* eps [B][1][28][28] of x [B][3][28][28] at timesteps t [B] and classes cls [B] (n_class: none),
 * with what bind holds (NULL: the float base alone). With acts non-NULL the activations
 * are kept there for el_unet_backward (of the base: trained adapters use merged weights); x, t
 * and cls must stay until then. Allocates from a; EL_ERR_NOMEM if an allocation failed. */
el_status el_unet_forward(const el_unet *u, const float *p, const el_unet_bind *bind, int64_t B,
                          const float *x, const int32_t *t, const int32_t *cls, float *eps,
                          el_arena *a, el_unet_acts **acts);
/* grad += d loss / d p, given deps = d loss / d eps. */
el_status el_unet_backward(const el_unet *u, const float *p, float *grad, const el_unet_acts *acts,
                           const float *deps, el_arena *a);

#endif
