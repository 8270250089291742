/* edge.h - layouts and reference kernels of edgelora's integer types (ids 64 and up, see
 * types.h and docs/formats.md): int8 or int16 activations with a per-row (per-token) scale,
 * int8 / int4 weights with a per-row (per-output-channel) or per-group scale.
 *
 * Every type works in chunks of 32 elements. An int4 chunk is 16 bytes: element j < 16 is the
 * low nibble of byte j, element 16 + j its high nibble (the order of Q4_0), and the value is
 * nibble - 8, in -8..7 (our quantizers use -7..7: symmetric).
 *
 * Per-row types start each row with a header holding its scale, so a row (or a prefix of a row,
 * as pruned views read) carries its own scale and el_weight needs nothing new. */
#ifndef EL_KERNELS_EDGE_H
#define EL_KERNELS_EDGE_H

#include <stdint.h>
#include <string.h>

#include "kernels/types.h"

enum { EL_QK_EDGE = 32 };

/* A8 row: this header, then n int8 q; x[j] = d * q[j], q in -127..127. sum is the sum of the
 * row's q (so kernels that take int4 weights as unsigned nibbles can take the 8 back off). */
typedef struct el_a8_header {
    float d;
    int32_t sum;
} el_a8_header;
_Static_assert(sizeof(el_a8_header) == 8, "a8 row header is 8 bytes");

/* A16 row: float d, then n int16 q; x[j] = d * q[j], q in -32767..32767. */
typedef struct el_a16_header {
    float d;
} el_a16_header;

/* W8 row (and W8A16's, the same bytes): float d, then n int8 q (-127..127); W4 row: float d,
 * then n/2 bytes of int4 chunks. W4G<G> block: fp16 d, then G/2 bytes (G/32 int4 chunks);
 * x = d * (nibble - 8). */
static inline float el_edge_row_scale(const void *row) {
    float d;
    memcpy(&d, row, sizeof d);
    return d;
}

void el_a8_to_float(const void *x, float *y, int64_t n);
void el_a8_from_float(const float *x, void *y, int64_t n);
/* An A8 row against a fixed scale d > 0 (a static per-tensor scale from calibration): q =
 * round(x / d) clamped to -127..127, so values beyond 127 d saturate; the header holds d and the
 * exact sum of the q, the layout every kernel reads. */
void el_a8_from_float_static(const float *x, void *y, int64_t n, float d);
void el_a16_to_float(const void *x, float *y, int64_t n);
void el_a16_from_float(const float *x, void *y, int64_t n);
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
