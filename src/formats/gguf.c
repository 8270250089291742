/* gguf.c - the GGUF reader: parses and validates a whole file before anything is used.
 *
 * Layout (little-endian): "GGUF", u32 version, u64 n_tensors, u64 n_kv, n_kv key/value pairs,
 * n_tensors tensor infos, padding to general.alignment, then the tensor data section.
 * Every read goes through a cursor that checks the remaining bytes first; every count is
 * checked against the bytes left before anything is allocated for it. */
#include "formats/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* --------------------------------------------------------- tensor types */

const el_type_layout *gguf_tensor_layout(uint32_t type) {
    const el_type_layout *l = el_type_layout_get(type);
    return l && !l->run_time_only ? l : NULL;
}

/* --------------------------------------------------------- value types */

static const char *const value_type_names[GGUF_TYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
};

const char *gguf_type_name(gguf_value_type t) {
    return (unsigned)t < GGUF_TYPE_COUNT ? value_type_names[t] : "unknown";
}

/* Bytes of one element of a fixed-size type; 0 for string and array. */
static size_t value_size(gguf_value_type t) {
    switch (t) {
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_BOOL: return 1;
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_INT16: return 2;
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_FLOAT32: return 4;
    case GGUF_TYPE_UINT64:
    case GGUF_TYPE_INT64:
    case GGUF_TYPE_FLOAT64: return 8;
    default: return 0;
    }
}

size_t gguf_value_size(gguf_value_type t) { return value_size(t); }

/* ---------------------------------------------------------------- cursor */

typedef struct cursor {
    const uint8_t *p;
    size_t size;
    size_t pos;
    const char *name; /* for messages */
} cursor;

static size_t remaining(const cursor *c) { return c->size - c->pos; }

static el_status truncated(const cursor *c, const char *what) {
    return el_error(EL_ERR_FORMAT, "%s: truncated %s (offset %zu, file size %zu)", c->name, what,
                    c->pos, c->size);
}

static uint64_t load_le(const uint8_t *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Reads an n-byte little-endian unsigned integer. */
static el_status rd_uint(cursor *c, size_t n, uint64_t *out, const char *what) {
    *out = 0;
    if (remaining(c) < n) return truncated(c, what);
    *out = load_le(c->p + c->pos, n);
    c->pos += n;
    return EL_OK;
}

static el_status rd_u32(cursor *c, uint32_t *out, const char *what) {
    uint64_t v;
    el_status st = rd_uint(c, 4, &v, what);
    *out = (uint32_t)v;
    return st;
}

static el_status rd_str(cursor *c, gguf_str *out, const char *what) {
    uint64_t len;
    el_status st = rd_uint(c, 8, &len, what);
    if (st) return st;
    if (len > remaining(c))
        return el_error(EL_ERR_FORMAT, "%s: %s length %llu exceeds the %zu bytes left (offset %zu)",
                        c->name, what, (unsigned long long)len, remaining(c), c->pos - 8);
    out->ptr = (const char *)c->p + c->pos;
    out->len = len;
    c->pos += (size_t)len;
    return EL_OK;
}

/* Keys and tensor names: non-empty, no NUL (lookups use C strings). */
static el_status rd_name(cursor *c, gguf_str *out, const char *what) {
    size_t at = c->pos;
    el_status st = rd_str(c, out, what);
    if (st) return st;
    if (out->len == 0)
        return el_error(EL_ERR_FORMAT, "%s: empty %s (offset %zu)", c->name, what, at);
    if (memchr(out->ptr, 0, (size_t)out->len))
        return el_error(EL_ERR_FORMAT, "%s: %s contains a NUL byte (offset %zu)", c->name, what,
                        at);
    return EL_OK;
}

/* ------------------------------------------------------------- key/values */

static int64_t sign_extend(uint64_t v, size_t bytes) {
    if (bytes == 8) return (int64_t)v;
    uint64_t sign = 1ull << (8 * bytes - 1);
    return (int64_t)((v ^ sign) - sign);
}

static bool is_signed_int(gguf_value_type t) {
    return t == GGUF_TYPE_INT8 || t == GGUF_TYPE_INT16 || t == GGUF_TYPE_INT32 ||
           t == GGUF_TYPE_INT64;
}

static el_status rd_scalar(cursor *c, gguf_kv *kv) {
    size_t n = value_size(kv->type);
    size_t at = c->pos;
    uint64_t raw;
    el_status st = rd_uint(c, n, &raw, "value");
    if (st) return st;
    switch (kv->type) {
    case GGUF_TYPE_FLOAT32: {
        uint32_t bits = (uint32_t)raw;
        float f;
        memcpy(&f, &bits, 4);
        kv->v.f64 = f;
        break;
    }
    case GGUF_TYPE_FLOAT64: memcpy(&kv->v.f64, &raw, 8); break;
    case GGUF_TYPE_BOOL:
        if (raw > 1)
            return el_error(EL_ERR_FORMAT, "%s: bool value %llu is neither 0 nor 1 (offset %zu)",
                            c->name, (unsigned long long)raw, at);
        kv->v.u64 = raw;
        break;
    default:
        if (is_signed_int(kv->type))
            kv->v.i64 = sign_extend(raw, n);
        else
            kv->v.u64 = raw;
    }
    return EL_OK;
}

static el_status rd_array(cursor *c, gguf_kv *kv) {
    size_t at = c->pos;
    uint32_t elem;
    uint64_t n;
    el_status st = rd_u32(c, &elem, "array type");
    if (!st) st = rd_uint(c, 8, &n, "array length");
    if (st) return st;
    if (elem >= GGUF_TYPE_COUNT)
        return el_error(EL_ERR_FORMAT, "%s: unknown array element type %u (offset %zu)", c->name,
                        elem, at);
    if (elem == GGUF_TYPE_ARRAY)
        return el_error(EL_ERR_UNSUPPORTED, "%s: nested arrays are not supported (offset %zu)",
                        c->name, at);
    kv->arr_type = (gguf_value_type)elem;
    kv->arr_n = n;
    if (elem != GGUF_TYPE_STRING) {
        size_t es = value_size(kv->arr_type);
        if (n > remaining(c) / es)
            return el_error(EL_ERR_FORMAT,
                            "%s: array of %llu %s exceeds the %zu bytes left (offset %zu)", c->name,
                            (unsigned long long)n, gguf_type_name(kv->arr_type), remaining(c), at);
        kv->arr_data = c->p + c->pos;
        if (elem == GGUF_TYPE_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if (kv->arr_data[i] > 1)
                    return el_error(EL_ERR_FORMAT,
                                    "%s: bool value %u is neither 0 nor 1 (offset %zu)", c->name,
                                    kv->arr_data[i], c->pos + (size_t)i);
        c->pos += (size_t)(n * es);
        return EL_OK;
    }
    /* every string takes at least its 8-byte length */
    if (n > remaining(c) / 8)
        return el_error(EL_ERR_FORMAT,
                        "%s: array of %llu strings exceeds the %zu bytes left (offset %zu)",
                        c->name, (unsigned long long)n, remaining(c), at);
    kv->arr_data = c->p + c->pos;
    if (n == 0) return EL_OK;
    kv->arr_str = malloc((size_t)n * sizeof *kv->arr_str);
    if (!kv->arr_str)
        return el_error(EL_ERR_NOMEM, "%s: no memory for %llu strings", c->name,
                        (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) {
        st = rd_str(c, &kv->arr_str[i], "string");
        if (st) return st;
    }
    return EL_OK;
}

/* Turns the message "<file>: <problem>" into "<file>: key '<key>': <problem>". */
static void name_key_in_error(const char *name, gguf_str key) {
    char old[1024];
    snprintf(old, sizeof old, "%s", el_last_error());
    size_t n = strlen(name);
    const char *rest = strncmp(old, name, n) == 0 && old[n] == ':' ? old + n + 2 : old;
    el_error(EL_ERR_FORMAT, "%s: key '%.*s': %s", name, (int)(key.len < 200 ? key.len : 200),
             key.ptr, rest);
}

static el_status rd_kv(cursor *c, gguf_kv *kv) {
    el_status st = rd_name(c, &kv->key, "key");
    if (st) return st;
    size_t at = c->pos;
    uint32_t type;
    st = rd_u32(c, &type, "value type");
    if (st) return st;
    if (type >= GGUF_TYPE_COUNT)
        return el_error(EL_ERR_FORMAT, "%s: key '%.*s' has unknown value type %u (offset %zu)",
                        c->name, (int)kv->key.len, kv->key.ptr, type, at);
    kv->type = (gguf_value_type)type;
    if (type == GGUF_TYPE_STRING)
        st = rd_str(c, &kv->v.str, "string");
    else if (type == GGUF_TYPE_ARRAY)
        st = rd_array(c, kv);
    else
        st = rd_scalar(c, kv);
    if (st) name_key_in_error(c->name, kv->key);
    return st;
}

/* ---------------------------------------------------------------- tensors */

static bool mul_ok(uint64_t a, uint64_t b, uint64_t *out) {
    if (a != 0 && b > UINT64_MAX / a) return false;
    *out = a * b;
    return true;
}

static el_status rd_tensor_info(cursor *c, gguf_tensor *t) {
    el_status st = rd_name(c, &t->name, "tensor name");
    if (st) return st;
    size_t at = c->pos;
    int nl = (int)(t->name.len < 200 ? t->name.len : 200);
    st = rd_u32(c, &t->n_dims, "tensor dims");
    if (st) return st;
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS)
        return el_error(EL_ERR_FORMAT,
                        "%s: tensor '%.*s' has %u dimensions (1..%d allowed) (offset %zu)", c->name,
                        nl, t->name.ptr, t->n_dims, GGUF_MAX_DIMS, at);
    for (int d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        uint64_t v;
        at = c->pos;
        st = rd_uint(c, 8, &v, "tensor shape");
        if (st) return st;
        /* zero is allowed (an empty tensor, as ggml allows); negative is not */
        if (v > INT64_MAX)
            return el_error(EL_ERR_FORMAT,
                            "%s: tensor '%.*s' has negative dimension %lld (offset %zu)", c->name,
                            nl, t->name.ptr, (long long)(int64_t)v, at);
        t->ne[d] = (int64_t)v;
    }
    at = c->pos;
    st = rd_u32(c, &t->type, "tensor type");
    if (!st) st = rd_uint(c, 8, &t->offset, "tensor offset");
    if (st) return st;
    const el_type_layout *ti = gguf_tensor_layout(t->type);
    if (!ti)
        return el_error(EL_ERR_UNSUPPORTED, "%s: tensor '%.*s' has unknown type id %u (offset %zu)",
                        c->name, nl, t->name.ptr, t->type, at);
    if (t->ne[0] % ti->block_size != 0)
        return el_error(EL_ERR_FORMAT,
                        "%s: tensor '%.*s': row of %lld elements is not a multiple of the %s block "
                        "size %lld (offset %zu)",
                        c->name, nl, t->name.ptr, (long long)t->ne[0], ti->name,
                        (long long)ti->block_size, at);
    /* the bytes, and the product of the dimensions with zeros counted as ones (so that a row
     * count ne[1]*ne[2]*ne[3] never overflows, even in an empty tensor), must fit */
    uint64_t bytes, elems = 1;
    bool ok = mul_ok((uint64_t)(t->ne[0] / ti->block_size), ti->type_size, &bytes);
    if (ok && t->ne[0] > 0) bytes += ti->row_header; /* small: cannot overflow */
    for (int d = 0; d < GGUF_MAX_DIMS && ok; d++)
        ok = (d == 0 || mul_ok(bytes, (uint64_t)t->ne[d], &bytes)) &&
             mul_ok(elems, t->ne[d] ? (uint64_t)t->ne[d] : 1, &elems) && elems <= INT64_MAX;
    if (!ok)
        return el_error(EL_ERR_FORMAT, "%s: tensor '%.*s': size overflows (offset %zu)", c->name,
                        nl, t->name.ptr, at);
    t->nbytes = bytes;
    return EL_OK;
}

/* ------------------------------------------------------------ duplicates */

static int cmp_str(gguf_str a, gguf_str b) {
    size_t n = a.len < b.len ? (size_t)a.len : (size_t)b.len;
    int r = memcmp(a.ptr, b.ptr, n);
    if (r) return r;
    return a.len < b.len ? -1 : a.len > b.len;
}

static int cmp_str_ptr(const void *a, const void *b) {
    return cmp_str(**(const gguf_str *const *)a, **(const gguf_str *const *)b);
}

/* Sorts pointers to the n names (stride bytes apart) and refuses a repeated one. */
static el_status check_unique(const char *name, const void *first, size_t stride, uint64_t n,
                              const char *what) {
    if (n < 2) return EL_OK;
    const gguf_str **v = malloc((size_t)n * sizeof *v);
    if (!v) return el_error(EL_ERR_NOMEM, "%s: no memory to check %s names", name, what);
    for (uint64_t i = 0; i < n; i++) v[i] = (const gguf_str *)((const char *)first + i * stride);
    qsort(v, (size_t)n, sizeof *v, cmp_str_ptr);
    el_status st = EL_OK;
    for (uint64_t i = 1; i < n && !st; i++)
        if (cmp_str(*v[i - 1], *v[i]) == 0)
            st = el_error(EL_ERR_FORMAT, "%s: duplicate %s '%.*s'", name, what,
                          (int)(v[i]->len < 200 ? v[i]->len : 200), v[i]->ptr);
    free(v);
    return st;
}

static int cmp_tensor_offset(const void *a, const void *b) {
    const gguf_tensor *x = *(const gguf_tensor *const *)a, *y = *(const gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Tensors with data must not share bytes (a writer bug or a crafted file). */
static el_status check_no_overlap(gguf_file *f) {
    if (f->n_tensors < 2) return EL_OK;
    const gguf_tensor **v = malloc((size_t)f->n_tensors * sizeof *v);
    if (!v) return el_error(EL_ERR_NOMEM, "%s: no memory to check tensor offsets", f->path);
    for (uint64_t i = 0; i < f->n_tensors; i++) v[i] = &f->tensors[i];
    qsort(v, (size_t)f->n_tensors, sizeof *v, cmp_tensor_offset);
    el_status st = EL_OK;
    const gguf_tensor *prev = NULL;
    for (uint64_t i = 0; i < f->n_tensors && !st; i++) {
        if (v[i]->nbytes == 0) continue;
        if (prev && prev->offset + prev->nbytes > v[i]->offset)
            st = el_error(EL_ERR_FORMAT, "%s: tensors '%.*s' and '%.*s' overlap", f->path,
                          (int)(prev->name.len < 200 ? prev->name.len : 200), prev->name.ptr,
                          (int)(v[i]->name.len < 200 ? v[i]->name.len : 200), v[i]->name.ptr);
        prev = v[i];
    }
    free(v);
    return st;
}

/* ------------------------------------------------------------------ open */

static el_status read_alignment(gguf_file *f) {
    f->alignment = 32;
    const gguf_kv *kv = gguf_find(f, "general.alignment");
    if (!kv) return EL_OK;
    if (kv->type == GGUF_TYPE_STRING || kv->type == GGUF_TYPE_ARRAY || kv->type == GGUF_TYPE_BOOL ||
        kv->type == GGUF_TYPE_FLOAT32 || kv->type == GGUF_TYPE_FLOAT64 ||
        (is_signed_int(kv->type) && kv->v.i64 <= 0))
        return el_error(EL_ERR_FORMAT, "%s: general.alignment must be a positive integer", f->path);
    uint64_t a = kv->v.u64;
    if (a == 0 || (a & (a - 1)) != 0)
        return el_error(EL_ERR_FORMAT, "%s: general.alignment %llu is not a power of two", f->path,
                        (unsigned long long)a);
    f->alignment = a;
    return EL_OK;
}

static el_status parse(gguf_file *f) {
    cursor c = {f->map.data, f->map.size, 0, f->path};
    uint32_t magic, version;
    el_status st = rd_u32(&c, &magic, "header");
    if (st) return st;
    if (magic != 0x46554747u) /* "GGUF" */
        return el_error(EL_ERR_FORMAT, "%s: not a GGUF file (bad magic) (offset 0)", f->path);
    if ((st = rd_u32(&c, &version, "header"))) return st;
    if (version == 1)
        return el_error(
            EL_ERR_UNSUPPORTED,
            "%s: GGUF version 1 is not supported (only 2 and 3); convert the file again", f->path);
    if (version != 2 && version != 3)
        return el_error(EL_ERR_UNSUPPORTED, "%s: unsupported GGUF version %u (only 2 and 3)%s",
                        f->path, version, (version & 0xFFFF) == 0 ? " (a big-endian file?)" : "");
    f->version = version;
    if ((st = rd_uint(&c, 8, &f->n_tensors, "header"))) return st;
    if ((st = rd_uint(&c, 8, &f->n_kv, "header"))) return st;

    /* a key/value takes at least 8+1+4+1 bytes, a tensor info 8+1+4+8+4+8 */
    uint64_t left = remaining(&c);
    if (f->n_kv > left / 14 || f->n_tensors > left / 33 || f->n_kv * 14 + f->n_tensors * 33 > left)
        return el_error(
            EL_ERR_FORMAT,
            "%s: %llu keys and %llu tensors cannot fit in the %llu bytes left (offset 8)", f->path,
            (unsigned long long)f->n_kv, (unsigned long long)f->n_tensors,
            (unsigned long long)left);
    if (f->n_kv) {
        f->kv = calloc((size_t)f->n_kv, sizeof *f->kv);
        if (!f->kv)
            return el_error(EL_ERR_NOMEM, "%s: no memory for %llu keys", f->path,
                            (unsigned long long)f->n_kv);
    }
    for (uint64_t i = 0; i < f->n_kv; i++) {
        /* so that gguf_close frees only what was read */
        if ((st = rd_kv(&c, &f->kv[i]))) {
            f->n_kv = i + 1;
            return st;
        }
    }
    if (f->n_kv > 1 && (st = check_unique(f->path, &f->kv[0].key, sizeof *f->kv, f->n_kv, "key")))
        return st;
    if ((st = read_alignment(f))) return st;

    if (f->n_tensors) {
        f->tensors = calloc((size_t)f->n_tensors, sizeof *f->tensors);
        if (!f->tensors)
            return el_error(EL_ERR_NOMEM, "%s: no memory for %llu tensors", f->path,
                            (unsigned long long)f->n_tensors);
    }
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if ((st = rd_tensor_info(&c, &f->tensors[i]))) return st;
    if (f->n_tensors > 1 && (st = check_unique(f->path, &f->tensors[0].name, sizeof *f->tensors,
                                               f->n_tensors, "tensor name")))
        return st;

    /* the data section starts at the next multiple of the alignment; a file without tensors
     * may end before it */
    uint64_t start = c.pos, pad = (f->alignment - start % f->alignment) % f->alignment;
    if (pad > remaining(&c)) {
        if (f->n_tensors)
            return el_error(EL_ERR_FORMAT, "%s: truncated before the tensor data (offset %zu)",
                            f->path, c.pos);
        pad = remaining(&c);
    }
    start += pad;
    f->data = f->map.data ? f->map.data + start : NULL;
    uint64_t data_size = f->map.size - start;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        int nl = (int)(t->name.len < 200 ? t->name.len : 200);
        if (t->offset % f->alignment)
            return el_error(EL_ERR_FORMAT,
                            "%s: tensor '%.*s' offset %llu is not a multiple of the "
                            "alignment %llu",
                            f->path, nl, t->name.ptr, (unsigned long long)t->offset,
                            (unsigned long long)f->alignment);
        if (t->offset > data_size || t->nbytes > data_size - t->offset)
            return el_error(
                EL_ERR_FORMAT,
                "%s: tensor '%.*s' (%llu bytes at data offset %llu) extends past the end "
                "of the file (offset %llu)",
                f->path, nl, t->name.ptr, (unsigned long long)t->nbytes,
                (unsigned long long)t->offset, (unsigned long long)(start + t->offset));
        t->data = f->data + t->offset;
    }
    return check_no_overlap(f);
}

static el_status open_common(gguf_file *f, gguf_file **out) {
    el_status st = parse(f);
    if (st) {
        gguf_close(f);
        return st;
    }
    *out = f;
    return EL_OK;
}

static gguf_file *alloc_file(const char *name) {
    gguf_file *f = calloc(1, sizeof *f);
    char *p = strdup(name ? name : "(memory)");
    if (!f || !p) {
        free(f);
        free(p);
        return NULL;
    }
    f->path = p;
    return f;
}

el_status gguf_open(const char *path, gguf_file **out) {
    *out = NULL;
    gguf_file *f = alloc_file(path);
    if (!f) return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    el_status st = el_map_file(path, &f->map);
    if (st) {
        gguf_close(f);
        return st;
    }
    f->owns_map = true;
    return open_common(f, out);
}

el_status gguf_open_memory(const void *data, size_t size, const char *name, gguf_file **out) {
    *out = NULL;
    gguf_file *f = alloc_file(name);
    if (!f) return el_error(EL_ERR_NOMEM, "%s: out of memory", name ? name : "(memory)");
    f->map.data = data;
    f->map.size = size;
    f->owns_map = false;
    return open_common(f, out);
}

void gguf_close(gguf_file *f) {
    if (!f) return;
    for (uint64_t i = 0; i < f->n_kv && f->kv; i++) free(f->kv[i].arr_str);
    free(f->kv);
    free(f->tensors);
    if (f->owns_map) el_unmap_file(&f->map);
    free((char *)f->path);
    free(f);
}

bool gguf_is_gguf_file(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return false;
    char magic[4];
    bool ok = fread(magic, 1, 4, fp) == 4 && memcmp(magic, "GGUF", 4) == 0;
    fclose(fp);
    return ok;
}
