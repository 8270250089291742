/* gptq.h - 4-bit weights by GPTQ (Frantar et al.): each column of a weight is rounded in turn
 * and its error spread over the columns not yet rounded through the inverse Hessian of the
 * layer's output error on calibration data, H = sum x x^T (docs/uniql.md). */
#ifndef EL_COMPRESS_GPTQ_H
#define EL_COMPRESS_GPTQ_H

#include <stdint.h>

#include "core/types.h"
#include "edgelora.h"

/* The 4-bit types GPTQ writes and the group each takes: q4_0 (groups of 32, the signed extreme
 * at -8) and w4g32, w4g64, w4g128 (symmetric -7..7). Every group stores one fp16 scale and its
 * nibbles in the block layout of docs/formats.md. */
typedef struct el_gptq_grid {
    el_type type;
    int32_t group;
} el_gptq_grid;

/* The grid of a type name and a group size (0: the type's own); a group size names w4g<G>
 * when the type is NULL, and q4_0 with a group other than 32 is refused, with a message. */
el_status el_gptq_grid_get(const char *type, int32_t group, el_gptq_grid *out);

/* Quantizes w (rows x cols, row-major, cols a multiple of the group) by GPTQ against the
 * Hessian h (cols x cols, symmetric): damping `damp` times the mean of its diagonal is added
 * first (inputs never seen, zero on the diagonal, get weight 0), then columns are rounded in
 * order, in lazy blocks of `block` columns (0: 128) whose updates to later columns are one
 * matrix product. Each group's scale is taken from the group's columns as they are when its
 * first column is reached. w becomes the dequantized weight; packed (rows rows of
 * el_row_size(type, cols) bytes, may be NULL) gets it in the type's layout. */
el_status el_gptq_quantize(float *w, int64_t rows, int64_t cols, const double *h, double damp,
                           int32_t block, el_gptq_grid grid, void *packed);

/* Round to nearest on the same grid (every group's scale from the weight as it is): the
 * baseline GPTQ is measured against. w becomes the dequantized weight; packed as above. */
void el_rtn_quantize(float *w, int64_t rows, int64_t cols, el_gptq_grid grid, void *packed);

#endif
