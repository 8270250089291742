/* ref_iq4.c - portable reference dot products of IQ4_NL (against Q8_0) and IQ4_XS (against
 * Q8_K): the table's levels are integers, so the sums stay integer inside a block and the scales
 * are applied once per block (IQ4_XS's 6-bit sub-block scales as integers). */
#include "kernels/blocks.h"

/* The 32 elements of 16 bytes of codes (Q4_0's nibble order) times the activations. */
static int32_t dot_codes(const uint8_t *qs, const int8_t *q8) {
    int32_t sum = 0;
    for (int j = 0; j < 16; j++)
        sum += el_iq4nl_values[qs[j] & 0xF] * q8[j] + el_iq4nl_values[qs[j] >> 4] * q8[j + 16];
    return sum;
}

void el_vec_dot_iq4_nl_ref(int64_t n, float *s, const void *x, const void *y) {
    const el_block_iq4_nl *a = x;
    const el_block_q8_0 *b = y;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / EL_QK4_0; i++)
        sum += el_fp16_to_fp32(a[i].d) * el_fp16_to_fp32(b[i].d) * (float)dot_codes(a[i].qs, b[i].qs);
    *s = sum;
}

void el_vec_dot_iq4_xs_ref(int64_t n, float *s, const void *x, const void *y) {
    const el_block_iq4_xs *a = x;
    const el_block_q8_k *b = y;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        int32_t acc = 0;
        for (int sb = 0; sb < 8; sb++) {
            acc += el_iq4_xs_scale(&a[i], sb) * dot_codes(a[i].qs + 16 * sb, b[i].qs + 32 * sb);
        }
        sum += el_fp16_to_fp32(a[i].d) * b[i].d * (float)acc;
    }
    *s = sum;
}
