/* swiglu.h - the gated activations of feed-forward layers, element by element over n floats:
 * SwiGLU (llama-style), gate = silu(gate) * up with silu(g) = g / (1 + e^-g), and GeGLU
 * (Gemma), gate = gelu(gate) * up with GELU's tanh approximation (Hugging Face's
 * gelu_pytorch_tanh, ggml's gelu), gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
#ifndef EL_KERNELS_SWIGLU_H
#define EL_KERNELS_SWIGLU_H

#include <stddef.h>

typedef void (*el_swiglu_fn)(float *gate, const float *up, size_t n);

/* The portable reference, with libm's expf. */
void el_swiglu_ref(float *gate, const float *up, size_t n);
/* The same for GeGLU, with libm's tanhf. */
void el_geglu_ref(float *gate, const float *up, size_t n);

#endif
