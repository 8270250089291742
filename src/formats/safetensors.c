/* safetensors.c - safetensors reader (validating everything against the file), writer, and the
 * sharded-model index. */
#include "formats/safetensors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/outfile.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[EL_ST_DTYPE_COUNT] = {
    [EL_ST_UNKNOWN] = {"?", 0},       [EL_ST_BOOL] = {"BOOL", 1},   [EL_ST_U8] = {"U8", 1},
    [EL_ST_I8] = {"I8", 1},           [EL_ST_F8_E5M2] = {"F8_E5M2", 1},
    [EL_ST_F8_E4M3] = {"F8_E4M3", 1}, [EL_ST_I16] = {"I16", 2},     [EL_ST_U16] = {"U16", 2},
    [EL_ST_F16] = {"F16", 2},         [EL_ST_BF16] = {"BF16", 2},   [EL_ST_I32] = {"I32", 4},
    [EL_ST_U32] = {"U32", 4},         [EL_ST_F32] = {"F32", 4},     [EL_ST_F64] = {"F64", 8},
    [EL_ST_I64] = {"I64", 8},         [EL_ST_U64] = {"U64", 8},
};

const char *el_st_dtype_name(el_st_dtype t) {
    return (unsigned)t < EL_ST_DTYPE_COUNT ? dtypes[t].name : "?";
}

size_t el_st_dtype_size(el_st_dtype t) {
    return (unsigned)t < EL_ST_DTYPE_COUNT ? dtypes[t].size : 0;
}

el_st_dtype el_st_dtype_from_name(const char *name) {
    for (int t = 1; t < EL_ST_DTYPE_COUNT; t++)
        if (strcmp(name, dtypes[t].name) == 0) return (el_st_dtype)t;
    return EL_ST_UNKNOWN;
}

/* a*b into *out unless it exceeds INT64_MAX (a, b >= 0) */
static bool mul_fits(int64_t a, int64_t b, int64_t *out) {
    if (a != 0 && b > INT64_MAX / a) return false;
    *out = a * b;
    return true;
}

static int cmp_bytes(const char *a, size_t alen, const char *b, size_t blen) {
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen > blen) - (alen < blen);
}

static int cmp_tensor_name(const void *a, const void *b) {
    const el_st_tensor *x = a, *y = b;
    return cmp_bytes(x->name, x->name_len, y->name, y->name_len);
}

static int cmp_tensor_ptr_offset(const void *a, const void *b) {
    const el_st_tensor *x = *(const el_st_tensor *const *)a, *y = *(const el_st_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return (x->nbytes > y->nbytes) - (x->nbytes < y->nbytes);
}

/* Binary search over tensors sorted by name. */
static const el_st_tensor *find_sorted(const el_st_tensor *const *ptrs, const el_st_tensor *arr,
                                       size_t n, const char *name) {
    size_t len = strlen(name), lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const el_st_tensor *t = ptrs ? ptrs[mid] : &arr[mid];
        int c = cmp_bytes(t->name, t->name_len, name, len);
        if (c == 0) return t;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* ---------------------------------------------------------------- reading */

/* A non-negative exact integer, or false. */
static bool get_count(const el_json_value *v, int64_t *out) {
    return el_json_int(v, out) && *out >= 0;
}

/* Fills t from one header member (everything but its place among the others). */
static el_status read_tensor(el_st_file *f, const el_json_value *info, el_st_tensor *t) {
    const char *path = f->path;
    if (el_json_type(info) != EL_JSON_OBJECT)
        return el_error(EL_ERR_FORMAT, "%s: tensor '%s': expected an object, found %s", path,
                        t->name, el_json_kind_name(el_json_type(info)));
    t->dtype_name = el_json_str(el_json_get(info, "dtype"), NULL);
    if (!t->dtype_name)
        return el_error(EL_ERR_FORMAT, "%s: tensor '%s': no \"dtype\" string", path, t->name);
    t->dtype = el_st_dtype_from_name(t->dtype_name);

    const el_json_value *shape = el_json_get(info, "shape");
    if (el_json_type(shape) != EL_JSON_ARRAY)
        return el_error(EL_ERR_FORMAT, "%s: tensor '%s': no \"shape\" array", path, t->name);
    if (el_json_len(shape) > EL_ST_MAX_DIMS)
        return el_error(EL_ERR_UNSUPPORTED, "%s: tensor '%s' has %zu dimensions (at most %d)",
                        path, t->name, el_json_len(shape), EL_ST_MAX_DIMS);
    t->n_dims = (int)el_json_len(shape);
    t->n_elements = 1;
    for (int d = 0; d < t->n_dims; d++) {
        if (!get_count(el_json_at(shape, (size_t)d), &t->shape[d]))
            return el_error(EL_ERR_FORMAT, "%s: tensor '%s': shape[%d] is not a non-negative "
                            "integer", path, t->name, d);
        if (!mul_fits(t->n_elements, t->shape[d], &t->n_elements))
            return el_error(EL_ERR_FORMAT, "%s: tensor '%s': shape overflows", path, t->name);
    }

    const el_json_value *offs = el_json_get(info, "data_offsets");
    int64_t begin, end;
    if (el_json_len(offs) != 2 || el_json_type(offs) != EL_JSON_ARRAY ||
        !get_count(el_json_at(offs, 0), &begin) || !get_count(el_json_at(offs, 1), &end))
        return el_error(EL_ERR_FORMAT, "%s: tensor '%s': \"data_offsets\" is not an array of two "
                        "non-negative integers", path, t->name);
    if (begin > end || (uint64_t)end > f->data_size)
        return el_error(EL_ERR_FORMAT, "%s: tensor '%s': data_offsets [%lld, %lld] outside the "
                        "%llu-byte data section", path, t->name, (long long)begin, (long long)end,
                        (unsigned long long)f->data_size);
    t->offset = (uint64_t)begin;
    t->nbytes = (uint64_t)(end - begin);
    t->data = f->data + begin;
    int64_t want;
    if (t->dtype != EL_ST_UNKNOWN &&
        (!mul_fits(t->n_elements, (int64_t)el_st_dtype_size(t->dtype), &want) ||
         (uint64_t)want != t->nbytes))
        return el_error(EL_ERR_FORMAT, "%s: tensor '%s': %llu bytes for %lld elements of %s",
                        path, t->name, (unsigned long long)t->nbytes, (long long)t->n_elements,
                        t->dtype_name);
    return EL_OK;
}

static el_status read_metadata(el_st_file *f, const el_json_value *m) {
    if (f->metadata) return el_error(EL_ERR_FORMAT, "%s: two \"__metadata__\" entries", f->path);
    if (el_json_type(m) != EL_JSON_OBJECT)
        return el_error(EL_ERR_FORMAT, "%s: \"__metadata__\" is not an object", f->path);
    for (size_t i = 0; i < el_json_len(m); i++)
        if (el_json_type(el_json_at(m, i)) != EL_JSON_STRING)
            return el_error(EL_ERR_FORMAT, "%s: \"__metadata__\" value of '%s' is not a string",
                            f->path, el_json_key_at(m, i, NULL));
    f->metadata = m;
    return EL_OK;
}

/* The byte ranges, in offset order, must tile the data section exactly. */
static el_status check_coverage(el_st_file *f) {
    if (f->n_tensors == 0) {
        if (f->data_size != 0)
            return el_error(EL_ERR_FORMAT, "%s: %llu data bytes but no tensors", f->path,
                            (unsigned long long)f->data_size);
        return EL_OK;
    }
    const el_st_tensor **by_offset = malloc(f->n_tensors * sizeof *by_offset);
    if (!by_offset) return el_error(EL_ERR_NOMEM, "%s: out of memory", f->path);
    for (size_t i = 0; i < f->n_tensors; i++) by_offset[i] = &f->tensors[i];
    qsort(by_offset, f->n_tensors, sizeof *by_offset, cmp_tensor_ptr_offset);
    el_status st = EL_OK;
    uint64_t pos = 0;
    for (size_t i = 0; i < f->n_tensors && st == EL_OK; i++) {
        const el_st_tensor *t = by_offset[i];
        if (t->offset < pos)
            st = el_error(EL_ERR_FORMAT, "%s: tensor '%s' overlaps tensor '%s'", f->path, t->name,
                          by_offset[i - 1]->name);
        else if (t->offset > pos)
            st = el_error(EL_ERR_FORMAT, "%s: data bytes [%llu, %llu) belong to no tensor",
                          f->path, (unsigned long long)pos, (unsigned long long)t->offset);
        pos = t->offset + t->nbytes;
    }
    free(by_offset);
    if (st == EL_OK && pos != f->data_size)
        st = el_error(EL_ERR_FORMAT, "%s: data bytes [%llu, %llu) belong to no tensor", f->path,
                      (unsigned long long)pos, (unsigned long long)f->data_size);
    return st;
}

static el_status read_header(el_st_file *f, const uint8_t *data, size_t size) {
    if (size < 8)
        return el_error(EL_ERR_FORMAT, "%s: %zu bytes is too small for a safetensors file", f->path,
                        size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | data[i];
    if (n > EL_ST_MAX_HEADER)
        return el_error(EL_ERR_FORMAT, "%s: header length %llu exceeds the limit of %u bytes",
                        f->path, (unsigned long long)n, EL_ST_MAX_HEADER);
    if (n > size - 8)
        return el_error(EL_ERR_FORMAT, "%s: header length %llu exceeds the file size %zu",
                        f->path, (unsigned long long)n, size);
    f->data = data + 8 + n;
    f->data_size = size - 8 - n;
    el_status st = el_json_parse((const char *)data + 8, (size_t)n, f->path, &f->header);
    if (st != EL_OK) return st;
    const el_json_value *root = el_json_root(f->header);
    if (el_json_type(root) != EL_JSON_OBJECT)
        return el_error(EL_ERR_FORMAT, "%s: the header is not a JSON object", f->path);

    f->tensors = calloc(el_json_len(root) + 1, sizeof *f->tensors);
    if (!f->tensors) return el_error(EL_ERR_NOMEM, "%s: out of memory", f->path);
    for (size_t i = 0; i < el_json_len(root); i++) {
        size_t klen;
        const char *key = el_json_key_at(root, i, &klen);
        if (klen == 12 && memcmp(key, "__metadata__", 12) == 0) {
            st = read_metadata(f, el_json_at(root, i));
        } else {
            el_st_tensor *t = &f->tensors[f->n_tensors++];
            t->name = key;
            t->name_len = klen;
            t->file = f;
            st = read_tensor(f, el_json_at(root, i), t);
        }
        if (st != EL_OK) return st;
    }
    qsort(f->tensors, f->n_tensors, sizeof *f->tensors, cmp_tensor_name);
    for (size_t i = 1; i < f->n_tensors; i++)
        if (cmp_tensor_name(&f->tensors[i - 1], &f->tensors[i]) == 0)
            return el_error(EL_ERR_FORMAT, "%s: tensor '%s' is listed twice", f->path,
                            f->tensors[i].name);
    return check_coverage(f);
}

static el_status open_common(const char *name, el_st_file **out, el_st_file **f) {
    *out = NULL;
    *f = calloc(1, sizeof **f);
    if (*f && !((*f)->path = strdup(name ? name : "<memory>"))) {
        free(*f);
        *f = NULL;
    }
    return *f ? EL_OK : el_error(EL_ERR_NOMEM, "%s: out of memory", name ? name : "<memory>");
}

el_status el_st_open_memory(const void *data, size_t size, const char *name, el_st_file **out) {
    el_st_file *f;
    el_status st = open_common(name, out, &f);
    if (st == EL_OK) st = read_header(f, data, size);
    if (st != EL_OK) {
        el_st_close(f);
        return st;
    }
    *out = f;
    return EL_OK;
}

el_status el_st_open(const char *path, el_st_file **out) {
    el_st_file *f;
    el_status st = open_common(path, out, &f);
    if (st == EL_OK) st = el_map_file(path, &f->map);
    if (st == EL_OK) st = read_header(f, f->map.data, f->map.size);
    if (st != EL_OK) {
        el_st_close(f);
        return st;
    }
    *out = f;
    return EL_OK;
}

void el_st_close(el_st_file *f) {
    if (!f) return;
    el_unmap_file(&f->map);
    el_json_free(f->header);
    free(f->tensors);
    free(f->path);
    free(f);
}

const el_st_tensor *el_st_find(const el_st_file *f, const char *name) {
    return find_sorted(NULL, f->tensors, f->n_tensors, name);
}

/* The checks every "use" of a tensor makes, whichever way it was found. */
static el_status usable(const el_st_tensor *t, const char *where, const char *name,
                        const el_st_tensor **out) {
    *out = NULL;
    if (!t) return el_error(EL_ERR_NOT_FOUND, "%s: no tensor '%s'", where, name);
    if (t->dtype == EL_ST_UNKNOWN)
        return el_error(EL_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype '%s', which is not "
                        "supported", t->file->path, name, t->dtype_name);
    *out = t;
    return EL_OK;
}

el_status el_st_get(const el_st_file *f, const char *name, const el_st_tensor **out) {
    return usable(el_st_find(f, name), f->path, name, out);
}

const char *el_st_metadata(const el_st_file *f, const char *key) {
    return el_json_str(el_json_get(f->metadata, key), NULL);
}

/* ---------------------------------------------------------------- sharded models */

struct el_st_index {
    char *path;
    el_st_file **shards;
    size_t n_shards;
    const el_st_tensor **tensors; /* sorted by name */
    size_t n_tensors;
    el_json_doc *doc; /* the index JSON (NULL for a single file) */
};

typedef struct {
    const char *tensor;
    const char *shard;
    size_t shard_len;
} weight_entry;

static int cmp_entry_shard(const void *a, const void *b) {
    const weight_entry *x = a, *y = b;
    return cmp_bytes(x->shard, x->shard_len, y->shard, y->shard_len);
}

static int cmp_tensor_ptr_name(const void *a, const void *b) {
    return cmp_tensor_name(*(const el_st_tensor *const *)a, *(const el_st_tensor *const *)b);
}

static bool plain_file_name(const char *s, size_t len) {
    return len > 0 && strlen(s) == len && !strchr(s, '/') && strcmp(s, ".") != 0 &&
           strcmp(s, "..") != 0;
}

static el_status add_shard(el_st_index *ix, const char *file) {
    const char *slash = strrchr(ix->path, '/');
    size_t dir_len = slash ? (size_t)(slash - ix->path) + 1 : 0;
    char *path = malloc(dir_len + strlen(file) + 1);
    if (!path) return el_error(EL_ERR_NOMEM, "%s: out of memory", ix->path);
    memcpy(path, ix->path, dir_len);
    strcpy(path + dir_len, file);
    el_status st = el_st_open(path, &ix->shards[ix->n_shards]);
    free(path);
    if (st != EL_OK) {
        el_error_prefix("%s", ix->path);
        return st;
    }
    ix->n_shards++;
    return EL_OK;
}

/* Opens every shard of the weight map once and resolves each listed tensor in its shard. */
static el_status read_weight_map(el_st_index *ix, const el_json_value *map) {
    size_t n = el_json_len(map);
    weight_entry *e = malloc((n + 1) * sizeof *e);
    ix->shards = calloc(n + 1, sizeof *ix->shards);
    ix->tensors = malloc((n + 1) * sizeof *ix->tensors);
    if (!e || !ix->shards || !ix->tensors) {
        free(e);
        return el_error(EL_ERR_NOMEM, "%s: out of memory", ix->path);
    }
    el_status st = EL_OK;
    for (size_t i = 0; i < n && st == EL_OK; i++) {
        e[i].tensor = el_json_key_at(map, i, NULL);
        e[i].shard = el_json_str(el_json_at(map, i), &e[i].shard_len);
        if (!e[i].shard || !plain_file_name(e[i].shard, e[i].shard_len))
            st = el_error(EL_ERR_FORMAT, "%s: weight_map entry '%s' is not a file name in the "
                          "same directory", ix->path, e[i].tensor);
    }
    if (st == EL_OK) qsort(e, n, sizeof *e, cmp_entry_shard);
    for (size_t i = 0; i < n && st == EL_OK; i++) {
        if (i == 0 || cmp_entry_shard(&e[i - 1], &e[i]) != 0) st = add_shard(ix, e[i].shard);
        if (st != EL_OK) break;
        const el_st_file *shard = ix->shards[ix->n_shards - 1];
        const el_st_tensor *t = el_st_find(shard, e[i].tensor);
        if (!t)
            st = el_error(EL_ERR_FORMAT, "%s: tensor '%s' is not in %s as the weight_map says",
                          ix->path, e[i].tensor, shard->path);
        else
            ix->tensors[ix->n_tensors++] = t;
    }
    free(e);
    return st;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static el_status index_read(el_st_index *ix) {
    if (!ends_with(ix->path, ".json")) {
        ix->shards = calloc(1, sizeof *ix->shards);
        if (!ix->shards) return el_error(EL_ERR_NOMEM, "%s: out of memory", ix->path);
        el_status st = el_st_open(ix->path, &ix->shards[0]);
        if (st != EL_OK) return st;
        ix->n_shards = 1;
        const el_st_file *f = ix->shards[0];
        ix->tensors = malloc((f->n_tensors + 1) * sizeof *ix->tensors);
        if (!ix->tensors) return el_error(EL_ERR_NOMEM, "%s: out of memory", ix->path);
        for (size_t i = 0; i < f->n_tensors; i++) ix->tensors[i] = &f->tensors[i];
        ix->n_tensors = f->n_tensors;
        return EL_OK;
    }
    el_mapped_file m;
    el_status st = el_map_file(ix->path, &m);
    if (st != EL_OK) return st;
    st = el_json_parse((const char *)m.data, m.size, ix->path, &ix->doc);
    el_unmap_file(&m);
    if (st != EL_OK) return st;
    const el_json_value *map = el_json_get(el_json_root(ix->doc), "weight_map");
    if (el_json_type(map) != EL_JSON_OBJECT)
        return el_error(EL_ERR_FORMAT, "%s: no \"weight_map\" object", ix->path);
    if ((st = read_weight_map(ix, map)) != EL_OK) return st;
    qsort(ix->tensors, ix->n_tensors, sizeof *ix->tensors, cmp_tensor_ptr_name);
    for (size_t i = 1; i < ix->n_tensors; i++)
        if (cmp_tensor_ptr_name(&ix->tensors[i - 1], &ix->tensors[i]) == 0)
            return el_error(EL_ERR_FORMAT, "%s: tensor '%s' is listed twice in the weight_map",
                            ix->path, ix->tensors[i]->name);
    return EL_OK;
}

el_status el_st_index_open(const char *path, el_st_index **out) {
    *out = NULL;
    el_st_index *ix = calloc(1, sizeof *ix);
    if (!ix || !(ix->path = strdup(path))) {
        free(ix);
        return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    }
    el_status st = index_read(ix);
    if (st != EL_OK) {
        el_st_index_close(ix);
        return st;
    }
    *out = ix;
    return EL_OK;
}

void el_st_index_close(el_st_index *ix) {
    if (!ix) return;
    for (size_t i = 0; i < ix->n_shards; i++) el_st_close(ix->shards[i]);
    free(ix->shards);
    free(ix->tensors);
    el_json_free(ix->doc);
    free(ix->path);
    free(ix);
}

size_t el_st_index_count(const el_st_index *ix) { return ix->n_tensors; }

const el_st_tensor *el_st_index_at(const el_st_index *ix, size_t i) {
    return i < ix->n_tensors ? ix->tensors[i] : NULL;
}

const el_st_tensor *el_st_index_find(const el_st_index *ix, const char *name) {
    return find_sorted(ix->tensors, NULL, ix->n_tensors, name);
}

el_status el_st_index_get(const el_st_index *ix, const char *name, const el_st_tensor **out) {
    return usable(el_st_index_find(ix, name), ix->path, name, out);
}

/* ---------------------------------------------------------------- writer */

typedef struct {
    char *name;
    el_st_dtype dtype;
    int n_dims;
    int64_t shape[EL_ST_MAX_DIMS];
    const void *data;
    uint64_t nbytes;
} writer_tensor;

struct el_st_writer {
    writer_tensor *tensors;
    size_t n_tensors, cap_tensors;
    char **meta; /* key, value, key, value, ... */
    size_t n_meta, cap_meta;
};

el_st_writer *el_st_writer_create(void) { return calloc(1, sizeof(el_st_writer)); }

void el_st_writer_free(el_st_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_tensors; i++) free(w->tensors[i].name);
    for (size_t i = 0; i < 2 * w->n_meta; i++) free(w->meta[i]);
    free(w->tensors);
    free(w->meta);
    free(w);
}

/* Grows *arr (of *cap elements of size elem) to hold at least need elements. */
static bool grow(void *arr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t n = *cap ? 2 * *cap : 16;
    void *p = realloc(*(void **)arr, n * elem);
    if (!p) return false;
    *(void **)arr = p;
    *cap = n;
    return true;
}

static bool valid_utf8(const char *s) { return el_json_valid_utf8(s, strlen(s)); }

el_status el_st_writer_add(el_st_writer *w, const char *name, el_st_dtype dtype, int n_dims,
                           const int64_t *shape, const void *data, uint64_t nbytes) {
    if (strcmp(name, "__metadata__") == 0 || !valid_utf8(name))
        return el_error(EL_ERR_INVALID_ARG, "safetensors: bad tensor name '%s'", name);
    if (dtype <= EL_ST_UNKNOWN || dtype >= EL_ST_DTYPE_COUNT)
        return el_error(EL_ERR_INVALID_ARG, "safetensors: tensor '%s': bad dtype %d", name, dtype);
    if (n_dims < 0 || n_dims > EL_ST_MAX_DIMS)
        return el_error(EL_ERR_INVALID_ARG, "safetensors: tensor '%s': %d dimensions", name,
                        n_dims);
    int64_t n = 1;
    for (int d = 0; d < n_dims; d++)
        if (shape[d] < 0 || !mul_fits(n, shape[d], &n))
            return el_error(EL_ERR_INVALID_ARG, "safetensors: tensor '%s': bad shape", name);
    if (!mul_fits(n, (int64_t)el_st_dtype_size(dtype), &n) || (uint64_t)n != nbytes)
        return el_error(EL_ERR_INVALID_ARG, "safetensors: tensor '%s': %llu bytes do not match "
                        "its shape and dtype", name, (unsigned long long)nbytes);
    if (!grow(&w->tensors, &w->cap_tensors, w->n_tensors + 1, sizeof *w->tensors))
        return el_error(EL_ERR_NOMEM, "safetensors: out of memory");
    writer_tensor *t = &w->tensors[w->n_tensors];
    *t = (writer_tensor){.dtype = dtype, .n_dims = n_dims, .data = data, .nbytes = nbytes};
    if (n_dims > 0) memcpy(t->shape, shape, (size_t)n_dims * sizeof *shape);
    if (!(t->name = strdup(name))) return el_error(EL_ERR_NOMEM, "safetensors: out of memory");
    w->n_tensors++;
    return EL_OK;
}

el_status el_st_writer_set_metadata(el_st_writer *w, const char *key, const char *value) {
    if (!valid_utf8(key) || !valid_utf8(value))
        return el_error(EL_ERR_INVALID_ARG, "safetensors: metadata '%s' is not valid UTF-8", key);
    char *v = strdup(value);
    if (!v) return el_error(EL_ERR_NOMEM, "safetensors: out of memory");
    for (size_t i = 0; i < w->n_meta; i++) {
        if (strcmp(w->meta[2 * i], key) == 0) {
            free(w->meta[2 * i + 1]);
            w->meta[2 * i + 1] = v;
            return EL_OK;
        }
    }
    char *k = strdup(key);
    if (!k || !grow(&w->meta, &w->cap_meta, 2 * w->n_meta + 2, sizeof *w->meta)) {
        free(k);
        free(v);
        return el_error(EL_ERR_NOMEM, "safetensors: out of memory");
    }
    w->meta[2 * w->n_meta] = k;
    w->meta[2 * w->n_meta + 1] = v;
    w->n_meta++;
    return EL_OK;
}

static int cmp_writer_name(const void *a, const void *b) {
    return strcmp(((const writer_tensor *)a)->name, ((const writer_tensor *)b)->name);
}

/* The reference order: larger elements first (so each tensor stays aligned), then by name. */
static int cmp_writer_order(const void *a, const void *b) {
    const writer_tensor *x = a, *y = b;
    size_t sx = el_st_dtype_size(x->dtype), sy = el_st_dtype_size(y->dtype);
    if (sx != sy) return sx > sy ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The header JSON, padded with spaces to a multiple of 8 bytes. */
static el_status build_header(const el_st_writer *w, char **out, size_t *out_len) {
    FILE *f = open_memstream(out, out_len);
    if (!f) return el_error(EL_ERR_NOMEM, "safetensors: out of memory");
    putc('{', f);
    if (w->n_meta > 0) {
        fputs("\"__metadata__\":{", f);
        for (size_t i = 0; i < w->n_meta; i++) {
            if (i) putc(',', f);
            el_json_write_string(f, w->meta[2 * i], strlen(w->meta[2 * i]));
            putc(':', f);
            el_json_write_string(f, w->meta[2 * i + 1], strlen(w->meta[2 * i + 1]));
        }
        putc('}', f);
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        const writer_tensor *t = &w->tensors[i];
        if (i || w->n_meta) putc(',', f);
        el_json_write_string(f, t->name, strlen(t->name));
        fprintf(f, ":{\"dtype\":\"%s\",\"shape\":[", el_st_dtype_name(t->dtype));
        for (int d = 0; d < t->n_dims; d++)
            fprintf(f, "%s%lld", d ? "," : "", (long long)t->shape[d]);
        fprintf(f, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)offset,
                (unsigned long long)(offset + t->nbytes));
        offset += t->nbytes;
    }
    putc('}', f);
    for (long n = ftell(f); n % 8 != 0; n++) putc(' ', f);
    bool ok = !ferror(f);
    if (fclose(f) != 0 || !ok) {
        free(*out);
        *out = NULL;
        return el_error(EL_ERR_NOMEM, "safetensors: out of memory building the header");
    }
    return EL_OK;
}

static el_status write_all(FILE *f, const void *p, size_t n, const char *path) {
    if (n && fwrite(p, 1, n, f) != n)
        return el_error(EL_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return EL_OK;
}

el_status el_st_writer_write(el_st_writer *w, const char *path) {
    qsort(w->tensors, w->n_tensors, sizeof *w->tensors, cmp_writer_name);
    for (size_t i = 1; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i - 1].name, w->tensors[i].name) == 0)
            return el_error(EL_ERR_INVALID_ARG, "%s: tensor '%s' added twice", path,
                            w->tensors[i].name);
    qsort(w->tensors, w->n_tensors, sizeof *w->tensors, cmp_writer_order);
    char *header;
    size_t header_len;
    el_status st = build_header(w, &header, &header_len);
    if (st != EL_OK) return st;

    el_outfile out;
    st = el_outfile_open(&out, path);
    if (st == EL_OK) {
        uint8_t len8[8];
        for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)header_len >> (8 * i));
        st = write_all(out.f, len8, 8, path);
        if (st == EL_OK) st = write_all(out.f, header, header_len, path);
        for (size_t i = 0; i < w->n_tensors && st == EL_OK; i++)
            st = write_all(out.f, w->tensors[i].data, (size_t)w->tensors[i].nbytes, path);
        if (st == EL_OK)
            st = el_outfile_commit(&out);
        else
            el_outfile_discard(&out);
    }
    free(header);
    return st;
}
