/* swiglu.h - the gated activation of llama-style feed-forward layers: gate = silu(gate) * up,
 * silu(g) = g / (1 + e^-g), element by element over n floats. */
#ifndef EL_KERNELS_SWIGLU_H
#define EL_KERNELS_SWIGLU_H

#include <stddef.h>

typedef void (*el_swiglu_fn)(float *gate, const float *up, size_t n);

/* The portable reference, with libm's expf. */
void el_swiglu_ref(float *gate, const float *up, size_t n);

#endif
