/* load_llama2c.c - a model from a legacy llama2.c checkpoint (.bin, "version 0").
 *
 * formats/llama2c.h reads and validates the file; here its float32 arrays become F32 weight
 * views (every matrix is stored output-row-major, which is exactly an el_weight) and its header
 * becomes hyper-parameters: llama, NORM rope over whole heads, base 10000, eps 1e-5 (what run.c
 * hard-codes). The vocabulary comes from a separate tokenizer.bin, if given. */
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "model/model.h"

/* Layer l of a stacked (n_layers, rows, cols) array as a weight view. */
static el_weight layer_weight(const float *stack, int l, int64_t rows, int64_t cols) {
    return el_weight_view(EL_TYPE_F32, stack + (size_t)l * rows * cols, cols, rows);
}

el_status el_model_load_llama2c(el_model *m, const char *tokenizer_path, bool vocab_only) {
    el_status st = llama2c_open(m->path, &m->l2c);
    if (st)
        return st;
    const llama2c_config *c = &m->l2c->cfg;
    const llama2c_weights *w = &m->l2c->w;
    el_hparams *hp = &m->hp;
    *hp = (el_hparams){
        .n_vocab = c->vocab_size, .n_embd = c->dim, .n_layer = c->n_layers,
        .n_head = c->n_heads, .n_head_kv = c->n_kv_heads, .n_ff = c->hidden_dim,
        .n_ctx_train = c->seq_len, .head_dim_k = c->head_size, .head_dim_v = c->head_size,
        .n_rot = c->head_size, .rms_eps = 1e-5f, .rope_freq_base = 10000.0f,
        .rope_freq_scale = 1.0f, .rope_style = EL_ROPE_NORM, .rope_attn_factor = 1.0f,
        .n_ctx_orig = c->seq_len, .embd_scale = 1.0f, .q_scale = 1.0f,
    };
    snprintf(m->arch, sizeof m->arch, "llama");
    if ((st = el_hparams_validate(hp, m->path)))
        return st;
    if (tokenizer_path && (st = el_vocab_load_llama2c(tokenizer_path, hp->n_vocab, &m->vocab)))
        return st;
    if (vocab_only) {
        if (!m->vocab)
            return el_error(EL_ERR_INVALID_ARG, "%s: vocab_only needs a tokenizer_path", m->path);
        return EL_OK;
    }

    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers)
        return el_error(EL_ERR_NOMEM, "%s: out of memory", m->path);
    int64_t dim = c->dim, kv = c->kv_dim, ff = c->hidden_dim;
    m->tok_embd = el_weight_view(EL_TYPE_F32, w->token_embedding, dim, hp->n_vocab);
    m->output = el_weight_view(EL_TYPE_F32, w->wcls, dim, hp->n_vocab);
    m->output_norm = w->rms_final;
    for (int l = 0; l < hp->n_layer; l++) {
        el_layer *L = &m->layers[l];
        L->attn_norm = w->rms_att + (size_t)l * dim;
        L->ffn_norm = w->rms_ffn + (size_t)l * dim;
        L->wq = layer_weight(w->wq, l, dim, dim);
        L->wk = layer_weight(w->wk, l, kv, dim);
        L->wv = layer_weight(w->wv, l, kv, dim);
        L->wo = layer_weight(w->wo, l, dim, dim);
        L->w_gate = layer_weight(w->w1, l, ff, dim);
        L->w_down = layer_weight(w->w2, l, dim, ff);
        L->w_up = layer_weight(w->w3, l, ff, dim);
    }
    m->n_params = m->l2c->n_params;
    m->weight_bytes = 4 * (uint64_t)m->n_params;
    m->has_weights = true;
    return EL_OK;
}
