/* load_llama2c.c - a model from a legacy llama2.c checkpoint (.bin, "version 0").
 *
 * Layout (all little-endian): seven int32 {dim, hidden_dim, n_layers, n_heads, n_kv_heads,
 * vocab_size, seq_len}, then float32 arrays token_embedding[vocab][dim], rms_att[L][dim],
 * wq[L][dim][dim], wk[L][kv_dim][dim], wv[L][kv_dim][dim], wo[L][dim][dim], rms_ffn[L][dim],
 * w1[L][hidden][dim], w2[L][dim][hidden], w3[L][hidden][dim], rms_final[dim], the unused
 * freq_cis_real/imag[seq_len][head_size/2], and wcls[vocab][dim] only if vocab_size < 0 (a negative
 * vocab_size means "not shared with the embedding"). Every matrix is stored output-row-major,
 * which is exactly an F32 el_weight, so the views point straight into the mapping. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"

enum { LLAMA2C_HEADER_BYTES = 7 * 4 };

static int32_t read_i32(const uint8_t *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
}

/* Carves `n` floats off the mapping at *cur. */
static const float *take(const float **cur, size_t n) {
    const float *p = *cur;
    *cur += n;
    return p;
}

/* Carves an F32 weight of n_out rows of n_in off the mapping. */
static el_weight take_weight(const float **cur, int64_t n_in, int64_t n_out) {
    return el_weight_view(EL_TYPE_F32, take(cur, (size_t)(n_in * n_out)), n_in, n_out);
}

el_status el_model_load_llama2c(el_model *m, const char *tokenizer_path, bool vocab_only) {
    el_status st = el_map_file(m->path, &m->map);
    if (st)
        return st;
    if (m->map.size < LLAMA2C_HEADER_BYTES)
        return el_error(EL_ERR_FORMAT, "%s: neither GGUF nor a llama2.c checkpoint (too short)",
                        m->path);
    int32_t h[7];
    for (int i = 0; i < 7; i++)
        h[i] = read_i32(m->map.data + 4 * i);
    bool shared = h[5] > 0;
    el_hparams *hp = &m->hp;
    *hp = (el_hparams){
        .n_embd = h[0], .n_ff = h[1], .n_layer = h[2], .n_head = h[3], .n_head_kv = h[4],
        .n_vocab = shared ? h[5] : -h[5], .n_ctx_train = h[6],
        .rms_eps = 1e-5f, .rope_freq_base = 10000.0f, .rope_freq_scale = 1.0f,
        .rope_style = EL_ROPE_NORM,
    };
    if (hp->n_head > 0 && hp->n_embd > 0 && hp->n_embd % hp->n_head == 0)
        hp->head_dim_k = hp->head_dim_v = hp->n_rot = hp->n_embd / hp->n_head;
    snprintf(m->arch, sizeof m->arch, "llama");
    if ((st = el_hparams_validate(hp, m->path)) != EL_OK) {
        el_error_prefix("not GGUF, and not a valid llama2.c checkpoint");
        return st;
    }

    uint64_t dim = (uint64_t)hp->n_embd, kv_dim = (uint64_t)hp->n_head_kv * hp->head_dim_k;
    uint64_t L = (uint64_t)hp->n_layer, ff = (uint64_t)hp->n_ff, V = (uint64_t)hp->n_vocab;
    uint64_t n_floats = V * dim + L * dim + L * dim * dim * 2 + L * kv_dim * dim * 2 + L * dim +
                        L * ff * dim * 3 + dim + (uint64_t)hp->n_ctx_train * hp->head_dim_k +
                        (shared ? 0 : V * dim);
    /* (the bounds of el_hparams_validate keep n_floats far from overflowing) */
    if (n_floats > (m->map.size - LLAMA2C_HEADER_BYTES) / 4)
        return el_error(EL_ERR_FORMAT,
                        "%s: llama2.c checkpoint is truncated (%zu bytes, the header needs %llu)",
                        m->path, m->map.size,
                        (unsigned long long)(LLAMA2C_HEADER_BYTES + 4 * n_floats));
    if (tokenizer_path && (st = el_vocab_load_llama2c(tokenizer_path, hp->n_vocab, &m->vocab)))
        return st;
    if (vocab_only) {
        if (!m->vocab)
            return el_error(EL_ERR_INVALID_ARG, "%s: vocab_only needs a tokenizer_path", m->path);
        return EL_OK;
    }

    m->layers = calloc(L, sizeof *m->layers);
    if (!m->layers)
        return el_error(EL_ERR_NOMEM, "%s: out of memory", m->path);
    const float *cur = (const float *)(m->map.data + LLAMA2C_HEADER_BYTES);
    m->tok_embd = take_weight(&cur, hp->n_embd, hp->n_vocab);
    for (uint64_t l = 0; l < L; l++)
        m->layers[l].attn_norm = take(&cur, dim);
    for (uint64_t l = 0; l < L; l++)
        m->layers[l].wq = take_weight(&cur, hp->n_embd, hp->n_embd);
    for (uint64_t l = 0; l < L; l++)
        m->layers[l].wk = take_weight(&cur, hp->n_embd, kv_dim);
    for (uint64_t l = 0; l < L; l++)
        m->layers[l].wv = take_weight(&cur, hp->n_embd, kv_dim);
    for (uint64_t l = 0; l < L; l++)
        m->layers[l].wo = take_weight(&cur, hp->n_embd, hp->n_embd);
    for (uint64_t l = 0; l < L; l++)
        m->layers[l].ffn_norm = take(&cur, dim);
    for (uint64_t l = 0; l < L; l++) /* w1: the gate */
        m->layers[l].w_gate = take_weight(&cur, hp->n_embd, hp->n_ff);
    for (uint64_t l = 0; l < L; l++) /* w2: down */
        m->layers[l].w_down = take_weight(&cur, hp->n_ff, hp->n_embd);
    for (uint64_t l = 0; l < L; l++) /* w3: up */
        m->layers[l].w_up = take_weight(&cur, hp->n_embd, hp->n_ff);
    m->output_norm = take(&cur, dim);
    take(&cur, (uint64_t)hp->n_ctx_train * hp->head_dim_k); /* freq_cis_real and _imag */
    m->output = shared ? m->tok_embd : take_weight(&cur, hp->n_embd, hp->n_vocab);
    m->n_params = (int64_t)(n_floats - (uint64_t)hp->n_ctx_train * hp->head_dim_k);
    m->weight_bytes = 4 * (uint64_t)m->n_params;
    m->has_weights = true;
    return EL_OK;
}
