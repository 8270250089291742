/* edge_ref.c - reference conversions and dot products of edgelora's integer types (edge.h).
 * Quantizers are symmetric round-to-nearest: d = amax / 127 (int8), amax / 32767 (int16) or
 * amax / 7 (int4). */
#include <math.h>
#include <string.h>

#include "kernels/edge.h"

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static float absmax(const float *x, int64_t n) {
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++) m = fmaxf(m, fabsf(x[i]));
    return m;
}

/* Clamped before rounding (the same result as after), so that lrintf never sees a value out of
 * range, a static scale's activations included; a NaN gives -127, as the x86 kernels' max does. */
int32_t el_i8_quantize(const float *x, int8_t *q, int64_t n, float d) {
    float id = d > 0.0f ? 1.0f / d : 0.0f;
    int32_t sum = 0;
    for (int64_t i = 0; i < n; i++) {
        float v = x[i] * id;
        v = v > -127.0f ? v : -127.0f;
        q[i] = (int8_t)lrintf(v < 127.0f ? v : 127.0f);
        sum += q[i];
    }
    return sum;
}

/* 32 elements into an int4 chunk against scale d, symmetric: -7..7 stored as nibble - 8. */
static void quantize_chunk_i4(const float *x, uint8_t *qs, float d) {
    float id = d > 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < EL_QK_EDGE / 2; j++) {
        int lo = clampi((int)lrintf(x[j] * id), -7, 7) + 8;
        int hi = clampi((int)lrintf(x[j + EL_QK_EDGE / 2] * id), -7, 7) + 8;
        qs[j] = (uint8_t)(lo | (hi << 4));
    }
}

static void dequantize_chunk_i4(const uint8_t *qs, float d, float *y) {
    for (int j = 0; j < EL_QK_EDGE / 2; j++) {
        y[j] = d * ((qs[j] & 0xF) - 8);
        y[j + EL_QK_EDGE / 2] = d * ((qs[j] >> 4) - 8);
    }
}

/* sum (nibble - 8) * a over one int4 chunk. */
static int32_t dot_chunk_i4(const uint8_t *qs, const int8_t *a) {
    int32_t acc = 0;
    for (int j = 0; j < EL_QK_EDGE / 2; j++) {
        acc += ((qs[j] & 0xF) - 8) * a[j];
        acc += ((qs[j] >> 4) - 8) * a[j + EL_QK_EDGE / 2];
    }
    return acc;
}

void el_a8_to_float(const void *x, float *y, int64_t n) {
    el_a8_header h;
    memcpy(&h, x, sizeof h);
    const int8_t *q = (const int8_t *)x + sizeof h;
    for (int64_t i = 0; i < n; i++) y[i] = h.d * q[i];
}

void el_a8_from_float(const float *x, void *y, int64_t n) {
    el_a8_header h = {.d = absmax(x, n) / 127.0f};
    h.sum = el_i8_quantize(x, (int8_t *)y + sizeof h, n, h.d);
    memcpy(y, &h, sizeof h);
}

void el_a8_from_float_static(const float *x, void *y, int64_t n, float d) {
    el_a8_header h = {.d = d};
    h.sum = el_i8_quantize(x, (int8_t *)y + sizeof h, n, d);
    memcpy(y, &h, sizeof h);
}

void el_a16_to_float(const void *x, float *y, int64_t n) {
    el_a16_header h;
    memcpy(&h, x, sizeof h);
    const char *q = (const char *)x + sizeof h;
    for (int64_t i = 0; i < n; i++) {
        int16_t v;
        memcpy(&v, q + 2 * i, sizeof v);
        y[i] = h.d * v;
    }
}

void el_a16_from_float(const float *x, void *y, int64_t n) {
    el_a16_header h = {.d = absmax(x, n) / 32767.0f};
    float id = h.d > 0.0f ? 1.0f / h.d : 0.0f;
    char *q = (char *)y + sizeof h;
    for (int64_t i = 0; i < n; i++) {
        int16_t v = (int16_t)clampi((int)lrintf(x[i] * id), -32767, 32767);
        memcpy(q + 2 * i, &v, sizeof v);
    }
    memcpy(y, &h, sizeof h);
}

void el_a16_from_float_static(const float *x, void *y, int64_t n, float d) {
    el_a16_header h = {.d = d};
    float id = 1.0f / d;
    char *q = (char *)y + sizeof h;
    /* clamped before rounding, as el_i8_quantize; adding and taking away 1.5 * 2^23 rounds to
     * the nearest integer, ties to even, as lrintf does, without its call (a loop the compiler
     * vectorizes: the image model's integer convolutions quantize every pixel row) */
    for (int64_t i = 0; i < n; i++) {
        float v = x[i] * id;
        v = v > -32767.0f ? v : -32767.0f;
        v = v < 32767.0f ? v : 32767.0f;
        int16_t r = (int16_t)((v + 12582912.0f) - 12582912.0f);
        memcpy(q + 2 * i, &r, sizeof r);
    }
    memcpy(y, &h, sizeof h);
}

void el_w8_to_float(const void *x, float *y, int64_t n) {
    float d = el_edge_row_scale(x);
    const int8_t *q = (const int8_t *)x + sizeof d;
    for (int64_t i = 0; i < n; i++) y[i] = d * q[i];
}

void el_w8_from_float(const float *x, void *y, int64_t n) {
    float d = absmax(x, n) / 127.0f;
    memcpy(y, &d, sizeof d);
    el_i8_quantize(x, (int8_t *)y + sizeof d, n, d);
}

void el_w4_to_float(const void *x, float *y, int64_t n) {
    float d = el_edge_row_scale(x);
    const uint8_t *qs = (const uint8_t *)x + sizeof d;
    for (int64_t c = 0; c < n / EL_QK_EDGE; c++)
        dequantize_chunk_i4(qs + c * (EL_QK_EDGE / 2), d, y + c * EL_QK_EDGE);
}

void el_w4_from_float(const float *x, void *y, int64_t n) {
    float d = absmax(x, n) / 7.0f;
    memcpy(y, &d, sizeof d);
    uint8_t *qs = (uint8_t *)y + sizeof d;
    for (int64_t c = 0; c < n / EL_QK_EDGE; c++)
        quantize_chunk_i4(x + c * EL_QK_EDGE, qs + c * (EL_QK_EDGE / 2), d);
}

/* W4G blocks of g elements: fp16 d, then g / 32 chunks. */
static void w4g_to_float(const void *x, float *y, int64_t n, int g) {
    const uint8_t *b = x;
    for (int64_t i = 0; i < n / g; i++, b += 2 + g / 2) {
        uint16_t h;
        memcpy(&h, b, sizeof h);
        float d = el_fp16_to_fp32(h);
        for (int c = 0; c < g / EL_QK_EDGE; c++)
            dequantize_chunk_i4(b + 2 + c * (EL_QK_EDGE / 2), d, y + i * g + c * EL_QK_EDGE);
    }
}

/* The quants are rounded against the fp16 scale the reader will see. */
static void w4g_from_float(const float *x, void *y, int64_t n, int g) {
    uint8_t *b = y;
    for (int64_t i = 0; i < n / g; i++, b += 2 + g / 2) {
        uint16_t h = el_fp32_to_fp16(absmax(x + i * g, g) / 7.0f);
        memcpy(b, &h, sizeof h);
        float d = el_fp16_to_fp32(h);
        for (int c = 0; c < g / EL_QK_EDGE; c++)
            quantize_chunk_i4(x + i * g + c * EL_QK_EDGE, b + 2 + c * (EL_QK_EDGE / 2), d);
    }
}

void el_vec_dot_w8_ref(int64_t n, float *s, const void *x, const void *y) {
    const int8_t *q = (const int8_t *)x + sizeof(float);
    el_a8_header h;
    memcpy(&h, y, sizeof h);
    const int8_t *a = (const int8_t *)y + sizeof h;
    int32_t acc = 0;
    for (int64_t i = 0; i < n; i++) acc += q[i] * a[i];
    *s = el_edge_row_scale(x) * h.d * (float)acc;
}

void el_vec_dot_w8a16_ref(int64_t n, float *s, const void *x, const void *y) {
    const int8_t *q = (const int8_t *)x + sizeof(float);
    el_a16_header h;
    memcpy(&h, y, sizeof h);
    const char *a = (const char *)y + sizeof h;
    int64_t acc = 0;
    for (int64_t i = 0; i < n; i++) {
        int16_t v;
        memcpy(&v, a + 2 * i, sizeof v);
        acc += (int32_t)q[i] * v;
    }
    *s = el_edge_row_scale(x) * h.d * (float)acc;
}

void el_vec_dot_w4_ref(int64_t n, float *s, const void *x, const void *y) {
    const uint8_t *qs = (const uint8_t *)x + sizeof(float);
    el_a8_header h;
    memcpy(&h, y, sizeof h);
    const int8_t *a = (const int8_t *)y + sizeof h;
    int32_t acc = 0;
    for (int64_t c = 0; c < n / EL_QK_EDGE; c++)
        acc += dot_chunk_i4(qs + c * (EL_QK_EDGE / 2), a + c * EL_QK_EDGE);
    *s = el_edge_row_scale(x) * h.d * (float)acc;
}

static void vec_dot_w4g(int64_t n, float *s, const void *x, const void *y, int g) {
    const uint8_t *b = x;
    el_a8_header h;
    memcpy(&h, y, sizeof h);
    const int8_t *a = (const int8_t *)y + sizeof h;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / g; i++, b += 2 + g / 2) {
        int32_t acc = 0;
        for (int c = 0; c < g / EL_QK_EDGE; c++)
            acc += dot_chunk_i4(b + 2 + c * (EL_QK_EDGE / 2), a + i * g + c * EL_QK_EDGE);
        uint16_t d;
        memcpy(&d, b, sizeof d);
        sum += el_fp16_to_fp32(d) * (float)acc;
    }
    *s = sum * h.d;
}

void el_w4g_to_float_32(const void *x, float *y, int64_t n) { w4g_to_float(x, y, n, 32); }
void el_w4g_to_float_64(const void *x, float *y, int64_t n) { w4g_to_float(x, y, n, 64); }
void el_w4g_to_float_128(const void *x, float *y, int64_t n) { w4g_to_float(x, y, n, 128); }
void el_w4g_from_float_32(const float *x, void *y, int64_t n) { w4g_from_float(x, y, n, 32); }
void el_w4g_from_float_64(const float *x, void *y, int64_t n) { w4g_from_float(x, y, n, 64); }
void el_w4g_from_float_128(const float *x, void *y, int64_t n) { w4g_from_float(x, y, n, 128); }
void el_vec_dot_w4g_ref_32(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_w4g(n, s, x, y, 32);
}
void el_vec_dot_w4g_ref_64(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_w4g(n, s, x, y, 64);
}
void el_vec_dot_w4g_ref_128(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_w4g(n, s, x, y, 128);
}
