/* fakequant.h - fake quantization for quantization-aware training: float values put on the grid
 * the integer kernels compute on (kernels/edge.h), so that a model trained through it is the
 * integer model exactly, and the straight-through gradients that let training see through the
 * rounding.
 *
 * Weights go per row (output channel) to int4, d = amax / 7, the W4 type's grid; activations per
 * tensor to int8 at a static scale d, q = round(x / d) clamped to -127..127, the grid of an A8
 * row with a static scale. The gradient of a rounding is taken as 1 (straight through), and as 0
 * where the clamp cut the value (PyTorch's fake_quantize_per_tensor_affine does the same). */
#ifndef EL_TRAIN_FAKEQUANT_H
#define EL_TRAIN_FAKEQUANT_H

#include <stdint.h>

/* y[r][:] = the W4 grid's value of w[r][:] for each of rows rows of n elements (n a whole number
 * of 32-element chunks, as the W4 type needs). y may be w. */
void el_fq_int4_rows(float *y, const float *w, int64_t rows, int64_t n);

/* y = d * clamp(round(x / d), -127, 127), element by element (d > 0). y may be x. */
void el_fq_int8(float *y, const float *x, int64_t n, float d);

/* Whether the clamp cut x at scale d: round(x / d) beyond -127..127 (its gradient is 0). */
int el_fq_int8_clipped(float x, float d);

/* dx += dy where x was not clipped at scale d (the straight-through gradient of el_fq_int8). */
void el_fq_int8_backward(float *dx, const float *dy, const float *x, int64_t n, float d);

/* The largest |x| of n values (0 for none): what an activation scale is tracked from. */
float el_fq_absmax(const float *x, int64_t n);

#endif
