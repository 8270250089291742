/* ref_k.c - portable reference dot products of Q2_K, Q3_K and Q5_K against Q8_K: integer sums
 * per sub-block weighted by the integer sub-block scales, the float scales applied once per
 * block of 256. The mins of Q2_K and Q5_K multiply the activations' sums of 16 (bsums). */
#include "kernels/blocks.h"

void el_vec_dot_q2_k_ref(int64_t n, float *s, const void *x, const void *y) {
    const el_block_q2_k *a = x;
    const el_block_q8_k *b = y;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        int32_t acc_q = 0, acc_m = 0;
        for (int sb = 0; sb < 16; sb++) {
            int32_t dot = 0;
            for (int l = 0; l < 16; l++) dot += el_k_2bit(a[i].qs, 16 * sb + l) * b[i].qs[16 * sb + l];
            acc_q += (a[i].scales[sb] & 0xF) * dot;
            acc_m += (a[i].scales[sb] >> 4) * b[i].bsums[sb];
        }
        float d = el_fp16_to_fp32(a[i].d) * b[i].d;
        float dmin = el_fp16_to_fp32(a[i].dmin) * b[i].d;
        sum += d * (float)acc_q - dmin * (float)acc_m;
    }
    *s = sum;
}

void el_vec_dot_q3_k_ref(int64_t n, float *s, const void *x, const void *y) {
    const el_block_q3_k *a = x;
    const el_block_q8_k *b = y;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        int8_t sc[16];
        el_q3_k_scales(a[i].scales, sc);
        int32_t acc = 0;
        for (int sb = 0; sb < 16; sb++) {
            int32_t dot = 0;
            for (int l = 0; l < 16; l++) dot += el_q3_k_level(&a[i], 16 * sb + l) * b[i].qs[16 * sb + l];
            acc += sc[sb] * dot;
        }
        sum += el_fp16_to_fp32(a[i].d) * b[i].d * (float)acc;
    }
    *s = sum;
}

void el_vec_dot_q5_k_ref(int64_t n, float *s, const void *x, const void *y) {
    const el_block_q5_k *a = x;
    const el_block_q8_k *b = y;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        int32_t acc_q = 0, acc_m = 0;
        for (int sb = 0; sb < 8; sb++) {
            int sc, m;
            el_q4_k_scale_min(a[i].scales, sb, &sc, &m);
            int32_t dot = 0;
            for (int l = 0; l < 32; l++) dot += el_q5_k_level(&a[i], 32 * sb + l) * b[i].qs[32 * sb + l];
            acc_q += sc * dot;
            acc_m += m * (b[i].bsums[2 * sb] + b[i].bsums[2 * sb + 1]);
        }
        float d = el_fp16_to_fp32(a[i].d) * b[i].d;
        float dmin = el_fp16_to_fp32(a[i].dmin) * b[i].d;
        sum += d * (float)acc_q - dmin * (float)acc_m;
    }
    *s = sum;
}
