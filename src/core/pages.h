/* pages.h - memory in 2 MB pages, for the big arrays a decode step walks through. */
#ifndef EL_CORE_PAGES_H
#define EL_CORE_PAGES_H

#include <stddef.h>

/* bytes of memory (uninitialized) for a large array that is read over and over: if bytes is at
 * least one 2 MB page, aligned to 2 MB and rounded up to whole ones, with the kernel asked to
 * back it with 2 MB pages (a hint; Linux's transparent huge pages in "madvise" mode take it),
 * so that a walk over it misses the TLB every 2 MB instead of every 4 KB; smaller, plain
 * malloc. Either way freed with free(); NULL if out of memory. Pages come whole when first
 * touched: 2 MB of resident memory for the first byte written in each. */
void *el_alloc_pages(size_t bytes);

/* Bytes of this process's file mappings that the kernel maps with 2 MB pages (Linux:
 * FilePmdMapped in /proc/self/smaps), summed over the mappings that overlap [p, p + n): a
 * mapped file's own figure, or with p = NULL and n = SIZE_MAX the whole process's. 0 where the
 * system cannot say. */
size_t el_huge_file_bytes(const void *p, size_t n);

#endif
