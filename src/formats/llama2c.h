/* llama2c.h - reading Karpathy's llama2.c files: the legacy (version 0) float32 checkpoint and the
 * tokenizer.bin beside it.
 *
 * Checkpoint: seven little-endian int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
 * vocab_size, seq_len), then float32 arrays in the order of llama2c_weights below, then the
 * unused RoPE tables freq_cis_real and freq_cis_imag (seq_len * head_size/2 each), then wcls if
 * vocab_size was negative (an untied classifier). The file size must match exactly.
 *
 * Tokenizer: int32 max_token_length, then one record per token to the end of the file:
 * float32 score, int32 len, len bytes of text (no terminator).
 *
 * Weight pointers and token texts point into the read-only mapping; nothing is copied. */
#ifndef EL_FORMATS_LLAMA2C_H
#define EL_FORMATS_LLAMA2C_H

#include <stdbool.h>
#include <stdint.h>

#include "core/mapfile.h"
#include "edgelora.h"

typedef struct llama2c_config {
    int32_t dim;        /* model width */
    int32_t hidden_dim; /* feed-forward width */
    int32_t n_layers;
    int32_t n_heads;
    int32_t n_kv_heads;
    int32_t vocab_size;     /* always positive here; see shared_classifier */
    int32_t seq_len;        /* training context */
    bool shared_classifier; /* the file's vocab_size was positive: wcls == token_embedding */
    int32_t head_size;      /* dim / n_heads */
    int32_t kv_dim;         /* n_kv_heads * head_size */
} llama2c_config;

/* Every matrix is row-major [rows][cols] with cols the input dimension, as run.c's matmul reads
 * it; per-layer arrays are stacked with the layer outermost. */
typedef struct llama2c_weights {
    const float *token_embedding; /* (vocab_size, dim) */
    const float *rms_att;         /* (n_layers, dim) */
    const float *wq;              /* (n_layers, dim, dim) */
    const float *wk;              /* (n_layers, kv_dim, dim) */
    const float *wv;              /* (n_layers, kv_dim, dim) */
    const float *wo;              /* (n_layers, dim, dim) */
    const float *rms_ffn;         /* (n_layers, dim) */
    const float *w1;              /* (n_layers, hidden_dim, dim) */
    const float *w2;              /* (n_layers, dim, hidden_dim) */
    const float *w3;              /* (n_layers, hidden_dim, dim) */
    const float *rms_final;       /* (dim) */
    const float *wcls;            /* (vocab_size, dim); token_embedding when shared */
} llama2c_weights;

typedef struct llama2c_file {
    const char *path;
    el_mapped_file map;
    bool owns_map;
    llama2c_config cfg;
    llama2c_weights w;
    int64_t n_params; /* floats in the weight arrays (without the RoPE tables) */
} llama2c_file;

/* Opens and validates a checkpoint. A newer llama2.c export (magic "ak42") is
 * EL_ERR_UNSUPPORTED; anything else that does not fit is EL_ERR_FORMAT naming the file. */
el_status llama2c_open(const char *path, llama2c_file **out);
/* The same over a buffer the caller keeps alive; data must be 4-byte aligned. */
el_status llama2c_open_memory(const void *data, size_t size, const char *name, llama2c_file **out);
void llama2c_close(llama2c_file *f);

typedef struct llama2c_token {
    const char *text; /* into the mapping; not NUL-terminated */
    uint32_t len;     /* 1..max_token_length */
    float score;
} llama2c_token;

typedef struct llama2c_tokenizer {
    const char *path;
    el_mapped_file map;
    bool owns_map;
    uint32_t max_token_length;
    int32_t n_tokens;
    llama2c_token *tokens;
} llama2c_tokenizer;

/* Opens and validates a tokenizer.bin: every record complete, lengths within max_token_length,
 * scores finite. The number of tokens is what the file holds; compare it with the checkpoint's
 * vocab_size. */
el_status llama2c_tokenizer_open(const char *path, llama2c_tokenizer **out);
el_status llama2c_tokenizer_open_memory(const void *data, size_t size, const char *name,
                                        llama2c_tokenizer **out);
void llama2c_tokenizer_close(llama2c_tokenizer *t);

#endif
