/* strmap.c - an open-addressing (linear probing) map from byte strings to int32 values, and the
 * growable token list. Keys are referenced, not copied: the vocabulary owns their storage. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/vocab.h"

/* A stored hash of 0 marks an empty slot, so a key that hashes to 0 is stored as 1 (it only costs
 * a string compare on a collision). */
uint64_t el_str_hash(const char *key, size_t len) {
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)key[i];
        h *= 1099511628211ull;
    }
    return h ? h : 1;
}

static el_status strmap_alloc(el_strmap *m, size_t cap) {
    m->hashes = calloc(cap, sizeof *m->hashes);
    m->keys = malloc(cap * sizeof *m->keys);
    m->key_lens = malloc(cap * sizeof *m->key_lens);
    m->values = malloc(cap * sizeof *m->values);
    m->cap = cap;
    m->n = 0;
    if (!m->hashes || !m->keys || !m->key_lens || !m->values) {
        el_strmap_free(m);
        return el_error(EL_ERR_NOMEM, "string map: out of memory for %zu slots", cap);
    }
    return EL_OK;
}

el_status el_strmap_init(el_strmap *m, size_t expected) {
    size_t cap = 16;
    while (cap < expected * 2) cap *= 2; /* load factor at most 1/2 */
    return strmap_alloc(m, cap);
}

void el_strmap_free(el_strmap *m) {
    free(m->hashes);
    free(m->keys);
    free(m->key_lens);
    free(m->values);
    memset(m, 0, sizeof *m);
}

/* The slot holding key, or the empty slot where it would go. */
static size_t strmap_find(const el_strmap *m, uint64_t h, const char *key, size_t len) {
    size_t mask = m->cap - 1;
    size_t i = (size_t)h & mask;
    while (m->hashes[i] != 0) {
        if (m->hashes[i] == h && m->key_lens[i] == len &&
            (len == 0 || memcmp(m->keys[i], key, len) == 0)) {
            return i;
        }
        i = (i + 1) & mask;
    }
    return i;
}

static el_status strmap_grow(el_strmap *m) {
    el_strmap old = *m;
    el_status st = strmap_alloc(m, old.cap * 2);
    if (st != EL_OK) {
        *m = old;
        return st;
    }
    for (size_t i = 0; i < old.cap; i++) {
        if (old.hashes[i] == 0) continue;
        size_t j = strmap_find(m, old.hashes[i], old.keys[i], old.key_lens[i]);
        m->hashes[j] = old.hashes[i];
        m->keys[j] = old.keys[i];
        m->key_lens[j] = old.key_lens[i];
        m->values[j] = old.values[i];
        m->n++;
    }
    el_strmap_free(&old);
    return EL_OK;
}

el_status el_strmap_put(el_strmap *m, const char *key, size_t len, int32_t value) {
    if (len > UINT32_MAX) return el_error(EL_ERR_INVALID_ARG, "string map: key too long");
    if (m->cap == 0) {
        el_status st = el_strmap_init(m, 16);
        if (st != EL_OK) return st;
    }
    if ((m->n + 1) * 2 > m->cap) {
        el_status st = strmap_grow(m);
        if (st != EL_OK) return st;
    }
    uint64_t h = el_str_hash(key, len);
    size_t i = strmap_find(m, h, key, len);
    if (m->hashes[i] == 0) {
        m->hashes[i] = h;
        m->keys[i] = key;
        m->key_lens[i] = (uint32_t)len;
        m->n++;
    }
    m->values[i] = value;
    return EL_OK;
}

int32_t el_strmap_get(const el_strmap *m, const char *key, size_t len) {
    if (m->cap == 0) return -1;
    size_t i = strmap_find(m, el_str_hash(key, len), key, len);
    return m->hashes[i] != 0 ? m->values[i] : -1;
}

el_status el_tokens_push(el_tokens *t, int32_t id) {
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        int32_t *ids = realloc(t->ids, cap * sizeof *ids);
        if (!ids) return el_error(EL_ERR_NOMEM, "token list: out of memory for %zu tokens", cap);
        t->ids = ids;
        t->cap = cap;
    }
    t->ids[t->n++] = id;
    return EL_OK;
}

void el_tokens_free(el_tokens *t) {
    free(t->ids);
    memset(t, 0, sizeof *t);
}
