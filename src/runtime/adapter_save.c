/* adapter_save.c - a loaded adapter (from a PEFT folder or a GGUF file) written as a GGUF LoRA
 * adapter in llama.cpp's layout, so that a PEFT adapter can be used where only GGUF is read.
 *
 * llama.cpp scales each pair by adapter.lora.alpha / its rank; our pairs carry their own factor
 * (alpha / rank, alpha / sqrt(rank) for rsLoRA, per-module ranks and alphas of PEFT patterns). One
 * alpha cannot say all that, so B is written multiplied by factor * rank / alpha: with PEFT's
 * plain alpha / rank that multiplier is 1 and B is written as it was. Every tensor is F32: A and
 * B as the adapter holds them (any type, B perhaps packed) converted exactly to float. */
#include <stdlib.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "runtime/adapter.h"

el_status el_adapter_save(const el_adapter *ad, const char *path) {
    if (!ad || !path) return el_error(EL_ERR_INVALID_ARG, "el_adapter_save: NULL argument");
    const el_model *m = ad->model;
    int32_t n_slots = m->hp.n_layer * EL_N_LINEAR;
    size_t n_floats = 0;
    for (int32_t s = 0; s < n_slots; s++) {
        const el_lora_pair *p = &ad->table[s];
        if (p->a.n_out) n_floats += (size_t)(p->a.n_in * p->a.n_out + p->b.n_in * p->b.n_out);
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
        const el_lora_pair *p = &ad->table[s];
        if (!p->a.n_out) continue;
        int64_t rank = p->a.n_out, n_in = p->a.n_in, n_out = p->b.n_out;
        char name[96];
        int n = snprintf(name, sizeof name, "blk.%d.%s.weight.lora_", s / EL_N_LINEAR,
                         el_linear_gguf_name((el_linear)(s % EL_N_LINEAR)));
        float *a = at, *b = at + rank * n_in;
        at = b + rank * n_out;
        el_weight_floats(&p->a, a);
        if ((st = el_lora_b_floats(p, b)) != EL_OK) break;
        float mul = p->scale * (float)rank / alpha;
        for (int64_t i = 0; i < rank * n_out; i++) b[i] *= mul;
        int64_t ne_a[2] = {n_in, rank}, ne_b[2] = {rank, n_out};
        snprintf(name + n, sizeof name - (size_t)n, "a");
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
