/* types.c - the reference kernels of each type and the half/bfloat16 conversions. */
#include "kernels/types.h"

#include <string.h>

#include "kernels/blocks.h"
#include "kernels/edge.h"

static const el_type_kernels type_kernels[EL_TYPE_COUNT] = {
    [EL_TYPE_F32] = {.to_float = el_f32_to_float, .from_float = el_f32_from_float,
                     .vec_dot = el_vec_dot_f32_ref, .vec_dot_type = EL_TYPE_F32},
    /* Half and bfloat16 weights dot float activations: exact products, no activation loss. */
    [EL_TYPE_F16] = {.to_float = el_f16_to_float, .from_float = el_f16_from_float,
                     .vec_dot = el_vec_dot_f16_ref, .vec_dot_type = EL_TYPE_F32},
    [EL_TYPE_BF16] = {.to_float = el_bf16_to_float, .from_float = el_bf16_from_float,
                      .vec_dot = el_vec_dot_bf16_ref, .vec_dot_type = EL_TYPE_F32},
    [EL_TYPE_Q4_0] = {.to_float = el_q4_0_to_float, .from_float = el_q4_0_from_float,
                      .vec_dot = el_vec_dot_q4_0_ref, .vec_dot_type = EL_TYPE_Q8_0},
    [EL_TYPE_Q8_0] = {.to_float = el_q8_0_to_float, .from_float = el_q8_0_from_float,
                      .weight_from_float = el_q8_0_weights_from_float,
                      .vec_dot = el_vec_dot_q8_0_ref, .vec_dot_type = EL_TYPE_Q8_0},
    [EL_TYPE_Q4_K] = {.to_float = el_q4_k_to_float, .from_float = el_q4_k_from_float,
                      .vec_dot = el_vec_dot_q4_k_ref, .vec_dot_type = EL_TYPE_Q8_K},
    [EL_TYPE_Q6_K] = {.to_float = el_q6_k_to_float, .from_float = el_q6_k_from_float,
                      .vec_dot = el_vec_dot_q6_k_ref, .vec_dot_type = EL_TYPE_Q8_K},
    /* ggml's pairings: the offset types dot Q8_1, whose block sum meets their offset */
    [EL_TYPE_Q4_1] = {.to_float = el_q4_1_to_float, .from_float = el_q4_1_from_float,
                      .vec_dot = el_vec_dot_q4_1_ref, .vec_dot_type = EL_TYPE_Q8_1},
    [EL_TYPE_Q5_0] = {.to_float = el_q5_0_to_float, .from_float = el_q5_0_from_float,
                      .vec_dot = el_vec_dot_q5_0_ref, .vec_dot_type = EL_TYPE_Q8_0},
    [EL_TYPE_Q5_1] = {.to_float = el_q5_1_to_float, .from_float = el_q5_1_from_float,
                      .vec_dot = el_vec_dot_q5_1_ref, .vec_dot_type = EL_TYPE_Q8_1},
    [EL_TYPE_Q8_1] = {.to_float = el_q8_1_to_float, .from_float = el_q8_1_from_float,
                      .vec_dot = NULL, .vec_dot_type = EL_TYPE_Q8_1},
    [EL_TYPE_Q2_K] = {.to_float = el_q2_k_to_float, .from_float = el_q2_k_from_float,
                      .vec_dot = el_vec_dot_q2_k_ref, .vec_dot_type = EL_TYPE_Q8_K},
    [EL_TYPE_Q3_K] = {.to_float = el_q3_k_to_float, .from_float = el_q3_k_from_float,
                      .vec_dot = el_vec_dot_q3_k_ref, .vec_dot_type = EL_TYPE_Q8_K},
    [EL_TYPE_Q5_K] = {.to_float = el_q5_k_to_float, .from_float = el_q5_k_from_float,
                      .vec_dot = el_vec_dot_q5_k_ref, .vec_dot_type = EL_TYPE_Q8_K},
    [EL_TYPE_IQ4_NL] = {.to_float = el_iq4_nl_to_float, .from_float = el_iq4_nl_from_float,
                        .vec_dot = el_vec_dot_iq4_nl_ref, .vec_dot_type = EL_TYPE_Q8_0},
    [EL_TYPE_IQ4_XS] = {.to_float = el_iq4_xs_to_float, .from_float = el_iq4_xs_from_float,
                        .vec_dot = el_vec_dot_iq4_xs_ref, .vec_dot_type = EL_TYPE_Q8_K},
    [EL_TYPE_Q8_K] = {.to_float = el_q8_k_to_float, .from_float = el_q8_k_from_float,
                      .vec_dot = NULL, .vec_dot_type = EL_TYPE_Q8_K},
    /* edgelora's integer types, see docs/formats.md and edge.h */
    [EL_TYPE_A8] = {.to_float = el_a8_to_float, .from_float = el_a8_from_float, .vec_dot = NULL,
                    .vec_dot_type = EL_TYPE_A8},
    [EL_TYPE_W8] = {.to_float = el_w8_to_float, .from_float = el_w8_from_float,
                    .vec_dot = el_vec_dot_w8_ref, .vec_dot_type = EL_TYPE_A8},
    [EL_TYPE_W4] = {.to_float = el_w4_to_float, .from_float = el_w4_from_float,
                    .vec_dot = el_vec_dot_w4_ref, .vec_dot_type = EL_TYPE_A8},
    [EL_TYPE_W4G32] = {.to_float = el_w4g_to_float_32, .from_float = el_w4g_from_float_32,
                       .vec_dot = el_vec_dot_w4g_ref_32, .vec_dot_type = EL_TYPE_A8},
    [EL_TYPE_W4G64] = {.to_float = el_w4g_to_float_64, .from_float = el_w4g_from_float_64,
                       .vec_dot = el_vec_dot_w4g_ref_64, .vec_dot_type = EL_TYPE_A8},
    [EL_TYPE_W4G128] = {.to_float = el_w4g_to_float_128, .from_float = el_w4g_from_float_128,
                        .vec_dot = el_vec_dot_w4g_ref_128, .vec_dot_type = EL_TYPE_A8},
    [EL_TYPE_A16] = {.to_float = el_a16_to_float, .from_float = el_a16_from_float,
                     .vec_dot = NULL, .vec_dot_type = EL_TYPE_A16},
    [EL_TYPE_W8A16] = {.to_float = el_w8_to_float, .from_float = el_w8_from_float,
                       .vec_dot = el_vec_dot_w8a16_ref, .vec_dot_type = EL_TYPE_A16},
};

const el_type_kernels *el_type_kernels_get(uint32_t type) {
    if (type >= EL_TYPE_COUNT || type_kernels[type].to_float == NULL) return NULL;
    return &type_kernels[type];
}

el_from_float_fn el_type_weight_quantizer(const el_type_kernels *k) {
    return k->weight_from_float ? k->weight_from_float : k->from_float;
}

bool el_type_is_weight(el_type t) {
    const el_type_kernels *k = el_type_kernels_get((uint32_t)t);
    return k && k->vec_dot && k->from_float && k->to_float;
}

static float bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t float_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The external definition of the inline one in types.h. */
extern float el_fp16_to_fp32(uint16_t h);

/* Rounds q + rem/2^shift to the nearest integer, ties to even. */
static uint32_t round_shifted(uint32_t q, uint32_t rem, int shift) {
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return q;
}

uint16_t el_fp32_to_fp16(float f) {
    uint32_t x = float_to_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7FFFFFFFu;
    if (ax > 0x7F800000u) return sign | 0x7E00 | (uint16_t)((ax >> 13) & 0x3FF); /* quiet nan */
    if (ax >= 0x477FF000u) return sign | 0x7C00; /* >= 65520 rounds to inf */
    if (ax >= 0x38800000u) {                     /* >= 2^-14: a normal half */
        uint32_t h = (ax - (112u << 23)) >> 13;  /* carries into the exponent are right */
        return sign | (uint16_t)round_shifted(h, ax & 0x1FFF, 13);
    }
    /* a subnormal half: the value in units of 2^-24 is man * 2^(e - 126 - 24 + 24) */
    int e = (int)(ax >> 23);
    int shift = 126 - e;
    if (e == 0 || shift > 24) return sign; /* below 2^-25: rounds to zero */
    uint32_t man = (ax & 0x7FFFFF) | 0x800000;
    uint32_t q = round_shifted(man >> shift, man & ((1u << shift) - 1), shift);
    return sign | (uint16_t)q;
}

float el_bf16_to_fp32(uint16_t h) { return bits_to_float((uint32_t)h << 16); }

uint16_t el_fp32_to_bf16(float f) {
    uint32_t x = float_to_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet nan */
    return (uint16_t)(round_shifted(x >> 16, x & 0xFFFF, 16));
}
