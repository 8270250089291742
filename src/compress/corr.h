/* corr.h - the input correlations each weight of a block sees, over calibration text: the
 * statistics compress sorts channels and runs GPTQ with (docs/uniql.md). */
#ifndef EL_COMPRESS_CORR_H
#define EL_COMPRESS_CORR_H

#include <stdint.h>

#include "compress/calibrate.h"
#include "edgelora.h"

/* Sums over every calibration row x of x x^T, in double precision, row-major and symmetric. */
typedef struct el_layer_corr {
    double *attn_in;  /* [n_embd]^2: the normalized input of Q, K and V */
    double *ffn_in;   /* [n_embd]^2: the normalized input of gate and up */
    double *ffn_mid;  /* [n_ff]^2: act(gate) * up, the input of down */
    double *attn_out; /* [n_head * head_dim_v]^2: the attention output, the input of O */
} el_layer_corr;

/* A model run over calibration text, ready to be observed layer by layer. */
typedef struct el_corr_run {
    el_model *model;
    el_context *ctx;
    el_tokens tokens;
    int32_t n_ctx; /* tokens per chunk */
} el_corr_run;

/* Loads model_path (ignoring static activation scales) and tokenizes the first max_tokens
 * tokens of text_path, which must hold at least min_tokens. */
el_status el_corr_open(const char *model_path, const char *text_path, int64_t max_tokens,
                       int64_t min_tokens, int32_t n_threads, el_corr_run *run);
void el_corr_close(el_corr_run *run);

/* Runs the text once and fills out[0 .. l1-l0) with the correlations of layers l0..l1-1
 * (allocated here; free each with el_layer_corr_free), and head (if not NULL: n_embd^2 zeroed
 * doubles) with that of the output head's input. Layers are observed in windows because the
 * correlations of a large model do not fit in memory at once. */
el_status el_corr_collect(el_corr_run *run, int32_t l0, int32_t l1, double *head,
                          el_calib_progress_fn progress, void *user, el_layer_corr *out);
void el_layer_corr_free(el_layer_corr *c);
/* Bytes the correlations of one layer of m take. */
uint64_t el_layer_corr_bytes(const el_model *m);

#endif
