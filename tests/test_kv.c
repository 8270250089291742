/* test_kv.c - KV cache cells: allocation, visibility bits, sharing, removal, fullness. The
 * expected states are worked out by hand in the comments. */
#include "model/kv_cache.h"
#include "testutil.h"

static int test_alloc_and_remove(void) {
    el_kv_cache c;
    CHECK(el_kv_cache_init(&c, 2, 8, 3, 2, 2, 3) == EL_OK); /* 2 kv heads: K 2, V 3 floats */
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
    /* [layer][head][cell][dim]: a head's cells are consecutive, then the next head's, layer */
    CHECK(el_kv_cell_k(&c, 0, 0, 3) - el_kv_cell_k(&c, 0, 0, 2) == 2);
    CHECK(el_kv_cell_k(&c, 0, 1, 0) - el_kv_cell_k(&c, 0, 0, 0) == 8 * 2);
    CHECK(el_kv_cell_k(&c, 1, 0, 0) - el_kv_cell_k(&c, 0, 0, 0) == 2 * 8 * 2);
    CHECK(el_kv_cell_v(&c, 0, 0, 3) - el_kv_cell_v(&c, 0, 0, 2) == 3);
    CHECK(el_kv_cell_v(&c, 1, 1, 7) + 3 - c.v == 2 * 2 * 8 * 3); /* the last one ends the block */
    el_kv_cache_free(&c);
    return TEST_PASS;
}

static int test_share(void) {
    el_kv_cache c;
    CHECK(el_kv_cache_init(&c, 1, 6, 70, 1, 2, 2) == EL_OK); /* 70 sequences: two bitset words */
    for (int i = 0; i < 4; i++)
        el_kv_cache_occupy(&c, i, i, 0);
    /* share positions [0, 3) of seq 0 with seq 65 */
    el_kv_cache_seq_share(&c, 0, 65, 0, 3);
    CHECK(el_kv_cell_has_seq(&c, 0, 65) && el_kv_cell_has_seq(&c, 2, 65));
    CHECK(!el_kv_cell_has_seq(&c, 3, 65) && !el_kv_cell_has_seq(&c, 0, 1));
    CHECK(el_kv_cache_seq_pos_max(&c, 65) == 2 && c.n_used == 4);
    /* removing seq 0 everywhere keeps the cells seq 65 still sees */
    el_kv_cache_seq_remove(&c, 0, 0, -1);
    CHECK(c.n_used == 3 && c.pos[3] == -1 && c.pos[0] == 0);
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
    return tests_exit_code();
}
