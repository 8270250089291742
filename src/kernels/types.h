/* types.h - the reference kernels of each tensor element type, and the half/bfloat16
 * conversions.
 *
 * The types, their ids and layouts are core's (core/types.h), which the GGUF reader shares; this
 * table adds only what the kernels layer has for a type, indexed by the same ids, as ggml's
 * type_traits_cpu adds to its type_traits. A type with a layout and no kernels (one we can size
 * but not compute with) has no entry here. */
#ifndef EL_KERNELS_TYPES_H
#define EL_KERNELS_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/types.h"

/* y = sum_i x[i]*y[i] over n elements, x of the weight's type, y of its vec_dot_type. */
typedef void (*el_vec_dot_fn)(int64_t n, float *s, const void *x, const void *y);
typedef void (*el_to_float_fn)(const void *x, float *y, int64_t n);
typedef void (*el_from_float_fn)(const float *x, void *y, int64_t n);

/* For types with a row header, to_float and from_float convert exactly one row of n elements;
 * for the others, any number of whole blocks. */
typedef struct el_type_kernels {
    el_to_float_fn to_float;     /* dequantize n (a multiple of block_size) elements */
    el_from_float_fn from_float; /* quantize n elements: activations, and weights if the next
                                  * is NULL */
    el_from_float_fn weight_from_float; /* quantize weights for a file, where llama-quantize's
                                         * bytes differ from the activations' (Q8_0's halves) */
    el_vec_dot_fn vec_dot;       /* NULL for activation-only types */
    el_type vec_dot_type;        /* what the other operand of vec_dot is quantized to */
} el_type_kernels;

/* The reference kernels of a type id; NULL for ids without kernels (or without a layout). */
const el_type_kernels *el_type_kernels_get(uint32_t type);
/* The quantizer of weights written to files: weight_from_float where there is one, else
 * from_float. */
el_from_float_fn el_type_weight_quantizer(const el_type_kernels *k);
/* Whether t is a weight type a model can be written in: it has a dot product and converts from
 * and to float (not an activation-only type such as q8_K, a8 or a16, nor one without kernels). */
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
