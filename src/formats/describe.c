/* describe.c - el_file_describe: a readable summary of a GGUF file, a llama2.c checkpoint or a
 * llama2.c tokenizer, recognized from the contents. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "formats/llama2c.h"

enum { ARRAY_SHOWN = 5, STRING_SHOWN = 60 };

/* A growing text; an allocation failure is remembered and reported once at the end. */
typedef struct text {
    char *p;
    size_t n, cap;
    bool oom;
} text;

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *fmt, ...) {
    if (t->oom) return;
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(t->p ? t->p + t->n : NULL, t->p ? t->cap - t->n : 0, fmt, ap);
    va_end(ap);
    if (need < 0) return;
    if (!t->p || t->n + (size_t)need + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 1024;
        while (cap < t->n + (size_t)need + 1) cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->oom = true;
            return;
        }
        t->p = p;
        t->cap = cap;
        va_start(ap, fmt);
        vsnprintf(t->p + t->n, t->cap - t->n, fmt, ap);
        va_end(ap);
    }
    t->n += (size_t)need;
}

/* A string in double quotes, with control bytes and quotes escaped, cut after STRING_SHOWN. */
static void add_quoted(text *t, const char *s, uint64_t len) {
    add(t, "\"");
    for (uint64_t i = 0; i < len && i < STRING_SHOWN; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            add(t, "\\%c", c);
        else if (c == '\n')
            add(t, "\\n");
        else if (c < 0x20 || c == 0x7f)
            add(t, "\\x%02x", c);
        else
            add(t, "%c", c);
    }
    add(t, len > STRING_SHOWN ? "\"... (%" PRIu64 " bytes)" : "\"", len);
}

static uint64_t load_le(const uint8_t *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* One element of a fixed-size type from its little-endian bytes. */
static void add_element(text *t, gguf_value_type type, const uint8_t *p) {
    size_t n = gguf_value_size(type);
    uint64_t raw = load_le(p, n);
    switch (type) {
    case GGUF_TYPE_INT8: add(t, "%d", (int8_t)raw); break;
    case GGUF_TYPE_INT16: add(t, "%d", (int16_t)raw); break;
    case GGUF_TYPE_INT32: add(t, "%" PRId32, (int32_t)(uint32_t)raw); break;
    case GGUF_TYPE_INT64: add(t, "%" PRId64, (int64_t)raw); break;
    case GGUF_TYPE_BOOL: add(t, raw ? "true" : "false"); break;
    case GGUF_TYPE_FLOAT32: {
        uint32_t u = (uint32_t)raw;
        float f;
        memcpy(&f, &u, 4);
        add(t, "%g", f);
        break;
    }
    case GGUF_TYPE_FLOAT64: {
        double d;
        memcpy(&d, &raw, 8);
        add(t, "%g", d);
        break;
    }
    default: add(t, "%" PRIu64, raw);
    }
}

static void add_kv(text *t, const gguf_kv *kv) {
    add(t, "  %.*s: ", (int)kv->key.len, kv->key.ptr);
    if (kv->type == GGUF_TYPE_STRING) {
        add(t, "string = ");
        add_quoted(t, kv->v.str.ptr, kv->v.str.len);
    } else if (kv->type == GGUF_TYPE_ARRAY) {
        add(t, "array of %s [%" PRIu64 "] = [", gguf_type_name(kv->arr_type), kv->arr_n);
        size_t es = gguf_value_size(kv->arr_type);
        for (uint64_t i = 0; i < kv->arr_n && i < ARRAY_SHOWN; i++) {
            if (i) add(t, ", ");
            if (kv->arr_type == GGUF_TYPE_STRING)
                add_quoted(t, kv->arr_str[i].ptr, kv->arr_str[i].len);
            else
                add_element(t, kv->arr_type, kv->arr_data + i * es);
        }
        add(t, kv->arr_n > ARRAY_SHOWN ? ", ...]" : "]");
    } else {
        /* scalars were widened by the reader; print them from the widened value */
        uint8_t bytes[8];
        uint64_t raw = kv->v.u64;
        if (kv->type == GGUF_TYPE_FLOAT32) {
            float f = (float)kv->v.f64;
            uint32_t u;
            memcpy(&u, &f, 4);
            raw = u;
        }
        for (int i = 0; i < 8; i++) bytes[i] = (uint8_t)(raw >> (8 * i));
        add(t, "%s = ", gguf_type_name(kv->type));
        add_element(t, kv->type, bytes);
    }
    add(t, "\n");
}

static void describe_gguf(text *t, const gguf_file *f) {
    add(t,
        "%s: GGUF version %" PRIu32 ", %" PRIu64 " keys, %" PRIu64 " tensors, alignment %" PRIu64
        "\nmetadata:\n",
        f->path, f->version, f->n_kv, f->n_tensors, f->alignment);
    for (uint64_t i = 0; i < f->n_kv; i++) add_kv(t, &f->kv[i]);
    if (f->n_tensors) add(t, "tensors:\n");
    uint64_t bytes = 0, params = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *ts = &f->tensors[i];
        add(t, "  %.*s: %s [", (int)ts->name.len, ts->name.ptr, gguf_tensor_layout(ts->type)->name);
        uint64_t n = 1;
        for (uint32_t d = 0; d < ts->n_dims; d++) {
            add(t, d ? ", %" PRId64 : "%" PRId64, ts->ne[d]);
            n *= (uint64_t)ts->ne[d]; /* the reader refused shapes that overflow */
        }
        add(t, "] %" PRIu64 " bytes\n", ts->nbytes);
        bytes += ts->nbytes;
        params += n;
    }
    add(t, "total: %" PRIu64 " tensors, %" PRIu64 " parameters, %" PRIu64 " bytes\n", f->n_tensors,
        params, bytes);
}

static void describe_llama2c(text *t, const llama2c_file *f) {
    const llama2c_config *c = &f->cfg;
    add(t, "%s: llama2.c checkpoint (legacy format, float32)\n", f->path);
    add(t, "  dim: %d\n  hidden_dim: %d\n  n_layers: %d\n  n_heads: %d\n  n_kv_heads: %d\n", c->dim,
        c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads);
    add(t, "  vocab_size: %d\n  seq_len: %d\n  head_size: %d\n", c->vocab_size, c->seq_len,
        c->head_size);
    add(t, "  classifier: %s\n",
        c->shared_classifier ? "shared with the token embedding" : "separate (wcls)");
    add(t, "total: %" PRId64 " parameters, %" PRId64 " bytes\n", f->n_params, f->n_params * 4);
}

static void describe_tokenizer(text *t, const llama2c_tokenizer *tok) {
    add(t,
        "%s: llama2.c tokenizer\n  tokens: %d\n  max_token_length: %u\n  first tokens: ", tok->path,
        tok->n_tokens, tok->max_token_length);
    for (int32_t i = 0; i < tok->n_tokens && i < ARRAY_SHOWN; i++) {
        if (i) add(t, ", ");
        add_quoted(t, tok->tokens[i].text, tok->tokens[i].len);
        add(t, " (%g)", tok->tokens[i].score);
    }
    add(t, "\n");
}

/* Fills t from whichever reader accepts the file. */
static el_status describe_any(text *t, const char *path) {
    if (gguf_is_gguf_file(path)) {
        gguf_file *f;
        el_status st = gguf_open(path, &f);
        if (st) return st;
        describe_gguf(t, f);
        gguf_close(f);
        return EL_OK;
    }
    llama2c_file *m;
    el_status st = llama2c_open(path, &m);
    if (st == EL_OK) {
        describe_llama2c(t, m);
        llama2c_close(m);
        return EL_OK;
    }
    if (st != EL_ERR_FORMAT) return st;
    llama2c_tokenizer *tok;
    st = llama2c_tokenizer_open(path, &tok);
    if (st == EL_OK) {
        describe_tokenizer(t, tok);
        llama2c_tokenizer_close(tok);
        return EL_OK;
    }
    if (st != EL_ERR_FORMAT) return st;
    return el_error(EL_ERR_FORMAT,
                    "%s: unknown format: not a GGUF file, a llama2.c checkpoint or a llama2.c "
                    "tokenizer",
                    path);
}

el_status el_file_describe(const char *path, char **out) {
    if (!path || !out) return el_error(EL_ERR_INVALID_ARG, "el_file_describe: NULL argument");
    *out = NULL;
    text t = {0};
    el_status st = describe_any(&t, path);
    if (!st && t.oom) st = el_error(EL_ERR_NOMEM, "%s: out of memory for the description", path);
    if (st) {
        free(t.p);
        return st;
    }
    *out = t.p;
    return EL_OK;
}
