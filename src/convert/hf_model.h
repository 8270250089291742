/* hf_model.h - what the Hugging Face converter and the shape synthesizer share: a model's
 * hyper-parameters (read from config.json or given by a known shape), the list of GGUF tensors
 * such a model has, and its GGUF metadata as llama.cpp's converter writes it. */
#ifndef EL_CONVERT_HF_MODEL_H
#define EL_CONVERT_HF_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "edgelora-tools.h"
#include "formats/gguf.h"
#include "kernels/types.h"

typedef enum el_rope_scaling {
    EL_ROPE_SCALING_NONE = 0,
    EL_ROPE_SCALING_LINEAR,
    EL_ROPE_SCALING_LLAMA3,
    EL_ROPE_SCALING_LONGROPE, /* phi3: per-pair short and long divisors, a magnitude factor */
} el_rope_scaling;

enum { EL_HF_MAX_ROPE_PAIRS = 256 }; /* rotated pairs of a head (n_rot / 2) longrope may list */

typedef struct el_hf_config {
    const char *arch;  /* GGUF architecture: "llama" (Llama, Mistral), "qwen2", "qwen3", "phi3"
                        * or "gemma3" */
    bool permute_qk;   /* llama: Q and K rows are reordered for llama.cpp's interleaved RoPE */
    bool qkv_bias;     /* qwen2 */
    bool qk_norm;      /* qwen3: q_norm / k_norm of head_dim, per head */
    bool fused;        /* phi3: qkv_proj (Q, K, V rows) and gate_up_proj (gate, up rows) */
    int32_t n_embd, n_ff, n_layer, n_head, n_head_kv, head_dim, n_vocab, n_ctx;
    int32_t n_rot;     /* rotated dims per head: head_dim, or phi3's partial_rotary_factor of it */
    int32_t sliding_window; /* phi3: attention.sliding_window as llama.cpp writes it (0: none) */
    float rms_eps, rope_theta;
    bool tied;         /* tie_word_embeddings: no output.weight */
    el_rope_scaling rope_scaling;
    float rope_factor, low_freq_factor, high_freq_factor;
    int32_t rope_orig_ctx; /* llama3; phi3's original_max_position_embeddings */
    float rope_long[EL_HF_MAX_ROPE_PAIRS], rope_short[EL_HF_MAX_ROPE_PAIRS]; /* longrope */
    int32_t bos, eos;  /* from config.json; -1 if absent */
    /* gemma3 */
    bool gemma3_norms;     /* Q/K and post norms; every norm weight stored as 1 + w, as
                            * llama.cpp's converter does (Hugging Face's RMSNorm multiplies by
                            * 1 + w) */
    int32_t n_swa;         /* sliding_window; 0: no sliding-window layers */
    int32_t swa_pattern;   /* every swa_pattern-th layer is global (0: none is) */
    float rope_theta_swa;  /* rope_local_base_freq: the sliding-window layers' base */
    float final_logit_softcap; /* final_logit_softcapping; 0: none */
} el_hf_config;

/* Reads config.json. Errors name the file and the key. */
el_status el_hf_config_read(const char *path, el_hf_config *out);
/* Checks the figures are positive and consistent (head counts divide, ...). */
el_status el_hf_config_check(const el_hf_config *c, const char *what);

/* The llama3 RoPE frequency factors (head_dim / 2 of them) as llama.cpp's converter computes
 * them for rope_freqs.weight: 1 for short wavelengths, factor for long ones, a smooth blend
 * between. */
void el_hf_llama3_rope_factors(const el_hf_config *c, float *out);

/* The values of a tensor made from config.json rather than read (hf_name ""): rope_freqs.weight
 * (llama3) or rope_factors_long / _short.weight (longrope), n_rot / 2 floats. */
void el_hf_computed_tensor(const el_hf_config *c, const char *name, float *out);

/* longrope's magnitude factor as llama.cpp's converter computes it from the two context lengths
 * (1 when the context is not extended). */
float el_hf_longrope_attn_factor(const el_hf_config *c);

/* One GGUF tensor of the model. */
typedef struct el_hf_tensor {
    char name[64];    /* GGUF name */
    char hf_name[96]; /* the Hugging Face tensor it comes from; "" for rope_freqs */
    int64_t ne0, ne1; /* ggml order (ne0 contiguous); ne1 == 1 for a vector */
    int32_t permute_heads; /* > 0: apply the RoPE row permutation with this many heads */
    float shift;           /* added to every element (gemma3's norms: 1) */
    uint32_t type;         /* type written: vectors f32, matrices the target type */
} el_hf_tensor;

/* The model's tensors in file order, with each matrix's type chosen for target (f16 where its
 * rows do not divide into target's blocks). *out is malloc'd. */
el_status el_hf_plan(const el_hf_config *c, el_type target, el_hf_tensor **out, int32_t *n);

/* general.* and <arch>.* keys, as llama.cpp's converter writes them. */
el_status el_hf_set_hparams(gguf_writer *w, const el_hf_config *c, const char *name,
                            el_type target);

/* The parsed target type name (NULL gives def); EL_ERR_INVALID_ARG naming it if unusable. */
el_status el_hf_target_type(const char *name, const char *def, el_type *out);

#endif
