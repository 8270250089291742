/* test_ubatch.c - a batch run through the forward in chunks of n_ubatch rows gives the logits
 * of one pass over all its rows; the context's scratch grows with n_ubatch, not n_batch, and is
 * all a context adds to the process's memory besides its KV cache and logits.
 *
 * The reference is the same context code with n_ubatch >= the rows of the batch (one chunk: the
 * forward as it was before chunking existed). Chunked and unchunked run the same arithmetic on
 * each row, so the logits must be bit-identical:
 *  - for stories260K quantized to q4_0, q8_0 and w4 with n_ubatch 64 and 36: the matmul
 *    computes rows in blocks of 64 with 4x4 tiles inside and vec_dot for a block's last rows
 *    when fewer than 4 are left, or in packed panels, so chunks cut at multiples of 64 give each
 *    row the same kernel, and so do chunks of 36 rows here; the last chunk (162 rows: 34 and 18
 *    left) is longer than EL_GEMV_FEW_MAX (on AVX2 4-8 rows take the gemvs);
 *  - for the float32 stories260K (no tile kernel for f32) with any n_ubatch, even 1 and 7.
 * (With n_ubatch 37 some rows move between the q4_0/q8_0 tile kernels and vec_dot, which sum in
 * another order: logits then differ in their last bits, ~1e-7 relative.)
 * Batches: a prompt with every row's logits asked for (more output rows than n_ubatch, so the
 * vocabulary projection is chunked too), then a decode step; a batch whose positions run
 * backwards (a row sees rows of later chunks); two interleaved sequences. */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelora-tools.h"
#include "runtime/context.h"
#include "testutil.h"

enum { N_PROMPT = 162, N_CTX = 256 };

typedef enum batch_kind { PROMPT_FORWARD, PROMPT_BACKWARD, TWO_SEQUENCES } batch_kind;

static el_context *new_context(el_model *m, int32_t n_batch, int32_t n_ubatch) {
    el_context_params cp = el_context_default_params();
    cp.n_ctx = N_CTX;
    cp.n_batch = n_batch;
    cp.n_ubatch = n_ubatch;
    cp.n_seq_max = 2;
    cp.n_threads = 2;
    el_context *ctx = NULL;
    if (el_context_create(m, &cp, &ctx) != EL_OK)
        test_note("context: %s", el_last_error());
    return ctx;
}

/* Decodes a batch of N_PROMPT rows of the given kind asking for every row's logits, then one
 * more row of sequence 0; returns all the logits ((N_PROMPT + 1) x n_vocab, malloc'd) or NULL. */
static float *run(el_model *m, int32_t n_ubatch, batch_kind kind) {
    el_model_info info;
    if (el_model_get_info(m, &info) != EL_OK)
        return NULL;
    size_t nv = (size_t)info.n_vocab;
    el_context *ctx = new_context(m, N_PROMPT, n_ubatch);
    float *out = malloc((N_PROMPT + 1) * nv * sizeof *out);
    if (!ctx || !out) {
        el_context_free(ctx);
        free(out);
        return NULL;
    }
    int32_t tok[N_PROMPT], pos[N_PROMPT], seq[N_PROMPT];
    int8_t want[N_PROMPT];
    for (int32_t i = 0; i < N_PROMPT; i++) {
        tok[i] = (int32_t)((i * 7919u + 13) % (uint32_t)info.n_vocab);
        pos[i] = kind == PROMPT_BACKWARD ? N_PROMPT - 1 - i : kind == TWO_SEQUENCES ? i / 2 : i;
        seq[i] = kind == TWO_SEQUENCES ? i % 2 : 0;
        want[i] = 1;
    }
    el_batch b = {.n_rows = N_PROMPT, .token = tok, .pos = pos, .seq_id = seq, .logits = want};
    bool ok = el_decode(ctx, &b) == EL_OK;
    for (int32_t i = 0; ok && i < N_PROMPT; i++)
        memcpy(out + (size_t)i * nv, el_get_logits(ctx, i), nv * sizeof *out);
    int32_t t1 = 5, p1 = kind == TWO_SEQUENCES ? N_PROMPT / 2 : N_PROMPT, s1 = 0;
    el_batch b1 = {.n_rows = 1, .token = &t1, .pos = &p1, .seq_id = &s1};
    ok = ok && el_decode(ctx, &b1) == EL_OK;
    if (ok)
        memcpy(out + (size_t)N_PROMPT * nv, el_get_logits(ctx, 0), nv * sizeof *out);
    else
        test_note("decode: %s", el_last_error());
    el_context_free(ctx);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

/* Compares runs of m with each n_ubatch of ubs against the one-chunk run: bit-identical. */
static int compare_chunked(el_model *m, const int32_t *ubs, int n_ubs) {
    el_model_info info;
    CHECK(el_model_get_info(m, &info) == EL_OK);
    size_t n = (N_PROMPT + 1) * (size_t)info.n_vocab;
    const batch_kind kinds[] = {PROMPT_FORWARD, PROMPT_BACKWARD, TWO_SEQUENCES};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        float *ref = run(m, N_PROMPT, kinds[k]);
        CHECK(ref);
        for (size_t i = 0; i < n; i++)
            CHECK(isfinite(ref[i]));
        for (int e = 0; e < n_ubs; e++) {
            float *got = run(m, ubs[e], kinds[k]);
            CHECK(got);
            if (memcmp(got, ref, n * sizeof *got) != 0) {
                size_t i = 0;
                while (got[i] == ref[i]) i++;
                test_note("batch kind %d, n_ubatch %d: logit %zu is %.9g, one chunk gives %.9g",
                          (int)kinds[k], (int)ubs[e], i, got[i], ref[i]);
                free(got);
                free(ref);
                return TEST_FAIL;
            }
            free(got);
        }
        free(ref);
    }
    return TEST_PASS;
}

/* stories15M's shape with random q4_0 weights (written once, removed by main). */
static char synth_path[512];

static el_model *load_synth(void) {
    if (!synth_path[0]) {
        snprintf(synth_path, sizeof synth_path, "%s/ubatch_stories15m.gguf", test_tmp_dir());
        if (el_synth("stories15m", "q4_0", synth_path, 11, NULL, NULL) != EL_OK) {
            test_note("%s", el_last_error());
            synth_path[0] = '\0';
            return NULL;
        }
    }
    el_model *m = NULL;
    if (el_model_load(synth_path, NULL, &m) != EL_OK)
        test_note("%s", el_last_error());
    return m;
}

/* The llama2.c stories260K converted to GGUF (f32) once (removed by main), or NULL if the data
 * is absent. */
static char stories_path[1024];

static const char *stories_gguf(void) {
    if (stories_path[0])
        return stories_path;
    const char *bin = test_data_path("models/stories260K.bin");
    if (!bin)
        return NULL;
    char bin_path[1024];
    snprintf(bin_path, sizeof bin_path, "%s", bin);
    const char *tok = test_data_path("models/tok512.bin");
    snprintf(stories_path, sizeof stories_path, "%s/ubatch_stories260K.gguf", test_tmp_dir());
    if (!tok || el_convert_llama2c(bin_path, tok, stories_path) != EL_OK) {
        test_note("stories260K: %s", tok ? el_last_error() : "tok512.bin is absent");
        stories_path[0] = '\0';
        return NULL;
    }
    return stories_path;
}

static int check_quantized(const char *type) {
    const char *f32 = stories_gguf();
    if (!f32)
        return test_skip("stories260K is absent");
    char path[512];
    snprintf(path, sizeof path, "%s/ubatch_stories260K_%s.gguf", test_tmp_dir(), type);
    el_quantize_params qp = el_quantize_default_params();
    qp.type = type;
    CHECK(el_quantize(f32, path, &qp) == EL_OK);
    el_model *m = NULL;
    CHECK(el_model_load(path, NULL, &m) == EL_OK);
    const int32_t ubs[] = {64, 36};
    int rc = compare_chunked(m, ubs, 2);
    el_model_free(m);
    remove(path);
    return rc;
}

static int test_q4_0_chunked_equals_one_pass(void) { return check_quantized("q4_0"); }
static int test_q8_0_chunked_equals_one_pass(void) { return check_quantized("q8_0"); }
static int test_w4_chunked_equals_one_pass(void) { return check_quantized("w4"); }

static int test_f32_any_chunk_size(void) {
    const char *f32 = stories_gguf();
    if (!f32)
        return test_skip("stories260K is absent");
    el_model *m = NULL;
    CHECK(el_model_load(f32, NULL, &m) == EL_OK);
    const int32_t ubs[] = {1, 7, 64, N_PROMPT - 1};
    int rc = compare_chunked(m, ubs, 4);
    el_model_free(m);
    return rc;
}

/* The forward's scratch: what n_batch adds is, per row, the residual stream and the rope angles,
 * and the (n_batch x n_batch bytes) tree-ancestor matrix, plus alignment: far less than the FFN
 * rows; what n_ubatch adds per row includes at least the FFN's gate and up rows. */
static int test_scratch_grows_with_ubatch(void) {
    el_model *m = load_synth();
    CHECK(m);
    el_model_info info;
    CHECK(el_model_get_info(m, &info) == EL_OK);
    el_context *small = new_context(m, 64, 64), *wide = new_context(m, 256, 64);
    el_context *deep = new_context(m, 256, 128);
    CHECK(small && wide && deep);
    size_t s = small->fwd.scratch_bytes, w = wide->fwd.scratch_bytes, d = deep->fwd.scratch_bytes;
    test_note("scratch: n_batch 64/n_ubatch 64 %zu, 256/64 %zu, 256/128 %zu bytes", s, w, d);
    size_t head_dim = (size_t)(info.n_embd / info.n_head);
    size_t per_batch_row = ((size_t)info.n_embd + head_dim + 2) * sizeof(float);
    CHECK(w > s && w - s <= 192 * per_batch_row + (256 * 256 - 64 * 64) + 8 * 64);
    CHECK(d - w >= 64 * 2 * (size_t)info.n_ff * sizeof(float));
    CHECK(wide->params.n_ubatch == 64 && deep->params.n_ubatch == 128);
    el_context_free(small);
    el_context_free(wide);
    el_context_free(deep);
    el_model_free(m);
    return TEST_PASS;
}

/* Resident anonymous memory of this process in bytes (Linux), or 0 if unknown. */
static uint64_t rss_anon_bytes(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "RssAnon: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return (uint64_t)kb * 1024;
}

/* Everything a context makes resident is its KV cache, its scratch and the logits it was asked
 * for (plus small arrays): a 136-row prompt through a context of n_batch 256 and n_ubatch 64
 * adds no more than those and 1 MB to the process's anonymous memory, and at least the KV cells
 * it wrote (so the measurement sees allocations: glibc is told to map every block of 64 kB or
 * more afresh rather than reuse freed heap). Not under ASan, whose allocator and shadow memory
 * are resident too. */
static int test_context_memory_accounted(void) {
#ifdef __SANITIZE_ADDRESS__
    return test_skip("ASan's allocator and shadow memory");
#endif
    CHECK(mallopt(M_MMAP_THRESHOLD, 64 << 10) == 1);
    el_model *m = load_synth();
    CHECK(m);
    uint64_t before = rss_anon_bytes();
    if (before == 0) {
        el_model_free(m);
        return test_skip("no /proc/self/status");
    }
    el_context *ctx = new_context(m, 256, 64);
    CHECK(ctx);
    el_model_info info;
    CHECK(el_model_get_info(m, &info) == EL_OK);
    int32_t tok[N_PROMPT], pos[N_PROMPT], seq[N_PROMPT] = {0};
    int8_t want[N_PROMPT] = {0};
    for (int32_t i = 0; i < N_PROMPT; i++)
        tok[i] = i * 37 % info.n_vocab, pos[i] = i;
    want[N_PROMPT - 1] = want[N_PROMPT / 2] = 1;
    el_batch b = {.n_rows = N_PROMPT, .token = tok, .pos = pos, .seq_id = seq, .logits = want};
    CHECK(el_decode(ctx, &b) == EL_OK);
    uint64_t after = rss_anon_bytes();
    uint64_t kv = (uint64_t)el_kv_cell_bytes(ctx) * N_CTX;
    uint64_t logits = 2 * (uint64_t)info.n_vocab * sizeof(float);
    uint64_t bound = kv + ctx->fwd.scratch_bytes + logits + (1u << 20);
    test_note("anonymous memory +%llu bytes (KV %llu + scratch %zu + logits %llu)",
              (unsigned long long)(after - before), (unsigned long long)kv,
              ctx->fwd.scratch_bytes, (unsigned long long)logits);
    CHECK(after <= before + bound);
    CHECK(after >= before + (uint64_t)el_kv_cell_bytes(ctx) * N_PROMPT);
    el_context_free(ctx);
    el_model_free(m);
    return TEST_PASS;
}

static int test_ubatch_params(void) {
    el_model *m = load_synth();
    CHECK(m);
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 64;
    cp.n_batch = 32;
    cp.n_threads = 1;
    el_context *ctx = NULL;
    CHECK(el_context_create(m, &cp, &ctx) == EL_OK);
    CHECK(ctx->params.n_ubatch == 32); /* the default (128), capped by n_batch */
    el_context_free(ctx);
    cp.n_ubatch = -1;
    CHECK(el_context_create(m, &cp, &ctx) == EL_ERR_INVALID_ARG && !ctx);
    CHECK(strstr(el_last_error(), "n_ubatch"));
    el_model_free(m);
    return TEST_PASS;
}

int main(void) {
    run_test("context_memory_accounted", test_context_memory_accounted); /* first: a fresh heap */
    run_test("q4_0_chunked_equals_one_pass", test_q4_0_chunked_equals_one_pass);
    run_test("q8_0_chunked_equals_one_pass", test_q8_0_chunked_equals_one_pass);
    run_test("w4_chunked_equals_one_pass", test_w4_chunked_equals_one_pass);
    run_test("f32_any_chunk_size", test_f32_any_chunk_size);
    run_test("scratch_grows_with_ubatch", test_scratch_grows_with_ubatch);
    run_test("ubatch_params", test_ubatch_params);
    if (synth_path[0])
        remove(synth_path);
    if (stories_path[0])
        remove(stories_path);
    return tests_exit_code();
}
