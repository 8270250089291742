/* ref_legacy.c - portable reference dot products of Q4_1 and Q5_1 (against Q8_1) and Q5_0
 * (against Q8_0): an integer sum inside each block, the scales applied once per block. The
 * offset m of Q4_1 and Q5_1 multiplies the activation block's sum, which Q8_1 carries
 * (s = d * sum q), so it costs one multiply a block. */
#include "kernels/blocks.h"

enum { HALF = EL_QK4_0 / 2 };

/* The sum of the nibbles (plus fifth bits, for the Q5 types) times the activations. */
static int32_t dot_levels(const uint8_t *qs, uint32_t fifth, int fifth_offset, const int8_t *q8) {
    int32_t sum = 0;
    for (int j = 0; j < HALF; j++) {
        int q0 = (qs[j] & 0xF) | ((fifth >> j) & 1) << 4;
        int q1 = (qs[j] >> 4) | ((fifth >> (j + HALF)) & 1) << 4;
        sum += (q0 - fifth_offset) * q8[j] + (q1 - fifth_offset) * q8[j + HALF];
    }
    return sum;
}

void el_vec_dot_q4_1_ref(int64_t n, float *s, const void *x, const void *y) {
    const el_block_q4_1 *a = x;
    const el_block_q8_1 *b = y;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / EL_QK4_0; i++) {
        int32_t acc = dot_levels(a[i].qs, 0, 0, b[i].qs);
        sum += el_fp16_to_fp32(a[i].d) * el_fp16_to_fp32(b[i].d) * (float)acc +
               el_fp16_to_fp32(a[i].m) * el_fp16_to_fp32(b[i].s);
    }
    *s = sum;
}

void el_vec_dot_q5_1_ref(int64_t n, float *s, const void *x, const void *y) {
    const el_block_q5_1 *a = x;
    const el_block_q8_1 *b = y;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / EL_QK4_0; i++) {
        int32_t acc = dot_levels(a[i].qs, el_load_le32(a[i].qh), 0, b[i].qs);
        sum += el_fp16_to_fp32(a[i].d) * el_fp16_to_fp32(b[i].d) * (float)acc +
               el_fp16_to_fp32(a[i].m) * el_fp16_to_fp32(b[i].s);
    }
    *s = sum;
}

void el_vec_dot_q5_0_ref(int64_t n, float *s, const void *x, const void *y) {
    const el_block_q5_0 *a = x;
    const el_block_q8_0 *b = y;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / EL_QK4_0; i++) {
        int32_t acc = dot_levels(a[i].qs, el_load_le32(a[i].qh), 16, b[i].qs);
        sum += el_fp16_to_fp32(a[i].d) * el_fp16_to_fp32(b[i].d) * (float)acc;
    }
    *s = sum;
}
