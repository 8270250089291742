/* gguf_get.c - lookups and typed getters over an opened GGUF file. */
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"

bool gguf_str_eq(gguf_str s, const char *cstr) {
    size_t n = strlen(cstr);
    return s.len == n && memcmp(s.ptr, cstr, n) == 0;
}

bool gguf_str_ends_with(gguf_str s, const char *suffix) {
    size_t n = strlen(suffix);
    return s.len >= n && memcmp(s.ptr + s.len - n, suffix, n) == 0;
}

const gguf_kv *gguf_find(const gguf_file *f, const char *key) {
    for (uint64_t i = 0; i < f->n_kv; i++)
        if (gguf_str_eq(f->kv[i].key, key)) return &f->kv[i];
    return NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if (gguf_str_eq(f->tensors[i].name, name)) return &f->tensors[i];
    return NULL;
}

/* Finds key and reads it as a signed or unsigned integer of any width. */
static el_status get_int(const gguf_file *f, const char *key, const char *want, bool *neg,
                         uint64_t *mag, const gguf_kv **found) {
    const gguf_kv *kv = gguf_find(f, key);
    *found = kv;
    if (!kv) return EL_ERR_NOT_FOUND;
    switch (kv->type) {
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_UINT64:
        *neg = false;
        *mag = kv->v.u64;
        return EL_OK;
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_INT16:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_INT64:
        *neg = kv->v.i64 < 0;
        *mag = *neg ? (uint64_t)0 - (uint64_t)kv->v.i64 : (uint64_t)kv->v.i64;
        return EL_OK;
    default:
        return el_error(EL_ERR_FORMAT, "%s: key '%s' is %s, expected %s", f->path, key,
                        gguf_type_name(kv->type), want);
    }
}

static el_status out_of_range(const gguf_file *f, const char *key, bool neg, uint64_t mag,
                              const char *want) {
    return el_error(EL_ERR_FORMAT, "%s: key '%s' = %s%llu does not fit in %s", f->path, key,
                    neg ? "-" : "", (unsigned long long)mag, want);
}

el_status gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out) {
    bool neg;
    uint64_t mag;
    const gguf_kv *kv;
    el_status st = get_int(f, key, "an integer", &neg, &mag, &kv);
    if (st) return st;
    if (neg || mag > UINT32_MAX) return out_of_range(f, key, neg, mag, "u32");
    *out = (uint32_t)mag;
    return EL_OK;
}

el_status gguf_get_i32(const gguf_file *f, const char *key, int32_t *out) {
    bool neg;
    uint64_t mag;
    const gguf_kv *kv;
    el_status st = get_int(f, key, "an integer", &neg, &mag, &kv);
    if (st) return st;
    if (neg ? mag > (uint64_t)INT32_MAX + 1 : mag > INT32_MAX)
        return out_of_range(f, key, neg, mag, "i32");
    *out = neg ? (int32_t)(-(int64_t)mag) : (int32_t)mag;
    return EL_OK;
}

el_status gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out) {
    bool neg;
    uint64_t mag;
    const gguf_kv *kv;
    el_status st = get_int(f, key, "an integer", &neg, &mag, &kv);
    if (st) return st;
    if (neg) return out_of_range(f, key, neg, mag, "u64");
    *out = mag;
    return EL_OK;
}

el_status gguf_get_i64(const gguf_file *f, const char *key, int64_t *out) {
    bool neg;
    uint64_t mag;
    const gguf_kv *kv;
    el_status st = get_int(f, key, "an integer", &neg, &mag, &kv);
    if (st) return st;
    if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > INT64_MAX)
        return out_of_range(f, key, neg, mag, "i64");
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return EL_OK;
}

el_status gguf_get_f32(const gguf_file *f, const char *key, float *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return EL_ERR_NOT_FOUND;
    if (kv->type != GGUF_TYPE_FLOAT32 && kv->type != GGUF_TYPE_FLOAT64)
        return el_error(EL_ERR_FORMAT, "%s: key '%s' is %s, expected a float", f->path, key,
                        gguf_type_name(kv->type));
    *out = (float)kv->v.f64;
    return EL_OK;
}

el_status gguf_get_bool(const gguf_file *f, const char *key, bool *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return EL_ERR_NOT_FOUND;
    if (kv->type != GGUF_TYPE_BOOL)
        return el_error(EL_ERR_FORMAT, "%s: key '%s' is %s, expected bool", f->path, key,
                        gguf_type_name(kv->type));
    *out = kv->v.u64 != 0;
    return EL_OK;
}

el_status gguf_get_str(const gguf_file *f, const char *key, gguf_str *out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return EL_ERR_NOT_FOUND;
    if (kv->type != GGUF_TYPE_STRING)
        return el_error(EL_ERR_FORMAT, "%s: key '%s' is %s, expected string", f->path, key,
                        gguf_type_name(kv->type));
    *out = kv->v.str;
    return EL_OK;
}

el_status gguf_get_arr(const gguf_file *f, const char *key, gguf_value_type elem,
                       const gguf_kv **out) {
    const gguf_kv *kv = gguf_find(f, key);
    if (!kv) return EL_ERR_NOT_FOUND;
    if (kv->type != GGUF_TYPE_ARRAY || kv->arr_type != elem)
        return el_error(EL_ERR_FORMAT, "%s: key '%s' is %s%s%s, expected an array of %s", f->path,
                        key, gguf_type_name(kv->type), kv->type == GGUF_TYPE_ARRAY ? " of " : "",
                        kv->type == GGUF_TYPE_ARRAY ? gguf_type_name(kv->arr_type) : "",
                        gguf_type_name(elem));
    *out = kv;
    return EL_OK;
}
