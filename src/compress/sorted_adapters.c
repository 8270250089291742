/* sorted_adapters.c - adapters re-expressed for a UniQL-sorted model (see sorted_adapters.h). */
#include "compress/sorted_adapters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "edgelora-tools.h"

/* dir/<name>.gguf, refused where it is the source file itself. */
static el_status out_path(const char *dir, const el_adapter *ad, const char *src, char **out) {
    size_t n = strlen(dir) + strlen(ad->name) + 8;
    if (!(*out = malloc(n))) return el_error(EL_ERR_NOMEM, "compress: out of memory");
    snprintf(*out, n, "%s/%s.gguf", dir, ad->name);
    struct stat a, b;
    if (stat(*out, &a) == 0 && stat(src, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        return el_error(EL_ERR_INVALID_ARG, "%s: the re-expressed adapter would replace the "
                        "adapter itself: choose another --lora-out folder", *out);
    return EL_OK;
}

el_status el_sorted_adapters_load(el_sorted_adapters *s, const el_model *m,
                                  const char *const *paths, int32_t n, const char *dir) {
    *s = (el_sorted_adapters){.n = n, .n_slots = m->hp.n_layer * EL_N_LINEAR};
    s->src = calloc((size_t)n, sizeof *s->src);
    s->out = calloc((size_t)n, sizeof *s->out);
    s->a = calloc((size_t)n * (size_t)s->n_slots, sizeof *s->a);
    s->b = calloc((size_t)n * (size_t)s->n_slots, sizeof *s->b);
    el_status st = s->src && s->out && s->a && s->b
                       ? EL_OK
                       : el_error(EL_ERR_NOMEM, "compress: out of memory");
    for (int32_t i = 0; st == EL_OK && i < n; i++) {
        st = el_adapter_load_exact(m, paths[i], &s->src[i]);
        if (st == EL_OK) st = out_path(dir, s->src[i], paths[i], &s->out[i]);
        for (int32_t j = 0; st == EL_OK && j < i; j++)
            if (!strcmp(s->src[j]->name, s->src[i]->name))
                st = el_error(EL_ERR_INVALID_ARG, "%s and %s: two adapters named '%s' would be "
                              "written to one file", paths[j], paths[i], s->src[i]->name);
        for (int32_t k = 0; st == EL_OK && k < s->n_slots; k++) {
            const el_lora_pair *p = &s->src[i]->table[k];
            if (!p->a.n_out) continue;
            float **a = &s->a[(size_t)i * s->n_slots + k], **b = &s->b[(size_t)i * s->n_slots + k];
            *a = malloc((size_t)(p->a.n_out * p->a.n_in) * sizeof **a);
            *b = malloc((size_t)(p->b.n_out * p->b.n_in) * sizeof **b);
            if (!*a || !*b) {
                st = el_error(EL_ERR_NOMEM, "%s: out of memory", paths[i]);
                break;
            }
            el_weight_floats(&p->a, *a);
            st = el_lora_b_floats(p, *b);
        }
    }
    if (st) el_sorted_adapters_free(s);
    return st;
}

el_status el_sorted_adapters_layer(el_sorted_adapters *s, const el_hparams *hp, int il,
                                   const el_sort_basis *b) {
    el_status st = EL_OK;
    for (int32_t i = 0; st == EL_OK && i < s->n; i++)
        for (el_linear w = EL_LINEAR_Q; st == EL_OK && w <= EL_LINEAR_DOWN; w++) {
            int32_t k = el_linear_slot(il, w);
            const el_lora_pair *p = &s->src[i]->table[k];
            if (!p->a.n_out) continue;
            st = el_sort_basis_rows(hp, b, w, s->b[(size_t)i * s->n_slots + k], p->a.n_out);
            if (st == EL_OK)
                st = el_sort_basis_cols(hp, b, w, s->a[(size_t)i * s->n_slots + k], p->a.n_out);
        }
    return st;
}

el_status el_sorted_adapters_write(const el_sorted_adapters *s, int32_t i, uint64_t basis) {
    const el_adapter *src = s->src[i];
    const char *path = s->out[i];
    /* the same adapter with float pairs (B unpacked) and the basis: what el_adapter_save
     * writes */
    el_adapter out = *src;
    out.uniql_basis = basis;
    out.table = calloc((size_t)s->n_slots, sizeof *out.table);
    if (!out.table) return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    for (int32_t k = 0; k < s->n_slots; k++) {
        const el_lora_pair *p = &src->table[k];
        if (!p->a.n_out) continue;
        int64_t rank = p->a.n_out, n_in = p->a.n_in, n_out = p->b.n_out;
        out.table[k] = (el_lora_pair){
            .a = {.type = EL_TYPE_F32, .data = s->a[(size_t)i * s->n_slots + k], .n_in = n_in,
                  .n_out = rank, .row_bytes = (size_t)n_in * sizeof(float), .k_in = n_in,
                  .k_out = rank},
            .b = {.type = EL_TYPE_F32, .data = s->b[(size_t)i * s->n_slots + k], .n_in = rank,
                  .n_out = n_out, .row_bytes = (size_t)rank * sizeof(float), .k_in = rank,
                  .k_out = n_out},
            .scale = p->scale};
    }
    el_status st = el_adapter_save(&out, path);
    free(out.table);
    return st;
}

void el_sorted_adapters_free(el_sorted_adapters *s) {
    for (int32_t i = 0; s->src && i < s->n; i++) el_adapter_free(s->src[i]);
    for (int32_t i = 0; s->out && i < s->n; i++) free(s->out[i]);
    free(s->out);
    for (size_t k = 0; s->a && k < (size_t)s->n * (size_t)s->n_slots; k++) free(s->a[k]);
    for (size_t k = 0; s->b && k < (size_t)s->n * (size_t)s->n_slots; k++) free(s->b[k]);
    free(s->src);
    free(s->a);
    free(s->b);
    *s = (el_sorted_adapters){0};
}
