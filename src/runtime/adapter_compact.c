/* adapter_compact.c - float32 adapter matrices held as float16 (see el_adapter_compact).
 *
 * A decode step reads every A and B of the bound adapters once per token, beside the base's
 * weights; their bytes are the terms' cost. Float32 files (PEFT trains and saves in float32)
 * would cost twice what float16 does for no difference the model's output can show: a matrix is
 * converted only when float16 keeps every value within 2^-11 of the matrix's largest magnitude
 * (that largest in float16's normal range, nothing beyond its largest finite value). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/types.h"
#include "runtime/adapter.h"



static size_t weight_bytes(const el_weight *w) { return (size_t)w->n_out * w->row_bytes; }

/* Whether float16 holds w's values as well as it can hold any: finite, the largest magnitude at
 * most 65504 and at least 2^-14 (below it, float16's subnormals would keep fewer bits of the
 * largest values than its 11; a matrix of zeros converts too). */
static bool fits_f16(const el_weight *w) {
    if (w->type != EL_TYPE_F32) return false;
    const float *v = w->data;
    size_t n = (size_t)w->n_out * (size_t)w->n_in;
    float most = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float a = fabsf(v[i]);
        if (!(a <= 65504.0f)) return false; /* also NaN */
        most = a > most ? a : most;
    }
    return most == 0.0f || most >= 0x1p-14f;
}

/* w into dst: as float16 when convert, else as it is; the view of its new place. */
static el_weight move(const el_weight *w, bool convert, uint8_t *dst) {
    if (!convert) {
        memcpy(dst, w->data, weight_bytes(w));
        return el_weight_view(w->type, dst, w->n_in, w->n_out);
    }
    el_type_kernels_get(EL_TYPE_F16)->from_float(w->data, dst, w->n_in * w->n_out);
    return el_weight_view(EL_TYPE_F16, dst, w->n_in, w->n_out);
}

el_status el_adapter_compact(el_adapter *ad) {
    int32_t n_slots = ad->model->hp.n_layer * EL_N_LINEAR;
    bool *convert = calloc((size_t)n_slots * 2, sizeof *convert);
    if (!convert) return el_error(EL_ERR_NOMEM, "%s: out of memory", ad->path);
    size_t total = 0;
    bool any = false;
    for (int32_t i = 0; i < n_slots; i++) {
        const el_lora_pair *p = &ad->table[i];
        if (!p->a.n_out) continue;
        const el_weight *w[2] = {&p->a, &p->b};
        for (int m = 0; m < 2; m++) {
            convert[2 * i + m] = fits_f16(w[m]);
            any |= convert[2 * i + m];
            total += el_adapter_align_up(weight_bytes(w[m]) / (convert[2 * i + m] ? 2 : 1));
        }
    }
    uint8_t *block = any ? aligned_alloc(EL_ADAPTER_ALIGN, total) : NULL, *at = block;
    if (any && !block) {
        free(convert);
        return el_error(EL_ERR_NOMEM, "%s: out of memory for %zu bytes of adapter", ad->path,
                        total);
    }
    for (int32_t i = 0; any && i < n_slots; i++) {
        el_lora_pair *p = &ad->table[i];
        if (!p->a.n_out) continue;
        /* B's packed order is by element, whatever the elements' size */
        p->a = move(&p->a, convert[2 * i], at);
        at += el_adapter_align_up(weight_bytes(&p->a));
        p->b = move(&p->b, convert[2 * i + 1], at);
        at += el_adapter_align_up(weight_bytes(&p->b));
    }
    free(convert);
    if (!any) return EL_OK;
    free(ad->block);
    ad->block = block;
    ad->bytes = total + (uint64_t)n_slots * sizeof *ad->table;
    return EL_OK;
}
