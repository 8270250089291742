/* model.c - loading (GGUF or llama2.c, told apart by the GGUF magic), freeing, describing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/mapfile.h"
#include "model/model.h"
#include "model/profile.h"
#include "model/prune.h"

el_model_params el_model_default_params(void) {
    return (el_model_params){.tokenizer_path = NULL, .vocab_only = false,
                             .ignore_act_scales = false, .keep_page_cache = false,
                             .profile_path = NULL};
}

const el_weight *el_layer_weight(const el_layer *l, el_linear which) {
    switch (which) {
    case EL_LINEAR_Q: return &l->wq;
    case EL_LINEAR_K: return &l->wk;
    case EL_LINEAR_V: return &l->wv;
    case EL_LINEAR_O: return &l->wo;
    case EL_LINEAR_GATE: return &l->w_gate;
    case EL_LINEAR_UP: return &l->w_up;
    case EL_LINEAR_DOWN: return &l->w_down;
    }
    return NULL;
}

uint64_t el_model_fingerprint(const el_model *m) {
    const el_hparams *hp = &m->hp;
    int32_t shape[] = {hp->n_vocab, hp->n_embd, hp->n_layer, hp->n_head, hp->n_head_kv, hp->n_ff};
    uint64_t h = el_fnv1a(el_fnv_offset, m->arch, strlen(m->arch));
    h = el_fnv1a(h, shape, sizeof shape);
    size_t d = (size_t)hp->n_embd * sizeof(float);
    if (m->output_norm)
        h = el_fnv1a(h, m->output_norm, d);
    for (int32_t il = 0; m->layers && il < hp->n_layer; il++) {
        if (m->layers[il].attn_norm) h = el_fnv1a(h, m->layers[il].attn_norm, d);
        if (m->layers[il].ffn_norm) h = el_fnv1a(h, m->layers[il].ffn_norm, d);
    }
    return h;
}

const char *el_linear_tensor_suffix(el_linear which) {
    switch (which) {
    case EL_LINEAR_Q: return "attn_q.weight";
    case EL_LINEAR_K: return "attn_k.weight";
    case EL_LINEAR_V: return "attn_v.weight";
    case EL_LINEAR_O: return "attn_output.weight";
    case EL_LINEAR_GATE: return "ffn_gate.weight";
    case EL_LINEAR_UP: return "ffn_up.weight";
    case EL_LINEAR_DOWN: return "ffn_down.weight";
    }
    return NULL;
}

const char *el_model_linear_tensor(const el_model *m, el_linear which, int64_t *row0) {
    const el_hparams *hp = &m->hp;
    int64_t q_dim = (int64_t)hp->n_head * hp->head_dim_k;
    *row0 = 0;
    if (hp->fused_qkv && (which == EL_LINEAR_Q || which == EL_LINEAR_K || which == EL_LINEAR_V)) {
        if (which != EL_LINEAR_Q) *row0 = q_dim;
        if (which == EL_LINEAR_V) *row0 += (int64_t)hp->n_head_kv * hp->head_dim_k;
        return "attn_qkv.weight";
    }
    if (hp->fused_gate_up && (which == EL_LINEAR_GATE || which == EL_LINEAR_UP)) {
        if (which == EL_LINEAR_UP) *row0 = hp->n_ff;
        return "ffn_up.weight";
    }
    return el_linear_tensor_suffix(which);
}

const float *el_model_rope_factors(const el_model *m, int32_t n_ctx) {
    if (m->rope_freqs) return m->rope_freqs;
    return n_ctx > m->hp.n_ctx_orig ? m->rope_factors_long : m->rope_factors_short;
}

el_status el_hparams_validate(const el_hparams *hp, const char *path) {
    /* generous bounds: they only catch garbage, not real models (the float hyper-parameters are
     * checked where a file's are read) */
    const int32_t big = 1 << 24;
    bool ok = hp->n_embd > 0 && hp->n_embd <= big && hp->n_layer > 0 && hp->n_layer <= 4096 &&
              hp->n_head > 0 && hp->n_head <= 4096 && hp->n_head_kv > 0 &&
              hp->n_head % hp->n_head_kv == 0 && hp->n_ff > 0 && hp->n_ff <= big &&
              hp->n_vocab > 0 && hp->n_vocab <= big && hp->n_ctx_train > 0 &&
              hp->head_dim_k > 0 && hp->head_dim_v > 0 && hp->n_rot >= 0 &&
              hp->n_rot <= hp->head_dim_k && hp->n_rot % 2 == 0;
    if (!ok)
        return el_error(EL_ERR_FORMAT,
                        "%s: inconsistent hyper-parameters (n_embd %d, n_layer %d, n_head %d, "
                        "n_head_kv %d, n_ff %d, n_vocab %d, n_ctx %d, head_dim %d/%d, n_rot %d)",
                        path, hp->n_embd, hp->n_layer, hp->n_head, hp->n_head_kv, hp->n_ff,
                        hp->n_vocab, hp->n_ctx_train, hp->head_dim_k, hp->head_dim_v, hp->n_rot);
    return EL_OK;
}

el_status el_model_load(const char *path, const el_model_params *params, el_model **out) {
    *out = NULL;
    if (!path)
        return el_error(EL_ERR_INVALID_ARG, "el_model_load: NULL path");
    el_model_params def = el_model_default_params();
    if (!params)
        params = &def;
    el_model *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    }
    el_status st = gguf_is_gguf_file(path)
                       ? el_model_load_gguf(m, params->vocab_only)
                       : el_model_load_llama2c(m, params->tokenizer_path, params->vocab_only);
    if (st == EL_OK && m->gguf && m->has_weights && !params->ignore_act_scales)
        st = el_model_load_act_scales(m);
    if (st == EL_OK && params->profile_path) st = el_profile_load(m, params->profile_path);
    if (st) {
        el_model_free(m);
        return st;
    }
    /* Every decode step reads every weight, so they come in now, in 2 MB pages where the
     * kernel can. Not a pruned model's: it reads only what its rate keeps, and a memory budget
     * counts on the rest never becoming resident. */
    if (m->has_weights && !m->prune)
        (void)el_map_populate(m->gguf ? &m->gguf->map : &m->l2c->map, path,
                              !params->keep_page_cache);
    *out = m;
    return EL_OK;
}

void el_model_free(el_model *m) {
    if (!m)
        return;
    el_vocab_free(m->vocab);
    if (m->gguf)
        gguf_close(m->gguf);
    if (m->l2c)
        llama2c_close(m->l2c);
    el_prune_free(m->prune);
    el_profile_free(m->profile);
    free(m->layers);
    free(m->vectors);
    free(m->name);
    free(m->path);
    free(m);
}

el_status el_model_get_info(const el_model *m, el_model_info *out) {
    if (!m || !out)
        return el_error(EL_ERR_INVALID_ARG, "el_model_get_info: NULL argument");
    const char *base = strrchr(m->path, '/');
    *out = (el_model_info){
        .arch = m->arch,
        .name = m->name ? m->name : (base ? base + 1 : m->path),
        .n_vocab = m->hp.n_vocab,
        .n_embd = m->hp.n_embd,
        .n_layer = m->hp.n_layer,
        .n_head = m->hp.n_head,
        .n_head_kv = m->hp.n_head_kv,
        .n_ff = m->hp.n_ff,
        .n_ctx_train = m->hp.n_ctx_train,
        .n_params = m->n_params,
        .weight_bytes = m->weight_bytes,
        .has_weights = m->has_weights,
    };
    return EL_OK;
}
