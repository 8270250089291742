/* str_index.c - an open-addressing (linear probing) index from byte strings to the ids of a
 * table its owner keeps (vocab.h). Slots hold ids only: a probe fetches the id's key from the
 * owner to compare, which costs a little time on collisions and saves 20 bytes per slot. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/vocab.h"

el_status el_str_index_init(el_str_index *ix, size_t n, el_str_key_fn key, const void *owner) {
    size_t cap = 16;
    while (cap < n * 2) cap *= 2; /* load factor at most 1/2 */
    *ix = (el_str_index){.slots = malloc(cap * sizeof *ix->slots), .cap = cap, .key = key,
                         .owner = owner};
    if (!ix->slots) {
        *ix = (el_str_index){0};
        return el_error(EL_ERR_NOMEM, "string index: out of memory for %zu slots", cap);
    }
    memset(ix->slots, 0xff, cap * sizeof *ix->slots); /* every slot -1 */
    return EL_OK;
}

void el_str_index_free(el_str_index *ix) {
    free(ix->slots);
    *ix = (el_str_index){0};
}

/* The slot holding the id whose key is (key, len), or the empty slot where it would go. */
static size_t str_index_find(const el_str_index *ix, const char *key, size_t len) {
    size_t mask = ix->cap - 1;
    size_t i = (size_t)el_str_hash(key, len) & mask;
    for (; ix->slots[i] >= 0; i = (i + 1) & mask) {
        size_t klen;
        const char *k = ix->key(ix->owner, ix->slots[i], &klen);
        if (klen == len && (len == 0 || memcmp(k, key, len) == 0)) return i;
    }
    return i;
}

/* The slot for id: the one holding an id with the same key, or the empty one where id goes. */
static el_status str_index_slot(const el_str_index *ix, int32_t id, size_t *slot) {
    if (id < 0 || (ix->n + 1) * 2 > ix->cap)
        return el_error(EL_ERR_INVALID_ARG, "string index: id %d does not fit (%zu slots, %zu "
                        "used)", (int)id, ix->cap, ix->n);
    size_t len;
    const char *key = ix->key(ix->owner, id, &len);
    *slot = str_index_find(ix, key, len);
    return EL_OK;
}

el_status el_str_index_put(el_str_index *ix, int32_t id) {
    size_t i;
    el_status st = str_index_slot(ix, id, &i);
    if (st != EL_OK) return st;
    if (ix->slots[i] < 0) ix->n++;
    ix->slots[i] = id;
    return EL_OK;
}

el_status el_str_index_put_first(el_str_index *ix, int32_t id, bool *inserted) {
    size_t i;
    el_status st = str_index_slot(ix, id, &i);
    if (st != EL_OK) return st;
    *inserted = ix->slots[i] < 0;
    if (*inserted) {
        ix->slots[i] = id;
        ix->n++;
    }
    return EL_OK;
}

int32_t el_str_index_get(const el_str_index *ix, const char *key, size_t len) {
    if (ix->cap == 0) return -1;
    return ix->slots[str_index_find(ix, key, len)];
}
