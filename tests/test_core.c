/* test_core.c - error messages and read-only file mapping. */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/mapfile.h"
#include "testutil.h"

static int test_error_message(void) {
    CHECK(el_error(EL_ERR_FORMAT, "%s: bad %d", "f.gguf", 7) == EL_ERR_FORMAT);
    CHECK(strcmp(el_last_error(), "f.gguf: bad 7") == 0);
    el_error_prefix("loading %s", "x");
    CHECK(strcmp(el_last_error(), "loading x: f.gguf: bad 7") == 0);
    CHECK(strcmp(el_status_name(EL_ERR_NOMEM), "out of memory") == 0);
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

int main(void) {
    run_test("error_message", test_error_message);
    run_test("map_file", test_map_file);
    return tests_exit_code();
}
