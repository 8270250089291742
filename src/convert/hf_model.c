/* hf_model.c - config.json, the tensor list and the GGUF hyper-parameters of a llama-family
 * model (Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma 3), shared by the Hugging Face converter and
 * the synthesizer. Names and keys are those llama.cpp's convert_hf_to_gguf.py writes for each. */
#include "convert/hf_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mapfile.h"
#include "formats/json.h"

/* An integer member; def < 0 means required. null counts as absent (Mistral writes
 * "head_dim": null). */
static el_status get_int(const el_json_value *root, const char *path, const char *key,
                         int64_t def, int32_t *out) {
    const el_json_value *v = el_json_get(root, key);
    int64_t x;
    if (!v || el_json_type(v) == EL_JSON_NULL) {
        if (def < 0) return el_error(EL_ERR_FORMAT, "%s: \"%s\" is missing", path, key);
        *out = (int32_t)def;
        return EL_OK;
    }
    if (!el_json_int(v, &x) || x < 0 || x > INT32_MAX)
        return el_error(EL_ERR_FORMAT, "%s: \"%s\" is not a non-negative integer", path, key);
    *out = (int32_t)x;
    return EL_OK;
}

static el_status get_num(const el_json_value *root, const char *path, const char *key,
                         double def, float *out) {
    const el_json_value *v = el_json_get(root, key);
    double x;
    if (!v || el_json_type(v) == EL_JSON_NULL) {
        *out = (float)def;
        return EL_OK;
    }
    if (!el_json_num(v, &x) || !(x > 0))
        return el_error(EL_ERR_FORMAT, "%s: \"%s\" is not a positive number", path, key);
    *out = (float)x;
    return EL_OK;
}

/* bos_token_id / eos_token_id: an integer, or a list whose first entry is used; -1 if absent. */
static int32_t token_id(const el_json_value *root, const char *key) {
    const el_json_value *v = el_json_get(root, key);
    if (el_json_type(v) == EL_JSON_ARRAY) v = el_json_at(v, 0);
    int64_t x;
    return el_json_int(v, &x) && x >= 0 && x <= INT32_MAX ? (int32_t)x : -1;
}

/* A list of n_rot / 2 positive numbers of the scaling dict `where` into out. */
static el_status factor_list(const el_json_value *rs, const char *where, const char *path,
                             const char *key, int32_t n, float *out) {
    const el_json_value *v = el_json_get(rs, key);
    if (el_json_type(v) != EL_JSON_ARRAY || (int64_t)el_json_len(v) != n)
        return el_error(EL_ERR_FORMAT, "%s: %s \"%s\" must be a list of %d numbers (half the "
                        "rotated dimensions)", path, where, key, n);
    for (int32_t i = 0; i < n; i++) {
        double x;
        if (!el_json_num(el_json_at(v, (size_t)i), &x) || !(x > 0) || !(x < 1e30))
            return el_error(EL_ERR_FORMAT, "%s: %s \"%s\"[%d] is not a positive number", path,
                            where, key, i);
        out[i] = (float)x;
    }
    return EL_OK;
}

/* longrope (phi3): the two factor lists, each n_rot / 2 long (n_rot is known by then). */
static el_status read_longrope(const el_json_value *rs, const char *where, const char *path,
                               el_hf_config *c) {
    if (c->n_rot / 2 > EL_HF_MAX_ROPE_PAIRS || c->n_rot < 2)
        return el_error(EL_ERR_UNSUPPORTED, "%s: %d rotated dimensions are too many for longrope",
                        path, c->n_rot);
    el_status st = factor_list(rs, where, path, "long_factor", c->n_rot / 2, c->rope_long);
    if (!st) st = factor_list(rs, where, path, "short_factor", c->n_rot / 2, c->rope_short);
    return st;
}

/* The scaling of the dict rs (v4's rope_scaling, or v5's rope_parameters, which holds the same
 * keys beside rope_theta), named `where` in messages; NULL or JSON null: none. */
static el_status read_rope_scaling(const el_json_value *rs, const char *where, const char *path,
                                   el_hf_config *c) {
    if (!rs || el_json_type(rs) == EL_JSON_NULL) return EL_OK;
    if (el_json_type(rs) != EL_JSON_OBJECT)
        return el_error(EL_ERR_FORMAT, "%s: \"%s\" is not an object", path, where);
    const char *type = el_json_str(el_json_get(rs, "rope_type"), NULL);
    if (!type) type = el_json_str(el_json_get(rs, "type"), NULL);
    if (!type || !strcmp(type, "default")) return EL_OK;
    el_status st;
    if (!strcmp(type, "linear")) {
        c->rope_scaling = EL_ROPE_SCALING_LINEAR;
        return get_num(rs, path, "factor", 1.0, &c->rope_factor);
    }
    if (!strcmp(type, "llama3")) {
        c->rope_scaling = EL_ROPE_SCALING_LLAMA3;
        if ((st = get_num(rs, path, "factor", 8.0, &c->rope_factor)) ||
            (st = get_num(rs, path, "low_freq_factor", 1.0, &c->low_freq_factor)) ||
            (st = get_num(rs, path, "high_freq_factor", 4.0, &c->high_freq_factor)))
            return st;
        return get_int(rs, path, "original_max_position_embeddings", 8192, &c->rope_orig_ctx);
    }
    if (!strcmp(type, "longrope") || !strcmp(type, "su")) {
        c->rope_scaling = EL_ROPE_SCALING_LONGROPE;
        return read_longrope(rs, where, path, c);
    }
    return el_error(EL_ERR_UNSUPPORTED, "%s: %s type \"%s\" is not supported (linear, llama3, "
                    "longrope)", path, where, type);
}

/* Where a config keeps its RoPE settings. transformers v4 writes them at the top: rope_theta,
 * rope_scaling (its rope_type and fields), Gemma 3's rope_local_base_freq, Phi-3's
 * original_max_position_embeddings and partial_rotary_factor. v5 writes rope_parameters: one
 * dict of rope_type, rope_theta and the scaling's fields (original_max_position_embeddings and
 * partial_rotary_factor among them), or one such dict per layer type when its keys are layer
 * types (Gemma 3: full_attention, sliding_attention), and drops the top-level keys. A config may
 * hold both; what both give must agree (a tool that rewrote one and not the other made it). */
typedef struct rope_source {
    const el_json_value *root;
    const el_json_value *global; /* v5's dict of the full-attention (or all) layers, or NULL */
    const char *global_name;     /* its name in messages */
    const el_json_value *local;  /* v5's dict of the sliding-window layers, or NULL */
} rope_source;

static bool present(const el_json_value *v) { return v && el_json_type(v) != EL_JSON_NULL; }

static el_status find_rope_parameters(const el_json_value *root, const char *path,
                                      rope_source *rs) {
    *rs = (rope_source){.root = root, .global_name = "rope_parameters"};
    const el_json_value *rp = el_json_get(root, "rope_parameters");
    if (!present(rp)) return EL_OK;
    if (el_json_type(rp) != EL_JSON_OBJECT)
        return el_error(EL_ERR_FORMAT, "%s: \"rope_parameters\" is not an object", path);
    bool by_layer = el_json_len(rp) > 0;
    for (size_t i = 0; i < el_json_len(rp) && by_layer; i++) {
        size_t len;
        const char *k = el_json_key_at(rp, i, &len);
        by_layer = (len == 14 && !memcmp(k, "full_attention", 14)) ||
                   (len == 17 && !memcmp(k, "sliding_attention", 17));
    }
    if (!by_layer) {
        rs->global = rp;
        return EL_OK;
    }
    rs->global = el_json_get(rp, "full_attention");
    rs->global_name = "rope_parameters.full_attention";
    rs->local = el_json_get(rp, "sliding_attention");
    if ((rs->global && el_json_type(rs->global) != EL_JSON_OBJECT) ||
        (rs->local && el_json_type(rs->local) != EL_JSON_OBJECT))
        return el_error(EL_ERR_FORMAT, "%s: \"rope_parameters\" of a layer type is not an "
                        "object", path);
    return EL_OK;
}

/* The object a setting is read from: v4's `key` at the top, or v5's `v5_key` in dict v5 (named
 * v5_where); with both, they must be the same number. NULL: neither (the caller's default). */
static el_status one_place(const rope_source *rs, const char *key, const el_json_value *v5,
                           const char *v5_where, const char *v5_key, const char *path,
                           const el_json_value **from) {
    const el_json_value *a = el_json_get(rs->root, key), *b = el_json_get(v5, v5_key);
    *from = present(b) ? v5 : present(a) ? rs->root : NULL;
    double x, y;
    if (!present(a) || !present(b)) return EL_OK;
    if (!el_json_num(a, &x) || !el_json_num(b, &y))
        return el_error(EL_ERR_FORMAT, "%s: \"%s\" or %s \"%s\" is not a number", path, key,
                        v5_where, v5_key);
    if (x != y)
        return el_error(EL_ERR_FORMAT, "%s: \"%s\" %g and %s \"%s\" %g disagree", path, key, x,
                        v5_where, v5_key, y);
    return EL_OK;
}

/* rope_scaling (v4) or the scaling in v5's dict, into c; with both, the same scaling. */
static el_status read_scaling(const rope_source *rs, const char *path, el_hf_config *c) {
    const el_json_value *v4 = el_json_get(rs->root, "rope_scaling");
    el_status st = read_rope_scaling(v4, "rope_scaling", path, c);
    if (st || !rs->global) return st;
    el_hf_config v5 = *c;
    v5.rope_scaling = EL_ROPE_SCALING_NONE;
    if ((st = read_rope_scaling(rs->global, rs->global_name, path, &v5))) return st;
    size_t pairs = (size_t)(c->n_rot / 2) * sizeof(float);
    bool same = v5.rope_scaling == c->rope_scaling && v5.rope_factor == c->rope_factor &&
                v5.low_freq_factor == c->low_freq_factor &&
                v5.high_freq_factor == c->high_freq_factor &&
                v5.rope_orig_ctx == c->rope_orig_ctx &&
                (c->rope_scaling != EL_ROPE_SCALING_LONGROPE ||
                 (!memcmp(v5.rope_long, c->rope_long, pairs) &&
                  !memcmp(v5.rope_short, c->rope_short, pairs)));
    if (present(v4) && !same)
        return el_error(EL_ERR_FORMAT, "%s: \"rope_scaling\" and %s describe different rope "
                        "scalings", path, rs->global_name);
    *c = v5;
    return EL_OK;
}

/* The period p of layer_types (a layer is global when il % p == p - 1; 0 if none is), or an
 * error if the list does not follow one: llama.cpp's gemma3 knows periodic patterns only. */
static el_status layer_pattern(const el_json_value *types, const char *path, int32_t n_layer,
                               int32_t *out) {
    if (el_json_type(types) != EL_JSON_ARRAY || el_json_len(types) != (size_t)n_layer)
        return el_error(EL_ERR_FORMAT, "%s: \"layer_types\" is not a list of %d entries", path,
                        n_layer);
    int32_t p = 0;
    for (int32_t i = 0; i < n_layer && !p; i++) {
        const char *t = el_json_str(el_json_at(types, (size_t)i), NULL);
        if (t && !strcmp(t, "full_attention")) p = i + 1;
    }
    for (int32_t i = 0; i < n_layer; i++) {
        const char *t = el_json_str(el_json_at(types, (size_t)i), NULL);
        bool swa = p == 0 || i % p < p - 1;
        if (!t || strcmp(t, swa ? "sliding_attention" : "full_attention"))
            return el_error(EL_ERR_UNSUPPORTED, "%s: \"layer_types\" is not a repeating pattern of "
                            "sliding_attention layers and a full_attention one (layer %d)", path,
                            i);
    }
    *out = p;
    return EL_OK;
}

/* Gemma 3's keys, with Gemma3TextConfig's defaults. What llama.cpp cannot express is refused:
 * an activation other than gelu_pytorch_tanh, attention logit soft-capping, bidirectional
 * attention, and a query_pre_attn_scalar other than the one llama.cpp derives (head_dim, or
 * hidden_size / num_attention_heads for the 62-layer 27B). */
static el_status read_gemma3(const el_json_value *root, const rope_source *rs, const char *path,
                             el_hf_config *c) {
    el_status st;
    const el_json_value *theta, *theta_swa;
    if ((st = one_place(rs, "rope_theta", rs->global, rs->global_name, "rope_theta", path,
                        &theta)) ||
        (st = one_place(rs, "rope_local_base_freq", rs->local,
                        "rope_parameters.sliding_attention", "rope_theta", path, &theta_swa)))
        return st;
    /* llama.cpp's gemma3 rotates the sliding-window layers unscaled, as v4's Gemma 3 did */
    el_hf_config local = *c;
    local.rope_scaling = EL_ROPE_SCALING_NONE;
    if ((st = read_rope_scaling(rs->local, "rope_parameters.sliding_attention", path, &local)))
        return st;
    if (local.rope_scaling != EL_ROPE_SCALING_NONE)
        return el_error(EL_ERR_UNSUPPORTED, "%s: rope_parameters.sliding_attention scales its "
                        "rope: only the full-attention layers may (llama.cpp's gemma3)", path);
    const el_json_value *tie = el_json_get(root, "tie_word_embeddings");
    c->tied = true;
    if (tie && !el_json_bool(tie, &c->tied))
        return el_error(EL_ERR_FORMAT, "%s: \"tie_word_embeddings\" is not a boolean", path);
    if ((st = get_int(root, path, "head_dim", 256, &c->head_dim)) ||
        (st = get_int(root, path, "max_position_embeddings", 131072, &c->n_ctx)) ||
        (st = get_num(theta, path, "rope_theta", 1000000.0, &c->rope_theta)) ||
        (st = get_num(theta_swa, path, theta_swa == rs->local ? "rope_theta" :
                      "rope_local_base_freq", 10000.0, &c->rope_theta_swa)) ||
        (st = get_int(root, path, "sliding_window", 4096, &c->n_swa)) ||
        (st = get_int(root, path, "sliding_window_pattern", 6, &c->swa_pattern)) ||
        (st = get_num(root, path, "final_logit_softcapping", 0.0, &c->final_logit_softcap)))
        return st;
    const el_json_value *types = el_json_get(root, "layer_types");
    if (types && el_json_type(types) != EL_JSON_NULL &&
        (st = layer_pattern(types, path, c->n_layer, &c->swa_pattern)))
        return st;
    if (c->swa_pattern == 1) c->n_swa = 0; /* every layer global: no window (llama.cpp's test) */
    const char *act = el_json_str(el_json_get(root, "hidden_activation"), NULL);
    if (act && strcmp(act, "gelu_pytorch_tanh"))
        return el_error(EL_ERR_UNSUPPORTED, "%s: hidden_activation %s is not supported "
                        "(gelu_pytorch_tanh)", path, act);
    const el_json_value *v = el_json_get(root, "attn_logit_softcapping");
    if (v && el_json_type(v) != EL_JSON_NULL)
        return el_error(EL_ERR_UNSUPPORTED, "%s: attn_logit_softcapping is not supported", path);
    bool bidirectional = false;
    el_json_bool(el_json_get(root, "use_bidirectional_attention"), &bidirectional);
    if (bidirectional)
        return el_error(EL_ERR_UNSUPPORTED, "%s: use_bidirectional_attention is not supported "
                        "(a causal model is)", path);
    float qpas, implied = (float)(c->n_layer == 62 ? c->n_embd / c->n_head : c->head_dim);
    if ((st = get_num(root, path, "query_pre_attn_scalar", 256.0, &qpas))) return st;
    if (qpas != implied)
        return el_error(EL_ERR_UNSUPPORTED, "%s: query_pre_attn_scalar %g is not the %g llama.cpp "
                        "implies for this shape (a GGUF cannot say otherwise)", path,
                        (double)qpas, (double)implied);
    c->gemma3_norms = true;
    c->n_rot = c->head_dim; /* whole heads rotate; head_dim has its gemma3 default now */
    return EL_OK;
}

static el_status read_config(const el_json_value *root, const char *path, el_hf_config *c) {
    const char *arch = el_json_str(el_json_at(el_json_get(root, "architectures"), 0), NULL);
    if (!arch) return el_error(EL_ERR_FORMAT, "%s: \"architectures\" is missing", path);
    if (!strcmp(arch, "LlamaForCausalLM") || !strcmp(arch, "MistralForCausalLM")) {
        c->arch = "llama";
        c->permute_qk = true;
    } else if (!strcmp(arch, "Qwen2ForCausalLM")) {
        c->arch = "qwen2";
        c->qkv_bias = true;
    } else if (!strcmp(arch, "Qwen3ForCausalLM")) {
        c->arch = "qwen3";
        c->qk_norm = true;
    } else if (!strcmp(arch, "Phi3ForCausalLM")) {
        c->arch = "phi3";
        c->fused = true;
    } else if (!strcmp(arch, "Gemma3ForCausalLM")) {
        c->arch = "gemma3";
    } else {
        return el_error(EL_ERR_UNSUPPORTED, "%s: architecture %s is not supported "
                        "(LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
                        "Qwen3ForCausalLM, Phi3ForCausalLM, Gemma3ForCausalLM)", path, arch);
    }
    bool bias = false;
    if (!c->qkv_bias && el_json_bool(el_json_get(root, "attention_bias"), &bias) && bias)
        return el_error(EL_ERR_UNSUPPORTED, "%s: attention_bias is true: biases are not part of a "
                        "%s model here", path, c->arch);
    el_status st;
    if ((st = get_int(root, path, "hidden_size", -1, &c->n_embd)) ||
        (st = get_int(root, path, "intermediate_size", -1, &c->n_ff)) ||
        (st = get_int(root, path, "num_hidden_layers", -1, &c->n_layer)) ||
        (st = get_int(root, path, "num_attention_heads", -1, &c->n_head)) ||
        (st = get_int(root, path, "vocab_size", -1, &c->n_vocab)) ||
        (st = get_int(root, path, "num_key_value_heads", c->n_head, &c->n_head_kv)) ||
        (st = get_int(root, path, "max_position_embeddings", 2048, &c->n_ctx)))
        return st;
    if (c->n_head == 0) return el_error(EL_ERR_FORMAT, "%s: num_attention_heads is 0", path);
    rope_source rs;
    const el_json_value *theta, *orig_ctx, *partial;
    if ((st = find_rope_parameters(root, path, &rs)) ||
        (st = one_place(&rs, "rope_theta", rs.global, rs.global_name, "rope_theta", path,
                        &theta)) ||
        (st = one_place(&rs, "original_max_position_embeddings", rs.global, rs.global_name,
                        "original_max_position_embeddings", path, &orig_ctx)) ||
        (st = one_place(&rs, "partial_rotary_factor", rs.global, rs.global_name,
                        "partial_rotary_factor", path, &partial)))
        return st;
    if (rs.local && strcmp(c->arch, "gemma3"))
        return el_error(EL_ERR_UNSUPPORTED, "%s: rope_parameters for sliding_attention layers, "
                        "which a %s model does not have", path, c->arch);
    if ((st = get_int(root, path, "head_dim", c->n_embd / c->n_head, &c->head_dim)) ||
        (st = get_num(root, path, "rms_norm_eps", 1e-6, &c->rms_eps)) ||
        (st = get_num(theta, path, "rope_theta", 10000.0, &c->rope_theta)) ||
        (st = get_int(root, path, "sliding_window", 0, &c->sliding_window)) ||
        (st = get_int(orig_ctx, path, "original_max_position_embeddings", c->n_ctx,
                      &c->rope_orig_ctx)))
        return st;
    c->n_rot = c->head_dim;
    float rotary = 1.0f;
    if (c->fused && (st = get_num(partial, path, "partial_rotary_factor", 1.0, &rotary)))
        return st;
    if (rotary > 1.0f)
        return el_error(EL_ERR_FORMAT, "%s: \"partial_rotary_factor\" %g is above 1", path,
                        (double)rotary);
    /* llama.cpp's converter: int(factor * n_embd) // n_head */
    if (rotary < 1.0f) c->n_rot = (int32_t)(rotary * (float)c->n_embd) / c->n_head;
    const el_json_value *tie = el_json_get(root, "tie_word_embeddings");
    if (tie && !el_json_bool(tie, &c->tied))
        return el_error(EL_ERR_FORMAT, "%s: \"tie_word_embeddings\" is not a boolean", path);
    c->bos = token_id(root, "bos_token_id");
    c->eos = token_id(root, "eos_token_id");
    if ((st = read_scaling(&rs, path, c))) return st;
    if (!strcmp(c->arch, "gemma3") && (st = read_gemma3(root, &rs, path, c))) return st;
    return el_hf_config_check(c, path);
}

el_status el_hf_config_read(const char *path, el_hf_config *out) {
    el_mapped_file map;
    el_status st = el_map_file(path, &map);
    if (st) return st;
    el_json_doc *doc = NULL;
    st = el_json_parse((const char *)map.data, map.size, path, &doc);
    memset(out, 0, sizeof *out);
    if (!st && el_json_type(el_json_root(doc)) != EL_JSON_OBJECT)
        st = el_error(EL_ERR_FORMAT, "%s: not a JSON object", path);
    if (!st) st = read_config(el_json_root(doc), path, out);
    el_json_free(doc);
    el_unmap_file(&map);
    return st;
}

el_status el_hf_config_check(const el_hf_config *c, const char *what) {
    if (c->n_embd <= 0 || c->n_ff <= 0 || c->n_layer <= 0 || c->n_head <= 0 ||
        c->n_head_kv <= 0 || c->head_dim <= 0 || c->n_vocab <= 0 || c->n_ctx <= 0)
        return el_error(EL_ERR_FORMAT, "%s: a size (hidden, intermediate, layers, heads, head_dim, "
                        "vocab, context) is zero", what);
    if (c->n_head % c->n_head_kv != 0)
        return el_error(EL_ERR_FORMAT, "%s: %d attention heads are not a multiple of %d key/value "
                        "heads", what, c->n_head, c->n_head_kv);
    if (c->head_dim % 2 != 0)
        return el_error(EL_ERR_FORMAT, "%s: head_dim %d is odd", what, c->head_dim);
    if (c->n_rot % 2 != 0 || c->n_rot <= 0 || c->n_rot > c->head_dim)
        return el_error(EL_ERR_FORMAT, "%s: %d rotated dimensions of a head of %d", what, c->n_rot,
                        c->head_dim);
    if (c->fused && (int64_t)c->n_head * c->head_dim != c->n_embd)
        return el_error(EL_ERR_FORMAT, "%s: phi3 needs heads x head_dim = hidden_size (%d x %d is "
                        "not %d)", what, c->n_head, c->head_dim, c->n_embd);
    if ((int64_t)c->n_head * c->head_dim > (int64_t)1 << 20 || c->n_layer > 4096)
        return el_error(EL_ERR_FORMAT, "%s: implausible sizes", what);
    if (c->n_swa < 0 || c->swa_pattern < 0)
        return el_error(EL_ERR_FORMAT, "%s: sliding window %d or pattern %d is negative", what,
                        c->n_swa, c->swa_pattern);
    if (c->rope_scaling == EL_ROPE_SCALING_LONGROPE && c->rope_orig_ctx <= 0)
        return el_error(EL_ERR_FORMAT, "%s: longrope needs original_max_position_embeddings",
                        what);
    if (c->rope_scaling == EL_ROPE_SCALING_LLAMA3 && !(c->high_freq_factor > c->low_freq_factor))
        return el_error(EL_ERR_FORMAT, "%s: rope_scaling high_freq_factor must exceed "
                        "low_freq_factor", what);
    return EL_OK;
}

/* In float32 throughout, as the converter computes it with torch float32 tensors. */
void el_hf_llama3_rope_factors(const el_hf_config *c, float *out) {
    int32_t dim = c->head_dim;
    float old_ctx = (float)c->rope_orig_ctx;
    float low_wavelen = old_ctx / c->low_freq_factor;
    float high_wavelen = old_ctx / c->high_freq_factor;
    for (int32_t i = 0; i < dim / 2; i++) {
        float freq = 1.0f / powf(c->rope_theta, (float)(2 * i) / (float)dim);
        float wavelen = (float)(2.0 * M_PI) / freq;
        if (wavelen < high_wavelen) {
            out[i] = 1.0f;
        } else if (wavelen > low_wavelen) {
            out[i] = c->rope_factor;
        } else {
            float smooth = (old_ctx / wavelen - c->low_freq_factor) /
                           (c->high_freq_factor - c->low_freq_factor);
            out[i] = 1.0f / ((1.0f - smooth) / c->rope_factor + smooth);
        }
    }
}

void el_hf_computed_tensor(const el_hf_config *c, const char *name, float *out) {
    if (!strcmp(name, "rope_factors_long.weight"))
        memcpy(out, c->rope_long, (size_t)(c->n_rot / 2) * sizeof *out);
    else if (!strcmp(name, "rope_factors_short.weight"))
        memcpy(out, c->rope_short, (size_t)(c->n_rot / 2) * sizeof *out);
    else
        el_hf_llama3_rope_factors(c, out);
}

/* In double, as the converter's Python does, then stored as f32. */
float el_hf_longrope_attn_factor(const el_hf_config *c) {
    double scale = (double)c->n_ctx / (double)c->rope_orig_ctx;
    return scale > 1.0 ? (float)sqrt(1.0 + log(scale) / log((double)c->rope_orig_ctx)) : 1.0f;
}

/* Appends one tensor to the plan. */
static void plan_add(el_hf_tensor *t, int32_t *n, const char *name, const char *hf_name,
                     int64_t ne0, int64_t ne1, int32_t permute, el_type target) {
    el_hf_tensor *e = &t[(*n)++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    snprintf(e->hf_name, sizeof e->hf_name, "%s", hf_name);
    e->ne0 = ne0;
    e->ne1 = ne1;
    e->permute_heads = permute;
    if (ne1 == 1)
        e->type = EL_TYPE_F32;
    else
        e->type = ne0 % el_type_layout_get(target)->block_size == 0 ? target : EL_TYPE_F16;
}

/* Which models have a tensor of a block: all, qwen2 (biases), qwen3 (Q/K norms), those with Q,
 * K, V and gate, up apart, phi3 (fused). */
enum { ALL, BIAS, QK_NORM, APART, FUSED };

/* One tensor of a block: GGUF and Hugging Face names, shape, RoPE permutation, which models. */
typedef struct layer_tensor {
    const char *name, *hf;
    int64_t ne0, ne1;
    int32_t permute;
    int which;
} layer_tensor;

/* A Gemma 3 block, as llama.cpp's converter maps it (d: width, q and kv: Q and K/V rows). */
static int32_t gemma3_layer(const el_hf_config *c, int64_t d, int64_t q, int64_t kv,
                            layer_tensor out[13]) {
    const layer_tensor L[] = {
        {"attn_norm.weight", "input_layernorm.weight", d, 1, 0, ALL},
        {"attn_q.weight", "self_attn.q_proj.weight", d, q, 0, ALL},
        {"attn_k.weight", "self_attn.k_proj.weight", d, kv, 0, ALL},
        {"attn_v.weight", "self_attn.v_proj.weight", d, kv, 0, ALL},
        {"attn_q_norm.weight", "self_attn.q_norm.weight", c->head_dim, 1, 0, ALL},
        {"attn_k_norm.weight", "self_attn.k_norm.weight", c->head_dim, 1, 0, ALL},
        {"attn_output.weight", "self_attn.o_proj.weight", q, d, 0, ALL},
        {"post_attention_norm.weight", "post_attention_layernorm.weight", d, 1, 0, ALL},
        {"ffn_norm.weight", "pre_feedforward_layernorm.weight", d, 1, 0, ALL},
        {"ffn_gate.weight", "mlp.gate_proj.weight", d, c->n_ff, 0, ALL},
        {"ffn_up.weight", "mlp.up_proj.weight", d, c->n_ff, 0, ALL},
        {"ffn_down.weight", "mlp.down_proj.weight", c->n_ff, d, 0, ALL},
        {"post_ffw_norm.weight", "post_feedforward_layernorm.weight", d, 1, 0, ALL},
    };
    memcpy(out, L, sizeof L);
    return 13;
}

/* Whether a GGUF tensor is a norm weight (llama.cpp's converter adds 1 to gemma3's). */
static bool is_norm(const char *name) {
    size_t len = strlen(name);
    return len >= 11 && !strcmp(name + len - 11, "norm.weight");
}

el_status el_hf_plan(const el_hf_config *c, el_type target, el_hf_tensor **out, int32_t *n) {
    int32_t cap = 4 + c->n_layer * 16;
    el_hf_tensor *t = malloc((size_t)cap * sizeof *t);
    if (!t) return el_error(EL_ERR_NOMEM, "out of memory for the tensor list");
    int64_t d = c->n_embd, q = (int64_t)c->n_head * c->head_dim;
    int64_t kv = (int64_t)c->n_head_kv * c->head_dim;
    int32_t k = 0;
    if (c->rope_scaling == EL_ROPE_SCALING_LLAMA3)
        plan_add(t, &k, "rope_freqs.weight", "", c->head_dim / 2, 1, 0, target);
    if (c->rope_scaling == EL_ROPE_SCALING_LONGROPE) { /* in the converter's order */
        plan_add(t, &k, "rope_factors_long.weight", "", c->n_rot / 2, 1, 0, target);
        plan_add(t, &k, "rope_factors_short.weight", "", c->n_rot / 2, 1, 0, target);
    }
    plan_add(t, &k, "token_embd.weight", "model.embed_tokens.weight", d, c->n_vocab, 0, target);
    const bool has[] = {[ALL] = true, [BIAS] = c->qkv_bias, [QK_NORM] = c->qk_norm,
                        [APART] = !c->fused, [FUSED] = c->fused};
    for (int32_t l = 0; l < c->n_layer; l++) {
        layer_tensor G[13];
        const layer_tensor L[] = {
            {"attn_norm.weight", "input_layernorm.weight", d, 1, 0, ALL},
            {"attn_q.weight", "self_attn.q_proj.weight", d, q, c->n_head, APART},
            {"attn_k.weight", "self_attn.k_proj.weight", d, kv, c->n_head_kv, APART},
            {"attn_v.weight", "self_attn.v_proj.weight", d, kv, 0, APART},
            {"attn_qkv.weight", "self_attn.qkv_proj.weight", d, q + 2 * kv, 0, FUSED},
            {"attn_q.bias", "self_attn.q_proj.bias", q, 1, 0, BIAS},
            {"attn_k.bias", "self_attn.k_proj.bias", kv, 1, 0, BIAS},
            {"attn_v.bias", "self_attn.v_proj.bias", kv, 1, 0, BIAS},
            {"attn_q_norm.weight", "self_attn.q_norm.weight", c->head_dim, 1, 0, QK_NORM},
            {"attn_k_norm.weight", "self_attn.k_norm.weight", c->head_dim, 1, 0, QK_NORM},
            {"attn_output.weight", "self_attn.o_proj.weight", q, d, 0, ALL},
            {"ffn_norm.weight", "post_attention_layernorm.weight", d, 1, 0, ALL},
            {"ffn_gate.weight", "mlp.gate_proj.weight", d, c->n_ff, 0, APART},
            {"ffn_up.weight", "mlp.up_proj.weight", d, c->n_ff, 0, APART},
            {"ffn_up.weight", "mlp.gate_up_proj.weight", d, 2 * (int64_t)c->n_ff, 0, FUSED},
            {"ffn_down.weight", "mlp.down_proj.weight", c->n_ff, d, 0, ALL},
        };
        const layer_tensor *lt = L;
        size_t count = sizeof L / sizeof L[0];
        if (c->gemma3_norms) {
            count = (size_t)gemma3_layer(c, d, q, kv, G);
            lt = G;
        }
        for (size_t i = 0; i < count; i++) {
            if (!has[lt[i].which]) continue;
            char name[64], hf[96];
            snprintf(name, sizeof name, "blk.%d.%s", l, lt[i].name);
            snprintf(hf, sizeof hf, "model.layers.%d.%s", l, lt[i].hf);
            plan_add(t, &k, name, hf, lt[i].ne0, lt[i].ne1, c->permute_qk ? lt[i].permute : 0,
                     target);
        }
    }
    plan_add(t, &k, "output_norm.weight", "model.norm.weight", d, 1, 0, target);
    if (!c->tied) plan_add(t, &k, "output.weight", "lm_head.weight", d, c->n_vocab, 0, target);
    for (int32_t i = 0; i < k; i++)
        if (c->gemma3_norms && is_norm(t[i].name)) t[i].shift = 1.0f;
    *out = t;
    *n = k;
    return EL_OK;
}

/* llama.cpp's general.file_type (LlamaFileType) for a model mostly of type t. */
static uint32_t file_type(el_type t) {
    switch (t) {
    case EL_TYPE_F32: return 0;
    case EL_TYPE_F16: return 1;
    case EL_TYPE_Q4_0: return 2;
    case EL_TYPE_Q8_0: return 7;
    case EL_TYPE_Q4_K: return 14; /* Q4_K_S: every matrix Q4_K */
    case EL_TYPE_Q6_K: return 18;
    case EL_TYPE_BF16: return 32;
    default: return (uint32_t)t >= 64 ? 1000 + (uint32_t)t : 0; /* ours: as quantize numbers them */
    }
}

/* gemma3's keys as llama.cpp's converter writes them, and the window's pattern, which it does
 * not write (llama.cpp then assumes 6), when it is not 6. */
static el_status set_gemma3_hparams(gguf_writer *w, const el_hf_config *c) {
    el_status st = EL_OK;
    if (c->n_swa > 0) {
        st = gguf_writer_set_u32(w, "gemma3.attention.sliding_window", (uint32_t)c->n_swa);
        if (!st && c->swa_pattern != 6)
            st = gguf_writer_set_u32(w, "gemma3.attention.sliding_window_pattern",
                                     (uint32_t)c->swa_pattern);
    }
    if (!st) st = gguf_writer_set_f32(w, "gemma3.rope.freq_base_swa", c->rope_theta_swa);
    if (!st && c->final_logit_softcap > 0)
        st = gguf_writer_set_f32(w, "gemma3.final_logit_softcapping", c->final_logit_softcap);
    return st;
}

el_status el_hf_set_hparams(gguf_writer *w, const el_hf_config *c, const char *name,
                            el_type target) {
    char key[96];
    const char *a = c->arch;
    el_status st = gguf_writer_set_str(w, "general.architecture", a);
    if (!st) st = gguf_writer_set_str(w, "general.name", name);
    if (!st) st = gguf_writer_set_u32(w, "general.file_type", file_type(target));
    if (!st && target != EL_TYPE_F32 && target != EL_TYPE_F16 && target != EL_TYPE_BF16)
        st = gguf_writer_set_u32(w, "general.quantization_version", 2);
    const struct {
        const char *suffix;
        int32_t v;
    } ints[] = {
        {"vocab_size", c->n_vocab},
        {"context_length", c->n_ctx},
        {"embedding_length", c->n_embd},
        {"block_count", c->n_layer},
        {"feed_forward_length", c->n_ff},
        {"attention.head_count", c->n_head},
        {"attention.head_count_kv", c->n_head_kv},
        {"attention.key_length", c->head_dim},
        {"attention.value_length", c->head_dim},
        {"rope.dimension_count", c->n_rot},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0] && !st; i++) {
        snprintf(key, sizeof key, "%s.%s", a, ints[i].suffix);
        st = gguf_writer_set_u32(w, key, (uint32_t)ints[i].v);
    }
    snprintf(key, sizeof key, "%s.rope.freq_base", a);
    if (!st) st = gguf_writer_set_f32(w, key, c->rope_theta);
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", a);
    if (!st) st = gguf_writer_set_f32(w, key, c->rms_eps);
    if (!st && c->fused) { /* phi3: as its converter writes them, whatever the rope scaling */
        snprintf(key, sizeof key, "%s.rope.scaling.original_context_length", a);
        st = gguf_writer_set_u32(w, key, (uint32_t)c->rope_orig_ctx);
        snprintf(key, sizeof key, "%s.attention.sliding_window", a);
        if (!st) st = gguf_writer_set_u32(w, key, (uint32_t)c->sliding_window);
    }
    if (!st && c->rope_scaling == EL_ROPE_SCALING_LONGROPE) {
        snprintf(key, sizeof key, "%s.rope.scaling.attn_factor", a);
        st = gguf_writer_set_f32(w, key, el_hf_longrope_attn_factor(c));
    }
    if (!st && c->rope_scaling == EL_ROPE_SCALING_LINEAR) {
        snprintf(key, sizeof key, "%s.rope.scaling.type", a);
        st = gguf_writer_set_str(w, key, "linear");
        snprintf(key, sizeof key, "%s.rope.scaling.factor", a);
        if (!st) st = gguf_writer_set_f32(w, key, c->rope_factor);
    }
    if (!st && c->gemma3_norms) st = set_gemma3_hparams(w, c);
    return st;
}

el_status el_hf_target_type(const char *name, const char *def, el_type *out) {
    el_type t;
    if (!name) name = def;
    if (el_type_from_name(name, &t) && el_type_is_weight(t)) {
        *out = t;
        return EL_OK;
    }
    return el_error(EL_ERR_INVALID_ARG, "type '%s' cannot be written (f32, f16, bf16, q8_0, q4_0, "
                    "q4_k, q6_k, or edgelora's w8, w4, w4g32, w4g64, w4g128, w8a16)", name);
}
