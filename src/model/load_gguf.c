/* load_gguf.c - a model from a GGUF file: hyper-parameters from <arch>.* metadata, weight views
 * into the mapping, every tensor checked for presence, type and shape before anything uses it.
 *
 * Architectures (the table below): llama (NORM rope), qwen2 (NEOX rope, q/k/v biases), qwen3
 * (NEOX rope, an RMSNorm of each Q and K head), phi3 (NEOX rope, gate/up fused in ffn_up, Q/K/V
 * fused in attn_qkv or, as llama.cpp also reads them, apart in attn_q/k/v; longrope factors) and
 * gemma3 (NEOX rope, per-head Q/K norms, norms after attention and FFN, GeGLU, sliding-window
 * layers; its norm weights are stored as llama.cpp's converter writes them, 1 + w of Hugging
 * Face's, so every norm here is a plain RMSNorm). A fused tensor is mapped once and its parts
 * are views of its row ranges (el_model_linear_tensor), so nothing is copied. A GGUF without
 * tensors (or loaded vocab_only) becomes a vocabulary-only model. A GGUF without tokenizer.ggml.*
 * keys loads with no vocabulary: logits work, tokenizing refuses (tests use such files). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/log.h"
#include "model/model.h"
#include "model/prune.h"

/* What an architecture adds to the llama block. */
typedef struct arch_traits {
    const char *name;
    el_rope_style rope;
    bool qkv_bias; /* attn_q/k/v.bias */
    bool qk_norm;  /* attn_q_norm / attn_k_norm.weight: [head_dim_k], per head before RoPE */
    bool fused;    /* ffn_up.weight holds gate and up, and attn_qkv.weight Q, K and V rows
                    * unless the file keeps them apart (phi3_qkv_fused) */
    bool post_norms; /* post_attention_norm / post_ffw_norm.weight: [n_embd], on the attention
                      * and FFN outputs before the residual */
} arch_traits;

static const arch_traits archs[] = {
    {"llama", EL_ROPE_NORM, false, false, false, false},
    {"qwen2", EL_ROPE_NEOX, true, false, false, false},
    {"qwen3", EL_ROPE_NEOX, false, true, false, false},
    {"phi3", EL_ROPE_NEOX, false, false, true, false},
    {"gemma3", EL_ROPE_NEOX, false, true, false, true},
};

static const arch_traits *find_arch(const char *name) {
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (!strcmp(archs[i].name, name)) return &archs[i];
    return NULL;
}

/* A weight the forward can multiply by: any type with a dot product and conversions (the
 * kernels table says which), whose ISA tables may or may not accelerate it. */
static bool is_supported_weight_type(uint32_t t) {
    return t < EL_TYPE_COUNT && el_type_is_weight((el_type)t);
}

static const char *type_name(uint32_t t) {
    const el_type_layout *layout = el_type_layout_get(t);
    return layout ? layout->ggml_name : "unknown";
}

/* The tensor `name`, or NULL with an error naming file and tensor when required. */
static const gguf_tensor *find_tensor(const el_model *m, const char *name, bool required,
                                      el_status *st) {
    const gguf_tensor *t = gguf_find_tensor(m->gguf, name);
    *st = EL_OK;
    if (!t && required)
        *st = el_error(EL_ERR_FORMAT, "%s: tensor '%s' is missing", m->path, name);
    return t;
}

static el_status check_shape(const el_model *m, const gguf_tensor *t, const char *name,
                             int64_t ne0, int64_t ne1) {
    bool ok = t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == 1 && t->ne[3] == 1;
    if (!ok)
        return el_error(EL_ERR_FORMAT,
                        "%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld]",
                        m->path, name, (long long)t->ne[0], (long long)t->ne[1],
                        (long long)t->ne[2], (long long)t->ne[3], (long long)ne0, (long long)ne1);
    return EL_OK;
}

/* A 2-D weight of n_out rows of n_in elements as a view into the mapping. */
static el_status load_weight(el_model *m, const char *name, int64_t n_in, int64_t n_out,
                             el_weight *out) {
    el_status st;
    const gguf_tensor *t = find_tensor(m, name, true, &st);
    if (!t)
        return st;
    if (!is_supported_weight_type(t->type))
        return el_error(EL_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s (%u), not supported",
                        m->path, name, type_name(t->type), t->type);
    if ((st = check_shape(m, t, name, n_in, n_out)) != EL_OK)
        return st;
    if (n_in % el_type_layout_get(t->type)->block_size != 0)
        return el_error(EL_ERR_FORMAT, "%s: tensor '%s': row length %lld is not a multiple of %s's "
                        "block size", m->path, name, (long long)n_in, type_name(t->type));
    *out = el_weight_view((el_type)t->type, t->data, n_in, n_out);
    return EL_OK;
}

/* A 1-D vector of n elements converted to float32 into dst. */
static el_status load_vector(el_model *m, const char *name, int64_t n, float *dst) {
    el_status st;
    const gguf_tensor *t = find_tensor(m, name, true, &st);
    if (!t)
        return st;
    const el_type_kernels *kernels = el_type_kernels_get(t->type);
    if (t->type != EL_TYPE_F32 && t->type != EL_TYPE_F16 && t->type != EL_TYPE_BF16)
        return el_error(EL_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s, expected f32/f16/bf16",
                        m->path, name, type_name(t->type));
    if ((st = check_shape(m, t, name, n, 1)) != EL_OK)
        return st;
    kernels->to_float(t->data, dst, n);
    return EL_OK;
}

/* Reads <arch>.<suffix> as an int32; `def` < 0 means the key is required. */
static el_status arch_i32(const el_model *m, const char *suffix, int32_t def, int32_t *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->arch, suffix);
    el_status st = gguf_get_i32(m->gguf, key, out);
    if (st == EL_ERR_NOT_FOUND) {
        if (def < 0)
            return el_error(EL_ERR_FORMAT, "%s: metadata key '%s' is missing", m->path, key);
        *out = def;
        return EL_OK;
    }
    return st;
}

static el_status arch_f32(const el_model *m, const char *suffix, float def, float *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->arch, suffix);
    el_status st = gguf_get_f32(m->gguf, key, out);
    if (st == EL_ERR_NOT_FOUND) {
        *out = def;
        return EL_OK;
    }
    return st;
}

/* Reads <arch>.<suffix> as a float from lo to hi (def if absent): a NaN or infinite epsilon,
 * base or factor parses but makes every activation NaN, so it is refused here with its key. */
static el_status arch_f32_within(const el_model *m, const char *suffix, float def, float lo,
                                 float hi, float *out) {
    el_status st = arch_f32(m, suffix, def, out);
    if (st || (*out >= lo && *out <= hi)) return st;
    return el_error(EL_ERR_FORMAT, "%s: %s.%s = %g is out of range (%g to %g)", m->path, m->arch,
                    suffix, (double)*out, (double)lo, (double)hi);
}

/* head_count and head_count_kv: positive, the one a multiple of the other and of the width. */
static el_status check_heads(const el_model *m, const el_hparams *hp) {
    if (hp->n_head <= 0 || hp->n_head_kv <= 0)
        return el_error(EL_ERR_FORMAT, "%s: head_count %d and head_count_kv %d must be positive",
                        m->path, hp->n_head, hp->n_head_kv);
    if (hp->n_embd % hp->n_head != 0)
        return el_error(EL_ERR_FORMAT, "%s: embedding_length %d is not a multiple of head_count %d",
                        m->path, hp->n_embd, hp->n_head);
    if (hp->n_head % hp->n_head_kv != 0)
        return el_error(EL_ERR_FORMAT, "%s: head_count %d is not a multiple of head_count_kv %d",
                        m->path, hp->n_head, hp->n_head_kv);
    return EL_OK;
}

static bool is_gemma3(const el_model *m) { return strcmp(m->arch, "gemma3") == 0; }

/* gemma3 as llama.cpp reads it: embeddings scaled by sqrt(n_embd), GeGLU, an optional final
 * logit soft-cap, and, when attention.sliding_window is set, sliding-window layers but every
 * pattern-th (attention.sliding_window_pattern, 6 if absent), which rotate with
 * rope.freq_base_swa (10000 if absent) and no rope scaling. A GGUF has no
 * query_pre_attn_scalar: the attention scale is 1/sqrt(head_dim), but 1/sqrt(n_embd / n_head)
 * for the 62-layer 27B, the rule llama.cpp takes from Google's reference code. */
static el_status read_gemma3_hparams(el_model *m) {
    el_hparams *hp = &m->hp;
    el_status st;
    hp->ffn_act = EL_FFN_GELU;
    hp->embd_scale = sqrtf((float)hp->n_embd);
    if (hp->n_layer == 62)
        hp->q_scale = sqrtf((float)hp->head_dim_k) / sqrtf((float)(hp->n_embd / hp->n_head));
    if ((st = arch_f32_within(m, "final_logit_softcapping", 0.0f, 0.0f, FLT_MAX,
                              &hp->final_logit_softcap)) ||
        (st = arch_i32(m, "attention.sliding_window", 0, &hp->n_swa)) ||
        (st = arch_i32(m, "attention.sliding_window_pattern", 6, &hp->swa_pattern)) ||
        (st = arch_f32_within(m, "rope.freq_base_swa", 10000.0f, FLT_MIN, FLT_MAX,
                              &hp->rope_freq_base_swa)))
        return st;
    if (hp->n_swa < 0 || hp->swa_pattern < 0)
        return el_error(EL_ERR_FORMAT, "%s: gemma3.attention.sliding_window %d and its pattern %d "
                        "must not be negative", m->path, hp->n_swa, hp->swa_pattern);
    hp->rope_freq_scale_swa = 1.0f;
    return EL_OK;
}

/* Whether a phi3 file fuses Q, K and V: llama.cpp takes blk.N.attn_qkv.weight when a block has
 * it and attn_q/k/v.weight otherwise. Here blk.0 decides for the whole model (one layout for every
 * block, which check_phi3_block holds each block to), and a blk.0 with neither stays fused, so
 * the message names the usual tensor as missing. */
static bool phi3_qkv_fused(const el_model *m) {
    return gguf_find_tensor(m->gguf, "blk.0.attn_qkv.weight") ||
           !gguf_find_tensor(m->gguf, "blk.0.attn_q.weight");
}

static el_status read_hparams(el_model *m) {
    el_hparams *hp = &m->hp;
    el_status st;
    if ((st = arch_i32(m, "context_length", -1, &hp->n_ctx_train)) ||
        (st = arch_i32(m, "embedding_length", -1, &hp->n_embd)) ||
        (st = arch_i32(m, "block_count", -1, &hp->n_layer)) ||
        (st = arch_i32(m, "feed_forward_length", -1, &hp->n_ff)) ||
        (st = arch_i32(m, "attention.head_count", -1, &hp->n_head)))
        return st;
    if ((st = arch_i32(m, "attention.head_count_kv", hp->n_head, &hp->n_head_kv)))
        return st;
    if ((st = check_heads(m, hp)))
        return st;
    if ((st = arch_i32(m, "attention.key_length", hp->n_embd / hp->n_head, &hp->head_dim_k)) ||
        (st = arch_i32(m, "attention.value_length", hp->head_dim_k, &hp->head_dim_v)) ||
        (st = arch_i32(m, "rope.dimension_count", hp->head_dim_k, &hp->n_rot)))
        return st;
    /* an epsilon is small beside the mean square it is added to; a base only has to be a
     * positive number */
    if ((st = arch_f32_within(m, "attention.layer_norm_rms_epsilon", 1e-5f, 0.0f, 1.0f,
                              &hp->rms_eps)) ||
        (st = arch_f32_within(m, "rope.freq_base", 10000.0f, FLT_MIN, FLT_MAX,
                              &hp->rope_freq_base)))
        return st;
    hp->rope_freq_scale = 1.0f;
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", m->arch);
    gguf_str scaling;
    if (gguf_get_str(m->gguf, key, &scaling) == EL_OK && gguf_str_eq(scaling, "linear")) {
        float factor;
        if ((st = arch_f32_within(m, "rope.scaling.factor", 1.0f, FLT_MIN, FLT_MAX, &factor)))
            return st;
        hp->rope_freq_scale = 1.0f / factor;
    }
    /* the magnitude factor only has to be a positive number; llama.cpp applies it whatever the
     * context size */
    if ((st = arch_f32_within(m, "rope.scaling.attn_factor", 1.0f, FLT_MIN, FLT_MAX,
                              &hp->rope_attn_factor)) ||
        (st = arch_i32(m, "rope.scaling.original_context_length", hp->n_ctx_train,
                       &hp->n_ctx_orig)))
        return st;
    const arch_traits *a = find_arch(m->arch);
    hp->rope_style = a->rope;
    hp->fused_gate_up = a->fused;
    hp->fused_qkv = a->fused && phi3_qkv_fused(m);
    hp->ffn_act = EL_FFN_SILU;
    hp->embd_scale = 1.0f;
    hp->q_scale = 1.0f;
    return is_gemma3(m) ? read_gemma3_hparams(m) : EL_OK;
}

/* Floats of the owned vector block: norms, biases, rope factors (rope_freqs or longrope's two
 * sets). */
static size_t vector_floats(const el_hparams *hp, const arch_traits *a) {
    size_t per_layer = 2 * (size_t)hp->n_embd;
    if (a->qkv_bias)
        per_layer += (size_t)hp->n_head * hp->head_dim_k + (size_t)hp->n_head_kv * hp->head_dim_k +
                     (size_t)hp->n_head_kv * hp->head_dim_v;
    if (a->qk_norm)
        per_layer += 2 * (size_t)hp->head_dim_k;
    if (a->post_norms)
        per_layer += 2 * (size_t)hp->n_embd;
    return per_layer * hp->n_layer + hp->n_embd + 2 * (size_t)(hp->n_rot / 2);
}

/* "blk.<il>.<suffix>" in buf (96 bytes). */
static const char *blk_name(char *buf, int il, const char *suffix) {
    snprintf(buf, 96, "blk.%d.%s", il, suffix);
    return buf;
}

/* The rows [row0, row0 + n_out) of a weight as a weight of their own: a row of any type is
 * whole blocks (a per-row type's header is part of its row), so this is a view like any other. */
static el_weight row_range(const el_weight *w, int64_t row0, int64_t n_out) {
    return el_weight_view(w->type, (const uint8_t *)w->data + (size_t)row0 * w->row_bytes, w->n_in,
                          n_out);
}

/* A phi3 block holds its projections in the model's one layout: Q/K/V in attn_qkv or in
 * attn_q/k/v as blk.0 does (a block of the other layout, or of both, would be read in part or
 * not at all), and gate/up in ffn_up alone. llama.cpp's phi3 has no ffn_gate either: beside it,
 * ffn_up would be up alone or the pair, and no converter writes it. A missing tensor is
 * load_weight's to name. */
static el_status check_phi3_block(const el_model *m, int il) {
    char name[96];
    static const char *const apart[] = {"attn_q.weight", "attn_k.weight", "attn_v.weight"};
    if (m->hp.fused_qkv) {
        for (int i = 0; i < 3; i++)
            if (gguf_find_tensor(m->gguf, blk_name(name, il, apart[i])))
                return el_error(EL_ERR_FORMAT, "%s: tensor '%s' in a phi3 file whose Q, K and V "
                                "are fused in attn_qkv.weight (blk.0's layout): every block has "
                                "one layout or the other", m->path, name);
    } else if (gguf_find_tensor(m->gguf, blk_name(name, il, "attn_qkv.weight"))) {
        return el_error(EL_ERR_FORMAT, "%s: tensor '%s' in a phi3 file whose Q, K and V are apart "
                        "in attn_q/k/v.weight (blk.0's layout): every block has one layout or "
                        "the other", m->path, name);
    }
    if (gguf_find_tensor(m->gguf, blk_name(name, il, "ffn_gate.weight")))
        return el_error(EL_ERR_FORMAT, "%s: tensor '%s': phi3 keeps gate and up fused in "
                        "ffn_up.weight (2 n_ff rows, gate first), as llama.cpp reads it; a "
                        "separate gate is not supported", m->path, name);
    return EL_OK;
}

/* The seven linears of block il as views of the tensors m stores them in (el_model_linear_tensor):
 * each tensor is checked whole, rows as many as the linears it holds. */
static el_status load_linears(el_model *m, int il) {
    const el_hparams *hp = &m->hp;
    int64_t q_dim = (int64_t)hp->n_head * hp->head_dim_k;
    int64_t k_dim = (int64_t)hp->n_head_kv * hp->head_dim_k;
    int64_t v_dim = (int64_t)hp->n_head_kv * hp->head_dim_v;
    const int64_t n_in[EL_N_LINEAR] = {hp->n_embd, hp->n_embd, hp->n_embd, (int64_t)hp->n_head *
                                       hp->head_dim_v, hp->n_embd, hp->n_embd, hp->n_ff};
    const int64_t n_out[EL_N_LINEAR] = {q_dim, k_dim, v_dim, hp->n_embd, hp->n_ff, hp->n_ff,
                                        hp->n_embd};
    char name[96];
    el_status st;
    if (el_prune_is_compressed(m->gguf))
        return EL_OK; /* stored as pieces: el_prune_load's */
    for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++) {
        int64_t row0, rows = 0, r;
        const char *suffix = el_model_linear_tensor(m, w, &row0);
        for (el_linear o = EL_LINEAR_Q; o <= EL_LINEAR_DOWN; o++)
            if (!strcmp(el_model_linear_tensor(m, o, &r), suffix) && r + n_out[o] > rows)
                rows = r + n_out[o];
        el_weight whole;
        if ((st = load_weight(m, blk_name(name, il, suffix), n_in[w], rows, &whole)))
            return st;
        *(el_weight *)el_layer_weight(&m->layers[il], w) = row_range(&whole, row0, n_out[w]);
    }
    return EL_OK;
}

/* A per-layer vector of n floats at *v, its pointer into *dst; *v moves past it. */
static el_status layer_vector(el_model *m, int il, const char *suffix, int64_t n, float **v,
                              const float **dst) {
    char name[96];
    *dst = *v;
    el_status st = load_vector(m, blk_name(name, il, suffix), n, *v);
    *v += n;
    return st;
}

static el_status load_layer(el_model *m, int il, const arch_traits *a, float **vec) {
    const el_hparams *hp = &m->hp;
    el_layer *l = &m->layers[il];
    int64_t q_dim = (int64_t)hp->n_head * hp->head_dim_k;
    int64_t k_dim = (int64_t)hp->n_head_kv * hp->head_dim_k;
    int64_t v_dim = (int64_t)hp->n_head_kv * hp->head_dim_v;
    el_status st;
    if (a->fused && (st = check_phi3_block(m, il)))
        return st;
    if ((st = layer_vector(m, il, "attn_norm.weight", hp->n_embd, vec, &l->attn_norm)) ||
        (st = layer_vector(m, il, "ffn_norm.weight", hp->n_embd, vec, &l->ffn_norm)) ||
        (st = load_linears(m, il)))
        return st;
    if (a->qkv_bias &&
        ((st = layer_vector(m, il, "attn_q.bias", q_dim, vec, &l->bq)) ||
         (st = layer_vector(m, il, "attn_k.bias", k_dim, vec, &l->bk)) ||
         (st = layer_vector(m, il, "attn_v.bias", v_dim, vec, &l->bv))))
        return st;
    if (a->qk_norm &&
        ((st = layer_vector(m, il, "attn_q_norm.weight", hp->head_dim_k, vec, &l->attn_q_norm)) ||
         (st = layer_vector(m, il, "attn_k_norm.weight", hp->head_dim_k, vec, &l->attn_k_norm))))
        return st;
    if (a->post_norms &&
        ((st = layer_vector(m, il, "post_attention_norm.weight", hp->n_embd, vec,
                            &l->attn_post_norm)) ||
         (st = layer_vector(m, il, "post_ffw_norm.weight", hp->n_embd, vec, &l->ffn_post_norm))))
        return st;
    l->swa = hp->n_swa > 0 && (hp->swa_pattern == 0 || il % hp->swa_pattern < hp->swa_pattern - 1);
    return EL_OK;
}

/* Optional rope frequency divisors [n_rot/2]: each a positive number. *v moves past them. */
static el_status rope_factor_vector(el_model *m, const char *name, float **v, const float **dst) {
    if (!gguf_find_tensor(m->gguf, name)) return EL_OK;
    int half = m->hp.n_rot / 2;
    el_status st = load_vector(m, name, half, *v);
    if (st) return st;
    for (int i = 0; i < half; i++)
        if (!((*v)[i] > 0.0f && isfinite((*v)[i])))
            return el_error(EL_ERR_FORMAT, "%s: %s[%d] is not a positive number", m->path, name, i);
    *dst = *v;
    *v += half;
    return EL_OK;
}

static el_status load_weights(el_model *m) {
    el_status st;
    const arch_traits *a = find_arch(m->arch);
    if (!a)
        return el_error(EL_ERR_UNSUPPORTED, "%s: architecture '%s' is not supported (llama, qwen2, "
                        "qwen3, phi3, gemma3)", m->path, m->arch);
    if ((st = read_hparams(m)))
        return st;
    el_hparams *hp = &m->hp;
    const gguf_tensor *te = find_tensor(m, "token_embd.weight", true, &st);
    if (!te)
        return st;
    /* the embedding's rows, of which the model keeps one per token: a token without a row
     * cannot be run, and a row past the tokens (some converters keep Hugging Face's padding to
     * a multiple of 64, Gemma 3's 262208 rows for 262145 tokens) is a logit no text stands
     * for, which sampling must not pick; llama.cpp refuses both */
    int64_t rows = te->ne[1];
    hp->n_vocab = (int32_t)(rows < INT32_MAX ? rows : INT32_MAX);
    if (m->vocab && m->vocab->n_tokens > rows)
        return el_error(EL_ERR_FORMAT, "%s: the vocabulary has %d tokens but token_embd.weight has "
                        "only %lld rows", m->path, m->vocab->n_tokens, (long long)rows);
    if (m->vocab && m->vocab->n_tokens < rows) {
        hp->n_vocab = m->vocab->n_tokens;
        el_warn("%s: token_embd.weight has %lld rows but the vocabulary %d tokens: the %lld rows "
                "past them stand for no token and are left out", m->path, (long long)rows,
                hp->n_vocab, (long long)(rows - hp->n_vocab));
    }
    if ((st = el_hparams_validate(hp, m->path)))
        return st;

    m->vectors = malloc(vector_floats(hp, a) * sizeof(float));
    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->vectors || !m->layers)
        return el_error(EL_ERR_NOMEM, "%s: out of memory", m->path);
    float *vec = m->vectors;

    if ((st = load_weight(m, "token_embd.weight", hp->n_embd, rows, &m->tok_embd)))
        return st;
    m->tok_embd = row_range(&m->tok_embd, 0, hp->n_vocab);
    bool compressed = el_prune_is_compressed(m->gguf);
    if (compressed && (st = el_prune_shape_check(hp, a->qkv_bias, a->qk_norm, m->path)))
        return st;
    for (int il = 0; il < hp->n_layer; il++)
        if ((st = load_layer(m, il, a, &vec)))
            return st;
    if (compressed && (st = el_prune_load(m)))
        return st;
    m->output_norm = vec;
    if ((st = load_vector(m, "output_norm.weight", hp->n_embd, vec)))
        return st;
    vec += hp->n_embd;
    if (gguf_find_tensor(m->gguf, "output.weight")) {
        if ((st = load_weight(m, "output.weight", hp->n_embd, rows, &m->output)))
            return st;
        m->output = row_range(&m->output, 0, hp->n_vocab);
    } else {
        m->output = m->tok_embd; /* tied embeddings */
    }
    /* rope_freqs (llama3) or longrope's pair (phi3), never both: which scaling applies would
     * be unclear (and the vector block has room for two sets) */
    bool freqs = gguf_find_tensor(m->gguf, "rope_freqs.weight") != NULL;
    bool shrt = gguf_find_tensor(m->gguf, "rope_factors_short.weight") != NULL;
    bool lng = gguf_find_tensor(m->gguf, "rope_factors_long.weight") != NULL;
    if (freqs && (shrt || lng))
        return el_error(EL_ERR_FORMAT, "%s: both rope_freqs.weight and rope_factors_*.weight: "
                        "which rope scaling applies is unclear", m->path);
    if (shrt != lng)
        return el_error(EL_ERR_FORMAT, "%s: rope_factors_%s.weight without its partner "
                        "rope_factors_%s.weight", m->path, shrt ? "short" : "long",
                        shrt ? "long" : "short");
    if ((st = rope_factor_vector(m, "rope_freqs.weight", &vec, &m->rope_freqs)) ||
        (st = rope_factor_vector(m, "rope_factors_short.weight", &vec, &m->rope_factors_short)) ||
        (st = rope_factor_vector(m, "rope_factors_long.weight", &vec, &m->rope_factors_long)))
        return st;
    for (uint64_t i = 0; i < m->gguf->n_tensors; i++) {
        const gguf_tensor *t = &m->gguf->tensors[i];
        int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        m->n_params += n;
        m->weight_bytes += t->nbytes;
    }
    m->has_weights = true;
    return EL_OK;
}

el_status el_model_load_gguf(el_model *m, bool vocab_only) {
    el_status st = gguf_open(m->path, &m->gguf);
    if (st)
        return st;
    gguf_str s;
    if ((st = gguf_get_str(m->gguf, "general.architecture", &s)) != EL_OK)
        return st == EL_ERR_NOT_FOUND
                   ? el_error(EL_ERR_FORMAT, "%s: general.architecture is missing", m->path)
                   : st;
    snprintf(m->arch, sizeof m->arch, "%.*s", (int)(s.len < sizeof m->arch ? s.len : 31), s.ptr);
    if ((st = gguf_get_u64(m->gguf, EL_UNIQL_BASIS_KEY, &m->uniql_basis)) != EL_OK &&
        st != EL_ERR_NOT_FOUND)
        return st;
    if (gguf_get_str(m->gguf, "general.name", &s) == EL_OK) {
        m->name = malloc(s.len + 1);
        if (!m->name)
            return el_error(EL_ERR_NOMEM, "%s: out of memory", m->path);
        memcpy(m->name, s.ptr, s.len);
        m->name[s.len] = '\0';
    }
    if (gguf_find(m->gguf, "tokenizer.ggml.model")) {
        if ((st = el_vocab_load_gguf(m->gguf, &m->vocab)))
            return st;
        m->hp.n_vocab = m->vocab->n_tokens;
    }
    if (vocab_only || m->gguf->n_tensors == 0) {
        if (!m->vocab)
            return el_error(EL_ERR_FORMAT, "%s: no tensors and no tokenizer: nothing to load",
                            m->path);
        return EL_OK;
    }
    return load_weights(m);
}
