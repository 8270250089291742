/* bench_lora.c - what adapters cost at run time, on a model of real shape (issue 4's targets).
 *
 *   build/bench/bench_lora [-t THREADS] [-n STEPS] [-r ROUNDS] [--small] [--cpu-time] [--dir DIR]
 *
 * Writes (once, into DIR, default /tmp) a random Q4_0 model of Llama-3.2-1B's shape (n_embd 2048,
 * n_ff 8192, 32 heads, 8 kv heads, 16 blocks, vocab 128256; --small: 4 blocks, vocab 32000) and
 * eight random rank-16 F16 adapters on all seven projections, then measures:
 *   - single-stream decode tokens/s with no adapter and with one adapter;
 *   - decode of a batch of 8 sequences with no adapter and with 8 different adapters;
 *   - switching a sequence's adapter (el_context_bind), microseconds per switch;
 *   - each adapter's resident bytes against its tensors' bytes;
 *   - the adapter terms of one decode row against the base matmuls of the same layers, alone;
 *   - storage and switching: one base and 8 adapters against 8 merged models (bytes), the load
 *     time of the base (a merged model's, which has its bytes) and of an adapter, and a switch;
 * each with float adapters and with the same adapters as int8 under a quantization profile
 * (model/profile.h; one written for the model, with scales that hold the adapters' values).
 * Runs alternate (none, adapter, none, adapter, ...) and the best of each is kept, because the
 * machine is shared; --cpu-time divides by the process's CPU time instead of wall time (use it
 * with -t 1 when other processes compete for the cores). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "edgelora.h"
#include "formats/gguf.h"
#include "kernels/blocks.h"
#include "core/threadpool.h"
#include "kernels/lora.h"
#include "kernels/types.h"
#include "model/model.h"
#include "model/profile.h"
#include "runtime/adapter.h"

typedef struct shape {
    int n_embd, n_ff, n_head, n_head_kv, n_layer, n_vocab;
} shape;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU seconds of the whole process (all threads): less disturbed by other processes on a shared
 * machine than wall time. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int use_cpu_time;

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Random valid q4_0 rows: small scales, random nibbles. */
static void *rand_q4_0(int64_t n_in, int64_t n_out, size_t *bytes) {
    *bytes = el_row_size(EL_TYPE_Q4_0, n_in) * (size_t)n_out;
    el_block_q4_0 *b = malloc(*bytes);
    size_t nb = *bytes / sizeof *b;
    for (size_t i = 0; i < nb; i++) {
        b[i].d = el_fp32_to_fp16(0.002f + (float)(rnd() % 1000) * 1e-6f);
        for (int j = 0; j < EL_QK4_0 / 2; j++)
            b[i].qs[j] = (uint8_t)rnd();
    }
    return b;
}

static void *rand_f16(int64_t n, float amp) {
    uint16_t *p = malloc((size_t)n * 2);
    for (int64_t i = 0; i < n; i++)
        p[i] = el_fp32_to_fp16(amp * ((float)(rnd() % 2001) / 1000.0f - 1.0f));
    return p;
}

static int64_t lin_in(const shape *s, int l) { return l == 6 ? s->n_ff : s->n_embd; }
static int64_t lin_out(const shape *s, int l) {
    int64_t kv = (int64_t)s->n_head_kv * (s->n_embd / s->n_head);
    int64_t o[7] = {s->n_embd, kv, kv, s->n_embd, s->n_ff, s->n_ff, s->n_embd};
    return o[l];
}
static const char *lin_name[7] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate",
                                  "ffn_up", "ffn_down"};

static int write_model(const char *path, const shape *s) {
    gguf_writer *w = gguf_writer_create();
    void *bufs[512];
    int nb = 0;
    gguf_writer_set_str(w, "general.architecture", "llama");
    gguf_writer_set_u32(w, "llama.context_length", 2048);
    gguf_writer_set_u32(w, "llama.embedding_length", (uint32_t)s->n_embd);
    gguf_writer_set_u32(w, "llama.block_count", (uint32_t)s->n_layer);
    gguf_writer_set_u32(w, "llama.feed_forward_length", (uint32_t)s->n_ff);
    gguf_writer_set_u32(w, "llama.attention.head_count", (uint32_t)s->n_head);
    gguf_writer_set_u32(w, "llama.attention.head_count_kv", (uint32_t)s->n_head_kv);
    size_t bytes;
    int64_t ne[2] = {s->n_embd, s->n_vocab};
    bufs[nb] = rand_q4_0(s->n_embd, s->n_vocab, &bytes);
    gguf_writer_add_tensor(w, "token_embd.weight", EL_TYPE_Q4_0, 2, ne, bufs[nb++], bytes);
    float *ones = malloc((size_t)s->n_embd * sizeof *ones);
    for (int i = 0; i < s->n_embd; i++)
        ones[i] = 1.0f;
    bufs[nb++] = ones;
    int64_t ne1[1] = {s->n_embd};
    gguf_writer_add_tensor(w, "output_norm.weight", EL_TYPE_F32, 1, ne1, ones, s->n_embd * 4);
    char name[96];
    for (int il = 0; il < s->n_layer; il++) {
        snprintf(name, sizeof name, "blk.%d.attn_norm.weight", il);
        gguf_writer_add_tensor(w, name, EL_TYPE_F32, 1, ne1, ones, s->n_embd * 4);
        snprintf(name, sizeof name, "blk.%d.ffn_norm.weight", il);
        gguf_writer_add_tensor(w, name, EL_TYPE_F32, 1, ne1, ones, s->n_embd * 4);
        for (int l = 0; l < 7; l++) {
            int64_t nel[2] = {lin_in(s, l), lin_out(s, l)};
            bufs[nb] = rand_q4_0(nel[0], nel[1], &bytes);
            snprintf(name, sizeof name, "blk.%d.%s.weight", il, lin_name[l]);
            gguf_writer_add_tensor(w, name, EL_TYPE_Q4_0, 2, nel, bufs[nb++], bytes);
        }
    }
    el_status st = gguf_writer_write(w, path);
    gguf_writer_free(w);
    for (int i = 0; i < nb; i++)
        free(bufs[i]);
    return st == EL_OK;
}

static int write_adapter(const char *path, const shape *s, int rank) {
    gguf_writer *w = gguf_writer_create();
    void **bufs = malloc(sizeof(void *) * 14 * (size_t)s->n_layer);
    int nb = 0;
    gguf_writer_set_str(w, "general.architecture", "llama");
    gguf_writer_set_str(w, "general.type", "adapter");
    gguf_writer_set_str(w, "adapter.type", "lora");
    gguf_writer_set_f32(w, "adapter.lora.alpha", (float)rank);
    char name[96];
    for (int il = 0; il < s->n_layer; il++)
        for (int l = 0; l < 7; l++) {
            int64_t in = lin_in(s, l), out = lin_out(s, l);
            int64_t ne_a[2] = {in, rank}, ne_b[2] = {rank, out};
            snprintf(name, sizeof name, "blk.%d.%s.weight.lora_a", il, lin_name[l]);
            bufs[nb] = rand_f16(in * rank, 0.02f);
            gguf_writer_add_tensor(w, name, EL_TYPE_F16, 2, ne_a, bufs[nb++], in * rank * 2);
            snprintf(name, sizeof name, "blk.%d.%s.weight.lora_b", il, lin_name[l]);
            bufs[nb] = rand_f16(out * rank, 0.02f);
            gguf_writer_add_tensor(w, name, EL_TYPE_F16, 2, ne_b, bufs[nb++], out * rank * 2);
        }
    el_status st = gguf_writer_write(w, path);
    gguf_writer_free(w);
    for (int i = 0; i < nb; i++)
        free(bufs[i]);
    free(bufs);
    return st == EL_OK;
}

/* A profile for m whose adapter scales hold write_adapter's values (|v| <= 0.02) unclamped; x
 * and t scales are plausible, and only their cost matters here. */
static int write_profile(const char *path, const el_model *m) {
    el_profile p = {.n_slots = m->hp.n_layer * EL_N_LINEAR, .base = el_model_fingerprint(m)};
    p.slots = calloc((size_t)p.n_slots, sizeof *p.slots);
    for (int32_t i = 0; i < p.n_slots; i++)
        p.slots[i] = (el_profile_slot){0.01f, 0.02f / 127.0f, 0.01f, 0.02f / 127.0f};
    el_status st = el_profile_write(&p, path);
    free(p.slots);
    return st == EL_OK;
}

static int exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* Decodes `steps` steps of n_seq sequences (one row each) after a 4-token prompt each; returns
 * tokens/s of the decode steps. Sequence i is bound to ads[i] if ads. */
static double decode_rate(el_model *m, int threads, int n_seq, el_adapter **ads, int steps) {
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 512;
    cp.n_batch = 64;
    cp.n_seq_max = n_seq;
    cp.n_threads = threads;
    el_context *ctx = NULL;
    if (el_context_create(m, &cp, &ctx) != EL_OK) {
        fprintf(stderr, "%s\n", el_last_error());
        exit(1);
    }
    for (int s = 0; ads && s < n_seq; s++) {
        el_binding b = {ads[s], 1.0f};
        el_context_bind(ctx, s, &b, 1);
    }
    int32_t tok[64], pos[64], seq[64];
    int n = 0;
    for (int s = 0; s < n_seq; s++)
        for (int i = 0; i < 4; i++, n++) {
            tok[n] = 1 + i * 7 + s;
            pos[n] = i;
            seq[n] = s;
        }
    el_batch b = {.n_rows = n, .token = tok, .pos = pos, .seq_id = seq};
    el_decode(ctx, &b);
    double t0 = use_cpu_time ? cpu_s() : now_s();
    for (int step = 0; step < steps; step++) {
        for (int s = 0; s < n_seq; s++) {
            tok[s] = (step * 31 + s * 17) % 1000;
            pos[s] = 4 + step;
            seq[s] = s;
        }
        el_batch bs = {.n_rows = n_seq, .token = tok, .pos = pos, .seq_id = seq};
        if (el_decode(ctx, &bs) != EL_OK) {
            fprintf(stderr, "%s\n", el_last_error());
            exit(1);
        }
    }
    double rate = steps * n_seq / ((use_cpu_time ? cpu_s() : now_s()) - t0);
    el_context_free(ctx);
    return rate;
}

/* The linear layers of one decode row alone, on one thread: every base matmul of the model
 * against the adapter terms of one bound adapter on the same layers (best of reps; CPU time
 * on one thread, wall time on several).
 * A direct measure of what an adapter adds to the matmuls (attention, norms and the output layer
 * come on top of the base). */
static void kernel_times(el_model *m, el_adapter *ad, int reps, int threads, const char *what) {
    el_threadpool *tp = NULL;
    if (threads > 1) el_threadpool_create(threads, &tp);
    const el_hparams *hp = &m->hp;
    int64_t width = hp->n_ff > hp->n_embd ? hp->n_ff : hp->n_embd;
    float *x = calloc((size_t)width, sizeof *x);
    float *y = calloc((size_t)width * EL_LORA_MANY, sizeof *y);
    void *scratch = malloc(el_row_size(EL_TYPE_Q8_0, width) + 64);
    for (int64_t i = 0; i < width; i++)
        x[i] = (float)((i * 37) % 17) / 17.0f - 0.5f;
    int32_t row = 0;
    el_lora_term term = el_adapter_term(ad, 1.0f);
    el_lora_group g = {.rows = &row, .n_rows = 1, .terms = &term, .n_terms = 1};
    el_lora_rows lr = {.groups = &g, .n_groups = 1};
    el_lora_scratch ls = {0};
    el_lora_reserve(&ls, &lr, width);
    double base = 1e9, lora = 1e9;
    for (int r = 0; r < reps; r++) {
        double t0 = threads > 1 ? now_s() : cpu_s();
        for (int il = 0; il < hp->n_layer; il++)
            for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++)
                el_matmul(tp, el_layer_weight(&m->layers[il], w), x, width, 1, y, width,
                          scratch);
        double t1 = threads > 1 ? now_s() : cpu_s();
        for (int il = 0; il < hp->n_layer; il++)
            for (int gi = 0; gi < 4; gi++) {
                /* as the forward pass groups them: the linears that read the same x */
                static const el_linear first[4] = {EL_LINEAR_Q, EL_LINEAR_O, EL_LINEAR_GATE,
                                                   EL_LINEAR_DOWN};
                static const int count[4] = {3, 1, 2, 1};
                int32_t slots[EL_LORA_MANY];
                float *ys[EL_LORA_MANY];
                int64_t ldys[EL_LORA_MANY];
                for (int c = 0; c < count[gi]; c++) {
                    slots[c] = el_linear_slot(il, (el_linear)(first[gi] + c));
                    ys[c] = y + c * width;
                    ldys[c] = width;
                }
                el_lora_apply_many(tp, &lr, count[gi], slots, x, width,
                                   el_layer_weight(&m->layers[il], first[gi])->n_in, ys, ldys,
                                   &ls);
            }
        double t2 = threads > 1 ? now_s() : cpu_s();
        base = t1 - t0 < base ? t1 - t0 : base;
        lora = t2 - t1 < lora ? t2 - t1 : lora;
    }
    printf("one decode row, %d threads, the %d linear layers alone (best of %d): base %.2f ms, "
           "%s adapter terms %.3f ms (%.1f%% of the base matmuls)\n", threads, hp->n_layer * 7,
           reps, base * 1e3, what, lora * 1e3, 100.0 * lora / base);
    if (tp) el_threadpool_free(tp);
    el_lora_scratch_free(&ls);
    free(x);
    free(y);
    free(scratch);
}

static double file_bytes(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (double)sb.st_size : 0.0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of 5 timed loads (ms): of the model at path (profile: under it; adapter: the adapter
 * onto a model loaded once). The file is in the page cache after the first. */
static double load_ms(const char *path, const char *profile, const char *adapter) {
    double t[5];
    el_model_params mp = el_model_default_params();
    mp.profile_path = profile;
    el_model *m = NULL;
    if (adapter && el_model_load(path, &mp, &m) != EL_OK) return -1;
    for (int i = 0; i < 5; i++) {
        double t0 = now_s();
        if (adapter) {
            el_adapter *ad;
            if (el_adapter_load(m, adapter, &ad) != EL_OK) return -1;
            t[i] = (now_s() - t0) * 1e3;
            el_adapter_free(ad);
        } else {
            el_model *mm;
            if (el_model_load(path, &mp, &mm) != EL_OK) return -1;
            t[i] = (now_s() - t0) * 1e3;
            el_model_free(mm);
        }
    }
    el_model_free(m);
    qsort(t, 5, sizeof *t, cmp_double);
    return t[2];
}

/* One base and N adapters against N merged models: a merged model is the base's tensors with
 * the adapter folded in, so it has the base's bytes and its load time. */
static void storage_table(const char *base, const char *adapter, const char *profile,
                          el_adapter *ad, el_adapter *ad8, double switch_us) {
    enum { N = 8 };
    double base_b = file_bytes(base), ad_b = file_bytes(adapter);
    el_adapter_info fi, qi;
    el_adapter_get_info(ad, &fi);
    el_adapter_get_info(ad8, &qi);
    double lb = load_ms(base, NULL, NULL), la = load_ms(base, NULL, adapter);
    double la8 = load_ms(base, profile, adapter);
    const double mib = 1048576.0;
    printf("\n| %d tasks | files (MiB) | in memory (MiB) | to switch tasks |\n", N);
    printf("| --- | ---: | ---: | --- |\n");
    printf("| %d merged models | %.1f | %.1f (one at a time: %.1f) | load another model: %.1f ms |\n", N,
           N * base_b / mib, N * base_b / mib, base_b / mib, lb);
    printf("| one base + %d float adapters | %.1f | %.1f | el_context_bind: %.2f us (an adapter "
           "loads in %.1f ms, once) |\n", N, (base_b + N * ad_b) / mib,
           (base_b + N * (double)fi.bytes) / mib, switch_us, la);
    printf("| one base + %d int8 adapters under a profile | %.1f | %.1f | el_context_bind: %.2f "
           "us (an adapter loads in %.1f ms, once) |\n", N, (base_b + N * ad_b) / mib,
           (base_b + N * (double)qi.bytes) / mib, switch_us, la8);
    printf("(the base loads in %.1f ms, median of 5, from the page cache; the adapter files are "
           "f16)\n", lb);
}

int main(int argc, char **argv) {
    int threads = 2, steps = 16, rounds = 3;
    const char *dir = "/tmp";
    shape s = {2048, 8192, 32, 8, 16, 128256};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--small")) s.n_layer = 4, s.n_vocab = 32000;
        else if (!strcmp(argv[i], "--cpu-time")) use_cpu_time = 1;
        else {
            fprintf(stderr, "usage: bench_lora [-t THREADS] [-n STEPS] [-r ROUNDS] [--small] "
                            "[--cpu-time] [--dir DIR]\n");
            return 2;
        }
    }
    char base[512], ad_path[8][512];
    snprintf(base, sizeof base, "%s/bench_lora_base_%d_%d.gguf", dir, s.n_layer, s.n_vocab);
    if (!exists(base) && !write_model(base, &s)) return 1;
    for (int i = 0; i < 8; i++) {
        snprintf(ad_path[i], sizeof ad_path[i], "%s/bench_lora_r16_%d_%d.gguf", dir, s.n_layer, i);
        if (!exists(ad_path[i]) && !write_adapter(ad_path[i], &s, 16)) return 1;
    }
    el_model *m = NULL;
    if (el_model_load(base, NULL, &m) != EL_OK) {
        fprintf(stderr, "%s\n", el_last_error());
        return 1;
    }
    el_adapter *ads[8];
    for (int i = 0; i < 8; i++)
        if (el_adapter_load(m, ad_path[i], &ads[i]) != EL_OK) {
            fprintf(stderr, "%s\n", el_last_error());
            return 1;
        }
    char prof[512];
    snprintf(prof, sizeof prof, "%s/bench_lora_%d_%d.profile.gguf", dir, s.n_layer, s.n_vocab);
    el_model_params mp = el_model_default_params();
    mp.profile_path = prof;
    el_model *m8 = NULL;
    el_adapter *ads8[8];
    if (!write_profile(prof, m) || el_model_load(base, &mp, &m8) != EL_OK) {
        fprintf(stderr, "%s\n", el_last_error());
        return 1;
    }
    for (int i = 0; i < 8; i++)
        if (el_adapter_load(m8, ad_path[i], &ads8[i]) != EL_OK) {
            fprintf(stderr, "%s\n", el_last_error());
            return 1;
        }
    printf("model: Q4_0, n_embd %d, n_ff %d, %d blocks, vocab %d; %d threads, %d steps\n",
           s.n_embd, s.n_ff, s.n_layer, s.n_vocab, threads, steps);

    for (int t = 1; t <= threads; t += threads > 1 ? threads - 1 : 1) {
        kernel_times(m, ads[0], 20, t, "float");
        kernel_times(m8, ads8[0], 20, t, "int8 (profile)");
    }

    double best[6] = {0};
    el_adapter *one[1] = {ads[0]}, *one8[1] = {ads8[0]};
    for (int r = 0; r < rounds; r++) {
        double v[6] = {decode_rate(m, threads, 1, NULL, steps),
                       decode_rate(m, threads, 1, one, steps),
                       decode_rate(m8, threads, 1, one8, steps),
                       decode_rate(m, threads, 8, NULL, steps / 2),
                       decode_rate(m, threads, 8, ads, steps / 2),
                       decode_rate(m8, threads, 8, ads8, steps / 2)};
        for (int i = 0; i < 6; i++)
            best[i] = v[i] > best[i] ? v[i] : best[i];
    }
    printf("single stream: %.2f tok/s without adapter; with a rank-16 adapter on all 7 "
           "projections %.2f float (%.1f%% slower), %.2f int8 under a profile (%.1f%% slower)\n",
           best[0], best[1], 100.0 * (1.0 - best[1] / best[0]), best[2],
           100.0 * (1.0 - best[2] / best[0]));
    printf("batch of 8:    %.2f tok/s without adapters; with 8 different rank-16 adapters %.2f "
           "float (%.1f%% of it), %.2f int8 (%.1f%%)\n", best[3], best[4],
           100.0 * best[4] / best[3], best[5], 100.0 * best[5] / best[3]);

    el_context_params cp = el_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 1;
    el_context *ctx = NULL;
    el_context_create(m, &cp, &ctx);
    int n_switch = 10000;
    double t0 = now_s();
    for (int i = 0; i < n_switch; i++) {
        el_binding b = {ads[i % 2], 1.0f};
        el_context_bind(ctx, 0, &b, 1);
    }
    double switch_us = (now_s() - t0) / n_switch * 1e6;
    printf("switching a sequence's adapter: %.3f us per el_context_bind\n", switch_us);
    el_context_free(ctx);

    uint64_t tensors = 0;
    for (int il = 0; il < s.n_layer; il++)
        for (int l = 0; l < 7; l++)
            tensors += (uint64_t)16 * (lin_in(&s, l) + lin_out(&s, l)) * 2;
    el_adapter_info info;
    el_adapter_get_info(ads[0], &info);
    printf("memory: an adapter holds %.3f MiB for %.3f MiB of tensors (+%.2f%%)\n",
           info.bytes / 1048576.0, tensors / 1048576.0,
           100.0 * ((double)info.bytes / (double)tensors - 1.0));
    el_adapter_get_info(ads8[0], &info);
    printf("memory: as int8 under the profile it holds %.3f MiB (%.2fx fewer bytes than its f16 "
           "tensors), %llu of %llu values clamped\n", info.bytes / 1048576.0,
           (double)tensors / (double)info.bytes, (unsigned long long)info.n_clipped,
           (unsigned long long)info.n_values);
    storage_table(base, ad_path[1], prof, ads[0], ads8[0], switch_us);
    for (int i = 0; i < 8; i++) {
        el_adapter_free(ads[i]);
        el_adapter_free(ads8[i]);
    }
    el_model_free(m);
    el_model_free(m8);
    return 0;
}
