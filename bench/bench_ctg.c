/* bench_ctg.c - concurrent variants against a single run (not a test): the wall time of K variants
 * of N tokens after a P-token prompt divided by the time of one, and the KV bytes each extra
 * variant costs. Greedy, end-of-generation ignored, so every variant makes N tokens.
 * Usage: bench_ctg MODEL [--tokenizer FILE] [-t THREADS] [-k K] [-p P] [-n N] [-r REPS]
 *        bench_ctg --synth-1b OUT.gguf [options]: first writes a GGUF of the Llama-3.2-1B shape
 *        (2048 wide, 16 blocks, 32/8 heads, FFN 8192, vocabulary 128256, tied embeddings) in Q4_0
 *        with random weights and no tokenizer, then measures it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "edgelora.h"
#include "formats/gguf.h"
#include "kernels/blocks.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* CPU time of the process (all threads): the work done, whatever else shares the cores. */
static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t next_rand(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ------------------------------------------------------------ the synthetic 1B model */

enum { EMBD = 2048, LAYERS = 16, HEADS = 32, HEADS_KV = 8, FF = 8192, VOCAB = 128256 };

/* Random Q4_0 blocks with a small fixed scale, enough for a finite forward pass. */
static void *random_q4_0(int64_t n_in, int64_t n_out, uint64_t *rng, uint64_t *bytes) {
    int64_t n_blocks = n_in / EL_QK4_0 * n_out;
    el_block_q4_0 *b = malloc((size_t)n_blocks * sizeof *b);
    if (!b) return NULL;
    uint16_t d = el_fp32_to_fp16(0.004f);
    for (int64_t i = 0; i < n_blocks; i++) {
        b[i].d = d;
        uint64_t r0 = next_rand(rng), r1 = next_rand(rng);
        memcpy(b[i].qs, &r0, 8);
        memcpy(b[i].qs + 8, &r1, 8);
    }
    *bytes = (uint64_t)n_blocks * sizeof *b;
    return b;
}

static int write_synth(const char *path) {
    gguf_writer *w = gguf_writer_create();
    if (!w) return 0;
    int ok = gguf_writer_set_str(w, "general.architecture", "llama") == EL_OK &&
             gguf_writer_set_str(w, "general.name", "synthetic Llama-3.2-1B shape, Q4_0") == EL_OK &&
             gguf_writer_set_u32(w, "llama.context_length", 131072) == EL_OK &&
             gguf_writer_set_u32(w, "llama.embedding_length", EMBD) == EL_OK &&
             gguf_writer_set_u32(w, "llama.block_count", LAYERS) == EL_OK &&
             gguf_writer_set_u32(w, "llama.feed_forward_length", FF) == EL_OK &&
             gguf_writer_set_u32(w, "llama.attention.head_count", HEADS) == EL_OK &&
             gguf_writer_set_u32(w, "llama.attention.head_count_kv", HEADS_KV) == EL_OK &&
             gguf_writer_set_f32(w, "llama.rope.freq_base", 500000.0f) == EL_OK;
    void *keep[1 + LAYERS * 9 + 1];
    int n_keep = 0;
    uint64_t rng = 0x9E3779B97F4A7C15ull, bytes;
    float *ones = malloc(EMBD * sizeof *ones);
    if (!ones) ok = 0;
    for (int i = 0; ok && i < EMBD; i++) ones[i] = 1.0f;
    int64_t ne_vec[1] = {EMBD};
    int64_t kv = EMBD / HEADS * HEADS_KV;
    static const char *const names[] = {"attn_q", "attn_k", "attn_v", "attn_output",
                                        "ffn_gate", "ffn_up", "ffn_down"};
    int64_t shapes[7][2] = {{EMBD, EMBD}, {EMBD, kv}, {EMBD, kv}, {EMBD, EMBD},
                            {EMBD, FF},   {EMBD, FF}, {FF, EMBD}};
    void *emb = ok ? random_q4_0(EMBD, VOCAB, &rng, &bytes) : NULL;
    int64_t ne_emb[2] = {EMBD, VOCAB};
    ok = ok && emb && gguf_writer_add_tensor(w, "token_embd.weight", EL_TYPE_Q4_0, 2, ne_emb, emb,
                                             bytes) == EL_OK;
    keep[n_keep++] = emb;
    ok = ok && gguf_writer_add_tensor(w, "output_norm.weight", EL_TYPE_F32, 1, ne_vec, ones,
                                      EMBD * sizeof *ones) == EL_OK;
    char name[96];
    for (int il = 0; ok && il < LAYERS; il++) {
        snprintf(name, sizeof name, "blk.%d.attn_norm.weight", il);
        ok = gguf_writer_add_tensor(w, name, EL_TYPE_F32, 1, ne_vec, ones, EMBD * 4) == EL_OK;
        snprintf(name, sizeof name, "blk.%d.ffn_norm.weight", il);
        ok = ok && gguf_writer_add_tensor(w, name, EL_TYPE_F32, 1, ne_vec, ones, EMBD * 4) == EL_OK;
        for (int t = 0; ok && t < 7; t++) {
            void *d = random_q4_0(shapes[t][0], shapes[t][1], &rng, &bytes);
            keep[n_keep++] = d;
            snprintf(name, sizeof name, "blk.%d.%s.weight", il, names[t]);
            ok = d && gguf_writer_add_tensor(w, name, EL_TYPE_Q4_0, 2, shapes[t], d, bytes) == EL_OK;
        }
    }
    ok = ok && gguf_writer_write(w, path) == EL_OK;
    if (!ok) fprintf(stderr, "bench_ctg: writing %s failed: %s\n", path, el_last_error());
    for (int i = 0; i < n_keep; i++) free(keep[i]);
    free(ones);
    gguf_writer_free(w);
    return ok;
}

/* ------------------------------------------------------------ the measurement */

typedef struct timing {
    double prompt_ms, gen_ms, cpu_ms;
    int32_t cells, gen_cells;
} timing;

static int measure(el_model *m, int32_t k, const int32_t *prompt, int32_t np, int32_t n_gen,
                   int threads, timing *t) {
    el_context_params cp = el_context_default_params();
    cp.n_ctx = np + k * n_gen;
    cp.n_batch = np > k ? np : k;
    cp.n_seq_max = k;
    cp.n_threads = threads;
    el_context *ctx;
    if (el_context_create(m, &cp, &ctx) != EL_OK) {
        fprintf(stderr, "bench_ctg: %s\n", el_last_error());
        return 0;
    }
    el_variant_params vp[64];
    for (int32_t i = 0; i < k; i++) {
        vp[i] = el_variant_default_params();
        vp[i].sampler.temperature = 0.0f;
        vp[i].max_tokens = n_gen;
        vp[i].ignore_eos = true;
    }
    el_variants_params gp = el_variants_default_params();
    gp.n_variants = k;
    gp.variants = vp;
    el_variants *g;
    double c0 = cpu_ms(), t0 = now_ms();
    el_status st = el_variants_start(ctx, &gp, prompt, np, &g);
    double t1 = now_ms();
    while (st == EL_OK && el_variants_running(g) > 0) st = el_variants_step(g);
    double t2 = now_ms();
    t->cpu_ms = cpu_ms() - c0;
    if (st != EL_OK) {
        fprintf(stderr, "bench_ctg: %s\n", el_last_error());
        el_context_free(ctx);
        return 0;
    }
    t->prompt_ms = t1 - t0;
    t->gen_ms = t2 - t1;
    t->cells = el_kv_used_cells(ctx);
    t->gen_cells = 0;
    for (int32_t i = 0; i < k; i++) {
        el_variant_result r;
        el_variants_result(g, i, &r);
        t->gen_cells += r.n_cells;
    }
    el_variants_free(g);
    el_context_free(ctx);
    return 1;
}

int main(int argc, char **argv) {
    const char *model = NULL, *tokenizer = NULL, *synth = NULL;
    int threads = 2, k = 8, np = 128, n_gen = 64, reps = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--synth-1b") && v) synth = model = argv[++i];
        else if (!strcmp(a, "--tokenizer") && v) tokenizer = argv[++i];
        else if (!strcmp(a, "-t") && v) threads = atoi(argv[++i]);
        else if (!strcmp(a, "-k") && v) k = atoi(argv[++i]);
        else if (!strcmp(a, "-p") && v) np = atoi(argv[++i]);
        else if (!strcmp(a, "-n") && v) n_gen = atoi(argv[++i]);
        else if (!strcmp(a, "-r") && v) reps = atoi(argv[++i]);
        else if (a[0] != '-' && !model) model = a;
        else {
            fprintf(stderr, "usage: bench_ctg MODEL|--synth-1b OUT [--tokenizer F] [-t N] [-k K] "
                            "[-p P] [-n N] [-r REPS]\n");
            return 2;
        }
    }
    if (!model || k < 1 || k > 64 || np < 1 || n_gen < 1 || reps < 1) {
        fprintf(stderr, "bench_ctg: give a model (or --synth-1b OUT) and positive sizes, k <= 64\n");
        return 2;
    }
    if (synth) {
        double t0 = now_ms();
        if (!write_synth(synth)) return 1;
        fprintf(stderr, "wrote %s in %.1f s\n", synth, (now_ms() - t0) / 1e3);
    }
    el_model_params mp = el_model_default_params();
    mp.tokenizer_path = tokenizer;
    el_model *m;
    if (el_model_load(model, &mp, &m) != EL_OK) {
        fprintf(stderr, "bench_ctg: %s\n", el_last_error());
        return 1;
    }
    el_model_info info;
    el_model_get_info(m, &info);
    int32_t *prompt = malloc((size_t)np * sizeof *prompt);
    uint64_t rng = 12345;
    for (int i = 0; i < np; i++) prompt[i] = 3 + (int32_t)(next_rand(&rng) % (uint64_t)(info.n_vocab - 3));
    printf("%s: %s, %d threads, prompt %d tokens, %d tokens per variant\n", model, info.name,
           threads, np, n_gen);
    timing best[2];
    int32_t ks[2] = {1, k};
    for (int r = 0; r < reps; r++)
        for (int j = 0; j < 2; j++) {
            timing t;
            if (!measure(m, ks[j], prompt, np, n_gen, threads, &t)) return 1;
            if (r == 0 || t.prompt_ms + t.gen_ms < best[j].prompt_ms + best[j].gen_ms) best[j] = t;
        }
    for (int j = 0; j < 2; j++)
        printf("K = %d: prompt %.1f ms, generation %.1f ms (%.2f ms per step), total %.1f ms; "
               "CPU %.1f ms; KV cells %d\n", ks[j], best[j].prompt_ms, best[j].gen_ms,
               best[j].gen_ms / (n_gen - 1), best[j].prompt_ms + best[j].gen_ms, best[j].cpu_ms,
               best[j].cells);
    double one = best[0].prompt_ms + best[0].gen_ms, all = best[1].prompt_ms + best[1].gen_ms;
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 1;
    el_context *ctx;
    size_t cell = el_context_create(m, &cp, &ctx) == EL_OK ? el_kv_cell_bytes(ctx) : 0;
    el_context_free(ctx);
    printf("K = %d over K = 1: wall time %.2f (sequential: %d), generation only %.2f; CPU time "
           "%.2f\n", k, all / one, k, best[1].gen_ms / best[0].gen_ms,
           best[1].cpu_ms / best[0].cpu_ms);
    printf("KV: %zu bytes a cell; prompt stored once (%d cells = %zu bytes); each extra variant "
           "%d cells = %zu bytes (a copied prompt would add %zu more)\n", cell, np,
           (size_t)np * cell, best[1].gen_cells / k, (size_t)(best[1].gen_cells / k) * cell,
           (size_t)np * cell);
    free(prompt);
    el_model_free(m);
    return 0;
}
