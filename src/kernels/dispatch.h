/* dispatch.h - the kernels in use, chosen once at start-up from the CPU's features.
 *
 * The traits table (types.h) holds the portable reference kernels; this table starts as a copy
 * of it and per-ISA files (avx2.c) replace the entries they do faster. EL_FORCE_REFERENCE=1 in
 * the environment keeps the reference kernels (to compare or to debug). */
#ifndef EL_KERNELS_DISPATCH_H
#define EL_KERNELS_DISPATCH_H

#include <stdbool.h>

#include "kernels/types.h"

typedef struct el_kernels {
    const char *isa;                      /* "reference", "avx2" */
    el_vec_dot_fn vec_dot[EL_TYPE_COUNT]; /* by weight type; NULL where the type has none */
} el_kernels;

/* The table in use; filled on first call (thread-safe), constant afterwards. */
const el_kernels *el_kernels_get(void);

/* Fills k with the reference kernels of the traits table. */
void el_kernels_reference(el_kernels *k);

/* Replaces entries of k with AVX2 kernels and returns true if they were built in and this CPU
 * has AVX2, FMA and F16C; otherwise leaves k alone and returns false. */
bool el_kernels_avx2(el_kernels *k);

#endif
