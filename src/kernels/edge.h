/* edge.h - the reference kernels of edgelora's integer types (ids 64 and up, see
 * types.h and docs/formats.md): int8 or int16 activations with a per-row (per-token) scale,
 * int8 / int4 weights with a per-row (per-output-channel) or per-group scale.
 *
 * Every type works in chunks of 32 elements. An int4 chunk is 16 bytes: element j < 16 is the
 * low nibble of byte j, element 16 + j its high nibble (the order of Q4_0), and the value is
 * nibble - 8, in -8..7 (our quantizers use -7..7: symmetric).
 *
 * Per-row types start each row with a header holding its scale, so a row (or a prefix of a row,
 * as pruned views read) carries its own scale and el_weight needs nothing new. The headers'
 * layouts are core's (core/blocks.h), which the layout table sizes rows from. */
#ifndef EL_KERNELS_EDGE_H
#define EL_KERNELS_EDGE_H

#include <stdint.h>
#include <string.h>

#include "core/blocks.h"
#include "kernels/types.h"

/* The float scale a W8 or W4 row starts with (layouts: core/blocks.h). */
static inline float el_edge_row_scale(const void *row) {
    float d;
    memcpy(&d, row, sizeof d);
    return d;
}

/* n padded with zeros to whole 32-element chunks, the unit of these types' kernels. */
static inline int64_t el_edge_padded(int64_t n) {
    return (n + EL_QK_EDGE - 1) / EL_QK_EDGE * EL_QK_EDGE;
}

/* q[i] = clamp(round(x[i] * (1 / d)), -127, 127) for i < n (d = 0: all zero), rounding half to
 * even, clamped before rounding; returns the sum of the q. The int8 grid of every integer type
 * here and of a quantization profile (kernels/lora.h). */
int32_t el_i8_quantize(const float *x, int8_t *q, int64_t n, float d);

void el_a8_to_float(const void *x, float *y, int64_t n);
void el_a8_from_float(const float *x, void *y, int64_t n);
/* An A8 row against a fixed scale d > 0 (a static per-tensor scale from calibration): q =
 * round(x / d) clamped to -127..127, so values beyond 127 d saturate; the header holds d and the
 * exact sum of the q, the layout every kernel reads. */
void el_a8_from_float_static(const float *x, void *y, int64_t n, float d);
void el_a16_to_float(const void *x, float *y, int64_t n);
void el_a16_from_float(const float *x, void *y, int64_t n);
/* An A16 row against a fixed scale d > 0, as el_a8_from_float_static: beyond 32767 d saturates. */
void el_a16_from_float_static(const float *x, void *y, int64_t n, float d);
void el_w8_to_float(const void *x, float *y, int64_t n);
void el_w8_from_float(const float *x, void *y, int64_t n);
void el_w4_to_float(const void *x, float *y, int64_t n);
void el_w4_from_float(const float *x, void *y, int64_t n);
void el_w4g_to_float_32(const void *x, float *y, int64_t n);
void el_w4g_from_float_32(const float *x, void *y, int64_t n);
void el_w4g_to_float_64(const void *x, float *y, int64_t n);
void el_w4g_from_float_64(const float *x, void *y, int64_t n);
void el_w4g_to_float_128(const void *x, float *y, int64_t n);
void el_w4g_from_float_128(const float *x, void *y, int64_t n);

/* Dot products against an A8 row of exactly n elements (SIMD kernels use its header's sum):
 * integer sums over the row (per-row types) or group, one float multiply per row or group.
 * n < 2^20 keeps every int32 sum exact. */
void el_vec_dot_w8_ref(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w4_ref(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w4g_ref_32(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w4g_ref_64(int64_t n, float *s, const void *x, const void *y);
void el_vec_dot_w4g_ref_128(int64_t n, float *s, const void *x, const void *y);
/* W8A16: a W8 row against an A16 row. A product reaches 127 * 32767, so the sum is exact in
 * int64 (kernels sum int32 partial sums short enough not to overflow into it) and converted to
 * float once: *s = (d_w * d_a) * (float)sum, the same bits in every kernel. */
void el_vec_dot_w8a16_ref(int64_t n, float *s, const void *x, const void *y);
/* Elements a SIMD W8A16 kernel sums in int32 lanes before it adds them into int64 ones: a lane
 * takes at most a quarter of them (NEON's vmlal: 4 lanes), 256 products of at most 128 * 32767
 * (a stored weight may be -128), 1.07e9 < 2^31. */
enum { EL_A16_RUN = 1024 };

#endif
