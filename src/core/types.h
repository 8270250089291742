/* types.h - tensor element types and their layouts: the one table of how many elements a block
 * of each type holds, how many bytes it takes and what the type is called.
 *
 * The ids are ggml's (and so GGUF's) type ids, so a tensor's type in a file is its el_type; the
 * enum is append-only. Types of our own take ids from 64 up and are documented in
 * docs/formats.md. The GGUF reader and writer (formats) size tensors from this table and the
 * kernels (kernels/types.h) add only their functions, in a table of their own indexed by the
 * same ids, as ggml splits type_traits from type_traits_cpu: a new type is one row here plus
 * the kernels that exist for it. The table also holds the ggml types we can size but not
 * compute with, so a file that has one still opens and the model loader can name what it
 * refuses. */
#ifndef EL_CORE_TYPES_H
#define EL_CORE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum el_type {
    EL_TYPE_F32 = 0,
    EL_TYPE_F16 = 1,
    EL_TYPE_Q4_0 = 2,
    EL_TYPE_Q4_1 = 3,
    EL_TYPE_Q5_0 = 6,
    EL_TYPE_Q5_1 = 7,
    EL_TYPE_Q8_0 = 8,
    EL_TYPE_Q8_1 = 9,
    EL_TYPE_Q2_K = 10,
    EL_TYPE_Q3_K = 11,
    EL_TYPE_Q4_K = 12,
    EL_TYPE_Q5_K = 13,
    EL_TYPE_Q6_K = 14,
    EL_TYPE_Q8_K = 15, /* activations only: the dot type of the K-quants */
    EL_TYPE_IQ4_NL = 20,
    EL_TYPE_IQ4_XS = 23,
    EL_TYPE_I8 = 24,
    EL_TYPE_I16 = 25,
    EL_TYPE_I32 = 26,
    EL_TYPE_I64 = 27,
    EL_TYPE_F64 = 28,
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

/* A row of n elements is row_header bytes (0 for all but the per-row types, whose header holds
 * the row's scale), then n / block_size blocks of type_size bytes. The header is part of the
 * row, so a row (and the prefix of a row: header and its first blocks) is self-contained. */
typedef struct el_type_layout {
    const char *ggml_name; /* "q4_K": ggml's type_name, as llama.cpp prints it */
    const char *name;      /* "q4_k": as our CLI takes it and prints it */
    int64_t block_size;    /* elements per block */
    size_t type_size;      /* bytes per block */
    size_t row_header;     /* bytes before the first block of each row */
    /* Our activation types are quantized while the model runs and never stored: a GGUF file
     * may hold every other type, but not these. */
    bool run_time_only;
} el_type_layout;

/* The layout of a type id; NULL for ids that are out of range or unknown. */
const el_type_layout *el_type_layout_get(uint32_t type);
/* Bytes of a row of n elements of type (n a multiple of its block size), header included;
 * 0 for an unknown type. */
size_t el_row_size(el_type type, int64_t n);
/* Parses a type's name in either spelling ("q4_K", "q4_k", case-insensitive) or an edge
 * profile ("w4a8", "w8a8"); returns false if unknown. */
bool el_type_from_name(const char *name, el_type *out);

#endif
