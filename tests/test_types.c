/* test_types.c - the layout table (core/types.h) against the GGUF reader, ggml's sizes, the
 * type names and the kernel tables.
 *
 * The reader is asked about every id from 0 to 255 (well past the table), each in a file built
 * byte by byte here, so the ids it accepts come from the reader and not from the table; the
 * sizes of ggml's types are ggml.c's type_traits, written out below as the reference. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/types.h"
#include "formats/gguf.h"
#include "kernels/dispatch.h"
#include "kernels/types.h"
#include "testutil.h"

/* ggml's types (ggml.c type_traits: type_name, blck_size, type_size) and ours
 * (docs/formats.md), with the row header of our per-row types. */
static const struct {
    uint32_t id;
    const char *ggml_name;
    int64_t block_size;
    size_t type_size, row_header;
} reference[] = {
    {0, "f32", 1, 4, 0},         {1, "f16", 1, 2, 0},          {2, "q4_0", 32, 18, 0},
    {3, "q4_1", 32, 20, 0},      {6, "q5_0", 32, 22, 0},       {7, "q5_1", 32, 24, 0},
    {8, "q8_0", 32, 34, 0},      {9, "q8_1", 32, 36, 0},       {10, "q2_K", 256, 84, 0},
    {11, "q3_K", 256, 110, 0},   {12, "q4_K", 256, 144, 0},    {13, "q5_K", 256, 176, 0},
    {14, "q6_K", 256, 210, 0},   {15, "q8_K", 256, 292, 0},    {20, "iq4_nl", 32, 18, 0},
    {23, "iq4_xs", 256, 136, 0}, {24, "i8", 1, 1, 0},
    {25, "i16", 1, 2, 0},        {26, "i32", 1, 4, 0},         {27, "i64", 1, 8, 0},
    {28, "f64", 1, 8, 0},        {30, "bf16", 1, 2, 0},        {64, "a8", 32, 32, 8},
    {65, "w8", 32, 32, 4},       {66, "w4", 32, 16, 4},        {67, "w4g32", 32, 18, 0},
    {68, "w4g64", 64, 34, 0},    {69, "w4g128", 128, 66, 0},   {70, "w8a16", 32, 32, 4},
    {71, "a16", 32, 64, 4},
};
enum { N_REFERENCE = sizeof reference / sizeof reference[0] };

/* Elements of the one-row tensor each file holds: a multiple of every block size. */
enum { ROW = 256 };

typedef struct buf {
    uint8_t b[4096];
    size_t n;
} buf;

static void le(buf *b, uint64_t v, int n) {
    for (int i = 0; i < n; i++) b->b[b->n++] = (uint8_t)(v >> (8 * i));
}

/* A GGUF v3 file with no keys and one tensor "t" of ROW elements of type id, followed by
 * data_bytes zero bytes of data. */
static void one_tensor_file(buf *b, uint32_t id, size_t data_bytes) {
    b->n = 0;
    memcpy(b->b, "GGUF", 4);
    b->n = 4;
    le(b, 3, 4); /* version */
    le(b, 1, 8); /* tensors */
    le(b, 0, 8); /* keys */
    le(b, 1, 8); /* name length */
    b->b[b->n++] = 't';
    le(b, 1, 4);   /* dimensions */
    le(b, ROW, 8); /* ne[0] */
    le(b, id, 4);
    le(b, 0, 8);                        /* offset in the data section */
    while (b->n % 32) b->b[b->n++] = 0; /* general.alignment's default */
    memset(b->b + b->n, 0, data_bytes);
    b->n += data_bytes;
}

/* The reader accepts exactly the ids with a layout that may be stored (all but our activation
 * types), and sizes each tensor as the layout does. */
static int test_reader_accepts_the_layouts(void) {
    int accepted = 0;
    for (uint32_t id = 0; id < 256; id++) {
        const el_type_layout *l = el_type_layout_get(id);
        buf b;
        one_tensor_file(&b, id, l ? el_row_size((el_type)id, ROW) : 2048);
        gguf_file *f = NULL;
        el_status st = gguf_open_memory(b.b, b.n, "types", &f);
        bool storable = l && !l->run_time_only;
        if ((st == EL_OK) != storable) test_note("type id %u: reader says %d", id, (int)st);
        CHECK((st == EL_OK) == storable);
        CHECK(storable == (gguf_tensor_layout(id) != NULL));
        if (st == EL_OK) {
            accepted++;
            CHECK(f->n_tensors == 1 && f->tensors[0].type == id);
            CHECK(f->tensors[0].nbytes == el_row_size((el_type)id, ROW));
            gguf_close(f);
        }
    }
    /* every reference type but our two activation types */
    CHECK(accepted == N_REFERENCE - 2);
    return TEST_PASS;
}

/* Every layout row is ggml's (or docs/formats.md's), and there is no other row. */
static int test_layouts_match_ggml(void) {
    int rows = 0;
    for (uint32_t id = 0; id < 256; id++) rows += el_type_layout_get(id) != NULL;
    CHECK(rows == N_REFERENCE);
    for (int i = 0; i < N_REFERENCE; i++) {
        const el_type_layout *l = el_type_layout_get(reference[i].id);
        CHECK(l != NULL);
        if (strcmp(l->ggml_name, reference[i].ggml_name) != 0 ||
            l->block_size != reference[i].block_size || l->type_size != reference[i].type_size ||
            l->row_header != reference[i].row_header)
            test_note("type %u: %s %lld %zu %zu", reference[i].id, l->ggml_name,
                      (long long)l->block_size, l->type_size, l->row_header);
        CHECK(strcmp(l->ggml_name, reference[i].ggml_name) == 0);
        CHECK(l->block_size == reference[i].block_size);
        CHECK(l->type_size == reference[i].type_size);
        CHECK(l->row_header == reference[i].row_header);
        CHECK(l->run_time_only == (reference[i].id == EL_TYPE_A8 || reference[i].id == EL_TYPE_A16));
    }
    return TEST_PASS;
}

/* Both spellings of every name, in any case, parse to their id, and no two rows share one. */
static int test_names_round_trip(void) {
    for (uint32_t id = 0; id < EL_TYPE_COUNT; id++) {
        const el_type_layout *l = el_type_layout_get(id);
        if (!l) continue;
        CHECK(strcasecmp(l->ggml_name, l->name) == 0);
        for (const char *c = l->name; *c; c++) CHECK(!isupper((unsigned char)*c));
        char upper[16];
        size_t n = strlen(l->name);
        CHECK(n < sizeof upper);
        for (size_t i = 0; i <= n; i++) upper[i] = (char)toupper((unsigned char)l->name[i]);
        const char *spellings[] = {l->ggml_name, l->name, upper};
        for (int s = 0; s < 3; s++) {
            el_type t = EL_TYPE_COUNT;
            if (!el_type_from_name(spellings[s], &t) || t != (el_type)id)
                test_note("'%s' parses to %d, not %u", spellings[s], (int)t, id);
            CHECK(el_type_from_name(spellings[s], &t) && t == (el_type)id);
        }
    }
    el_type t;
    CHECK(el_type_from_name("W4A8", &t) && t == EL_TYPE_W4);
    CHECK(el_type_from_name("w8a8", &t) && t == EL_TYPE_W8);
    CHECK(!el_type_from_name("q4_9", &t) && !el_type_from_name("", &t));
    CHECK(!el_type_from_name(NULL, &t));
    return TEST_PASS;
}

/* The non-empty entries of a kernel table, each of whose type needs a layout row. */
static int check_kernel_table(const el_kernels *k) {
    for (uint32_t t = 0; t < EL_TYPE_COUNT; t++) {
        bool used = k->vec_dot[t] || k->quantize[t] || k->tile[t] || k->gemm[t] || k->gemv[t] ||
                    k->gemv_multi[t];
        if (used && !el_type_layout_get(t)) test_note("%s: type %u has no layout", k->isa, t);
        CHECK(!used || el_type_layout_get(t) != NULL);
        /* the products take weights of a type with reference kernels to be checked against */
        bool weight_entry = k->vec_dot[t] || k->tile[t] || k->gemm[t] || k->gemv[t] ||
                            k->gemv_multi[t];
        if (weight_entry && !el_type_is_weight((el_type)t))
            test_note("%s: type %u has products but is no weight type", k->isa, t);
        CHECK(!weight_entry || el_type_is_weight((el_type)t));
    }
    return TEST_PASS;
}

/* Every type the kernels know has a layout, and so has what it is dotted with. */
static int test_kernels_have_layouts(void) {
    for (uint32_t t = 0; t < 256; t++) {
        const el_type_kernels *k = el_type_kernels_get(t);
        if (!k) continue;
        CHECK(el_type_layout_get(t) != NULL);
        CHECK(k->to_float && k->from_float);
        CHECK(el_type_layout_get(k->vec_dot_type) != NULL);
        CHECK(el_type_kernels_get(k->vec_dot_type) != NULL);
    }
    el_kernels ref;
    el_kernels_reference(&ref);
    CHECK(check_kernel_table(&ref) == TEST_PASS);
    CHECK(check_kernel_table(el_kernels_get()) == TEST_PASS);
    /* every level this CPU runs, not only the one the dispatcher picks (the NEON ones under
     * qemu: make test-arm runs this test too) */
    for (size_t i = 0; el_kernels_level_name(i) != NULL; i++) {
        el_kernels k;
        if (!el_kernels_level(el_kernels_level_name(i), &k)) continue;
        CHECK(check_kernel_table(&k) == TEST_PASS);
        test_note("the %s table's entries all have layouts", el_kernels_level_name(i));
    }
    return TEST_PASS;
}

int main(void) {
    run_test("reader_accepts_the_layouts", test_reader_accepts_the_layouts);
    run_test("layouts_match_ggml", test_layouts_match_ggml);
    run_test("names_round_trip", test_names_round_trip);
    run_test("kernels_have_layouts", test_kernels_have_layouts);
    return tests_exit_code();
}
