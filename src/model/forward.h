/* forward.h - one forward pass over a batch of rows (docs/architecture.md).
 *
 * Rows may be a prompt chunk, one decode step of many sequences, or a candidate tree: the forward
 * does not know which. Every matmul runs over all rows at once; only attention and the adapter
 * terms (per group of rows sharing a binding) depend on the row. Scratch is allocated once: the
 * residual stream for n_batch rows, everything wider for a chunk of n_ubatch rows. */
#ifndef EL_MODEL_FORWARD_H
#define EL_MODEL_FORWARD_H

#include <stdint.h>

#include "core/threadpool.h"
#include "kernels/lora.h"
#include "model/kv_cache.h"
#include "model/model.h"

/* A validated batch whose rows already own their cache cells. */
typedef struct el_rows {
    int32_t n;
    const int32_t *token;    /* [n] or NULL; token[i] < 0: row i is embd[i] */
    const float *embd;       /* [n][n_embd] or NULL */
    const int32_t *pos;      /* [n] */
    const int32_t *seq_id;   /* [n] */
    const int32_t *parent;   /* [n] or NULL (tree batches) */
    const int32_t *cell;     /* [n] the cache cell of each row */
    const int32_t *out_rows; /* [n_out] rows whose logits are wanted, ascending */
    int32_t n_out;
    const el_lora_rows *lora; /* groups of rows with adapters, or NULL (scratch reserved) */
    const int32_t *rate;     /* [n] the rate index each row runs at (compressed models), or NULL:
                              * all at rate 0 */
} el_rows;

/* Sees the float input of a matmul just before it runs: n_rows rows ldx floats apart, of the
 * weight of linear layer `which` of block il, or of the output head when il is -1. For
 * calibrating static activation scales (compress/calibrate.c); called from the decoding thread. */
typedef void (*el_matmul_observer)(void *user, int il, el_linear which, const float *x,
                                   int64_t ldx, int32_t n_rows);

typedef struct el_forward {
    const el_model *model;
    el_kv_cache *kv;
    el_threadpool *tp;
    int32_t n_batch;  /* most rows per pass */
    int32_t n_ubatch; /* most rows per chunk: a pass runs its rows through every layer in chunks
                       * of this many, so the wide activations below take O(n_ubatch) memory */
    /* of every row of a pass */
    float *x;        /* [n_batch][n_embd] residual stream */
    float *rope_cos; /* [n_batch][n_rot/2] */
    float *rope_sin;
    float *rope_cos_swa; /* the same for sliding-window layers' base and scale (NULL: none) */
    float *rope_sin_swa;
    uint8_t *anc;    /* [n_batch][n_batch] anc[r][j]: row j is row r or an ancestor (trees) */
    int32_t *cell_row; /* [n_ctx] row of this pass in each cell, or -1 */
    /* of one chunk, [n_ubatch][width] */
    float *xn;       /* normalized input of a block [max(n_embd, n_head*head_dim_v)] */
    float *q;        /* [n_head * head_dim_k] */
    float *k;        /* [n_head_kv * head_dim_k] */
    float *v;        /* [n_head_kv * head_dim_v] */
    float *att_out;  /* [n_head * head_dim_v] */
    float *proj;     /* [n_embd] output of the attention / FFN projection */
    float *gate;     /* [n_ff] */
    float *up;       /* [n_ff] */
    int32_t *vis;    /* [n_ubatch][n_ctx] cells each row attends to */
    int32_t *n_vis;  /* [n_ubatch] */
    int32_t *vis_swa; /* [n_ubatch] where in vis the cells within the sliding window start (they
                       * are the last ones: vis is in position order) */
    float *scores;   /* [n_threads][n_head / n_head_kv][n_ctx] attention weights of one
                      * (row, kv head) */
    const void **kv_rows;  /* [n_threads][2][n_ctx] its cells' keys, then values */
    void *mm_scratch; /* activations of n_ubatch rows quantized for any weight */
    el_lora_group *chunk_groups; /* [n_ubatch] the adapter groups cut to one chunk, */
    int32_t *chunk_rows;         /* [n_ubatch] with row indices relative to it */
    el_lora_rows chunk_lora;
    el_lora_scratch lora;          /* for the adapter terms; grown by el_lora_reserve */
    const el_lora_rows *lora_rows; /* of the pass being run */
    /* compressed models only (NULL otherwise): a row in the sorted layout, O's input packed
     * dimension-major [n_ubatch][n_head * head_dim_v], column pieces' products
     * [2 * n_ubatch][n_embd] (two pieces of a full chunk, or many of a decode step) */
    float *prune_row;
    float *prune_packed;
    float *prune_sum;
    const int32_t *row_rate; /* of the pass being run (el_rows.rate) */
    float *logits;   /* [n_out][n_vocab], grown on demand */
    int32_t logits_rows;
    el_matmul_observer observe; /* NULL: none (set it after el_forward_init) */
    void *observe_user;
    void *scratch;        /* the one block every buffer above is carved from */
    size_t scratch_bytes; /* its size (logits and adapter scratch are apart) */
} el_forward;

/* n_ubatch (1..n_batch) bounds the rows of a chunk. Each row gets the same arithmetic in whatever
 * chunk it is; the logits are bit-identical for any n_ubatch as long as the matmul treats a row
 * alike in any number of rows, which kernels/matmul.c does when chunks start at multiples of its
 * 64-row block (so n_ubatch a multiple of 64, or >= the rows of the pass). */
el_status el_forward_init(el_forward *f, const el_model *m, el_kv_cache *kv, el_threadpool *tp,
                          int32_t n_batch, int32_t n_ubatch);
void el_forward_free(el_forward *f);
/* Makes room for the logits of n_out rows (call before touching the cache: it can fail). */
el_status el_forward_reserve_logits(el_forward *f, int32_t n_out);
/* Runs the rows (cells already occupied); writes K/V into their cells and logits for out_rows
 * into f->logits in order. Layer by layer: first K and V of every chunk into the cache, then
 * attention and FFN chunk by chunk, so a row sees every row of the pass whatever its chunk (any
 * order of positions, trees). Cannot fail. */
void el_forward_run(el_forward *f, const el_rows *rows);

#endif
