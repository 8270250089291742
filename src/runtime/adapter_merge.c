/* adapter_merge.c - base + adapters as one GGUF: W' = W + sum_i scale_i * s_i * B_i A_i for every
 * weight an adapter changes (stored as F32), every other tensor and every key copied as they are.
 * The offline alternative to run-time adapters, and their oracle in tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelora-tools.h"
#include "core/error.h"
#include "formats/gguf.h"
#include "model/prune.h"
#include "runtime/adapter.h"

/* W (n_out x n_in floats) += s * B A. */
static el_status add_pair(float *wf, const el_lora_pair *p, float s) {
    int64_t rank = p->a.n_out, n_in = p->a.n_in, n_out = p->b.n_out;
    float *a = malloc((size_t)(rank * n_in) * sizeof *a);
    float *b = malloc((size_t)(n_out * rank) * sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return el_error(EL_ERR_NOMEM, "merge: out of memory");
    }
    el_weight_floats(&p->a, a);
    el_status st = el_lora_b_floats(p, b);
    for (int64_t o = 0; st == EL_OK && o < n_out; o++) {
        float *row = wf + o * n_in;
        for (int64_t k = 0; k < rank; k++) {
            float c = s * b[o * rank + k];
            const float *ak = a + k * n_in;
            for (int64_t i = 0; i < n_in; i++)
                row[i] += c * ak[i];
        }
    }
    free(a);
    free(b);
    return st;
}

/* The linears of a block stored in tensor t (one, or the parts of a fused tensor: phi3's attn_qkv
 * and ffn_up), with their first rows there; how many (0 if t is no block projection). */
static int stored_linears(const el_model *m, const gguf_tensor *t, int *il, el_linear which[],
                          int64_t row0[]) {
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(t->name.len < 127 ? t->name.len : 127), t->name.ptr);
    int used = 0, n = 0;
    if (sscanf(name, "blk.%d.%n", il, &used) != 1 || used == 0 || *il < 0 ||
        *il >= m->hp.n_layer)
        return 0;
    for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++)
        if (!strcmp(name + used, el_model_linear_tensor(m, w, &row0[n]))) which[n++] = w;
    return n;
}

static el_status merge(el_model *m, el_adapter **ads, const float *scales, int32_t n,
                       const char *out_path, float **merged) {
    const gguf_file *f = m->gguf;
    gguf_writer *w = gguf_writer_create();
    if (!w) return el_error(EL_ERR_NOMEM, "merge: out of memory");
    el_status st = gguf_writer_copy_kv(w, f);
    for (uint64_t i = 0; !st && i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        int il = 0;
        el_linear which[EL_N_LINEAR];
        int64_t row0[EL_N_LINEAR];
        int parts = stored_linears(m, t, &il, which, row0);
        bool changed = false;
        for (int k = 0; k < parts; k++)
            for (int32_t j = 0; j < n; j++)
                changed |= ads[j]->table[el_linear_slot(il, which[k])].a.n_out > 0;
        if (!changed) {
            st = gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
            continue;
        }
        el_weight whole = el_weight_view((el_type)t->type, t->data, t->ne[0], t->ne[1]);
        size_t count = (size_t)(whole.n_in * whole.n_out);
        if (!(merged[i] = malloc(count * sizeof(float)))) {
            st = el_error(EL_ERR_NOMEM, "merge: out of memory for '%s'", name);
            break;
        }
        el_weight_floats(&whole, merged[i]);
        for (int k = 0; k < parts; k++)
            for (int32_t j = 0; !st && j < n; j++) {
                const el_lora_pair *p = &ads[j]->table[el_linear_slot(il, which[k])];
                if (p->a.n_out > 0)
                    st = add_pair(merged[i] + row0[k] * whole.n_in, p, scales[j] * p->scale);
            }
        if (!st)
            st = gguf_writer_add_tensor(w, name, EL_TYPE_F32, 2, t->ne, merged[i],
                                        count * sizeof(float));
    }
    if (!st) st = gguf_writer_write(w, out_path);
    gguf_writer_free(w);
    return st;
}

el_status el_merge_adapters(const char *base_path, const char *const *adapter_paths,
                            const float *scales, int32_t n, const char *out_path) {
    if (!base_path || !out_path || n < 0 || (n > 0 && (!adapter_paths || !scales)))
        return el_error(EL_ERR_INVALID_ARG, "el_merge_adapters: NULL argument");
    el_model *m = NULL;
    el_status st = el_model_load(base_path, NULL, &m);
    if (!st) st = el_prune_refuse(m, "merging adapters");
    if (st) {
        el_model_free(m);
        return st;
    }
    if (!m->gguf || !m->has_weights) {
        el_model_free(m);
        return el_error(EL_ERR_UNSUPPORTED, "%s: merging needs a GGUF model with weights (convert "
                        "a llama2.c checkpoint first)", base_path);
    }
    el_adapter **ads = calloc((size_t)n + 1, sizeof *ads);
    float **merged = calloc(m->gguf->n_tensors + 1, sizeof *merged);
    if (!ads || !merged) st = el_error(EL_ERR_NOMEM, "merge: out of memory");
    for (int32_t j = 0; !st && j < n; j++)
        st = el_adapter_load_exact(m, adapter_paths[j], &ads[j]);
    if (!st) st = merge(m, ads, scales, n, out_path, merged);
    for (uint64_t i = 0; merged && i < m->gguf->n_tensors; i++)
        free(merged[i]);
    for (int32_t j = 0; ads && j < n; j++)
        el_adapter_free(ads[j]);
    free(merged);
    free(ads);
    el_model_free(m);
    return st;
}
