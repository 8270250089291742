/* test_kv.c - KV cache cells: allocation, visibility bits, sharing, removal, fullness, and the
 * layout of either element type. The expected states are worked out by hand in the comments. */
#include "model/kv_cache.h"
#include "testutil.h"

static int test_alloc_and_remove(void) {
    el_kv_cache c;
    CHECK(el_kv_cache_init(&c, EL_TYPE_F32, 2, 8, 3, 2, 2, 3) == EL_OK); /* 2 kv heads: K 2, V 3 */
    CHECK(c.n_used == 0 && el_kv_cache_seq_pos_max(&c, 0) == -1);
    int32_t cells[8];
    CHECK(el_kv_cache_find_free(&c, 5, cells));
    for (int i = 0; i < 5; i++) {
        CHECK(cells[i] == i); /* lowest first */
        el_kv_cache_occupy(&c, cells[i], i, 0);
    }
    CHECK(c.n_used == 5 && el_kv_cache_seq_pos_max(&c, 0) == 4);
    CHECK(!el_kv_cache_find_free(&c, 4, cells)); /* only 3 left */
    CHECK(el_kv_cache_find_free(&c, 3, cells) && cells[0] == 5 && cells[2] == 7);
    /* remove positions [1, 3) of seq 0: cells 1 and 2 become free */
    el_kv_cache_seq_remove(&c, 0, 1, 3);
    CHECK(c.n_used == 3 && c.pos[1] == -1 && c.pos[2] == -1 && c.pos[3] == 3);
    CHECK(el_kv_cache_find_free(&c, 2, cells) && cells[0] == 1 && cells[1] == 2);
    el_kv_cache_free(&c);
    return TEST_PASS;
}

/* Elements of the cache's type from b to a. */
static ptrdiff_t elems(const el_kv_cache *c, const void *a, const void *b) {
    return ((const char *)a - (const char *)b) / (ptrdiff_t)c->elem;
}

/* [layer][head][cell][dim] in elements of either type, and the bytes a cell holds: 2 layers x
 * 2 kv heads x (2 + 3) elements of 4 or 2 bytes. Other types are refused. */
static int test_layout(void) {
    static const el_type types[] = {EL_TYPE_F32, EL_TYPE_F16};
    static const size_t elem[] = {4, 2};
    for (int t = 0; t < 2; t++) {
        el_kv_cache c;
        CHECK(el_kv_cache_init(&c, types[t], 2, 8, 3, 2, 2, 3) == EL_OK);
        CHECK(c.elem == elem[t] && el_kv_cache_cell_bytes(&c) == 2 * 2 * (2 + 3) * elem[t]);
        /* a head's cells are consecutive, then the next head's, then the next layer's */
        CHECK(elems(&c, el_kv_cell_k(&c, 0, 0, 3), el_kv_cell_k(&c, 0, 0, 2)) == 2);
        CHECK(elems(&c, el_kv_cell_k(&c, 0, 1, 0), el_kv_cell_k(&c, 0, 0, 0)) == 8 * 2);
        CHECK(elems(&c, el_kv_cell_k(&c, 1, 0, 0), el_kv_cell_k(&c, 0, 0, 0)) == 2 * 8 * 2);
        CHECK(elems(&c, el_kv_cell_v(&c, 0, 0, 3), el_kv_cell_v(&c, 0, 0, 2)) == 3);
        /* the last one ends the block */
        CHECK(elems(&c, el_kv_cell_v(&c, 1, 1, 7), c.v) + 3 == 2 * 2 * 8 * 3);
        el_kv_cache_free(&c);
    }
    el_kv_cache c;
    CHECK(el_kv_cache_init(&c, EL_TYPE_Q8_0, 2, 8, 3, 2, 2, 3) == EL_ERR_INVALID_ARG);
    CHECK(el_kv_cache_init(&c, EL_TYPE_BF16, 2, 8, 3, 2, 2, 3) == EL_ERR_INVALID_ARG);
    return TEST_PASS;
}

static int test_share(void) {
    el_kv_cache c;
    CHECK(el_kv_cache_init(&c, EL_TYPE_F32, 1, 6, 70, 1, 2, 2) == EL_OK); /* 70 sequences: 2 words */
    for (int i = 0; i < 4; i++)
        el_kv_cache_occupy(&c, i, i, 0);
    /* share positions [0, 3) of seq 0 with seq 65 */
    el_kv_cache_seq_share(&c, 0, 65, 0, 3);
    CHECK(el_kv_cell_has_seq(&c, 0, 65) && el_kv_cell_has_seq(&c, 2, 65));
    CHECK(!el_kv_cell_has_seq(&c, 3, 65) && !el_kv_cell_has_seq(&c, 0, 1));
    CHECK(el_kv_cache_seq_pos_max(&c, 65) == 2 && c.n_used == 4);
    /* cells 0-2 are seen by 0 and 65, cell 3 by 0 alone: [1, 65) sees none, [1, 66) three,
     * [0, 1) all four, [65, 70) three */
    CHECK(el_kv_cache_seqs_cells(&c, 1, 65) == 0 && el_kv_cache_seqs_cells(&c, 1, 66) == 3);
    CHECK(el_kv_cache_seqs_cells(&c, 0, 1) == 4 && el_kv_cache_seqs_cells(&c, 65, 70) == 3);
    /* removing seq 0 everywhere keeps the cells seq 65 still sees */
    el_kv_cache_seq_remove(&c, 0, 0, -1);
    CHECK(c.n_used == 3 && c.pos[3] == -1 && c.pos[0] == 0);
    CHECK(el_kv_cache_seqs_cells(&c, 0, 65) == 0 && el_kv_cache_seqs_cells(&c, 0, 70) == 3);
    CHECK(el_kv_cache_seq_pos_max(&c, 0) == -1 && el_kv_cache_seq_pos_max(&c, 65) == 2);
    el_kv_cache_seq_remove(&c, 65, 0, -1);
    CHECK(c.n_used == 0);
    el_kv_cache_occupy(&c, 5, 9, 69);
    el_kv_cache_clear(&c);
    CHECK(c.n_used == 0 && el_kv_cache_seq_pos_max(&c, 69) == -1);
    el_kv_cache_free(&c);
    return TEST_PASS;
}

int main(void) {
    run_test("alloc_and_remove", test_alloc_and_remove);
    run_test("share", test_share);
    run_test("layout", test_layout);
    return tests_exit_code();
}
