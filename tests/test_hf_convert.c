/* test_hf_convert.c - Hugging Face folders to GGUF (el_convert_hf).
 *
 *  - logits: the tiny folders of tests/golden/hf (llama with llama3 rope scaling and GQA, qwen2
 *    with biases and tied embeddings, mistral with linear rope scaling, qwen3 with per-head Q/K
 *    norms and its own head_dim, phi3 with fused projections, partial rotary dims and longrope
 *    scaling), converted to f32, give
 *    the logits make_hf_golden.py computed in float64 with Hugging Face's conventions (1e-4:
 *    float32 against float64). This checks names, the Q/K permutation, rope settings and biases.
 *    Converted to q8_0 they stay within 5e-2 (the activations' 8-bit rounding alone moves them).
 *  - sharding: the llama folder re-split into 2 shards + model.safetensors.index.json.
 *  - alignment: folders whose tensor data sits at odd addresses convert the same.
 *  - tokenizers: tokenizer.json files built here from llama.cpp's gpt-2 and llama-spm vocab GGUFs
 *    (vocab + merges, as Hugging Face writes them) tokenize llama.cpp's test vectors exactly.
 *  - bad folders: no config, a missing tensor, a wrong shape, an unsupported dtype, an unknown
 *    pre-tokenizer regex: clear errors, and no output (nor temporary) file left.
 *  - vocab_size against the tokenizer (gemma3_vocab_size): padded with unused tokens when it has
 *    more rows, added tokens past it left out with a warning, a BPE piece past it refused.
 *  - rope_parameters (transformers v5's config layout, written here from each v4 config): the
 *    same GGUF byte for byte, alone or beside the v4 keys; the two disagreeing is refused. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "edgelora.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "kernels/types.h"
#include "testutil.h"

#define GOLDEN_DIR "tests/golden/hf"

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

static int copy_file(const char *from, const char *to) {
    char *s = test_read_file(from, &(size_t){0});
    int ok = s && write_text(to, s);
    free(s);
    return ok;
}

static const char *tmp_path(const char *name) {
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", test_tmp_dir(), name);
    return buf[k];
}

/* true if a file whose name starts with prefix is in dir (an output or a temporary). */
static int any_file_like(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    int found = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        found |= strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d) closedir(d);
    return found;
}

/* ---------------------------------------------------------------- logits */

typedef struct expected {
    int32_t n, n_vocab;
    int32_t tokens[16], pos[16];
    float *logits;
} expected;

static int read_expected(const char *path, expected *e) {
    memset(e, 0, sizeof *e);
    char *s = test_read_file(path, &(size_t){0});
    if (!s) return 0;
    char *p = strstr(s, "\ntokens ");
    char *q = strstr(s, "\npositions ");
    int ok = p && q;
    for (p = p ? p + 8 : p; ok && *p != '\n' && e->n < 16; e->n++)
        e->tokens[e->n] = (int32_t)strtol(p, &p, 10);
    q = q ? q + 11 : q;
    for (int i = 0; ok && i < e->n; i++) e->pos[i] = (int32_t)strtol(q, &q, 10);
    char *rows = ok ? strchr(q, '\n') + 1 : NULL;
    /* count the values of the first row */
    for (char *r = rows, *end; ok && *r && *r != '\n'; r = end) {
        strtod(r, &end);
        ok = end != r;
        e->n_vocab++;
    }
    e->logits = ok ? malloc((size_t)e->n * e->n_vocab * sizeof *e->logits) : NULL;
    ok = ok && e->logits;
    for (int64_t i = 0; ok && i < (int64_t)e->n * e->n_vocab; i++) {
        char *end;
        e->logits[i] = (float)strtod(rows, &end);
        ok = end != rows;
        rows = end;
    }
    free(s);
    return ok;
}

/* The model's logits for e's tokens and positions against e's (max rel err <= tol). */
static int check_logits(const char *gguf, const expected *e, double tol) {
    el_model *m = NULL;
    el_context *ctx = NULL;
    el_model_params mp = el_model_default_params();
    if (el_model_load(gguf, &mp, &m) != EL_OK) {
        test_note("%s", el_last_error());
        return TEST_FAIL;
    }
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 1;
    cp.kv_type = EL_KV_F32; /* the float reference keeps K and V in float */
    CHECK(el_context_create(m, &cp, &ctx) == EL_OK);
    int32_t seq[16] = {0};
    int8_t want[16];
    memset(want, 1, sizeof want);
    el_batch b = {.n_rows = e->n, .token = e->tokens, .pos = e->pos, .seq_id = seq,
                  .logits = want};
    CHECK(el_decode(ctx, &b) == EL_OK);
    int rc = TEST_PASS;
    for (int i = 0; i < e->n && rc == TEST_PASS; i++) {
        const float *got = el_get_logits(ctx, i);
        double err = test_max_rel_err(got, e->logits + (size_t)i * e->n_vocab, (size_t)e->n_vocab);
        if (!(err <= tol)) {
            test_note("%s: row %d (pos %d): max rel err %.3g > %.3g", gguf, i, e->pos[i], err, tol);
            rc = TEST_FAIL;
        }
    }
    el_context_free(ctx);
    el_model_free(m);
    return rc;
}

static int check_folder(const char *name, const char *type, double tol) {
    char dir[256], path[320];
    snprintf(dir, sizeof dir, GOLDEN_DIR "/%s", name);
    snprintf(path, sizeof path, "%s/expected_logits.txt", dir);
    expected e;
    CHECK(read_expected(path, &e));
    const char *out = tmp_path("model.gguf");
    int rc = TEST_PASS;
    if (el_convert_hf(dir, out, type, NULL, NULL) != EL_OK) {
        test_note("%s", el_last_error());
        rc = TEST_FAIL;
    }
    if (rc == TEST_PASS) rc = check_logits(out, &e, tol);
    free(e.logits);
    remove(out);
    return rc;
}

static int test_llama_f32(void) { return check_folder("llama", "f32", 1e-4); }
static int test_qwen2_f32(void) { return check_folder("qwen2", "f32", 1e-4); }
static int test_mistral_f32(void) { return check_folder("mistral", "f32", 1e-4); }
static int test_llama_q8_0(void) { return check_folder("llama", "q8_0", 5e-2); }
static int test_qwen2_f16(void) { return check_folder("qwen2", "f16", 1e-4); }
/* edgelora's types, within q8_0's bound (w8: int8 per channel; w8a16 also 16-bit activations) */
static int test_llama_w8(void) { return check_folder("llama", "w8", 5e-2); }
static int test_qwen2_w8a16(void) { return check_folder("qwen2", "w8a16", 5e-2); }
/* Gemma 3 against modeling_gemma3.py's arithmetic: (1 + w) norms, sliding-window layers over a
 * prompt three times their window, tied embeddings; bf16 weights are exact in f32 */
static int test_gemma3_f32(void) { return check_folder("gemma3", "f32", 1e-4); }
static int test_gemma3_q8_0(void) { return check_folder("gemma3", "q8_0", 5e-2); }

/* gemma3's keys as llama.cpp's converter writes them; its norms hold 1 + Hugging Face's w. */
static int test_gemma3_metadata(void) {
    const char *out = tmp_path("gemma3.gguf");
    CHECK(el_convert_hf(GOLDEN_DIR "/gemma3", out, "f16", NULL, NULL) == EL_OK);
    gguf_file *f;
    CHECK(gguf_open(out, &f) == EL_OK);
    gguf_str s;
    uint32_t u;
    float x;
    bool b;
    int rc = TEST_PASS;
    if (gguf_get_str(f, "general.architecture", &s) || !gguf_str_eq(s, "gemma3") ||
        gguf_get_u32(f, "gemma3.attention.sliding_window", &u) || u != 4 ||
        gguf_find(f, "gemma3.attention.sliding_window_pattern") || /* 6: llama.cpp's default */
        gguf_get_f32(f, "gemma3.rope.freq_base", &x) || x != 1000000.0f ||
        gguf_get_f32(f, "gemma3.rope.freq_base_swa", &x) || x != 10000.0f ||
        gguf_get_str(f, "gemma3.rope.scaling.type", &s) || !gguf_str_eq(s, "linear") ||
        gguf_get_u32(f, "gemma3.attention.key_length", &u) || u != 32 ||
        gguf_find(f, "gemma3.final_logit_softcapping") ||
        gguf_get_str(f, "tokenizer.ggml.model", &s) || !gguf_str_eq(s, "llama") ||
        gguf_get_bool(f, "tokenizer.ggml.add_space_prefix", &b) || b ||
        gguf_get_u32(f, "tokenizer.ggml.bos_token_id", &u) || u != 2 ||
        gguf_find_tensor(f, "output.weight"))
        rc = TEST_FAIL;
    el_st_file *st;
    CHECK(el_st_open(GOLDEN_DIR "/gemma3/model.safetensors", &st) == EL_OK);
    static const char *const pairs[][2] = {
        {"blk.3.attn_k_norm.weight", "model.layers.3.self_attn.k_norm.weight"},
        {"blk.5.post_ffw_norm.weight", "model.layers.5.post_feedforward_layernorm.weight"},
        {"blk.0.ffn_norm.weight", "model.layers.0.pre_feedforward_layernorm.weight"},
        {"output_norm.weight", "model.norm.weight"}};
    for (size_t i = 0; i < 4 && rc == TEST_PASS; i++) {
        const gguf_tensor *t = gguf_find_tensor(f, pairs[i][0]);
        const el_st_tensor *h = NULL;
        for (size_t k = 0; k < st->n_tensors; k++)
            if (!strcmp(st->tensors[k].name, pairs[i][1])) h = &st->tensors[k];
        if (!t || !h || t->type != 0 || h->dtype != EL_ST_BF16 || t->ne[0] != h->shape[0]) {
            rc = TEST_FAIL;
            break;
        }
        for (int64_t k = 0; k < t->ne[0] && rc == TEST_PASS; k++) {
            uint16_t bits;
            memcpy(&bits, (const uint8_t *)h->data + 2 * k, 2);
            float want = 1.0f + el_bf16_to_fp32(bits), got = ((const float *)t->data)[k];
            if (got != want) {
                test_note("%s[%lld] = %g, expected 1 + %g", pairs[i][0], (long long)k, got,
                          el_bf16_to_fp32(bits));
                rc = TEST_FAIL;
            }
        }
    }
    el_st_close(st);
    gguf_close(f);
    remove(out);
    return rc;
}

static int test_qwen3_f32(void) { return check_folder("qwen3", "f32", 1e-4); }
static int test_qwen3_f16(void) { return check_folder("qwen3", "f16", 1e-3); }
static int test_phi3_f32(void) { return check_folder("phi3", "f32", 1e-4); }
static int test_phi3_f16(void) { return check_folder("phi3", "f16", 1e-3); }

/* What llama.cpp reads: the keys and names its converter writes. */
static int test_llama_metadata(void) {
    const char *out = tmp_path("meta.gguf");
    CHECK(el_convert_hf(GOLDEN_DIR "/llama", out, "q8_0", NULL, NULL) == EL_OK);
    gguf_file *f;
    CHECK(gguf_open(out, &f) == EL_OK);
    gguf_str s;
    uint32_t u;
    float x;
    bool b;
    int rc = TEST_PASS;
    if (gguf_get_str(f, "general.architecture", &s) || !gguf_str_eq(s, "llama") ||
        gguf_get_u32(f, "llama.block_count", &u) || u != 2 ||
        gguf_get_u32(f, "llama.attention.head_count_kv", &u) || u != 2 ||
        gguf_get_u32(f, "llama.rope.dimension_count", &u) || u != 8 ||
        gguf_get_u32(f, "llama.context_length", &u) || u != 4096 ||
        gguf_get_f32(f, "llama.rope.freq_base", &x) || x != 500000.0f ||
        gguf_get_u32(f, "general.file_type", &u) || u != 7 ||
        gguf_get_str(f, "tokenizer.ggml.model", &s) || !gguf_str_eq(s, "gpt2") ||
        gguf_get_str(f, "tokenizer.ggml.pre", &s) || !gguf_str_eq(s, "llama-bpe") ||
        gguf_get_u32(f, "tokenizer.ggml.bos_token_id", &u) || u != 276 ||
        gguf_get_u32(f, "tokenizer.ggml.eos_token_id", &u) || u != 277 ||
        gguf_get_bool(f, "tokenizer.ggml.add_bos_token", &b) || !b ||
        gguf_get_str(f, "tokenizer.chat_template", &s) || !gguf_str_eq(s, "{{ messages }}"))
        rc = TEST_FAIL;
    /* llama3 factors for head_dim 8, theta 5e5, factor 8, low 1, high 16, original 1024, from
     * the formula by hand: wavelengths 6.28 (< 64: 1), 167.4 (between: 1 / ((1 - s) / 8 + s) with
     * s = (1024 / 167.4 - 1) / 15 = 0.3412), 4443 and 1.18e5 (> 1024: 8) */
    const gguf_tensor *t = gguf_find_tensor(f, "rope_freqs.weight");
    const gguf_tensor *q = gguf_find_tensor(f, "blk.1.attn_q.weight");
    const gguf_tensor *n = gguf_find_tensor(f, "blk.0.ffn_norm.weight");
    if (!t || t->type != 0 || t->ne[0] != 4 || !q || q->type != 8 || !n || n->type != 0 ||
        gguf_find_tensor(f, "output.weight") == NULL)
        rc = TEST_FAIL;
    if (rc == TEST_PASS) {
        const float *r = t->data;
        double sm = (1024.0 / (2 * M_PI / pow(500000.0, -2.0 / 8)) - 1) / 15;
        double mid = 1 / ((1 - sm) / 8 + sm);
        if (r[0] != 1.0f || fabs(r[1] - mid) > 1e-5 * mid || r[2] != 8.0f || r[3] != 8.0f) {
            test_note("rope_freqs %g %g %g %g, expected 1 %g 8 8", r[0], r[1], r[2], r[3], mid);
            rc = TEST_FAIL;
        }
    }
    gguf_close(f);
    remove(out);
    return rc;
}

/* ---------------------------------------------------------------- sharded */

static int copy_side_files(const char *from, const char *to) {
    static const char *const names[] = {"config.json", "tokenizer.json", "tokenizer_config.json"};
    for (size_t i = 0; i < 3; i++) {
        char a[512], b[512];
        snprintf(a, sizeof a, "%s/%s", from, names[i]);
        snprintf(b, sizeof b, "%s/%s", to, names[i]);
        if (!copy_file(a, b)) return 0;
    }
    return 1;
}

/* Writes dir/model.safetensors from src's tensors, skipping `drop`, and replacing `reshape`'s
 * shape by its transpose or `retype`'s dtype by I32 of the same size (for bad folders). */
static int rewrite_weights(const char *src, const char *dir, const char *drop, const char *reshape,
                           const char *retype) {
    el_st_file *f;
    if (el_st_open(src, &f) != EL_OK) return 0;
    el_st_writer *w = el_st_writer_create();
    int ok = w != NULL;
    for (size_t i = 0; ok && i < f->n_tensors; i++) {
        const el_st_tensor *t = &f->tensors[i];
        int64_t shape[EL_ST_MAX_DIMS];
        memcpy(shape, t->shape, sizeof shape);
        el_st_dtype dt = t->dtype;
        if (drop && !strcmp(t->name, drop)) continue;
        if (reshape && !strcmp(t->name, reshape)) { /* the transpose: same bytes */
            shape[0] = t->shape[1];
            shape[1] = t->shape[0];
        }
        if (retype && !strcmp(t->name, retype)) dt = EL_ST_I32;
        ok = el_st_writer_add(w, t->name, dt, t->n_dims, shape, t->data, t->nbytes) == EL_OK;
    }
    char out[512];
    snprintf(out, sizeof out, "%s/model.safetensors", dir);
    ok = ok && el_st_writer_write(w, out) == EL_OK;
    el_st_writer_free(w);
    el_st_close(f);
    return ok;
}

static int test_sharded(void) {
    const char *dir = tmp_path("sharded");
    mkdir(dir, 0755);
    CHECK(copy_side_files(GOLDEN_DIR "/llama", dir));
    el_st_file *f;
    CHECK(el_st_open(GOLDEN_DIR "/llama/model.safetensors", &f) == EL_OK);
    el_st_writer *w[2] = {el_st_writer_create(), el_st_writer_create()};
    char index[8192] = "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {";
    for (size_t i = 0; i < f->n_tensors; i++) {
        const el_st_tensor *t = &f->tensors[i];
        int k = strstr(t->name, "layers.1.") || strstr(t->name, "lm_head") ? 1 : 0;
        CHECK(el_st_writer_add(w[k], t->name, t->dtype, t->n_dims, t->shape, t->data,
                               t->nbytes) == EL_OK);
        snprintf(index + strlen(index), sizeof index - strlen(index),
                 "%s\"%s\": \"model-%05d-of-00002.safetensors\"", i ? ", " : "", t->name, k + 1);
    }
    strcat(index, "}}\n");
    for (int k = 0; k < 2; k++) {
        char p[512];
        snprintf(p, sizeof p, "%s/model-%05d-of-00002.safetensors", dir, k + 1);
        CHECK(el_st_writer_write(w[k], p) == EL_OK);
        el_st_writer_free(w[k]);
    }
    el_st_close(f);
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    CHECK(write_text(p, index));
    expected e;
    CHECK(read_expected(GOLDEN_DIR "/llama/expected_logits.txt", &e));
    const char *out = tmp_path("sharded.gguf");
    int rc = el_convert_hf(dir, out, "f32", NULL, NULL) == EL_OK ? TEST_PASS : TEST_FAIL;
    if (rc != TEST_PASS) test_note("%s", el_last_error());
    if (rc == TEST_PASS) rc = check_logits(out, &e, 1e-4);
    free(e.logits);
    return rc;
}

/* A copy of folder `name` whose safetensors header is one byte longer (a trailing space, which
 * JSON allows), so every tensor's data is at an odd address: the converter must not assume
 * alignment. */
static int check_unaligned(const char *name, double tol) {
    char src[256], dir[512], p[600];
    snprintf(src, sizeof src, GOLDEN_DIR "/%s", name);
    snprintf(dir, sizeof dir, "%s/unaligned_%s", test_tmp_dir(), name);
    mkdir(dir, 0755);
    CHECK(copy_side_files(src, dir));
    snprintf(p, sizeof p, "%s/model.safetensors", src);
    size_t size;
    uint8_t *st = (uint8_t *)test_read_file(p, &size);
    CHECK(st && size > 8);
    uint64_t n = 0;
    for (int i = 0; i < 8; i++) n |= (uint64_t)st[i] << (8 * i);
    CHECK(n % 2 == 0 && 8 + n <= size);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    FILE *f = fopen(p, "wb");
    CHECK(f);
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((n + 1) >> (8 * i));
    fwrite(len, 1, 8, f);
    fwrite(st + 8, 1, (size_t)n, f);
    fputc(' ', f);
    fwrite(st + 8 + n, 1, size - 8 - (size_t)n, f);
    CHECK(fclose(f) == 0);
    free(st);
    snprintf(p, sizeof p, "%s/expected_logits.txt", src);
    expected e;
    CHECK(read_expected(p, &e));
    const char *out = tmp_path("unaligned.gguf");
    int rc = el_convert_hf(dir, out, "f32", NULL, NULL) == EL_OK ? TEST_PASS : TEST_FAIL;
    if (rc != TEST_PASS) test_note("%s", el_last_error());
    if (rc == TEST_PASS) rc = check_logits(out, &e, tol);
    free(e.logits);
    return rc;
}

static int test_unaligned_f32(void) { return check_unaligned("llama", 1e-4); }
static int test_unaligned_f16(void) { return check_unaligned("mistral", 1e-4); }

/* ---------------------------------------------------------------- bad folders */

/* Converting dir fails with an error message containing `what`, and leaves no output. */
static int expect_failure(const char *dir, const char *what) {
    const char *out = tmp_path("bad.gguf");
    el_status st = el_convert_hf(dir, out, "f16", NULL, NULL);
    if (st == EL_OK || !strstr(el_last_error(), what)) {
        test_note("%s: status %s, message \"%s\", expected one with \"%s\"", dir,
                  el_status_name(st), el_last_error(), what);
        return TEST_FAIL;
    }
    CHECK(!any_file_like(test_tmp_dir(), "bad.gguf"));
    return TEST_PASS;
}

static int make_bad(const char *name, const char *drop, const char *reshape, const char *retype) {
    const char *dir = tmp_path(name);
    mkdir(dir, 0755);
    return copy_side_files(GOLDEN_DIR "/llama", dir) &&
           rewrite_weights(GOLDEN_DIR "/llama/model.safetensors", dir, drop, reshape, retype);
}

/* Empties the JSON object that follows `key` in text (in place): skips strings, so a brace
 * inside a token does not end it. False if key is not followed by an object. */
static bool empty_json_object(char *text, const char *key) {
    char *open = strstr(text, key);
    if (!open || !(open = strchr(open + strlen(key), '{'))) return false;
    int depth = 0;
    bool in_string = false;
    for (char *c = open; *c; c++) {
        if (in_string) {
            if (*c == '\\') c++;
            else if (*c == '"') in_string = false;
        } else if (*c == '"') {
            in_string = true;
        } else if (*c == '{') {
            depth++;
        } else if (*c == '}' && --depth == 0) {
            memmove(open + 1, c, strlen(c) + 1);
            return true;
        }
    }
    return false;
}

static int test_bad_folders(void) {
    CHECK(make_bad("no_config", NULL, NULL, NULL));
    char p[512];
    snprintf(p, sizeof p, "%s/config.json", tmp_path("no_config"));
    CHECK(remove(p) == 0);
    if (expect_failure(tmp_path("no_config"), "no config.json")) return TEST_FAIL;
    CHECK(make_bad("missing", "model.layers.1.mlp.up_proj.weight", NULL, NULL));
    if (expect_failure(tmp_path("missing"), "model.layers.1.mlp.up_proj.weight")) return TEST_FAIL;
    CHECK(make_bad("shape", NULL, "model.layers.0.self_attn.k_proj.weight", NULL));
    if (expect_failure(tmp_path("shape"), "has shape [32, 16], config.json implies [16, 32]"))
        return TEST_FAIL;
    CHECK(make_bad("dtype", NULL, NULL, "model.norm.weight"));
    if (expect_failure(tmp_path("dtype"), "dtype I32")) return TEST_FAIL;
    if (expect_failure(tmp_path("nowhere"), "no config.json")) return TEST_FAIL;
    /* an unknown pre-tokenizer regex is refused rather than guessed */
    CHECK(make_bad("regex", NULL, NULL, NULL));
    char *tj = test_read_file(GOLDEN_DIR "/llama/tokenizer.json", &(size_t){0});
    CHECK(tj);
    char *at = strstr(tj, "\\\\p{N}{1,3}");
    CHECK(at);
    at[8] = '2'; /* \p{N}{1,2}: a regex no pre-tokenizer of ours implements */
    snprintf(p, sizeof p, "%s/tokenizer.json", tmp_path("regex"));
    CHECK(write_text(p, tj));
    free(tj);
    if (expect_failure(tmp_path("regex"), "pre_tokenizer not recognized")) return TEST_FAIL;
    /* an empty vocabulary would make a model that drops every prompt */
    CHECK(make_bad("empty_vocab", NULL, NULL, NULL));
    tj = test_read_file(GOLDEN_DIR "/llama/tokenizer.json", &(size_t){0});
    CHECK(tj && empty_json_object(tj, "\"vocab\":"));
    snprintf(p, sizeof p, "%s/tokenizer.json", tmp_path("empty_vocab"));
    CHECK(write_text(p, tj));
    free(tj);
    if (expect_failure(tmp_path("empty_vocab"), "tokenizer.json: model.vocab is empty"))
        return TEST_FAIL;
    el_status st = el_convert_hf(GOLDEN_DIR "/llama", tmp_path("bad.gguf"), "q5_9", NULL, NULL);
    CHECK(st == EL_ERR_INVALID_ARG && strstr(el_last_error(), "q5_9"));
    return TEST_PASS;
}

/* ---------------------------------------------------------------- tokenizers */

static void json_str(FILE *f, const char *s, size_t len) { el_json_write_string(f, s, len); }

/* A folder with a 1-layer llama of n_vocab rows (zero weights) and config.json. */
static int make_weights_folder(const char *dir, int32_t n_vocab) {
    mkdir(dir, 0755);
    enum { D = 32, FF = 32 };
    float *zeros = calloc((size_t)n_vocab * D, sizeof(float));
    el_st_writer *w = el_st_writer_create();
    int ok = zeros && w;
    const struct {
        const char *name;
        int64_t r, c;
    } t[] = {{"model.embed_tokens.weight", n_vocab, D}, {"model.norm.weight", D, 0},
             {"model.layers.0.input_layernorm.weight", D, 0},
             {"model.layers.0.post_attention_layernorm.weight", D, 0},
             {"model.layers.0.self_attn.q_proj.weight", D, D},
             {"model.layers.0.self_attn.k_proj.weight", D, D},
             {"model.layers.0.self_attn.v_proj.weight", D, D},
             {"model.layers.0.self_attn.o_proj.weight", D, D},
             {"model.layers.0.mlp.gate_proj.weight", FF, D},
             {"model.layers.0.mlp.up_proj.weight", FF, D},
             {"model.layers.0.mlp.down_proj.weight", D, FF}};
    for (size_t i = 0; ok && i < sizeof t / sizeof t[0]; i++) {
        int64_t shape[2] = {t[i].r, t[i].c};
        int nd = t[i].c ? 2 : 1;
        uint64_t n = (uint64_t)t[i].r * (t[i].c ? (uint64_t)t[i].c : 1);
        ok = el_st_writer_add(w, t[i].name, EL_ST_F32, nd, shape, zeros, n * 4) == EL_OK;
    }
    char p[512], cfg[1024];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    ok = ok && el_st_writer_write(w, p) == EL_OK;
    el_st_writer_free(w);
    free(zeros);
    snprintf(cfg, sizeof cfg,
             "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": %d, "
             "\"intermediate_size\": %d, \"num_hidden_layers\": 1, \"num_attention_heads\": 4, "
             "\"vocab_size\": %d, \"tie_word_embeddings\": true}\n", D, FF, n_vocab);
    snprintf(p, sizeof p, "%s/config.json", dir);
    return ok && write_text(p, cfg);
}

/* Runs llama.cpp's test vectors of vocab `name` through the converted model's tokenizer. */
static int check_vectors(const char *gguf, const char *name) {
    test_vectors tv;
    CHECK(test_vectors_open(name, &tv));
    el_model *m = NULL;
    el_model_params mp = el_model_default_params();
    mp.vocab_only = true;
    int rc = el_model_load(gguf, &mp, &m) == EL_OK ? TEST_PASS : TEST_FAIL;
    if (rc) test_note("%s", el_last_error());
    int32_t *got = malloc(1 << 20);
    size_t cases = 0, len, ng;
    const char *text;
    while (rc == TEST_PASS && test_vectors_next(&tv, &text, &len)) {
        if (el_tokenize(m, text, len, false, false, got, 1 << 18, &ng) != EL_OK ||
            ng != tv.n_ids || memcmp(got, tv.ids, ng * sizeof *got) != 0) {
            test_note("%s: case %zu (\"%.*s\") differs: %zu tokens, want %zu", name, cases,
                      (int)(len > 40 ? 40 : len), text, ng, tv.n_ids);
            rc = TEST_FAIL;
        }
        cases++;
    }
    if (rc == TEST_PASS && (tv.cur || cases < 10)) {
        test_note("%s: the vector files disagree or are short (%zu cases)", name, cases);
        rc = TEST_FAIL;
    }
    el_model_free(m);
    free(got);
    test_vectors_close(&tv);
    return rc;
}

/* tokenizer.json of the gpt-2 vocab: vocab + merges + a ByteLevel pre-tokenizer, as GPT-2's
 * Hugging Face tokenizer.json has them, <|endoftext|> an added special token. */
static int test_tokenizer_gpt2(void) {
    const char *src = test_data_path("tokenizers/ggml-vocab-gpt-2.gguf");
    if (!src) return test_skip("ggml-vocab-gpt-2.gguf not found");
    gguf_file *g;
    CHECK(gguf_open(src, &g) == EL_OK);
    const gguf_kv *toks = gguf_find(g, "tokenizer.ggml.tokens");
    const gguf_kv *merges = gguf_find(g, "tokenizer.ggml.merges");
    CHECK(toks && merges);
    const char *dir = tmp_path("gpt2");
    CHECK(make_weights_folder(dir, (int32_t)toks->arr_n));
    char p[512];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    FILE *f = fopen(p, "wb");
    CHECK(f);
    fputs("{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 50256, \"content\": "
          "\"<|endoftext|>\", \"special\": true}], \"normalizer\": null, \"pre_tokenizer\": "
          "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, "
          "\"use_regex\": true}, \"model\": {\"type\": \"BPE\", \"vocab\": {", f);
    for (uint64_t i = 0; i < toks->arr_n; i++) {
        if (i) fputs(", ", f);
        json_str(f, toks->arr_str[i].ptr, toks->arr_str[i].len);
        fprintf(f, ": %llu", (unsigned long long)i);
    }
    fputs("}, \"merges\": [", f);
    for (uint64_t i = 0; i < merges->arr_n; i++) {
        if (i) fputs(", ", f);
        json_str(f, merges->arr_str[i].ptr, merges->arr_str[i].len);
    }
    fputs("]}}\n", f);
    CHECK(fclose(f) == 0);
    snprintf(p, sizeof p, "%s/tokenizer_config.json", dir);
    CHECK(write_text(p, "{\"bos_token\": \"<|endoftext|>\", \"eos_token\": \"<|endoftext|>\"}"));
    gguf_close(g);
    const char *out = tmp_path("gpt2.gguf");
    if (el_convert_hf(dir, out, "f32", NULL, NULL) != EL_OK) {
        test_note("%s", el_last_error());
        return TEST_FAIL;
    }
    return check_vectors(out, "ggml-vocab-gpt-2.gguf");
}

typedef struct piece {
    const char *s;
    size_t len;
    float score;
    int32_t id;
} piece;

static int by_score(const void *a, const void *b) {
    const piece *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->id - y->id;
}

static int by_text(const void *a, const void *b) {
    const piece *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Whether s[0..len) is a piece of `sorted` (sorted by_text). */
static int has_piece(const piece *sorted, int32_t n, const char *s, size_t len) {
    piece key = {s, len, 0, 0};
    return bsearch(&key, sorted, (size_t)n, sizeof key, by_text) != NULL;
}

/* A Llama-2 style tokenizer.json of the llama-spm vocab: BPE with byte_fallback, merges made the
 * way Hugging Face derives them from a SentencePiece model (each normal piece, best score first,
 * split in two pieces of the vocabulary every way it can be), a Prepend/Replace normalizer. */
static int test_tokenizer_spm(void) {
    const char *src = test_data_path("tokenizers/ggml-vocab-llama-spm.gguf");
    if (!src) return test_skip("ggml-vocab-llama-spm.gguf not found");
    gguf_file *g;
    CHECK(gguf_open(src, &g) == EL_OK);
    const gguf_kv *toks = gguf_find(g, "tokenizer.ggml.tokens");
    const gguf_kv *scores = gguf_find(g, "tokenizer.ggml.scores");
    const gguf_kv *types = gguf_find(g, "tokenizer.ggml.token_type");
    CHECK(toks && scores && types);
    int32_t n = (int32_t)toks->arr_n;
    const char *dir = tmp_path("spm");
    CHECK(make_weights_folder(dir, n));
    piece *pc = malloc((size_t)n * sizeof *pc), *sorted = malloc((size_t)n * sizeof *pc);
    CHECK(pc && sorted);
    for (int32_t i = 0; i < n; i++) {
        pc[i] = (piece){toks->arr_str[i].ptr, toks->arr_str[i].len, 0, i};
        memcpy(&pc[i].score, scores->arr_data + 4 * i, 4);
    }
    memcpy(sorted, pc, (size_t)n * sizeof *pc);
    qsort(sorted, (size_t)n, sizeof *pc, by_text);
    qsort(pc, (size_t)n, sizeof *pc, by_score);
    char p[512];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    FILE *f = fopen(p, "wb");
    CHECK(f);
    fputs("{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", "
          "\"special\": true}, {\"id\": 1, \"content\": \"<s>\", \"special\": true}, {\"id\": 2, "
          "\"content\": \"</s>\", \"special\": true}], \"normalizer\": {\"type\": \"Sequence\", "
          "\"normalizers\": [{\"type\": \"Prepend\", \"prepend\": \"\xe2\x96\x81\"}, {\"type\": "
          "\"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\xe2\x96\x81\"}]}, "
          "\"pre_tokenizer\": null, \"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", "
          "\"byte_fallback\": true, \"fuse_unk\": true, \"vocab\": {", f);
    for (int32_t i = 0; i < n; i++) {
        if (i) fputs(", ", f);
        json_str(f, toks->arr_str[i].ptr, toks->arr_str[i].len);
        fprintf(f, ": %d", i);
    }
    fputs("}, \"merges\": [", f);
    int first = 1;
    for (int32_t k = 0; k < n; k++) {
        int32_t type;
        memcpy(&type, types->arr_data + 4 * pc[k].id, 4);
        if (type != 1) continue;
        for (size_t cut = 1; cut < pc[k].len; cut++) {
            if ((pc[k].s[cut] & 0xC0) == 0x80) continue; /* inside a UTF-8 character */
            if (!has_piece(sorted, n, pc[k].s, cut) ||
                !has_piece(sorted, n, pc[k].s + cut, pc[k].len - cut))
                continue;
            fputs(first ? "[" : ", [", f);
            first = 0;
            json_str(f, pc[k].s, cut);
            fputs(", ", f);
            json_str(f, pc[k].s + cut, pc[k].len - cut);
            fputs("]", f);
        }
    }
    fputs("]}}\n", f);
    CHECK(fclose(f) == 0);
    free(pc);
    free(sorted);
    gguf_close(g);
    snprintf(p, sizeof p, "%s/tokenizer_config.json", dir);
    CHECK(write_text(p, "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"unk_token\": "
                        "\"<unk>\", \"add_bos_token\": true, \"add_eos_token\": false}"));
    const char *out = tmp_path("spm.gguf");
    if (el_convert_hf(dir, out, "f32", NULL, NULL) != EL_OK) {
        test_note("%s", el_last_error());
        return TEST_FAIL;
    }
    return check_vectors(out, "ggml-vocab-llama-spm.gguf");
}

/* What llama.cpp cannot express is refused by name: a query_pre_attn_scalar other than the
 * head_dim it assumes, layer_types that do not repeat. */
static int test_gemma3_refused(void) {
    static const struct {
        const char *from, *to, *message;
    } edits[] = {
        {"\"query_pre_attn_scalar\": 32", "\"query_pre_attn_scalar\": 64", "query_pre_attn_scalar"},
        {"\"sliding_attention\"", "\"full_attention\"", "layer_types"}, /* layer 0 only */
        {"\"gelu_pytorch_tanh\"", "\"gelu\"", "hidden_activation"},
    };
    const char *dir = tmp_path("gemma3_bad");
    mkdir(dir, 0755);
    CHECK(copy_side_files(GOLDEN_DIR "/gemma3", dir));
    CHECK(rewrite_weights(GOLDEN_DIR "/gemma3/model.safetensors", dir, NULL, NULL, NULL));
    char p[1024];
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        size_t len;
        char *cfg = test_read_file(GOLDEN_DIR "/gemma3/config.json", &len);
        char *at = cfg ? strstr(cfg, edits[i].from) : NULL;
        CHECK(at);
        char edited[8192];
        snprintf(edited, sizeof edited, "%.*s%s%s", (int)(at - cfg), cfg, edits[i].to,
                 at + strlen(edits[i].from));
        free(cfg);
        snprintf(p, sizeof p, "%s/config.json", dir);
        CHECK(write_text(p, edited));
        const char *out = tmp_path("gemma3_bad.gguf");
        el_status st = el_convert_hf(dir, out, "f16", NULL, NULL);
        if (st == EL_OK || !strstr(el_last_error(), edits[i].message)) {
            test_note("%s: status %d, \"%s\"", edits[i].to, st, el_last_error());
            return TEST_FAIL;
        }
        CHECK(!any_file_like(test_tmp_dir(), "gemma3_bad.gguf"));
    }
    return TEST_PASS;
}

/* The last warning el_warn sent, for the tests that expect one. */
static char last_warning[1024];
static void keep_warning(void *user, el_log_level level, const char *message) {
    snprintf(last_warning, sizeof last_warning, "%s", message);
}

/* dir holding the gemma3 folder with `from` in tokenizer.json replaced by `to`. */
static int gemma3_tokenizer_edit(const char *dir, const char *from, const char *to) {
    mkdir(dir, 0755);
    if (!copy_side_files(GOLDEN_DIR "/gemma3", dir) ||
        !rewrite_weights(GOLDEN_DIR "/gemma3/model.safetensors", dir, NULL, NULL, NULL))
        return 0;
    size_t len;
    char *tj = test_read_file(GOLDEN_DIR "/gemma3/tokenizer.json", &len);
    char *at = tj ? strstr(tj, from) : NULL;
    char *edited = at ? malloc(len + strlen(to) + 1) : NULL;
    if (edited)
        sprintf(edited, "%.*s%s%s", (int)(at - tj), tj, to, at + strlen(from));
    char p[1024];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    int ok = edited && write_text(p, edited);
    free(tj);
    free(edited);
    return ok;
}

/* The token count and whether token `text` is among them, of a converted GGUF. */
static int gguf_tokens(const char *path, uint64_t *n, const char *text, int *has) {
    gguf_file *f;
    if (gguf_open(path, &f) != EL_OK) return 0;
    const gguf_kv *toks = gguf_find(f, "tokenizer.ggml.tokens");
    *n = toks ? toks->arr_n : 0;
    *has = 0;
    for (uint64_t i = 0; toks && i < toks->arr_n; i++)
        *has |= gguf_str_eq(toks->arr_str[i], text);
    gguf_close(f);
    return toks != NULL;
}

/* config.json's vocab_size (the rows of embed_tokens) against the tokenizer's ids, which Gemma 3's
 * files have disagree both ways, converted as llama.cpp's converter does:
 *  - fewer ids than rows (the golden folder: 287 tokens, 300 rows): the ids no token has become
 *    [PAD<id>] tokens (UNUSED), every row stays, and the golden logits (Hugging Face's arithmetic
 *    over all 300 rows, the prompt using id 290) are test_gemma3_f32's;
 *  - added tokens past vocab_size (Gemma 3 1B's <image_soft_token>): left out with one warning
 *    naming the first; the model gives the golden logits and tokenizes their text as the plain
 *    folder's model does, as text;
 *  - a model.vocab piece past it: refused, naming tokenizer.json and the piece, no output. */
static int test_gemma3_vocab_size(void) {
    const char *plain = tmp_path("vocab_plain.gguf"), *out = tmp_path("vocab_added.gguf");
    uint64_t n;
    int has;
    CHECK(el_convert_hf(GOLDEN_DIR "/gemma3", plain, "f32", NULL, NULL) == EL_OK);
    CHECK(gguf_tokens(plain, &n, "[PAD290]", &has) && n == 300 && has);

    const char *dir = tmp_path("gemma3_added");
    CHECK(gemma3_tokenizer_edit(dir, "\"added_tokens\": [",
                                "\"added_tokens\": [{\"id\": 301, \"content\": \"<extra>\", "
                                "\"special\": true}, {\"id\": 300, \"content\": "
                                "\"<image_soft_token>\", \"special\": true}, "));
    last_warning[0] = '\0';
    el_log_set(keep_warning, NULL);
    el_status st = el_convert_hf(dir, out, "f32", NULL, NULL);
    el_log_set(NULL, NULL);
    if (st) test_note("%s", el_last_error());
    test_note("%s", last_warning);
    CHECK(st == EL_OK);
    CHECK(strstr(last_warning, "gemma3_added/tokenizer.json: 2 added tokens from id 300 "
                               "(\"<image_soft_token>\") are past config.json's vocab_size 300"));
    CHECK(gguf_tokens(out, &n, "<image_soft_token>", &has) && n == 300 && !has);
    expected e;
    CHECK(read_expected(GOLDEN_DIR "/gemma3/expected_logits.txt", &e));
    int rc = check_logits(out, &e, 1e-4);
    free(e.logits);
    CHECK(rc == TEST_PASS);
    el_model *ma = NULL, *mp = NULL;
    CHECK(el_model_load(out, NULL, &ma) == EL_OK && el_model_load(plain, NULL, &mp) == EL_OK);
    int32_t ta[32], tp[32];
    size_t na = 0, np = 0;
    const char *text = "a <image_soft_token> b";
    CHECK(el_tokenize(ma, text, strlen(text), false, true, ta, 32, &na) == EL_OK &&
          el_tokenize(mp, text, strlen(text), false, true, tp, 32, &np) == EL_OK);
    el_model_free(ma);
    el_model_free(mp);
    CHECK(na == np && na > 3 && !memcmp(ta, tp, na * sizeof *ta));

    const char *bad = tmp_path("gemma3_piece");
    CHECK(gemma3_tokenizer_edit(bad, "\"c\": 275", "\"c\": 305"));
    st = el_convert_hf(bad, tmp_path("vocab_bad.gguf"), "f32", NULL, NULL);
    test_note("%s", el_last_error());
    CHECK(st == EL_ERR_MISMATCH);
    CHECK(strstr(el_last_error(), "gemma3_piece/tokenizer.json: token id 305 of \"c\" is outside "
                                  "the model's vocab_size 300"));
    CHECK(!any_file_like(test_tmp_dir(), "vocab_bad.gguf"));
    remove(plain);
    remove(out);
    return TEST_PASS;
}

/* ---------------------------------------------------------------- rope_parameters */

/* v as JSON into f, without the members of the top-level object named in skip (NULL-ended). */
static void emit(FILE *f, const el_json_value *v, const char *const *skip) {
    double x;
    bool b;
    size_t len;
    const char *str;
    switch (el_json_type(v)) {
    case EL_JSON_NUMBER: el_json_num(v, &x), fprintf(f, "%.17g", x); break;
    case EL_JSON_BOOL: el_json_bool(v, &b), fputs(b ? "true" : "false", f); break;
    case EL_JSON_STRING: str = el_json_str(v, &len), json_str(f, str, len); break;
    case EL_JSON_ARRAY:
        fputc('[', f);
        for (size_t i = 0; i < el_json_len(v); i++) {
            if (i) fputs(", ", f);
            emit(f, el_json_at(v, i), NULL);
        }
        fputc(']', f);
        break;
    case EL_JSON_OBJECT: {
        fputc('{', f);
        int first = 1;
        for (size_t i = 0; i < el_json_len(v); i++) {
            const char *k = el_json_key_at(v, i, &len);
            int skipped = 0;
            for (size_t j = 0; skip && skip[j]; j++)
                skipped |= strlen(skip[j]) == len && !memcmp(skip[j], k, len);
            if (skipped) continue;
            fputs(first ? "" : ", ", f);
            first = 0;
            json_str(f, k, len);
            fputs(": ", f);
            emit(f, el_json_at(v, i), NULL);
        }
        fputc('}', f);
        break;
    }
    default: fputs("null", f);
    }
}

/* v5's dict of RoPE settings from a v4 config: rope_type, rope_theta, rope_scaling's fields and
 * the top-level keys v5 moves in, then `extra` (members that override: the last one wins). */
static void emit_rope_dict(FILE *f, const el_json_value *cfg, const char *extra) {
    const el_json_value *rs = el_json_get(cfg, "rope_scaling");
    const char *type = el_json_str(el_json_get(rs, "rope_type"), NULL);
    if (!type) type = el_json_str(el_json_get(rs, "type"), NULL);
    fprintf(f, "{\"rope_type\": \"%s\"", type ? type : "default");
    static const char *const moved[] = {"rope_theta", "partial_rotary_factor",
                                        "original_max_position_embeddings"};
    for (size_t i = 0; i < 3; i++) {
        const el_json_value *v = el_json_get(cfg, moved[i]);
        if (!v) continue;
        fprintf(f, ", \"%s\": ", moved[i]);
        emit(f, v, NULL);
    }
    for (size_t i = 0; i < el_json_len(rs); i++) {
        size_t len;
        const char *k = el_json_key_at(rs, i, &len);
        if ((len == 4 && !memcmp(k, "type", 4)) || (len == 9 && !memcmp(k, "rope_type", 9)))
            continue;
        fputs(", ", f);
        json_str(f, k, len);
        fputs(": ", f);
        emit(f, el_json_at(rs, i), NULL);
    }
    fprintf(f, "%s%s}", extra ? ", " : "", extra ? extra : "");
}

/* The golden folder `name`'s config.json as transformers v5 writes it, into dir: its RoPE keys in
 * rope_parameters (gemma3's per layer type: full_attention with the scaling, sliding_attention
 * unscaled with rope_local_base_freq's base), the top-level ones dropped unless keep_v4. extra
 * and extra_local are added to the full-attention (or only) dict and the sliding one. */
static int write_v5_config(const char *name, const char *dir, bool keep_v4, const char *extra,
                           const char *extra_local) {
    char p[1024];
    snprintf(p, sizeof p, GOLDEN_DIR "/%s/config.json", name);
    size_t len;
    char *text = test_read_file(p, &len);
    el_json_doc *doc = NULL;
    if (!text || el_json_parse(text, len, p, &doc) != EL_OK) {
        free(text);
        return 0;
    }
    const el_json_value *cfg = el_json_root(doc);
    snprintf(p, sizeof p, "%s/config.json", dir);
    FILE *f = fopen(p, "w");
    int ok = f != NULL;
    static const char *const v4_keys[] = {"rope_theta", "rope_scaling", "rope_local_base_freq",
                                          "partial_rotary_factor",
                                          "original_max_position_embeddings", NULL};
    if (ok) {
        emit(f, cfg, keep_v4 ? NULL : v4_keys);
        fseek(f, -1, SEEK_CUR); /* reopen the object for rope_parameters */
        fputs(", \"rope_parameters\": ", f);
        if (el_json_get(cfg, "rope_local_base_freq")) {
            fputs("{\"full_attention\": ", f);
            emit_rope_dict(f, cfg, extra);
            fputs(", \"sliding_attention\": {\"rope_type\": \"default\", \"rope_theta\": ", f);
            emit(f, el_json_get(cfg, "rope_local_base_freq"), NULL);
            fprintf(f, "%s%s}}", extra_local ? ", " : "", extra_local ? extra_local : "");
        } else {
            emit_rope_dict(f, cfg, extra);
        }
        fputs("}\n", f);
        ok = fclose(f) == 0;
    }
    el_json_free(doc);
    free(text);
    return ok;
}

/* A copy of the golden folder `name` in parent/name (so general.name stays name), with the v5
 * config when v5. */
static const char *folder_copy(const char *parent, const char *name, int v5, bool keep_v4,
                               const char *extra, const char *extra_local) {
    static char dir[4][1024];
    static int k;
    k = (k + 1) % 4;
    char from[512], weights[600];
    snprintf(dir[k], sizeof dir[k], "%s/%s", tmp_path(parent), name);
    mkdir(tmp_path(parent), 0755);
    mkdir(dir[k], 0755);
    snprintf(from, sizeof from, GOLDEN_DIR "/%s", name);
    snprintf(weights, sizeof weights, "%s/model.safetensors", from);
    int ok = copy_side_files(from, dir[k]) && rewrite_weights(weights, dir[k], NULL, NULL, NULL) &&
             (!v5 || write_v5_config(name, dir[k], keep_v4, extra, extra_local));
    return ok ? dir[k] : NULL;
}

static int same_file(const char *a, const char *b) {
    size_t na, nb;
    char *x = test_read_file(a, &na), *y = test_read_file(b, &nb);
    int same = x && y && na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return same;
}

/* transformers v5's rope_parameters give the GGUF the v4 keys give, byte for byte, for every
 * golden folder with RoPE settings (llama3, linear and longrope scaling, partial rotation, an
 * original context, gemma3's two layer types), alone or beside the v4 keys, and that GGUF the
 * float64 logits of make_hf_golden.py; values the two places give differently are refused by
 * name, and so is a scaled sliding_attention (llama.cpp's gemma3 rotates those layers
 * unscaled). */
static int test_rope_parameters(void) {
    static const char *const names[] = {"llama", "mistral", "phi3", "qwen3", "gemma3"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char v4_out[512], v5_out[512], both_out[512], ex[512];
        snprintf(v4_out, sizeof v4_out, "%s", tmp_path("rope_v4.gguf"));
        snprintf(v5_out, sizeof v5_out, "%s", tmp_path("rope_v5.gguf"));
        snprintf(both_out, sizeof both_out, "%s", tmp_path("rope_both.gguf"));
        const char *v4 = folder_copy("v4", names[i], 0, false, NULL, NULL);
        CHECK(v4 && el_convert_hf(v4, v4_out, "f32", NULL, NULL) == EL_OK);
        const char *v5 = folder_copy("v5", names[i], 1, false, NULL, NULL);
        if (!v5 || el_convert_hf(v5, v5_out, "f32", NULL, NULL) != EL_OK)
            test_note("%s v5: %s", names[i], el_last_error());
        const char *both = folder_copy("both", names[i], 1, true, NULL, NULL);
        if (!both || el_convert_hf(both, both_out, "f32", NULL, NULL) != EL_OK)
            test_note("%s v4 and v5: %s", names[i], el_last_error());
        int same = same_file(v4_out, v5_out) && same_file(v4_out, both_out);
        snprintf(ex, sizeof ex, GOLDEN_DIR "/%s/expected_logits.txt", names[i]);
        expected e;
        CHECK(read_expected(ex, &e));
        int rc = check_logits(v5_out, &e, 1e-4);
        free(e.logits);
        test_note("%-8s v5 config: %s GGUF as v4's", names[i], same ? "the same" : "NOT THE SAME");
        CHECK(same && rc == TEST_PASS);
    }
    static const struct {
        const char *name, *extra, *extra_local, *message;
        bool keep_v4;
    } bad[] = {
        {"llama", "\"rope_theta\": 250000.0", NULL,
         "\"rope_theta\" 500000 and rope_parameters \"rope_theta\" 250000 disagree", true},
        {"mistral", "\"factor\": 2.0", NULL,
         "\"rope_scaling\" and rope_parameters describe different rope scalings", true},
        {"phi3", "\"original_max_position_embeddings\": 64", NULL,
         "\"original_max_position_embeddings\" 32 and rope_parameters "
         "\"original_max_position_embeddings\" 64 disagree", true},
        {"phi3", "\"short_factor\": [1, 1, 1, 1, 1, 1]", NULL,
         "describe different rope scalings", true},
        {"gemma3", "\"rope_theta\": 5.0", NULL,
         "\"rope_theta\" 1e+06 and rope_parameters.full_attention \"rope_theta\" 5 disagree",
         true},
        {"gemma3", NULL, "\"rope_theta\": 20000.0",
         "\"rope_local_base_freq\" 10000 and rope_parameters.sliding_attention \"rope_theta\" "
         "20000 disagree", true},
        {"gemma3", NULL, "\"rope_type\": \"linear\", \"factor\": 2.0",
         "rope_parameters.sliding_attention scales its rope", false},
        {"qwen3", "\"rope_type\": \"yarn\", \"factor\": 2.0", NULL,
         "rope_parameters type \"yarn\" is not supported", false},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *dir = folder_copy("bad", bad[i].name, 1, bad[i].keep_v4, bad[i].extra,
                                      bad[i].extra_local);
        CHECK(dir);
        el_status st = el_convert_hf(dir, tmp_path("rope_bad.gguf"), "f32", NULL, NULL);
        if (st == EL_OK || !strstr(el_last_error(), bad[i].message)) {
            test_note("%s (%s): status %d, \"%s\"", bad[i].name, bad[i].message, st,
                      el_last_error());
            return TEST_FAIL;
        }
        test_note("%s", el_last_error());
        CHECK(!any_file_like(test_tmp_dir(), "rope_bad.gguf"));
    }
    return TEST_PASS;
}

int main(void) {
    run_test("llama_f32", test_llama_f32);
    run_test("qwen2_f32", test_qwen2_f32);
    run_test("mistral_f32", test_mistral_f32);
    run_test("llama_q8_0", test_llama_q8_0);
    run_test("qwen2_f16", test_qwen2_f16);
    run_test("llama_w8", test_llama_w8);
    run_test("qwen2_w8a16", test_qwen2_w8a16);
    run_test("gemma3_f32", test_gemma3_f32);
    run_test("gemma3_q8_0", test_gemma3_q8_0);
    run_test("gemma3_metadata", test_gemma3_metadata);
    run_test("qwen3_f32", test_qwen3_f32);
    run_test("qwen3_f16", test_qwen3_f16);
    run_test("phi3_f32", test_phi3_f32);
    run_test("phi3_f16", test_phi3_f16);
    run_test("llama_metadata", test_llama_metadata);
    run_test("sharded", test_sharded);
    run_test("unaligned_f32", test_unaligned_f32);
    run_test("unaligned_f16", test_unaligned_f16);
    run_test("bad_folders", test_bad_folders);
    run_test("gemma3_refused", test_gemma3_refused);
    run_test("gemma3_vocab_size", test_gemma3_vocab_size);
    run_test("rope_parameters", test_rope_parameters);
    run_test("tokenizer_gpt2", test_tokenizer_gpt2);
    run_test("tokenizer_spm", test_tokenizer_spm);
    return tests_exit_code();
}
