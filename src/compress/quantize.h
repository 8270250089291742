/* quantize.h - the rules el_quantize follows, exposed for its tests. */
#ifndef EL_COMPRESS_QUANTIZE_H
#define EL_COMPRESS_QUANTIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "edgelora-tools.h"
#include "kernels/types.h"

/* The type a weight with rows of n_in elements is written in when `want` is asked for: want if
 * its blocks fit the row, else a fallback (docs/quantize.md), F16 as the last resort. */
el_type el_quant_fit_type(el_type want, int64_t n_in);

/* The general.file_type of a file quantized to t (llama.cpp's llama_ftype numbers). */
uint32_t el_quant_file_type(el_type t);

/* Whether t is one of ggml's types (so llama.cpp can read it), not one of ours (ids >= 64). */
bool el_quant_type_is_ggml(el_type t);

#endif
