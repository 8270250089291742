/* mapfile.c - read-only mmap of a whole file. */
#include "core/mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/pages.h"

enum { HUGE_PAGE = 2 << 20 };

/* size bytes of fd mapped at a 2 MB boundary: a 2 MB page maps 2 MB of the file from an offset
 * that is a multiple of 2 MB, so the file's offset 0 must sit on a boundary (ext4 and xfs place
 * large mappings so already; other filesystems need not). Reserves 2 MB more address space
 * than the file, maps the file over its first boundary and gives back the rest. */
static void *map_aligned(int fd, size_t size) {
    size_t span = size + HUGE_PAGE;
    uint8_t *r = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) return MAP_FAILED;
    uint8_t *a = (uint8_t *)(((uintptr_t)r + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE);
    if (mmap(a, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
        int e = errno;
        munmap(r, span);
        errno = e;
        return MAP_FAILED;
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *end = a + (size + page - 1) / page * page;
    if (a > r) munmap(r, (size_t)(a - r));
    if (r + span > end) munmap(end, (size_t)(r + span - end));
    return a;
}

el_status el_map_file(const char *path, el_mapped_file *out) {
    out->data = NULL;
    out->size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return el_error(EL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return el_error(EL_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return el_error(EL_ERR_IO, "%s: not a regular file", path);
    }
    if (st.st_size > 0) {
        size_t size = (size_t)st.st_size;
        void *p = size >= EL_MAP_HUGE_FILE_BYTES
                      ? map_aligned(fd, size)
                      : mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return el_error(EL_ERR_IO, "%s: cannot map: %s", path, strerror(e));
        }
        /* Ask for 2 MB pages: where the kernel fills the page cache with 2 MB folios (it does
         * for a mapping with this advice, ext4 on Linux 6.18) it then maps them whole, and a
         * decode step's walk over ~700 MB of weights stops missing the TLB every 4 KB (1B
         * shape, 1 thread: 31 -> 38 tok/s). Files already cached in small pages stay so
         * (el_map_populate's reload is for them). */
        (void)madvise(p, size, MADV_HUGEPAGE);
        out->data = p;
        out->size = size;
    }
    close(fd); /* the mapping keeps the file alive */
    return EL_OK;
}

size_t el_map_populate(const el_mapped_file *m, const char *path, bool reload) {
    if (m->size < EL_MAP_HUGE_FILE_BYTES) return el_huge_file_bytes(m->data, m->size);
    void *p = (void *)m->data;
    /* Linux before 5.14 has no MADV_POPULATE_READ: the pages then come as they are touched */
    if (madvise(p, m->size, MADV_POPULATE_READ) != 0) return el_huge_file_bytes(p, m->size);
    size_t huge = el_huge_file_bytes(p, m->size);
    if (!reload || huge >= m->size / 2) return huge;
    /* The page cache holds the file in small pages, and they stay so while cached: the kernel
     * maps a page-cache folio as it is, and MADV_COLLAPSE cannot merge a file's folios without
     * CONFIG_READ_ONLY_THP_FOR_FS (EINVAL on this 6.18 kernel). So read it again: synced
     * first, since dirty pages (a fresh `cp`) cannot be dropped; our own mapping of the pages
     * released, then the clean ones nobody maps dropped, and a populate through a mapping
     * with MADV_HUGEPAGE reads them back in 2 MB folios. A page another process maps stays,
     * in its small page. (Should path name another file by now, that one's unmapped cache is
     * what goes, and ours stays as it was.) */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return huge;
    (void)fdatasync(fd);
    (void)madvise(p, m->size, MADV_DONTNEED);
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    (void)madvise(p, m->size, MADV_POPULATE_READ);
    return el_huge_file_bytes(p, m->size);
}

void el_unmap_file(el_mapped_file *m) {
    if (m->data) munmap((void *)m->data, m->size);
    m->data = NULL;
    m->size = 0;
}
