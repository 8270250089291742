/* safetensors.h - reading and writing Hugging Face safetensors files ("st" for short), and
 * models sharded over several of them by a model.safetensors.index.json.
 *
 * The format: an 8-byte little-endian header length N, N bytes of a JSON object, then the data
 * section. The object maps each tensor name to {"dtype": "F32", "shape": [2, 3],
 * "data_offsets": [begin, end]} (offsets relative to the data section) and may hold a
 * "__metadata__" object of string values.
 *
 * The reader is as strict as the reference implementation: N at most EL_ST_MAX_HEADER and within
 * the file, strict JSON, shapes of non-negative integers whose product does not overflow,
 * end - begin == elements x dtype size, and the tensors' byte ranges cover the data section
 * exactly (no overlap, no gap, nothing after the last one). Tensor names are unique. A dtype
 * this code does not know is accepted when the file is read (its range is still checked) and
 * refused by el_st_get, where the tensor is used. Errors are EL_ERR_FORMAT and name the file.
 *
 * Tensor data points into the read-only mapping; nothing is copied. Data is aligned to its
 * element size when the writer ordered tensors by element size, as the reference writer and ours
 * do; other writers may leave it unaligned, so readers of wide types should check or memcpy.
 * An open file is read-only and may be shared between threads. */
#ifndef EL_FORMATS_SAFETENSORS_H
#define EL_FORMATS_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/mapfile.h"
#include "edgelora.h"
#include "formats/json.h"

#define EL_ST_MAX_HEADER 100000000u /* bytes of header JSON: the reference implementation's limit */
#define EL_ST_MAX_DIMS 8

/* Element types. Ids are ours (safetensors names dtypes by string); append only. */
typedef enum el_st_dtype {
    EL_ST_UNKNOWN = 0,
    EL_ST_BOOL,
    EL_ST_U8,
    EL_ST_I8,
    EL_ST_F8_E5M2,
    EL_ST_F8_E4M3,
    EL_ST_I16,
    EL_ST_U16,
    EL_ST_F16,
    EL_ST_BF16,
    EL_ST_I32,
    EL_ST_U32,
    EL_ST_F32,
    EL_ST_F64,
    EL_ST_I64,
    EL_ST_U64,
    EL_ST_DTYPE_COUNT
} el_st_dtype;

const char *el_st_dtype_name(el_st_dtype t); /* "F32"; "?" for EL_ST_UNKNOWN */
size_t el_st_dtype_size(el_st_dtype t);      /* bytes per element; 0 for EL_ST_UNKNOWN */
el_st_dtype el_st_dtype_from_name(const char *name); /* exact, as in files; else EL_ST_UNKNOWN */

typedef struct el_st_file el_st_file;

typedef struct el_st_tensor {
    const char *name; /* NUL-terminated, owned by the file */
    size_t name_len;
    el_st_dtype dtype;      /* EL_ST_UNKNOWN if dtype_name is not one we know */
    const char *dtype_name; /* as written in the file */
    int n_dims;             /* 0 for a scalar */
    int64_t shape[EL_ST_MAX_DIMS]; /* as in the file (row-major: the last dim is contiguous) */
    int64_t n_elements;            /* product of the shape; 1 for a scalar */
    uint64_t offset;               /* of the data, relative to the data section */
    uint64_t nbytes;
    const void *data;        /* into the file's mapping */
    const el_st_file *file;  /* the file it is in (file->path for messages) */
} el_st_tensor;

struct el_st_file {
    char *path; /* as given to el_st_open, or the name given to el_st_open_memory */
    el_mapped_file map; /* empty when opened from memory */
    el_json_doc *header;
    const el_json_value *metadata; /* the "__metadata__" object, or NULL */
    size_t n_tensors;
    el_st_tensor *tensors; /* sorted by name (bytewise) */
    const uint8_t *data;   /* the data section */
    uint64_t data_size;
};

/* Opens and validates a safetensors file (mapped read-only). */
el_status el_st_open(const char *path, el_st_file **out);
/* The same over a buffer the caller keeps alive while the file is open (for fuzzing and tests). */
el_status el_st_open_memory(const void *data, size_t size, const char *name, el_st_file **out);
void el_st_close(el_st_file *f);

/* The tensor called name, or NULL. */
const el_st_tensor *el_st_find(const el_st_file *f, const char *name);
/* The tensor called name, for use: EL_ERR_NOT_FOUND if absent, EL_ERR_UNSUPPORTED if its dtype is
 * unknown, each with a message naming the file and the tensor. */
el_status el_st_get(const el_st_file *f, const char *name, const el_st_tensor **out);
/* A "__metadata__" value, or NULL. */
const char *el_st_metadata(const el_st_file *f, const char *key);

/* ---------------------------------------------------------------- sharded models */

/* The tensors of a model, from one .safetensors file or from every shard named by the
 * "weight_map" of a model.safetensors.index.json (chosen by the path ending in ".json"). Shards
 * are file names in the index's directory; each is opened once. Every tensor in the weight map
 * must be in its shard; tensors of a shard that the map does not list are not visible. */
typedef struct el_st_index el_st_index;

el_status el_st_index_open(const char *path, el_st_index **out);
void el_st_index_close(el_st_index *ix);
size_t el_st_index_count(const el_st_index *ix);
const el_st_tensor *el_st_index_at(const el_st_index *ix, size_t i); /* sorted by name */
const el_st_tensor *el_st_index_find(const el_st_index *ix, const char *name);
el_status el_st_index_get(const el_st_index *ix, const char *name, const el_st_tensor **out);

/* ---------------------------------------------------------------- writer */

typedef struct el_st_writer el_st_writer;

el_st_writer *el_st_writer_create(void); /* NULL when out of memory */
void el_st_writer_free(el_st_writer *w);
/* Adds a tensor. The name is copied; data (nbytes, which must equal the shape's element count
 * times the dtype size) is referenced and must stay valid until el_st_writer_write returns. */
el_status el_st_writer_add(el_st_writer *w, const char *name, el_st_dtype dtype, int n_dims,
                           const int64_t *shape, const void *data, uint64_t nbytes);
/* Sets a "__metadata__" string (copied); setting a key again replaces its value. */
el_status el_st_writer_set_metadata(el_st_writer *w, const char *key, const char *value);
/* Writes the file as the reference implementation does: tensors ordered by element size
 * (largest first) then name, so that each is aligned; compact header JSON with the metadata
 * first, padded with spaces to a multiple of 8 bytes. Written to a temporary file beside path
 * and renamed over it, so a failed write leaves no partial file. */
el_status el_st_writer_write(el_st_writer *w, const char *path);

#endif
