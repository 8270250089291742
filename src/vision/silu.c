/* silu.c - the SiLU activation x * sigmoid(x). */
#include "vision/layers.h"

#include <math.h>

void el_silu_forward(float *y, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + expf(-x[i]));
}

/* silu'(x) = s (1 + x (1 - s)) with s = sigmoid(x) */
void el_silu_backward(float *dx, const float *dy, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float s = 1.0f / (1.0f + expf(-x[i]));
        dx[i] += dy[i] * s * (1.0f + x[i] * (1.0f - s));
    }
}
