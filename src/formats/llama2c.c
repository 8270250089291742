/* llama2c.c - the llama2.c checkpoint and tokenizer readers (see llama2c.h). */
#include "formats/llama2c.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static uint32_t load_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int32_t load_i32(const uint8_t *p) {
    uint32_t u = load_u32(p);
    int32_t v;
    memcpy(&v, &u, 4);
    return v;
}

static float load_f32(const uint8_t *p) {
    uint32_t u = load_u32(p);
    float v;
    memcpy(&v, &u, 4);
    return v;
}

/* a*b*c without overflow, or false */
static bool mul3(uint64_t a, uint64_t b, uint64_t c, uint64_t *out) {
    if (a && b > UINT64_MAX / a) return false;
    uint64_t ab = a * b;
    if (ab && c > UINT64_MAX / ab) return false;
    *out = ab * c;
    return true;
}

/* ------------------------------------------------------------- checkpoint */

#define LLAMA2C_HEADER_BYTES 28

static el_status read_config(const llama2c_file *f, llama2c_config *c) {
    const uint8_t *p = f->map.data;
    if (f->map.size < LLAMA2C_HEADER_BYTES)
        return el_error(EL_ERR_FORMAT, "%s: not a model file: neither GGUF nor a llama2.c "
                        "checkpoint (%zu bytes, less than a header)", f->path, f->map.size);
    if (load_u32(p) == 0x616b3432u) /* "ak42": the versioned export of llama2.c's export.py */
        return el_error(EL_ERR_UNSUPPORTED,
                        "%s: llama2.c export version %d (magic 'ak42') is not supported; export "
                        "with the legacy format (version 0)",
                        f->path, load_i32(p + 4));
    c->dim = load_i32(p);
    c->hidden_dim = load_i32(p + 4);
    c->n_layers = load_i32(p + 8);
    c->n_heads = load_i32(p + 12);
    c->n_kv_heads = load_i32(p + 16);
    int32_t vocab = load_i32(p + 20);
    c->seq_len = load_i32(p + 24);
    /* the header has no magic: sizes beyond any model's tell another kind of file */
    if (c->dim <= 0 || c->hidden_dim <= 0 || c->n_layers <= 0 || c->n_heads <= 0 ||
        c->n_kv_heads <= 0 || c->seq_len <= 0 || vocab == 0 || vocab == INT32_MIN ||
        c->dim > (1 << 16) || c->hidden_dim > (1 << 18) || c->n_layers > (1 << 12) ||
        c->n_heads > c->dim || c->n_kv_heads > c->n_heads || vocab > (1 << 24) ||
        vocab < -(1 << 24) || c->seq_len > (1 << 24))
        return el_error(
            EL_ERR_FORMAT,
            "%s: not a model file: neither GGUF nor a llama2.c checkpoint (read as one, its "
            "header says dim %d, hidden_dim %d, n_layers %d, n_heads %d, n_kv_heads %d, "
            "vocab_size %d, seq_len %d)",
            f->path, c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads, vocab,
            c->seq_len);
    c->shared_classifier = vocab > 0;
    c->vocab_size = vocab > 0 ? vocab : -vocab;
    if (c->dim % c->n_heads || c->n_heads % c->n_kv_heads)
        return el_error(EL_ERR_FORMAT,
                        "%s: llama2.c header: n_heads %d must divide dim %d and n_kv_heads %d must "
                        "divide n_heads (offset 12)",
                        f->path, c->n_heads, c->dim, c->n_kv_heads);
    c->head_size = c->dim / c->n_heads;
    if (c->head_size % 2)
        return el_error(EL_ERR_FORMAT, "%s: llama2.c header: head size %d is odd (offset 12)",
                        f->path, c->head_size);
    c->kv_dim = c->n_kv_heads * c->head_size;
    return EL_OK;
}

/* Carves the weight pointers out of the mapping after checking the exact file size. */
static el_status layout_weights(llama2c_file *f) {
    const llama2c_config *c = &f->cfg;
    uint64_t L = (uint64_t)c->n_layers, d = (uint64_t)c->dim, h = (uint64_t)c->hidden_dim;
    uint64_t kv = (uint64_t)c->kv_dim, V = (uint64_t)c->vocab_size;
    const float **dst[] = {&f->w.token_embedding,
                           &f->w.rms_att,
                           &f->w.wq,
                           &f->w.wk,
                           &f->w.wv,
                           &f->w.wo,
                           &f->w.rms_ffn,
                           &f->w.w1,
                           &f->w.w2,
                           &f->w.w3,
                           &f->w.rms_final,
                           NULL,
                           &f->w.wcls};
    uint64_t n[13];
    bool ok = mul3(V, d, 1, &n[0]) && mul3(L, d, 1, &n[1]) && mul3(L, d, d, &n[2]) &&
              mul3(L, kv, d, &n[3]) && mul3(L, kv, d, &n[4]) && mul3(L, d, d, &n[5]) &&
              mul3(L, d, 1, &n[6]) && mul3(L, h, d, &n[7]) && mul3(L, d, h, &n[8]) &&
              mul3(L, h, d, &n[9]) && mul3(d, 1, 1, &n[10]) &&
              mul3((uint64_t)c->seq_len, (uint64_t)c->head_size, 1, &n[11]) &&
              mul3(c->shared_classifier ? 0 : V, d, 1, &n[12]);
    uint64_t floats = 0, params = 0;
    for (int i = 0; i < 13 && ok; i++) {
        ok = floats <= UINT64_MAX - n[i];
        floats += n[i];
        if (i != 11) params += n[i];
    }
    ok = ok && floats <= (UINT64_MAX - LLAMA2C_HEADER_BYTES) / 4;
    uint64_t want = LLAMA2C_HEADER_BYTES + 4 * floats;
    if (!ok || want != f->map.size)
        return el_error(EL_ERR_FORMAT,
                        "%s: not a llama2.c checkpoint: the header (dim %d, n_layers %d, vocab %d, "
                        "%s classifier) needs %s%llu bytes, the file has %zu",
                        f->path, c->dim, c->n_layers, c->vocab_size,
                        c->shared_classifier ? "shared" : "separate", ok ? "" : "more than ",
                        (unsigned long long)(ok ? want : UINT64_MAX), f->map.size);
    const float *p = (const float *)(const void *)(f->map.data + LLAMA2C_HEADER_BYTES);
    for (int i = 0; i < 13; i++) {
        if (dst[i]) *dst[i] = p;
        p += n[i];
    }
    if (c->shared_classifier) f->w.wcls = f->w.token_embedding;
    f->n_params = (int64_t)params;
    return EL_OK;
}

static el_status open_checkpoint(llama2c_file *f, llama2c_file **out) {
    el_status st = read_config(f, &f->cfg);
    if (!st) st = layout_weights(f);
    if (st) {
        llama2c_close(f);
        return st;
    }
    *out = f;
    return EL_OK;
}

el_status llama2c_open(const char *path, llama2c_file **out) {
    *out = NULL;
    llama2c_file *f = calloc(1, sizeof *f);
    char *p = strdup(path);
    if (!f || !p) {
        free(f);
        free(p);
        return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    }
    f->path = p;
    el_status st = el_map_file(path, &f->map);
    if (st) {
        llama2c_close(f);
        return st;
    }
    f->owns_map = true;
    return open_checkpoint(f, out);
}

el_status llama2c_open_memory(const void *data, size_t size, const char *name, llama2c_file **out) {
    *out = NULL;
    if ((uintptr_t)data % 4)
        return el_error(EL_ERR_INVALID_ARG, "%s: buffer is not 4-byte aligned", name);
    llama2c_file *f = calloc(1, sizeof *f);
    char *p = strdup(name);
    if (!f || !p) {
        free(f);
        free(p);
        return el_error(EL_ERR_NOMEM, "%s: out of memory", name);
    }
    f->path = p;
    f->map.data = data;
    f->map.size = size;
    return open_checkpoint(f, out);
}

void llama2c_close(llama2c_file *f) {
    if (!f) return;
    if (f->owns_map) el_unmap_file(&f->map);
    free((char *)f->path);
    free(f);
}

/* -------------------------------------------------------------- tokenizer */

static el_status parse_tokenizer(llama2c_tokenizer *t) {
    const uint8_t *p = t->map.data;
    size_t size = t->map.size;
    if (size < 4)
        return el_error(EL_ERR_FORMAT, "%s: truncated llama2.c tokenizer header (%zu bytes)",
                        t->path, size);
    int32_t max_len = load_i32(p);
    if (max_len <= 0 || (size_t)max_len > size)
        return el_error(EL_ERR_FORMAT,
                        "%s: not a llama2.c tokenizer: max_token_length %d is out of range "
                        "(offset 0)",
                        t->path, max_len);
    t->max_token_length = (uint32_t)max_len;
    /* a record takes at least 9 bytes: this bounds the allocation by the file size */
    size_t cap = (size - 4) / 9;
    if (cap > INT32_MAX) cap = INT32_MAX;
    t->tokens = malloc((cap ? cap : 1) * sizeof *t->tokens);
    if (!t->tokens) return el_error(EL_ERR_NOMEM, "%s: no memory for the tokens", t->path);
    size_t pos = 4;
    int32_t n = 0;
    while (pos < size) {
        if (size - pos < 8 || (size_t)n >= cap)
            return el_error(EL_ERR_FORMAT, "%s: truncated token record %d (offset %zu)", t->path, n,
                            pos);
        float score = load_f32(p + pos);
        int32_t len = load_i32(p + pos + 4);
        if (!isfinite(score))
            return el_error(EL_ERR_FORMAT, "%s: token %d has a non-finite score (offset %zu)",
                            t->path, n, pos);
        if (len <= 0 || len > max_len)
            return el_error(EL_ERR_FORMAT,
                            "%s: token %d has length %d (1..max_token_length %d allowed) "
                            "(offset %zu)",
                            t->path, n, len, max_len, pos + 4);
        if ((size_t)len > size - pos - 8)
            return el_error(EL_ERR_FORMAT, "%s: truncated token %d (offset %zu)", t->path, n, pos);
        t->tokens[n++] = (llama2c_token){(const char *)p + pos + 8, (uint32_t)len, score};
        pos += 8 + (size_t)len;
    }
    if (n == 0) return el_error(EL_ERR_FORMAT, "%s: llama2.c tokenizer has no tokens", t->path);
    t->n_tokens = n;
    return EL_OK;
}

static el_status open_tokenizer(llama2c_tokenizer *t, llama2c_tokenizer **out) {
    el_status st = parse_tokenizer(t);
    if (st) {
        llama2c_tokenizer_close(t);
        return st;
    }
    *out = t;
    return EL_OK;
}

static llama2c_tokenizer *alloc_tokenizer(const char *name) {
    llama2c_tokenizer *t = calloc(1, sizeof *t);
    char *p = strdup(name);
    if (!t || !p) {
        free(t);
        free(p);
        return NULL;
    }
    t->path = p;
    return t;
}

el_status llama2c_tokenizer_open(const char *path, llama2c_tokenizer **out) {
    *out = NULL;
    llama2c_tokenizer *t = alloc_tokenizer(path);
    if (!t) return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    el_status st = el_map_file(path, &t->map);
    if (st) {
        llama2c_tokenizer_close(t);
        return st;
    }
    t->owns_map = true;
    return open_tokenizer(t, out);
}

el_status llama2c_tokenizer_open_memory(const void *data, size_t size, const char *name,
                                        llama2c_tokenizer **out) {
    *out = NULL;
    llama2c_tokenizer *t = alloc_tokenizer(name);
    if (!t) return el_error(EL_ERR_NOMEM, "%s: out of memory", name);
    t->map.data = data;
    t->map.size = size;
    return open_tokenizer(t, out);
}

void llama2c_tokenizer_close(llama2c_tokenizer *t) {
    if (!t) return;
    if (t->owns_map) el_unmap_file(&t->map);
    free(t->tokens);
    free((char *)t->path);
    free(t);
}
