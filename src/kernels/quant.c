/* quant.c - reference conversions between float and the float types and Q8_K, the activations
 * of the K-quants (to_float / from_float); ggml's blocks of 32 are in quant_legacy.c, the
 * K-quants in quant_k.c and the non-linear types in quant_iq4.c. */
#include <math.h>
#include <string.h>

#include "kernels/blocks.h"
#include "kernels/edge.h"

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The element of largest magnitude, with its sign. */
static float signed_absmax(const float *x, int n) {
    float m = 0.0f;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > fabsf(m)) m = x[i];
    return m;
}

void el_f32_to_float(const void *x, float *y, int64_t n) { memcpy(y, x, (size_t)n * sizeof *y); }
void el_f32_from_float(const float *x, void *y, int64_t n) { memcpy(y, x, (size_t)n * sizeof *x); }

void el_f16_to_float(const void *x, float *y, int64_t n) {
    const uint16_t *h = x;
    for (int64_t i = 0; i < n; i++) y[i] = el_fp16_to_fp32(h[i]);
}

void el_f16_from_float(const float *x, void *y, int64_t n) {
    uint16_t *h = y;
    for (int64_t i = 0; i < n; i++) h[i] = el_fp32_to_fp16(x[i]);
}

void el_bf16_to_float(const void *x, float *y, int64_t n) {
    const uint16_t *h = x;
    for (int64_t i = 0; i < n; i++) y[i] = el_bf16_to_fp32(h[i]);
}

void el_bf16_from_float(const float *x, void *y, int64_t n) {
    uint16_t *h = y;
    for (int64_t i = 0; i < n; i++) h[i] = el_fp32_to_bf16(x[i]);
}

void el_q8_k_to_float(const void *x, float *y, int64_t n) {
    const el_block_q8_k *b = x;
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++, y += EL_QK_K)
        for (int j = 0; j < EL_QK_K; j++) y[j] = b->d * b->qs[j];
}

/* The sums of each 16 values of a block, which the K-quants' dot products take. */
static void q8_k_sums(el_block_q8_k *b) {
    for (int g = 0; g < EL_QK_K / 16; g++) {
        int sum = 0;
        for (int j = 0; j < 16; j++) sum += b->qs[16 * g + j];
        b->bsums[g] = (int16_t)sum;
    }
}

float el_static_step(el_type act, float d) {
    return act == EL_TYPE_Q8_0 || act == EL_TYPE_Q8_1 ? el_fp16_to_fp32(el_fp32_to_fp16(d)) : d;
}

/* Activations at a static scale d (a profile's), which a Q8_K block holds as it is. */
void el_q8_k_from_float_static(const float *x, void *y, int64_t n, float d) {
    el_block_q8_k *b = y;
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++, x += EL_QK_K) {
        b->d = d;
        el_i8_quantize(x, b->qs, EL_QK_K, d);
        q8_k_sums(b);
    }
}

void el_q8_k_from_float(const float *x, void *y, int64_t n) {
    el_block_q8_k *b = y;
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++, x += EL_QK_K) {
        float d = fabsf(signed_absmax(x, EL_QK_K)) / 127.0f;
        float id = d > 0.0f ? 1.0f / d : 0.0f;
        b->d = d;
        for (int j = 0; j < EL_QK_K; j++) b->qs[j] = (int8_t)clampi((int)lrintf(x[j] * id), -127, 127);
        q8_k_sums(b);
    }
}
