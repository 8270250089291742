/* test_lora.c - LoRA adapters at run time against independent references.
 *  - Runtime == merged: a tiny random F32 model with a GGUF adapter bound at run time gives the
 *    logits of the model el_merge_adapters wrote (W + s B A computed in plain float loops, run
 *    with no adapter), for several ranks, target sets and weight types; greedy text identical.
 *  - A batch whose rows use different adapters (one with none, one with two mixed, rows of the
 *    sequences interleaved) gives each row the logits of its sequence run alone.
 *  - Rebinding one sequence does not change another's logits.
 *  - PEFT folders (our safetensors writer + a JSON config): on a qwen2 base (no RoPE permutation)
 *    they equal the GGUF adapter with the same matrices, with alpha/r, rsLoRA and alpha_pattern
 *    scales checked against hand-scaled GGUF equivalents. The llama q/k permutation is checked
 *    in test_lora_golden.c against a numpy reference.
 *  - The base mapping is PROT_READ and its bytes unchanged after adapters ran.
 *  - Mismatched or corrupted adapters are refused with messages naming file and tensor, and the
 *    context keeps serving.
 *  - Threads: one thread decodes with a bound adapter while another loads, binds and frees
 *    adapters (including dropping its reference to the bound one); results stay identical. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "edgelora.h"
#include "edgelora-tools.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "kernels/lora.h"
#include "kernels/types.h"
#include "model/model.h"
#include "runtime/adapter.h"
#include "testutil.h"

enum { MAX_N = 16, VOCAB = 96, PROMPT = 7 };

typedef struct tiny_cfg {
    const char *arch;
    int n_embd, n_layer, n_head, n_head_kv, n_ff;
} tiny_cfg;

static const tiny_cfg LLAMA = {"llama", 64, 2, 4, 2, 96};
static const tiny_cfg QWEN = {"qwen2", 64, 2, 4, 2, 96};
static const int32_t prompt_tokens[PROMPT] = {1, 17, 42, 5, 88, 63, 30};

static const char *linear_names[7] = {"attn_q", "attn_k", "attn_v", "attn_output",
                                      "ffn_gate", "ffn_up", "ffn_down"};

/* n_in, n_out of linear `w` of cfg */
static void linear_shape(const tiny_cfg *c, int w, int64_t *n_in, int64_t *n_out) {
    int64_t hd = c->n_embd / c->n_head;
    int64_t outs[7] = {c->n_embd, c->n_head_kv * hd, c->n_head_kv * hd, c->n_embd,
                       c->n_ff, c->n_ff, c->n_embd};
    int64_t ins[7] = {c->n_embd, c->n_embd, c->n_embd, c->n_embd, c->n_embd, c->n_embd, c->n_ff};
    *n_in = ins[w];
    *n_out = outs[w];
}

static float *rand_floats(test_rng *rng, size_t n, float lo, float hi) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = test_rand_uniform(rng, lo, hi);
    return p;
}

/* ------------------------------------------------------------ files */

typedef struct pool {
    void *p[256];
    int n;
} pool;

static void *keep(pool *pl, void *p) {
    pl->p[pl->n++] = p;
    return p;
}

static void pool_free(pool *pl) {
    for (int i = 0; i < pl->n; i++)
        free(pl->p[i]);
    pl->n = 0;
}

static int add_f32(gguf_writer *w, pool *pl, const char *name, int64_t ne0, int64_t ne1,
                   test_rng *rng, float lo, float hi) {
    int64_t ne[2] = {ne0, ne1};
    float *d = keep(pl, rand_floats(rng, (size_t)(ne0 * ne1), lo, hi));
    return gguf_writer_add_tensor(w, name, EL_TYPE_F32, ne1 > 1 ? 2 : 1, ne, d,
                                  (uint64_t)(ne0 * ne1) * 4) == EL_OK;
}

/* A random F32 model without tokenizer (logits only). */
static int write_base(const char *path, const tiny_cfg *c, uint64_t seed) {
    test_rng rng = {seed};
    pool pl = {0};
    gguf_writer *w = gguf_writer_create();
    char key[96];
    int ok = gguf_writer_set_str(w, "general.architecture", c->arch) == EL_OK;
#define KEY(s) (snprintf(key, sizeof key, "%s.%s", c->arch, s), key)
    ok &= gguf_writer_set_u32(w, KEY("context_length"), 128) == EL_OK;
    ok &= gguf_writer_set_u32(w, KEY("embedding_length"), (uint32_t)c->n_embd) == EL_OK;
    ok &= gguf_writer_set_u32(w, KEY("block_count"), (uint32_t)c->n_layer) == EL_OK;
    ok &= gguf_writer_set_u32(w, KEY("feed_forward_length"), (uint32_t)c->n_ff) == EL_OK;
    ok &= gguf_writer_set_u32(w, KEY("attention.head_count"), (uint32_t)c->n_head) == EL_OK;
    ok &= gguf_writer_set_u32(w, KEY("attention.head_count_kv"), (uint32_t)c->n_head_kv) == EL_OK;
    ok &= gguf_writer_set_f32(w, KEY("attention.layer_norm_rms_epsilon"), 1e-5f) == EL_OK;
#undef KEY
    ok &= add_f32(w, &pl, "token_embd.weight", c->n_embd, VOCAB, &rng, -1, 1);
    ok &= add_f32(w, &pl, "output_norm.weight", c->n_embd, 1, &rng, 0.8f, 1.2f);
    ok &= add_f32(w, &pl, "output.weight", c->n_embd, VOCAB, &rng, -0.3f, 0.3f);
    for (int il = 0; il < c->n_layer; il++) {
        char name[96];
        snprintf(name, sizeof name, "blk.%d.attn_norm.weight", il);
        ok &= add_f32(w, &pl, name, c->n_embd, 1, &rng, 0.8f, 1.2f);
        snprintf(name, sizeof name, "blk.%d.ffn_norm.weight", il);
        ok &= add_f32(w, &pl, name, c->n_embd, 1, &rng, 0.8f, 1.2f);
        for (int l = 0; l < 7; l++) {
            int64_t in, out;
            linear_shape(c, l, &in, &out);
            snprintf(name, sizeof name, "blk.%d.%s.weight", il, linear_names[l]);
            ok &= add_f32(w, &pl, name, in, out, &rng, -0.2f, 0.2f);
            if (!strcmp(c->arch, "qwen2") && l < 3) {
                snprintf(name, sizeof name, "blk.%d.%s.bias", il, linear_names[l]);
                ok &= add_f32(w, &pl, name, out, 1, &rng, -0.1f, 0.1f);
            }
        }
    }
    ok &= gguf_writer_write(w, path) == EL_OK;
    gguf_writer_free(w);
    pool_free(&pl);
    return ok;
}

typedef struct lora_spec {
    int rank;
    unsigned targets; /* bit l: linear l */
    el_type type;
    float alpha;
    uint64_t seed;
    float b_scale_q; /* multiplies the q targets' B (0: 1) */
    int round_f16;   /* every value rounded to float16 (by the compiler's _Float16), kept float */
} lora_spec;

static void round_to_f16(float *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        v[i] = (float)(_Float16)v[i];
}

/* The random float A [rank][n_in] and B [n_out][rank] of (layer il, linear l) of a spec. */
static void lora_matrices(const tiny_cfg *c, const lora_spec *s, int il, int l, float **a,
                          float **b) {
    int64_t in, out;
    linear_shape(c, l, &in, &out);
    test_rng rng = {s->seed * 1000 + (uint64_t)il * 10 + (uint64_t)l + 1};
    *a = rand_floats(&rng, (size_t)(s->rank * in), -0.3f, 0.3f);
    *b = rand_floats(&rng, (size_t)(out * s->rank), -0.3f, 0.3f);
    if (l == 0 && s->b_scale_q != 0.0f)
        for (int64_t i = 0; i < out * s->rank; i++)
            (*b)[i] *= s->b_scale_q;
    if (s->round_f16) {
        round_to_f16(*a, (size_t)(s->rank * in));
        round_to_f16(*b, (size_t)(out * s->rank));
    }
}

static void *encode(pool *pl, el_type t, const float *x, int64_t n, uint64_t *bytes) {
    *bytes = el_row_size(t, n);
    void *d = keep(pl, malloc(*bytes));
    el_type_kernels_get(t)->from_float(x, d, n);
    return d;
}

/* A GGUF writer with the keys every LoRA adapter file has (NULL if one could not be set). */
static gguf_writer *new_lora_writer(const char *arch) {
    gguf_writer *w = gguf_writer_create();
    if (w && (gguf_writer_set_str(w, "general.architecture", arch) != EL_OK ||
              gguf_writer_set_str(w, "general.type", "adapter") != EL_OK ||
              gguf_writer_set_str(w, "adapter.type", "lora") != EL_OK)) {
        gguf_writer_free(w);
        w = NULL;
    }
    return w;
}

static int write_gguf_adapter(const char *path, const tiny_cfg *c, const lora_spec *s,
                              const char *arch) {
    pool pl = {0};
    gguf_writer *w = new_lora_writer(arch ? arch : c->arch);
    if (!w) return 0;
    int ok = gguf_writer_set_f32(w, "adapter.lora.alpha", s->alpha) == EL_OK;
    for (int il = 0; il < c->n_layer; il++)
        for (int l = 0; l < 7; l++) {
            if (!(s->targets >> l & 1)) continue;
            int64_t in, out;
            linear_shape(c, l, &in, &out);
            float *a, *b;
            lora_matrices(c, s, il, l, &a, &b);
            keep(&pl, a);
            keep(&pl, b);
            uint64_t na, nb;
            void *ea = encode(&pl, s->type, a, s->rank * in, &na);
            void *eb = encode(&pl, s->type, b, out * s->rank, &nb);
            char name[96];
            int64_t ne_a[2] = {in, s->rank}, ne_b[2] = {s->rank, out};
            snprintf(name, sizeof name, "blk.%d.%s.weight.lora_a", il, linear_names[l]);
            ok &= gguf_writer_add_tensor(w, name, s->type, 2, ne_a, ea, na) == EL_OK;
            snprintf(name, sizeof name, "blk.%d.%s.weight.lora_b", il, linear_names[l]);
            ok &= gguf_writer_add_tensor(w, name, s->type, 2, ne_b, eb, nb) == EL_OK;
        }
    ok &= gguf_writer_write(w, path) == EL_OK;
    gguf_writer_free(w);
    pool_free(&pl);
    return ok;
}

static const char *peft_modules[7] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                      "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj",
                                      "mlp.down_proj"};

/* A PEFT folder with the same matrices as write_gguf_adapter (F32), and config_json. */
static int write_peft(const char *dir, const tiny_cfg *c, const lora_spec *s,
                      const char *config_json) {
    mkdir(dir, 0755);
    char path[512];
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    fputs(config_json, f);
    fclose(f);
    pool pl = {0};
    el_st_writer *w = el_st_writer_create();
    int ok = 1;
    for (int il = 0; il < c->n_layer; il++)
        for (int l = 0; l < 7; l++) {
            if (!(s->targets >> l & 1)) continue;
            int64_t in, out;
            linear_shape(c, l, &in, &out);
            float *a, *b;
            lora_matrices(c, s, il, l, &a, &b);
            keep(&pl, a);
            keep(&pl, b);
            char name[160];
            int64_t sa[2] = {s->rank, in}, sb[2] = {out, s->rank};
            snprintf(name, sizeof name, "base_model.model.model.layers.%d.%s.lora_A.weight", il,
                     peft_modules[l]);
            ok &= el_st_writer_add(w, name, EL_ST_F32, 2, sa, a, (uint64_t)(s->rank * in) * 4) ==
                  EL_OK;
            snprintf(name, sizeof name, "base_model.model.model.layers.%d.%s.lora_B.weight", il,
                     peft_modules[l]);
            ok &= el_st_writer_add(w, name, EL_ST_F32, 2, sb, b, (uint64_t)(s->rank * out) * 4) ==
                  EL_OK;
        }
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    ok &= el_st_writer_write(w, path) == EL_OK;
    el_st_writer_free(w);
    pool_free(&pl);
    return ok;
}

/* ------------------------------------------------------------ running */

static el_context *new_ctx(el_model *m, int n_seq) {
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 128;
    cp.n_batch = 64;
    cp.n_seq_max = n_seq;
    cp.n_threads = 2;
    el_context *ctx = NULL;
    if (el_context_create(m, &cp, &ctx) != EL_OK) fprintf(stderr, "%s\n", el_last_error());
    return ctx;
}

/* Logits of every prompt position (one batch) with the given binding; malloc'd. */
static float *prompt_logits(el_model *m, const el_binding *bind, int n_bind) {
    el_context *ctx = new_ctx(m, 1);
    if (!ctx) return NULL;
    int32_t pos[PROMPT], seq[PROMPT] = {0};
    int8_t want[PROMPT];
    for (int i = 0; i < PROMPT; i++) {
        pos[i] = i;
        want[i] = 1;
    }
    el_batch b = {.n_rows = PROMPT, .token = prompt_tokens, .pos = pos, .seq_id = seq,
                  .logits = want};
    float *out = malloc(sizeof(float) * PROMPT * VOCAB);
    if (el_context_bind(ctx, 0, bind, n_bind) != EL_OK || el_decode(ctx, &b) != EL_OK) {
        fprintf(stderr, "%s\n", el_last_error());
        free(out);
        out = NULL;
    }
    for (int i = 0; out && i < PROMPT; i++)
        memcpy(out + i * VOCAB, el_get_logits(ctx, i), sizeof(float) * VOCAB);
    el_context_free(ctx);
    return out;
}

static int32_t argmax(const float *x, int n) {
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* Greedy continuation (n tokens) after the prompt, token by token. */
static int greedy(el_model *m, const el_binding *bind, int n_bind, int n, int32_t *out) {
    el_context *ctx = new_ctx(m, 1);
    if (!ctx || el_context_bind(ctx, 0, bind, n_bind) != EL_OK) {
        el_context_free(ctx);
        return 0;
    }
    int32_t tok = prompt_tokens[0], seq = 0;
    int ok = 1;
    for (int p = 0; ok && p < PROMPT + n - 1; p++) {
        el_batch b = {.n_rows = 1, .token = &tok, .pos = &p, .seq_id = &seq};
        ok = el_decode(ctx, &b) == EL_OK;
        if (!ok) break;
        int32_t next = argmax(el_get_logits(ctx, 0), VOCAB);
        if (p >= PROMPT - 1) out[p - (PROMPT - 1)] = next;
        tok = p + 1 < PROMPT ? prompt_tokens[p + 1] : next;
    }
    el_context_free(ctx);
    return ok;
}

static el_model *load(const char *path) {
    el_model *m = NULL;
    if (el_model_load(path, NULL, &m) != EL_OK) fprintf(stderr, "%s\n", el_last_error());
    return m;
}

static const char *base_path(const tiny_cfg *c) {
    const char *p = test_tmp_path(!strcmp(c->arch, "llama") ? "base_llama.gguf" : "base_qwen2.gguf");
    struct stat sb;
    if (stat(p, &sb) != 0 && !write_base(p, c, !strcmp(c->arch, "llama") ? 11 : 12)) return NULL;
    return p;
}

/* max relative error of the runtime path (adapters at paths, loaded as el_adapter_load holds
 * them, or exact: in their files' types) against the model merged with the adapters at
 * merge_paths (NULL: the same), and of the base against the merged model (how much the adapter
 * matters). */
static int runtime_vs_merged(const tiny_cfg *c, const char *const *paths,
                             const char *const *merge_paths, int exact, const float *scales,
                             int n, double *err, double *effect, int check_greedy) {
    const char *base = base_path(c), *merged = test_tmp_path("merged.gguf");
    if (!base ||
        el_merge_adapters(base, merge_paths ? merge_paths : paths, scales, n, merged) != EL_OK) {
        fprintf(stderr, "merge: %s\n", el_last_error());
        return 0;
    }
    el_model *mb = load(base), *mm = load(merged);
    if (!mb || !mm) return 0;
    el_adapter *ads[4] = {0};
    el_binding bind[4];
    int ok = 1;
    for (int i = 0; i < n; i++) {
        ok &= (exact ? el_adapter_load_exact : el_adapter_load)(mb, paths[i], &ads[i]) == EL_OK;
        if (!ok) {
            fprintf(stderr, "load: %s\n", el_last_error());
            break;
        }
        bind[i] = (el_binding){ads[i], scales[i]};
    }
    float *rt = ok ? prompt_logits(mb, bind, n) : NULL;
    float *ref = prompt_logits(mm, NULL, 0), *plain = prompt_logits(mb, NULL, 0);
    ok &= rt && ref && plain;
    if (ok) {
        *err = test_max_rel_err(rt, ref, PROMPT * VOCAB);
        *effect = test_max_rel_err(plain, ref, PROMPT * VOCAB);
    }
    if (ok && check_greedy) {
        int32_t g1[12], g2[12];
        ok &= greedy(mb, bind, n, 12, g1) && greedy(mm, NULL, 0, 12, g2);
        if (ok && memcmp(g1, g2, sizeof g1) != 0) {
            test_note("greedy text differs between runtime adapters and the merged model");
            ok = 0;
        }
    }
    for (int i = 0; i < n; i++)
        el_adapter_free(ads[i]);
    free(rt);
    free(ref);
    free(plain);
    el_model_free(mb);
    el_model_free(mm);
    return ok;
}

/* ------------------------------------------------------------ tests */

static int test_gguf_runtime_equals_merged(void) {
    const struct {
        int rank;
        unsigned targets;
        el_type type;
        float alpha, scale;
    } cases[] = {
        {1, 0x7f, EL_TYPE_F32, 2.0f, 1.0f},  /* every projection, rank 1 */
        {8, 0x05, EL_TYPE_F32, 16.0f, 0.7f}, /* q and v */
        {16, 0x78, EL_TYPE_F16, 0.0f, 0.5f}, /* o and the FFN; alpha 0: no alpha / rank */
        {33, 0x02, EL_TYPE_F32, 8.0f, 1.5f}, /* k only, odd rank */
        {4, 0x7f, EL_TYPE_BF16, 4.0f, 1.0f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lora_spec s = {.rank = cases[i].rank, .targets = cases[i].targets, .type = cases[i].type,
                       .alpha = cases[i].alpha, .seed = 100 + i};
        const char *p = test_tmp_path("case.gguf");
        CHECK(write_gguf_adapter(p, &LLAMA, &s, NULL));
        double err = 1, effect = 0;
        CHECK(runtime_vs_merged(&LLAMA, &p, NULL, 1, &cases[i].scale, 1, &err, &effect, 1));
        test_note("rank %d targets 0x%02x %s: runtime (exact) vs merged %.2e (adapter moves "
                  "logits %.2e)", s.rank, s.targets, el_type_layout_get(s.type)->ggml_name, err,
                  effect);
        CHECK(err < 1e-4);
        CHECK(effect > 1e-2);
        if (s.type != EL_TYPE_F32) continue;
        /* as the runtime holds a float32 adapter (float16): the model merged with the same
         * values rounded to float16 by the compiler */
        lora_spec r = s;
        r.round_f16 = 1;
        const char *pr = test_tmp_path("case_f16_values.gguf");
        CHECK(write_gguf_adapter(pr, &LLAMA, &r, NULL));
        double held = 1, vs_exact = 1;
        CHECK(runtime_vs_merged(&LLAMA, &p, &pr, 0, &cases[i].scale, 1, &held, &effect, 1));
        CHECK(runtime_vs_merged(&LLAMA, &p, NULL, 0, &cases[i].scale, 1, &vs_exact, &effect, 0));
        test_note("  held as float16: vs merged with float16 values %.2e, with the file's %.2e",
                  held, vs_exact);
        CHECK(held < 1e-4);
        CHECK(vs_exact > held);
    }
    return TEST_PASS;
}

/* What el_adapter_load holds of float32 matrices: float16 where float16 keeps every value within
 * 2^-11 of the matrix's largest magnitude, the file's floats where it cannot (q's B scaled below
 * float16's normal range, or beyond its largest value); el_adapter_load_exact keeps them all. */
static int test_compact_f16(void) {
    el_model *m = load(base_path(&LLAMA));
    CHECK(m);
    const float q_scales[3] = {1.0f, 1e-4f, 1e6f}; /* largest |B| of q: 0.3, 3e-5, 3e5 */
    for (int c = 0; c < 3; c++) {
        lora_spec s = {.rank = 6, .targets = 0x7f, .type = EL_TYPE_F32, .alpha = 6,
                       .seed = 31 + c, .b_scale_q = q_scales[c]};
        const char *p = test_tmp_path("compact.gguf");
        CHECK(write_gguf_adapter(p, &LLAMA, &s, NULL));
        el_adapter *held = NULL, *exact = NULL;
        CHECK(el_adapter_load(m, p, &held) == EL_OK && el_adapter_load_exact(m, p, &exact) == EL_OK);
        double worst = 0;
        int n_f16 = 0, n_f32 = 0;
        for (int32_t i = 0; i < m->hp.n_layer * EL_N_LINEAR; i++) {
            const el_lora_pair *h = &held->table[i], *e = &exact->table[i];
            CHECK(h->a.n_out == e->a.n_out && h->scale == e->scale && h->b_packed == e->b_packed);
            if (!h->a.n_out) continue;
            const el_weight *hw[2] = {&h->a, &h->b}, *ew[2] = {&e->a, &e->b};
            for (int k = 0; k < 2; k++) {
                size_t n = (size_t)(ew[k]->n_in * ew[k]->n_out);
                float *hv = malloc(n * sizeof *hv), *ev = malloc(n * sizeof *ev);
                CHECK(hv && ev && ew[k]->type == EL_TYPE_F32);
                el_weight_floats(hw[k], hv);
                el_weight_floats(ew[k], ev);
                float most = 0;
                for (size_t j = 0; j < n; j++) most = fmaxf(most, fabsf(ev[j]));
                bool big_or_tiny = i % EL_N_LINEAR == EL_LINEAR_Q && k == 1 && c > 0;
                CHECK(hw[k]->type == (big_or_tiny ? EL_TYPE_F32 : EL_TYPE_F16));
                n_f16 += hw[k]->type == EL_TYPE_F16;
                n_f32 += hw[k]->type == EL_TYPE_F32;
                for (size_t j = 0; j < n; j++) {
                    double d = fabs((double)hv[j] - ev[j]) / most;
                    worst = d > worst ? d : worst;
                    if (hw[k]->type == EL_TYPE_F16) /* the compiler's rounding, bit for bit */
                        CHECK(hv[j] == (float)(_Float16)ev[j]);
                    else
                        CHECK(hv[j] == ev[j]);
                }
                free(hv);
                free(ev);
            }
        }
        el_adapter_info hi, ei;
        CHECK(el_adapter_get_info(held, &hi) == EL_OK && el_adapter_get_info(exact, &ei) == EL_OK);
        test_note("q's B scaled by %g: %d matrices float16, %d float32, worst error %.2e of the "
                  "matrix's largest; %llu bytes held against %llu", q_scales[c], n_f16, n_f32,
                  worst, (unsigned long long)hi.bytes, (unsigned long long)ei.bytes);
        CHECK(worst <= 0x1p-11);
        CHECK(n_f32 == (c > 0 ? LLAMA.n_layer : 0));
        CHECK(hi.bytes < ei.bytes * 0.6);
        el_adapter_free(held);
        el_adapter_free(exact);
    }
    el_model_free(m);
    return TEST_PASS;
}

/* q8_0 A and B: both sides use the same stored (rounded) matrices, but the runtime dots
 * q8_0-rounded activations (x for A, A x for B) as every q8_0 matmul does, and the merge exact
 * ones, so the check is relative to how far the adapter moves the logits (measured: 2.8%). */
static int test_gguf_q8_0(void) {
    lora_spec s = {.rank = 32, .targets = 0x7f, .type = EL_TYPE_Q8_0, .alpha = 32, .seed = 7};
    const char *p = test_tmp_path("q8.gguf");
    CHECK(write_gguf_adapter(p, &LLAMA, &s, NULL));
    double err = 1, effect = 0;
    float scale = 1.0f;
    CHECK(runtime_vs_merged(&LLAMA, &p, NULL, 0, &scale, 1, &err, &effect, 0));
    test_note("q8_0: runtime vs merged %.2e (adapter moves logits %.2e)", err, effect);
    CHECK(err < 0.05 * effect);
    return TEST_PASS;
}

static int test_two_adapters_add_up(void) {
    lora_spec s1 = {.rank = 8, .targets = 0x7f, .type = EL_TYPE_F32, .alpha = 8, .seed = 21};
    lora_spec s2 = {.rank = 3, .targets = 0x13, .type = EL_TYPE_F16, .alpha = 6, .seed = 22};
    const char *paths[2] = {test_tmp_path("two_a.gguf"), test_tmp_path("two_b.gguf")};
    CHECK(write_gguf_adapter(paths[0], &LLAMA, &s1, NULL));
    CHECK(write_gguf_adapter(paths[1], &LLAMA, &s2, NULL));
    float scales[2] = {0.5f, -1.25f};
    double err = 1, effect = 0;
    CHECK(runtime_vs_merged(&LLAMA, paths, NULL, 1, scales, 2, &err, &effect, 1));
    CHECK(err < 1e-4 && effect > 1e-2);
    return TEST_PASS;
}

/* Rows of four sequences interleaved in one batch: seq 0 adapter X, seq 1 none, seq 2 X*0.5 and
 * Y mixed, seq 3 Y; every row equals its sequence run alone, then one decode step of all four. */
static int test_mixed_batch(void) {
    lora_spec sx = {.rank = 8, .targets = 0x7f, .type = EL_TYPE_F32, .alpha = 16, .seed = 31};
    lora_spec sy = {.rank = 16, .targets = 0x65, .type = EL_TYPE_F16, .alpha = 8, .seed = 32};
    const char *px = test_tmp_path("mix_x.gguf"), *py = test_tmp_path("mix_y.gguf");
    CHECK(write_gguf_adapter(px, &LLAMA, &sx, NULL) && write_gguf_adapter(py, &LLAMA, &sy, NULL));
    el_model *m = load(base_path(&LLAMA));
    CHECK(m);
    el_adapter *x = NULL, *y = NULL;
    CHECK(el_adapter_load(m, px, &x) == EL_OK && el_adapter_load(m, py, &y) == EL_OK);
    el_binding b0[1] = {{x, 1.0f}}, b2[2] = {{x, 0.5f}, {y, 1.0f}}, b3[1] = {{y, 1.0f}};
    const el_binding *binds[4] = {b0, NULL, b2, b3};
    int n_binds[4] = {1, 0, 2, 1};
    float *alone[4];
    for (int s = 0; s < 4; s++)
        CHECK((alone[s] = prompt_logits(m, binds[s], n_binds[s])));
    el_context *ctx = new_ctx(m, 4);
    CHECK(ctx);
    for (int s = 0; s < 4; s++)
        CHECK(el_context_bind(ctx, s, binds[s], n_binds[s]) == EL_OK);
    /* the caller's references go; the context's keep the adapters alive */
    el_adapter_free(x);
    el_adapter_free(y);
    int32_t tok[4 * PROMPT], pos[4 * PROMPT], seq[4 * PROMPT];
    int8_t want[4 * PROMPT];
    for (int i = 0; i < PROMPT; i++)
        for (int s = 0; s < 4; s++) {
            int r = i * 4 + s;
            tok[r] = prompt_tokens[i];
            pos[r] = i;
            seq[r] = s;
            want[r] = 1;
        }
    el_batch b = {.n_rows = 4 * PROMPT, .token = tok, .pos = pos, .seq_id = seq, .logits = want};
    CHECK(el_decode(ctx, &b) == EL_OK);
    double worst = 0;
    for (int r = 0; r < 4 * PROMPT; r++) {
        double e = test_max_rel_err(el_get_logits(ctx, r), alone[seq[r]] + pos[r] * VOCAB, VOCAB);
        worst = e > worst ? e : worst;
    }
    test_note("mixed batch vs alone: %.2e", worst);
    CHECK(worst < 1e-5);
    /* sanity: the four sequences really differ */
    CHECK(test_max_rel_err(alone[0], alone[1], VOCAB * PROMPT) > 1e-2);
    CHECK(test_max_rel_err(alone[2], alone[3], VOCAB * PROMPT) > 1e-2);
    /* one decode step of all four, each its own greedy token */
    int32_t t1[4], p1[4], s1[4] = {0, 1, 2, 3};
    for (int s = 0; s < 4; s++) {
        t1[s] = argmax(alone[s] + (PROMPT - 1) * VOCAB, VOCAB);
        p1[s] = PROMPT;
    }
    el_batch b1 = {.n_rows = 4, .token = t1, .pos = p1, .seq_id = s1,
                   .logits = (const int8_t[]){1, 1, 1, 1}};
    CHECK(el_decode(ctx, &b1) == EL_OK);
    for (int s = 0; s < 4; s++) {
        el_context *c1 = new_ctx(m, 1);
        CHECK(c1 && el_context_bind(c1, 0, binds[s], n_binds[s]) == EL_OK);
        int32_t tk[PROMPT + 1], ps[PROMPT + 1], sq[PROMPT + 1] = {0};
        for (int i = 0; i <= PROMPT; i++) {
            tk[i] = i < PROMPT ? prompt_tokens[i] : t1[s];
            ps[i] = i;
        }
        el_batch bb = {.n_rows = PROMPT + 1, .token = tk, .pos = ps, .seq_id = sq};
        CHECK(el_decode(c1, &bb) == EL_OK);
        CHECK(test_max_rel_err(el_get_logits(ctx, s), el_get_logits(c1, PROMPT), VOCAB) < 1e-5);
        el_context_free(c1);
    }
    for (int s = 0; s < 4; s++)
        free(alone[s]);
    el_context_free(ctx);
    el_model_free(m);
    return TEST_PASS;
}

/* The mixed batch of test_mixed_batch (four sequences, three bindings, rows interleaved) run in
 * chunks of 5 rows, which cut through every group of rows sharing a binding: the forward hands
 * each chunk's share of the groups to the adapter terms, so the logits must be bit-identical to
 * one pass over all rows (an f32 base: every row takes the same kernels either way). */
static int test_mixed_batch_chunked(void) {
    lora_spec sx = {.rank = 8, .targets = 0x7f, .type = EL_TYPE_F32, .alpha = 16, .seed = 31};
    lora_spec sy = {.rank = 32, .targets = 0x65, .type = EL_TYPE_Q8_0, .alpha = 8, .seed = 32};
    const char *px = test_tmp_path("chunk_x.gguf"), *py = test_tmp_path("chunk_y.gguf");
    CHECK(write_gguf_adapter(px, &LLAMA, &sx, NULL) && write_gguf_adapter(py, &LLAMA, &sy, NULL));
    el_model *m = load(base_path(&LLAMA));
    CHECK(m);
    el_adapter *x = NULL, *y = NULL;
    CHECK(el_adapter_load(m, px, &x) == EL_OK && el_adapter_load(m, py, &y) == EL_OK);
    el_binding b0[1] = {{x, 1.0f}}, b2[2] = {{x, 0.5f}, {y, 1.0f}}, b3[1] = {{y, 1.0f}};
    const el_binding *binds[4] = {b0, NULL, b2, b3};
    int n_binds[4] = {1, 0, 2, 1};
    int32_t tok[4 * PROMPT], pos[4 * PROMPT], seq[4 * PROMPT];
    int8_t want[4 * PROMPT];
    for (int i = 0; i < PROMPT; i++)
        for (int s = 0; s < 4; s++) {
            int r = i * 4 + s;
            tok[r] = prompt_tokens[i];
            pos[r] = i;
            seq[r] = s;
            want[r] = 1;
        }
    el_batch b = {.n_rows = 4 * PROMPT, .token = tok, .pos = pos, .seq_id = seq, .logits = want};
    float *logits[2];
    const int32_t ubatch[2] = {0, 5}; /* 0: the default, more than the batch's rows */
    for (int u = 0; u < 2; u++) {
        el_context_params cp = el_context_default_params();
        cp.n_ctx = 128;
        cp.n_batch = 64;
        cp.n_ubatch = ubatch[u];
        cp.n_seq_max = 4;
        cp.n_threads = 2;
        el_context *ctx = NULL;
        CHECK(el_context_create(m, &cp, &ctx) == EL_OK);
        for (int s = 0; s < 4; s++)
            CHECK(el_context_bind(ctx, s, binds[s], n_binds[s]) == EL_OK);
        CHECK(el_decode(ctx, &b) == EL_OK);
        CHECK((logits[u] = malloc(sizeof(float) * 4 * PROMPT * VOCAB)));
        for (int r = 0; r < 4 * PROMPT; r++)
            memcpy(logits[u] + r * VOCAB, el_get_logits(ctx, r), sizeof(float) * VOCAB);
        el_context_free(ctx);
    }
    CHECK(memcmp(logits[0], logits[1], sizeof(float) * 4 * PROMPT * VOCAB) == 0);
    /* sanity: the adapters change the logits (sequence 1 has none) */
    CHECK(test_max_rel_err(logits[0], logits[0] + VOCAB, VOCAB) > 1e-2);
    free(logits[0]);
    free(logits[1]);
    el_adapter_free(x);
    el_adapter_free(y);
    el_model_free(m);
    return TEST_PASS;
}

/* Sequence 1 is rebound mid-way; sequence 0's logits are what they are when it is not. */
static int test_rebind_isolation(void) {
    lora_spec sx = {.rank = 4, .targets = 0x7f, .type = EL_TYPE_F32, .alpha = 4, .seed = 41};
    lora_spec sy = {.rank = 6, .targets = 0x7f, .type = EL_TYPE_F32, .alpha = 4, .seed = 42};
    const char *px = test_tmp_path("iso_x.gguf"), *py = test_tmp_path("iso_y.gguf");
    CHECK(write_gguf_adapter(px, &LLAMA, &sx, NULL) && write_gguf_adapter(py, &LLAMA, &sy, NULL));
    el_model *m = load(base_path(&LLAMA));
    el_adapter *x = NULL, *y = NULL;
    CHECK(m && el_adapter_load(m, px, &x) == EL_OK && el_adapter_load(m, py, &y) == EL_OK);
    float logits[2][PROMPT][VOCAB];
    for (int run = 0; run < 2; run++) {
        el_context *ctx = new_ctx(m, 2);
        CHECK(ctx);
        el_binding bx = {x, 1.0f}, by = {y, 2.0f};
        CHECK(el_context_bind(ctx, 0, &bx, 1) == EL_OK && el_context_bind(ctx, 1, &bx, 1) == EL_OK);
        for (int i = 0; i < PROMPT; i++) {
            if (run == 1 && i == 3) CHECK(el_context_bind(ctx, 1, &by, 1) == EL_OK);
            if (run == 1 && i == 5) CHECK(el_context_bind(ctx, 1, NULL, 0) == EL_OK);
            int32_t tk[2] = {prompt_tokens[i], prompt_tokens[PROMPT - 1 - i]}, ps[2] = {i, i},
                    sq[2] = {0, 1};
            el_batch b = {.n_rows = 2, .token = tk, .pos = ps, .seq_id = sq,
                          .logits = (const int8_t[]){1, 1}};
            CHECK(el_decode(ctx, &b) == EL_OK);
            memcpy(logits[run][i], el_get_logits(ctx, 0), sizeof logits[run][i]);
        }
        el_context_free(ctx);
    }
    CHECK(memcmp(logits[0], logits[1], sizeof logits[0]) == 0);
    el_adapter_free(x);
    el_adapter_free(y);
    el_model_free(m);
    return TEST_PASS;
}

/* PEFT on qwen2 (no permutation) == the GGUF adapter holding the same matrices, whose scales
 * are computed here by hand: alpha / r, alpha / sqrt(r) (rsLoRA), and an alpha_pattern for q. */
static int test_peft_equals_gguf(void) {
    el_model *m = load(base_path(&QWEN));
    CHECK(m);
    const struct {
        const char *config;
        float gguf_alpha;   /* alpha of the equivalent GGUF adapter (rank 8) */
        float b_scale_q;    /* extra factor on q's B in the GGUF equivalent */
    } cases[] = {
        {"{\"peft_type\": \"LORA\", \"r\": 8, \"lora_alpha\": 16, \"target_modules\": "
         "[\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\", \"gate_proj\", \"up_proj\", "
         "\"down_proj\"], \"use_rslora\": false}", 16.0f, 1.0f},
        /* rsLoRA: 16 / sqrt(8) = gguf_alpha / 8 */
        {"{\"r\": 8, \"lora_alpha\": 16, \"target_modules\": \"all-linear\", \"use_rslora\": true}",
         (float)(16.0 * 8.0 / sqrt(8.0)), 1.0f},
        /* q gets alpha 4, every other module 16; rank_pattern restating r is accepted */
        {"{\"r\": 8, \"lora_alpha\": 16, \"alpha_pattern\": {\"q_proj\": 4}, "
         "\"rank_pattern\": {\"model.layers.0.mlp.up_proj\": 8}}", 16.0f, 0.25f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lora_spec s = {.rank = 8, .targets = 0x7f, .type = EL_TYPE_F32, .seed = 51 + i};
        char dir[512];
        snprintf(dir, sizeof dir, "%s/peft%zu", test_tmp_dir(), i);
        CHECK(write_peft(dir, &QWEN, &s, cases[i].config));
        lora_spec g = s;
        g.alpha = cases[i].gguf_alpha;
        g.b_scale_q = cases[i].b_scale_q;
        const char *gp = test_tmp_path("peft_equiv.gguf");
        CHECK(write_gguf_adapter(gp, &QWEN, &g, NULL));
        el_adapter *ap = NULL, *ag = NULL;
        CHECK(el_adapter_load(m, dir, &ap) == EL_OK);
        CHECK(el_adapter_load(m, gp, &ag) == EL_OK);
        el_adapter_info info;
        CHECK(el_adapter_get_info(ap, &info) == EL_OK);
        CHECK(!strcmp(info.format, "peft") && info.n_targets == 14 && info.rank_max == 8);
        CHECK(!strcmp(info.name, dir + strlen(test_tmp_dir()) + 1));
        el_binding bp = {ap, 0.8f}, bg = {ag, 0.8f};
        float *lp = prompt_logits(m, &bp, 1), *lg = prompt_logits(m, &bg, 1),
              *l0 = prompt_logits(m, NULL, 0);
        CHECK(lp && lg && l0);
        double err = test_max_rel_err(lp, lg, PROMPT * VOCAB);
        test_note("peft case %zu vs gguf: %.2e (adapter moves logits %.2e)", i, err,
                  test_max_rel_err(l0, lg, PROMPT * VOCAB));
        CHECK(err < 1e-5);
        CHECK(test_max_rel_err(l0, lg, PROMPT * VOCAB) > 1e-2);
        free(lp);
        free(lg);
        free(l0);
        el_adapter_free(ap);
        el_adapter_free(ag);
    }
    el_model_free(m);
    return TEST_PASS;
}

/* A PEFT folder on a llama base: runtime == merge of the same folder (the permutation itself is
 * checked against numpy in test_lora_golden.c); the folder's files work as paths too. */
static int test_peft_llama_runtime_equals_merged(void) {
    lora_spec s = {.rank = 5, .targets = 0x0f, .type = EL_TYPE_F32, .seed = 61};
    char dir[512];
    snprintf(dir, sizeof dir, "%s/peft_llama", test_tmp_dir());
    CHECK(write_peft(dir, &LLAMA, &s, "{\"r\": 5, \"lora_alpha\": 10}"));
    double err = 1, effect = 0;
    float scale = 1.0f;
    const char *p = dir;
    CHECK(runtime_vs_merged(&LLAMA, &p, NULL, 1, &scale, 1, &err, &effect, 1));
    CHECK(err < 1e-4 && effect > 1e-2);
    el_model *m = load(base_path(&LLAMA));
    el_adapter *a = NULL;
    char file[600];
    snprintf(file, sizeof file, "%s/adapter_config.json", dir);
    CHECK(el_adapter_load(m, file, &a) == EL_OK);
    el_adapter_info info;
    CHECK(el_adapter_get_info(a, &info) == EL_OK && !strcmp(info.name, "peft_llama"));
    el_adapter_free(a);
    el_model_free(m);
    return TEST_PASS;
}

/* The base model's mapping is read-only and its bytes do not change while adapters are loaded,
 * bound, run and merged. */
static uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static int mapping_is_read_only(const void *addr) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    char line[512];
    int ro = -1;
    uintptr_t a = (uintptr_t)addr;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && a >= lo && a < hi) {
            ro = perms[0] == 'r' && perms[1] == '-';
            break;
        }
    }
    fclose(f);
    return ro;
}

static int test_base_untouched(void) {
    el_model *m = load(base_path(&LLAMA));
    CHECK(m && m->gguf);
    const el_mapped_file *map = &m->gguf->map;
    uint64_t before = fnv1a(map->data, map->size);
    CHECK(mapping_is_read_only(m->layers[0].wq.data) == 1);
    lora_spec s = {.rank = 8, .targets = 0x7f, .type = EL_TYPE_F32, .alpha = 8, .seed = 71};
    const char *p = test_tmp_path("untouched.gguf");
    CHECK(write_gguf_adapter(p, &LLAMA, &s, NULL));
    el_adapter *a = NULL;
    CHECK(el_adapter_load(m, p, &a) == EL_OK);
    el_binding b = {a, 1.0f};
    float *l = prompt_logits(m, &b, 1);
    CHECK(l);
    free(l);
    float one = 1.0f;
    CHECK(el_merge_adapters(base_path(&LLAMA), &p, &one, 1, test_tmp_path("untouched_merged.gguf")) == EL_OK);
    CHECK(fnv1a(map->data, map->size) == before);
    CHECK(mapping_is_read_only(m->layers[1].w_down.data) == 1);
    el_adapter_free(a);
    el_model_free(m);
    return TEST_PASS;
}

/* ------------------------------------------------------------ errors */

static int expect_refused(el_model *m, const char *path, el_status want, const char *needle) {
    el_adapter *a = NULL;
    el_status st = el_adapter_load(m, path, &a);
    const char *msg = el_last_error();
    if (st == EL_OK || (want && st != want) || !strstr(msg, needle) || a) {
        test_note("%s: status %s, message '%s' (wanted '%s')", path, el_status_name(st), msg,
                  needle);
        el_adapter_free(a);
        return 0;
    }
    return 1;
}

/* Alphas no real adapter has, in GGUF (adapter.lora.alpha) and PEFT (lora_alpha); 0 in GGUF
 * means "not scaled" (llama.cpp's convention) and is tested with the runtime. */
static int test_bad_alpha(void) {
    el_model *m = load(base_path(&LLAMA));
    CHECK(m);
    const struct { float alpha; const char *said; } gguf_cases[] = {
        {NAN, "= nan"}, {INFINITY, "= inf"}, {-8.0f, "= -8"}, {1e7f, "= 1e+07"},
    };
    for (size_t i = 0; i < sizeof gguf_cases / sizeof gguf_cases[0]; i++) {
        lora_spec s = {.rank = 4, .targets = 0x01, .type = EL_TYPE_F32,
                       .alpha = gguf_cases[i].alpha, .seed = 85};
        const char *p = test_tmp_path("bad_alpha.gguf");
        CHECK(write_gguf_adapter(p, &LLAMA, &s, NULL));
        char want[96];
        snprintf(want, sizeof want, "adapter.lora.alpha %s is not a LoRA alpha",
                 gguf_cases[i].said);
        CHECK(expect_refused(m, p, EL_ERR_FORMAT, want));
        CHECK(expect_refused(m, p, EL_ERR_FORMAT, "bad_alpha.gguf"));
    }
    lora_spec s = {.rank = 4, .targets = 0x01, .type = EL_TYPE_F32, .alpha = 4, .seed = 85};
    const struct { const char *config, *said; } peft_cases[] = {
        {"{\"r\": 4, \"lora_alpha\": 1e308}", "lora_alpha = 1e+308 is not a LoRA alpha"},
        {"{\"r\": 4, \"lora_alpha\": 0}", "lora_alpha = 0 is not a LoRA alpha"},
        {"{\"r\": 4, \"lora_alpha\": -16}", "lora_alpha = -16 is not a LoRA alpha"},
        {"{\"r\": 4, \"lora_alpha\": 8, \"alpha_pattern\": {\"q_proj\": -1}}",
         "alpha_pattern[\"q_proj\"] = -1 is not a LoRA alpha"},
    };
    for (size_t i = 0; i < sizeof peft_cases / sizeof peft_cases[0]; i++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/peft_bad_alpha%zu", test_tmp_dir(), i);
        CHECK(write_peft(dir, &LLAMA, &s, peft_cases[i].config));
        CHECK(expect_refused(m, dir, EL_ERR_FORMAT, peft_cases[i].said));
        CHECK(expect_refused(m, dir, EL_ERR_FORMAT, "adapter_config.json"));
    }
    el_model_free(m);
    return TEST_PASS;
}

/* adapter_config.json values of the wrong kind: each is refused with the key it is in. */
static int test_bad_peft_config(void) {
    el_model *m = load(base_path(&LLAMA));
    CHECK(m);
    lora_spec s = {.rank = 4, .targets = 0x01, .type = EL_TYPE_F32, .alpha = 4, .seed = 86};
    const struct { const char *config, *said; } cases[] = {
        {"{\"r\": 0, \"lora_alpha\": 8}", "r = 0 is not a LoRA rank"},
        {"{\"r\": -4, \"lora_alpha\": 8}", "r = -4 is not a LoRA rank"},
        {"{\"r\": 4.5, \"lora_alpha\": 8}", "r = 4.5 is not a LoRA rank"},
        {"{\"r\": \"4\", \"lora_alpha\": 8}", "'r' must be a number, not string"},
        {"{\"r\": 4, \"lora_alpha\": 8, \"rank_pattern\": {\"q_proj\": 0.5}}",
         "rank_pattern[\"q_proj\"] = 0.5 is not a LoRA rank"},
        {"{\"r\": 4, \"lora_alpha\": 8, \"rank_pattern\": {\"q_proj\": \"4\"}}",
         "rank_pattern[\"q_proj\"] must be a number, not string"},
        {"{\"r\": 4, \"lora_alpha\": 8, \"target_modules\": 7}",
         "target_modules must be a string or a list of strings"},
        {"{\"r\": 4, \"lora_alpha\": 8, \"target_modules\": [\"q_proj\", 1]}",
         "target_modules must be a string or a list of strings"},
        {"{\"r\": 4, \"lora_alpha\": 8, \"use_rslora\": \"yes\"}",
         "use_rslora must be true or false, not string"},
        {"{\"r\": 4, \"lora_alpha\": 8, \"use_rslora\": 1}",
         "use_rslora must be true or false, not number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/peft_bad_config%zu", test_tmp_dir(), i);
        CHECK(write_peft(dir, &LLAMA, &s, cases[i].config));
        CHECK(expect_refused(m, dir, EL_ERR_FORMAT, cases[i].said));
    }
    /* what PEFT writes loads: a list, a string, null, and false */
    const char *const good[] = {
        "{\"r\": 4, \"lora_alpha\": 8, \"target_modules\": [\"q_proj\"], \"use_rslora\": false}",
        "{\"r\": 4, \"lora_alpha\": 8, \"target_modules\": \"all-linear\", \"rank_pattern\": {}}",
        "{\"r\": 4, \"lora_alpha\": 8, \"target_modules\": null, \"alpha_pattern\": null}",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/peft_good_config%zu", test_tmp_dir(), i);
        CHECK(write_peft(dir, &LLAMA, &s, good[i]));
        el_adapter *a = NULL;
        el_status st = el_adapter_load(m, dir, &a);
        if (st) test_note("%s: %s", dir, el_last_error());
        CHECK(st == EL_OK);
        el_adapter_free(a);
    }
    el_model_free(m);
    return TEST_PASS;
}

static int test_errors(void) {
    el_model *m = load(base_path(&LLAMA));
    CHECK(m);
    lora_spec s = {.rank = 4, .targets = 0x7f, .type = EL_TYPE_F32, .alpha = 4, .seed = 81};
    /* another architecture */
    const char *p = test_tmp_path("err_arch.gguf");
    CHECK(write_gguf_adapter(p, &LLAMA, &s, "qwen2"));
    CHECK(expect_refused(m, p, EL_ERR_MISMATCH, "architecture 'qwen2'"));
    /* shapes of another model (n_ff 128 instead of 96) */
    tiny_cfg other = LLAMA;
    other.n_ff = 128;
    p = test_tmp_path("err_shape.gguf");
    CHECK(write_gguf_adapter(p, &other, &s, NULL));
    CHECK(expect_refused(m, p, EL_ERR_MISMATCH, "blk.0.ffn_gate.weight.lora_a"));
    /* more blocks than the model */
    other = LLAMA;
    other.n_layer = 3;
    p = test_tmp_path("err_layers.gguf");
    CHECK(write_gguf_adapter(p, &other, &s, NULL));
    CHECK(expect_refused(m, p, EL_ERR_MISMATCH, "blk.2."));
    /* a model is not an adapter */
    CHECK(expect_refused(m, base_path(&LLAMA), EL_ERR_FORMAT, "general.type is absent"));
    /* a truncated file */
    const char *good = test_tmp_path("err_good.gguf");
    CHECK(write_gguf_adapter(good, &LLAMA, &s, NULL));
    p = test_tmp_path("err_trunc.gguf");
    {
        FILE *in = fopen(good, "rb"), *out = fopen(p, "wb");
        CHECK(in && out);
        char buf[1000];
        size_t n = fread(buf, 1, sizeof buf, in);
        fwrite(buf, 1, n, out);
        fclose(in);
        fclose(out);
    }
    CHECK(expect_refused(m, p, 0, "err_trunc.gguf"));
    /* a missing partner, a rank mismatch, an unsupported tensor, an unsupported type */
    gguf_writer *w = new_lora_writer("llama");
    CHECK(w != NULL);
    float z[96 * 8] = {0};
    int64_t ne_a[2] = {64, 4}, ne_b5[2] = {5, 64};
    gguf_writer_add_tensor(w, "blk.0.attn_q.weight.lora_a", EL_TYPE_F32, 2, ne_a, z, 64 * 4 * 4);
    p = test_tmp_path("err_partner.gguf");
    CHECK(gguf_writer_write(w, p) == EL_OK);
    CHECK(expect_refused(m, p, EL_ERR_FORMAT, "'blk.0.attn_q.weight.lora_a' has no .lora_b"));
    gguf_writer_add_tensor(w, "blk.0.attn_q.weight.lora_b", EL_TYPE_F32, 2, ne_b5, z, 5 * 64 * 4);
    p = test_tmp_path("err_rank.gguf");
    CHECK(gguf_writer_write(w, p) == EL_OK);
    CHECK(expect_refused(m, p, EL_ERR_FORMAT, "has rank 4 but 'blk.0.attn_q.weight.lora_b'"));
    gguf_writer_free(w);
    w = new_lora_writer("llama");
    CHECK(w != NULL);
    gguf_writer_add_tensor(w, "token_embd.weight.lora_a", EL_TYPE_F32, 2, ne_a, z, 64 * 4 * 4);
    p = test_tmp_path("err_embd.gguf");
    CHECK(gguf_writer_write(w, p) == EL_OK);
    CHECK(expect_refused(m, p, EL_ERR_UNSUPPORTED, "token_embd.weight.lora_a"));
    gguf_writer_free(w);
    w = new_lora_writer("llama");
    CHECK(w != NULL);
    int64_t ne_qa[2] = {64, 32}, ne_qb[2] = {32, 64};
    uint8_t q4[64 * 32];
    memset(q4, 0, sizeof q4);
    gguf_writer_add_tensor(w, "blk.1.attn_q.weight.lora_a", EL_TYPE_Q4_0, 2, ne_qa, q4,
                           el_row_size(EL_TYPE_Q4_0, 64) * 32);
    gguf_writer_add_tensor(w, "blk.1.attn_q.weight.lora_b", EL_TYPE_Q4_0, 2, ne_qb, q4,
                           el_row_size(EL_TYPE_Q4_0, 32) * 64);
    p = test_tmp_path("err_type.gguf");
    CHECK(gguf_writer_write(w, p) == EL_OK);
    CHECK(expect_refused(m, p, EL_ERR_UNSUPPORTED, "has type q4_0"));
    gguf_writer_free(w);
    /* an f16 B holding an infinity */
    w = new_lora_writer("llama");
    CHECK(w != NULL);
    uint16_t h[64 * 4] = {0};
    h[77] = 0x7c00;
    int64_t ne_ha[2] = {64, 4}, ne_hb[2] = {4, 64};
    gguf_writer_add_tensor(w, "blk.0.attn_q.weight.lora_a", EL_TYPE_F16, 2, ne_ha, h, 64 * 4 * 2);
    gguf_writer_add_tensor(w, "blk.0.attn_q.weight.lora_b", EL_TYPE_F16, 2, ne_hb, h, 64 * 4 * 2);
    p = test_tmp_path("err_inf.gguf");
    CHECK(gguf_writer_write(w, p) == EL_OK);
    CHECK(expect_refused(m, p, EL_ERR_FORMAT, "'blk.0.attn_q.weight.lora_b' holds an infinity"));
    gguf_writer_free(w);
    /* PEFT: a rank that disagrees with r, DoRA, a missing folder */
    char dir[512];
    snprintf(dir, sizeof dir, "%s/peft_bad_r", test_tmp_dir());
    CHECK(write_peft(dir, &LLAMA, &s, "{\"r\": 8, \"lora_alpha\": 8}"));
    CHECK(expect_refused(m, dir, EL_ERR_FORMAT, "has rank 4, adapter_config.json says r = 8"));
    snprintf(dir, sizeof dir, "%s/peft_dora", test_tmp_dir());
    CHECK(write_peft(dir, &LLAMA, &s, "{\"r\": 4, \"lora_alpha\": 8, \"use_dora\": true}"));
    CHECK(expect_refused(m, dir, EL_ERR_UNSUPPORTED, "DoRA"));
    snprintf(dir, sizeof dir, "%s/peft_bad_json", test_tmp_dir());
    CHECK(write_peft(dir, &LLAMA, &s, "{\"r\": 4,}"));
    CHECK(expect_refused(m, dir, EL_ERR_FORMAT, "adapter_config.json"));
    CHECK(expect_refused(m, test_tmp_path("nonexistent_dir/"), 0, "nonexistent_dir"));
    /* the engine keeps serving: a good adapter loads and runs after all that */
    el_adapter *a = NULL;
    CHECK(el_adapter_load(m, good, &a) == EL_OK);
    el_binding b = {a, 1.0f};
    float *l = prompt_logits(m, &b, 1);
    CHECK(l);
    free(l);
    /* binding errors */
    el_context *ctx = new_ctx(m, 1);
    CHECK(ctx);
    CHECK(el_context_bind(ctx, 1, &b, 1) == EL_ERR_INVALID_ARG);
    el_binding bad = {a, NAN};
    CHECK(el_context_bind(ctx, 0, &bad, 1) == EL_ERR_INVALID_ARG);
    el_model *m2 = load(base_path(&LLAMA));
    el_context *ctx2 = new_ctx(m2, 1);
    CHECK(el_context_bind(ctx2, 0, &b, 1) == EL_ERR_MISMATCH);
    el_context_free(ctx2);
    el_model_free(m2);
    el_context_free(ctx);
    el_adapter_free(a);
    el_model_free(m);
    return TEST_PASS;
}

static int test_info_and_memory(void) {
    el_model *m = load(base_path(&LLAMA));
    lora_spec s = {.rank = 16, .targets = 0x7f, .type = EL_TYPE_F16, .alpha = 32, .seed = 91};
    const char *p = test_tmp_path("info.gguf");
    CHECK(m && write_gguf_adapter(p, &LLAMA, &s, NULL));
    el_adapter *a = NULL;
    CHECK(el_adapter_load(m, p, &a) == EL_OK);
    el_adapter_info info;
    CHECK(el_adapter_get_info(a, &info) == EL_OK);
    CHECK(!strcmp(info.name, "info") && !strcmp(info.format, "gguf"));
    CHECK(info.alpha == 32.0f && info.n_targets == 14 && info.rank_max == 16);
    /* its own size: the f16 A and B (by hand) plus alignment and a small table */
    uint64_t ab = 0;
    for (int l = 0; l < 7; l++) {
        int64_t in, out;
        linear_shape(&LLAMA, l, &in, &out);
        ab += (uint64_t)(16 * (in + out)) * 2 * LLAMA.n_layer;
    }
    test_note("adapter tensors %llu bytes, held %llu", (unsigned long long)ab,
              (unsigned long long)info.bytes);
    CHECK(info.bytes >= ab && info.bytes <= ab + 28 * 64 + 4096);
    el_adapter_free(a);
    el_model_free(m);
    return TEST_PASS;
}

/* ------------------------------------------------------------ threads */

typedef struct thread_arg {
    el_model *m;
    const char *path;
    el_adapter *shared; /* the decoding thread's adapter; the churn thread drops a reference */
    const float *expect;
    int ok;
} thread_arg;

static void *decode_thread(void *p) {
    thread_arg *t = p;
    el_binding b = {t->shared, 1.0f};
    t->ok = 1;
    for (int i = 0; i < 6 && t->ok; i++) {
        float *l = prompt_logits(t->m, &b, 1);
        t->ok = l && memcmp(l, t->expect, sizeof(float) * PROMPT * VOCAB) == 0;
        free(l);
    }
    return NULL;
}

static void *churn_thread(void *p) {
    thread_arg *t = p;
    t->ok = 1;
    el_context *ctx = new_ctx(t->m, 1);
    for (int i = 0; i < 20 && t->ok; i++) {
        el_adapter *a = NULL;
        t->ok = ctx && el_adapter_load(t->m, t->path, &a) == EL_OK;
        el_binding b = {a, 0.5f};
        if (t->ok) t->ok = el_context_bind(ctx, 0, &b, 1) == EL_OK;
        el_adapter_free(a);
        if (i == 3) el_adapter_free(t->shared); /* the decoder's binding keeps it alive */
    }
    el_context_free(ctx);
    return NULL;
}

static int test_threads(void) {
    el_model *m = load(base_path(&LLAMA));
    lora_spec s1 = {.rank = 8, .targets = 0x7f, .type = EL_TYPE_F32, .alpha = 8, .seed = 95};
    lora_spec s2 = {.rank = 4, .targets = 0x33, .type = EL_TYPE_F16, .alpha = 8, .seed = 96};
    const char *p1 = test_tmp_path("thr1.gguf"), *p2 = test_tmp_path("thr2.gguf");
    CHECK(m && write_gguf_adapter(p1, &LLAMA, &s1, NULL) &&
          write_gguf_adapter(p2, &LLAMA, &s2, NULL));
    el_adapter *a = NULL;
    CHECK(el_adapter_load(m, p1, &a) == EL_OK);
    el_binding b = {a, 1.0f};
    float *expect = prompt_logits(m, &b, 1);
    CHECK(expect);
    /* the decoder takes its own reference (a context bound for the whole run) */
    el_context *hold = new_ctx(m, 1);
    CHECK(hold && el_context_bind(hold, 0, &b, 1) == EL_OK);
    thread_arg td = {.m = m, .shared = a, .expect = expect};
    thread_arg tc = {.m = m, .path = p2, .shared = a};
    pthread_t th1, th2;
    CHECK(pthread_create(&th1, NULL, decode_thread, &td) == 0);
    CHECK(pthread_create(&th2, NULL, churn_thread, &tc) == 0);
    pthread_join(th1, NULL);
    pthread_join(th2, NULL);
    CHECK(td.ok && tc.ok);
    el_context_free(hold); /* the last reference to a */
    free(expect);
    el_model_free(m);
    return TEST_PASS;
}

/* el_lora_packed against el_fp16_to_fp32 / el_bf16_to_fp32 on every finite half (normal,
 * subnormal, zeros) and every bf16: rank 1 with t = 0.75 makes each output one product. Then a
 * rank-3 f32 case against a plain double sum. */
static int test_packed_kernel(void) {
    enum { N = 65536 };
    uint16_t *h = malloc(N * 2);
    float *y = malloc(N * 4), *ref = malloc(N * 4);
    CHECK(h && y && ref);
    for (int t = 0; t < 2; t++) {
        int n = 0;
        for (uint32_t v = 0; v < N; v++)
            if (t == 1 || (v & 0x7c00u) != 0x7c00u) h[n++] = (uint16_t)v;
        n -= n % EL_LORA_PACK;
        float tk = 0.75f;
        for (int i = 0; i < n; i++) {
            y[i] = (float)(i % 7) - 3.0f;
            ref[i] = y[i] + 0.75f * (t ? el_bf16_to_fp32(h[i]) : el_fp16_to_fp32(h[i]));
        }
        el_lora_packed(t ? EL_TYPE_BF16 : EL_TYPE_F16, 1, n / EL_LORA_PACK, &tk, h, y);
        for (int i = 0; i < n; i++)
            if (!(y[i] == ref[i] || (isnan(y[i]) && isnan(ref[i])))) {
                test_note("%s 0x%04x: %g, expected %g", t ? "bf16" : "f16", h[i], y[i], ref[i]);
                return TEST_FAIL;
            }
    }
    test_rng rng = {5};
    float p[2 * 3 * 32], tv[3] = {0.5f, -2.0f, 1.25f}, yy[64] = {0};
    for (int i = 0; i < 2 * 3 * 32; i++)
        p[i] = test_rand_uniform(&rng, -1, 1);
    el_lora_packed(EL_TYPE_F32, 3, 2, tv, p, yy);
    for (int o = 0; o < 64; o++) {
        double r = 0;
        for (int k = 0; k < 3; k++)
            r += tv[k] * p[((o / 32) * 3 + k) * 32 + o % 32];
        CHECK(fabs(yy[o] - r) < 1e-6);
    }
    free(h);
    free(y);
    free(ref);
    return TEST_PASS;
}

/* el_lora_packed_i8 (the dispatched kernel: AVX2's on x86) against the plain loop of its
 * definition, y += c * (float)sum_k t[k] P[b][k][j], bit for bit: odd and even ranks, a last
 * block of 1..32 outputs, the whole int8 range. */
static int test_packed_i8_kernel(void) {
    enum { MAX_RANK = 17, MAX_OUT = 97 };
    test_rng rng = {11};
    int8_t t[MAX_RANK], p[4 * MAX_RANK * EL_LORA_PACK];
    float y[MAX_OUT], ref[MAX_OUT];
    static const int64_t outs[] = {1, 15, 16, 17, 32, 33, 64, 97};
    for (int64_t rank = 1; rank <= MAX_RANK; rank++)
        for (size_t oi = 0; oi < sizeof outs / sizeof outs[0]; oi++) {
            int64_t n_out = outs[oi], nb = (n_out + EL_LORA_PACK - 1) / EL_LORA_PACK;
            for (int64_t k = 0; k < rank; k++) t[k] = (int8_t)(test_rand_u32(&rng) & 0xff);
            for (int64_t i = 0; i < nb * rank * EL_LORA_PACK; i++)
                p[i] = (int8_t)(test_rand_u32(&rng) & 0xff);
            float c = test_rand_uniform(&rng, -1e-3f, 1e-3f);
            for (int64_t o = 0; o < MAX_OUT; o++)
                y[o] = ref[o] = test_rand_uniform(&rng, -2, 2);
            for (int64_t o = 0; o < n_out; o++) {
                int32_t s = 0;
                for (int64_t k = 0; k < rank; k++)
                    s += (int32_t)t[k] * p[((o / EL_LORA_PACK) * rank + k) * EL_LORA_PACK +
                                           o % EL_LORA_PACK];
                float v = c * (float)s;
                ref[o] = ref[o] + v;
            }
            el_lora_packed_i8(rank, n_out, t, p, c, y);
            if (memcmp(y, ref, sizeof y) != 0) {
                test_note("rank %lld, %lld outputs: differs from the definition", (long long)rank,
                          (long long)n_out);
                return TEST_FAIL;
            }
        }
    return TEST_PASS;
}

int main(void) {
    run_test("packed_kernel", test_packed_kernel);
    run_test("packed_i8_kernel", test_packed_i8_kernel);
    run_test("gguf_runtime_equals_merged", test_gguf_runtime_equals_merged);
    run_test("compact_f16", test_compact_f16);
    run_test("gguf_q8_0", test_gguf_q8_0);
    run_test("two_adapters_add_up", test_two_adapters_add_up);
    run_test("mixed_batch", test_mixed_batch);
    run_test("mixed_batch_chunked", test_mixed_batch_chunked);
    run_test("rebind_isolation", test_rebind_isolation);
    run_test("peft_equals_gguf", test_peft_equals_gguf);
    run_test("peft_llama_runtime_equals_merged", test_peft_llama_runtime_equals_merged);
    run_test("base_untouched", test_base_untouched);
    run_test("errors", test_errors);
    run_test("bad_alpha", test_bad_alpha);
    run_test("bad_peft_config", test_bad_peft_config);
    run_test("info_and_memory", test_info_and_memory);
    run_test("threads", test_threads);
    return tests_exit_code();
}
