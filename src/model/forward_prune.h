/* forward_prune.h - the steps of the forward pass that a compressed model adds (model/prune.h):
 * matmuls on the kept part, their results moved into the sorted model's layout with zeros in the
 * dropped channels, and the column pieces of down and O.
 *
 * The rows of a chunk may run at different rates: the matmuls run at the chunk's largest kept
 * sizes (its smallest rate) and each row's extra channels are zeroed, which is exactly that row's
 * pruned function (a zero channel adds nothing downstream). */
#ifndef EL_MODEL_FORWARD_PRUNE_H
#define EL_MODEL_FORWARD_PRUNE_H

#include "model/forward.h"
#include "model/prune.h"

/* The kept sizes of layer il for row r of the pass, and the largest of rows [c0, c0 + n). */
el_prune_kept el_fwd_row_kept(const el_forward *f, int il, int32_t r);
el_prune_kept el_fwd_chunk_kept(const el_forward *f, int il, int32_t c0, int32_t n);

/* y[i] = W_i x for count row-pruned linears of layer il that read the same x (Q, K, V; gate,
 * up), over the pieces that k keeps: each piece's outputs land at its first row, so y holds the
 * kept outputs at the start of each row, dimension-major for Q, K and V. All the pieces run
 * together, as one pool job in a decode step (el_matmul_many). */
void el_fwd_row_pieces(el_forward *f, int il, int count, const el_linear which[], const float *x,
                       int64_t ldx, float *const y[], const int64_t ldy[], int32_t n,
                       el_prune_kept k);

/* After el_fwd_row_pieces at the chunk's kept sizes: the outputs in the sorted model's layout,
 * every channel row c0 + i drops zero. */
void el_fwd_pruned_unpack(el_forward *f, int il, el_linear which, float *y, int64_t ldy,
                          int32_t c0, int32_t n);

/* Zeroes the channels of linear `which`'s output each row drops (after the adapter terms, which
 * reach every channel). */
void el_fwd_pruned_mask(const el_forward *f, int il, el_linear which, float *y, int64_t ldy,
                        int32_t c0, int32_t n);

/* y = W x for down or O of a compressed model over the pieces that k keeps; x in the sorted
 * layout (down: channels; O: heads of head_dim_v), with zeros in what a row drops. */
void el_fwd_column_pieces(el_forward *f, int il, el_linear which, const float *x, int64_t ldx,
                          float *y, int64_t ldy, int32_t n, el_prune_kept k);

#endif
