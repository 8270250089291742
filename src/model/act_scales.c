/* act_scales.c - static activation scales stored beside the weights of a GGUF model.
 *
 * A weight "W" may come with a tensor "W.act_scale" of one F32: the scale its int8 activations
 * are quantized with, instead of one computed per token (written by `edgelora quantize
 * --calibrate`, docs/formats.md). The scale lands in the weight's view (el_weight.act_scale),
 * which el_matmul reads; tensors that cannot be right are refused, naming file and tensor. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "kernels/types.h"
#include "model/model.h"

/* Sets the scale of the views a weight tensor named name[0..len) feeds; false if it is no matmul
 * weight of m. A tied output head shares token_embd.weight: its scale applies to the head. A
 * fused tensor (phi3's attn_qkv, ffn_up) feeds the views of all its parts, which read the same
 * activations. */
static bool set_scale(el_model *m, const char *name, size_t len, float d) {
    char buf[96];
    if (len >= sizeof buf) return false;
    memcpy(buf, name, len);
    buf[len] = '\0';
    if (strcmp(buf, "output.weight") == 0 ||
        (strcmp(buf, "token_embd.weight") == 0 && !gguf_find_tensor(m->gguf, "output.weight"))) {
        /* float and ggml types quantize activations their own way: the scale does not apply */
        if (el_type_kernels_get(m->output.type)->vec_dot_type != EL_TYPE_A8) return true;
        m->output.act_scale = d;
        if (!gguf_find_tensor(m->gguf, "output.weight"))
            m->tok_embd.act_scale = d; /* the same tensor; kept alike for readers of either */
        return true;
    }
    int il, used = 0;
    if (sscanf(buf, "blk.%d.%n", &il, &used) != 1 || used == 0 || il < 0 ||
        il >= m->hp.n_layer)
        return false;
    bool found = false;
    for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++) {
        int64_t row0;
        if (strcmp(buf + used, el_model_linear_tensor(m, w, &row0)) != 0) continue;
        el_weight *v = (el_weight *)el_layer_weight(&m->layers[il], w);
        if (el_type_kernels_get(v->type)->vec_dot_type == EL_TYPE_A8) v->act_scale = d;
        found = true;
    }
    return found;
}

el_status el_model_load_act_scales(el_model *m) {
    size_t ls = strlen(EL_ACT_SCALE_SUFFIX);
    for (uint64_t i = 0; i < m->gguf->n_tensors; i++) {
        const gguf_tensor *t = &m->gguf->tensors[i];
        if (!gguf_str_ends_with(t->name, EL_ACT_SCALE_SUFFIX)) continue;
        int nl = (int)t->name.len;
        int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        if (t->type != EL_TYPE_F32 || n != 1)
            return el_error(EL_ERR_FORMAT, "%s: tensor '%.*s' must hold one f32 scale, it holds "
                            "%lld of type %s", m->path, nl, t->name.ptr, (long long)n,
                            el_type_layout_get(t->type)->name);
        float d;
        memcpy(&d, t->data, sizeof d);
        if (!isfinite(d) || !(d > 0.0f))
            return el_error(EL_ERR_FORMAT, "%s: tensor '%.*s': activation scale %g is not a "
                            "finite positive number", m->path, nl, t->name.ptr, (double)d);
        if (!set_scale(m, t->name.ptr, t->name.len - ls, d))
            return el_error(EL_ERR_FORMAT, "%s: tensor '%.*s' is the activation scale of no "
                            "matmul weight of the model", m->path, nl, t->name.ptr);
    }
    return EL_OK;
}
