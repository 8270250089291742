/* mix.h - llama.cpp's quantization mixes: the type each weight of a model gets in a file type
 * such as Q4_K_M, by its name, its layer and the model's shape (docs/quantize.md). The rules
 * are llama.cpp's llama_tensor_get_type, read there and written here as a table. */
#ifndef EL_COMPRESS_MIX_H
#define EL_COMPRESS_MIX_H

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "core/types.h"
#include "formats/gguf.h"

/* One file type llama-quantize writes and we can: its name, llama.cpp's llama_ftype number
 * (general.file_type) and the type of the weights no rule moves. */
typedef struct el_mix {
    const char *name; /* as our CLI spells it: "q4_k_m" */
    uint32_t file_type;
    el_type base;
} el_mix;

/* The mix a name means (any case; llama-quantize's aliases q3_k, q4_k, q5_k are the _M mixes),
 * or NULL. */
const el_mix *el_mix_find(const char *name);

/* The mixes, in the order help lists them; *n gets their count. */
const el_mix *el_mix_list(int *n);

/* Whether llama-quantize converts tensor t at all: a matrix whose name ends in "weight" and is
 * none of the small or special ones it leaves as they are (norms, expert gates, positions). */
bool el_mix_converts(const gguf_tensor *t);

/* The type every tensor of f gets in mix (types[i] for f->tensors[i]): the tensor's own type
 * for those not converted, else the mix's rule for it (with pure, the base type everywhere),
 * before the fallback for rows that do not fit the type's blocks (el_quant_fit_type). Fails
 * only for a model whose layers it cannot tell (a bad block count or layer number). */
el_status el_mix_types(const el_mix *mix, bool pure, const gguf_file *f, el_type *types);

#endif
