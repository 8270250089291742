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
 * llama.cpp's convert_lora_to_gguf names them (llama.cpp finds no attn_q in such a base and
 * refuses the file): B stacks the parts' outputs in the tensor's row order, a part the adapter
 * leaves alone contributing zero rows. Parts that share one A (Phi-3's own qkv_proj and
 * gate_up_proj) give that A and B = [B_q; B_k; B_v]. Parts with As of their own (q_proj, k_proj,
 * v_proj adapted apart) give the As stacked, of rank r_q + r_k + r_v, and B block by block:
 * part i's rows hold B_i in the columns of A_i and zeros elsewhere, so B A = [B_q A_q; B_k A_k;
 * B_v A_v] exactly, at the price of the larger rank in whatever reads the file (edgelora too:
 * the loader gives each part the stacked A and its own rows of B, zeros included). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "model/prune.h"
#include "runtime/adapter.h"

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
    if (st == EL_OK && ad->uniql_basis)
        st = gguf_writer_set_u64(w, EL_ADAPTER_UNIQL_BASIS_KEY, ad->uniql_basis);
    float *at = block;
    for (int32_t s = 0; s < n_slots && st == EL_OK; s++) {
        int il = s / EL_N_LINEAR;
        int64_t row0;
        const char *tensor = el_model_linear_tensor(m, (el_linear)(s % EL_N_LINEAR), &row0);
        if (row0 != 0) continue; /* written with the fused tensor's first part */
        /* the parts stored in this tensor (s and the slots after it that name it), each part's
         * first row of B and its first column (the first row of its A in the stacked A) */
        el_linear part[EL_N_LINEAR];
        int64_t part_row[EL_N_LINEAR], part_col[EL_N_LINEAR];
        int n_parts = 0;
        int64_t n_out = 0, n_in = 0;
        for (el_linear o = (el_linear)(s % EL_N_LINEAR); o <= EL_LINEAR_DOWN; o++) {
            int64_t r;
            if (strcmp(el_model_linear_tensor(m, o, &r), tensor) != 0) continue;
            const el_lora_pair *p = &ad->table[el_linear_slot(il, o)];
            n_out += el_layer_weight(&m->layers[il], o)->n_out;
            if (!p->a.n_out) continue;
            part[n_parts] = o;
            part_row[n_parts++] = r;
            n_in = p->a.n_in;
        }
        if (!n_parts) continue;
        /* A: each distinct A once, in part order (a part's A is decoded after the rows so far
         * and kept only if no earlier part has the same) */
        float *a = at;
        int64_t rank = 0;
        for (int i = 0; i < n_parts; i++) {
            const el_lora_pair *p = &ad->table[el_linear_slot(il, part[i])];
            size_t n = (size_t)(p->a.n_out * n_in);
            el_weight_floats(&p->a, a + rank * n_in);
            part_col[i] = rank;
            for (int j = 0; j < i && part_col[i] == rank; j++)
                if (ad->table[el_linear_slot(il, part[j])].a.n_out == p->a.n_out &&
                    !memcmp(a + part_col[j] * n_in, a + rank * n_in, n * sizeof *a))
                    part_col[i] = part_col[j];
            if (part_col[i] == rank) rank += p->a.n_out;
        }
        float *b = a + rank * n_in;
        at = b + rank * n_out;
        memset(b, 0, (size_t)(rank * n_out) * sizeof *b);
        for (int i = 0; i < n_parts && !st; i++) {
            const el_lora_pair *p = &ad->table[el_linear_slot(il, part[i])];
            int64_t r_p = p->a.n_out;
            float *own = malloc((size_t)(r_p * p->b.n_out) * sizeof *own);
            if (!own) st = el_error(EL_ERR_NOMEM, "%s: out of memory", path);
            if (!st) st = el_lora_b_floats(p, own);
            float mul = p->scale * (float)rank / alpha;
            for (int64_t row = 0; !st && row < p->b.n_out; row++)
                for (int64_t k = 0; k < r_p; k++)
                    b[(part_row[i] + row) * rank + part_col[i] + k] = own[row * r_p + k] * mul;
            free(own);
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
