/* arena.h - the activations of one training step: a bump allocator over chunks that are kept
 * from step to step (each step asks for the same sizes in the same order, so after the first
 * step nothing is allocated), with marks to release the temporaries of one layer's backward. */
#ifndef EL_VISION_ARENA_H
#define EL_VISION_ARENA_H

#include <stddef.h>

#include "edgelora.h"

typedef struct el_arena_chunk {
    float *p;
    size_t cap, used; /* floats */
} el_arena_chunk;

typedef struct el_arena {
    el_arena_chunk *c;
    int n, cur;
    bool failed; /* an allocation failed: the step's results are not to be used */
} el_arena;

typedef struct el_arena_mark {
    int cur;
    size_t used;
} el_arena_mark;

/* n floats, zeroed; NULL when out of memory, which also sets a->failed (callers check it once
 * per step). */
float *el_arena_zalloc(el_arena *a, size_t n);
/* n floats, uninitialized. */
float *el_arena_alloc(el_arena *a, size_t n);
el_arena_mark el_arena_get_mark(const el_arena *a);
void el_arena_release(el_arena *a, el_arena_mark m);
/* Everything free for the next step (the chunks stay). */
void el_arena_reset(el_arena *a);
void el_arena_free(el_arena *a);

#endif
