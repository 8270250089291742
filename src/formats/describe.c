/* describe.c - el_file_describe and el_file_describe_json: a summary of a GGUF file, a llama2.c
 * checkpoint or a llama2.c tokenizer, recognized from the contents, as text to read or as one
 * JSON object. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "formats/json.h"
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

/* One element of a fixed-size type from its little-endian bytes, into buf (32 bytes): floats
 * with %g for reading, or for JSON with the digits that give them back (null if not finite,
 * which JSON cannot write). */
static void format_element(char *buf, gguf_value_type type, const uint8_t *p, bool json) {
    size_t n = gguf_value_size(type), cap = 32;
    uint64_t raw = load_le(p, n);
    switch (type) {
    case GGUF_TYPE_INT8: snprintf(buf, cap, "%d", (int8_t)raw); break;
    case GGUF_TYPE_INT16: snprintf(buf, cap, "%d", (int16_t)raw); break;
    case GGUF_TYPE_INT32: snprintf(buf, cap, "%" PRId32, (int32_t)(uint32_t)raw); break;
    case GGUF_TYPE_INT64: snprintf(buf, cap, "%" PRId64, (int64_t)raw); break;
    case GGUF_TYPE_BOOL: snprintf(buf, cap, raw ? "true" : "false"); break;
    case GGUF_TYPE_FLOAT32: {
        uint32_t u = (uint32_t)raw;
        float f;
        memcpy(&f, &u, 4);
        if (json && !isfinite(f)) snprintf(buf, cap, "null");
        else snprintf(buf, cap, json ? "%.9g" : "%g", f);
        break;
    }
    case GGUF_TYPE_FLOAT64: {
        double d;
        memcpy(&d, &raw, 8);
        if (json && !isfinite(d)) snprintf(buf, cap, "null");
        else snprintf(buf, cap, json ? "%.17g" : "%g", d);
        break;
    }
    default: snprintf(buf, cap, "%" PRIu64, raw);
    }
}

static void add_element(text *t, gguf_value_type type, const uint8_t *p) {
    char buf[32];
    format_element(buf, type, p, false);
    add(t, "%s", buf);
}

/* A scalar's little-endian bytes: the reader widened scalars (integers to 64 bits, floats to
 * double), so they are rebuilt from the widened value. */
static void scalar_bytes(const gguf_kv *kv, uint8_t bytes[8]) {
    uint64_t raw = kv->v.u64;
    if (kv->type == GGUF_TYPE_FLOAT32) {
        float f = (float)kv->v.f64;
        uint32_t u;
        memcpy(&u, &f, 4);
        raw = u;
    }
    for (int i = 0; i < 8; i++) bytes[i] = (uint8_t)(raw >> (8 * i));
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
        uint8_t bytes[8];
        scalar_bytes(kv, bytes);
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

/* How a description is written: one function per kind of file, into `out` (a text or a
 * FILE). */
typedef struct describer {
    void (*gguf)(void *out, const gguf_file *f);
    void (*llama2c)(void *out, const llama2c_file *f);
    void (*tokenizer)(void *out, const llama2c_tokenizer *tok);
} describer;

static void text_gguf(void *out, const gguf_file *f) { describe_gguf(out, f); }
static void text_llama2c(void *out, const llama2c_file *f) { describe_llama2c(out, f); }
static void text_tokenizer(void *out, const llama2c_tokenizer *tok) {
    describe_tokenizer(out, tok);
}

/* ------------------------------------------------------------------- JSON */

static void json_string(FILE *f, const char *s, uint64_t len) {
    el_json_write_string(f, s, (size_t)len);
}

/* {"type": T, "value": V}, or for an array {"type": "array", "element_type": T, "n": N,
 * "values": [its first ARRAY_SHOWN]} (strings are whole). */
static void json_kv_value(FILE *f, const gguf_kv *kv) {
    char buf[32];
    if (kv->type == GGUF_TYPE_ARRAY) {
        fprintf(f, "{\"type\": \"array\", \"element_type\": \"%s\", \"n\": %" PRIu64
                   ", \"values\": [", gguf_type_name(kv->arr_type), kv->arr_n);
        size_t es = gguf_value_size(kv->arr_type);
        for (uint64_t i = 0; i < kv->arr_n && i < ARRAY_SHOWN; i++) {
            if (i) fputs(", ", f);
            if (kv->arr_type == GGUF_TYPE_STRING) {
                json_string(f, kv->arr_str[i].ptr, kv->arr_str[i].len);
            } else {
                format_element(buf, kv->arr_type, kv->arr_data + i * es, true);
                fputs(buf, f);
            }
        }
        fputs("]}", f);
        return;
    }
    fprintf(f, "{\"type\": \"%s\", \"value\": ", gguf_type_name(kv->type));
    if (kv->type == GGUF_TYPE_STRING) {
        json_string(f, kv->v.str.ptr, kv->v.str.len);
    } else {
        uint8_t bytes[8];
        scalar_bytes(kv, bytes);
        format_element(buf, kv->type, bytes, true);
        fputs(buf, f);
    }
    fputc('}', f);
}

static void json_gguf(void *out, const gguf_file *g) {
    FILE *f = out;
    fputs("{\"file\": ", f);
    json_string(f, g->path, strlen(g->path));
    fprintf(f, ", \"format\": \"gguf\", \"version\": %" PRIu32 ", \"alignment\": %" PRIu64
               ",\n \"metadata\": {", g->version, g->alignment);
    for (uint64_t i = 0; i < g->n_kv; i++) {
        fputs(i ? ",\n  " : "\n  ", f);
        json_string(f, g->kv[i].key.ptr, g->kv[i].key.len);
        fputs(": ", f);
        json_kv_value(f, &g->kv[i]);
    }
    fputs("},\n \"tensors\": [", f);
    uint64_t bytes = 0, params = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor *ts = &g->tensors[i];
        fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", f);
        json_string(f, ts->name.ptr, ts->name.len);
        fprintf(f, ", \"type\": \"%s\", \"shape\": [", gguf_tensor_layout(ts->type)->name);
        uint64_t n = 1;
        for (uint32_t d = 0; d < ts->n_dims; d++) {
            fprintf(f, d ? ", %" PRId64 : "%" PRId64, ts->ne[d]);
            n *= (uint64_t)ts->ne[d];
        }
        fprintf(f, "], \"bytes\": %" PRIu64 "}", ts->nbytes);
        bytes += ts->nbytes;
        params += n;
    }
    fprintf(f, "],\n \"total\": {\"tensors\": %" PRIu64 ", \"parameters\": %" PRIu64
               ", \"bytes\": %" PRIu64 "}}\n", g->n_tensors, params, bytes);
}

static void json_llama2c(void *out, const llama2c_file *m) {
    FILE *f = out;
    const llama2c_config *c = &m->cfg;
    fputs("{\"file\": ", f);
    json_string(f, m->path, strlen(m->path));
    fprintf(f, ", \"format\": \"llama2c\", \"dim\": %d, \"hidden_dim\": %d, \"n_layers\": %d, "
               "\"n_heads\": %d, \"n_kv_heads\": %d, \"vocab_size\": %d, \"seq_len\": %d, "
               "\"head_size\": %d, \"shared_classifier\": %s,\n \"total\": {\"parameters\": %"
               PRId64 ", \"bytes\": %" PRId64 "}}\n",
            c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads, c->vocab_size,
            c->seq_len, c->head_size, c->shared_classifier ? "true" : "false", m->n_params,
            m->n_params * 4);
}

static void json_tokenizer(void *out, const llama2c_tokenizer *tok) {
    FILE *f = out;
    fputs("{\"file\": ", f);
    json_string(f, tok->path, strlen(tok->path));
    fprintf(f, ", \"format\": \"llama2c-tokenizer\", \"tokens\": %d, \"max_token_length\": %u, "
               "\"first_tokens\": [", tok->n_tokens, tok->max_token_length);
    for (int32_t i = 0; i < tok->n_tokens && i < ARRAY_SHOWN; i++) {
        fputs(i ? ", {\"text\": " : "{\"text\": ", f);
        json_string(f, tok->tokens[i].text, tok->tokens[i].len);
        float score = tok->tokens[i].score;
        if (isfinite(score)) fprintf(f, ", \"score\": %.9g}", score);
        else fputs(", \"score\": null}", f);
    }
    fputs("]}\n", f);
}

/* Describes the file with whichever reader accepts it. */
static el_status describe_any(const describer *d, void *out, const char *path) {
    if (gguf_is_gguf_file(path)) {
        gguf_file *f;
        el_status st = gguf_open(path, &f);
        if (st) return st;
        d->gguf(out, f);
        gguf_close(f);
        return EL_OK;
    }
    llama2c_file *m;
    el_status st = llama2c_open(path, &m);
    if (st == EL_OK) {
        d->llama2c(out, m);
        llama2c_close(m);
        return EL_OK;
    }
    if (st != EL_ERR_FORMAT) return st;
    llama2c_tokenizer *tok;
    st = llama2c_tokenizer_open(path, &tok);
    if (st == EL_OK) {
        d->tokenizer(out, tok);
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
    static const describer as_text = {text_gguf, text_llama2c, text_tokenizer};
    el_status st = describe_any(&as_text, &t, path);
    if (!st && t.oom) st = el_error(EL_ERR_NOMEM, "%s: out of memory for the description", path);
    if (st) {
        free(t.p);
        return st;
    }
    *out = t.p;
    return EL_OK;
}

el_status el_file_describe_json(const char *path, char **out) {
    if (!path || !out) return el_error(EL_ERR_INVALID_ARG, "el_file_describe_json: NULL argument");
    *out = NULL;
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f) return el_error(EL_ERR_NOMEM, "%s: out of memory for the description", path);
    static const describer as_json = {json_gguf, json_llama2c, json_tokenizer};
    el_status st = describe_any(&as_json, f, path);
    bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed)
        if (st == EL_OK) st = el_error(EL_ERR_NOMEM, "%s: out of memory for the description", path);
    if (st != EL_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    return EL_OK;
}
