/* adapter_gguf.c - LoRA adapters in GGUF, as llama.cpp's convert_lora_to_gguf.py writes them:
 *   general.type = "adapter", adapter.type = "lora", general.architecture = the base's,
 *   adapter.lora.alpha (f32; absent or 0: the terms are not scaled by alpha / rank; otherwise
 *     positive and finite, el_lora_check_alpha),
 *   for each changed weight "<base tensor name>.lora_a" and ".lora_b" (blk.0.attn_q.weight.lora_a):
 *     lora_a ne = [n_in, rank]   (rank rows of n_in: PEFT's lora_A, numpy shape [rank, n_in])
 *     lora_b ne = [rank, n_out]  (n_out rows of rank: PEFT's lora_B, numpy shape [n_out, rank])
 *   so y = W x + scale * alpha / rank * B (A x), with rank = lora_b's ne[0] (llama.cpp's rule).
 * Only the projections of the blocks are supported (not token_embd or output). A fused projection
 * (phi3's attn_qkv, and its ffn_up of gate and up) is one pair whose B stacks the parts' outputs:
 * each part takes the shared A and its own rows of B (el_adapter_split_b). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "model/prune.h"
#include "runtime/adapter.h"

enum { NAME_CAP = 128 };

static el_status check_kv(const gguf_file *f, const el_model *m, const char *path, float *alpha) {
    gguf_str s;
    el_status st = gguf_get_str(f, "general.type", &s);
    if (st == EL_ERR_NOT_FOUND)
        return el_error(EL_ERR_FORMAT, "%s: not an adapter: general.type is absent (expected "
                        "'adapter')", path);
    if (st) return st;
    if (!gguf_str_eq(s, "adapter"))
        return el_error(EL_ERR_FORMAT, "%s: not an adapter: general.type is '%.*s' (expected "
                        "'adapter')", path, (int)s.len, s.ptr);
    st = gguf_get_str(f, "adapter.type", &s);
    if (st == EL_ERR_NOT_FOUND)
        return el_error(EL_ERR_FORMAT, "%s: adapter.type is absent (expected 'lora')", path);
    if (st) return st;
    if (!gguf_str_eq(s, "lora"))
        return el_error(EL_ERR_UNSUPPORTED, "%s: adapter.type is '%.*s'; only 'lora' is supported",
                        path, (int)s.len, s.ptr);
    if ((st = gguf_get_str(f, "general.architecture", &s)) == EL_ERR_NOT_FOUND)
        return el_error(EL_ERR_FORMAT, "%s: general.architecture is missing", path);
    if (st) return st;
    if (!gguf_str_eq(s, m->arch))
        return el_error(EL_ERR_MISMATCH, "%s: the adapter is for architecture '%.*s', the model is "
                        "'%s'", path, (int)s.len, s.ptr, m->arch);
    *alpha = 0.0f;
    st = gguf_get_f32(f, "adapter.lora.alpha", alpha);
    if (st == EL_ERR_NOT_FOUND) return EL_OK;
    if (st) return st;
    /* 0 means "not scaled", as in llama.cpp; any other value must be a real alpha */
    return *alpha == 0.0f ? EL_OK : el_lora_check_alpha(path, "adapter.lora.alpha", *alpha);
}

/* Parses "blk.<il>.<tensor>.weight.lora_<a|b>" into the block, the linears stored in that base
 * tensor (el_model_linear_tensor: one, or a fused tensor's parts in row order) and is_b. */
static el_status parse_name(const char *name, const el_model *m, const char *path, int *il,
                            el_linear which[], int *n_which, bool *is_b) {
    size_t n = strlen(name);
    const char *sfx = n > 7 ? name + n - 7 : "";
    if (strcmp(sfx, ".lora_a") != 0 && strcmp(sfx, ".lora_b") != 0)
        return el_error(EL_ERR_FORMAT, "%s: tensor '%s' is not a LoRA tensor (.lora_a / .lora_b)",
                        path, name);
    *is_b = sfx[6] == 'b';
    int used = 0;
    char lin[40];
    *n_which = 0;
    if (sscanf(name, "blk.%d.%31[a-z_].weight.lora_%*c%n", il, lin, &used) == 2 &&
        (size_t)used == n && *il >= 0) {
        if (*il >= m->hp.n_layer)
            return el_error(EL_ERR_MISMATCH, "%s: tensor '%s': the model has only %d blocks",
                            path, name, m->hp.n_layer);
        strcat(lin, ".weight");
        for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++)
            if (!strcmp(lin, el_model_linear_tensor(m, w, &(int64_t){0}))) which[(*n_which)++] = w;
        if (*n_which > 0) return EL_OK;
        /* a projection another layout of the architecture stores so (phi3's attn_qkv, or
         * attn_q/k/v, ffn_gate): the adapter was made for a base of that layout */
        bool qkv = !strcmp(lin, "attn_qkv.weight");
        int own = -1;
        for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++)
            if (!strcmp(lin, el_linear_tensor_suffix(w))) own = (int)w;
        if (qkv || own >= 0)
            return el_error(EL_ERR_UNSUPPORTED, "%s: tensor '%s' adapts blk.%d.%s, which this "
                            "model does not have: it stores that projection in blk.%d.%s (an "
                            "adapter for a base of another layout)", path, name, *il, lin, *il,
                            qkv ? "attn_q/k/v.weight"
                                : el_model_linear_tensor(m, (el_linear)own, &(int64_t){0}));
    }
    return el_error(EL_ERR_UNSUPPORTED, "%s: tensor '%s': only the attention and FFN projections "
                    "of the blocks (attn_q/k/v/output or attn_qkv, ffn_gate/up/down) can be "
                    "adapted", path, name);
}

static el_status read_tensors(const gguf_file *f, const el_model *m, const char *path,
                              float alpha, el_adapter_src *src, char *names) {
    el_status st;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        char name[NAME_CAP];
        snprintf(name, sizeof name, "%.*s", (int)(t->name.len < NAME_CAP - 1 ? t->name.len
                                                                              : NAME_CAP - 1),
                 t->name.ptr);
        int il = 0, n_which = 0;
        el_linear which[EL_N_LINEAR];
        bool is_b = false;
        if ((st = parse_name(name, m, path, &il, which, &n_which, &is_b))) return st;
        if (t->ne[2] != 1 || t->ne[3] != 1)
            return el_error(EL_ERR_FORMAT, "%s: tensor '%s' is not 2-D", path, name);
        for (int k = 0; k < n_which; k++) {
            char *dst = names + ((size_t)el_linear_slot(il, which[k]) * 2 + is_b) * NAME_CAP;
            if (*dst)
                return el_error(EL_ERR_FORMAT, "%s: tensor '%s' appears twice", path, name);
            memcpy(dst, name, NAME_CAP);
        }
        const char *stored = names + ((size_t)el_linear_slot(il, which[0]) * 2 + is_b) * NAME_CAP;
        if (is_b) {
            el_adapter_src b = {.b_name = stored, .b_type = (el_type)t->type, .b_data = t->data,
                                .b_rank = t->ne[0], .b_out = t->ne[1], .b_bytes = t->nbytes};
            if ((st = el_adapter_split_b(m, il, which, n_which, &b, src, path))) return st;
            continue;
        }
        for (int k = 0; k < n_which; k++) {
            el_adapter_src *s = &src[el_linear_slot(il, which[k])];
            s->a_name = stored;
            s->a_type = (el_type)t->type;
            s->a_data = t->data;
            s->a_in = t->ne[0];
            s->a_rank = t->ne[1];
            s->a_bytes = t->nbytes;
        }
    }
    for (int32_t i = 0; i < m->hp.n_layer * EL_N_LINEAR; i++) {
        el_adapter_src *s = &src[i];
        if (!s->a_name && !s->b_name) continue;
        if (!s->a_name || !s->b_name)
            return el_error(EL_ERR_FORMAT, "%s: tensor '%s' has no %s partner", path,
                            s->a_name ? s->a_name : s->b_name, s->a_name ? ".lora_b" : ".lora_a");
        s->scale = alpha != 0.0f ? alpha / (float)s->b_rank : 1.0f;
    }
    return EL_OK;
}

el_status el_adapter_load_gguf(el_adapter *ad, const char *path) {
    gguf_file *f = NULL;
    el_status st = gguf_open(path, &f);
    if (st) return st;
    size_t n_slots = (size_t)ad->model->hp.n_layer * EL_N_LINEAR;
    el_adapter_src *src = calloc(n_slots, sizeof *src);
    char *names = calloc(n_slots * 2, NAME_CAP);
    if (!src || !names) st = el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    if (!st) st = check_kv(f, ad->model, path, &ad->alpha);
    if (!st && (st = gguf_get_u64(f, "adapter.profile", &ad->profile_id)) == EL_ERR_NOT_FOUND)
        st = EL_OK;
    if (!st && (st = gguf_get_u64(f, EL_ADAPTER_UNIQL_BASIS_KEY, &ad->uniql_basis)) ==
                   EL_ERR_NOT_FOUND)
        st = EL_OK;
    if (!st) st = read_tensors(f, ad->model, path, ad->alpha, src, names);
    if (!st) st = el_adapter_build(ad, src, path);
    free(src);
    free(names);
    gguf_close(f);
    return st;
}
