/* hash.h - FNV-1a, 64 bits: a checksum that tells a damaged or different file from the right one
 * (not a defence against a crafted one), simple to recompute anywhere. */
#ifndef EL_CORE_HASH_H
#define EL_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

static const uint64_t el_fnv_offset = 0xcbf29ce484222325ull;

/* h: el_fnv_offset to start, or the value so far to continue. */
static inline uint64_t el_fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

#endif
