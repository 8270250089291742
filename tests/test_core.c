/* test_core.c - error messages, read-only file mapping and memory in 2 MB pages. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mapfile.h"
#include "core/pages.h"
#include "testutil.h"

static int test_error_message(void) {
    CHECK(el_error(EL_ERR_FORMAT, "%s: bad %d", "f.gguf", 7) == EL_ERR_FORMAT);
    CHECK(strcmp(el_last_error(), "f.gguf: bad 7") == 0);
    el_error_prefix("loading %s", "x");
    CHECK(strcmp(el_last_error(), "loading x: f.gguf: bad 7") == 0);
    CHECK(strcmp(el_status_name(EL_ERR_NOMEM), "out of memory") == 0);
    CHECK(strcmp(el_status_name(EL_ERR_CANCELLED), "cancelled") == 0);
    return TEST_PASS;
}

static int test_map_file(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/a.bin", test_tmp_dir());
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    fputs("hello", f);
    fclose(f);
    el_mapped_file m;
    CHECK(el_map_file(path, &m) == EL_OK);
    CHECK(m.size == 5 && memcmp(m.data, "hello", 5) == 0);
    el_unmap_file(&m);
    CHECK(el_map_file("/nonexistent/file", &m) == EL_ERR_IO);
    CHECK(strstr(el_last_error(), "/nonexistent/file") != NULL);
    CHECK(el_map_file(test_tmp_dir(), &m) == EL_ERR_IO); /* a directory */
    return TEST_PASS;
}

/* Small arrays are plain malloc'd; from 2 MB on they start on a 2 MB boundary; every byte asked
 * for is usable (ASan checks the bounds); an impossible size is NULL, not a wrapped round-up. */
static int test_alloc_pages(void) {
    static const size_t sizes[] = {0, 1, 4096, (2u << 20) - 1, 2u << 20, (2u << 20) + 1, 5u << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *p = el_alloc_pages(sizes[i]);
        CHECK(p != NULL);
        if (sizes[i] >= (2u << 20)) CHECK((uintptr_t)p % (2u << 20) == 0);
        memset(p, 0xA5, sizes[i]);
        CHECK(sizes[i] == 0 || (p[0] == 0xA5 && p[sizes[i] - 1] == 0xA5));
        free(p);
    }
    CHECK(el_alloc_pages(SIZE_MAX) == NULL);
    CHECK(el_alloc_pages(SIZE_MAX - (1u << 20)) == NULL);
    return TEST_PASS;
}

int main(void) {
    run_test("error_message", test_error_message);
    run_test("map_file", test_map_file);
    run_test("alloc_pages", test_alloc_pages);
    return tests_exit_code();
}
