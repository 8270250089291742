/* gguf_write.c - the GGUF writer: collects keys and tensors, then writes a version 3 file.
 *
 * Every value is serialized when it is set, so writing is a plain concatenation. The file goes
 * out through core/outfile.h, so that it appears whole or not at all. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/outfile.h"
#include "formats/gguf.h"

typedef struct bytes {
    uint8_t *p;
    size_t n, cap;
} bytes;

typedef struct writer_kv {
    char *key;
    gguf_value_type type;
    bytes val; /* the serialized value, without its type */
} writer_kv;

typedef struct writer_tensor {
    char *name;
    uint32_t type, n_dims;
    int64_t ne[GGUF_MAX_DIMS];
    const void *data;
    uint64_t nbytes;
    gguf_fill_fn fill; /* if not NULL, produces the data at write time */
    void *user;
} writer_tensor;

struct gguf_writer {
    writer_kv *kv;
    size_t n_kv, cap_kv;
    writer_tensor *t;
    size_t n_t, cap_t;
};

/* Grows an array of elem-sized items to hold one more. */
static bool grow(void **p, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return true;
    size_t nc = *cap ? *cap * 2 : 16;
    void *q = realloc(*p, nc * elem);
    if (!q) return false;
    *p = q;
    *cap = nc;
    return true;
}

static bool mul_ok(uint64_t a, uint64_t b, uint64_t *out) {
    if (a != 0 && b > UINT64_MAX / a) return false;
    *out = a * b;
    return true;
}

static bool put(bytes *b, const void *src, size_t n) {
    if (n > SIZE_MAX - b->n) return false;
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 64;
        while (nc < b->n + n) nc = nc > SIZE_MAX / 2 ? b->n + n : nc * 2;
        uint8_t *q = realloc(b->p, nc);
        if (!q) return false;
        b->p = q;
        b->cap = nc;
    }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
    return true;
}

static bool put_le(bytes *b, uint64_t v, size_t n) {
    uint8_t tmp[8];
    for (size_t i = 0; i < n; i++) tmp[i] = (uint8_t)(v >> (8 * i));
    return put(b, tmp, n);
}

static bool put_str(bytes *b, const char *s, size_t len) {
    return put_le(b, len, 8) && put(b, s, len);
}

gguf_writer *gguf_writer_create(void) { return calloc(1, sizeof(gguf_writer)); }

void gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].val.p);
    }
    for (size_t i = 0; i < w->n_t; i++) free(w->t[i].name);
    free(w->kv);
    free(w->t);
    free(w);
}

/* Takes ownership of val (freed on failure too). */
static el_status set_kv(gguf_writer *w, const char *key, gguf_value_type type, bytes val, bool ok) {
    if (!ok) {
        free(val.p);
        return el_error(EL_ERR_NOMEM, "gguf writer: no memory for key '%s'", key);
    }
    if (!key || !*key) {
        free(val.p);
        return el_error(EL_ERR_INVALID_ARG, "gguf writer: empty key");
    }
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, key) == 0) {
            free(w->kv[i].val.p);
            w->kv[i].type = type;
            w->kv[i].val = val;
            return EL_OK;
        }
    }
    char *k = strdup(key);
    if (!k || !grow((void **)&w->kv, &w->cap_kv, w->n_kv, sizeof *w->kv)) {
        free(k);
        free(val.p);
        return el_error(EL_ERR_NOMEM, "gguf writer: no memory for key '%s'", key);
    }
    w->kv[w->n_kv++] = (writer_kv){k, type, val};
    return EL_OK;
}

static el_status set_scalar(gguf_writer *w, const char *key, gguf_value_type type, uint64_t raw) {
    bytes b = {0};
    bool ok = put_le(&b, raw, gguf_value_size(type));
    return set_kv(w, key, type, b, ok);
}

el_status gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v) {
    return set_scalar(w, key, GGUF_TYPE_UINT32, v);
}

el_status gguf_writer_set_i32(gguf_writer *w, const char *key, int32_t v) {
    return set_scalar(w, key, GGUF_TYPE_INT32, (uint32_t)v);
}

el_status gguf_writer_set_u64(gguf_writer *w, const char *key, uint64_t v) {
    return set_scalar(w, key, GGUF_TYPE_UINT64, v);
}

el_status gguf_writer_set_f32(gguf_writer *w, const char *key, float v) {
    uint32_t bits;
    memcpy(&bits, &v, 4);
    return set_scalar(w, key, GGUF_TYPE_FLOAT32, bits);
}

el_status gguf_writer_set_bool(gguf_writer *w, const char *key, bool v) {
    return set_scalar(w, key, GGUF_TYPE_BOOL, v ? 1 : 0);
}

el_status gguf_writer_set_str(gguf_writer *w, const char *key, const char *v) {
    bytes b = {0};
    bool ok = put_str(&b, v, strlen(v));
    return set_kv(w, key, GGUF_TYPE_STRING, b, ok);
}

el_status gguf_writer_set_arr(gguf_writer *w, const char *key, gguf_value_type elem,
                              const void *data, uint64_t n) {
    size_t es = gguf_value_size(elem);
    if (es == 0)
        return el_error(EL_ERR_INVALID_ARG,
                        "gguf writer: key '%s': arrays of %s need their own "
                        "setter",
                        key, gguf_type_name(elem));
    if (n > SIZE_MAX / es)
        return el_error(EL_ERR_INVALID_ARG, "gguf writer: key '%s': array too long", key);
    if (elem == GGUF_TYPE_BOOL)
        for (uint64_t i = 0; i < n; i++)
            if (((const uint8_t *)data)[i] > 1)
                return el_error(EL_ERR_INVALID_ARG, "gguf writer: key '%s': bool %u is not 0 or 1",
                                key, ((const uint8_t *)data)[i]);
    /* elements are stored little-endian, which is the host order on every target we build for */
    bytes b = {0};
    bool ok = put_le(&b, elem, 4) && put_le(&b, n, 8) && put(&b, data, (size_t)(n * es));
    return set_kv(w, key, GGUF_TYPE_ARRAY, b, ok);
}

el_status gguf_writer_set_arr_str(gguf_writer *w, const char *key, const char *const *strs,
                                  uint64_t n) {
    bytes b = {0};
    bool ok = put_le(&b, GGUF_TYPE_STRING, 4) && put_le(&b, n, 8);
    for (uint64_t i = 0; i < n && ok; i++) ok = put_str(&b, strs[i], strlen(strs[i]));
    return set_kv(w, key, GGUF_TYPE_ARRAY, b, ok);
}

/* Serializes one kv of a file that was read (its strings may contain any bytes). */
static bool serialize_kv(bytes *b, const gguf_kv *kv) {
    switch (kv->type) {
    case GGUF_TYPE_STRING: return put_str(b, kv->v.str.ptr, (size_t)kv->v.str.len);
    case GGUF_TYPE_ARRAY:
        if (!put_le(b, kv->arr_type, 4) || !put_le(b, kv->arr_n, 8)) return false;
        if (kv->arr_type != GGUF_TYPE_STRING)
            return put(b, kv->arr_data, (size_t)kv->arr_n * gguf_value_size(kv->arr_type));
        for (uint64_t i = 0; i < kv->arr_n; i++)
            if (!put_str(b, kv->arr_str[i].ptr, (size_t)kv->arr_str[i].len)) return false;
        return true;
    case GGUF_TYPE_FLOAT32: {
        float f = (float)kv->v.f64;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        return put_le(b, bits, 4);
    }
    case GGUF_TYPE_FLOAT64: {
        uint64_t bits;
        memcpy(&bits, &kv->v.f64, 8);
        return put_le(b, bits, 8);
    }
    default: return put_le(b, kv->v.u64, gguf_value_size(kv->type)); /* truncates sign bits */
    }
}

el_status gguf_writer_copy_kv(gguf_writer *w, const gguf_file *src) {
    for (uint64_t i = 0; i < src->n_kv; i++) {
        const gguf_kv *kv = &src->kv[i];
        char *key = strndup(kv->key.ptr, (size_t)kv->key.len);
        if (!key) return el_error(EL_ERR_NOMEM, "gguf writer: out of memory");
        bytes b = {0};
        bool ok = serialize_kv(&b, kv);
        el_status st = set_kv(w, key, kv->type, b, ok);
        free(key);
        if (st) return st;
    }
    return EL_OK;
}

void gguf_writer_remove(gguf_writer *w, const char *key) {
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, key) != 0) continue;
        free(w->kv[i].key);
        free(w->kv[i].val.p);
        memmove(&w->kv[i], &w->kv[i + 1], (w->n_kv - i - 1) * sizeof *w->kv);
        w->n_kv--;
        return;
    }
}

el_status gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                 const int64_t *ne, const void *data, uint64_t nbytes) {
    return gguf_writer_add_tensor_fill(w, name, type, n_dims, ne, nbytes, NULL, (void *)data);
}

el_status gguf_writer_add_tensor_fill(gguf_writer *w, const char *name, uint32_t type,
                                      uint32_t n_dims, const int64_t *ne, uint64_t nbytes,
                                      gguf_fill_fn fill, void *user) {
    if (!name || !*name) return el_error(EL_ERR_INVALID_ARG, "gguf writer: empty tensor name");
    for (size_t i = 0; i < w->n_t; i++)
        if (strcmp(w->t[i].name, name) == 0)
            return el_error(EL_ERR_INVALID_ARG, "gguf writer: duplicate tensor '%s'", name);
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS)
        return el_error(EL_ERR_INVALID_ARG, "gguf writer: tensor '%s' has %u dimensions", name,
                        n_dims);
    const el_type_layout *layout = gguf_tensor_layout(type);
    if (!layout)
        return el_error(EL_ERR_INVALID_ARG, "gguf writer: tensor '%s' has unknown type %u", name,
                        type);
    writer_tensor t = {.type = type, .n_dims = n_dims, .data = fill ? NULL : user,
                       .nbytes = nbytes, .fill = fill, .user = user};
    bool ok = true;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
        t.ne[d] = d < n_dims ? ne[d] : 1;
        ok = ok && t.ne[d] >= 0;
    }
    /* bytes = (row header + ne[0]/block * type_size) * ne[1] * ne[2] * ne[3], refusing overflow */
    int64_t bs = layout->block_size;
    uint64_t want = ok && t.ne[0] % bs == 0 ? (uint64_t)(t.ne[0] / bs) : 0;
    ok = ok && t.ne[0] % bs == 0 && mul_ok(want, layout->type_size, &want);
    if (ok && t.ne[0] > 0) want += layout->row_header;
    for (int d = 1; d < GGUF_MAX_DIMS && ok; d++) ok = mul_ok(want, (uint64_t)t.ne[d], &want);
    if (!ok) return el_error(EL_ERR_INVALID_ARG, "gguf writer: tensor '%s' has a bad shape", name);
    if (want != nbytes)
        return el_error(EL_ERR_INVALID_ARG,
                        "gguf writer: tensor '%s' has %llu bytes, its type and "
                        "shape need %llu",
                        name, (unsigned long long)nbytes, (unsigned long long)want);
    t.name = strdup(name);
    if (!t.name || !grow((void **)&w->t, &w->cap_t, w->n_t, sizeof *w->t)) {
        free(t.name);
        return el_error(EL_ERR_NOMEM, "gguf writer: out of memory");
    }
    w->t[w->n_t++] = t;
    return EL_OK;
}

/* general.alignment as the reader accepts it: any integer type, a positive power of two. */
static el_status writer_alignment(const gguf_writer *w, uint64_t *out) {
    *out = 32;
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, "general.alignment") != 0) continue;
        gguf_value_type type = w->kv[i].type;
        size_t es = gguf_value_size(type);
        bool is_int = es && type != GGUF_TYPE_BOOL && type != GGUF_TYPE_FLOAT32 &&
                      type != GGUF_TYPE_FLOAT64;
        bool is_signed = type == GGUF_TYPE_INT8 || type == GGUF_TYPE_INT16 ||
                         type == GGUF_TYPE_INT32 || type == GGUF_TYPE_INT64;
        uint64_t a = 0;
        for (size_t j = 0; j < es; j++) a |= (uint64_t)w->kv[i].val.p[j] << (8 * j);
        if (!is_int || (is_signed && a >> (8 * es - 1)) || a == 0 || (a & (a - 1)))
            return el_error(EL_ERR_INVALID_ARG,
                            "gguf writer: general.alignment must be a positive power of two");
        *out = a;
    }
    return EL_OK;
}

static uint64_t pad_to(uint64_t n, uint64_t align) { return (align - n % align) % align; }

/* The header, keys, tensor infos and padding up to the data section. */
static bool build_header(const gguf_writer *w, uint64_t align, bytes *b) {
    bool ok = put(b, "GGUF", 4) && put_le(b, 3, 4) && put_le(b, w->n_t, 8) && put_le(b, w->n_kv, 8);
    for (size_t i = 0; i < w->n_kv && ok; i++)
        ok = put_str(b, w->kv[i].key, strlen(w->kv[i].key)) && put_le(b, w->kv[i].type, 4) &&
             put(b, w->kv[i].val.p, w->kv[i].val.n);
    uint64_t offset = 0;
    for (size_t i = 0; i < w->n_t && ok; i++) {
        const writer_tensor *t = &w->t[i];
        ok = put_str(b, t->name, strlen(t->name)) && put_le(b, t->n_dims, 4);
        for (uint32_t d = 0; d < t->n_dims && ok; d++) ok = put_le(b, (uint64_t)t->ne[d], 8);
        ok = ok && put_le(b, t->type, 4) && put_le(b, offset, 8);
        offset += t->nbytes + pad_to(t->nbytes, align);
    }
    static const uint8_t zeros[64];
    for (uint64_t pad = pad_to(b->n, align); pad > 0 && ok;) {
        size_t n = pad < sizeof zeros ? (size_t)pad : sizeof zeros;
        ok = put(b, zeros, n);
        pad -= n;
    }
    return ok;
}

static bool write_all(int fd, const void *p, uint64_t n) {
    const uint8_t *q = p;
    while (n > 0) {
        size_t chunk = n > (1u << 30) ? (1u << 30) : (size_t)n;
        ssize_t r = write(fd, q, chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        q += r;
        n -= (uint64_t)r;
    }
    return true;
}

static bool write_zeros(int fd, uint64_t n) {
    static const uint8_t zeros[256];
    while (n > 0) {
        size_t c = n < sizeof zeros ? (size_t)n : sizeof zeros;
        if (!write_all(fd, zeros, c)) return false;
        n -= c;
    }
    return true;
}

el_status gguf_writer_write(gguf_writer *w, const char *path) {
    uint64_t align;
    el_status st = writer_alignment(w, &align);
    if (st) return st;
    bytes hdr = {0};
    if (!build_header(w, align, &hdr)) {
        free(hdr.p);
        return el_error(EL_ERR_NOMEM, "%s: no memory for the GGUF header", path);
    }
    el_outfile out;
    st = el_outfile_open(&out, path);
    if (st) {
        free(hdr.p);
        return st;
    }
    bool ok = write_all(out.fd, hdr.p, hdr.n);
    free(hdr.p);
    for (size_t i = 0; i < w->n_t && ok && !st; i++) {
        const writer_tensor *t = &w->t[i];
        void *buf = NULL;
        if (t->fill) {
            if (t->nbytes > SIZE_MAX || !(buf = malloc(t->nbytes ? (size_t)t->nbytes : 1)))
                st = el_error(EL_ERR_NOMEM, "%s: no memory for tensor '%s'", path, t->name);
            else
                st = t->fill(t->user, buf, t->nbytes);
        }
        ok = st || (write_all(out.fd, t->fill ? buf : t->data, t->nbytes) &&
                    write_zeros(out.fd, pad_to(t->nbytes, align)));
        free(buf);
    }
    if (!ok || st) {
        int e = errno;
        el_outfile_discard(&out);
        return st ? st : el_error(EL_ERR_IO, "%s: cannot write: %s", path, strerror(e ? e : EIO));
    }
    /* Synced here (the commit's sync then finds nothing to do) so that the file can leave the
     * page cache: the pages a write leaves there come in whatever sizes the writes made, and a
     * file the cache holds in 4 KB pages keeps them, with a TLB miss every 4 KB of every weight
     * stream, until it leaves the cache. Read back from disk, it comes in 2 MB folios
     * (docs/bench.md, "Page size", has the figures). */
    if (fdatasync(out.fd) == 0) (void)posix_fadvise(out.fd, 0, 0, POSIX_FADV_DONTNEED);
    return el_outfile_commit(&out);
}
