/* adapter_save.c - a loaded adapter (from a PEFT folder or a GGUF file) written as a GGUF LoRA
 * adapter in llama.cpp's layout, so that a PEFT adapter can be used where only GGUF is read.
 *
 * llama.cpp scales each pair by adapter.lora.alpha / its rank; our pairs carry their own factor
 * (alpha / rank, alpha / sqrt(rank) for rsLoRA, per-module ranks and alphas of PEFT patterns). One
 * alpha cannot say all that, so B is written multiplied by factor * rank / alpha: with PEFT's
 * plain alpha / rank that multiplier is 1 and B is written as it was. Every tensor is F32: A and
 * B as the adapter holds them (any type, B perhaps packed) converted exactly to float.
 *
 * A base that fuses projections (phi3's attn_qkv, ffn_up) gets one pair per fused tensor, as
 * llama.cpp's convert_lora_to_gguf names them: the parts' shared A, their Bs stacked in the
 * tensor's row order (a part the adapter leaves alone contributes zero rows). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "runtime/adapter.h"

/* Whether pair p's A holds the floats a_floats (the first part's A). */
static bool same_a(const el_lora_pair *p, const el_lora_pair *first, const float *a_floats) {
    size_t n = (size_t)(first->a.n_in * first->a.n_out);
    if (p->a.data == first->a.data) return true;
    float *mine = malloc(n * sizeof *mine);
    bool same = mine != NULL;
    if (same) {
        el_weight_floats(&p->a, mine);
        same = memcmp(mine, a_floats, n * sizeof *mine) == 0;
    }
    free(mine);
    return same;
}

el_status el_adapter_save(const el_adapter *ad, const char *path) {
    if (!ad || !path) return el_error(EL_ERR_INVALID_ARG, "el_adapter_save: NULL argument");
    const el_model *m = ad->model;
    int32_t n_slots = m->hp.n_layer * EL_N_LINEAR;
    size_t n_floats = 0;
    for (int32_t s = 0; s < n_slots; s++) {
        const el_lora_pair *p = &ad->table[s];
        /* room for B of the whole tensor the slot's linear is stored in (a fused one's parts
         * all share it) */
        int64_t rows = 0, r;
        const char *tensor = el_model_linear_tensor(m, (el_linear)(s % EL_N_LINEAR), &r);
        for (el_linear o = EL_LINEAR_Q; o <= EL_LINEAR_DOWN; o++)
            if (!strcmp(el_model_linear_tensor(m, o, &r), tensor))
                rows += el_layer_weight(&m->layers[s / EL_N_LINEAR], o)->n_out;
        if (p->a.n_out) n_floats += (size_t)(p->a.n_in * p->a.n_out + p->a.n_out * rows);
    }
    /* alpha: the adapter's own where it has one, else the largest rank (factor 1 at that rank) */
    float alpha = ad->alpha > 0 ? ad->alpha : (float)ad->rank_max;
    float *block = malloc((n_floats ? n_floats : 1) * sizeof *block);
    gguf_writer *w = gguf_writer_create();
    el_status st = block && w ? EL_OK : el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    if (st == EL_OK &&
        (st = gguf_writer_set_str(w, "general.architecture", m->arch)) == EL_OK &&
        (st = gguf_writer_set_str(w, "general.type", "adapter")) == EL_OK &&
        (st = gguf_writer_set_str(w, "general.name", ad->name)) == EL_OK &&
        (st = gguf_writer_set_str(w, "adapter.type", "lora")) == EL_OK)
        st = gguf_writer_set_f32(w, "adapter.lora.alpha", alpha);
    float *at = block;
    for (int32_t s = 0; s < n_slots && st == EL_OK; s++) {
        int il = s / EL_N_LINEAR;
        int64_t row0;
        const char *tensor = el_model_linear_tensor(m, (el_linear)(s % EL_N_LINEAR), &row0);
        if (row0 != 0) continue; /* written with the fused tensor's first part */
        /* the parts stored in this tensor: s and the slots after it that name it */
        const el_lora_pair *first = NULL;
        int64_t n_out = 0;
        for (el_linear o = (el_linear)(s % EL_N_LINEAR); o <= EL_LINEAR_DOWN; o++) {
            int64_t r;
            if (strcmp(el_model_linear_tensor(m, o, &r), tensor) != 0) continue;
            const el_lora_pair *p = &ad->table[el_linear_slot(il, o)];
            if (p->a.n_out && !first) first = p;
            n_out += el_layer_weight(&m->layers[il], o)->n_out;
        }
        if (!first) continue;
        int64_t rank = first->a.n_out, n_in = first->a.n_in;
        float *a = at, *b = at + rank * n_in;
        at = b + rank * n_out;
        el_weight_floats(&first->a, a);
        memset(b, 0, (size_t)(rank * n_out) * sizeof *b);
        for (el_linear o = (el_linear)(s % EL_N_LINEAR); o <= EL_LINEAR_DOWN && !st; o++) {
            int64_t r;
            if (strcmp(el_model_linear_tensor(m, o, &r), tensor) != 0) continue;
            const el_lora_pair *p = &ad->table[el_linear_slot(il, o)];
            if (!p->a.n_out) continue;
            if (p->a.n_out != rank || (p != first && !same_a(p, first, a)))
                st = el_error(EL_ERR_UNSUPPORTED, "%s: the parts of blk.%d.%s have different "
                              "lora_a matrices: one GGUF pair cannot hold them", path, il, tensor);
            float *part = b + r * rank;
            if (!st) st = el_lora_b_floats(p, part);
            float mul = p->scale * (float)rank / alpha;
            for (int64_t i = 0; !st && i < rank * p->b.n_out; i++) part[i] *= mul;
        }
        char name[96];
        int n = snprintf(name, sizeof name, "blk.%d.%s.lora_", il, tensor);
        int64_t ne_a[2] = {n_in, rank}, ne_b[2] = {rank, n_out};
        snprintf(name + n, sizeof name - (size_t)n, "a");
        if (st == EL_OK)
            st = gguf_writer_add_tensor(w, name, EL_TYPE_F32, 2, ne_a, a,
                                        (uint64_t)(rank * n_in) * sizeof(float));
        snprintf(name + n, sizeof name - (size_t)n, "b");
        if (st == EL_OK)
            st = gguf_writer_add_tensor(w, name, EL_TYPE_F32, 2, ne_b, b,
                                        (uint64_t)(rank * n_out) * sizeof(float));
    }
    if (st == EL_OK) st = gguf_writer_write(w, path);
    gguf_writer_free(w);
    free(block);
    return st;
}
