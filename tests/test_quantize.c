/* test_quantize.c - el_quantize on float models written here: each type's per-tensor error
 * against bounds derived from its step size, the quantized model's logits against the float
 * model's, the q8_0 result element by element against half a quantization step (and byte for
 * byte against the kernels' reference quantizer), llama.cpp's
 * file_type numbers, the fallback rules, and failures that leave no file.
 *
 * Error bounds (relative RMS, ||W - deq(Q(W))|| / ||W||) for weights uniform in [-a, a], whose
 * RMS is a/sqrt(3): rounding to a step s has RMS error s/sqrt(12), so the relative error is
 * (s/a)/2. Steps relative to a block's largest |w| (about a): q8_0 1/127 -> 0.004; q6_k 1/32
 * -> 0.016; q4_0 1/8 -> 0.0625 (max |w| maps to -8); q4_k (range)/15 = 2/15 -> 0.067, plus
 * its 6-bit sub-block scales; q4_1 the same 2/15; q5_0 1/16 -> 0.031; q5_1 and q5_k 2/31 ->
 * 0.032; iq4_nl and iq4_xs taken at q4_0's 1/8 (16 levels, spaced unevenly); q3_k 1/4 ->
 * 0.125; q2_k (range)/3 = 2/3 -> 0.33; f16 and bf16 relative steps 2^-11 and 2^-8 of each value give
 * well under 3e-4 and 2.3e-3; edgelora's w8 1/127 of a row's largest -> 0.004, and its int4
 * types (symmetric, -7..7) 1/7 of a row's or group's largest -> 0.071; w8a16 stores w8's
 * weights. Each bound below is that figure * 1.5.
 *
 * The logits of this random two-layer model move 3-5 times the weights' relative error (plus
 * ~0.025 from the 8-bit activations of the quantized dot products, which w8a16's 16-bit ones
 * avoid: 0.019 against w8's 0.041). The logit tolerances are
 * 1.5 times what was measured on this seeded model: a regression guard. A file laid out wrong
 * or quantized wrong gives errors near 1; the per-tensor bounds are the principled check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compress/quantize.h"
#include "formats/gguf.h"
#include "kernels/blocks.h"
#include "testutil.h"

static const struct {
    const char *name;
    el_type type;
    uint32_t file_type; /* llama.cpp's llama_ftype */
    double max_rel_err;
    double max_logit_err; /* max |dlogit| / max(1, max |logit|): see below */
} types[] = {
    {"f16", EL_TYPE_F16, 1, 5e-4, 1.5e-3},   {"bf16", EL_TYPE_BF16, 32, 4e-3, 1.1e-2},
    {"q8_0", EL_TYPE_Q8_0, 7, 6e-3, 4.8e-2}, {"q6_k", EL_TYPE_Q6_K, 18, 0.025, 0.125},
    {"q4_0", EL_TYPE_Q4_0, 2, 0.095, 0.43},  {"q4_k", EL_TYPE_Q4_K, 15, 0.1, 0.45},
    {"q5_k", EL_TYPE_Q5_K, 17, 0.048, 0.18},  {"q5_1", EL_TYPE_Q5_1, 9, 0.048, 0.22},
    {"q5_0", EL_TYPE_Q5_0, 8, 0.047, 0.25},   {"q4_1", EL_TYPE_Q4_1, 3, 0.1, 0.43},
    {"iq4_nl", EL_TYPE_IQ4_NL, 25, 0.094, 0.44}, {"iq4_xs", EL_TYPE_IQ4_XS, 30, 0.094, 0.45},
    {"q3_k", EL_TYPE_Q3_K, 12, 0.19, 0.83},   {"q2_k", EL_TYPE_Q2_K, 10, 0.5, 1.67},
    /* edgelora's types (no llama.cpp number: 1000 + id) */
    {"w8", EL_TYPE_W8, 1065, 6e-3, 0.05},        {"w4", EL_TYPE_W4, 1066, 0.107, 0.57},
    {"w4g32", EL_TYPE_W4G32, 1067, 0.107, 0.47}, {"w4g64", EL_TYPE_W4G64, 1068, 0.107, 0.51},
    {"w4g128", EL_TYPE_W4G128, 1069, 0.107, 0.56},
    /* w8's weights with 16-bit activations: its logit tolerance is below what w8 measures */
    {"w8a16", EL_TYPE_W8A16, 1070, 6e-3, 0.029},
};

/* buf (512 bytes) = the path of name in the test's temporary directory. */
static const char *tmp_path(char *buf, const char *name) {
    snprintf(buf, 512, "%s/%s", test_tmp_dir(), name);
    return buf;
}

static bool file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* No file at path nor any temporary file beside it. */
static bool nothing_written(const char *path) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "ls '%s'* >/dev/null 2>&1", path);
    return !file_exists(path) && system(cmd) != 0;
}

/* A llama model with rows that fit every type's blocks (n_embd 256, n_ff 512), float32 weights
 * uniform in [-0.1, 0.1], the golden model's tokenizer. */
static int write_float_model(const char *path) {
    gguf_file *g;
    if (gguf_open("tests/golden/llama_f32_gqa.gguf", &g)) return 0;
    gguf_writer *w = gguf_writer_create();
    int ok = w && !gguf_writer_copy_kv(w, g) &&
             !gguf_writer_set_u32(w, "llama.embedding_length", 256) &&
             !gguf_writer_set_u32(w, "llama.feed_forward_length", 512) &&
             !gguf_writer_set_u32(w, "llama.block_count", 2) &&
             !gguf_writer_set_u32(w, "llama.attention.head_count", 4) &&
             !gguf_writer_set_u32(w, "llama.attention.head_count_kv", 2);
    const int64_t E = 256, F = 512, V = 300, KV = 128;
    struct {
        const char *name;
        int64_t ne0, ne1;
    } shapes[] = {{"token_embd.weight", E, V}, {"output_norm.weight", E, 1},
                  {"output.weight", E, V}};
    struct {
        const char *name;
        int64_t ne0, ne1;
    } layer[] = {{"attn_norm.weight", E, 1}, {"attn_q.weight", E, E}, {"attn_k.weight", E, KV},
                 {"attn_v.weight", E, KV},   {"attn_output.weight", E, E},
                 {"ffn_norm.weight", E, 1},  {"ffn_gate.weight", E, F},
                 {"ffn_up.weight", E, F},    {"ffn_down.weight", F, E}};
    float *bufs[32];
    int nb = 0;
    test_rng r = {42};
    for (int t = 0; ok && t < 3 + 2 * 9; t++) {
        char name[64];
        int64_t ne[2];
        if (t < 3) {
            snprintf(name, sizeof name, "%s", shapes[t].name);
            ne[0] = shapes[t].ne0;
            ne[1] = shapes[t].ne1;
        } else {
            int l = (t - 3) / 9, k = (t - 3) % 9;
            snprintf(name, sizeof name, "blk.%d.%s", l, layer[k].name);
            ne[0] = layer[k].ne0;
            ne[1] = layer[k].ne1;
        }
        size_t n = (size_t)(ne[0] * ne[1]);
        float *d = bufs[nb++] = malloc(n * sizeof *d);
        ok = d != NULL;
        for (size_t i = 0; ok && i < n; i++)
            d[i] = ne[1] == 1 ? 1.0f + test_rand_uniform(&r, -0.1f, 0.1f)
                              : test_rand_uniform(&r, -0.1f, 0.1f);
        ok = ok && !gguf_writer_add_tensor(w, name, EL_TYPE_F32, ne[1] == 1 ? 1 : 2, ne, d,
                                           n * sizeof *d);
    }
    ok = ok && !gguf_writer_write(w, path);
    for (int i = 0; i < nb; i++) free(bufs[i]);
    gguf_writer_free(w);
    gguf_close(g);
    return ok;
}

/* What the progress callback saw, by tensor index. */
typedef struct seen {
    int n;
    double err[64];
    bool quantized[64];
    int stop_after; /* return false after this many tensors (0: never) */
} seen;

static bool record(void *user, const el_quantize_tensor *t) {
    seen *s = user;
    if (t->index < 64) {
        s->err[t->index] = t->rel_rms_error;
        s->quantized[t->index] = t->quantized;
    }
    s->n++;
    return !(s->stop_after && s->n >= s->stop_after);
}

/* Logits of 6 tokens run as one batch: [6][300]. */
static int model_logits(const char *path, float *out) {
    el_model *m;
    el_context *ctx;
    if (el_model_load(path, NULL, &m)) return 0;
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 16;
    cp.n_batch = 8;
    cp.n_threads = 1;
    if (el_context_create(m, &cp, &ctx)) {
        el_model_free(m);
        return 0;
    }
    int32_t tok[6] = {1, 17, 250, 3, 99, 42}, pos[6] = {0, 1, 2, 3, 4, 5}, seq[6] = {0};
    int8_t all[6] = {1, 1, 1, 1, 1, 1};
    el_batch b = {.n_rows = 6, .token = tok, .pos = pos, .seq_id = seq, .logits = all};
    int ok = el_decode(ctx, &b) == EL_OK;
    for (int i = 0; ok && i < 6; i++) memcpy(out + 300 * i, el_get_logits(ctx, i), 300 * 4);
    el_context_free(ctx);
    el_model_free(m);
    return ok;
}

static double rel_rms(const float *w, const float *q, size_t n) {
    double e2 = 0, r2 = 0;
    for (size_t i = 0; i < n; i++) {
        e2 += ((double)w[i] - q[i]) * ((double)w[i] - q[i]);
        r2 += (double)w[i] * w[i];
    }
    return sqrt(e2 / r2);
}

static int check_type(int k, const char *float_path, const float *ref_logits) {
    char out_buf[512];
    const char *out = tmp_path(out_buf, "q.gguf");
    seen s = {0};
    el_quantize_params p = el_quantize_default_params();
    p.type = types[k].name;
    p.pure = true; /* every matrix in the type (tests/test_quantize_mix.c has the mixes) */
    p.n_threads = 2;
    p.progress = record;
    p.user = &s;
    CHECK(el_quantize(float_path, out, &p) == EL_OK);
    gguf_file *in, *q;
    CHECK(gguf_open(float_path, &in) == EL_OK);
    CHECK(gguf_open(out, &q) == EL_OK);
    CHECK(q->n_tensors == in->n_tensors && s.n == (int)in->n_tensors);
    uint32_t ft = 0;
    CHECK(gguf_get_u32(q, "general.file_type", &ft) == EL_OK && ft == types[k].file_type);
    int bad = 0;
    for (uint64_t i = 0; i < in->n_tensors && !bad; i++) {
        const gguf_tensor *a = &in->tensors[i], *b = &q->tensors[i];
        CHECK(a->name.len == b->name.len && !memcmp(a->name.ptr, b->name.ptr, a->name.len));
        if (a->n_dims == 1) { /* vectors are copied as they are */
            CHECK(b->type == EL_TYPE_F32 && b->nbytes == a->nbytes);
            CHECK(memcmp(a->data, b->data, a->nbytes) == 0 && !s.quantized[i]);
            continue;
        }
        CHECK(b->type == (uint32_t)types[k].type && s.quantized[i]);
        size_t n = (size_t)(a->ne[0] * a->ne[1]);
        float *deq = malloc(n * sizeof *deq);
        CHECK(deq != NULL);
        size_t row = el_row_size((el_type)b->type, a->ne[0]); /* rows may have a header */
        for (int64_t r = 0; r < a->ne[1]; r++)
            el_type_kernels_get(b->type)->to_float((const uint8_t *)b->data + r * row,
                                                   deq + r * a->ne[0], a->ne[0]);
        double err = rel_rms(a->data, deq, n);
        free(deq);
        if (err > types[k].max_rel_err || fabs(err - s.err[i]) > 1e-6 * err + 1e-12) {
            test_note("%s %.*s: error %.6f (reported %.6f), bound %.6f", types[k].name,
                      (int)a->name.len, a->name.ptr, err, s.err[i], types[k].max_rel_err);
            bad = 1;
        }
    }
    gguf_close(in);
    gguf_close(q);
    CHECK(!bad);
    float *logits = malloc(6 * 300 * sizeof *logits);
    CHECK(logits && model_logits(out, logits));
    double lerr = test_max_rel_err(logits, ref_logits, 6 * 300);
    free(logits);
    test_note("%s: logits max rel error %.5f (tolerance %.5f)", types[k].name, lerr,
              types[k].max_logit_err);
    CHECK(lerr <= types[k].max_logit_err);
    return TEST_PASS;
}

static int test_every_type(void) {
    char fp_buf[512];
    const char *fp = tmp_path(fp_buf, "float.gguf");
    CHECK(write_float_model(fp));
    float *ref = malloc(6 * 300 * sizeof *ref);
    CHECK(ref && model_logits(fp, ref));
    int rc = TEST_PASS;
    for (size_t k = 0; k < sizeof types / sizeof types[0] && rc == TEST_PASS; k++)
        rc = check_type((int)k, fp, ref);
    free(ref);
    return rc;
}

/* q8_0 element by element: d = max |w| / 127 of its block up to fp16 rounding, and every value
 * within half a step of the input (plus what the scale's rounding adds). */
static int test_q8_0_half_step(void) {
    char fp_buf[512], out_buf[512];
    const char *fp = tmp_path(fp_buf, "float8.gguf"), *out = tmp_path(out_buf, "q8.gguf");
    CHECK(write_float_model(fp));
    el_quantize_params p = el_quantize_default_params();
    p.type = "q8_0";
    CHECK(el_quantize(fp, out, &p) == EL_OK);
    gguf_file *in, *q;
    CHECK(gguf_open(fp, &in) == EL_OK && gguf_open(out, &q) == EL_OK);
    const gguf_tensor *a = gguf_find_tensor(in, "blk.1.ffn_down.weight");
    const gguf_tensor *b = gguf_find_tensor(q, "blk.1.ffn_down.weight");
    CHECK(a && b && b->type == EL_TYPE_Q8_0);
    const float *w = a->data;
    const el_block_q8_0 *blk = b->data;
    int64_t n_blocks = a->ne[0] * a->ne[1] / 32;
    int bad = 0;
    for (int64_t i = 0; i < n_blocks && !bad; i++) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(w[32 * i + j]));
        float d = el_fp16_to_fp32(blk[i].d);
        bad |= fabsf(d - amax / 127) > amax / 127 * 1e-3f;
        /* the quants are rounded against the exact scale, the reader multiplies by its fp16
         * rounding: up to 127 times that difference more than half a step */
        float slack = 127 * fabsf(d - amax / 127);
        for (int j = 0; j < 32; j++)
            bad |= fabsf(d * blk[i].qs[j] - w[32 * i + j]) > d / 2 + slack + 1e-7f;
        if (bad) test_note("block %lld: d %g amax %g", (long long)i, d, amax);
    }
    /* and byte for byte what the kernels' reference quantizer makes of the whole tensor */
    el_block_q8_0 *ref = malloc((size_t)n_blocks * sizeof *ref);
    bad |= ref == NULL;
    if (ref) {
        el_q8_0_weights_from_float(w, ref, n_blocks * 32);
        bad |= memcmp(ref, blk, (size_t)n_blocks * sizeof *ref) != 0;
    }
    free(ref);
    gguf_close(in);
    gguf_close(q);
    CHECK(!bad);
    return TEST_PASS;
}

/* The golden model has n_embd 64 and n_ff 96: no row fits a K-quant's 256, so they fall back
 * (llama.cpp: Q6_K -> Q8_0; Q4_K -> Q5_0, which we lack, so Q8_0). */
static int test_fallbacks(void) {
    CHECK(el_quant_fit_type(EL_TYPE_Q4_K, 64) == EL_TYPE_Q5_0);
    CHECK(el_quant_fit_type(EL_TYPE_Q5_K, 64) == EL_TYPE_Q5_1);
    CHECK(el_quant_fit_type(EL_TYPE_Q3_K, 64) == EL_TYPE_Q4_0);
    CHECK(el_quant_fit_type(EL_TYPE_Q2_K, 96) == EL_TYPE_Q4_0);
    CHECK(el_quant_fit_type(EL_TYPE_IQ4_XS, 96) == EL_TYPE_IQ4_NL);
    CHECK(el_quant_fit_type(EL_TYPE_Q5_K, 172) == EL_TYPE_F16);
    CHECK(el_quant_fit_type(EL_TYPE_Q6_K, 96) == EL_TYPE_Q8_0);
    CHECK(el_quant_fit_type(EL_TYPE_Q6_K, 172) == EL_TYPE_F16);
    CHECK(el_quant_fit_type(EL_TYPE_Q4_0, 172) == EL_TYPE_F16);
    CHECK(el_quant_fit_type(EL_TYPE_Q4_0, 2048) == EL_TYPE_Q4_0);
    CHECK(el_quant_fit_type(EL_TYPE_Q4_K, 8192) == EL_TYPE_Q4_K);
    CHECK(el_quant_fit_type(EL_TYPE_BF16, 3) == EL_TYPE_BF16);
    CHECK(el_quant_fit_type(EL_TYPE_W4G128, 192) == EL_TYPE_W4G64);
    CHECK(el_quant_fit_type(EL_TYPE_W4G128, 96) == EL_TYPE_W4G32);
    CHECK(el_quant_fit_type(EL_TYPE_W4G64, 256) == EL_TYPE_W4G64);
    CHECK(el_quant_fit_type(EL_TYPE_W4G32, 48) == EL_TYPE_F16);
    CHECK(el_quant_fit_type(EL_TYPE_W4, 172) == EL_TYPE_F16);
    char out_buf[512];
    const char *out = tmp_path(out_buf, "k.gguf");
    el_quantize_params p = el_quantize_default_params();
    p.type = "q4_k";
    p.pure = true;
    CHECK(el_quantize("tests/golden/llama_f32_gqa.gguf", out, &p) == EL_OK);
    gguf_file *q;
    CHECK(gguf_open(out, &q) == EL_OK);
    const gguf_tensor *t = gguf_find_tensor(q, "blk.0.ffn_down.weight");
    bool ok = t && t->type == EL_TYPE_Q5_0; /* llama.cpp's fallback of q4_K */
    uint32_t ft = 0;
    ok = ok && gguf_get_u32(q, "general.file_type", &ft) == EL_OK && ft == 15;
    gguf_close(q);
    CHECK(ok);
    return TEST_PASS;
}

static int test_type_names(void) {
    bool readable = false;
    CHECK(el_quantize_type_check("Q4_0", &readable) == EL_OK && readable);
    CHECK(el_quantize_type_check("q6_k", &readable) == EL_OK && readable);
    CHECK(el_quantize_type_check("q8_k", &readable) == EL_ERR_INVALID_ARG); /* activations */
    CHECK(el_quantize_type_check("q5_9", &readable) == EL_ERR_INVALID_ARG);
    CHECK(strstr(el_last_error(), "q5_9") && strstr(el_last_error(), "q4_0"));
    CHECK(el_quant_file_type(EL_TYPE_F32) == 0);
    CHECK(el_quantize_type_check("w4g64", &readable) == EL_OK && !readable);
    CHECK(el_quantize_type_check("a8", &readable) == EL_ERR_INVALID_ARG); /* activations */
    CHECK(el_quantize_type_check("a16", &readable) == EL_ERR_INVALID_ARG);
    /* the profiles' names for the per-channel types that store them */
    el_type t;
    CHECK(el_type_from_name("W4A8", &t) && t == EL_TYPE_W4);
    CHECK(el_type_from_name("w8a8", &t) && t == EL_TYPE_W8);
    CHECK(el_type_from_name("w8a16", &t) && t == EL_TYPE_W8A16);
    CHECK(el_quantize_type_check("w4a8", &readable) == EL_OK && !readable);
    return TEST_PASS;
}

static int test_failures_leave_no_file(void) {
    char out_buf[512];
    const char *out = tmp_path(out_buf, "never.gguf");
    el_quantize_params p = el_quantize_default_params();
    p.type = "q8_k"; /* activations only */
    CHECK(el_quantize("tests/golden/llama_f32_gqa.gguf", out, &p) == EL_ERR_INVALID_ARG);
    CHECK(nothing_written(out));
    p.type = "q4_0";
    CHECK(el_quantize("tests/golden/llama_f32_gqa.logits", out, &p) == EL_ERR_FORMAT);
    CHECK(nothing_written(out));
    CHECK(el_quantize("/nonexistent/in.gguf", out, &p) == EL_ERR_IO);
    CHECK(nothing_written(out));
    char bad_out_buf[512];
    const char *bad_out = tmp_path(bad_out_buf, "no/such/dir/out.gguf");
    CHECK(el_quantize("tests/golden/llama_f32_gqa.gguf", bad_out, &p) == EL_ERR_IO);
    CHECK(strstr(el_last_error(), "no/such/dir") != NULL);
    seen s = {.stop_after = 3};
    p.progress = record;
    p.user = &s;
    CHECK(el_quantize("tests/golden/llama_f32_gqa.gguf", out, &p) == EL_ERR_CANCELLED);
    CHECK(s.n == 3 && strstr(el_last_error(), "cancelled"));
    CHECK(nothing_written(out));
    return TEST_PASS;
}

int main(void) {
    run_test("every_type", test_every_type);
    run_test("q8_0_half_step", test_q8_0_half_step);
    run_test("fallbacks", test_fallbacks);
    run_test("type_names", test_type_names);
    run_test("failures_leave_no_file", test_failures_leave_no_file);
    return tests_exit_code();
}
