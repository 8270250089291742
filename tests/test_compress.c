/* test_compress.c - el_compress end to end on the default model: sorting alone (f32 weights)
 * keeps the model's logits (the original file run by the normal engine is the reference);
 * with GPTQ the weights are in the 4-bit type wherever rows fit its groups (the untied
 * embeddings in q8_0) and the logits stay near the original's; the sliced model at a rate
 * against the full sorted model with the dropped channels zeroed; bad input fails with a message
 * and leaves no file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgelora-tools.h"
#include "formats/gguf.h"
#include "kernels/types.h"
#include "model/model.h"
#include "testutil.h"

static const char *BASE = "models/base.gguf";
/* enough steps of masked fine-tuning to move the model measurably, few enough for ASan */
enum { FINETUNE_STEPS = 30 };
static const char *TEXT = "Once upon a time, the quick brown fox jumped over the lazy dog. "
                          "Der schnelle braune Fuchs springt.";

/* Calibration text: the start of the English corpus (the base's training split). */
static const char *calib_path(void) { return test_data_path("corpus/en.txt"); }

/* The logits of every token of text, [n][n_vocab] malloc'd, with an adapter bound (NULL: none)
 * at a pruning rate (0 for a model that cannot be pruned). */
static float *logits_with(const char *path, const char *adapter, float rate, const char *text,
                          int32_t *n_out, int32_t *n_vocab) {
    el_model *m;
    el_model_params mp = el_model_default_params();
    if (el_model_load(path, &mp, &m)) return NULL;
    el_model_info info;
    el_model_get_info(m, &info);
    int32_t tok[256];
    size_t n = 0;
    el_tokenize(m, text, strlen(text), true, false, tok, 256, &n);
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 256;
    cp.kv_type = EL_KV_F32;
    el_context *ctx = NULL;
    el_adapter *ad = NULL;
    float *out = NULL;
    if (el_context_create(m, &cp, &ctx) == EL_OK && (rate == 0 || el_context_set_prune(ctx, rate) == EL_OK) &&
        (!adapter || (el_adapter_load(m, adapter, &ad) == EL_OK &&
                      el_context_bind(ctx, 0, &(el_binding){ad, 1.0f}, 1) == EL_OK))) {
        int32_t pos[256], seq[256] = {0};
        int8_t want[256];
        for (size_t i = 0; i < n; i++) pos[i] = (int32_t)i, want[i] = 1;
        el_batch b = {
            .n_rows = (int32_t)n, .token = tok, .pos = pos, .seq_id = seq, .logits = want};
        if (el_decode(ctx, &b) == EL_OK && (out = malloc(sizeof(float) * n * info.n_vocab)))
            for (size_t i = 0; i < n; i++)
                memcpy(out + i * info.n_vocab, el_get_logits(ctx, (int32_t)i),
                       sizeof(float) * info.n_vocab);
    }
    el_context_free(ctx);
    el_adapter_free(ad);
    *n_out = (int32_t)n;
    *n_vocab = info.n_vocab;
    el_model_free(m);
    return out;
}

static float *logits_of(const char *path, int32_t *n_out, int32_t *n_vocab) {
    return logits_with(path, NULL, 0, TEXT, n_out, n_vocab);
}

static el_compress_params quick(void) {
    el_compress_params p = el_compress_default_params();
    p.calib_path = calib_path();
    p.calib_tokens = 1024;
    p.n_threads = 2;
    /* Q/K in order: the sorted files then run exactly in the normal engine, the reference
     * here (Q/K sorting is checked by test_sort, and through the run time by test_uniql) */
    p.sort_qk = false;
    return p;
}

static int test_compress_sorted_keeps_logits(void) {
    if (!calib_path()) return test_skip("the corpus is absent");
    char out[512], layout[512];
    snprintf(out, sizeof out, "%s/sorted.gguf", test_tmp_dir());
    snprintf(layout, sizeof layout, "%s/sorted.uniql.gguf", test_tmp_dir());
    el_compress_params p = quick();
    p.type = "f32";
    p.sorted_path = out;
    CHECK(el_compress(BASE, layout, &p) == EL_OK);
    int32_t n0, n1, v0, v1;
    float *a = logits_of(BASE, &n0, &v0), *b = logits_of(out, &n1, &v1);
    CHECK(a && b && n0 == n1 && v0 == v1 && n0 > 10);
    double err = test_max_rel_err(b, a, (size_t)n0 * v0);
    test_note("sorted model: max relative logit difference %.3g over %d tokens", err, n0);
    CHECK(err < 1e-4);
    /* the weights did move: the sorted file is not the original's bytes */
    gguf_file *g0, *g1;
    CHECK(gguf_open(BASE, &g0) == EL_OK && gguf_open(out, &g1) == EL_OK);
    const gguf_tensor *d0 = gguf_find_tensor(g0, "blk.0.ffn_gate.weight");
    const gguf_tensor *d1 = gguf_find_tensor(g1, "blk.0.ffn_gate.weight");
    CHECK(d0 && d1 && d1->type == 0);
    const uint16_t *h0 = d0->data;
    const float *f1 = d1->data;
    int same = 0;
    for (int i = 0; i < 256; i++) same += fabsf(f1[i] - el_fp16_to_fp32(h0[i])) < 1e-6f;
    CHECK(same < 256);
    gguf_close(g0);
    gguf_close(g1);
    free(a);
    free(b);
    return TEST_PASS;
}

static int test_compress_gptq_types(void) {
    if (!calib_path()) return test_skip("the corpus is absent");
    char out[512], layout[512];
    snprintf(out, sizeof out, "%s/q4.gguf", test_tmp_dir());
    snprintf(layout, sizeof layout, "%s/q4.uniql.gguf", test_tmp_dir());
    el_compress_params p = quick();
    p.sorted_path = out;
    CHECK(el_compress(BASE, layout, &p) == EL_OK);
    gguf_file *g;
    CHECK(gguf_open(out, &g) == EL_OK);
    /* rows of 256 fit q4_0's groups of 32; down's rows of 688 do not and stay f16 */
    const char *q4[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up"};
    for (int il = 0; il < 6; il++) {
        char name[64];
        for (int i = 0; i < 6; i++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", il, q4[i]);
            const gguf_tensor *t = gguf_find_tensor(g, name);
            CHECK(t && t->type == EL_TYPE_Q4_0);
        }
        snprintf(name, sizeof name, "blk.%d.ffn_down.weight", il);
        CHECK(gguf_find_tensor(g, name)->type == EL_TYPE_F16);
    }
    /* the head by GPTQ too; the untied embeddings, a lookup without a Hessian, in q8_0 */
    CHECK(gguf_find_tensor(g, "output.weight")->type == EL_TYPE_Q4_0);
    CHECK(gguf_find_tensor(g, "token_embd.weight")->type == EL_TYPE_Q8_0);
    gguf_close(g);
    int32_t n0, n1, v0, v1;
    float *a = logits_of(BASE, &n0, &v0), *b = logits_of(out, &n1, &v1);
    CHECK(a && b && n0 == n1);
    double err = test_max_rel_err(b, a, (size_t)n0 * v0);
    test_note("4-bit model: max relative logit difference %.3g", err);
    /* 4-bit weights move the logits by some percent; a wrong layout or order by far more */
    CHECK(err < 0.15);
    free(a);
    free(b);

    /* --head-type q8_0: the head rounded to nearest in q8_0, byte for byte the q8_0 quantizer's
     * rows of the original head (the head's inputs are the residual, which sorting leaves), in
     * the sorted model and in the layout; the other weights as before */
    p.head_type = "q8_0";
    CHECK(el_compress(BASE, layout, &p) == EL_OK);
    el_model *m;
    CHECK(el_model_load(BASE, NULL, &m) == EL_OK);
    int64_t rows = m->output.n_out, cols = m->output.n_in;
    float *w = malloc((size_t)(rows * cols) * sizeof *w);
    size_t nb = el_row_size(EL_TYPE_Q8_0, cols) * (size_t)rows;
    char *want = malloc(nb);
    CHECK(w && want);
    el_weight_floats(&m->output, w);
    el_type_weight_quantizer(el_type_kernels_get(EL_TYPE_Q8_0))(w, want, rows * cols);
    el_model_free(m);
    const char *files[2] = {out, layout};
    for (int i = 0; i < 2; i++) {
        CHECK(gguf_open(files[i], &g) == EL_OK);
        const gguf_tensor *h = gguf_find_tensor(g, "output.weight");
        CHECK(h && h->type == EL_TYPE_Q8_0 && h->nbytes == nb && !memcmp(h->data, want, nb));
        CHECK(gguf_find_tensor(g, i ? "blk.0.attn_q.piece.0" : "blk.0.attn_q.weight")->type ==
              EL_TYPE_Q4_0);
        gguf_close(g);
    }
    free(w);
    free(want);
    return TEST_PASS;
}

/* The compressed file holds the plan of the rule in docs/uniql.md, computed here for the
 * default model in q4_0: down in f16 (grain 1), O in q4_0 (V/O dims in fours: 4 * 8 heads is
 * a block), Q/K unsorted (whole); a rate r takes r * 2832 of every 2832 elements per input
 * from MLP (3 * 688) and V/O (12 * 32): f = r * 2832 / 2448. */
static int test_compress_plan_in_file(void) {
    if (!calib_path()) return test_skip("the corpus is absent");
    char layout[512];
    snprintf(layout, sizeof layout, "%s/q4.uniql.gguf", test_tmp_dir());
    if (access(layout, F_OK) != 0) return test_skip("compress_gptq_types did not write it");
    gguf_file *g;
    CHECK(gguf_open(layout, &g) == EL_OK);
    const gguf_kv *rates = gguf_find(g, "uniql.rates"), *ff = gguf_find(g, "uniql.ff_kept");
    const gguf_kv *qk = gguf_find(g, "uniql.qk_kept"), *vo = gguf_find(g, "uniql.vo_kept");
    CHECK(rates && ff && qk && vo && rates->arr_n == 8 && ff->arr_n == 8 * 6);
    for (int r = 0; r < 8; r++) {
        float rate;
        memcpy(&rate, rates->arr_data + 4 * r, 4);
        CHECK(fabsf(rate - 0.05f * r) < 1e-6f);
        double f = rate * 2832.0 / 2448.0;
        int32_t want_ff = 688 - (int32_t)floor(f * 688 + 0.5);
        int32_t want_vo = 32 - (int32_t)floor(f * 32 / 4 + 0.5) * 4;
        for (int il = 0; il < 6; il++) {
            int32_t a, b, c;
            memcpy(&a, ff->arr_data + 4 * (r * 6 + il), 4);
            memcpy(&b, qk->arr_data + 4 * (r * 6 + il), 4);
            memcpy(&c, vo->arr_data + 4 * (r * 6 + il), 4);
            if (a != want_ff || b != 32 || c != want_vo) {
                test_note("rate %g layer %d: kept %d %d %d, expected %d 32 %d", rate, il, a, b, c,
                          want_ff, want_vo);
                return TEST_FAIL;
            }
        }
    }
    gguf_close(g);
    return TEST_PASS;
}

static int expect_failure(const char *in, const el_compress_params *p, el_status want,
                          const char *message) {
    char out[512];
    snprintf(out, sizeof out, "%s/bad.gguf", test_tmp_dir());
    el_status st = el_compress(in, out, p);
    if (st != want || !strstr(el_last_error(), message)) {
        test_note("status %d, message '%s', wanted '%s'", st, el_last_error(), message);
        return TEST_FAIL;
    }
    CHECK(access(out, F_OK) != 0);
    return TEST_PASS;
}

static int test_compress_bad_input(void) {
    if (!calib_path()) return test_skip("the corpus is absent");
    el_compress_params p = quick();
    const float descending[] = {0, 0.3f, 0.2f}, no_zero[] = {0.1f, 0.2f}, too_far[] = {0, 0.95f};
    p.rates = descending;
    p.n_rates = 3;
    CHECK(expect_failure(BASE, &p, EL_ERR_INVALID_ARG, "rates must ascend") == TEST_PASS);
    p.rates = no_zero;
    p.n_rates = 2;
    CHECK(expect_failure(BASE, &p, EL_ERR_INVALID_ARG, "first rate must be 0") == TEST_PASS);
    p.rates = too_far;
    CHECK(expect_failure(BASE, &p, EL_ERR_INVALID_ARG, "is not below 0.9") == TEST_PASS);
    p = quick();
    p.head_type = "q6_k";
    CHECK(expect_failure(BASE, &p, EL_ERR_INVALID_ARG, "head type 'q6_k'") == TEST_PASS);
    p.type = "f16", p.head_type = "q8_0";
    CHECK(expect_failure(BASE, &p, EL_ERR_INVALID_ARG, "not quantized") == TEST_PASS);
    p = quick();
    p.type = "q8_0";
    CHECK(expect_failure(BASE, &p, EL_ERR_INVALID_ARG, "not a 4-bit type") == TEST_PASS);
    p.type = "q4_0";
    p.group = 128;
    CHECK(expect_failure(BASE, &p, EL_ERR_INVALID_ARG, "does not fit type q4_0") == TEST_PASS);
    p = quick();
    char short_text[512];
    snprintf(short_text, sizeof short_text, "%s/short.txt", test_tmp_dir());
    FILE *f = fopen(short_text, "w");
    CHECK(f);
    fputs("A few words of text.\n", f);
    fclose(f);
    p.calib_path = short_text;
    CHECK(expect_failure(BASE, &p, EL_ERR_INVALID_ARG, "calibration text too short") == TEST_PASS);
    p = quick();
    char layout[512];
    snprintf(layout, sizeof layout, "%s/q4.uniql.gguf", test_tmp_dir());
    if (access(layout, F_OK) == 0)
        CHECK(expect_failure(layout, &p, EL_ERR_INVALID_ARG, "already compressed") == TEST_PASS);
    CHECK(expect_failure("tests/golden/llama_f32_gqa.logits", &p, EL_ERR_FORMAT,
                         "tests/golden/llama_f32_gqa.logits") == TEST_PASS);
    /* fine-tuning's text and settings are checked before the calibration */
    p = quick();
    p.finetune_steps = 10;
    p.finetune_path = "no/such/finetune.txt";
    CHECK(expect_failure(BASE, &p, EL_ERR_IO, "no/such/finetune.txt") == TEST_PASS);
    p.finetune_path = NULL;
    p.finetune_lr = 0;
    CHECK(expect_failure(BASE, &p, EL_ERR_INVALID_ARG, "learning rate") == TEST_PASS);
    return TEST_PASS;
}

/* The sorted f32 model with the channels a rate drops zeroed in place (gate rows beyond ff, V
 * rows beyond vo in each head): the same function as the sliced model, built another way. */
static el_status write_masked(const char *src, int64_t ff, int64_t vo, const char *dst) {
    gguf_file *g;
    el_status st = gguf_open(src, &g);
    if (st) return st;
    gguf_writer *w = gguf_writer_create();
    gguf_writer_copy_kv(w, g);
    float **copies = calloc(g->n_tensors, sizeof *copies);
    for (uint64_t t = 0; st == EL_OK && t < g->n_tensors; t++) {
        const gguf_tensor *gt = &g->tensors[t];
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)gt->name.len, gt->name.ptr);
        const void *data = gt->data;
        bool gate = strstr(name, "ffn_gate.weight") != NULL,
             v = strstr(name, "attn_v.weight") != NULL;
        if (gate || v) {
            copies[t] = malloc(gt->nbytes);
            memcpy(copies[t], gt->data, gt->nbytes);
            int64_t cols = gt->ne[0], rows = gt->ne[1];
            for (int64_t r = 0; r < rows; r++)
                if (gate ? r >= ff : r % 32 >= vo)
                    memset(copies[t] + r * cols, 0, sizeof(float) * cols);
            data = copies[t];
        }
        st = gguf_writer_add_tensor(w, name, gt->type, gt->n_dims, gt->ne, data, gt->nbytes);
    }
    if (st == EL_OK) st = gguf_writer_write(w, dst);
    gguf_writer_free(w);
    for (uint64_t t = 0; t < g->n_tensors; t++) free(copies[t]);
    free(copies);
    gguf_close(g);
    return st;
}

static int test_compress_slice_equals_masked(void) {
    if (!calib_path()) return test_skip("the corpus is absent");
    char sorted[512], cut[512], masked[512];
    snprintf(sorted, sizeof sorted, "%s/sorted.gguf", test_tmp_dir());
    snprintf(cut, sizeof cut, "%s/cut.gguf", test_tmp_dir());
    snprintf(masked, sizeof masked, "%s/masked.gguf", test_tmp_dir());
    if (access(sorted, F_OK) != 0) {
        el_compress_params p = quick();
        p.type = "f32";
        p.sorted_path = sorted;
        CHECK(el_compress(BASE, cut, &p) == EL_OK);
    }
    CHECK(el_compress_slice(sorted, 0.25f, cut) == EL_OK);
    el_model *m;
    el_model_params mp = el_model_default_params();
    CHECK(el_model_load(cut, &mp, &m) == EL_OK);
    el_model_info info;
    el_model_get_info(m, &info);
    el_model_free(m);
    /* f32 has grains of 1; Q/K (unsorted) are not pruned, so the 25% of the block's
     * 3*688 + 12*32 + 12*32 = 2832 elements per input come from MLP and V/O's 2448:
     * f = 0.25 * 2832 / 2448 = 0.2892, 688 - round(198.98) = 489, 32 - round(9.26) = 23 */
    CHECK(info.n_ff == 489);
    CHECK(write_masked(sorted, 489, 23, masked) == EL_OK);
    int32_t n0, n1, v0, v1;
    float *a = logits_of(masked, &n0, &v0), *b = logits_of(cut, &n1, &v1);
    CHECK(a && b && n0 == n1 && v0 == v1);
    double err = test_max_rel_err(b, a, (size_t)n0 * v0);
    test_note("sliced against masked at 25%%: max relative logit difference %.3g", err);
    CHECK(err < 1e-4);
    free(a);
    free(b);
    return TEST_PASS;
}

/* Lines [from, to) of the English corpus: into a file of the test folder (path set) or, up to
 * cap bytes, into buf. */
static bool corpus_lines(int from, int to, const char *path, char *buf, size_t cap) {
    FILE *in = fopen(calib_path(), "r"), *out = path ? fopen(path, "w") : NULL;
    char line[16384];
    size_t len = 0;
    if (buf) buf[0] = 0;
    for (int i = 0; in && i < to && fgets(line, sizeof line, in); i++) {
        if (i < from) continue;
        if (out) fputs(line, out);
        size_t n = strlen(line);
        if (buf && len + n < cap) memcpy(buf + len, line, n + 1), len += n;
    }
    bool ok = in && (!path || out);
    if (in) fclose(in);
    if (out) ok = fclose(out) == 0 && ok;
    return ok;
}

/* The mean over rows of KL(softmax(p) || softmax(q)), in double. */
static double mean_kl(const float *p, const float *q, int32_t n, int32_t v) {
    double sum = 0;
    for (int32_t i = 0; i < n; i++) {
        const float *a = p + (size_t)i * v, *b = q + (size_t)i * v;
        double ma = a[0], mb = b[0], za = 0, zb = 0, kl = 0;
        for (int32_t k = 1; k < v; k++) ma = fmax(ma, a[k]), mb = fmax(mb, b[k]);
        for (int32_t k = 0; k < v; k++) za += exp(a[k] - ma), zb += exp(b[k] - mb);
        for (int32_t k = 0; k < v; k++) {
            double la = a[k] - ma - log(za), lb = b[k] - mb - log(zb);
            kl += exp(la) * (la - lb);
        }
        sum += kl;
    }
    return sum / n;
}

/* Masked LoRA fine-tuning: the merged model equals the untuned sorted model with the adapter
 * the run kept bound at run time (the engine's adapter path, checked against llama.cpp's, is
 * the reference for the merge), and at a high rate the tuned model is closer to the original
 * than the untuned one on text neither saw. */
static int test_compress_finetune(void) {
    if (!calib_path()) return test_skip("the corpus is absent");
    char sorted0[512], layout0[512], sorted1[512], layout1[512], adapter[512], text[512],
        plot[512];
    snprintf(sorted0, sizeof sorted0, "%s/sorted.gguf", test_tmp_dir());
    snprintf(layout0, sizeof layout0, "%s/sorted.uniql.gguf", test_tmp_dir());
    snprintf(sorted1, sizeof sorted1, "%s/tuned.gguf", test_tmp_dir());
    snprintf(layout1, sizeof layout1, "%s/tuned.uniql.gguf", test_tmp_dir());
    snprintf(adapter, sizeof adapter, "%s/tuned.lora.gguf", test_tmp_dir());
    snprintf(text, sizeof text, "%s/finetune.txt", test_tmp_dir());
    snprintf(plot, sizeof plot, "%s/finetune.svg", test_tmp_dir());
    el_compress_params p = quick();
    p.type = "f32";
    if (access(sorted0, F_OK) != 0 || access(layout0, F_OK) != 0) {
        p.sorted_path = sorted0;
        CHECK(el_compress(BASE, layout0, &p) == EL_OK);
    }
    CHECK(corpus_lines(0, 400, text, NULL, 0));
    p.sorted_path = sorted1;
    p.finetune_steps = FINETUNE_STEPS;
    p.finetune_path = text;
    p.finetune_batch = 4;
    p.finetune_ctx = 64;
    p.finetune_lr = 3e-3f;
    p.finetune_adapter_path = adapter;
    p.finetune_plot = plot;
    CHECK(el_compress(BASE, layout1, &p) == EL_OK);
    CHECK(access(plot, F_OK) == 0);

    int32_t n0, n1, n2, v0, v1, v2;
    float *merged = logits_with(sorted1, NULL, 0, TEXT, &n0, &v0);
    float *bound = logits_with(sorted0, adapter, 0, TEXT, &n1, &v1);
    float *plain = logits_with(sorted0, NULL, 0, TEXT, &n2, &v2);
    CHECK(merged && bound && plain && n0 == n1 && n0 == n2 && v0 == v1 && v0 == v2);
    double err = test_max_rel_err(merged, bound, (size_t)n0 * v0);
    double moved = test_max_rel_err(merged, plain, (size_t)n0 * v0);
    test_note("merged against the adapter bound at run time: %.3g (against no adapter: %.3g)",
              err, moved);
    CHECK(err < 1e-4);
    CHECK(moved > 1e-2);
    free(merged);
    free(bound);
    free(plain);

    /* held out: paragraphs far past the fine-tuning and calibration text */
    char held[1200];
    CHECK(corpus_lines(9000, 9004, NULL, held, sizeof held));
    float *orig = logits_with(BASE, NULL, 0, held, &n0, &v0);
    float *untuned = logits_with(layout0, NULL, 0.35f, held, &n1, &v1);
    float *tuned = logits_with(layout1, NULL, 0.35f, held, &n2, &v2);
    CHECK(orig && untuned && tuned && n0 == n1 && n0 == n2 && n0 > 100);
    double kl0 = mean_kl(orig, untuned, n0, v0), kl1 = mean_kl(orig, tuned, n0, v0);
    test_note("KL(original || rate 0.35) over %d held-out tokens: %.4f untuned, %.4f tuned", n0,
              kl0, kl1);
    CHECK(kl1 < 0.9 * kl0);
    free(orig);
    free(untuned);
    free(tuned);
    return TEST_PASS;
}

/* compress --lora: an adapter of the original model, re-expressed for the sorted one (Q/K pairs
 * sorted too, so the layout's RoPE index runs), computes on the compressed model at rate 0
 * what the original adapter computes on the original model in the engine; the loader refuses
 * the original adapter on the compressed model and the re-expressed one on the original. */
static int test_compress_lora_reexpressed(void) {
    if (!calib_path()) return test_skip("the corpus is absent");
    const char *adapter = "models/translate-de.gguf";
    char layout[512], dir[512], moved[600];
    snprintf(layout, sizeof layout, "%s/qk.uniql.gguf", test_tmp_dir());
    snprintf(dir, sizeof dir, "%s/sorted-adapters", test_tmp_dir());
    snprintf(moved, sizeof moved, "%s/translate-de.gguf", dir);
    el_compress_params p = quick();
    p.type = "f32";
    p.sort_qk = true;
    p.lora_paths = &adapter;
    p.n_loras = 1;
    p.lora_out_dir = dir;
    CHECK(el_compress(BASE, layout, &p) == EL_OK);
    int32_t n0, n1, n2, v0, v1, v2;
    float *want = logits_with(BASE, adapter, 0, TEXT, &n0, &v0);
    float *got = logits_with(layout, moved, 0, TEXT, &n1, &v1);
    float *bare = logits_with(BASE, NULL, 0, TEXT, &n2, &v2);
    CHECK(want && got && bare && n0 == n1 && n0 == n2 && v0 == v1 && v0 == v2);
    double err = test_max_rel_err(got, want, (size_t)n0 * v0);
    double effect = test_max_rel_err(bare, want, (size_t)n0 * v0);
    test_note("re-expressed adapter on the compressed model against the adapter on the "
              "original: %.3g (the adapter's own effect: %.3g)", err, effect);
    CHECK(err < 1e-4);
    CHECK(effect > 1e-2);
    free(want);
    free(got);
    free(bare);

    el_model *m;
    el_adapter *ad = NULL;
    el_model_params mp = el_model_default_params();
    CHECK(el_model_load(layout, &mp, &m) == EL_OK);
    CHECK(el_adapter_load(m, adapter, &ad) == EL_ERR_MISMATCH && !ad);
    CHECK(strstr(el_last_error(), "before UniQL compression") && strstr(el_last_error(), "--lora"));
    el_model_free(m);
    CHECK(el_model_load(BASE, &mp, &m) == EL_OK);
    CHECK(el_adapter_load(m, moved, &ad) == EL_ERR_MISMATCH && !ad);
    CHECK(strstr(el_last_error(), "re-expressed for a UniQL compressed model"));
    el_model_free(m);

    /* bad input: no folder, and a folder that would overwrite the adapter itself */
    p.lora_out_dir = NULL;
    CHECK(expect_failure(BASE, &p, EL_ERR_INVALID_ARG, "--lora-out") == TEST_PASS);
    p.lora_out_dir = "models";
    CHECK(expect_failure(BASE, &p, EL_ERR_INVALID_ARG, "replace the adapter itself") ==
          TEST_PASS);
    return TEST_PASS;
}

int main(void) {
    run_test("compress_sorted_keeps_logits", test_compress_sorted_keeps_logits);
    run_test("compress_gptq_types", test_compress_gptq_types);
    run_test("compress_plan_in_file", test_compress_plan_in_file);
    run_test("compress_slice_equals_masked", test_compress_slice_equals_masked);
    run_test("compress_finetune", test_compress_finetune);
    run_test("compress_lora_reexpressed", test_compress_lora_reexpressed);
    run_test("compress_bad_input", test_compress_bad_input);
    return tests_exit_code();
}
