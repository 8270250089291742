/* blocks.h - the byte layouts of the blocks and row headers of the types we compute with:
 * ggml's exactly as ggml writes them into GGUF files, and edgelora's own (docs/formats.md).
 *
 * They live in core, below formats and kernels, so that the layout table (types.c) takes each
 * computed type's bytes per block from sizeof of its struct rather than from a second copy of
 * the number; the kernels (kernels/blocks.h, kernels/edge.h) read and write these structs.
 * Every struct is made of byte-aligned fields only, so it has no padding and the size asserts
 * pin the file layout. fp16 fields are raw IEEE half bits (see el_fp16_to_fp32). */
#ifndef EL_CORE_BLOCKS_H
#define EL_CORE_BLOCKS_H

#include <stdint.h>

enum { EL_QK8_0 = 32, EL_QK4_0 = 32, EL_QK_K = 256 };

/* Q8_0: x[j] = d * qs[j]. */
typedef struct el_block_q8_0 {
    uint16_t d;
    int8_t qs[EL_QK8_0];
} el_block_q8_0;
_Static_assert(sizeof(el_block_q8_0) == 34, "q8_0 block is 34 bytes in GGUF");

/* Q4_0: x[j] = d * (q - 8) with q the low nibble of qs[j] for j < 16 and the high nibble of
 * qs[j - 16] for j >= 16. */
typedef struct el_block_q4_0 {
    uint16_t d;
    uint8_t qs[EL_QK4_0 / 2];
} el_block_q4_0;
_Static_assert(sizeof(el_block_q4_0) == 18, "q4_0 block is 18 bytes in GGUF");

/* Q4_1: x[j] = d * q + m, q the nibble of Q4_0's order (low nibbles first, then high). */
typedef struct el_block_q4_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qs[EL_QK4_0 / 2];
} el_block_q4_1;
_Static_assert(sizeof(el_block_q4_1) == 20, "q4_1 block is 20 bytes in GGUF");

/* Q5_0: x[j] = d * (q - 16), q of 5 bits: the nibble of Q4_0's order, and as its fifth bit bit j
 * of the little-endian word qh (a byte array, so the struct needs no 4-byte alignment). */
typedef struct el_block_q5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[EL_QK4_0 / 2];
} el_block_q5_0;
_Static_assert(sizeof(el_block_q5_0) == 22, "q5_0 block is 22 bytes in GGUF");

/* Q5_1: x[j] = d * q + m, q of 5 bits as in Q5_0. */
typedef struct el_block_q5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[EL_QK4_0 / 2];
} el_block_q5_1;
_Static_assert(sizeof(el_block_q5_1) == 24, "q5_1 block is 24 bytes in GGUF");

/* Q8_1 (the activations Q4_1 and Q5_1 dot): x[j] = d * qs[j]; s = d * sum of qs, so the
 * weights' offset m multiplies one number per block. */
typedef struct el_block_q8_1 {
    uint16_t d;
    uint16_t s;
    int8_t qs[EL_QK8_0];
} el_block_q8_1;
_Static_assert(sizeof(el_block_q8_1) == 36, "q8_1 block is 36 bytes in GGUF");

/* IQ4_NL: x[j] = d * el_iq4nl_values[q], q the nibble of Q4_0's order: 16 levels placed
 * non-uniformly, denser near zero where weights are. */
typedef struct el_block_iq4_nl {
    uint16_t d;
    uint8_t qs[EL_QK4_0 / 2];
} el_block_iq4_nl;
_Static_assert(sizeof(el_block_iq4_nl) == 18, "iq4_nl block is 18 bytes in GGUF");

/* IQ4_XS: 8 sub-blocks of 32 with 6-bit scales ls (low 4 bits the nibble s % 2 of
 * scales_l[s / 2], top 2 bits bits 2s, 2s+1 of scales_h); x = d * (ls - 32) * el_iq4nl_values[q],
 * each sub-block's 16 bytes of qs in IQ4_NL's nibble order. */
typedef struct el_block_iq4_xs {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[EL_QK_K / 64];
    uint8_t qs[EL_QK_K / 2];
} el_block_iq4_xs;
_Static_assert(sizeof(el_block_iq4_xs) == 136, "iq4_xs block is 136 bytes in GGUF");

/* Q2_K: 16 sub-blocks of 16, each with a 4-bit scale (low nibble of scales[s]) and min (high
 * nibble); x = d * sc * q - dmin * m, q of 2 bits. In each half h of 128 elements (qs + 32h),
 * element 32k + l (k < 4, l < 32) is bits 2k, 2k+1 of qs[l]. */
typedef struct el_block_q2_k {
    uint8_t scales[EL_QK_K / 16];
    uint8_t qs[EL_QK_K / 4];
    uint16_t d;
    uint16_t dmin;
} el_block_q2_k;
_Static_assert(sizeof(el_block_q2_k) == 84, "q2_k block is 84 bytes in GGUF");

/* Q3_K: 16 sub-blocks of 16 with 6-bit signed scales (see el_q3_k_scales); x = d * (sc - 32) *
 * (q - 4 * !high), q of 2 bits placed as Q2_K's, high bit e / 32 of hmask[e % 32] for element
 * e. */
typedef struct el_block_q3_k {
    uint8_t hmask[EL_QK_K / 8];
    uint8_t qs[EL_QK_K / 4];
    uint8_t scales[12];
    uint16_t d;
} el_block_q3_k;
_Static_assert(sizeof(el_block_q3_k) == 110, "q3_k block is 110 bytes in GGUF");

/* Q5_K: Q4_K's scales and mins and nibbles, and a fifth bit per element: element 64c + l (l <
 * 32) has bit 2c of qh[l], element 64c + 32 + l bit 2c + 1; x = d*sc[s]*q - dmin*m[s]. */
typedef struct el_block_q5_k {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qh[EL_QK_K / 8];
    uint8_t qs[EL_QK_K / 2];
} el_block_q5_k;
_Static_assert(sizeof(el_block_q5_k) == 176, "q5_k block is 176 bytes in GGUF");

/* Q4_K: 8 sub-blocks of 32 with 6-bit scale sc[s] and min m[s] (packed in scales, see
 * el_q4_k_scale_min); x = d*sc[s]*q - dmin*m[s]. Elements 64c..64c+31 are the low nibbles of
 * qs[32c..32c+31] and elements 64c+32..64c+63 their high nibbles (sub-blocks 2c and 2c+1). */
typedef struct el_block_q4_k {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[EL_QK_K / 2];
} el_block_q4_k;
_Static_assert(sizeof(el_block_q4_k) == 144, "q4_k block is 144 bytes in GGUF");

/* Q6_K: 16 sub-blocks of 16 with int8 scales; x = d * scales[s] * (q - 32), q of 6 bits.
 * In each half h of 128 elements (ql + 64h, qh + 32h), for l < 32: element l is the low nibble
 * of ql[l], element l+32 the low nibble of ql[l+32], l+64 the high nibble of ql[l], l+96 the
 * high nibble of ql[l+32]; their top two bits are bits 0-1, 2-3, 4-5, 6-7 of qh[l]. */
typedef struct el_block_q6_k {
    uint8_t ql[EL_QK_K / 2];
    uint8_t qh[EL_QK_K / 4];
    int8_t scales[EL_QK_K / 16];
    uint16_t d;
} el_block_q6_k;
_Static_assert(sizeof(el_block_q6_k) == 210, "q6_k block is 210 bytes in GGUF");

/* Q8_K (activations only): x[j] = d * qs[j]; bsums[i] = sum of qs[16i .. 16i+15]. */
typedef struct el_block_q8_k {
    float d;
    int8_t qs[EL_QK_K];
    int16_t bsums[EL_QK_K / 16];
} el_block_q8_k;
_Static_assert(sizeof(el_block_q8_k) == 292, "q8_k block is 292 bytes");

/* edgelora's types work in chunks of 32 elements (docs/formats.md). */
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

#endif
