/* types.h - tensor element types and their traits.
 *
 * The ids are ggml's (and so GGUF's) type ids, so a tensor's type in a file is its el_type.
 * The table of traits is indexed by this append-only enum. Types of our own take ids from 64 up
 * and are documented in docs/formats.md. */
#ifndef EL_KERNELS_TYPES_H
#define EL_KERNELS_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum el_type {
    EL_TYPE_F32 = 0,
    EL_TYPE_F16 = 1,
    EL_TYPE_Q4_0 = 2,
    EL_TYPE_Q8_0 = 8,
    EL_TYPE_Q4_K = 12,
    EL_TYPE_Q6_K = 14,
    EL_TYPE_Q8_K = 15, /* activations only: the dot type of the K-quants */
    EL_TYPE_BF16 = 30,
    /* edgelora's integer types (docs/formats.md): int8 activations with one scale per row
     * (per token), int8 or int4 weights with one scale per row (per output channel) or per
     * group of 32, 64 or 128. Their dot products are integer ones with one float multiply per
     * row or group. W8A16 stores what W8 stores and takes int16 activations instead (for layers
     * whose activations int8 cannot resolve). */
    EL_TYPE_A8 = 64,     /* activations only: the dot type of the types below */
    EL_TYPE_W8 = 65,     /* int8, per-row scale */
    EL_TYPE_W4 = 66,     /* int4, per-row scale */
    EL_TYPE_W4G32 = 67,  /* int4, per-group scales */
    EL_TYPE_W4G64 = 68,
    EL_TYPE_W4G128 = 69,
    EL_TYPE_W8A16 = 70,  /* int8, per-row scale, dotted with A16 activations */
    EL_TYPE_A16 = 71,    /* activations only: int16 with one scale per row, W8A16's dot type */
    EL_TYPE_COUNT = 72
} el_type;

/* y = sum_i x[i]*y[i] over n elements, x of the weight's type, y of its vec_dot_type. */
typedef void (*el_vec_dot_fn)(int64_t n, float *s, const void *x, const void *y);
typedef void (*el_to_float_fn)(const void *x, float *y, int64_t n);
typedef void (*el_from_float_fn)(const float *x, void *y, int64_t n);

/* A row of n elements is row_header bytes (0 for all but the per-row types, whose header holds
 * the row's scale), then n / block_size blocks of type_size bytes. The header is part of the
 * row, so a row (and the prefix of a row: header and its first blocks) is self-contained.
 * For types with a row header, to_float and from_float convert exactly one row of n elements;
 * for the others, any number of whole blocks. */
typedef struct el_type_traits {
    const char *name;        /* "q4_0"; NULL for ids we do not know */
    int64_t block_size;      /* elements per block */
    size_t type_size;        /* bytes per block */
    size_t row_header;       /* bytes before the first block of each row */
    el_to_float_fn to_float; /* dequantize n (a multiple of block_size) elements */
    el_from_float_fn from_float; /* quantize n elements (reference quality) */
    el_vec_dot_fn vec_dot;   /* NULL for activation-only types */
    el_type vec_dot_type;    /* what the other operand of vec_dot is quantized to */
} el_type_traits;

/* Traits of a type id; NULL for ids that are out of range or unknown. */
const el_type_traits *el_type_get(uint32_t type);
/* Bytes of a row of n elements of type (n a multiple of its block size), header included. */
size_t el_row_size(el_type type, int64_t n);
/* Parses "q4_0", "f16", ... (case-insensitive); returns false if unknown. */
bool el_type_from_name(const char *name, el_type *out);
/* Whether t is a weight type a model can be written in: it has a dot product and converts from
 * and to float (not an activation-only type such as q8_K, a8 or a16). */
bool el_type_is_weight(el_type t);

/* IEEE half and bfloat16 conversions. fp16 -> float is an inline definition (C99 inline; its
 * external definition is in types.c), so loops over fp16 elements such as the reference
 * attention's over the KV cache convert without a call. */
inline float el_fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F;
    uint32_t man = h & 0x3FF;
    if (exp == 0) {
        /* zero or subnormal: man units of 2^-24, exact in float */
        float f = (float)man * 0x1p-24f;
        return sign ? -f : f;
    }
    uint32_t bits = exp == 0x1F ? sign | 0x7F800000u | (man << 13)     /* inf, nan */
                                : sign | ((exp + 112) << 23) | (man << 13); /* rebias 15 -> 127 */
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
uint16_t el_fp32_to_fp16(float f);
float el_bf16_to_fp32(uint16_t h);
uint16_t el_fp32_to_bf16(float f);

#endif
