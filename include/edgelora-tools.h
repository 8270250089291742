/*
 * edgelora-tools.h - the C API of edgelora's tools: conversion (Hugging Face, llama2.c, PEFT),
 * synthetic models, merging, quantization, training, tokenizer training, file descriptions,
 * measurement, and the JSON reader the tools read request files with.
 *
 * An application that only runs models needs edgelora.h and libedgelora (libc, libm and pthreads
 * only). The functions declared here live in libedgelora-tools, which links OpenBLAS and LAPACKE
 * (pkg-config edgelora-tools); link it before libedgelora. The conventions of edgelora.h hold
 * here too; in addition:
 *  - Every callback takes the caller's pointer first (void *user), and the field of a params
 *    struct that holds it is called `user`.
 *  - A long run that a callback stops returns EL_ERR_CANCELLED (el_last_error() says what was
 *    kept: a checkpoint, or nothing written).
 */
#ifndef EDGELORA_TOOLS_H
#define EDGELORA_TOOLS_H

#include <stdio.h>

#include "edgelora.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- conversion */

/* Progress of a long write: tensors done of total, and bytes of output written of total.
 * Called after each tensor, from the calling thread. */
typedef void (*el_progress_fn)(void *user, int32_t done, int32_t total, uint64_t bytes_done,
                               uint64_t bytes_total);

/* Converts a Hugging Face model folder (config.json; model.safetensors or shards listed by
 * model.safetensors.index.json; tokenizer.json and tokenizer_config.json) of architecture
 * LlamaForCausalLM, MistralForCausalLM or Qwen2ForCausalLM to one GGUF file with the names,
 * layouts and metadata of llama.cpp's converter. type ("f32", "f16", "bf16", "q8_0", "q4_0",
 * "q4_k", "q6_k", or edgelora's own "w8", "w4", "w4g32", "w4g64", "w4g128", "w8a16", which
 * llama.cpp cannot read; NULL: "f16") is the type of the 2-D weights; vectors stay f32. A
 * matrix whose rows do not divide into the type's blocks is written as f16. progress may be
 * NULL. The file is written to a temporary name and renamed: a failure leaves no output file. */
el_status el_convert_hf(const char *dir, const char *out_path, const char *type,
                        el_progress_fn progress, void *user);

/* The model shapes el_synth knows, as a NULL-terminated list ("llama-3.2-1b", ...). */
const char *const *el_synth_shapes(void);

/* Writes a model with the exact shape (hyper-parameters, tensor shapes, vocabulary size and
 * special token ids) of a real architecture, with random weights (deterministic for a seed) and a
 * synthesized but valid tokenizer: for measuring speed and memory at real sizes, never quality.
 * type as for el_convert_hf (NULL: "q4_0"). Tensors are produced one at a time while writing. */
el_status el_synth(const char *shape, const char *type, const char *out_path, uint64_t seed,
                   el_progress_fn progress, void *user);

/* Writes the model at src in the UniQL layout (docs/formats.md "UniQL") with the identity plan:
 * at each of the n_rates rates (ascending from 0, below 1) every layer keeps the fraction
 * 1 - rate of its MLP channels, Q/K and V/O dims, rounded down to the layout's granularity.
 * For speed and memory measurements, and test files, of any llama-family model without
 * compressing it (`edgelora compress` writes the sorted, quantized layout of a real plan). The
 * file is written to a temporary name and renamed: a failure leaves no output file. */
el_status el_uniql_write_uniform(const char *src, const float *rates, int32_t n_rates,
                                 const char *dst);

/* Writes a llama2.c checkpoint and its tokenizer as a GGUF file llama.cpp can load too. Without
 * a tokenizer (NULL) it fails, saying what model_path is (a checkpoint or not a model). */
el_status el_convert_llama2c(const char *model_path, const char *tokenizer_path,
                             const char *out_path);

/* ---------------------------------------------------------------- adapters */

/* el_adapter_load keeping every matrix in the file's type (float32 too), for tools that compute
 * with or write the adapter's values (merging, converting, profiles, compression, training). */
el_status el_adapter_load_exact(const el_model *model, const char *path, el_adapter **out);

/* Writes the adapter (loaded from either format) as a GGUF LoRA adapter in llama.cpp's layout:
 * F32 tensors blk.N.<linear>.weight.lora_a / lora_b, adapter.lora.alpha its alpha (or its
 * largest rank), each B multiplied by factor * rank / alpha so that llama.cpp's alpha / rank
 * gives each pair's own factor (1 for PEFT's plain alpha / r). Written to a temporary file and
 * renamed. */
el_status el_adapter_save(const el_adapter *adapter, const char *path);

/* Writes base + the bound adapters' terms as one GGUF (2-D weights that an adapter changes are
 * stored as F32; everything else is copied as it is): the offline alternative to run-time
 * adapters, and their oracle in tests. */
el_status el_merge_adapters(const char *base_path, const char *const *adapter_paths,
                            const float *scales, int32_t n, const char *out_path);

/* ---------------------------------------------------- quantization profiles */

/* What el_profile_make calibrates with. */
typedef struct el_profile_params {
    const char *const *adapters; /* adapter paths, each bound alone for one run over the text */
    int32_t n_adapters;          /* 0: the bare base (a profile for its activations only) */
    const char *text_path;       /* calibration text */
    const int32_t *tokens;       /* or, with text_path NULL, calibration token ids */
    int64_t n_tokens;
    int64_t max_tokens;          /* tokens of it used (default 4096) */
    double percentile;           /* of |x| and |A x| (90..100; default 99.99, as quantize's) */
    int32_t n_threads;           /* 0: all cores */
    bool (*progress)(void *user, int64_t tokens_done, int64_t tokens_total); /* false cancels */
    void *user;
} el_profile_params;

el_profile_params el_profile_default_params(void);

/* Writes a quantization profile (docs/formats.md, "Quantization profiles") for the model at
 * model_path: the static scale of every linear layer's int8 input activations, and of the int8
 * A, B and A x of the adapters, from the text run through the model with each adapter bound in
 * turn (a and b cover every given adapter's largest value; x and t are the percentile of what
 * the runs saw). Run the model with el_model_params.profile_path = out_path. The file is written
 * whole or not at all. */
el_status el_profile_make(const char *model_path, const el_profile_params *params,
                          const char *out_path);

/* ------------------------------------------------------------ quantization */

/* What el_quantize did with one tensor (passed to the progress callback). */
typedef struct el_quantize_tensor {
    const char *name;
    int32_t index, n_tensors;     /* this is tensor index (0-based) of n_tensors */
    const char *from_type;        /* as stored in the input ("f32") */
    const char *to_type;          /* as written ("q4_0"); differs from the requested type when
                                   * the row length does not fit its blocks (see docs) */
    bool quantized;               /* false: copied unchanged (1-D tensors, norms, biases) */
    bool fallback;                /* quantized to a fallback type, not the requested one */
    int64_t n_elements;
    double rel_rms_error;         /* ||W - deq(Q(W))|| / ||W||, measured by dequantizing what is
                                   * written; 0 for copied tensors */
    uint64_t bytes_in, bytes_out; /* of this tensor */
    uint64_t bytes_done, bytes_total; /* input bytes processed so far, of all tensors */
    float act_scale;              /* static scale of its int8 activations written with it
                                   * (calibration); 0: none, per-token scales */
} el_quantize_tensor;

/* Returns false to stop: el_quantize then returns EL_ERR_CANCELLED and writes nothing. */
typedef bool (*el_quantize_progress_fn)(void *user, const el_quantize_tensor *t);

typedef struct el_quantize_params {
    /* A llama-quantize file type ("q4_k_m", "q3_k_s", "q4_0", "q8_0", "f16", ...; "q4_k" is
     * "q4_k_m"), whose mix of types per tensor is llama.cpp's (docs/quantize.md), or one of
     * edgelora's own types ("w4", "w8", ...), which are written everywhere alike. */
    const char *type;
    int32_t n_threads;                /* 0: all cores */
    el_quantize_progress_fn progress; /* called after each tensor, from the calling thread
                                       * (may be NULL) */
    void *user;
    /* Static activation scales (docs/quantize.md): with calib_path, the input model is first run
     * over the first calib_tokens tokens of that text file, and every weight written in a type
     * dotted with int8 activations (w8, w4, w4g*) gets the scale r / 127, r the
     * calib_percentile-th percentile of |x| at its input over them (larger |x| are clipped at
     * run time), stored as a tensor "<weight>.act_scale" (docs/formats.md). NULL: none
     * (per-token scales at run time). calib_progress (may be NULL) reports tokens run; false
     * cancels (el_quantize returns EL_ERR_CANCELLED and writes nothing). */
    const char *calib_path;
    int64_t calib_tokens;             /* default 8192 */
    double calib_percentile;          /* 90..100 (100: the maximum); default 99.99 */
    bool (*calib_progress)(void *user, int64_t tokens_done, int64_t tokens_total);
    /* llama-quantize's --pure: every converted weight in the mix's base type (Q4_K for
     * q4_k_m), with none of its per-tensor choices; rows that do not fit still fall back */
    bool pure;
} el_quantize_params;

el_quantize_params el_quantize_default_params(void);

/* Writes in_path (a GGUF model) to out_path with its weight matrices in the requested mix of
 * types (the tensors llama-quantize converts); 1-D tensors (norms, biases) are copied, static activation scales of the input dropped (they are
 * remade with calib_path). Metadata is copied, general.file_type updated. The output
 * is written to a temporary file and renamed: on any failure no output file exists. */
el_status el_quantize(const char *in_path, const char *out_path, const el_quantize_params *params);

/* Whether a type name is one el_quantize writes (EL_ERR_INVALID_ARG with the list of names if
 * not), and whether llama.cpp can read it (false for edgelora's own types). */
el_status el_quantize_type_check(const char *type, bool *llama_cpp_readable);

/* ------------------------------------------------------------- compression */

/* Progress of `compress`: a stage ("calibrate", "sort+gptq", "write"; with fine-tuning
 * "calibrate", "sort", "finetune", "gptq", "write") and how much of it is done, and one "plan"
 * call per rate with what that rate keeps. Called from the calling
 * thread; returning false cancels (EL_ERR_CANCELLED, nothing written). */
typedef struct el_compress_progress {
    const char *stage;
    int64_t done, total; /* tokens (calibrate), layers (sort+gptq), files (write), rates (plan) */
    double stage_s;      /* seconds since the stage started */
    /* "plan" only: the rate, the kept sizes of every layer (the rule is uniform), and the
     * fraction of the block weights' elements kept */
    float rate;
    int32_t ff_kept, qk_kept, vo_kept;
    double kept_fraction;
    /* "finetune" only (done/total: steps): the step's loss, at the table rate it drew (rate) */
    float loss;
} el_compress_progress;
typedef bool (*el_compress_progress_fn)(void *user, const el_compress_progress *p);

typedef struct el_compress_params {
    const char *calib_path;   /* calibration text (required) */
    int64_t calib_tokens;     /* tokens of it used (default 8192); at least 256 are needed */
    const float *rates;       /* ascending global pruning rates from 0, each below 0.9 */
    int32_t n_rates;          /* NULL / 0: 0, 0.05, ..., 0.35 */
    /* the weights' type: a 4-bit type for GPTQ (q4_0, w4g32, w4g64, w4g128; group 0: the
     * type's own, 64 or 128 with a NULL type: w4g64 / w4g128), or f32 / f16 for sorting
     * alone. A weight whose rows do not divide into the groups is stored as f16. */
    const char *type;         /* NULL: q4_0 */
    int32_t group;
    /* the output head's type with a 4-bit type (and a tied token embedding's, which is the head):
     * NULL or that type (GPTQ), or q8_0 (rounded to nearest: at 8 bits GPTQ has little left to
     * win), what llama.cpp's quantizer does for a head, the tensor a small model loses most on */
    const char *head_type;
    double damp;              /* GPTQ damping, a fraction of the Hessian's mean diagonal (0.01) */
    double ridge;             /* ridge of the MLP leverage scores, the same kind of fraction (0.1) */
    bool sort_qk;             /* sort Q/K by RoPE pairs (default true; where every head
                               * dimension rotates): the sorted model then needs RoPE with
                               * index (the UniQL run time); false: Q/K stay, unpruned */
    const char *sorted_path;  /* also keep the sorted model here: an ordinary GGUF of the
                               * original shapes, before the UniQL layout (NULL: not kept) */
    int32_t n_threads;        /* 0: all cores */
    /* masked LoRA fine-tuning before GPTQ (UniQL's recovery, docs/uniql.md): each step draws
     * a rate of the table and masks what it drops; the adapter (on every linear, alpha = rank)
     * learns by distillation from the original model and is merged into the sorted weights.
     * Steps 0: none. Text NULL: the calibration text; plot: an SVG of the loss (NULL: none) */
    int64_t finetune_steps;
    const char *finetune_path;
    int32_t finetune_rank;    /* 16 */
    float finetune_lr;        /* peak, cosine to a tenth after a tenth of the steps' warmup (1e-3) */
    int32_t finetune_ctx;     /* tokens per sequence (128) */
    int32_t finetune_batch;   /* sequences per step (8) */
    const char *finetune_plot;
    const char *finetune_adapter_path; /* also keep the adapter, before its merge: a LoRA of
                                        * the sorted model compress writes without fine-tuning
                                        * (NULL: not kept) */
    uint64_t seed;            /* the adapter's initialization, data order, drawn rates (1) */
    /* LoRA adapters of the input model, re-expressed in the sorted basis (MLP channels and Q/K
     * pairs moved, V/O heads turned) and written as lora_out_dir/<name>.gguf, tagged for the
     * output (the loader refuses them on any other model, and the originals on the output) */
    const char *const *lora_paths;
    int32_t n_loras;
    const char *lora_out_dir;
    el_compress_progress_fn progress; /* may be NULL */
    void *user;
} el_compress_params;

el_compress_params el_compress_default_params(void);

/* UniQL's offline compression (docs/uniql.md): runs the model at in_path over calibration text,
 * sorts every block's channels by importance (MLP by ridge leverage, Q/K by RoPE pairs, V/O by
 * a weighted SVD) without changing its function, quantizes every weight matrix by GPTQ, and
 * writes out_path in the UniQL layout (docs/formats.md) with the plan that maps each rate to
 * the kept sizes. Written through a temporary file: on failure nothing is left. */
el_status el_compress(const char *in_path, const char *out_path, const el_compress_params *p);

/* A sorted model (el_compress's output, before any pruning layout) pruned at `rate` by copying
 * the kept prefixes into an ordinary smaller GGUF: every layer keeps the MLP channels and V/O
 * dimensions compress's plan gives that rate (feed_forward_length and attention.value_length
 * shrink); Q/K stay whole. The physically sliced reference of a pruned model. */
el_status el_compress_slice(const char *sorted_path, float rate, const char *out_path);

/* ---------------------------------------------------------------- training */

/* Progress of a training run, reported after every optimizer step (and after each held-out
 * evaluation). The library never prints: the caller draws progress bars from this. */
typedef struct el_train_progress {
    int64_t step;          /* optimizer steps done */
    int64_t n_steps;       /* steps the run will do */
    float loss;            /* mean training loss of this step */
    float eval_loss;       /* held-out loss just measured, or a NaN at steps without evaluation */
    float lr;              /* learning rate of this step */
    double tokens_per_s;   /* trained tokens per second since the run (or resume) started */
    double elapsed_s;      /* seconds since the run (or resume) started */
} el_train_progress;

/* Called after each step; returning false stops the run cleanly (as a kill would, but with a
 * checkpoint written first when checkpoint_path is set): the run returns EL_ERR_CANCELLED. */
typedef bool (*el_train_progress_fn)(void *user, const el_train_progress *p);

typedef struct el_train_params {
    /* model shape (el_train only; el_finetune_lora takes it from the base model, and n_ctx as
     * the tokens per example, 0: the base's training context) */
    int32_t dim, n_layer, n_head, n_head_kv, n_ff, n_ctx;
    bool tied_embeddings;
    /* quantization-aware training (el_train only): "w4a8" trains the model its integer form
     * computes (each block's linear weights int4 per output channel, their inputs int8 at one
     * scale each, tracked over the batches; gradients straight through the rounding) and writes
     * that form (W4 weights with their inputs' static scales); NULL: float */
    const char *qat;
    /* el_train only: start from this model's weights (a GGUF of a plain llama model) instead of
     * random ones; its shape, context and vocabulary replace the fields above and
     * tokenizer_path, and init_n_ff above its FFN width widens the FFN (the new channels add
     * nothing at the start: the model's function is where training begins) */
    const char *init_path;
    int32_t init_n_ff;
    /* data: text files (tokenized with the tokenizer), or token shards: files ending in ".u16"
     * or ".u32" hold little-endian uint16 / uint32 token ids. el_finetune_lora reads JSONL
     * ({"prompt": ..., "response": ...} per line). */
    const char *tokenizer_path;        /* el_train: a GGUF with a vocabulary */
    const char *const *train_files;
    int32_t n_train_files;
    const char *const *eval_files;     /* held-out data (optional) */
    int32_t n_eval_files;
    /* optimization */
    int64_t n_steps;
    int32_t batch;          /* sequences per micro-batch */
    int32_t grad_accum;     /* micro-batches per step */
    float lr, min_lr_ratio; /* peak learning rate; the cosine ends at lr * min_lr_ratio */
    int64_t warmup;         /* steps of linear warmup */
    float weight_decay, beta1, beta2, eps;
    float grad_clip;        /* global gradient-norm limit (<= 0: none) */
    int64_t eval_every;     /* steps between held-out evaluations (0: only at the end) */
    int32_t eval_batches;   /* micro-batches per evaluation */
    uint64_t seed;          /* initialization and data order */
    int32_t n_threads;      /* 0: all cores */
    /* checkpoints: model + optimizer + data position + RNG, written atomically */
    const char *checkpoint_path; /* NULL: none */
    int64_t checkpoint_every;    /* steps between checkpoints (0: only when stopped or done) */
    bool resume;                 /* continue from checkpoint_path if it exists */
    const char *plot_path;       /* SVG of the train/eval loss curves (NULL: none) */
    el_train_progress_fn progress; /* may be NULL */
    void *user;                    /* passed to progress */
} el_train_params;

el_train_params el_train_default_params(void);

/* Pretrains a llama-shaped model from scratch and writes it as a GGUF (arch llama, F32, with the
 * tokenizer's vocabulary). If the progress callback stops the run before its last step, it
 * returns EL_ERR_CANCELLED: nothing is written to out_path (the loss plot is), and the checkpoint
 * (written first, if checkpoint_path is set) allows a resume. */
el_status el_train(const el_train_params *p, const char *out_path);

typedef struct el_lora_train_params {
    const char *base_path;  /* the frozen base model (any GGUF the engine loads) */
    int32_t rank;
    float alpha;
    const char *targets;    /* comma-separated subset of q,k,v,o,gate,up,down */
    const char *peft_dir;   /* also write a PEFT adapter folder here (NULL: no) */
    bool qat;               /* train against the base as its integer form computes: every input
                             * the run time quantizes to int8 at a static scale is so quantized
                             * (gradients straight through); the base must have one (a model of
                             * el_train's "w4a8", or quantize --type w4a8 --calibrate), or a
                             * profile (which fixes the int8 inputs of W8/W4 bases and of
                             * ggml's block types), whose int8 grids the adapter's terms then
                             * take too (the adapter written is then for that profile alone) */
    const char *profile_path; /* the base runs under this quantization profile (NULL: none) */
    /* distillation (NULL: none): the loss is KL(teacher || student) over the response tokens in
     * place of the cross-entropy with them, the teacher this model (float, of the base's
     * vocabulary; another shape or precision is fine) with teacher_lora bound (NULL: none) */
    const char *teacher_path;
    const char *teacher_lora_path;
} el_lora_train_params;

el_lora_train_params el_lora_train_default_params(void);

/* Trains a LoRA adapter on prompt/response pairs (loss on the response tokens and EOS only; the
 * base is frozen) and writes it as a GGUF adapter el_adapter_load reads (llama.cpp's layout).
 * A run the progress callback stops returns EL_ERR_CANCELLED, as el_train does. */
el_status el_finetune_lora(const el_train_params *p, const el_lora_train_params *lp,
                           const char *out_path);

/* QUAD (docs/training.md): one quantization profile for every adapter of a base. (a) each
 * adapter's own profile (el_profile_make over its training examples); (b) its sensitivity, the
 * held-out KL(float adapter || int8 under that profile) over the response tokens; (c) the most sensitive adapter's
 * profile becomes the shared one; (d) every other adapter is tuned by distillation into it
 * (teacher: the float base with the float adapter; student: the base under the shared profile
 * with the adapter's terms on its int8 grids; loss: KL(teacher || student) over the response
 * tokens), kept if it brought the adapter closer to its float self on the held-out examples;
 * (e) the profile and the adapters are written. Losses are the mean over the held-out
 * examples' response tokens, in nats. */
typedef struct el_quad_adapter {
    char name[64];          /* the adapter's file name without folders and ".gguf" */
    double float_loss;      /* cross-entropy: the float adapter */
    double own_loss;        /* int8 under its own profile */
    double sensitivity;     /* KL(float || int8 under its own profile): what (c) ranks by */
    double shared_loss;     /* int8 under the shared profile, as it came */
    double tuned_loss;      /* int8 under the shared profile after distillation */
    double kl_before, kl_after; /* KL(float || int8 under the shared profile), before, after
                                 * tuning */
    bool sets_profile;      /* the most sensitive: the shared profile is its own (not tuned) */
    bool tuned;             /* the tuned adapter was written: it came closer to its float self
                             * (kl_after < kl_before); else it as it came, and the figures after
                             * are those before */
} el_quad_adapter;

typedef struct el_quad_params {
    const char *const *adapters;
    int32_t n_adapters;          /* 1..64 */
    const char *data_dir;        /* <name>.train.jsonl (calibration, tuning) and
                                  * <name>.eval.jsonl (sensitivity, held-out) of each adapter */
    int64_t calib_tokens;        /* of each adapter's training examples, whole examples spread
                                  * evenly over them (default 4096) */
    double percentile;           /* as el_profile_params's (default 99.99) */
    el_train_params train;       /* distillation's optimization: steps, batch, lr, n_ctx (tokens
                                  * per example), threads, eval_every, progress (data and plots
                                  * are el_quad's) */
    /* before each stage ("own profile", "sensitivity", "shared profile", "distillation") of
     * adapter i of n; returning false cancels */
    bool (*stage)(void *user, const char *stage, int32_t i, int32_t n);
    void *user;
} el_quad_params;

el_quad_params el_quad_default_params(void);

/* Runs QUAD for the base at base_path and writes into out_dir (created if need be):
 * profile.gguf, the shared profile; <name>.gguf, every adapter for it (adapter.profile set: the
 * loader refuses it under another profile or none); <name>.own.profile.gguf; <name>.loss.svg,
 * the distillation's curves. results[n_adapters] gets each adapter's figures. */
el_status el_quad(const char *base_path, const el_quad_params *p, const char *out_dir,
                  el_quad_adapter *results);

typedef struct el_forecast_train_params {
    const char *base_path;    /* the frozen base model */
    const char *adapter_path; /* train for the base with this adapter bound (NULL: the bare base) */
    int32_t n_slots;          /* forecast vectors, 1..8 (default 3) */
    int32_t prefix;           /* most text tokens before the slots in an example (0: the base's
                               * context less the slots, at most 64); each example takes between
                               * a quarter of it and all of it */
    bool text_targets;        /* slots learn the text's tokens instead of the model's own greedy
                               * continuation (the default, which is what decoding accepts) */
} el_forecast_train_params;

el_forecast_train_params el_forecast_train_default_params(void);

/* Trains a forecast set for self-speculative decoding (el_spec in edgelora.h): the base and the
 * adapter frozen, gradients into the vectors only, over text files (train_files, eval_files of
 * p; n_ctx ignored). Writes a forecast GGUF naming the base (and adapter) it was trained for.
 * Progress, checkpoints, resume, the loss plot and cancelling are as for el_train. */
el_status el_train_forecast(const el_train_params *p, const el_forecast_train_params *fp,
                            const char *out_path);

/* Trains a byte-level BPE vocabulary of vocab_size tokens (256 bytes + merges + special tokens)
 * over text files and writes it as a vocabulary-only GGUF (tokenizer.ggml.model "gpt2"). */
el_status el_train_tokenizer(const char *const *files, int32_t n_files, int32_t vocab_size,
                             const char *out_path);

/* ------------------------------------------------------------ image model */

/* A small diffusion UNet over 28 x 28 grey images (docs/vision.md): trained here on MNIST,
 * stored as a GGUF of architecture "edgelora-unet" (docs/formats.md), sampled by DDPM or DDIM. */

typedef struct el_diffusion_train_params {
    const char *images_path;  /* IDX images (gzip or plain), 28 x 28 */
    const char *labels_path;  /* IDX labels of the same images */
    int32_t n_heldout;        /* the last n_heldout images are held out for the eval loss */
    /* model shape */
    int32_t ch, temb, groups, n_timesteps;
    float beta_1, beta_T;     /* linear noise schedule */
    /* optimization */
    int64_t n_steps;
    int32_t batch;
    float lr, min_lr_ratio;   /* AdamW, warmup then cosine to lr * min_lr_ratio */
    int64_t warmup;
    float grad_clip;          /* global gradient-norm limit (<= 0: none) */
    float ema;                /* decay of the weights' moving average, which is what is saved */
    float p_uncond;           /* fraction of images trained without their class */
    int64_t eval_every;       /* steps between held-out evaluations (0: only at the end) */
    int32_t eval_batches;     /* held-out batches per evaluation (always the same ones) */
    uint64_t seed;            /* initialization, data order, timesteps and noise */
    int32_t n_threads;        /* 0: all cores */
    const char *checkpoint_path; /* NULL: none */
    int64_t checkpoint_every;    /* steps between checkpoints (0: only when stopped or done) */
    bool resume;                 /* continue from checkpoint_path if it exists */
    const char *plot_path;       /* SVG of the train/eval loss curves (NULL: none) */
    el_train_progress_fn progress; /* tokens_per_s counts images per second */
    void *user;
} el_diffusion_train_params;

el_diffusion_train_params el_diffusion_train_default_params(void);

/* Trains the image model (noise prediction, mean squared error) and writes it to out_path. A
 * run the progress callback stops returns EL_ERR_CANCELLED with nothing written there (the
 * checkpoint, if set, allows a resume), as el_train. */
el_status el_train_diffusion(const el_diffusion_train_params *p, const char *out_path);

/* A task adapter of the image model (LoRA on its convolutions, docs/vision.md), trained on a
 * frozen base. Tasks: "inpaint" (fill a masked part of an image: the condition channels carry
 * the image with the hole blanked and the mask), "bold" (stroke editing: draw the image again
 * with bold strokes), "upscale" (a 14 x 14 image, doubled, drawn at 28 x 28), "guide" (draw a
 * class in one forward a step as the base does with classifier-free guidance in two). */
typedef struct el_diffusion_lora_params {
    const char *base_path; /* the frozen image model */
    const char *task;      /* "inpaint", "bold", "upscale" or "guide" */
    int32_t rank;
    float alpha;
    /* QUAD's distillation: with both, the adapter teacher_path (its task, rank and alpha; the
     * fields above are not used) is trained further to draw, under the integer form of the
     * profile profile_path, what it draws with the float model (the target is its float
     * prediction, not the noise) */
    const char *teacher_path, *profile_path;
    float guidance; /* "guide": the classifier-free guidance the adapter learns to give */
} el_diffusion_lora_params;

el_diffusion_lora_params el_diffusion_lora_default_params(void);
/* Whether this version trains and runs the task called name; the names, comma-separated. */
bool el_image_task_known(const char *name);
const char *el_image_task_names(void);
/* Whether the task works on a source image (inpaint, bold, upscale; not guide). */
bool el_image_task_takes_source(const char *name);

/* Trains the adapter with p's data and optimization (its shape fields, ema and checkpoints are
 * not used) and writes it to out_path as an adapter GGUF. */
el_status el_finetune_diffusion(const el_diffusion_train_params *p,
                                const el_diffusion_lora_params *lp, const char *out_path);

/* A loaded image model (read-only once loaded). */
typedef struct el_image_model el_image_model;

el_status el_image_model_load(const char *path, el_image_model **out);
void el_image_model_free(el_image_model *m);
/* Its classes (digits: 10); el_image_params.cls is one of them or -1. */
int32_t el_image_model_n_class(const el_image_model *m);

typedef enum el_image_sampler {
    EL_IMAGE_DDIM = 0, /* deterministic (eta 0), few steps */
    EL_IMAGE_DDPM,     /* ancestral, steps of the training schedule */
} el_image_sampler;

/* The image model's integer forms (docs/vision.md): every convolution int8 per output channel,
 * its input int16 (W8A16) or int8 (W8A8) at a static scale from a profile. */
typedef enum el_image_precision {
    EL_IMAGE_FLOAT = 0,
    EL_IMAGE_W8A16,
    EL_IMAGE_W8A8
} el_image_precision;
/* "float", "w8a16", "w8a8" */
const char *el_image_precision_name(el_image_precision p);

/* A quantization profile: a precision and the static scale of every convolution's input, with
 * the model's integer weights made for it. */
typedef struct el_image_profile el_image_profile;

/* An adapter loaded for a model; binding it (el_image_params.adapter) changes nothing in the
 * model, so one model serves any number of adapters, one image after another. */
typedef struct el_image_adapter el_image_adapter;

/* Refuses an adapter of a language model or of another image model shape. */
el_status el_image_adapter_load(const el_image_model *m, const char *path,
                                el_image_adapter **out);
void el_image_adapter_free(el_image_adapter *a);
/* The task it was trained for ("inpaint", "bold", "upscale"). */
const char *el_image_adapter_task(const el_image_adapter *a);

typedef struct el_image_params {
    const el_image_adapter *adapter; /* NULL: the base model */
    const el_image_profile *profile; /* NULL: float; else the integer form it was made for */
    /* with a task adapter: the source image [784] and the mask [784] of the pixels to draw
     * (non-zero), the others kept from the source. Inpainting needs the mask and hides the
     * masked pixels from the model; editing tasks (bold, upscale) see the whole source and
     * redraw all of it when mask is NULL. Both NULL for plain generation. */
    const uint8_t *input, *mask;
    bool input_per_image;  /* input and mask hold one image per image drawn ([n][784]) */
    int32_t cls;           /* the class to draw, -1 for any */
    float guidance;        /* with a class: classifier-free guidance, eps = eps_none + g (eps_cls
                            * - eps_none); 1 (the default) is the class alone, one forward a
                            * step; other values take two */
    int32_t n_steps;       /* DDIM: steps (<= the model's timesteps); DDPM: ignored (all) */
    el_image_sampler sampler;
    uint64_t seed;         /* the starting noise (and DDPM's noise) */
    int32_t n_threads;     /* 0: all cores */
} el_image_params;

el_image_params el_image_default_params(void);

/* n images [n][28 * 28], values 0..255. With a task adapter and an input, each image is the
 * task's result on the input (the pixels outside the mask, if one is given, kept as they are). */
el_status el_image_generate(el_image_model *m, const el_image_params *p, int32_t n, uint8_t *out);

/* ------------------------------------------------------------ digit classifier, image metrics */

/* A small convolutional digit classifier (docs/vision.md), trained here: its accuracy says how
 * readable generated digits are, and its features are what FID-MNIST compares. */
typedef struct el_classifier_train_params {
    const char *images_path, *labels_path; /* IDX files, as el_diffusion_train_params */
    int32_t n_heldout;        /* the last n_heldout images: held-out loss and accuracy */
    int32_t c1, c2, n_feat;   /* shape: channels of the two convolutions, features */
    int64_t n_steps;
    int32_t batch;
    float lr;                 /* AdamW, warmup then cosine */
    int64_t warmup;
    int32_t max_shift;        /* training images move up to this many pixels each way */
    int64_t eval_every;       /* steps between held-out evaluations (0: only at the end) */
    uint64_t seed;
    int32_t n_threads;        /* 0: all cores */
    const char *plot_path;    /* SVG of the loss curves (NULL: none) */
    el_train_progress_fn progress; /* eval_loss is the held-out cross-entropy */
    void *user;
} el_classifier_train_params;

el_classifier_train_params el_classifier_train_default_params(void);

/* Trains the classifier and writes it to out_path; *accuracy (if not NULL) is the held-out
 * accuracy at the end. */
el_status el_train_classifier(const el_classifier_train_params *p, const char *out_path,
                              float *accuracy);

typedef struct el_digit_classifier el_digit_classifier;

el_status el_digit_classifier_load(const char *path, el_digit_classifier **out);
void el_digit_classifier_free(el_digit_classifier *c);
int32_t el_digit_classifier_n_features(const el_digit_classifier *c);
/* For n images [n][784] (0..255): the most likely digit of each (labels [n], may be NULL) and
 * the features (features [n][n_features], may be NULL). */
el_status el_digit_classifier_run(const el_digit_classifier *c, int32_t n, const uint8_t *images,
                                  int32_t *labels, float *features);

/* PSNR in dB of a against b over n pixels of 0..255 (over the pixels where mask is non-zero, if
 * mask is not NULL): INFINITY for equal images, a NaN for an empty mask. */
double el_image_psnr(const uint8_t *a, const uint8_t *b, const uint8_t *mask, int32_t n);
/* Mean SSIM of two w x h grey images (Wang et al. 2004: an 11 x 11 Gaussian window of standard
 * deviation 1.5, K1 0.01, K2 0.03, over the windows inside the image); NaN below 11 x 11. */
double el_image_ssim(const uint8_t *a, const uint8_t *b, int32_t w, int32_t h);
/* The Frechet distance between Gaussians fitted to two sets of features, fa [na][dim] and fb
 * [nb][dim]: |mu_a - mu_b|^2 + tr(S_a + S_b - 2 (S_a S_b)^(1/2)). */
el_status el_frechet_distance(const float *fa, int64_t na, const float *fb, int64_t nb,
                              int64_t dim, double *out);

/* How good the image model and its task adapters are (`edgelora eval-image`, docs/vision.md),
 * on the held-out images of the MNIST files. */
typedef struct el_image_eval_params {
    const char *images_path, *labels_path;
    int32_t n_heldout;  /* the last n_heldout images: the real set and the tasks' sources */
    int32_t n_images;   /* images drawn for each FID (class-guided: n_images / classes a class) */
    int32_t n_task;     /* held-out images each task runs on (at most n_heldout) */
    int32_t n_steps;    /* DDIM steps */
    float guidance;     /* of the class-guided set */
    uint64_t seed;
    int32_t n_threads;
    int32_t n_keep;     /* images kept for a look (the results' `kept`), 0: none */
    const el_image_profile *profile; /* NULL: float; else the integer form it makes */
    int32_t n_calib;    /* el_image_calibrate's images */
    const el_image_adapter *adapter; /* el_image_eval_model: drawn with it bound (a guide) */
    bool class_only;    /* el_image_eval_model: only the drawings by class (fid_any NaN) */
} el_image_eval_params;

el_image_eval_params el_image_eval_default_params(void);

typedef struct el_image_eval_generation {
    float classifier_accuracy; /* the classifier's, on the held-out images */
    double fid_real;           /* FID-MNIST of as many training images against the held-out ones:
                                * what sampling alone gives, the floor of the two below */
    double fid_any;            /* FID-MNIST of n_images drawn without a class */
    double fid_class;          /* FID-MNIST of n_images drawn class by class, with guidance */
    float class_accuracy;      /* of those, the fraction the classifier labels as asked */
    double s_per_image;        /* seconds per image drawn, unguided and guided */
    double s_per_image_guided;
    uint8_t *kept;             /* n_keep > 0: the first n_keep of each class [classes][n_keep][784]
                                * (malloc'd; free it) */
} el_image_eval_generation;

/* FID-MNIST and class accuracy of the model's own drawings (the base, no adapter). */
el_status el_image_eval_model(el_image_model *m, const el_digit_classifier *c,
                              const el_image_eval_params *p, el_image_eval_generation *out);

typedef struct el_image_eval_task {
    double psnr, psnr_mask; /* mean over the images: whole image, and the pixels drawn */
    double ssim;            /* mean SSIM of the whole image */
    double s_per_image;
    int32_t n;
    uint8_t *kept; /* n_keep > 0: the first n_keep sources, results and ground truths
                    * [3][n_keep][784] (malloc'd; free it) */
} el_image_eval_task;

/* The adapter's task on held-out images (each made as its training makes examples, the holes
 * from p->seed), scored against the task's ground truth. */
el_status el_image_eval_adapter(el_image_model *m, const el_image_adapter *a,
                                const el_image_eval_params *p, el_image_eval_task *out);

/* A profile calibrated on the training images (not the held-out ones): with an adapter that takes
 * a source, on its task's examples of the first n_calib of them; otherwise on n_calib / 2
 * drawings without a class and as many by class (with p's guidance, or the guide adapter a). */
el_status el_image_calibrate(el_image_model *m, const el_image_adapter *a,
                             const el_image_eval_params *p, el_image_precision precision,
                             el_image_profile **out);

/* Calibrates a profile: draws n images as p asks (its adapter and inputs: the task the profile
 * is for; p->profile is ignored) with the float model, recording the largest |input| of every
 * convolution; each scale is that range over the precision's levels (32767 or 127). */
el_status el_image_profile_calibrate(el_image_model *m, const el_image_params *p, int32_t n,
                                     el_image_precision precision, el_image_profile **out);
el_status el_image_profile_save(const el_image_profile *pr, const char *path);
/* Refuses a profile of another model shape, or one that misses a convolution. */
el_status el_image_profile_load(el_image_model *m, const char *path, el_image_profile **out);
void el_image_profile_free(el_image_profile *pr);
el_image_precision el_image_profile_precision(const el_image_profile *pr);

/* Writes 8-bit grey pixels [h][w] as a PNG (through el_output: a killed writer leaves nothing). */
el_status el_png_write_gray(const char *path, const uint8_t *pixels, int32_t w, int32_t h);
/* Reads an 8-bit grey PNG (any other depth or colour type is refused, naming them) into
 * *pixels [h][w] (malloc'd). */
el_status el_png_read_gray(const char *path, uint8_t **pixels, int32_t *w, int32_t *h);

/* ------------------------------------------------------------------ files */

/* A readable description of any file edgelora can read (model, vocab, adapter): format,
 * architecture, shapes, tensor types and sizes, tokenizer. *text is malloc'd; free() it. */
el_status el_file_describe(const char *path, char **text);
/* The same as one JSON object (docs/formats.md gives its fields): strings whole, arrays as
 * their length and first 5 elements, as el_file_describe shows them. */
el_status el_file_describe_json(const char *path, char **json);

/* A file written so that it appears whole or not at all, even if the process is killed while
 * writing it: the data goes to an unnamed file (Linux O_TMPFILE) or a temporary name in the
 * target's folder, put in place of the target at commit; the temporaries of killed writers are
 * removed by the next writer of the same target. Every tool's output goes through it. */
typedef struct el_output el_output;
el_status el_output_open(const char *path, el_output **out);
/* Where to write (buffered); valid until commit or discard. */
FILE *el_output_stream(el_output *o);
/* Flushes, syncs and puts the file in place; frees o whatever happens (on failure nothing is
 * left behind). */
el_status el_output_commit(el_output *o);
/* Drops the output, leaving no file; frees o. */
void el_output_discard(el_output *o);

/* ------------------------------------------------------------------ plots */

/* One curve of a line plot. */
typedef struct el_series {
    const char *name;
    const char *color; /* any SVG colour */
    const float *x, *y;
    size_t n;
} el_series;

/* Writes an SVG line plot (axes with round ticks, one polyline per series, a legend) to path,
 * via a temporary file and rename: the loss curves of training, the curves docs show. */
el_status el_svg_plot(const char *path, const char *title, const char *xlabel, const char *ylabel,
                      const el_series *series, int n_series);

/* ------------------------------------------------ measurement and benchmarks */

/* The memory read bandwidth, in GB/s (1e9 bytes per second), of n_threads threads (<= 0: all
 * cores) reading a buffer of `bytes` together: each thread sums the 64-bit words of its share.
 * The buffer is swept repeatedly (a small one many times per timing, so that caches are measured,
 * not the timer) and the best of several timings is returned. The sum is checked, so the reads
 * cannot be optimized away. Takes a few tenths of a second. */
el_status el_measure_read_bandwidth(size_t bytes, int32_t n_threads, double *gb_s);

/* The same figure over the weights of m that one decode step reads (every layer weight and the
 * output head, as el_model_decode_cost counts them), read where they are mapped: the memory,
 * page sizes and caches decoding itself reads, so that (this bandwidth / weight bytes per token)
 * bounds decoding for whatever state they are in. Every sweep's sum must equal the first's. */
el_status el_model_read_bandwidth(const el_model *m, int32_t n_threads, double *gb_s);

/* The int8 multiply-add peak of the kernels in use (el_measure_int8_peak), which bounds a
 * decode step of many rows from below as the bandwidth bounds one of a single row. */
typedef struct el_int8_peak {
    const char *isa;         /* the kernels in use ("avx512vnni") */
    const char *instruction; /* the dot instruction probed ("vpdpbusd zmm"); NULL: no probe
                              * (the reference kernels), and the figures below are 0 */
    int32_t macs_per_instr;  /* multiply-adds one such instruction does */
    int32_t threads;
    double gmacs_per_s;      /* all threads together, in 1e9 multiply-adds a second */
    double ghz;              /* the cores' clock while busy, measured (0: not on this ISA) */
    double macs_per_cycle;   /* per thread (0 without the clock) */
} el_int8_peak;

/* Runs the probe of the kernels in use (dispatch.h) on n_threads threads (<= 0: all cores) at
 * once, best of several timings, and a chain of dependent additions for the clock. Takes a few
 * tenths of a second. */
el_status el_measure_int8_peak(int32_t n_threads, el_int8_peak *out);

/* The peak resident set size of this process so far, in bytes (0 if the system cannot say). */
uint64_t el_peak_rss_bytes(void);

/* Bytes of this process's file mappings (a loaded model's weights) that the kernel maps with
 * 2 MB pages rather than 4 KB ones (Linux: FilePmdMapped in /proc/self/smaps_rollup; 0 where
 * the system cannot say). Decoding reads every weight once a token, and from 4 KB pages it
 * misses the TLB every 4 KB: docs/bench.md. */
uint64_t el_huge_mapped_bytes(void);

/* What one decode step costs in memory traffic. For a compressed (UniQL) model, at the rate
 * el_model_set_prune chose: the pieces of each layer weight that rate keeps. */
typedef struct el_decode_cost {
    uint64_t weight_bytes_per_token; /* every layer weight + the output head: each is read whole
                                      * for one token (the embedding table is only row-gathered,
                                      * so it is not counted unless it is also the output head) */
    const char *weight_type;         /* the type holding most of those bytes ("q4_0"), or
                                      * "mixed" if no type holds more than half */
    uint64_t multiply_adds_per_token; /* of those weights: inputs x outputs of each matrix */
} el_decode_cost;

el_status el_model_decode_cost(const el_model *model, el_decode_cost *out);

/* ------------------------------------------------------------------- json */

/* The tools' request-file reader (edgelora batch, variants and eval read their JSON and JSONL
 * requests with it): the strict RFC 8259 parser that libedgelora also reads safetensors headers
 * and PEFT configs with internally, so these functions link from libedgelora. A parsed document
 * is a read-only tree owned by el_json_doc; values point into it. Errors are EL_ERR_FORMAT with
 * "name:line:column: what was expected (found what)". Strings are valid UTF-8 once unescaped. */
typedef enum el_json_kind {
    EL_JSON_NONE = 0, /* what el_json_type(NULL) says: a missing key or index */
    EL_JSON_NULL,
    EL_JSON_BOOL,
    EL_JSON_NUMBER,
    EL_JSON_STRING,
    EL_JSON_ARRAY,
    EL_JSON_OBJECT,
} el_json_kind;

typedef struct el_json_doc el_json_doc;
typedef struct el_json_value el_json_value;

/* Parses text[0..len) (it need not be NUL-terminated). name (usually the file path) starts every
 * error message. On success *out owns the tree; free it with el_json_free. */
el_status el_json_parse(const char *text, size_t len, const char *name, el_json_doc **out);
/* The same for one line of a JSON Lines file: error locations ("name:LINE:COL: ...") count
 * lines from line_no, the line's number in the file. */
el_status el_json_parse_line(const char *text, size_t len, const char *name, size_t line_no,
                             el_json_doc **out);
void el_json_free(el_json_doc *doc);
const el_json_value *el_json_root(const el_json_doc *doc);

/* Every accessor accepts NULL (and values of the wrong type) and then returns NONE, NULL, 0 or
 * false, so that lookups chain: el_json_get(el_json_get(root, "a"), "b"). */
el_json_kind el_json_type(const el_json_value *v);
const char *el_json_kind_name(el_json_kind t); /* "string", "object", ... for messages */
/* Member of an object by key (the last one if the key is duplicated), or NULL. */
const el_json_value *el_json_get(const el_json_value *obj, const char *key);
/* Number of elements of an array or members of an object; 0 for anything else. */
size_t el_json_len(const el_json_value *v);
/* i-th element of an array, or the value of the i-th member of an object (in file order). */
const el_json_value *el_json_at(const el_json_value *v, size_t i);
/* Key of the i-th member of an object (NUL-terminated; *len, if given, is its byte length). */
const char *el_json_key_at(const el_json_value *obj, size_t i, size_t *len);
/* A string's unescaped UTF-8 bytes, NUL-terminated; *len, if given, is the byte length. */
const char *el_json_str(const el_json_value *v, size_t *len);
/* true and *out set if v is a number written as an integer literal that fits int64. */
bool el_json_int(const el_json_value *v, int64_t *out);
/* true and *out set if v is a number (the nearest double to the literal). */
bool el_json_num(const el_json_value *v, double *out);
/* true and *out set if v is true or false. */
bool el_json_bool(const el_json_value *v, bool *out);

/* Writes s[0..len) as a quoted JSON string: '"' and '\' escaped, control characters as \n, \t,
 * ... or \u00XX, valid UTF-8 copied as is, each byte of invalid UTF-8 as \ufffd. Returns EL_OK or
 * EL_ERR_IO if the stream reports an error. */
el_status el_json_write_string(FILE *f, const char *s, size_t len);

#ifdef __cplusplus
}
#endif

#endif
