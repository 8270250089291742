/* test_gguf.c - the GGUF reader and writer against hand-built bytes, real files and round trips.
 *
 * The reference for the reader is a file assembled byte by byte here from the GGUF spec (not by
 * our writer); the reference for the writer is the exact byte sequence the spec prescribes for a
 * tiny file, and the values that were put in. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "testutil.h"

/* ------------------------------------------------ a tiny GGUF byte builder */

typedef struct buf {
    uint8_t b[4096];
    size_t n;
} buf;

static void le(buf *b, uint64_t v, int n) {
    for (int i = 0; i < n; i++) b->b[b->n++] = (uint8_t)(v >> (8 * i));
}
static void str(buf *b, const char *s) {
    le(b, strlen(s), 8);
    memcpy(b->b + b->n, s, strlen(s));
    b->n += strlen(s);
}
static void key(buf *b, const char *k, uint32_t type) {
    str(b, k);
    le(b, type, 4);
}
static uint32_t f32bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static uint64_t f64bits(double f) {
    uint64_t u;
    memcpy(&u, &f, 8);
    return u;
}

/* Every scalar type, arrays of several types, alignment 64, and two tensors (f32 [3,2] and
 * q8_0 [32]). Tensor data: the f32 values 0..5 at data offset 0 and 34 bytes 0x11 at 64. */
static void build_sample(buf *b) {
    b->n = 0;
    memcpy(b->b, "GGUF", 4);
    b->n = 4;
    le(b, 3, 4);
    le(b, 2, 8);  /* tensors */
    le(b, 17, 8); /* keys */
    key(b, "k.u8", 0), le(b, 200, 1);
    key(b, "k.i8", 1), le(b, (uint8_t)-5, 1);
    key(b, "k.u16", 2), le(b, 60000, 2);
    key(b, "k.i16", 3), le(b, (uint16_t)-300, 2);
    key(b, "k.u32", 4), le(b, 4000000000u, 4);
    key(b, "k.i32", 5), le(b, (uint32_t)-70000, 4);
    key(b, "k.f32", 6), le(b, f32bits(1.5f), 4);
    key(b, "k.bool", 7), le(b, 1, 1);
    key(b, "k.str", 8), str(b, "hello");
    key(b, "k.u64", 10), le(b, 1ull << 40, 8);
    key(b, "k.i64", 11), le(b, (uint64_t) - (1ll << 40), 8);
    key(b, "k.f64", 12), le(b, f64bits(-2.25), 8);
    key(b, "a.i32", 9), le(b, 5, 4), le(b, 3, 8), le(b, 1, 4), le(b, (uint32_t)-2, 4), le(b, 3, 4);
    key(b, "a.str", 9), le(b, 8, 4), le(b, 3, 8), str(b, "x"), str(b, ""), str(b, "yz");
    key(b, "a.f32", 9), le(b, 6, 4), le(b, 2, 8), le(b, f32bits(0.5f), 4), le(b, f32bits(-1), 4);
    key(b, "a.empty", 9), le(b, 0, 4), le(b, 0, 8);
    key(b, "general.alignment", 4), le(b, 64, 4);
    str(b, "t.f32"), le(b, 2, 4), le(b, 3, 8), le(b, 2, 8), le(b, 0, 4), le(b, 0, 8);
    str(b, "t.q8"), le(b, 1, 4), le(b, 32, 8), le(b, 8, 4), le(b, 64, 8);
    while (b->n % 64) b->b[b->n++] = 0;
    for (int i = 0; i < 6; i++) le(b, f32bits((float)i), 4);
    while (b->n % 64) b->b[b->n++] = 0;
    memset(b->b + b->n, 0x11, 34);
    b->n += 34;
}

static int check_sample(const gguf_file *f) {
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    float f32;
    bool bl;
    gguf_str s;
    CHECK(f->version == 3 && f->n_kv == 17 && f->n_tensors == 2 && f->alignment == 64);
    CHECK(gguf_get_u32(f, "k.u8", &u32) == EL_OK && u32 == 200);
    CHECK(gguf_get_i32(f, "k.i8", &i32) == EL_OK && i32 == -5);
    CHECK(gguf_get_u32(f, "k.u16", &u32) == EL_OK && u32 == 60000);
    CHECK(gguf_get_i32(f, "k.i16", &i32) == EL_OK && i32 == -300);
    CHECK(gguf_get_u32(f, "k.u32", &u32) == EL_OK && u32 == 4000000000u);
    CHECK(gguf_get_i32(f, "k.i32", &i32) == EL_OK && i32 == -70000);
    CHECK(gguf_get_f32(f, "k.f32", &f32) == EL_OK && f32 == 1.5f);
    CHECK(gguf_get_bool(f, "k.bool", &bl) == EL_OK && bl);
    CHECK(gguf_get_str(f, "k.str", &s) == EL_OK && gguf_str_eq(s, "hello"));
    CHECK(gguf_get_u64(f, "k.u64", &u64) == EL_OK && u64 == 1ull << 40);
    CHECK(gguf_find(f, "k.i64")->v.i64 == -(1ll << 40));
    int64_t i64;
    CHECK(gguf_get_i64(f, "k.i64", &i64) == EL_OK && i64 == -(1ll << 40));
    CHECK(gguf_get_i64(f, "k.u32", &i64) == EL_OK && i64 == 4000000000ll);
    CHECK(gguf_get_i64(f, "k.i8", &i64) == EL_OK && i64 == -5);
    CHECK(gguf_get_i64(f, "k.str", &i64) == EL_ERR_FORMAT && strstr(el_last_error(), "k.str"));
    CHECK(gguf_get_f32(f, "k.f64", &f32) == EL_OK && f32 == -2.25f);
    /* wrong types and ranges are errors naming the key; absence is NOT_FOUND */
    CHECK(gguf_get_i32(f, "k.u32", &i32) == EL_ERR_FORMAT && strstr(el_last_error(), "k.u32"));
    CHECK(gguf_get_u32(f, "k.i8", &u32) == EL_ERR_FORMAT);
    CHECK(gguf_get_u32(f, "k.str", &u32) == EL_ERR_FORMAT);
    CHECK(gguf_get_str(f, "k.u8", &s) == EL_ERR_FORMAT);
    u32 = 77;
    CHECK(gguf_get_u32(f, "no.such.key", &u32) == EL_ERR_NOT_FOUND && u32 == 77);
    const gguf_kv *kv;
    CHECK(gguf_get_arr(f, "a.i32", GGUF_TYPE_INT32, &kv) == EL_OK && kv->arr_n == 3);
    int32_t iv[3];
    memcpy(iv, kv->arr_data, sizeof iv);
    CHECK(iv[0] == 1 && iv[1] == -2 && iv[2] == 3);
    CHECK(gguf_get_arr(f, "a.i32", GGUF_TYPE_UINT32, &kv) == EL_ERR_FORMAT);
    CHECK(gguf_get_arr(f, "a.str", GGUF_TYPE_STRING, &kv) == EL_OK && kv->arr_n == 3);
    CHECK(gguf_str_eq(kv->arr_str[0], "x") && gguf_str_eq(kv->arr_str[1], "") &&
          gguf_str_eq(kv->arr_str[2], "yz"));
    CHECK(gguf_get_arr(f, "a.f32", GGUF_TYPE_FLOAT32, &kv) == EL_OK && kv->arr_n == 2);
    float fv[2];
    memcpy(fv, kv->arr_data, sizeof fv);
    CHECK(fv[0] == 0.5f && fv[1] == -1.0f);
    CHECK(gguf_get_arr(f, "a.empty", GGUF_TYPE_UINT8, &kv) == EL_OK && kv->arr_n == 0);

    const gguf_tensor *t = gguf_find_tensor(f, "t.f32");
    CHECK(t && t->n_dims == 2 && t->ne[0] == 3 && t->ne[1] == 2 && t->ne[2] == 1 && t->type == 0);
    CHECK(t->nbytes == 24 && t->offset == 0 && (const uint8_t *)t->data == f->data);
    float tv[6];
    memcpy(tv, t->data, sizeof tv);
    for (int i = 0; i < 6; i++) CHECK(tv[i] == (float)i);
    t = gguf_find_tensor(f, "t.q8");
    CHECK(t && t->n_dims == 1 && t->ne[0] == 32 && t->type == 8 && t->nbytes == 34);
    CHECK(t->offset == 64 && ((const uint8_t *)t->data)[0] == 0x11 &&
          ((const uint8_t *)t->data)[33] == 0x11);
    CHECK(gguf_find_tensor(f, "t.none") == NULL);
    return TEST_PASS;
}

static int test_read_sample(void) {
    buf b;
    build_sample(&b);
    gguf_file *f;
    CHECK(gguf_open_memory(b.b, b.n, "sample", &f) == EL_OK);
    int r = check_sample(f);
    gguf_close(f);
    if (r != TEST_PASS) return r;
    b.b[4] = 2; /* version 2 has the same layout */
    CHECK(gguf_open_memory(b.b, b.n, "sample", &f) == EL_OK && f->version == 2);
    gguf_close(f);
    return TEST_PASS;
}

/* What llama.cpp's reader takes and real files have: no general.alignment (the data starts at
 * the next multiple of 32) and keys nobody here reads, arrays among them. */
static int test_tolerated(void) {
    buf b = {.n = 0};
    memcpy(b.b, "GGUF", 4);
    b.n = 4;
    le(&b, 3, 4), le(&b, 1, 8), le(&b, 3, 8);
    key(&b, "vendor.note", 8), str(&b, "written by another tool");
    key(&b, "vendor.ids", 9), le(&b, 10, 4), le(&b, 2, 8), le(&b, 7, 8), le(&b, 9, 8);
    key(&b, "general.architecture", 8), str(&b, "llama");
    str(&b, "t"), le(&b, 1, 4), le(&b, 4, 8), le(&b, 0, 4), le(&b, 0, 8);
    size_t header = b.n;
    while (b.n % 32) b.b[b.n++] = 0;
    CHECK(b.n > header); /* the padding is really there to be skipped */
    for (int i = 0; i < 4; i++) le(&b, f32bits((float)i + 0.5f), 4);
    gguf_file *f;
    CHECK(gguf_open_memory(b.b, b.n, "tolerated", &f) == EL_OK);
    CHECK(f->alignment == 32 && f->n_tensors == 1);
    float x[4];
    memcpy(x, f->tensors[0].data, sizeof x);
    CHECK(x[0] == 0.5f && x[3] == 3.5f);
    gguf_close(f);
    return TEST_PASS;
}

/* The writer's bytes for one key and no tensors, spelled out from the spec. */
static int test_writer_exact_bytes(void) {
    gguf_writer *w = gguf_writer_create();
    CHECK(w && gguf_writer_set_u32(w, "a", 7) == EL_OK);
    char path[512];
    snprintf(path, sizeof path, "%s/tiny.gguf", test_tmp_dir());
    CHECK(gguf_writer_write(w, path) == EL_OK);
    gguf_writer_free(w);
    buf want = {.n = 0};
    memcpy(want.b, "GGUF", 4);
    want.n = 4;
    le(&want, 3, 4), le(&want, 0, 8), le(&want, 1, 8);
    key(&want, "a", 4), le(&want, 7, 4);
    while (want.n % 32) want.b[want.n++] = 0;
    FILE *fp = fopen(path, "rb");
    CHECK(fp);
    uint8_t got[256];
    size_t n = fread(got, 1, sizeof got, fp);
    fclose(fp);
    CHECK(n == want.n && memcmp(got, want.b, n) == 0);
    return TEST_PASS;
}

/* sample -> copy every key and tensor through the writer -> read back: same values. */
static int test_round_trip(void) {
    buf b;
    build_sample(&b);
    gguf_file *src;
    CHECK(gguf_open_memory(b.b, b.n, "sample", &src) == EL_OK);
    gguf_writer *w = gguf_writer_create();
    CHECK(w && gguf_writer_copy_kv(w, src) == EL_OK);
    for (uint64_t i = 0; i < src->n_tensors; i++) {
        const gguf_tensor *t = &src->tensors[i];
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        CHECK(gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->nbytes) ==
              EL_OK);
    }
    /* setters on top: replacing a key keeps one copy */
    CHECK(gguf_writer_set_str(w, "k.str", "bye") == EL_OK);
    CHECK(gguf_writer_set_str(w, "k.str", "hello") == EL_OK);
    const char *strs[] = {"p", "", "qrs"};
    int16_t i16s[] = {-1, 2, -32768};
    CHECK(gguf_writer_set_arr_str(w, "w.strs", strs, 3) == EL_OK);
    CHECK(gguf_writer_set_arr(w, "w.i16", GGUF_TYPE_INT16, i16s, 3) == EL_OK);
    CHECK(gguf_writer_set_i32(w, "w.i32", -9) == EL_OK);
    CHECK(gguf_writer_set_bool(w, "w.bool", false) == EL_OK);
    CHECK(gguf_writer_set_f32(w, "w.f32", 0.25f) == EL_OK);
    CHECK(gguf_writer_set_u64(w, "w.u64", 123456789012ull) == EL_OK);
    /* bad tensors are refused */
    float x[4] = {0};
    int64_t ne[2] = {4, 1};
    CHECK(gguf_writer_add_tensor(w, "t.f32", 0, 1, ne, x, 16) == EL_ERR_INVALID_ARG);
    CHECK(gguf_writer_add_tensor(w, "bad.size", 0, 1, ne, x, 12) == EL_ERR_INVALID_ARG);
    CHECK(gguf_writer_add_tensor(w, "bad.block", 2, 1, ne, x, 16) == EL_ERR_INVALID_ARG);
    CHECK(gguf_writer_add_tensor(w, "bad.type", 99, 1, ne, x, 16) == EL_ERR_INVALID_ARG);
    CHECK(gguf_writer_add_tensor(w, "ok.f32", 0, 2, ne, x, 16) == EL_OK);
    char path[512];
    snprintf(path, sizeof path, "%s/rt.gguf", test_tmp_dir());
    CHECK(gguf_writer_write(w, path) == EL_OK);
    gguf_writer_free(w);
    gguf_close(src);

    gguf_file *f;
    CHECK(gguf_open(path, &f) == EL_OK);
    CHECK(strcmp(f->path, path) == 0);
    CHECK(f->n_kv == 23 && f->n_tensors == 3);
    /* check_sample expects its own counts: compare the shared part by hand instead */
    gguf_str s;
    CHECK(gguf_get_str(f, "k.str", &s) == EL_OK && gguf_str_eq(s, "hello"));
    const gguf_kv *kv;
    CHECK(gguf_get_arr(f, "w.strs", GGUF_TYPE_STRING, &kv) == EL_OK && kv->arr_n == 3);
    CHECK(gguf_str_eq(kv->arr_str[2], "qrs") && kv->arr_str[1].len == 0);
    CHECK(gguf_get_arr(f, "w.i16", GGUF_TYPE_INT16, &kv) == EL_OK && kv->arr_n == 3);
    CHECK(memcmp(kv->arr_data, i16s, sizeof i16s) == 0);
    int32_t i32;
    bool bl = true;
    float f32;
    uint64_t u64;
    CHECK(gguf_get_i32(f, "w.i32", &i32) == EL_OK && i32 == -9);
    CHECK(gguf_get_bool(f, "w.bool", &bl) == EL_OK && !bl);
    CHECK(gguf_get_f32(f, "w.f32", &f32) == EL_OK && f32 == 0.25f);
    CHECK(gguf_get_u64(f, "w.u64", &u64) == EL_OK && u64 == 123456789012ull);
    CHECK(gguf_find(f, "k.i16")->type == GGUF_TYPE_INT16 && gguf_find(f, "k.i16")->v.i64 == -300);
    CHECK(gguf_find(f, "k.f64")->type == GGUF_TYPE_FLOAT64 &&
          gguf_find(f, "k.f64")->v.f64 == -2.25);
    CHECK(gguf_find(f, "k.i64")->v.i64 == -(1ll << 40));
    int64_t i64;
    CHECK(gguf_get_i64(f, "k.i64", &i64) == EL_OK && i64 == -(1ll << 40));
    CHECK(gguf_get_i64(f, "k.u32", &i64) == EL_OK && i64 == 4000000000ll);
    CHECK(gguf_get_i64(f, "k.i8", &i64) == EL_OK && i64 == -5);
    CHECK(gguf_get_i64(f, "k.str", &i64) == EL_ERR_FORMAT && strstr(el_last_error(), "k.str"));
    CHECK(f->alignment == 64);
    for (uint64_t i = 0; i < f->n_tensors; i++) CHECK(f->tensors[i].offset % 64 == 0);
    const gguf_tensor *t = gguf_find_tensor(f, "t.f32");
    float tv[6];
    memcpy(tv, t->data, sizeof tv);
    for (int i = 0; i < 6; i++) CHECK(tv[i] == (float)i);
    t = gguf_find_tensor(f, "t.q8");
    CHECK(t && t->nbytes == 34 && ((const uint8_t *)t->data)[33] == 0x11);
    t = gguf_find_tensor(f, "ok.f32");
    CHECK(t && t->n_dims == 2 && t->ne[0] == 4 && t->ne[1] == 1);
    gguf_close(f);
    return TEST_PASS;
}

static int test_writer_failures(void) {
    gguf_writer *w = gguf_writer_create();
    CHECK(w && gguf_writer_set_u32(w, "a", 1) == EL_OK);
    CHECK(gguf_writer_write(w, "/nonexistent-dir/x.gguf") == EL_ERR_IO);
    CHECK(strstr(el_last_error(), "/nonexistent-dir/x.gguf") != NULL);
    /* an unwritable directory: no file and no temporary left behind */
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/ro", test_tmp_dir());
    CHECK(mkdir(dir, 0555) == 0);
    snprintf(path, sizeof path, "%s/x.gguf", dir);
    el_status st = gguf_writer_write(w, path);
    if (st == EL_OK) { /* running as root: permissions do not apply */
        CHECK(remove(path) == 0);
    } else {
        CHECK(st == EL_ERR_IO && strstr(el_last_error(), path));
    }
    uint8_t bools[2] = {1, 2};
    CHECK(gguf_writer_set_arr(w, "bools", GGUF_TYPE_BOOL, bools, 2) == EL_ERR_INVALID_ARG);
    CHECK(gguf_writer_set_i32(w, "general.alignment", -64) == EL_OK);
    snprintf(path, sizeof path, "%s/align.gguf", test_tmp_dir());
    CHECK(gguf_writer_write(w, path) == EL_ERR_INVALID_ARG);
    CHECK(gguf_writer_set_u32(w, "general.alignment", 48) == EL_OK);
    snprintf(path, sizeof path, "%s/align.gguf", test_tmp_dir());
    CHECK(gguf_writer_write(w, path) == EL_ERR_INVALID_ARG);
    FILE *fp = fopen(path, "rb");
    CHECK(fp == NULL);
    CHECK(gguf_writer_set_str(w, "", "x") == EL_ERR_INVALID_ARG);
    gguf_writer_free(w);
    return TEST_PASS;
}

/* ------------------------------------------------------------ real files */

static int test_tiny_llama(void) {
    const char *path = test_data_path("models/llama-2-tiny-random.gguf");
    if (!path) return test_skip("models/llama-2-tiny-random.gguf not found");
    gguf_file *f;
    CHECK(gguf_open(path, &f) == EL_OK);
    CHECK(f->version == 3 && f->n_kv == 18 && f->n_tensors == 12);
    gguf_str s;
    CHECK(gguf_get_str(f, "general.architecture", &s) == EL_OK && gguf_str_eq(s, "llama"));
    CHECK(gguf_get_str(f, "tokenizer.ggml.model", &s) == EL_OK && gguf_str_eq(s, "llama"));
    uint32_t u;
    CHECK(gguf_get_u32(f, "llama.embedding_length", &u) == EL_OK && u == 8);
    CHECK(gguf_get_u32(f, "llama.feed_forward_length", &u) == EL_OK && u == 32);
    CHECK(gguf_get_u32(f, "llama.attention.head_count", &u) == EL_OK && u == 2);
    CHECK(gguf_get_u32(f, "llama.context_length", &u) == EL_OK && u == 4096);
    CHECK(gguf_get_u32(f, "general.file_type", &u) == EL_OK && u == 1);
    CHECK(gguf_get_u32(f, "tokenizer.ggml.bos_token_id", &u) == EL_OK && u == 1);
    float eps;
    CHECK(gguf_get_f32(f, "llama.attention.layer_norm_rms_epsilon", &eps) == EL_OK &&
          fabsf(eps - 1e-5f) < 1e-9f);
    const gguf_kv *kv;
    CHECK(gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &kv) == EL_OK);
    CHECK(kv->arr_n == 32000 && gguf_str_eq(kv->arr_str[1], "<s>") &&
          gguf_str_eq(kv->arr_str[2], "</s>"));
    CHECK(gguf_get_arr(f, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, &kv) == EL_OK &&
          kv->arr_n == 32000);
    int n_f16 = 0, n_f32 = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        n_f16 += t->type == 1;
        n_f32 += t->type == 0;
        CHECK((const uint8_t *)t->data + t->nbytes <= f->map.data + f->map.size);
    }
    CHECK(n_f16 + n_f32 == 12 && n_f16 > 0 && n_f32 > 0);
    const gguf_tensor *t = gguf_find_tensor(f, "token_embd.weight");
    CHECK(t && t->type == 1 && t->ne[0] == 8 && t->ne[1] == 32000 && t->nbytes == 8 * 32000 * 2);
    t = gguf_find_tensor(f, "blk.0.attn_norm.weight");
    CHECK(t && t->type == 0 && t->n_dims == 1 && t->ne[0] == 8);
    t = gguf_find_tensor(f, "blk.0.ffn_up.weight");
    CHECK(t && t->ne[0] == 8 && t->ne[1] == 32);
    gguf_close(f);
    return TEST_PASS;
}

static int test_vocab_files(void) {
    static const struct {
        const char *file, *arch, *model;
        uint64_t n_vocab, n_merges;
    } v[] = {
        {"ggml-vocab-llama-spm.gguf", "llama", "llama", 32000, 0},
        {"ggml-vocab-gpt-2.gguf", "gpt2", "gpt2", 50257, 50000},
        {"ggml-vocab-falcon.gguf", "falcon", "gpt2", 65024, 64784},
        {"ggml-vocab-mpt.gguf", "mpt", "gpt2", 50432, 50009},
        {"ggml-vocab-bert-bge.gguf", "bert", "bert", 30522, 0},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "tokenizers/%s", v[i].file);
        const char *path = test_data_path(rel);
        if (!path) return test_skip("tokenizers/ not found");
        gguf_file *f;
        CHECK(gguf_open(path, &f) == EL_OK);
        CHECK(f->version == 3 && f->n_tensors == 0);
        gguf_str s;
        CHECK(gguf_get_str(f, "general.architecture", &s) == EL_OK && gguf_str_eq(s, v[i].arch));
        CHECK(gguf_get_str(f, "tokenizer.ggml.model", &s) == EL_OK && gguf_str_eq(s, v[i].model));
        const gguf_kv *kv;
        CHECK(gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &kv) == EL_OK);
        CHECK(kv->arr_n == v[i].n_vocab);
        el_status st = gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_TYPE_STRING, &kv);
        CHECK(v[i].n_merges ? st == EL_OK && kv->arr_n == v[i].n_merges : st == EL_ERR_NOT_FOUND);
        gguf_close(f);
    }
    return TEST_PASS;
}

/* --------------------------------------------------------- hostile input */

static bool is_clean_error(el_status st, const char *name) {
    return (st == EL_ERR_FORMAT || st == EL_ERR_UNSUPPORTED) && strstr(el_last_error(), name);
}

/* Every prefix of the sample must be refused cleanly (the sample's last byte is tensor data). */
static int test_truncations(void) {
    buf b;
    build_sample(&b);
    for (size_t n = 0; n < b.n; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exact size, so ASan sees any overread */
        memcpy(copy, b.b, n);
        gguf_file *f;
        el_status st = gguf_open_memory(n ? copy : NULL, n, "trunc", &f);
        free(copy);
        if (!is_clean_error(st, "trunc")) test_note("length %zu: %s", n, el_last_error());
        CHECK(is_clean_error(st, "trunc") && f == NULL);
    }
    return TEST_PASS;
}

/* Prefixes of a real file (every length through the keys' start, then a sample): each is refused
 * cleanly. The prefix is placed at the end of the buffer so that ASan sees any overread. */
static int test_truncations_real(void) {
    const char *path = test_data_path("models/llama-2-tiny-random.gguf");
    if (!path) return test_skip("models/llama-2-tiny-random.gguf not found");
    FILE *fp = fopen(path, "rb");
    CHECK(fp);
    size_t size = 1750560;
    uint8_t *whole = malloc(size), *tail = malloc(size);
    CHECK(whole && tail && fread(whole, 1, size, fp) == size);
    fclose(fp);
    for (size_t n = 0; n < size; n += n < 4096 ? 1 : 4999) {
        memcpy(tail + size - n, whole, n);
        gguf_file *f;
        el_status st = gguf_open_memory(tail + size - n, n, "prefix", &f);
        if (!is_clean_error(st, "prefix")) test_note("length %zu: %s", n, el_last_error());
        CHECK(is_clean_error(st, "prefix"));
    }
    free(whole);
    free(tail);
    return TEST_PASS;
}

/* Every byte of the sample flipped in turn: opened or refused cleanly, never a crash. */
static int test_flips(void) {
    buf b;
    build_sample(&b);
    int refused = 0;
    for (size_t i = 0; i < b.n; i++) {
        for (int bit = 0; bit < 8; bit += 7) {
            uint8_t *copy = malloc(b.n);
            memcpy(copy, b.b, b.n);
            copy[i] ^= (uint8_t)(1u << bit);
            gguf_file *f;
            el_status st = gguf_open_memory(copy, b.n, "flip", &f);
            if (st == EL_OK) {
                for (uint64_t k = 0; k < f->n_tensors; k++)
                    CHECK((const uint8_t *)f->tensors[k].data + f->tensors[k].nbytes <= copy + b.n);
                gguf_close(f);
            } else {
                CHECK(is_clean_error(st, "flip") || st == EL_ERR_NOMEM);
                refused++;
            }
            free(copy);
        }
    }
    CHECK(refused > 100);
    return TEST_PASS;
}

static long max_rss_kb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Huge counts are refused at once, before anything is allocated for them. */
static int test_huge_counts(void) {
    static const uint64_t counts[] = {1ull << 40, 1ull << 62, UINT64_MAX, 1000};
    long rss0 = max_rss_kb();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        for (int which = 0; which < 2; which++) {
            buf b = {.n = 0};
            memcpy(b.b, "GGUF", 4);
            b.n = 4;
            le(&b, 3, 4);
            le(&b, which ? counts[i] : 0, 8);
            le(&b, which ? 0 : counts[i], 8);
            key(&b, "a", 4), le(&b, 1, 4);
            gguf_file *f;
            CHECK(is_clean_error(gguf_open_memory(b.b, b.n, "huge", &f), "huge"));
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    CHECK(secs < 0.1);
    CHECK(max_rss_kb() - rss0 < 16 * 1024);
    return TEST_PASS;
}

/* The committed corpus of bad files (tests/data/bad, made by gen_bad.py). */
static int test_bad_corpus(void) {
    FILE *list = popen("ls tests/data/bad/*.gguf 2>/dev/null", "r");
    CHECK(list);
    char path[1024];
    int n = 0;
    while (fgets(path, sizeof path, list)) {
        path[strcspn(path, "\n")] = 0;
        gguf_file *f = NULL;
        el_status st = gguf_open(path, &f);
        if (!is_clean_error(st, path))
            test_note("%s: status %s: %s", path, el_status_name(st), el_last_error());
        CHECK(is_clean_error(st, path) && f == NULL);
        n++;
    }
    pclose(list);
    if (n == 0) return test_skip("tests/data/bad/*.gguf not found (run from the repo root)");
    CHECK(n >= 20);
    return TEST_PASS;
}

int main(void) {
    run_test("read_sample", test_read_sample);
    run_test("tolerated", test_tolerated);
    run_test("writer_exact_bytes", test_writer_exact_bytes);
    run_test("round_trip", test_round_trip);
    run_test("writer_failures", test_writer_failures);
    run_test("tiny_llama", test_tiny_llama);
    run_test("vocab_files", test_vocab_files);
    run_test("truncations", test_truncations);
    run_test("truncations_real", test_truncations_real);
    run_test("flips", test_flips);
    run_test("huge_counts", test_huge_counts);
    run_test("bad_corpus", test_bad_corpus);
    return tests_exit_code();
}
