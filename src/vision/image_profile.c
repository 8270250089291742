/* image_profile.c - the image model's quantization profiles (edgelora-tools.h): calibration
 * and the file (docs/formats.md, "edgelora-unet-profile"): the precision and
 * the model's shape as keys, and per convolution weight W a one-element F32 tensor
 * W.input_amax, the largest |input| calibration saw. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "vision/image_model.h"

static const char arch[] = "edgelora-unet-profile";

const char *el_image_precision_name(el_image_precision p) {
    return p == EL_IMAGE_W8A16 ? "w8a16" : p == EL_IMAGE_W8A8 ? "w8a8" : "float";
}

el_image_precision el_image_profile_precision(const el_image_profile *pr) {
    return pr->q.precision;
}

void el_image_profile_free(el_image_profile *pr) {
    if (!pr) return;
    free(pr->amax);
    el_unet_quant_free(&pr->q);
    free(pr);
}

el_status el_image_profile_from_ranges(el_image_model *m, el_image_precision precision,
                                       float *amax, el_image_profile **out) {
    el_image_profile *pr = calloc(1, sizeof *pr);
    if (!pr) {
        free(amax);
        return el_error(EL_ERR_NOMEM, "image profile: out of memory");
    }
    pr->m = m;
    pr->amax = amax;
    el_status st = el_unet_quant_init(&pr->q, &m->u, m->p, precision, amax);
    if (st != EL_OK) {
        el_image_profile_free(pr);
        return st;
    }
    *out = pr;
    return EL_OK;
}

el_status el_image_profile_calibrate(el_image_model *m, const el_image_params *p, int32_t n,
                                     el_image_precision precision, el_image_profile **out) {
    if (precision != EL_IMAGE_W8A16 && precision != EL_IMAGE_W8A8)
        return el_error(EL_ERR_INVALID_ARG, "image profile: precision '%s' has no scales",
                        el_image_precision_name(precision));
    float *amax = calloc((size_t)m->u.tb.n, sizeof *amax);
    uint8_t *img = malloc((size_t)(n > 0 ? n : 1) * 784);
    el_status st = amax && img ? EL_OK : el_error(EL_ERR_NOMEM, "image profile: out of memory");
    if (st == EL_OK) st = el_image_generate_observed(m, p, n, img, amax);
    free(img);
    if (st != EL_OK) {
        free(amax);
        return st;
    }
    return el_image_profile_from_ranges(m, precision, amax, out);
}

static const char *shape_keys[3] = {"edgelora-unet-profile.channels",
                                    "edgelora-unet-profile.embedding_length",
                                    "edgelora-unet-profile.groups"};

el_status el_image_profile_save(const el_image_profile *pr, const char *path) {
    const el_unet *u = &pr->m->u;
    gguf_writer *w = gguf_writer_create();
    if (!w) return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    el_status st = gguf_writer_set_str(w, "general.architecture", arch);
    if (st == EL_OK)
        st = gguf_writer_set_str(w, "edgelora-unet-profile.precision",
                                 el_image_precision_name(pr->q.precision));
    const int32_t shape[3] = {u->c.ch, u->c.temb, u->c.groups};
    for (int i = 0; i < 3 && st == EL_OK; i++)
        st = gguf_writer_set_u32(w, shape_keys[i], (uint32_t)shape[i]);
    for (int32_t i = 0; i < u->tb.n && st == EL_OK; i++) {
        if (!pr->q.w[i].data) continue;
        char name[96];
        snprintf(name, sizeof name, "%s.input_amax", u->tb.t[i].name);
        int64_t ne[1] = {1};
        st = gguf_writer_add_tensor(w, name, EL_TYPE_F32, 1, ne, &pr->amax[i], sizeof(float));
    }
    if (st == EL_OK) st = gguf_writer_write(w, path);
    gguf_writer_free(w);
    return st;
}

el_status el_unet_profile_read(const char *path, const el_unet *u, float *amax,
                               el_image_precision *precision) {
    gguf_file *f;
    el_status st = gguf_open(path, &f);
    if (st != EL_OK) return st;
    gguf_str a = {0}, prec = {0};
    if (gguf_get_str(f, "general.architecture", &a) != EL_OK || !gguf_str_eq(a, arch)) {
        st = el_error(EL_ERR_MISMATCH,
                      "%s: not an image model's profile (architecture '%.*s', expected '%s')",
                      path, (int)a.len, a.ptr ? a.ptr : "", arch);
        gguf_close(f);
        return st;
    }
    *precision = EL_IMAGE_FLOAT;
    if (gguf_get_str(f, "edgelora-unet-profile.precision", &prec) == EL_OK)
        *precision = gguf_str_eq(prec, "w8a16")  ? EL_IMAGE_W8A16
                     : gguf_str_eq(prec, "w8a8") ? EL_IMAGE_W8A8
                                                 : EL_IMAGE_FLOAT;
    if (*precision == EL_IMAGE_FLOAT)
        st = el_error(EL_ERR_FORMAT, "%s: precision '%.*s' (w8a16 or w8a8 expected)", path,
                      (int)prec.len, prec.ptr ? prec.ptr : "");
    const int32_t shape[3] = {u->c.ch, u->c.temb, u->c.groups};
    for (int i = 0; i < 3 && st == EL_OK; i++) {
        int32_t v = 0;
        if (gguf_get_i32(f, shape_keys[i], &v) != EL_OK || v != shape[i])
            st = el_error(EL_ERR_MISMATCH,
                          "%s: made for another image model (%s %d, the model's %d)", path,
                          shape_keys[i], v, shape[i]);
    }
    memset(amax, 0, (size_t)u->tb.n * sizeof *amax);
    for (int32_t i = 0; i < u->tb.n && st == EL_OK; i++) {
        char name[96];
        snprintf(name, sizeof name, "%s.input_amax", u->tb.t[i].name);
        const gguf_tensor *t = gguf_find_tensor(f, name);
        if (!t) continue;
        if (t->type != EL_TYPE_F32 || t->ne[0] != 1 || t->ne[1] != 1)
            st = el_error(EL_ERR_FORMAT, "%s: %s is not one F32 value", path, name);
        else
            memcpy(&amax[i], t->data, sizeof *amax);
        if (st == EL_OK && !(amax[i] > 0.0f && amax[i] < 1e30f))
            st = el_error(EL_ERR_FORMAT, "%s: %s = %g (a positive finite range expected)", path,
                          name, amax[i]);
    }
    gguf_close(f);
    return st;
}

el_status el_image_profile_load(el_image_model *m, const char *path, el_image_profile **out) {
    float *amax = calloc((size_t)m->u.tb.n, sizeof *amax);
    if (!amax) return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    el_image_precision precision;
    el_status st = el_unet_profile_read(path, &m->u, amax, &precision);
    if (st != EL_OK) {
        free(amax);
        return st;
    }
    st = el_image_profile_from_ranges(m, precision, amax, out);
    if (st != EL_OK) el_error_prefix("%s", path);
    return st;
}
