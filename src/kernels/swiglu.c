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
