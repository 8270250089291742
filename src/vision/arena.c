/* arena.c - the chunked bump allocator of arena.h. */
#include "vision/arena.h"

#include <stdlib.h>
#include <string.h>

/* Chunks of at least this many floats, so that the small tensors of a step share a few. */
static const size_t min_chunk = (size_t)1 << 20;

float *el_arena_alloc(el_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15; /* 64-byte steps keep every tensor aligned like its chunk */
    while (a->cur < a->n) {
        el_arena_chunk *c = &a->c[a->cur];
        if (c->cap - c->used >= n) {
            float *p = c->p + c->used;
            c->used += n;
            return p;
        }
        if (++a->cur < a->n) a->c[a->cur].used = 0;
    }
    el_arena_chunk *grown = realloc(a->c, (size_t)(a->n + 1) * sizeof *grown);
    if (!grown) {
        a->failed = true;
        return NULL;
    }
    a->c = grown;
    size_t cap = n > min_chunk ? n : min_chunk;
    float *p = aligned_alloc(64, cap * sizeof *p);
    if (!p) {
        a->failed = true;
        return NULL;
    }
    a->c[a->n] = (el_arena_chunk){p, cap, n};
    a->cur = a->n++;
    return p;
}

float *el_arena_zalloc(el_arena *a, size_t n) {
    float *p = el_arena_alloc(a, n);
    if (p) memset(p, 0, n * sizeof *p);
    return p;
}

el_arena_mark el_arena_get_mark(const el_arena *a) {
    return (el_arena_mark){a->cur, a->cur < a->n ? a->c[a->cur].used : 0};
}

void el_arena_release(el_arena *a, el_arena_mark m) {
    a->cur = m.cur;
    if (m.cur < a->n) a->c[m.cur].used = m.used;
}

void el_arena_reset(el_arena *a) {
    a->cur = 0;
    if (a->n) a->c[0].used = 0;
    a->failed = false;
}

void el_arena_free(el_arena *a) {
    for (int i = 0; i < a->n; i++) free(a->c[i].p);
    free(a->c);
    *a = (el_arena){0};
}
