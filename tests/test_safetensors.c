/* test_safetensors.c - the safetensors reader against files whose bytes are written out by hand
 * (one of them the example in the reference implementation's documentation), the writer by
 * reading back what it wrote and checking the layout the format prescribes, bad files, and a
 * model sharded over two files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "formats/safetensors.h"
#include "testutil.h"

static const char *tmp_path(const char *name) {
    static char path[4][512];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof path[0], "%s/%s", test_tmp_dir(), name);
    return p;
}

static int write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

/* A file of: header length as given, the header text, then n_data bytes 0, 1, 2, ... */
static const char *make_file(const char *name, uint64_t header_len, const char *header,
                             size_t n_data) {
    size_t hl = strlen(header);
    uint8_t *buf = malloc(8 + hl + n_data);
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)(header_len >> (8 * i));
    memcpy(buf + 8, header, hl);
    for (size_t i = 0; i < n_data; i++) buf[8 + hl + i] = (uint8_t)i;
    const char *path = tmp_path(name);
    int rc = write_bytes(path, buf, 8 + hl + n_data);
    free(buf);
    return rc == 0 ? path : NULL;
}

/* The example file of the reference implementation's documentation (safetensors/src/tensor.rs,
 * SafeTensors::deserialize): a 2x2 I32 tensor "test" of zeros. */
static int test_reference_example(void) {
    static const char bytes[] =
        "<\x00\x00\x00\x00\x00\x00\x00"
        "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00";
    el_st_file *f;
    CHECK(el_st_open_memory(bytes, sizeof bytes - 1, "example", &f) == EL_OK);
    CHECK(f->n_tensors == 1 && f->metadata == NULL);
    const el_st_tensor *t;
    CHECK(el_st_get(f, "test", &t) == EL_OK);
    CHECK(t->dtype == EL_ST_I32 && t->n_dims == 2 && t->shape[0] == 2 && t->shape[1] == 2);
    CHECK(t->n_elements == 4 && t->nbytes == 16 && t->data == bytes + 8 + 60);
    CHECK(el_st_get(f, "nope", &t) == EL_ERR_NOT_FOUND && t == NULL);
    CHECK(strstr(el_last_error(), "example") && strstr(el_last_error(), "nope"));
    el_st_close(f);
    return TEST_PASS;
}

/* A hand-made file with metadata, two tensors listed out of offset order, and padding. */
static int test_hand_made_file(void) {
    static const char bytes[] =
        "\x90\x00\x00\x00\x00\x00\x00\x00" /* 144 header bytes: 140 of JSON, 4 spaces */
        "{\"__metadata__\":{\"format\":\"pt\"},"
        "\"b\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[8,11]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[0,8]}}    "
        "\x00\x00\x80\x3f\x00\x00\x00\xc0" /* 1.0f, -2.0f */
        "\x01\x02\x03";
    CHECK(sizeof bytes - 1 == 8 + 144 + 11); /* the length above was counted right */
    const char *path = tmp_path("hand.safetensors");
    CHECK(write_bytes(path, bytes, sizeof bytes - 1) == 0);
    el_st_file *f;
    CHECK(el_st_open(path, &f) == EL_OK);
    CHECK(f->n_tensors == 2 && f->data_size == 11);
    CHECK(strcmp(f->tensors[0].name, "a") == 0 && strcmp(f->tensors[1].name, "b") == 0);
    CHECK(strcmp(el_st_metadata(f, "format"), "pt") == 0 && el_st_metadata(f, "x") == NULL);
    const el_st_tensor *a = el_st_find(f, "a"), *b = el_st_find(f, "b");
    CHECK(a && a->dtype == EL_ST_F32 && a->n_dims == 2 && a->shape[0] == 2 && a->shape[1] == 1);
    float v[2];
    memcpy(v, a->data, 8);
    CHECK(v[0] == 1.0f && v[1] == -2.0f);
    CHECK(b && b->dtype == EL_ST_U8 && b->n_elements == 3 && b->offset == 8);
    CHECK(memcmp(b->data, "\x01\x02\x03", 3) == 0);
    CHECK(strcmp(b->file->path, path) == 0);
    el_st_close(f);
    return TEST_PASS;
}

static int test_round_trip(void) {
    static uint8_t data[EL_ST_DTYPE_COUNT][6 * 8];
    el_st_writer *w = el_st_writer_create();
    CHECK(w != NULL);
    int64_t shape[2] = {2, 3};
    char name[32];
    for (int t = 1; t < EL_ST_DTYPE_COUNT; t++) {
        for (size_t i = 0; i < sizeof data[t]; i++) data[t][i] = (uint8_t)(t * 31 + i);
        snprintf(name, sizeof name, "t.%s", el_st_dtype_name((el_st_dtype)t));
        CHECK(el_st_writer_add(w, name, (el_st_dtype)t, 2, shape,
                               data[t], 6 * el_st_dtype_size((el_st_dtype)t)) == EL_OK);
    }
    float scalar = 3.5f;
    int64_t zero_shape[2] = {0, 4};
    CHECK(el_st_writer_add(w, "scalar", EL_ST_F32, 0, NULL, &scalar, 4) == EL_OK);
    CHECK(el_st_writer_add(w, "empty", EL_ST_F16, 2, zero_shape, NULL, 0) == EL_OK);
    CHECK(el_st_writer_add(w, "odd", EL_ST_U8, 1, (int64_t[]){1}, "z", 1) == EL_OK);
    CHECK(el_st_writer_set_metadata(w, "format", "pt") == EL_OK);
    CHECK(el_st_writer_set_metadata(w, "note", "first") == EL_OK);
    CHECK(el_st_writer_set_metadata(w, "note", "\"quoted\" \xC3\xA9\n") == EL_OK);
    const char *path = tmp_path("rt.safetensors");
    CHECK(el_st_writer_write(w, path) == EL_OK);
    el_st_writer_free(w);

    el_st_file *f;
    CHECK(el_st_open(path, &f) == EL_OK);
    CHECK(f->n_tensors == EL_ST_DTYPE_COUNT - 1 + 3);
    /* the layout the format prescribes: header length a multiple of 8, data right after it */
    const uint8_t *raw = f->map.data;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | raw[i];
    CHECK(n % 8 == 0 && f->data == raw + 8 + n && raw[8] == '{');
    for (int t = 1; t < EL_ST_DTYPE_COUNT; t++) {
        snprintf(name, sizeof name, "t.%s", el_st_dtype_name((el_st_dtype)t));
        const el_st_tensor *x;
        CHECK(el_st_get(f, name, &x) == EL_OK);
        CHECK((int)x->dtype == t && x->n_dims == 2 && x->shape[0] == 2 && x->shape[1] == 3);
        CHECK(x->nbytes == 6 * el_st_dtype_size((el_st_dtype)t));
        CHECK(memcmp(x->data, data[t], x->nbytes) == 0);
        CHECK((uintptr_t)x->data % el_st_dtype_size((el_st_dtype)t) == 0); /* aligned */
    }
    const el_st_tensor *s = el_st_find(f, "scalar"), *e = el_st_find(f, "empty");
    CHECK(s && s->n_dims == 0 && s->n_elements == 1 && memcmp(s->data, &scalar, 4) == 0);
    CHECK(e && e->n_dims == 2 && e->shape[0] == 0 && e->shape[1] == 4 && e->nbytes == 0);
    CHECK(strcmp(el_st_metadata(f, "format"), "pt") == 0);
    CHECK(strcmp(el_st_metadata(f, "note"), "\"quoted\" \xC3\xA9\n") == 0);
    el_st_close(f);
    return TEST_PASS;
}

static int expect_format_error(const char *path, const char *what) {
    el_st_file *f = NULL;
    el_status st = el_st_open(path, &f);
    if (st != EL_ERR_FORMAT) test_note("%s: status %s", what, el_status_name(st));
    CHECK(st == EL_ERR_FORMAT && f == NULL);
    if (!strstr(el_last_error(), path)) test_note("%s: %s", what, el_last_error());
    CHECK(strstr(el_last_error(), path) != NULL);
    return TEST_PASS;
}

static int test_bad_files(void) {
    static const struct { const char *header; size_t n_data; const char *what; } bad[] = {
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "overlap"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12, "gap"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8, "trailing data"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, "out of range"},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4, "begin > end"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "wrong size"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},}", 8, "bad JSON"},
        {"[1]", 0, "not an object"},
        {"{\"a\":{\"dtype\":5,\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "dtype not a string"},
        {"{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "no dtype"},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0, "negative dim"},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2.0],\"data_offsets\":[0,2]}}", 2, "float dim"},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,0]}}",
         0, "shape overflow"},
        {"{\"a\":{\"dtype\":\"F64\",\"shape\":[2305843009213693952],\"data_offsets\":[0,0]}}",
         0, "bytes overflow"},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2,2]}}", 2, "3 offsets"},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[-2,0]}}", 2, "negative offset"},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[2]}}", 2, "no offsets"},
        {"{\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,2]}}", 2, "no shape"},
        {"{\"a\":[]}", 0, "tensor not an object"},
        {"{\"__metadata__\":{\"k\":1}}", 0, "metadata value not a string"},
        {"{\"__metadata__\":[]}", 0, "metadata not an object"},
        {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, "two metadata"},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
         "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2, "duplicate name"},
        {"{}", 4, "data but no tensors"},
        {"", 0, "empty header"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *path = make_file("bad.safetensors", strlen(bad[i].header), bad[i].header,
                                     bad[i].n_data);
        CHECK(path != NULL);
        if (expect_format_error(path, bad[i].what) != TEST_PASS) return TEST_FAIL;
    }
    const char *h = "{}";
    /* header length beyond the file, beyond the 100 MB limit, and at 2^64 - 1 */
    CHECK(expect_format_error(make_file("b.st", 3, h, 0), "N > file") == TEST_PASS);
    CHECK(expect_format_error(make_file("b.st", 200u << 20, h, 0), "N > cap") == TEST_PASS);
    CHECK(expect_format_error(make_file("b.st", UINT64_MAX, h, 0), "N = max") == TEST_PASS);
    const char *path = tmp_path("short.safetensors"); /* truncated inside the length */
    CHECK(write_bytes(path, "\x02\x00\x00\x00\x00", 5) == 0);
    CHECK(expect_format_error(path, "truncated") == TEST_PASS);
    /* the JSON error carries a line and column inside the header */
    make_file("b.st", 4, "{\"a\"", 0);
    el_st_file *f;
    CHECK(el_st_open(tmp_path("b.st"), &f) == EL_ERR_FORMAT && strstr(el_last_error(), ":1:5:"));
    /* an empty file with no tensors is valid */
    CHECK(el_st_open(make_file("ok.st", 2, h, 0), &f) == EL_OK && f->n_tensors == 0);
    el_st_close(f);
    return TEST_PASS;
}

/* A dtype we do not know is refused when the tensor is used, not when the file is read. */
static int test_unknown_dtype(void) {
    const char *h = "{\"x\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]},"
                    "\"y\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[2,3]}}";
    const char *path = make_file("unk.safetensors", strlen(h), h, 3);
    el_st_file *f;
    CHECK(el_st_open(path, &f) == EL_OK);
    const el_st_tensor *t = el_st_find(f, "x");
    CHECK(t && t->dtype == EL_ST_UNKNOWN && strcmp(t->dtype_name, "F4") == 0 && t->nbytes == 2);
    CHECK(el_st_get(f, "x", &t) == EL_ERR_UNSUPPORTED && t == NULL);
    CHECK(strstr(el_last_error(), path) && strstr(el_last_error(), "F4"));
    CHECK(el_st_get(f, "y", &t) == EL_OK);
    el_st_close(f);
    return TEST_PASS;
}

static int test_writer_errors(void) {
    el_st_writer *w = el_st_writer_create();
    uint8_t buf[16] = {0};
    int64_t shape[1] = {4};
    CHECK(el_st_writer_add(w, "a", EL_ST_F32, 1, shape, buf, 15) == EL_ERR_INVALID_ARG);
    CHECK(el_st_writer_add(w, "a", EL_ST_UNKNOWN, 1, shape, buf, 4) == EL_ERR_INVALID_ARG);
    CHECK(el_st_writer_add(w, "a", EL_ST_U8, 1, (int64_t[]){-4}, buf, 0) == EL_ERR_INVALID_ARG);
    CHECK(el_st_writer_add(w, "__metadata__", EL_ST_U8, 1, shape, buf, 4) == EL_ERR_INVALID_ARG);
    CHECK(el_st_writer_add(w, "\xFF", EL_ST_U8, 1, shape, buf, 4) == EL_ERR_INVALID_ARG);
    CHECK(el_st_writer_add(w, "a", EL_ST_F32, 1, shape, buf, 16) == EL_OK);
    CHECK(el_st_writer_add(w, "a", EL_ST_U8, 1, shape, buf, 4) == EL_OK);
    CHECK(el_st_writer_write(w, tmp_path("dup.safetensors")) == EL_ERR_INVALID_ARG);
    el_st_writer_free(w);

    w = el_st_writer_create();
    CHECK(el_st_writer_add(w, "a", EL_ST_U8, 1, shape, buf, 4) == EL_OK);
    const char *path = tmp_path("no/such/dir/x.safetensors");
    CHECK(el_st_writer_write(w, path) == EL_ERR_IO && strstr(el_last_error(), path));
    el_st_writer_free(w);
    return TEST_PASS;
}

static const char *write_shard(const char *name, const char *const *tensors, int n) {
    el_st_writer *w = el_st_writer_create();
    for (int i = 0; i < n; i++)
        if (el_st_writer_add(w, tensors[i], EL_ST_U8, 1, (int64_t[]){2}, tensors[i], 2) != EL_OK)
            return NULL;
    const char *path = tmp_path(name);
    el_status st = el_st_writer_write(w, path);
    el_st_writer_free(w);
    return st == EL_OK ? path : NULL;
}

static int test_sharded(void) {
    /* each tensor's two bytes are the first two of its name */
    CHECK(write_shard("model-00001-of-00002.safetensors", (const char *[]){"w1", "b1", "zz"}, 3));
    CHECK(write_shard("model-00002-of-00002.safetensors", (const char *[]){"w2"}, 1));
    const char *idx = "{\"metadata\":{\"total_size\":8},\"weight_map\":{"
                      "\"w2\":\"model-00002-of-00002.safetensors\","
                      "\"w1\":\"model-00001-of-00002.safetensors\","
                      "\"b1\":\"model-00001-of-00002.safetensors\"}}";
    const char *path = tmp_path("model.safetensors.index.json");
    CHECK(write_bytes(path, idx, strlen(idx)) == 0);
    el_st_index *ix;
    CHECK(el_st_index_open(path, &ix) == EL_OK);
    CHECK(el_st_index_count(ix) == 3); /* "zz" is in a shard but not in the map */
    static const char *const sorted[] = {"b1", "w1", "w2"};
    for (size_t i = 0; i < 3; i++) {
        const el_st_tensor *t = el_st_index_at(ix, i);
        CHECK(t && strcmp(t->name, sorted[i]) == 0 && memcmp(t->data, sorted[i], 2) == 0);
        CHECK(el_st_index_find(ix, sorted[i]) == t);
    }
    CHECK(strstr(el_st_index_find(ix, "w2")->file->path, "model-00002-of-00002") != NULL);
    CHECK(el_st_index_find(ix, "zz") == NULL && el_st_index_at(ix, 3) == NULL);
    const el_st_tensor *t;
    CHECK(el_st_index_get(ix, "nope", &t) == EL_ERR_NOT_FOUND && strstr(el_last_error(), path));
    el_st_index_close(ix);

    /* one plain file through the same interface */
    CHECK(el_st_index_open(tmp_path("model-00001-of-00002.safetensors"), &ix) == EL_OK);
    CHECK(el_st_index_count(ix) == 3 && el_st_index_get(ix, "zz", &t) == EL_OK);
    el_st_index_close(ix);

    static const struct { const char *json; el_status st; } bad[] = {
        {"{\"weight_map\":{\"w3\":\"model-00002-of-00002.safetensors\"}}", EL_ERR_FORMAT},
        {"{\"weight_map\":{\"w1\":\"missing.safetensors\"}}", EL_ERR_IO},
        {"{\"weight_map\":{\"w1\":\"../model-00001-of-00002.safetensors\"}}", EL_ERR_FORMAT},
        {"{\"weight_map\":{\"w1\":3}}", EL_ERR_FORMAT},
        {"{\"weight_map\":{\"w1\":\"model-00001-of-00002.safetensors\","
         "\"w1\":\"model-00001-of-00002.safetensors\"}}", EL_ERR_FORMAT},
        {"{\"metadata\":{}}", EL_ERR_FORMAT},
        {"{\"weight_map\":", EL_ERR_FORMAT},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(write_bytes(path, bad[i].json, strlen(bad[i].json)) == 0);
        el_status st = el_st_index_open(path, &ix);
        if (st != bad[i].st) test_note("%s: %s", bad[i].json, el_last_error());
        CHECK(st == bad[i].st && ix == NULL && strstr(el_last_error(), path));
    }
    return TEST_PASS;
}

int main(void) {
    run_test("reference_example", test_reference_example);
    run_test("hand_made_file", test_hand_made_file);
    run_test("round_trip", test_round_trip);
    run_test("bad_files", test_bad_files);
    run_test("unknown_dtype", test_unknown_dtype);
    run_test("writer_errors", test_writer_errors);
    run_test("sharded", test_sharded);
    return tests_exit_code();
}
