/* slice.c - el_compress_slice: a sorted model pruned at one rate by copying the kept prefixes
 * into an ordinary, smaller model (fewer MLP channels, shorter V heads). The reference that
 * quality against rate is measured with, and that a pruned run time can be checked against.
 * Q/K are not sliced: the normal engine would scale their scores by the shorter head. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress/plan.h"
#include "core/error.h"
#include "edgelora-tools.h"
#include "formats/gguf.h"
#include "kernels/types.h"
#include "model/model.h"
#include "model/prune.h"

/* Bytes of the kept part of one weight, copied row by row. */
typedef struct sliced {
    void *data;
    size_t nbytes;
    int64_t ne[2];
} sliced;

/* Of each of n_groups groups of group_rows rows of w, the first keep_rows rows; of each such
 * row, n_segs segments of seg elements that start every seg_stride elements. */
static el_status slice_weight(const el_weight *w, int64_t n_groups, int64_t group_rows,
                              int64_t keep_rows, int64_t seg, int64_t seg_stride, int64_t n_segs,
                              sliced *out) {
    size_t seg_bytes = el_row_size(w->type, seg), stride_bytes = el_row_size(w->type, seg_stride);
    size_t row_out = seg_bytes * (size_t)n_segs;
    out->ne[0] = seg * n_segs;
    out->ne[1] = n_groups * keep_rows;
    out->nbytes = row_out * (size_t)out->ne[1];
    if (!(out->data = malloc(out->nbytes))) return el_error(EL_ERR_NOMEM, "slice: out of memory");
    uint8_t *dst = out->data;
    for (int64_t g = 0; g < n_groups; g++)
        for (int64_t r = 0; r < keep_rows; r++) {
            const uint8_t *src =
                (const uint8_t *)w->data + (size_t)(g * group_rows + r) * w->row_bytes;
            for (int64_t s = 0; s < n_segs; s++, dst += seg_bytes)
                memcpy(dst, src + (size_t)s * stride_bytes, seg_bytes);
        }
    return EL_OK;
}

/* O's rows with each head's columns cut to vo: dequantized, cut and quantized again in O's type
 * (exact for float types), as the UniQL writer writes its column pieces, because the cut
 * columns need not be whole blocks. */
static el_status slice_o(const el_weight *w, int64_t n_head, int64_t dv, int64_t vo, sliced *out) {
    const el_type_kernels *k = el_type_kernels_get(w->type);
    size_t row_out = el_row_size(w->type, n_head * vo);
    out->ne[0] = n_head * vo;
    out->ne[1] = w->n_out;
    out->nbytes = row_out * (size_t)w->n_out;
    out->data = malloc(out->nbytes);
    float *row = malloc((size_t)(w->n_in + n_head * vo) * sizeof *row);
    if (!out->data || !row) {
        free(row);
        return el_error(EL_ERR_NOMEM, "slice: out of memory");
    }
    float *cut = row + w->n_in;
    for (int64_t r = 0; r < w->n_out; r++) {
        k->to_float((const uint8_t *)w->data + (size_t)r * w->row_bytes, row, w->n_in);
        for (int64_t h = 0; h < n_head; h++)
            memcpy(cut + h * vo, row + h * dv, (size_t)vo * sizeof *row);
        el_type_weight_quantizer(k)(cut, (uint8_t *)out->data + (size_t)r * row_out, n_head * vo);
    }
    free(row);
    return EL_OK;
}

el_status el_compress_slice(const char *sorted_path, float rate, const char *out_path) {
    el_model *m;
    el_model_params mp = el_model_default_params();
    el_status st = el_model_load(sorted_path, &mp, &m);
    if (st) return st;
    const el_hparams *hp = &m->hp;
    if (m->gguf && el_prune_is_compressed(m->gguf)) {
        el_model_free(m);
        return el_error(EL_ERR_INVALID_ARG,
                        "%s is in the UniQL layout: slice the sorted model "
                        "(compress --sorted) instead",
                        sorted_path);
    }
    if (!m->gguf || hp->fused_qkv || hp->fused_gate_up) {
        el_model_free(m);
        return el_error(EL_ERR_UNSUPPORTED, "%s: slicing needs a GGUF without fused tensors",
                        sorted_path);
    }
    el_plan_grain grain =
        el_plan_grain_for(hp, m->layers[0].w_down.type, m->layers[0].wo.type, false);
    el_uniql_plan plan;
    float rates[2] = {0, rate};
    st = el_plan_build(hp, rates, rate > 0 ? 2 : 1, grain, &plan);
    if (st) {
        el_model_free(m);
        return st;
    }
    int32_t r = plan.n_rates - 1;
    int64_t ff = plan.ff_kept[r * hp->n_layer], vo = plan.vo_kept[r * hp->n_layer];
    int64_t dv = hp->head_dim_v, e = hp->n_embd;
    sliced *out = calloc((size_t)hp->n_layer * 4, sizeof *out);
    if (!out) st = el_error(EL_ERR_NOMEM, "slice: out of memory");
    for (int il = 0; st == EL_OK && il < hp->n_layer; il++) {
        const el_layer *l = &m->layers[il];
        sliced *o = out + il * 4;
        if ((st = slice_weight(&l->w_gate, 1, hp->n_ff, ff, e, e, 1, &o[0])) ||
            (st = slice_weight(&l->w_up, 1, hp->n_ff, ff, e, e, 1, &o[1])) ||
            (st = slice_weight(&l->w_down, 1, e, e, ff, ff, 1, &o[2])) ||
            (st = slice_weight(&l->wv, hp->n_head_kv, dv, vo, e, e, 1, &o[3])))
            break;
    }
    sliced *o_out = calloc((size_t)hp->n_layer, sizeof *o_out);
    if (st == EL_OK && !o_out) st = el_error(EL_ERR_NOMEM, "slice: out of memory");
    for (int il = 0; st == EL_OK && il < hp->n_layer; il++)
        st = slice_o(&m->layers[il].wo, hp->n_head, dv, vo, &o_out[il]);
    gguf_writer *w = st ? NULL : gguf_writer_create();
    if (st == EL_OK && !w) st = el_error(EL_ERR_NOMEM, "slice: out of memory");
    if (st == EL_OK) st = gguf_writer_copy_kv(w, m->gguf);
    char key[96];
    snprintf(key, sizeof key, "%s.feed_forward_length", m->arch);
    if (st == EL_OK) st = gguf_writer_set_u32(w, key, (uint32_t)ff);
    snprintf(key, sizeof key, "%s.attention.value_length", m->arch);
    if (st == EL_OK) st = gguf_writer_set_u32(w, key, (uint32_t)vo);
    snprintf(key, sizeof key, "%s.attention.key_length", m->arch);
    if (st == EL_OK) st = gguf_writer_set_u32(w, key, (uint32_t)hp->head_dim_k);
    const gguf_file *g = m->gguf;
    static const char *const names[] = {"ffn_gate.weight", "ffn_up.weight", "ffn_down.weight",
                                        "attn_v.weight", "attn_output.weight"};
    for (uint64_t t = 0; st == EL_OK && t < g->n_tensors; t++) {
        const gguf_tensor *gt = &g->tensors[t];
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)gt->name.len, gt->name.ptr);
        const sliced *s = NULL;
        int il;
        char rest[96];
        if (sscanf(name, "blk.%d.%95s", &il, rest) == 2 && il >= 0 && il < hp->n_layer)
            for (int k = 0; k < 5; k++)
                if (strcmp(rest, names[k]) == 0) s = k < 4 ? &out[il * 4 + k] : &o_out[il];
        st =
            s ? gguf_writer_add_tensor(w, name, gt->type, 2, s->ne, s->data, s->nbytes)
              : gguf_writer_add_tensor(w, name, gt->type, gt->n_dims, gt->ne, gt->data, gt->nbytes);
    }
    if (st == EL_OK) st = gguf_writer_write(w, out_path);
    gguf_writer_free(w);
    for (int i = 0; out && i < hp->n_layer * 4; i++) free(out[i].data);
    for (int i = 0; o_out && i < hp->n_layer; i++) free(o_out[i].data);
    free(out);
    free(o_out);
    el_uniql_plan_free(&plan);
    el_model_free(m);
    return st;
}
