/* quant.h - the image model's integer convolutions (W8A16, W8A8), the LLM's integer types and
 * kernels over the convolutions' im2col rows:
 *
 * - every convolution weight (the 3 x 3 ones, the skips, attention's q, k, v and output) is int8
 *   with a scale per output channel (W8; W8A16 stores the same bytes);
 * - its input is quantized at a static scale, one per convolution, from calibration
 *   (el_unet_observe): int16 (W8A16) or int8 (W8A8);
 * - the product is el_matmul (kernels/matmul.h, the per-ISA kernels), one activation row per
 *   output pixel, its cin k k values padded with zeros to the types' blocks of 32.
 *
 * Group norms, SiLU, attention's scores and softmax, the timestep MLP and a bound adapter's
 * low-rank term stay float. The model's float weights are not changed: the integer weights are
 * made beside them. */
#ifndef EL_VISION_QUANT_H
#define EL_VISION_QUANT_H

#include "kernels/matmul.h"
#include "vision/unet.h"

typedef struct el_unet_quant {
    el_image_precision precision;
    int32_t n;          /* the model's tensors */
    el_weight *w;       /* by tensor index: a convolution weight's integer rows (data NULL for
                         * other tensors), act_scale its input's static scale */
    void *data;         /* every integer row */
    el_threadpool *tp;  /* the products' threads (NULL: one) */
} el_unet_quant;

/* The integer weights of u's convolutions (parameters p) at precision (W8A16 or W8A8), with the
 * static input scales amax[i] / 32767 or / 127 (amax by tensor index, from el_unet_observe: the
 * largest |input| each convolution saw); an amax of 0 (a convolution never run) is refused. */
el_status el_unet_quant_init(el_unet_quant *q, const el_unet *u, const float *p,
                             el_image_precision precision, const float *amax);
void el_unet_quant_free(el_unet_quant *q);

/* Reads a profile's precision and input ranges (amax [tensors], 0 where the file has none) for
 * u, refusing a file of another kind or model (src/vision/image_profile.c). */
el_status el_unet_profile_read(const char *path, const el_unet *u, float *amax,
                               el_image_precision *precision);

/* The levels of precision's activations: 32767 (W8A16) or 127 (W8A8). */
float el_unet_act_levels(el_image_precision precision);

/* Every convolution weight of p (u's layout) replaced by its int8 rows' values (each row's
 * absmax / 127 grid): what the integer weights compute, in float, for training against. */
void el_unet_fake_quant_weights(const el_unet *u, float *p);

/* y [B][cout][side^2] = the convolution of x [B][cin][side^2] (tensor c->w) plus bias b, in
 * integers; scratch from a. */
void el_unet_qconv_forward(const el_unet_quant *q, const el_unet_conv *c, const float *b,
                           int64_t B, int64_t side, const float *x, float *y, el_arena *a);

#endif
