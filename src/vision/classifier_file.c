/* classifier_file.c - writing and reading the digit classifier's GGUF. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "vision/classifier.h"
#include "vision/model_file.h"

static const char arch[] = "edgelora-digit-classifier";

static const char *const shape_keys[4] = {
    "edgelora-digit-classifier.channels1", "edgelora-digit-classifier.channels2",
    "edgelora-digit-classifier.features", "edgelora-digit-classifier.classes"};

el_status el_cnet_save(const char *path, const el_cnet *n, const float *p) {
    gguf_writer *w = gguf_writer_create();
    if (!w) return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    el_status st = gguf_writer_set_str(w, "general.architecture", arch);
    const int32_t shape[4] = {n->c.c1, n->c.c2, n->c.n_feat, n->c.n_class};
    for (int i = 0; i < 4 && st == EL_OK; i++)
        st = gguf_writer_set_u32(w, shape_keys[i], (uint32_t)shape[i]);
    if (st == EL_OK) st = el_ttable_write(w, &n->tb, p);
    if (st == EL_OK) st = gguf_writer_write(w, path);
    gguf_writer_free(w);
    return st;
}

el_status el_cnet_load(const char *path, el_cnet *n, float **p) {
    gguf_file *f;
    *p = NULL;
    memset(n, 0, sizeof *n);
    el_status st = gguf_open(path, &f);
    if (st != EL_OK) return st;
    gguf_str a = {0};
    if (gguf_get_str(f, "general.architecture", &a) != EL_OK || !gguf_str_eq(a, arch)) {
        st = el_error(EL_ERR_MISMATCH,
                      "%s: not a digit classifier (architecture '%.*s', expected '%s')", path,
                      (int)a.len, a.ptr ? a.ptr : "", arch);
        gguf_close(f);
        return st;
    }
    int32_t shape[4] = {0};
    for (int i = 0; i < 4 && st == EL_OK; i++)
        if ((st = gguf_get_i32(f, shape_keys[i], &shape[i])) == EL_ERR_NOT_FOUND)
            st = el_error(EL_ERR_FORMAT, "%s: digit classifier without the key %s", path,
                          shape_keys[i]);
    el_cnet_config c = {shape[0], shape[1], shape[2], shape[3]};
    if (st == EL_OK && (st = el_cnet_init(n, &c)) != EL_OK) el_error_prefix("%s", path);
    if (st == EL_OK && !(*p = malloc(n->tb.n_floats * sizeof **p)))
        st = el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    if (st == EL_OK) st = el_ttable_read(f, path, &n->tb, *p);
    for (size_t i = 0; st == EL_OK && i < n->tb.n_floats; i++)
        if (!isfinite((*p)[i])) st = el_error(EL_ERR_FORMAT, "%s: a weight is not finite", path);
    gguf_close(f);
    if (st != EL_OK) {
        free(*p);
        *p = NULL;
        el_cnet_free(n);
    }
    return st;
}
