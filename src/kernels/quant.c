/* quant.c - reference conversions between float and the float types, Q8_0, Q4_0, Q4_K, Q6_K and
 * Q8_K (to_float / from_float); the other ggml types are in quant_legacy.c, quant_k.c and
 * quant_iq4.c, which follow llama.cpp's quantizers.
 *
 * These quantizers are edgelora's own, of reference quality: a scale from the extreme value of
 * each block (and for the K-quants a second-level quantization of the sub-block scales), round
 * to nearest. They only need to be correct and reasonable; the files we run are quantized by
 * llama.cpp. */
#include <math.h>
#include <string.h>

#include "kernels/blocks.h"

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

void el_q8_0_to_float(const void *x, float *y, int64_t n) {
    const el_block_q8_0 *b = x;
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, y += EL_QK8_0) {
        float d = el_fp16_to_fp32(b->d);
        for (int j = 0; j < EL_QK8_0; j++) y[j] = d * b->qs[j];
    }
}

void el_q8_0_from_float(const float *x, void *y, int64_t n) {
    el_block_q8_0 *b = y;
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, x += EL_QK8_0) {
        float d = fabsf(signed_absmax(x, EL_QK8_0)) / 127.0f;
        float id = d > 0.0f ? 1.0f / d : 0.0f;
        b->d = el_fp32_to_fp16(d);
        for (int j = 0; j < EL_QK8_0; j++) b->qs[j] = (int8_t)clampi((int)lrintf(x[j] * id), -127, 127);
    }
}

void el_q4_0_to_float(const void *x, float *y, int64_t n) {
    const el_block_q4_0 *b = x;
    for (int64_t i = 0; i < n / EL_QK4_0; i++, b++, y += EL_QK4_0) {
        float d = el_fp16_to_fp32(b->d);
        for (int j = 0; j < EL_QK4_0 / 2; j++) {
            y[j] = d * ((b->qs[j] & 0xF) - 8);
            y[j + EL_QK4_0 / 2] = d * ((b->qs[j] >> 4) - 8);
        }
    }
}

/* The extreme value maps to -8 (the end of the range with one more level), so the full
 * 16 levels are used: d = max / -8. */
void el_q4_0_from_float(const float *x, void *y, int64_t n) {
    el_block_q4_0 *b = y;
    for (int64_t i = 0; i < n / EL_QK4_0; i++, b++, x += EL_QK4_0) {
        float d = signed_absmax(x, EL_QK4_0) / -8.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = el_fp32_to_fp16(d);
        for (int j = 0; j < EL_QK4_0 / 2; j++) {
            int lo = clampi((int)lrintf(x[j] * id) + 8, 0, 15);
            int hi = clampi((int)lrintf(x[j + EL_QK4_0 / 2] * id) + 8, 0, 15);
            b->qs[j] = (uint8_t)(lo | (hi << 4));
        }
    }
}

void el_q4_k_to_float(const void *x, float *y, int64_t n) {
    const el_block_q4_k *b = x;
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++) {
        float d = el_fp16_to_fp32(b->d), dmin = el_fp16_to_fp32(b->dmin);
        for (int c = 0; c < 4; c++) { /* 64 elements: two sub-blocks share 32 bytes */
            const uint8_t *q = b->qs + 32 * c;
            int sc0, m0, sc1, m1;
            el_q4_k_scale_min(b->scales, 2 * c, &sc0, &m0);
            el_q4_k_scale_min(b->scales, 2 * c + 1, &sc1, &m1);
            for (int l = 0; l < 32; l++) {
                *y++ = d * sc0 * (q[l] & 0xF) - dmin * m0;
            }
            for (int l = 0; l < 32; l++) {
                *y++ = d * sc1 * (q[l] >> 4) - dmin * m1;
            }
        }
    }
}

/* Each sub-block of 32 gets the affine map x ~ scale*q - min over q in 0..15 that spans its
 * range (min clipped at 0 from above so it is stored unsigned); scales and mins are then
 * quantized to 6 bits against the block's largest, and the elements against the result. */
static void q4_k_quantize_block(const float *x, el_block_q4_k *b) {
    float scale[8], mn[8], top[8], max_scale = 0.0f, max_mn = 0.0f;
    for (int s = 0; s < 8; s++) {
        float lo = x[32 * s], hi = x[32 * s];
        for (int l = 1; l < 32; l++) {
            lo = fminf(lo, x[32 * s + l]);
            hi = fmaxf(hi, x[32 * s + l]);
        }
        lo = fminf(lo, 0.0f);
        scale[s] = (hi - lo) / 15.0f;
        mn[s] = -lo;
        top[s] = hi;
        max_scale = fmaxf(max_scale, scale[s]);
        max_mn = fmaxf(max_mn, mn[s]);
    }
    float d = max_scale / 63.0f, dmin = max_mn / 63.0f;
    b->d = el_fp32_to_fp16(d);
    b->dmin = el_fp32_to_fp16(dmin);
    d = el_fp16_to_fp32(b->d); /* quantize against what the reader will see */
    dmin = el_fp16_to_fp32(b->dmin);
    int ls[8], lm[8];
    for (int s = 0; s < 8; s++) {
        /* round the min up, so that the sub-block's lowest value stays reachable, and let the
         * scale span from there to the top */
        lm[s] = dmin > 0.0f ? clampi((int)ceilf(mn[s] / dmin - 1e-4f), 0, 63) : 0;
        float span = (top[s] + dmin * lm[s]) / 15.0f;
        ls[s] = d > 0.0f ? clampi((int)lrintf(span / d), 0, 63) : 0;
    }
    el_q4_k_pack_scales_mins(ls, lm, b->scales);
    memset(b->qs, 0, sizeof b->qs);
    for (int s = 0; s < 8; s++) {
        float sc = d * ls[s], m = dmin * lm[s];
        float isc = sc > 0.0f ? 1.0f / sc : 0.0f;
        for (int l = 0; l < 32; l++) {
            int q = clampi((int)lrintf((x[32 * s + l] + m) * isc), 0, 15);
            int byte = 32 * (s / 2) + l;
            b->qs[byte] |= (uint8_t)(s % 2 ? q << 4 : q);
        }
    }
}

void el_q4_k_from_float(const float *x, void *y, int64_t n) {
    el_block_q4_k *b = y;
    for (int64_t i = 0; i < n / EL_QK_K; i++) q4_k_quantize_block(x + i * EL_QK_K, b + i);
}

/* Where element e (0..255) of a Q6_K block lives: its byte in ql and whether it is the high
 * nibble, and its byte and bit shift in qh (see el_block_q6_k). */
static void q6_k_locate(int e, int *ql_byte, int *ql_shift, int *qh_byte, int *qh_shift) {
    int half = e / 128, r = e % 128, l = r % 32, quarter = r / 32;
    *ql_byte = 64 * half + l + 32 * (quarter & 1);
    *ql_shift = 4 * (quarter >> 1);
    *qh_byte = 32 * half + l;
    *qh_shift = 2 * quarter;
}

void el_q6_k_to_float(const void *x, float *y, int64_t n) {
    const el_block_q6_k *b = x;
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++, y += EL_QK_K) {
        float d = el_fp16_to_fp32(b->d);
        for (int e = 0; e < EL_QK_K; e++) {
            int qlb, qls, qhb, qhs;
            q6_k_locate(e, &qlb, &qls, &qhb, &qhs);
            int q = ((b->ql[qlb] >> qls) & 0xF) | (((b->qh[qhb] >> qhs) & 3) << 4);
            y[e] = d * b->scales[e / 16] * (q - 32);
        }
    }
}

/* Sub-blocks of 16 map their extreme value to -32 (like Q4_0); the 16 scales are quantized to
 * int8 against the largest. */
static void q6_k_quantize_block(const float *x, el_block_q6_k *b) {
    float scale[16], max_abs = 0.0f;
    for (int s = 0; s < 16; s++) {
        scale[s] = signed_absmax(x + 16 * s, 16) / -32.0f;
        max_abs = fmaxf(max_abs, fabsf(scale[s]));
    }
    float d = max_abs / 127.0f;
    b->d = el_fp32_to_fp16(d);
    d = el_fp16_to_fp32(b->d);
    memset(b->ql, 0, sizeof b->ql);
    memset(b->qh, 0, sizeof b->qh);
    for (int s = 0; s < 16; s++) {
        int ls = d > 0.0f ? clampi((int)lrintf(scale[s] / d), -127, 127) : 0;
        b->scales[s] = (int8_t)ls;
        float sc = d * ls, isc = sc != 0.0f ? 1.0f / sc : 0.0f;
        for (int l = 0; l < 16; l++) {
            int e = 16 * s + l;
            int q = clampi((int)lrintf(x[e] * isc), -32, 31) + 32;
            int qlb, qls, qhb, qhs;
            q6_k_locate(e, &qlb, &qls, &qhb, &qhs);
            b->ql[qlb] |= (uint8_t)((q & 0xF) << qls);
            b->qh[qhb] |= (uint8_t)((q >> 4) << qhs);
        }
    }
}

void el_q6_k_from_float(const float *x, void *y, int64_t n) {
    el_block_q6_k *b = y;
    for (int64_t i = 0; i < n / EL_QK_K; i++) q6_k_quantize_block(x + i * EL_QK_K, b + i);
}

void el_q8_k_to_float(const void *x, float *y, int64_t n) {
    const el_block_q8_k *b = x;
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++, y += EL_QK_K)
        for (int j = 0; j < EL_QK_K; j++) y[j] = b->d * b->qs[j];
}

void el_q8_k_from_float(const float *x, void *y, int64_t n) {
    el_block_q8_k *b = y;
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++, x += EL_QK_K) {
        float d = fabsf(signed_absmax(x, EL_QK_K)) / 127.0f;
        float id = d > 0.0f ? 1.0f / d : 0.0f;
        b->d = d;
        for (int j = 0; j < EL_QK_K; j++) b->qs[j] = (int8_t)clampi((int)lrintf(x[j] * id), -127, 127);
        for (int g = 0; g < EL_QK_K / 16; g++) {
            int sum = 0;
            for (int j = 0; j < 16; j++) sum += b->qs[16 * g + j];
            b->bsums[g] = (int16_t)sum;
        }
    }
}
