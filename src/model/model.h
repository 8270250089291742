/* model.h - a loaded model: hyper-parameters, weight views into the mapped file, vocabulary.
 *
 * The model is read-only once loaded. 2-D weights are el_weight views straight into the mapping
 * (never copied, never written). Vectors (norms, biases, rope frequency factors) are converted to
 * float32 once at load into one owned block, because they are tiny and may be stored as F16. */
#ifndef EL_MODEL_MODEL_H
#define EL_MODEL_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "edgelora.h"
#include "formats/gguf.h"
#include "formats/llama2c.h"
#include "kernels/matmul.h"
#include "tokenizer/vocab.h"

typedef enum el_rope_style {
    EL_ROPE_NORM, /* rotate adjacent pairs (2i, 2i+1): llama */
    EL_ROPE_NEOX, /* rotate pairs (i, i + n_rot/2): qwen2, qwen3, phi3, gemma3 */
} el_rope_style;

/* The gated activation of the feed-forward: act(gate) * up. */
typedef enum el_ffn_act {
    EL_FFN_SILU, /* SwiGLU: llama, qwen2 */
    EL_FFN_GELU, /* GELU, tanh approximation (GeGLU): gemma3 */
} el_ffn_act;

typedef struct el_hparams {
    int32_t n_vocab;
    int32_t n_embd;
    int32_t n_layer;
    int32_t n_head;
    int32_t n_head_kv;
    int32_t n_ff;
    int32_t n_ctx_train;
    int32_t head_dim_k;   /* attention.key_length (default n_embd / n_head) */
    int32_t head_dim_v;   /* attention.value_length (default head_dim_k) */
    int32_t n_rot;        /* rope.dimension_count (default head_dim_k): rotated dims per head */
    float rms_eps;
    float rope_freq_base;
    float rope_freq_scale; /* 1 / rope.scaling.factor for linear scaling, else 1 */
    el_rope_style rope_style;
    el_ffn_act ffn_act;
    float embd_scale;      /* token embeddings are multiplied by it: sqrt(n_embd) in gemma3,
                            * else 1 */
    float q_scale;         /* queries are multiplied by it before attention, whose scores are
                            * divided by sqrt(head_dim_k): 1 unless the architecture scales
                            * attention otherwise (gemma3 27B) */
    float final_logit_softcap; /* logits = c tanh(logits / c) when > 0 (final_logit_softcapping) */
    /* sliding-window layers (gemma3): a row attends only to cells less than n_swa positions
     * before it; those layers rotate with their own base and scale */
    int32_t n_swa;         /* 0: no sliding window */
    int32_t swa_pattern;   /* layer il is global when il % swa_pattern == swa_pattern - 1 */
    float rope_freq_base_swa;
    float rope_freq_scale_swa;
    float rope_attn_factor; /* rope.scaling.attn_factor (default 1): cos and sin are scaled by it
                             * (phi3's longrope magnitude factor, as llama.cpp applies it) */
    int32_t n_ctx_orig;     /* rope.scaling.original_context_length (default n_ctx_train):
                             * contexts beyond it take the long rope factors (phi3) */
    bool fused_qkv;         /* phi3: Q, K, V are row ranges of one tensor, attn_qkv (unless
                             * the file keeps them apart in attn_q/k/v, as llama.cpp allows) */
    bool fused_gate_up;     /* phi3: gate, up are the two halves of ffn_up (gate first) */
} el_hparams;

typedef struct el_layer {
    const float *attn_norm; /* [n_embd] */
    el_weight wq;           /* n_embd -> n_head * head_dim_k */
    el_weight wk;           /* n_embd -> n_head_kv * head_dim_k */
    el_weight wv;           /* n_embd -> n_head_kv * head_dim_v */
    el_weight wo;           /* n_head * head_dim_v -> n_embd */
    const float *bq, *bk, *bv; /* biases (qwen2) or NULL */
    const float *attn_q_norm, *attn_k_norm; /* [head_dim_k] RMSNorm of each query / key head
                                             * before RoPE (qwen3, gemma3) or NULL */
    const float *attn_post_norm; /* [n_embd] RMSNorm of the attention output before the residual
                                  * (gemma3) or NULL */
    const float *ffn_norm;  /* [n_embd] */
    el_weight w_gate;       /* n_embd -> n_ff */
    el_weight w_up;         /* n_embd -> n_ff */
    el_weight w_down;       /* n_ff -> n_embd */
    const float *ffn_post_norm; /* [n_embd] RMSNorm of the FFN output before the residual
                                 * (gemma3) or NULL */
    bool swa;               /* a sliding-window layer (hp.n_swa, rope_*_swa) */
} el_layer;

/* Which linear layer of a block a matmul is; the hook for adapter terms keys on it. */
typedef enum el_linear {
    EL_LINEAR_Q,
    EL_LINEAR_K,
    EL_LINEAR_V,
    EL_LINEAR_O,
    EL_LINEAR_GATE,
    EL_LINEAR_UP,
    EL_LINEAR_DOWN,
} el_linear;

/* Every (block, linear) of a model numbered in one sequence, block by block: the index of an
 * adapter's (A, B) pair (which the forward pass's adapter hook looks up) and of a calibration
 * range, so the forward pass, the adapter loaders and the calibration agree on it. */
enum { EL_N_LINEAR = EL_LINEAR_DOWN + 1 };
static inline int32_t el_linear_slot(int il, el_linear which) {
    return il * EL_N_LINEAR + (int32_t)which;
}

struct el_model {
    char *path;
    char arch[32];
    char *name;
    el_hparams hp;
    el_vocab *vocab;
    bool has_weights;

    gguf_file *gguf;     /* GGUF models: owns the mapping */
    llama2c_file *l2c;   /* llama2.c models: owns the mapping */

    el_weight tok_embd;  /* n_vocab rows of n_embd (possibly quantized: rows dequantized on use) */
    el_weight output;    /* n_embd -> n_vocab (a copy of tok_embd's view when tied) */
    const float *output_norm; /* [n_embd] */
    const float *rope_freqs;  /* [n_rot/2] frequency divisors (llama3 scaling) or NULL */
    const float *rope_factors_short; /* [n_rot/2] phi3 longrope divisors for contexts up to
                                      * n_ctx_orig, or NULL */
    const float *rope_factors_long;  /* [n_rot/2] the same beyond it, or NULL */
    el_layer *layers;         /* [n_layer] */
    struct el_prune *prune;   /* a UniQL compressed model's rate table and column pieces
                               * (model/prune.h), or NULL: the layers' wo and w_down are then
                               * views without data, their pieces are what runs */
    float *vectors;           /* the owned block the float vectors above point into */
    struct el_profile *profile; /* the quantization profile it runs under (model/profile.h), or
                                 * NULL */
    uint64_t uniql_basis;       /* "uniql.basis" of a UniQL-sorted model: which basis its channels
                                 * were sorted into (adapters must be re-expressed in it); 0: the
                                 * original's */

    int64_t n_params;
    uint64_t weight_bytes;
};

/* Returns the weight of a block's linear layer. */
const el_weight *el_layer_weight(const el_layer *l, el_linear which);
/* The GGUF tensor name of that weight ("attn_q.weight", ...) after "blk.<il>.". */
const char *el_linear_tensor_suffix(el_linear which);
/* The block tensor (name after "blk.<il>.") model m stores a linear in, and in *row0 the first of
 * its rows there: its own tensor from row 0, or a row range of a fused one (phi3's attn_qkv and
 * ffn_up), whose views the loader carves so that nothing else needs to know. */
const char *el_model_linear_tensor(const el_model *m, el_linear which, int64_t *row0);
/* The rope frequency divisors [n_rot/2] a context of n_ctx cells uses, or NULL: rope_freqs, or
 * phi3's long factors when n_ctx exceeds n_ctx_orig and its short ones otherwise (llama.cpp's
 * choice by its per-sequence context size). */
const float *el_model_rope_factors(const el_model *m, int32_t n_ctx);

/* The suffix of the tensor that holds a weight's static activation scale: "<weight>.act_scale",
 * one F32 element (docs/formats.md). */
#define EL_ACT_SCALE_SUFFIX ".act_scale"

/* Reads every "<weight>.act_scale" tensor of a loaded GGUF model into its weight's act_scale,
 * checking that it is one finite positive F32 and belongs to a matmul weight of the model.
 * Weights whose type is not dotted with a8 activations keep dynamic scales (0). */
el_status el_model_load_act_scales(el_model *m);

/* A number that names the trained model rather than the file: its architecture, shape and norm
 * weights (trained values, kept in float by every quantization), so the f16 file and its
 * quantized copies share it and another model of the same shape does not. Files made for one
 * base (forecast sets) store it and are refused for another. */
uint64_t el_model_fingerprint(const el_model *m);

/* Loaders for each file kind; they fill a zeroed model (path already set). */
el_status el_model_load_gguf(el_model *m, bool vocab_only);
el_status el_model_load_llama2c(el_model *m, const char *tokenizer_path, bool vocab_only);

/* Checks the hyper-parameters for consistency (positive sizes, divisibility). */
el_status el_hparams_validate(const el_hparams *hp, const char *path);

#endif
