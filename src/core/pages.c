/* pages.c - memory in 2 MB pages (pages.h). */
#include "core/pages.h"

#include <stdlib.h>
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
