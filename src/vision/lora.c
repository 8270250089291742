/* lora.c - the image model's LoRA adapters (see lora.h). */
#include "vision/lora.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "train/rng.h"

/* Convolution weights are the tensors named "...weight" with cin k k columns that a conv owns:
 * every decayed tensor but the time MLP and the blocks' embedding projections. */
static bool adapted(const el_ttensor *t) {
    size_t n = strlen(t->name);
    return t->decay && n > 7 && !strcmp(t->name + n - 7, ".weight") &&
           strncmp(t->name, "time.", 5) && !strstr(t->name, ".temb.");
}

el_status el_vlora_init(el_vlora *l, const el_unet *u, int32_t rank, float alpha, const char *task,
                        uint64_t seed) {
    memset(l, 0, sizeof *l);
    if (rank < 1 || !(alpha > 0))
        return el_error(EL_ERR_INVALID_ARG, "image adapter: rank %d, alpha %g (both positive)",
                        rank, alpha);
    l->rank = rank, l->alpha = alpha, l->scale = alpha / (float)rank;
    snprintf(l->task, sizeof l->task, "%s", task ? task : "");
    l->slot = malloc((size_t)u->tb.n * sizeof *l->slot);
    l->tb.t = calloc((size_t)u->tb.n * 2, sizeof *l->tb.t);
    if (!l->slot || !l->tb.t) {
        el_vlora_free(l);
        return el_error(EL_ERR_NOMEM, "image adapter: out of memory");
    }
    for (int32_t i = 0; i < u->tb.n; i++) {
        const el_ttensor *t = &u->tb.t[i];
        l->slot[i] = -1;
        if (!adapted(t)) continue;
        size_t stem = strlen(t->name) - 7;
        el_ttensor *a = &l->tb.t[l->tb.n], *b = a + 1;
        snprintf(a->name, sizeof a->name, "%.*s.lora_a", (int)stem, t->name);
        snprintf(b->name, sizeof b->name, "%.*s.lora_b", (int)stem, t->name);
        a->n_out = rank, a->n_in = t->n_in, a->offset = l->tb.n_floats;
        l->tb.n_floats += (size_t)(rank * t->n_in);
        b->n_out = t->n_out, b->n_in = rank, b->offset = l->tb.n_floats;
        l->tb.n_floats += (size_t)(rank * t->n_out);
        l->slot[i] = l->tb.n;
        l->tb.n += 2;
    }
    l->w = calloc(l->tb.n_floats, sizeof *l->w);
    if (!l->w) {
        el_vlora_free(l);
        return el_error(EL_ERR_NOMEM, "image adapter: out of memory");
    }
    el_rng r;
    el_rng_seed(&r, seed);
    for (int32_t k = 0; k < l->tb.n; k += 2) {
        const el_ttensor *a = &l->tb.t[k];
        float bound = 1.0f / sqrtf((float)a->n_in);
        for (int64_t j = 0; j < a->n_out * a->n_in; j++)
            l->w[a->offset + (size_t)j] = bound * (2.0f * el_rng_uniform(&r) - 1.0f);
    }
    return EL_OK;
}

void el_vlora_free(el_vlora *l) {
    free(l->slot);
    free(l->tb.t);
    free(l->w);
    memset(l, 0, sizeof *l);
}

void el_vlora_merge(const el_vlora *l, const el_unet *u, const float *base, float *merged) {
    memcpy(merged, base, u->tb.n_floats * sizeof *merged);
    for (int32_t i = 0; i < u->tb.n; i++) {
        if (l->slot[i] < 0) continue;
        const el_ttensor *t = &u->tb.t[i], *a = &l->tb.t[l->slot[i]], *b = a + 1;
        /* W [cout][K] += s B [cout][r] A [r][K] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)t->n_out, (int)t->n_in, l->rank,
                    l->scale, l->w + b->offset, l->rank, l->w + a->offset, (int)t->n_in, 1.0f,
                    merged + t->offset, (int)t->n_in);
    }
}

void el_vlora_grad(const el_vlora *l, const el_unet *u, const float *gbase, float *g) {
    for (int32_t i = 0; i < u->tb.n; i++) {
        if (l->slot[i] < 0) continue;
        const el_ttensor *t = &u->tb.t[i], *a = &l->tb.t[l->slot[i]], *b = a + 1;
        const float *gw = gbase + t->offset;
        /* dA [r][K] = s B^T [r][cout] dW [cout][K]; dB [cout][r] = s dW [cout][K] A^T [K][r] */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, l->rank, (int)t->n_in, (int)t->n_out,
                    l->scale, l->w + b->offset, l->rank, gw, (int)t->n_in, 0.0f, g + a->offset,
                    (int)t->n_in);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)t->n_out, l->rank, (int)t->n_in,
                    l->scale, gw, (int)t->n_in, l->w + a->offset, (int)t->n_in, 0.0f, g + b->offset,
                    l->rank);
    }
}

el_status el_vlora_save(const char *path, const el_vlora *l, const el_unet *u) {
    gguf_writer *w = gguf_writer_create();
    if (!w) return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    el_status st = gguf_writer_set_str(w, "general.type", "adapter");
    if (st == EL_OK) st = gguf_writer_set_str(w, "general.architecture", "edgelora-unet");
    if (st == EL_OK) st = gguf_writer_set_str(w, "adapter.type", "lora");
    if (st == EL_OK) st = gguf_writer_set_f32(w, "adapter.lora.alpha", l->alpha);
    if (st == EL_OK) st = gguf_writer_set_str(w, "edgelora-unet.task", l->task);
    for (int32_t k = 0; k < l->tb.n && st == EL_OK; k++) {
        const el_ttensor *t = &l->tb.t[k];
        int64_t ne[2] = {t->n_in, t->n_out};
        st = gguf_writer_add_tensor(w, t->name, EL_TYPE_F32, 2, ne, l->w + t->offset,
                                    (uint64_t)(t->n_in * t->n_out) * sizeof *l->w);
    }
    if (st == EL_OK) st = gguf_writer_write(w, path);
    gguf_writer_free(w);
    return st;
}

el_status el_vlora_load(const char *path, el_vlora *l, const el_unet *u) {
    memset(l, 0, sizeof *l);
    gguf_file *f;
    el_status st = gguf_open(path, &f);
    if (st != EL_OK) return st;
    gguf_str ty = {0}, ar = {0}, task = {0};
    float alpha = 0.0f;
    if (gguf_get_str(f, "general.type", &ty) != EL_OK || !gguf_str_eq(ty, "adapter"))
        st = el_error(EL_ERR_FORMAT, "%s: not an adapter (general.type '%.*s')", path, (int)ty.len,
                      ty.ptr ? ty.ptr : "");
    else if (gguf_get_str(f, "general.architecture", &ar) != EL_OK ||
             !gguf_str_eq(ar, "edgelora-unet"))
        st = el_error(EL_ERR_MISMATCH, "%s: an adapter for '%.*s', not for the image model", path,
                      (int)ar.len, ar.ptr ? ar.ptr : "");
    else if (gguf_get_f32(f, "adapter.lora.alpha", &alpha) != EL_OK || !(alpha > 0))
        st = el_error(EL_ERR_FORMAT, "%s: no positive adapter.lora.alpha", path);
    int32_t rank = 0;
    if (st == EL_OK) { /* the rank is the rows of the first A */
        const gguf_tensor *a = gguf_find_tensor(f, "conv_in.lora_a");
        if (!a)
            st = el_error(EL_ERR_FORMAT, "%s: tensor conv_in.lora_a missing", path);
        else
            rank = (int32_t)a->ne[1];
    }
    if (st == EL_OK) {
        gguf_get_str(f, "edgelora-unet.task", &task);
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)task.len, task.ptr ? task.ptr : "");
        st = el_vlora_init(l, u, rank, alpha, name, 0);
    }
    for (int32_t k = 0; k < l->tb.n && st == EL_OK; k++) {
        const el_ttensor *t = &l->tb.t[k];
        const gguf_tensor *gt = gguf_find_tensor(f, t->name);
        if (!gt)
            st = el_error(EL_ERR_MISMATCH,
                          "%s: tensor %s missing (an adapter for another "
                          "shape of the image model?)",
                          path, t->name);
        else if (gt->type != EL_TYPE_F32 || gt->ne[0] != t->n_in || gt->ne[1] != t->n_out)
            st = el_error(EL_ERR_MISMATCH,
                          "%s: tensor %s is not F32 [%lld][%lld] as the model "
                          "needs",
                          path, t->name, (long long)t->n_out, (long long)t->n_in);
        else
            memcpy(l->w + t->offset, gt->data, (size_t)(t->n_in * t->n_out) * sizeof *l->w);
    }
    if (st == EL_OK && (uint64_t)l->tb.n != f->n_tensors)
        st = el_error(EL_ERR_MISMATCH, "%s: %llu tensors where the model's adapter has %d", path,
                      (unsigned long long)f->n_tensors, l->tb.n);
    gguf_close(f);
    if (st != EL_OK) el_vlora_free(l);
    return st;
}
