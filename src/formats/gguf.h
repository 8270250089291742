/* gguf.h - reading and writing GGUF files (version 2 and 3), as specified by ggml's GGUF spec.
 *
 * The reader validates everything against the file before anything is used: every count,
 * length, offset, type and tensor extent. It never allocates more than a small multiple of the
 * file size, so a corrupted count is refused quickly. Strings and tensor data point into the
 * read-only mapping; nothing is copied. */
#ifndef EL_FORMATS_GGUF_H
#define EL_FORMATS_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/mapfile.h"
#include "core/types.h"
#include "edgelora.h"

typedef enum gguf_value_type {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
    GGUF_TYPE_COUNT
} gguf_value_type;

typedef struct gguf_str {
    const char *ptr; /* into the mapping; not NUL-terminated */
    uint64_t len;
} gguf_str;

typedef struct gguf_kv {
    gguf_str key;
    gguf_value_type type;
    /* scalars (all integer types widened; bool as 0/1) */
    union {
        uint64_t u64;
        int64_t i64;
        double f64;
        gguf_str str;
    } v;
    /* arrays: element type, count, raw little-endian elements (not for strings), and for arrays
     * of strings an index of every element */
    gguf_value_type arr_type;
    uint64_t arr_n;
    const uint8_t *arr_data;
    gguf_str *arr_str;
} gguf_kv;

#define GGUF_MAX_DIMS 4

typedef struct gguf_tensor {
    gguf_str name;
    uint32_t n_dims;
    int64_t ne[GGUF_MAX_DIMS]; /* ne[0] is the contiguous (row) dimension; unused dims are 1 */
    uint32_t type;             /* ggml type id; see core/types.h */
    uint64_t offset;           /* relative to the data section */
    const void *data;          /* into the mapping */
    uint64_t nbytes;
} gguf_tensor;

typedef struct gguf_file {
    const char *path; /* as given to gguf_open (or the name given to gguf_open_memory) */
    el_mapped_file map;
    uint32_t version;
    uint64_t n_kv;
    gguf_kv *kv;
    uint64_t n_tensors;
    gguf_tensor *tensors;
    uint64_t alignment;
    const uint8_t *data; /* start of the tensor data section (NULL for an empty buffer) */
    bool owns_map;       /* gguf_open mapped the file; gguf_open_memory did not */
} gguf_file;

/* Opens and validates a GGUF file. Errors name the file and the problem. */
el_status gguf_open(const char *path, gguf_file **out);
/* The same over a buffer the caller keeps alive (for fuzzing and tests). */
el_status gguf_open_memory(const void *data, size_t size, const char *name, gguf_file **out);
void gguf_close(gguf_file *f);

/* Cheap check of the magic at the start of a file ("GGUF"). */
bool gguf_is_gguf_file(const char *path);

/* Lookup: returns the kv or NULL. */
const gguf_kv *gguf_find(const gguf_file *f, const char *key);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);

/* Typed getters. Each returns EL_OK and sets *out, EL_ERR_NOT_FOUND if the key is absent (out
 * untouched), or EL_ERR_FORMAT (with a message naming file and key) if it has the wrong type.
 * Integer getters accept any integer type whose value fits. */
el_status gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out);
el_status gguf_get_i32(const gguf_file *f, const char *key, int32_t *out);
el_status gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out);
el_status gguf_get_i64(const gguf_file *f, const char *key, int64_t *out);
el_status gguf_get_f32(const gguf_file *f, const char *key, float *out); /* f32 or f64 */
el_status gguf_get_bool(const gguf_file *f, const char *key, bool *out);
el_status gguf_get_str(const gguf_file *f, const char *key, gguf_str *out);
/* Arrays: the kv (must be an array with elements of type elem) or an error as above. */
el_status gguf_get_arr(const gguf_file *f, const char *key, gguf_value_type elem,
                       const gguf_kv **out);

bool gguf_str_eq(gguf_str s, const char *cstr);
bool gguf_str_ends_with(gguf_str s, const char *suffix);
const char *gguf_type_name(gguf_value_type t);
/* Bytes of one element of a fixed-size value type; 0 for string and array. */
size_t gguf_value_size(gguf_value_type t);

/* The layout of a tensor type a file may hold (core/types.h: every type with a layout but our
 * activation types, which exist only at run time); NULL for the others, which the reader and
 * the writer refuse. A file may hold types we can size but not compute with. */
const el_type_layout *gguf_tensor_layout(uint32_t type);

/* ---------------------------------------------------------------- writer */

typedef struct gguf_writer gguf_writer;

gguf_writer *gguf_writer_create(void); /* NULL when out of memory */
void gguf_writer_free(gguf_writer *w);
/* Setting a key that exists replaces it. Strings and arrays are copied. */
el_status gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v);
el_status gguf_writer_set_i32(gguf_writer *w, const char *key, int32_t v);
el_status gguf_writer_set_u64(gguf_writer *w, const char *key, uint64_t v);
el_status gguf_writer_set_f32(gguf_writer *w, const char *key, float v);
el_status gguf_writer_set_bool(gguf_writer *w, const char *key, bool v);
el_status gguf_writer_set_str(gguf_writer *w, const char *key, const char *v);
el_status gguf_writer_set_arr(gguf_writer *w, const char *key, gguf_value_type elem,
                              const void *data, uint64_t n);
el_status gguf_writer_set_arr_str(gguf_writer *w, const char *key, const char *const *strs,
                                  uint64_t n);
/* Copies every key of src (e.g. to convert or quantize a file). */
el_status gguf_writer_copy_kv(gguf_writer *w, const gguf_file *src);
/* Drops a key set or copied before (nothing if there is none): a copy of a file without it. */
void gguf_writer_remove(gguf_writer *w, const char *key);
/* Adds a tensor; data (nbytes, which must match type and shape) is referenced, not copied, and
 * must stay valid until gguf_writer_write returns. */
el_status gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                 const int64_t *ne, const void *data, uint64_t nbytes);
/* Produces a tensor's bytes when the file is written: fills buf (nbytes) for the tensor added
 * with `user`. Lets a converter hold one tensor at a time instead of the whole model. */
typedef el_status (*gguf_fill_fn)(void *user, void *buf, uint64_t nbytes);
/* Adds a tensor whose data fill produces at write time, in the order tensors were added. */
el_status gguf_writer_add_tensor_fill(gguf_writer *w, const char *name, uint32_t type,
                                      uint32_t n_dims, const int64_t *ne, uint64_t nbytes,
                                      gguf_fill_fn fill, void *user);
/* Writes version 3 with the alignment of general.alignment (default 32) to a temporary file
 * beside path, then renames it over path: a failed write leaves no partial file. */
el_status gguf_writer_write(gguf_writer *w, const char *path);

#endif
