/* types.c - the layout table: every type the GGUF reader can size, each once.
 *
 * Every quantized type takes its bytes per block from its block struct (blocks.h), so the size
 * is stated once, where the layout is. */
#include "core/types.h"

#include <strings.h>

#include "core/blocks.h"

static const el_type_layout layouts[EL_TYPE_COUNT] = {
    [EL_TYPE_F32] = {"f32", "f32", 1, sizeof(float)},
    [EL_TYPE_F16] = {"f16", "f16", 1, sizeof(uint16_t)},
    [EL_TYPE_Q4_0] = {"q4_0", "q4_0", EL_QK4_0, sizeof(el_block_q4_0)},
    [EL_TYPE_Q4_1] = {"q4_1", "q4_1", EL_QK4_0, sizeof(el_block_q4_1)},
    [EL_TYPE_Q5_0] = {"q5_0", "q5_0", EL_QK4_0, sizeof(el_block_q5_0)},
    [EL_TYPE_Q5_1] = {"q5_1", "q5_1", EL_QK4_0, sizeof(el_block_q5_1)},
    [EL_TYPE_Q8_0] = {"q8_0", "q8_0", EL_QK8_0, sizeof(el_block_q8_0)},
    [EL_TYPE_Q8_1] = {"q8_1", "q8_1", EL_QK8_0, sizeof(el_block_q8_1)},
    [EL_TYPE_Q2_K] = {"q2_K", "q2_k", EL_QK_K, sizeof(el_block_q2_k)},
    [EL_TYPE_Q3_K] = {"q3_K", "q3_k", EL_QK_K, sizeof(el_block_q3_k)},
    [EL_TYPE_Q4_K] = {"q4_K", "q4_k", EL_QK_K, sizeof(el_block_q4_k)},
    [EL_TYPE_Q5_K] = {"q5_K", "q5_k", EL_QK_K, sizeof(el_block_q5_k)},
    [EL_TYPE_Q6_K] = {"q6_K", "q6_k", EL_QK_K, sizeof(el_block_q6_k)},
    [EL_TYPE_Q8_K] = {"q8_K", "q8_k", EL_QK_K, sizeof(el_block_q8_k)},
    [EL_TYPE_IQ4_NL] = {"iq4_nl", "iq4_nl", EL_QK4_0, sizeof(el_block_iq4_nl)},
    [EL_TYPE_IQ4_XS] = {"iq4_xs", "iq4_xs", EL_QK_K, sizeof(el_block_iq4_xs)},
    [EL_TYPE_I8] = {"i8", "i8", 1, sizeof(int8_t)},
    [EL_TYPE_I16] = {"i16", "i16", 1, sizeof(int16_t)},
    [EL_TYPE_I32] = {"i32", "i32", 1, sizeof(int32_t)},
    [EL_TYPE_I64] = {"i64", "i64", 1, sizeof(int64_t)},
    [EL_TYPE_F64] = {"f64", "f64", 1, sizeof(double)},
    [EL_TYPE_BF16] = {"bf16", "bf16", 1, sizeof(uint16_t)},
    /* edgelora's integer types, see docs/formats.md; the per-row weight types start each row
     * with the float scale */
    [EL_TYPE_A8] = {"a8", "a8", EL_QK_EDGE, EL_QK_EDGE, sizeof(el_a8_header), true},
    [EL_TYPE_W8] = {"w8", "w8", EL_QK_EDGE, EL_QK_EDGE, sizeof(float)},
    [EL_TYPE_W4] = {"w4", "w4", EL_QK_EDGE, EL_QK_EDGE / 2, sizeof(float)},
    [EL_TYPE_W4G32] = {"w4g32", "w4g32", 32, 2 + 32 / 2},
    [EL_TYPE_W4G64] = {"w4g64", "w4g64", 64, 2 + 64 / 2},
    [EL_TYPE_W4G128] = {"w4g128", "w4g128", 128, 2 + 128 / 2},
    [EL_TYPE_W8A16] = {"w8a16", "w8a16", EL_QK_EDGE, EL_QK_EDGE, sizeof(float)},
    [EL_TYPE_A16] = {"a16", "a16", EL_QK_EDGE, 2 * EL_QK_EDGE, sizeof(el_a16_header), true},
};

const el_type_layout *el_type_layout_get(uint32_t type) {
    if (type >= EL_TYPE_COUNT || layouts[type].name == NULL) return NULL;
    return &layouts[type];
}

size_t el_row_size(el_type type, int64_t n) {
    const el_type_layout *l = el_type_layout_get((uint32_t)type);
    if (l == NULL || n < 0) return 0;
    return l->row_header + (size_t)(n / l->block_size) * l->type_size;
}

/* Names of the edge profiles (weights x activations) for the types that store them. */
static const struct {
    const char *name;
    el_type type;
} profile_names[] = {{"w4a8", EL_TYPE_W4}, {"w8a8", EL_TYPE_W8}};

bool el_type_from_name(const char *name, el_type *out) {
    if (name == NULL) return false;
    for (size_t i = 0; i < sizeof profile_names / sizeof profile_names[0]; i++) {
        if (strcasecmp(name, profile_names[i].name) == 0) {
            *out = profile_names[i].type;
            return true;
        }
    }
    /* the two spellings differ only in case, so matching either one matches both */
    for (uint32_t i = 0; i < EL_TYPE_COUNT; i++) {
        if (layouts[i].name != NULL && strcasecmp(name, layouts[i].name) == 0) {
            *out = (el_type)i;
            return true;
        }
    }
    return false;
}
