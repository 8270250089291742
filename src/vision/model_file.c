/* model_file.c - writing and reading the image model's GGUF. */
#include "vision/model_file.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"

static const char arch[] = "edgelora-unet";

el_status el_ttable_write(gguf_writer *w, const el_ttable *tb, const float *p) {
    el_status st = EL_OK;
    for (int32_t i = 0; i < tb->n && st == EL_OK; i++) {
        const el_ttensor *t = &tb->t[i];
        int64_t ne[2] = {t->n_in, t->n_out};
        st = gguf_writer_add_tensor(w, t->name, EL_TYPE_F32, t->n_out == 1 ? 1 : 2, ne,
                                    p + t->offset, (uint64_t)(t->n_in * t->n_out) * sizeof *p);
    }
    return st;
}

el_status el_ttable_read(const gguf_file *f, const char *path, const el_ttable *tb, float *p) {
    for (int32_t i = 0; i < tb->n; i++) {
        const el_ttensor *t = &tb->t[i];
        const gguf_tensor *gt = gguf_find_tensor(f, t->name);
        if (!gt) return el_error(EL_ERR_FORMAT, "%s: tensor %s missing", path, t->name);
        if (gt->type != EL_TYPE_F32 || gt->ne[0] != t->n_in || gt->ne[1] != t->n_out ||
            gt->ne[2] != 1 || gt->ne[3] != 1)
            return el_error(EL_ERR_FORMAT, "%s: tensor %s is not F32 [%lld][%lld]", path, t->name,
                            (long long)t->n_out, (long long)t->n_in);
        memcpy(p + t->offset, gt->data, (size_t)(t->n_in * t->n_out) * sizeof *p);
    }
    return EL_OK;
}

el_status el_unet_save(const char *path, const el_unet *u, const float *p,
                       const el_unet_file_info *info) {
    gguf_writer *w = gguf_writer_create();
    if (!w) return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    el_status st = gguf_writer_set_str(w, "general.architecture", arch);
    if (st == EL_OK) st = gguf_writer_set_u32(w, "edgelora-unet.image_side", EL_UNET_SIDE);
    if (st == EL_OK) st = gguf_writer_set_u32(w, "edgelora-unet.in_channels", EL_UNET_IN);
    if (st == EL_OK) st = gguf_writer_set_u32(w, "edgelora-unet.channels", (uint32_t)u->c.ch);
    if (st == EL_OK)
        st = gguf_writer_set_u32(w, "edgelora-unet.embedding_length", (uint32_t)u->c.temb);
    if (st == EL_OK) st = gguf_writer_set_u32(w, "edgelora-unet.groups", (uint32_t)u->c.groups);
    if (st == EL_OK) st = gguf_writer_set_u32(w, "edgelora-unet.classes", (uint32_t)u->c.n_class);
    if (st == EL_OK) st = gguf_writer_set_u32(w, "edgelora-unet.timesteps", (uint32_t)u->c.n_steps);
    if (st == EL_OK) st = gguf_writer_set_f32(w, "edgelora-unet.beta_1", info->beta_1);
    if (st == EL_OK) st = gguf_writer_set_f32(w, "edgelora-unet.beta_T", info->beta_T);
    if (st == EL_OK) st = el_ttable_write(w, &u->tb, p);
    if (st == EL_OK) st = gguf_writer_write(w, path);
    gguf_writer_free(w);
    return st;
}

static el_status get_i32(const gguf_file *f, const char *key, int32_t *out) {
    el_status st = gguf_get_i32(f, key, out);
    if (st == EL_ERR_NOT_FOUND)
        return el_error(EL_ERR_FORMAT, "%s: image model without the key %s", f->path, key);
    return st;
}

el_status el_unet_load(const char *path, el_unet *u, float **p, el_unet_file_info *info) {
    gguf_file *f;
    *p = NULL;
    memset(u, 0, sizeof *u);
    el_status st = gguf_open(path, &f);
    if (st != EL_OK) return st;
    gguf_str a = {0};
    if (gguf_get_str(f, "general.architecture", &a) != EL_OK || !gguf_str_eq(a, arch)) {
        st =
            el_error(EL_ERR_MISMATCH, "%s: not an image model (architecture '%.*s', expected '%s')",
                     path, (int)a.len, a.ptr ? a.ptr : "", arch);
        gguf_close(f);
        return st;
    }
    el_unet_config c;
    int32_t side = 0, in = 0;
    st = get_i32(f, "edgelora-unet.image_side", &side);
    if (st == EL_OK) st = get_i32(f, "edgelora-unet.in_channels", &in);
    if (st == EL_OK) st = get_i32(f, "edgelora-unet.channels", &c.ch);
    if (st == EL_OK) st = get_i32(f, "edgelora-unet.embedding_length", &c.temb);
    if (st == EL_OK) st = get_i32(f, "edgelora-unet.groups", &c.groups);
    if (st == EL_OK) st = get_i32(f, "edgelora-unet.classes", &c.n_class);
    if (st == EL_OK) st = get_i32(f, "edgelora-unet.timesteps", &c.n_steps);
    if (st == EL_OK &&
        (st = gguf_get_f32(f, "edgelora-unet.beta_1", &info->beta_1)) == EL_ERR_NOT_FOUND)
        st = el_error(EL_ERR_FORMAT, "%s: image model without edgelora-unet.beta_1", path);
    if (st == EL_OK &&
        (st = gguf_get_f32(f, "edgelora-unet.beta_T", &info->beta_T)) == EL_ERR_NOT_FOUND)
        st = el_error(EL_ERR_FORMAT, "%s: image model without edgelora-unet.beta_T", path);
    if (st == EL_OK && (side != EL_UNET_SIDE || in != EL_UNET_IN))
        st = el_error(EL_ERR_UNSUPPORTED,
                      "%s: images of %d pixels and %d input channels (this "
                      "version: %d and %d)",
                      path, side, in, EL_UNET_SIDE, EL_UNET_IN);
    if (st == EL_OK && !(info->beta_1 > 0 && info->beta_1 <= info->beta_T && info->beta_T < 1))
        st = el_error(EL_ERR_FORMAT, "%s: bad noise schedule (beta %g .. %g)", path, info->beta_1,
                      info->beta_T);
    if (st == EL_OK && (st = el_unet_init(u, &c)) != EL_OK) el_error_prefix("%s", path);
    if (st == EL_OK && !(*p = malloc(u->tb.n_floats * sizeof **p)))
        st = el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    if (st == EL_OK) st = el_ttable_read(f, path, &u->tb, *p);
    gguf_close(f);
    if (st != EL_OK) {
        free(*p);
        *p = NULL;
        el_unet_free(u);
    }
    return st;
}
