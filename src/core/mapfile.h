/* mapfile.h - a whole file mapped read-only into memory. */
#ifndef EL_CORE_MAPFILE_H
#define EL_CORE_MAPFILE_H

#include <stddef.h>
#include <stdint.h>

#include "edgelora.h"

typedef struct el_mapped_file {
    const uint8_t *data; /* PROT_READ: writing through it faults */
    size_t size;
} el_mapped_file;

/* Maps path read-only. An empty file maps to data == NULL, size == 0. Errors name the file. */
el_status el_map_file(const char *path, el_mapped_file *out);
void el_unmap_file(el_mapped_file *m);

#endif
