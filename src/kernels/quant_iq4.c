/* quant_iq4.c - reference conversions of IQ4_NL (blocks of 32) and IQ4_XS (blocks of 256 with
 * 6-bit sub-block scales), whose 4-bit codes index a table of 16 non-uniform levels.
 *
 * to_float computes what ggml's dequantize_row_* computes, so the floats are bit for bit
 * llama.cpp's. from_float is the quantizer llama-quantize runs without an importance matrix
 * (ggml's quantize_iq4_nl / quantize_iq4_xs, weights x^2): each sub-block's scale from the
 * extreme value's grid, refined by least squares over 15 grids around it. */
#include <math.h>
#include <string.h>

#include "kernels/blocks.h"

const int8_t el_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                    1,    13,   25,  38,  53,  69,  89,  113};

enum { SUB = 32, GRIDS_EACH_SIDE = 7 };

/* The index of the level nearest to x (ties to the upper). */
static int nearest_level(float x) {
    const int8_t *v = el_iq4nl_values;
    if (x <= v[0]) return 0;
    if (x >= v[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (x < v[mid]) hi = mid;
        else lo = mid;
    }
    return x - v[hi - 1] < v[hi] - x ? hi - 1 : hi;
}

/* The weighted least-squares scale of the 32 elements against the levels a grid of inverse scale
 * id picks: *num gets sum w q x and *den sum w q^2. */
static void grid_fit(const float *x, const float *w, float id, float *num, float *den) {
    *num = *den = 0;
    for (int j = 0; j < SUB; j++) {
        float q = el_iq4nl_values[nearest_level(id * x[j])];
        *num += w[j] * q * x[j];
        *den += w[j] * q * q;
    }
}

/* The scale of one sub-block (0 for one that is all zero), ggml's search. */
static float sub_block_scale(const float *x) {
    float w[SUB], amax = 0, max = 0;
    for (int j = 0; j < SUB; j++) {
        w[j] = x[j] * x[j];
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    if (amax < 1e-15f) return 0.0f;
    float num, den;
    grid_fit(x, w, 1 / (-max / el_iq4nl_values[0]), &num, &den);
    float d = den > 0 ? num / den : 0.0f, best = d * num;
    for (int t = -GRIDS_EACH_SIDE; t <= GRIDS_EACH_SIDE; t++) {
        grid_fit(x, w, (t + el_iq4nl_values[0]) / max, &num, &den);
        if (den > 0 && num * num > best * den) {
            d = num / den;
            best = d * num;
        }
    }
    return d;
}

/* 32 elements' codes against scale d, in Q4_0's nibble order. */
static void store_codes(const float *x, float d, uint8_t qs[16]) {
    float id = d != 0.0f ? 1 / d : 0.0f;
    for (int j = 0; j < 16; j++)
        qs[j] = (uint8_t)(nearest_level(id * x[j]) | nearest_level(id * x[j + 16]) << 4);
}

void el_iq4_nl_to_float(const void *x, float *y, int64_t n) {
    const el_block_iq4_nl *b = x;
    for (int64_t i = 0; i < n / EL_QK4_0; i++, b++, y += EL_QK4_0) {
        float d = el_fp16_to_fp32(b->d);
        for (int j = 0; j < 16; j++) {
            y[j] = d * el_iq4nl_values[b->qs[j] & 0xF];
            y[j + 16] = d * el_iq4nl_values[b->qs[j] >> 4];
        }
    }
}

/* The codes are chosen against the unrounded scale, as ggml does. */
void el_iq4_nl_from_float(const float *x, void *y, int64_t n) {
    el_block_iq4_nl *b = y;
    for (int64_t i = 0; i < n / EL_QK4_0; i++, b++, x += EL_QK4_0) {
        float d = sub_block_scale(x);
        b->d = el_fp32_to_fp16(d);
        store_codes(x, d, b->qs);
    }
}

void el_iq4_xs_to_float(const void *x, float *y, int64_t n) {
    const el_block_iq4_xs *b = x;
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++) {
        float d = el_fp16_to_fp32(b->d);
        for (int s = 0; s < 8; s++, y += SUB) {
            float dl = d * el_iq4_xs_scale(b, s);
            const uint8_t *qs = b->qs + 16 * s;
            for (int j = 0; j < 16; j++) {
                y[j] = dl * el_iq4nl_values[qs[j] & 0xF];
                y[j + 16] = dl * el_iq4nl_values[qs[j] >> 4];
            }
        }
    }
}

/* The 8 sub-block scales are quantized to 6 bits against the one of largest magnitude (which
 * maps to -32), and the codes chosen against the quantized scales. */
static void iq4_xs_quantize_block(const float *x, el_block_iq4_xs *b) {
    float scales[8], max_scale = 0, amax_scale = 0;
    for (int s = 0; s < 8; s++) {
        scales[s] = sub_block_scale(x + SUB * s);
        if (fabsf(scales[s]) > amax_scale) {
            amax_scale = fabsf(scales[s]);
            max_scale = scales[s];
        }
    }
    float d = -max_scale / 32, id = d != 0.0f ? 1 / d : 0.0f;
    b->d = el_fp32_to_fp16(d);
    b->scales_h = 0;
    memset(b->scales_l, 0, sizeof b->scales_l);
    for (int s = 0; s < 8; s++) {
        int l = (int)lrintf(id * scales[s]);
        l = l < -32 ? -32 : l > 31 ? 31 : l;
        store_codes(x + SUB * s, d * l, b->qs + 16 * s);
        l += 32;
        b->scales_l[s / 2] |= (uint8_t)((l & 0xF) << 4 * (s % 2));
        b->scales_h |= (uint16_t)((l >> 4) << 2 * s);
    }
}

void el_iq4_xs_from_float(const float *x, void *y, int64_t n) {
    el_block_iq4_xs *b = y;
    for (int64_t i = 0; i < n / EL_QK_K; i++) iq4_xs_quantize_block(x + i * EL_QK_K, b + i);
}
