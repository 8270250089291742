/* synth.c - el_synth: models of real architectures' exact shapes with random weights.
 *
 * The hyper-parameters are the published ones of each model (its config.json, or llama2.c's
 * for the stories models). Weights are made while the file is written, one tensor at a time:
 * quantized types as random blocks directly (random quants, a scale that gives the values a
 * standard deviation of about 0.02, as trained weights have), float types as uniform noise of
 * the same deviation, K-quants by quantizing such noise. Norm weights are 1, so activations
 * stay finite and of ordinary size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/hf_model.h"
#include "convert/synth.h"
#include "core/error.h"
#include "kernels/blocks.h"

#define WEIGHT_STD 0.02f

typedef struct shape {
    const char *name;
    el_synth_vocab vocab;
    el_hf_config c;
} shape;

/* From each model's config.json (llama2.c's model.py for the stories models). */
static const shape shapes[] = {
    {"llama-3.2-1b", EL_SYNTH_VOCAB_LLAMA3,
     {.arch = "llama", .permute_qk = true, .n_embd = 2048, .n_ff = 8192, .n_layer = 16,
      .n_head = 32, .n_head_kv = 8, .head_dim = 64, .n_rot = 64, .n_vocab = 128256, .n_ctx = 131072,
      .rms_eps = 1e-5f, .rope_theta = 500000.0f, .tied = true,
      .rope_scaling = EL_ROPE_SCALING_LLAMA3, .rope_factor = 32.0f, .low_freq_factor = 1.0f,
      .high_freq_factor = 4.0f, .rope_orig_ctx = 8192, .bos = 128000, .eos = 128001}},
    {"stories110m", EL_SYNTH_VOCAB_SPM,
     {.arch = "llama", .permute_qk = true, .n_embd = 768, .n_ff = 2048, .n_layer = 12,
      .n_head = 12, .n_head_kv = 12, .head_dim = 64, .n_rot = 64, .n_vocab = 32000, .n_ctx = 1024,
      .rms_eps = 1e-5f, .rope_theta = 10000.0f, .tied = true, .bos = 1, .eos = 2}},
    {"stories15m", EL_SYNTH_VOCAB_SPM,
     {.arch = "llama", .permute_qk = true, .n_embd = 288, .n_ff = 768, .n_layer = 6,
      .n_head = 6, .n_head_kv = 6, .head_dim = 48, .n_rot = 48, .n_vocab = 32000, .n_ctx = 256,
      .rms_eps = 1e-5f, .rope_theta = 10000.0f, .tied = true, .bos = 1, .eos = 2}},
    {"qwen3-0.6b", EL_SYNTH_VOCAB_QWEN3,
     {.arch = "qwen3", .qk_norm = true, .n_embd = 1024, .n_ff = 3072, .n_layer = 28,
      .n_head = 16, .n_head_kv = 8, .head_dim = 128, .n_rot = 128, .n_vocab = 151936,
      .n_ctx = 40960, .rms_eps = 1e-6f, .rope_theta = 1000000.0f, .tied = true, .bos = 151643,
      .eos = 151645}},
    {"phi-3.5-mini", EL_SYNTH_VOCAB_PHI3,
     {.arch = "phi3", .fused = true, .n_embd = 3072, .n_ff = 8192, .n_layer = 32, .n_head = 32,
      .n_head_kv = 32, .head_dim = 96, .n_rot = 96, .n_vocab = 32064, .n_ctx = 131072,
      .rms_eps = 1e-5f, .rope_theta = 10000.0f, .tied = false,
      .rope_scaling = EL_ROPE_SCALING_LONGROPE, .rope_orig_ctx = 4096, .sliding_window = 262144,
      /* rope_scaling's lists in Phi-3.5-mini-instruct's config.json */
      .rope_long = {1.08f, 1.11f, 1.14f, 1.34f, 1.59f, 1.6f, 1.62f, 2.62f, 3.23f, 3.23f, 4.79f,
        7.4f, 7.7f, 9.09f, 12.2f, 17.67f, 24.46f, 28.57f, 30.42f, 30.84f, 32.59f, 32.93f, 42.32f,
        44.96f, 50.34f, 50.45f, 57.55f, 57.93f, 58.21f, 60.14f, 62.61f, 62.62f, 62.71f, 63.14f,
        63.14f, 63.77f, 63.93f, 63.96f, 63.97f, 64.03f, 64.07f, 64.08f, 64.12f, 64.41f, 64.48f,
        64.51f, 64.53f, 64.84f},
      .rope_short = {1.0f, 1.02f, 1.03f, 1.03f, 1.05f, 1.05f, 1.05f, 1.05f, 1.05f, 1.07f, 1.1f,
        1.11f, 1.16f, 1.16f, 1.17f, 1.29f, 1.34f, 1.68f, 1.79f, 1.82f, 1.85f, 1.88f, 1.91f, 1.94f,
        1.99f, 2.02f, 2.02f, 2.02f, 2.02f, 2.02f, 2.02f, 2.03f, 2.03f, 2.03f, 2.03f, 2.03f, 2.03f,
        2.03f, 2.03f, 2.03f, 2.08f, 2.09f, 2.19f, 2.22f, 2.59f, 2.73f, 2.75f, 2.84f},
      .bos = 1, .eos = 32000}},
    {"qwen2.5-0.5b", EL_SYNTH_VOCAB_QWEN2,
     {.arch = "qwen2", .qkv_bias = true, .n_embd = 896, .n_ff = 4864, .n_layer = 24,
      .n_head = 14, .n_head_kv = 2, .head_dim = 64, .n_rot = 64, .n_vocab = 151936, .n_ctx = 32768,
      .rms_eps = 1e-6f, .rope_theta = 1000000.0f, .tied = true, .bos = 151643,
      .eos = 151643}},
    {"smollm-135m", EL_SYNTH_VOCAB_SMOLLM,
     {.arch = "llama", .permute_qk = true, .n_embd = 576, .n_ff = 1536, .n_layer = 30,
      .n_head = 9, .n_head_kv = 3, .head_dim = 64, .n_rot = 64, .n_vocab = 49152, .n_ctx = 2048,
      .rms_eps = 1e-5f, .rope_theta = 10000.0f, .tied = true, .bos = 0, .eos = 0}},
    {"tinyllama-1.1b", EL_SYNTH_VOCAB_SPM,
     {.arch = "llama", .permute_qk = true, .n_embd = 2048, .n_ff = 5632, .n_layer = 22,
      .n_head = 32, .n_head_kv = 4, .head_dim = 64, .n_rot = 64, .n_vocab = 32000, .n_ctx = 2048,
      .rms_eps = 1e-5f, .rope_theta = 10000.0f, .tied = false, .bos = 1, .eos = 2}},
    /* Gemma 3 1B: its norm weights 1 in the file are Hugging Face's 0, its initial value */
    {"gemma-3-1b", EL_SYNTH_VOCAB_GEMMA,
     {.arch = "gemma3", .gemma3_norms = true, .n_embd = 1152, .n_ff = 6912, .n_layer = 26,
      .n_head = 4, .n_head_kv = 1, .head_dim = 256, .n_rot = 256, .n_vocab = 262144,
      .n_ctx = 32768, .rms_eps = 1e-6f, .rope_theta = 1000000.0f, .rope_theta_swa = 10000.0f,
      .tied = true, .n_swa = 512, .swa_pattern = 6, .bos = 2, .eos = 1}},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

const char *const *el_synth_shapes(void) {
    static const char *names[N_SHAPES + 1];
    for (size_t i = 0; i < N_SHAPES; i++) names[i] = shapes[i].name;
    return names;
}

typedef struct job {
    const el_hf_tensor *t;
    const el_hf_config *c;
    uint64_t seed;
    el_progress_fn fn;
    void *user;
    int32_t *done, total;
    uint64_t *bytes_done, bytes_total;
} job;

/* n floats uniform in [-a, a] with a = sqrt(3) * WEIGHT_STD. */
static void noise(uint64_t *rng, float *x, int64_t n) {
    const float a = 1.7320508f * WEIGHT_STD;
    for (int64_t i = 0; i < n; i++)
        x[i] = a * ((float)(el_synth_next(rng) >> 40) * (2.0f / 16777216.0f) - 1.0f);
}

static void random_bytes(uint64_t *rng, uint8_t *p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t r = el_synth_next(rng);
        memcpy(p + i, &r, 8);
    }
    for (uint64_t r = el_synth_next(rng); i < n; i++, r >>= 8) p[i] = (uint8_t)r;
}

/* A block scale near d (within +-25%, so blocks differ), as fp16. */
static uint16_t scale(uint64_t *rng, float d) {
    return el_fp32_to_fp16(d * (0.75f + 0.5f * (float)(el_synth_next(rng) >> 40) / 16777216.0f));
}

static el_status fill_matrix(const el_hf_tensor *t, uint64_t *rng, void *buf, uint64_t nbytes) {
    int64_t n = t->ne0 * t->ne1;
    if (t->type == EL_TYPE_Q8_0) { /* q uniform in [-128, 127]: std 73.9 */
        el_block_q8_0 *b = buf;
        random_bytes(rng, buf, nbytes);
        for (int64_t i = 0; i < n / EL_QK8_0; i++) b[i].d = scale(rng, WEIGHT_STD / 73.9f);
        return EL_OK;
    }
    if (t->type == EL_TYPE_Q4_0) { /* q - 8 uniform in [-8, 7]: std 4.6 */
        el_block_q4_0 *b = buf;
        random_bytes(rng, buf, nbytes);
        for (int64_t i = 0; i < n / EL_QK4_0; i++) b[i].d = scale(rng, WEIGHT_STD / 4.6f);
        return EL_OK;
    }
    const el_type_kernels *kernels = el_type_kernels_get(t->type);
    float *row = malloc((size_t)t->ne0 * sizeof *row);
    if (!row) return el_error(EL_ERR_NOMEM, "synth: out of memory for %s", t->name);
    size_t row_bytes = el_row_size((el_type)t->type, t->ne0);
    for (int64_t r = 0; r < t->ne1; r++) {
        noise(rng, row, t->ne0);
        el_type_weight_quantizer(kernels)(row, (uint8_t *)buf + (size_t)r * row_bytes, t->ne0);
    }
    free(row);
    return EL_OK;
}

static el_status fill(void *user, void *buf, uint64_t nbytes) {
    const job *j = user;
    const el_hf_tensor *t = j->t;
    uint64_t rng = j->seed;
    el_status st = EL_OK;
    if (!t->hf_name[0]) { /* made from the hyper-parameters: rope factors */
        el_hf_computed_tensor(j->c, t->name, buf);
    } else if (t->ne1 == 1) { /* norms 1, biases noise */
        float *x = buf;
        if (strstr(t->name, ".bias"))
            noise(&rng, x, t->ne0);
        else
            for (int64_t i = 0; i < t->ne0; i++) x[i] = 1.0f;
    } else {
        st = fill_matrix(t, &rng, buf, nbytes);
    }
    if (st) return st;
    ++*j->done;
    *j->bytes_done += nbytes;
    if (j->fn) j->fn(j->user, *j->done, j->total, *j->bytes_done, j->bytes_total);
    return EL_OK;
}

el_status el_synth(const char *shape_name, const char *type, const char *out_path, uint64_t seed,
                   el_progress_fn progress, void *user) {
    const shape *s = NULL;
    for (size_t i = 0; shape_name && i < N_SHAPES; i++)
        if (!strcmp(shapes[i].name, shape_name)) s = &shapes[i];
    if (!s) {
        char known[512] = "";
        for (size_t i = 0; i < N_SHAPES; i++) {
            size_t len = strlen(known);
            snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "", shapes[i].name);
        }
        return el_error(EL_ERR_INVALID_ARG, "unknown shape '%s' (known: %s)",
                        shape_name ? shape_name : "(null)", known);
    }
    if (!out_path) return el_error(EL_ERR_INVALID_ARG, "synth: no output path");
    el_type target;
    el_status st = el_hf_target_type(type, "q4_0", &target);
    if (st) return st;
    el_hf_tensor *plan = NULL;
    job *jobs = NULL;
    int32_t n = 0, done = 0;
    uint64_t bytes_done = 0, bytes_total = 0;
    gguf_writer *w = gguf_writer_create();
    char name[96];
    snprintf(name, sizeof name, "synthetic %s", s->name);
    if (!w) st = el_error(EL_ERR_NOMEM, "synth: out of memory");
    if (!st) st = el_hf_plan(&s->c, target, &plan, &n);
    if (!st && !(jobs = calloc((size_t)n, sizeof *jobs)))
        st = el_error(EL_ERR_NOMEM, "synth: out of memory");
    if (!st) st = el_hf_set_hparams(w, &s->c, name, target);
    if (!st)
        st = gguf_writer_set_str(w, "general.description", "random weights in the shape of a "
                                 "real model (edgelora synth): for speed and memory only");
    if (!st) st = el_synth_vocab_write(s->vocab, s->c.n_vocab, seed, w);
    for (int32_t i = 0; i < n && !st; i++) {
        const el_hf_tensor *t = &plan[i];
        int64_t ne[2] = {t->ne0, t->ne1};
        uint64_t nbytes = el_row_size((el_type)t->type, t->ne0) * (uint64_t)t->ne1;
        uint64_t ts = seed + 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
        jobs[i] = (job){.t = t, .c = &s->c, .seed = el_synth_next(&ts), .fn = progress,
                        .user = user, .done = &done, .total = n, .bytes_done = &bytes_done};
        bytes_total += nbytes;
        st = gguf_writer_add_tensor_fill(w, t->name, t->type, t->ne1 == 1 ? 1 : 2, ne, nbytes,
                                         fill, &jobs[i]);
    }
    for (int32_t i = 0; i < n && !st; i++) jobs[i].bytes_total = bytes_total;
    if (!st) st = gguf_writer_write(w, out_path);
    gguf_writer_free(w);
    free(jobs);
    free(plan);
    return st;
}
