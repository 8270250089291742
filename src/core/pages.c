/* pages.c - memory in 2 MB pages (pages.h). */
#include "core/pages.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { HUGE_PAGE = 2 << 20 };

void *el_alloc_pages(size_t bytes) {
    if (bytes < HUGE_PAGE) return malloc(bytes > 0 ? bytes : 1);
    if (bytes > (size_t)-1 - HUGE_PAGE) return NULL;
    size_t whole = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    void *p = aligned_alloc(HUGE_PAGE, whole);
#ifdef MADV_HUGEPAGE
    if (p) (void)madvise(p, whole, MADV_HUGEPAGE);
#endif
    return p;
}

size_t el_huge_file_bytes(const void *p, size_t n) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return 0;
    uintptr_t lo = (uintptr_t)p, hi = n > UINTPTR_MAX - lo ? UINTPTR_MAX : lo + n;
    char line[256];
    bool line_start = true, in = false;
    unsigned long long a, b, kb, total = 0;
    while (fgets(line, sizeof line, f)) {
        /* a mapping's header line ("lo-hi perms offset dev inode path") starts its fields; a
         * path longer than the buffer comes in pieces, which are not line starts */
        bool start = line_start;
        line_start = strchr(line, '\n') != NULL;
        if (!start) continue;
        if (sscanf(line, "%llx-%llx ", &a, &b) == 2)
            in = a < hi && b > lo;
        else if (in && sscanf(line, "FilePmdMapped: %llu kB", &kb) == 1)
            total += kb;
    }
    fclose(f);
    return (size_t)total * 1024;
}
