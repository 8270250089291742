/* mapfile.h - a whole file mapped read-only into memory. */
#ifndef EL_CORE_MAPFILE_H
#define EL_CORE_MAPFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgelora.h"

typedef struct el_mapped_file {
    const uint8_t *data; /* PROT_READ: writing through it faults */
    size_t size;
} el_mapped_file;

/* Files from this size on are mapped for 2 MB pages: a decode step streams them from DRAM, so
 * their page size shows in the speed (docs/bench.md, "Page size"). */
enum { EL_MAP_HUGE_FILE_BYTES = 64 << 20 };

/* Maps path read-only. An empty file maps to data == NULL, size == 0. Errors name the file.
 * Nothing is read yet: pages come in as they are touched, so a reader of parts of a file
 * (a pruned model) makes only those resident. The kernel is asked for 2 MB pages, and a file
 * of EL_MAP_HUGE_FILE_BYTES or more starts on a 2 MB boundary, which a 2 MB page needs. */
el_status el_map_file(const char *path, el_mapped_file *out);

/* For a caller that reads all of m (path: the file it maps): from EL_MAP_HUGE_FILE_BYTES on,
 * reads the whole file in now (MADV_POPULATE_READ), in 2 MB pages where the page cache holds
 * or the kernel reads it so. If under half of it came in 2 MB pages and reload is set, the file
 * is in the page cache in small pages (written or copied, docs/bench.md): it is synced, its
 * clean cached pages that no process maps are dropped (POSIX_FADV_DONTNEED: every reader of
 * the file reads them from disk again) and it is read back in, in 2 MB folios. A hint
 * throughout: nothing fails. Returns the bytes of m in 2 MB pages afterwards. */
size_t el_map_populate(const el_mapped_file *m, const char *path, bool reload);

void el_unmap_file(el_mapped_file *m);

#endif
