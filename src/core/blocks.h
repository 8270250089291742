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
