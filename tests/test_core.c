/* test_core.c - error messages, read-only file mapping and memory in 2 MB pages. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

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

/* Why this system cannot give a file mapping 2 MB pages, or NULL if it can: transparent huge
 * pages off, a kernel that does not count them, or a test folder on tmpfs (whose files are
 * shared memory, with huge pages of their own setting). */
static const char *no_file_huge_pages(void) {
    size_t n;
    char *thp = test_read_file("/sys/kernel/mm/transparent_hugepage/enabled", &n);
    bool never = !thp || strstr(thp, "[never]");
    free(thp);
    if (never) return "transparent huge pages are off (or absent)";
    char *smaps = test_read_file("/proc/self/smaps", &n);
    bool counted = smaps && strstr(smaps, "FilePmdMapped:");
    free(smaps);
    if (!counted) return "/proc/self/smaps has no FilePmdMapped";
    struct statfs fs;
    if (statfs(test_tmp_dir(), &fs) != 0 || fs.f_type == 0x01021994 /* TMPFS_MAGIC */)
        return "the test folder is on tmpfs";
    return NULL;
}

static uint64_t pattern_word(uint64_t i) { return (i + 1) * 0x9E3779B97F4A7C15ull; }

/* n bytes of a plain mapping of path (no advice), read whole: the bytes of it the kernel maps
 * with 2 MB pages, as the page cache holds the file now. */
static size_t plain_map_huge_bytes(const char *path, size_t n) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return SIZE_MAX;
    const volatile uint8_t *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return SIZE_MAX;
    uint8_t sum = 0;
    for (size_t i = 0; i < n; i += 4096) sum ^= p[i];
    (void)sum;
    size_t huge = el_huge_file_bytes((const void *)p, n);
    munmap((void *)p, n);
    return huge;
}

/* An 80 MB file just written sits in the page cache in 4 KB pages: a plain mapping of it gets
 * no 2 MB page. el_map_file with el_map_populate's reload reads it in again, in 2 MB pages for
 * most of it, with the contents written; without reload it stays as it was. The page cache
 * itself changed: a plain mapping made afterwards gets the 2 MB pages too. */
static int test_map_file_huge_pages(void) {
    const char *why = no_file_huge_pages();
    if (why) return test_skip(why);
    enum { N = 80 << 20 };
    char path[512];
    snprintf(path, sizeof path, "%s/big.bin", test_tmp_dir());
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    static uint64_t chunk[1 << 16];
    for (uint64_t done = 0; done < N / 8; done += 1 << 16) {
        for (uint64_t i = 0; i < 1 << 16; i++) chunk[i] = pattern_word(done + i);
        CHECK(fwrite(chunk, sizeof chunk, 1, f) == 1);
    }
    CHECK(fclose(f) == 0);

    size_t before = plain_map_huge_bytes(path, N);
    test_note("plain mapping of the written file: %zu of %d bytes in 2 MB pages", before, N);
    CHECK(before < N / 2);

    el_mapped_file m;
    CHECK(el_map_file(path, &m) == EL_OK);
    CHECK(m.size == N && (uintptr_t)m.data % (2u << 20) == 0);
    size_t kept = el_map_populate(&m, path, false);
    size_t reloaded = el_map_populate(&m, path, true);
    size_t after = plain_map_huge_bytes(path, N);
    test_note("el_map_populate without reload: %zu, with: %zu; a plain mapping then: %zu", kept,
              reloaded, after);
    CHECK(kept < N / 2);
    CHECK(reloaded >= N / 4 * 3 && reloaded <= N && reloaded % (2u << 20) == 0);
    CHECK(after >= N / 4 * 3);
    const uint64_t *w = (const uint64_t *)m.data;
    size_t bad = 0;
    for (uint64_t i = 0; i < N / 8; i++) bad += w[i] != pattern_word(i);
    CHECK(bad == 0);
    el_unmap_file(&m);
    CHECK(el_huge_file_bytes(w, N) == 0); /* unmapped: counted nowhere */
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
    run_test("map_file_huge_pages", test_map_file_huge_pages);
    run_test("alloc_pages", test_alloc_pages);
    return tests_exit_code();
}
