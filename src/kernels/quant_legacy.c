/* quant_legacy.c - reference conversions of ggml's blocks of 32: Q4_0 and Q8_0, those with an
 * offset or a fifth bit (Q4_1, Q5_0, Q5_1), and Q8_1 (the activations of Q4_1 and Q5_1).
 *
 * to_float computes what ggml's dequantize_row_* computes, operation for operation, so the
 * floats are bit for bit llama.cpp's. from_float is ggml's reference quantizer
 * (quantize_row_*_ref), the one llama-quantize uses without an importance matrix, so the blocks
 * we write are the blocks llama.cpp would write; Q8_0 alone has two quantizers, since it is
 * both a weight type and the activations of most others, and llama.cpp rounds the two apart
 * (see el_q8_0_from_float). */
#include <float.h>
#include <math.h>

#include "kernels/blocks.h"
#include "kernels/edge.h"

enum { HALF = EL_QK4_0 / 2 };

/* The fifth bits of a block: bit j of the little-endian word is element j's. */
static uint32_t fifth_bits(const uint8_t qh[4]) { return el_load_le32(qh); }

static void store_fifth_bits(uint8_t qh[4], uint32_t bits) {
    for (int i = 0; i < 4; i++) qh[i] = (uint8_t)(bits >> 8 * i);
}

/* A non-negative value truncated, capped at top. */
static int truncated_capped(float x, int top) {
    int q = (int)x;
    return q > top ? top : q;
}

/* ggml's rounding of a value known to be at least -0.5: x + 0.5 truncated, capped at top. */
static int round_up_capped(float x, int top) { return truncated_capped(x + 0.5f, top); }

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static void block_min_max(const float *x, float *min, float *max) {
    *min = FLT_MAX;
    *max = -FLT_MAX;
    for (int j = 0; j < EL_QK4_0; j++) {
        if (x[j] < *min) *min = x[j];
        if (x[j] > *max) *max = x[j];
    }
}

void el_q8_0_to_float(const void *x, float *y, int64_t n) {
    const el_block_q8_0 *b = x;
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, y += EL_QK8_0) {
        float d = el_fp16_to_fp32(b->d);
        for (int j = 0; j < EL_QK8_0; j++) y[j] = b->qs[j] * d;
    }
}

/* Activations: d = amax / 127, halves rounded to even. llama.cpp's CPU backend quantizes its
 * activations so on x86 and ARM (quantize_row_q8_0's SIMD rounds to nearest even; only its
 * scalar fallback, the reference quantizer, rounds halves away from zero), and our SIMD
 * quantizers give these bytes (docs/formats.md). */
void el_q8_0_from_float(const float *x, void *y, int64_t n) {
    el_block_q8_0 *b = y;
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, x += EL_QK8_0) {
        float amax = 0.0f;
        for (int j = 0; j < EL_QK8_0; j++) amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127, id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = el_fp32_to_fp16(d);
        for (int j = 0; j < EL_QK8_0; j++) b->qs[j] = (int8_t)clampi((int)lrintf(x[j] * id), -127, 127);
    }
}

/* Activations at a static scale d (a profile's): every block holds d as its f16 scale and the
 * values on the grid of that f16 value (clipped at +-127), so the block's dequantization is the
 * grid the values were rounded to. */
void el_q8_0_from_float_static(const float *x, void *y, int64_t n, float d) {
    el_block_q8_0 *b = y;
    uint16_t dh = el_fp32_to_fp16(d);
    float step = el_static_step(EL_TYPE_Q8_0, d);
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, x += EL_QK8_0) {
        b->d = dh;
        el_i8_quantize(x, b->qs, EL_QK8_0, step);
    }
}

/* Weights, as llama-quantize writes them (quantize_row_q8_0_ref): the same scale, halves
 * rounded away from zero. */
void el_q8_0_weights_from_float(const float *x, void *y, int64_t n) {
    el_block_q8_0 *b = y;
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, x += EL_QK8_0) {
        float amax = 0.0f;
        for (int j = 0; j < EL_QK8_0; j++) amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127, id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = el_fp32_to_fp16(d);
        for (int j = 0; j < EL_QK8_0; j++) b->qs[j] = (int8_t)roundf(x[j] * id);
    }
}

void el_q4_0_to_float(const void *x, float *y, int64_t n) {
    const el_block_q4_0 *b = x;
    for (int64_t i = 0; i < n / EL_QK4_0; i++, b++, y += EL_QK4_0) {
        float d = el_fp16_to_fp32(b->d);
        for (int j = 0; j < HALF; j++) {
            y[j] = ((b->qs[j] & 0xF) - 8) * d;
            y[j + HALF] = ((b->qs[j] >> 4) - 8) * d;
        }
    }
}

/* The extreme value maps to -8, the end of the range with one more level, so all 16 levels are
 * used: d = max / -8. */
void el_q4_0_from_float(const float *x, void *y, int64_t n) {
    el_block_q4_0 *b = y;
    for (int64_t i = 0; i < n / EL_QK4_0; i++, b++, x += EL_QK4_0) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < EL_QK4_0; j++) {
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        }
        float d = max / -8, id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = el_fp32_to_fp16(d);
        for (int j = 0; j < HALF; j++) {
            /* x * id is at least -8: the offset and the rounding half in one addition */
            int q0 = truncated_capped(x[j] * id + 8.5f, 15);
            int q1 = truncated_capped(x[j + HALF] * id + 8.5f, 15);
            b->qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

void el_q4_1_to_float(const void *x, float *y, int64_t n) {
    const el_block_q4_1 *b = x;
    for (int64_t i = 0; i < n / EL_QK4_0; i++, b++, y += EL_QK4_0) {
        float d = el_fp16_to_fp32(b->d), m = el_fp16_to_fp32(b->m);
        for (int j = 0; j < HALF; j++) {
            y[j] = (b->qs[j] & 0xF) * d + m;
            y[j + HALF] = (b->qs[j] >> 4) * d + m;
        }
    }
}

/* The block's range in 16 steps from its minimum. */
void el_q4_1_from_float(const float *x, void *y, int64_t n) {
    el_block_q4_1 *b = y;
    for (int64_t i = 0; i < n / EL_QK4_0; i++, b++, x += EL_QK4_0) {
        float min, max;
        block_min_max(x, &min, &max);
        float d = (max - min) / 15, id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = el_fp32_to_fp16(d);
        b->m = el_fp32_to_fp16(min);
        for (int j = 0; j < HALF; j++) {
            int lo = round_up_capped((x[j] - min) * id, 15);
            int hi = round_up_capped((x[j + HALF] - min) * id, 15);
            b->qs[j] = (uint8_t)(lo | hi << 4);
        }
    }
}

void el_q5_0_to_float(const void *x, float *y, int64_t n) {
    const el_block_q5_0 *b = x;
    for (int64_t i = 0; i < n / EL_QK4_0; i++, b++, y += EL_QK4_0) {
        float d = el_fp16_to_fp32(b->d);
        uint32_t qh = fifth_bits(b->qh);
        for (int j = 0; j < HALF; j++) {
            int q0 = ((b->qs[j] & 0xF) | ((qh >> j) & 1) << 4) - 16;
            int q1 = ((b->qs[j] >> 4) | ((qh >> (j + HALF)) & 1) << 4) - 16;
            y[j] = q0 * d;
            y[j + HALF] = q1 * d;
        }
    }
}

/* Like Q4_0: the extreme value maps to -16, the end of the range with one more level. */
void el_q5_0_from_float(const float *x, void *y, int64_t n) {
    el_block_q5_0 *b = y;
    for (int64_t i = 0; i < n / EL_QK4_0; i++, b++, x += EL_QK4_0) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < EL_QK4_0; j++) {
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        }
        float d = max / -16, id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = el_fp32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < HALF; j++) {
            /* x * id is at least -16: the offset and the rounding half in one addition */
            int q0 = truncated_capped(x[j] * id + 16.5f, 31);
            int q1 = truncated_capped(x[j + HALF] * id + 16.5f, 31);
            b->qs[j] = (uint8_t)((q0 & 0xF) | (q1 & 0xF) << 4);
            qh |= (uint32_t)(q0 >> 4) << j | (uint32_t)(q1 >> 4) << (j + HALF);
        }
        store_fifth_bits(b->qh, qh);
    }
}

void el_q5_1_to_float(const void *x, float *y, int64_t n) {
    const el_block_q5_1 *b = x;
    for (int64_t i = 0; i < n / EL_QK4_0; i++, b++, y += EL_QK4_0) {
        float d = el_fp16_to_fp32(b->d), m = el_fp16_to_fp32(b->m);
        uint32_t qh = fifth_bits(b->qh);
        for (int j = 0; j < HALF; j++) {
            int q0 = (b->qs[j] & 0xF) | ((qh >> j) & 1) << 4;
            int q1 = (b->qs[j] >> 4) | ((qh >> (j + HALF)) & 1) << 4;
            y[j] = q0 * d + m;
            y[j + HALF] = q1 * d + m;
        }
    }
}

void el_q5_1_from_float(const float *x, void *y, int64_t n) {
    el_block_q5_1 *b = y;
    for (int64_t i = 0; i < n / EL_QK4_0; i++, b++, x += EL_QK4_0) {
        float min, max;
        block_min_max(x, &min, &max);
        float d = (max - min) / 31, id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = el_fp32_to_fp16(d);
        b->m = el_fp32_to_fp16(min);
        uint32_t qh = 0;
        for (int j = 0; j < HALF; j++) {
            int q0 = round_up_capped((x[j] - min) * id, 31);
            int q1 = round_up_capped((x[j + HALF] - min) * id, 31);
            b->qs[j] = (uint8_t)((q0 & 0xF) | (q1 & 0xF) << 4);
            qh |= (uint32_t)(q0 >> 4) << j | (uint32_t)(q1 >> 4) << (j + HALF);
        }
        store_fifth_bits(b->qh, qh);
    }
}

void el_q8_1_to_float(const void *x, float *y, int64_t n) {
    const el_block_q8_1 *b = x;
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, y += EL_QK8_0) {
        float d = el_fp16_to_fp32(b->d);
        for (int j = 0; j < EL_QK8_0; j++) y[j] = b->qs[j] * d;
    }
}

void el_q8_1_from_float(const float *x, void *y, int64_t n) {
    el_block_q8_1 *b = y;
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, x += EL_QK8_0) {
        float amax = 0.0f;
        for (int j = 0; j < EL_QK8_0; j++) amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127, id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = el_fp32_to_fp16(d);
        int sum = 0;
        for (int j = 0; j < EL_QK8_0; j++) {
            b->qs[j] = (int8_t)roundf(x[j] * id);
            sum += b->qs[j];
        }
        b->s = el_fp32_to_fp16(sum * d);
    }
}

/* As el_q8_0_from_float_static, with s = d * sum(q) as above. */
void el_q8_1_from_float_static(const float *x, void *y, int64_t n, float d) {
    el_block_q8_1 *b = y;
    uint16_t dh = el_fp32_to_fp16(d);
    float step = el_static_step(EL_TYPE_Q8_1, d);
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, x += EL_QK8_0) {
        b->d = dh;
        b->s = el_fp32_to_fp16((float)el_i8_quantize(x, b->qs, EL_QK8_0, step) * step);
    }
}
