/* ref.c - portable reference dot products, one per weight type against its vec_dot_type.
 * Quantized ones accumulate integer products inside each (sub-)block and apply the scales once
 * per block, as the SIMD variants do; every ISA-specific kernel is tested against these. */
#include "kernels/blocks.h"

void el_vec_dot_f32_ref(int64_t n, float *s, const void *x, const void *y) {
    const float *a = x, *b = y;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += a[i] * b[i];
    *s = sum;
}

void el_vec_dot_f16_ref(int64_t n, float *s, const void *x, const void *y) {
    const uint16_t *a = x;
    const float *b = y;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += el_fp16_to_fp32(a[i]) * b[i];
    *s = sum;
}

void el_vec_dot_bf16_ref(int64_t n, float *s, const void *x, const void *y) {
    const uint16_t *a = x;
    const float *b = y;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += el_bf16_to_fp32(a[i]) * b[i];
    *s = sum;
}

void el_vec_dot_q8_0_ref(int64_t n, float *s, const void *x, const void *y) {
    const el_block_q8_0 *a = x, *b = y;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / EL_QK8_0; i++) {
        int32_t acc = 0;
        for (int j = 0; j < EL_QK8_0; j++) acc += a[i].qs[j] * b[i].qs[j];
        sum += el_fp16_to_fp32(a[i].d) * el_fp16_to_fp32(b[i].d) * (float)acc;
    }
    *s = sum;
}

void el_vec_dot_q4_0_ref(int64_t n, float *s, const void *x, const void *y) {
    const el_block_q4_0 *a = x;
    const el_block_q8_0 *b = y;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / EL_QK4_0; i++) {
        int32_t acc = 0;
        for (int j = 0; j < EL_QK4_0 / 2; j++) {
            acc += ((a[i].qs[j] & 0xF) - 8) * b[i].qs[j];
            acc += ((a[i].qs[j] >> 4) - 8) * b[i].qs[j + EL_QK4_0 / 2];
        }
        sum += el_fp16_to_fp32(a[i].d) * el_fp16_to_fp32(b[i].d) * (float)acc;
    }
    *s = sum;
}

/* sum_s (d*sc[s]*sum(q*y) - dmin*m[s]*sum(y)) * y.d; the sums of y come from bsums. */
void el_vec_dot_q4_k_ref(int64_t n, float *s, const void *x, const void *y) {
    const el_block_q4_k *a = x;
    const el_block_q8_k *b = y;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        int32_t acc_q = 0, acc_m = 0;
        for (int sb = 0; sb < 8; sb++) {
            int sc, m;
            el_q4_k_scale_min(a[i].scales, sb, &sc, &m);
            const uint8_t *q = a[i].qs + 32 * (sb / 2);
            const int8_t *q8 = b[i].qs + 32 * sb;
            int shift = 4 * (sb % 2);
            int32_t dot = 0;
            for (int l = 0; l < 32; l++) dot += ((q[l] >> shift) & 0xF) * q8[l];
            acc_q += sc * dot;
            acc_m += m * (b[i].bsums[2 * sb] + b[i].bsums[2 * sb + 1]);
        }
        float d = el_fp16_to_fp32(a[i].d) * b[i].d;
        float dmin = el_fp16_to_fp32(a[i].dmin) * b[i].d;
        sum += d * (float)acc_q - dmin * (float)acc_m;
    }
    *s = sum;
}

void el_vec_dot_q6_k_ref(int64_t n, float *s, const void *x, const void *y) {
    const el_block_q6_k *a = x;
    const el_block_q8_k *b = y;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        int32_t acc = 0;
        for (int h = 0; h < 2; h++) { /* two halves of 128, see el_block_q6_k */
            const uint8_t *ql = a[i].ql + 64 * h, *qh = a[i].qh + 32 * h;
            const int8_t *q8 = b[i].qs + 128 * h, *sc = a[i].scales + 8 * h;
            for (int quarter = 0; quarter < 4; quarter++) {
                const uint8_t *lo = ql + 32 * (quarter & 1);
                int lo_shift = 4 * (quarter >> 1), hi_shift = 2 * quarter;
                for (int g = 0; g < 2; g++) { /* two sub-blocks of 16 per quarter */
                    int32_t dot = 0;
                    for (int l = 16 * g; l < 16 * g + 16; l++) {
                        int q = ((lo[l] >> lo_shift) & 0xF) | (((qh[l] >> hi_shift) & 3) << 4);
                        dot += (q - 32) * q8[32 * quarter + l];
                    }
                    acc += sc[2 * quarter + g] * dot;
                }
            }
        }
        sum += el_fp16_to_fp32(a[i].d) * b[i].d * (float)acc;
    }
    *s = sum;
}
