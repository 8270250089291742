/* swiglu.c - the portable reference of swiglu.h. */
#include "kernels/swiglu.h"

#include <math.h>

void el_swiglu_ref(float *gate, const float *up, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float g = gate[i];
        g *= 1.0f / (1.0f + expf(-g));
        gate[i] = g * up[i];
    }
}

void el_geglu_ref(float *gate, const float *up, size_t n) {
    const float c = 0.7978845608028654f; /* sqrt(2 / pi) */
    for (size_t i = 0; i < n; i++) {
        float x = gate[i];
        gate[i] = 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x))) * up[i];
    }
}
