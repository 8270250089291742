/* calibrate.h - static activation scales from running a model over calibration text. */
#ifndef EL_COMPRESS_CALIBRATE_H
#define EL_COMPRESS_CALIBRATE_H

#include <stdbool.h>
#include <stdint.h>

#include "edgelora-tools.h"
#include "tokenizer/vocab.h"

/* The range of |x| seen at the input of each matmul weight, by GGUF tensor name. */
typedef struct el_act_range {
    char name[96];  /* "blk.0.attn_q.weight", "output.weight" (or "token_embd.weight", tied) */
    float amax;     /* the largest |x| (or the one at the percentile asked for) */
} el_act_range;

typedef struct el_calibration {
    el_act_range *ranges; /* [n_ranges]: 7 per block, then the output head */
    int32_t n_ranges;
    int64_t n_tokens;     /* tokens the model ran over */
} el_calibration;

/* Called after each chunk with tokens done of total; returning false cancels. */
typedef bool (*el_calib_progress_fn)(void *user, int64_t done, int64_t total);

/* Runs the model at model_path (float or quantized, with a tokenizer) over the first max_tokens
 * tokens of the text file text_path, in chunks of its training context (at most 512) that each
 * start with BOS, and records for every matmul weight the percentile (90..100; 100: the
 * largest) of |x| over every element of its input on all those tokens (every row, the output
 * head's included): the value that (100 - percentile)% of the elements exceed. */
el_status el_calibrate(const char *model_path, const char *text_path, int64_t max_tokens,
                       double percentile, int32_t n_threads, el_calib_progress_fn progress,
                       void *user, el_calibration *out);
void el_calibration_free(el_calibration *c);

/* The steps of a calibration run, shared with compress (compress/corr.c) and profiles
 * (compress/profile_make.c), which observe other statistics of the same inputs. */

/* A model loaded for calibration (its own static scales ignored), the tokens of its text and a
 * context of n_ctx cells (float32 KV) to run them in chunks of n_ctx, which give n_rows rows. */
typedef struct el_calib_run {
    el_model *m;
    el_context *ctx;
    el_tokens tokens;
    int32_t n_ctx;
    int64_t n_rows;
} el_calib_run;

/* Checks max_tokens (>= 1) and percentile (90..100), loads the model (no pruned model; a
 * tokenizer needed) and the first max_tokens tokens of the text (text_path NULL: of the n_ids
 * token ids, each checked against the vocabulary), and makes the context. `what` names the
 * caller in messages. On failure r holds nothing. */
el_status el_calib_open(const char *model_path, const char *text_path, const int32_t *ids,
                        size_t n_ids, int64_t max_tokens, double percentile, int32_t n_threads,
                        const char *what, el_calib_run *r);
void el_calib_close(el_calib_run *r);
/* The first max_tokens tokens of the text (fewer if it is shorter), into t; none is an error. */
el_status el_calib_read_tokens(const el_model *m, const char *text_path, int64_t max_tokens,
                               el_tokens *t);
/* Runs the tokens through ctx in chunks of n_ctx (each starting with BOS if the model adds one),
 * with every row's logits asked for, reporting after each chunk. */
el_status el_calib_run_chunks(el_context *ctx, const int32_t *tokens, size_t n, int32_t n_ctx,
                              el_calib_progress_fn progress, void *user);

/* The k largest values seen so far as a min-heap: v[0] is the k-th largest (with k = 1, the
 * maximum), the value at the percentile once all values are in. The percentile is exact: the
 * heap holds every value above it, as many as the number of values fixes before the run. */
typedef struct el_top_k {
    float *v;
    int64_t n, k;
} el_top_k;

/* A heap for the percentile (90..100) of n_values values. */
el_status el_top_k_init(el_top_k *t, double n_values, double percentile);
void el_top_k_add(el_top_k *t, float a);
/* The value at the percentile (0 if none was added). */
float el_top_k_value(const el_top_k *t);

/* The static scale of a weight's int8 activations: amax / 127, so the largest calibration
 * value maps to 127. 0 if the weight was not seen (or saw only zeros): dynamic scales. */
float el_calibration_scale(const el_calibration *c, const char *weight_name);

#endif
