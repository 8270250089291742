/* adapter_profile.c - an adapter's pairs quantized to int8 with the scales of its model's
 * quantization profile (model/profile.h), not with scales of its own: adapters trained apart have
 * different ranges, and one fixed graph has one set of scales for all of them. Values beyond the
 * profile's range are clamped and counted; the warning says how many and where the worst was. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/log.h"
#include "kernels/edge.h"
#include "model/profile.h"
#include "runtime/adapter.h"



/* Clamping statistics of one adapter. */
typedef struct clip_count {
    uint64_t n_values, n_clipped;
    float worst;     /* the largest |value| / range seen beyond 1 */
    int32_t worst_slot;
} clip_count;

/* Counts in c the values of v[0..n) beyond the range of the int8 grid of scale d, which
 * el_i8_quantize clamps. */
static void count_clamped(const float *v, int64_t n, float d, int32_t slot, clip_count *c) {
    for (int64_t i = 0; i < n; i++) {
        float over = fabsf(v[i] * (1.0f / d)) / 127.0f;
        if (over > 1.0f + 0.5f / 127.0f) {
            c->n_clipped++;
            if (over > c->worst) {
                c->worst = over;
                c->worst_slot = slot;
            }
        }
    }
    c->n_values += (uint64_t)n;
}

static size_t a_bytes(const el_lora_pair *p) {
    return (size_t)p->a.n_out * el_row_size(EL_TYPE_W8, el_edge_padded(p->a.n_in));
}

static size_t b_bytes(const el_lora_pair *p) {
    size_t blocks = (size_t)((p->b.n_out + EL_LORA_PACK - 1) / EL_LORA_PACK);
    return blocks * EL_LORA_PACK * (size_t)p->a.n_out;
}

/* Pair p in int8 at dst under slot s's scales: A as W8 rows of scale a, B packed in blocks of 32
 * outputs; a and b are the pair's values as floats, qb room for B's int8 values in rows. */
static void quantize_pair(el_lora_pair *p, const el_profile_slot *s, int32_t slot,
                          const float *a, const float *b, int8_t *qb, uint8_t *dst,
                          clip_count *c) {
    int64_t rank = p->a.n_out, n_in = p->a.n_in, n_out = p->b.n_out;
    size_t row = el_row_size(EL_TYPE_W8, el_edge_padded(n_in));
    memset(dst, 0, a_bytes(p));
    for (int64_t k = 0; k < rank; k++) {
        uint8_t *r = dst + (size_t)k * row;
        memcpy(r, &s->a_scale, sizeof s->a_scale);
        el_i8_quantize(a + k * n_in, (int8_t *)r + sizeof(float), n_in, s->a_scale);
    }
    count_clamped(a, rank * n_in, s->a_scale, slot, c);
    el_i8_quantize(b, qb, n_out * rank, s->b_scale);
    count_clamped(b, n_out * rank, s->b_scale, slot, c);
    uint8_t *pb = dst + el_adapter_align_up(a_bytes(p));
    memset(pb, 0, b_bytes(p));
    for (int64_t o = 0; o < n_out; o++)
        for (int64_t k = 0; k < rank; k++)
            pb[((o / EL_LORA_PACK) * rank + k) * EL_LORA_PACK + o % EL_LORA_PACK] =
                (uint8_t)qb[o * rank + k];
    /* rows of the padded length apart; n_in as the model's, for readers of the values */
    p->a = el_weight_view(EL_TYPE_W8, dst, el_edge_padded(n_in), rank);
    p->a.n_in = p->a.k_in = n_in;
    p->b = el_weight_view(EL_TYPE_I8, pb, rank, n_out);
    p->b_packed = true;
    p->x_scale = s->x_scale;
    p->t_scale = s->t_scale;
    p->b_scale = s->b_scale;
}

/* The profile ad may run under: its model's, which must be the one the file was tuned for. */
static el_status check_profile(const el_adapter *ad, const el_profile *pf) {
    if (ad->profile_id == 0 || (pf && pf->id == ad->profile_id)) return EL_OK;
    if (!pf)
        return el_error(EL_ERR_MISMATCH, "%s: the adapter was tuned for quantization profile "
                        "%016llx; load the model with that profile (--profile FILE)", ad->path,
                        (unsigned long long)ad->profile_id);
    return el_error(EL_ERR_MISMATCH, "%s: the adapter was tuned for quantization profile "
                    "%016llx, but the model runs under %s (%016llx)", ad->path,
                    (unsigned long long)ad->profile_id, pf->path, (unsigned long long)pf->id);
}

/* Every slot ad changes has adapter scales in pf. */
static el_status check_slots(const el_adapter *ad, const el_profile *pf) {
    for (int32_t i = 0; i < pf->n_slots; i++) {
        const el_lora_pair *p = &ad->table[i];
        if (!p->a.n_out) continue;
        if (!(pf->slots[i].a_scale > 0.0f))
            return el_error(EL_ERR_MISMATCH, "%s: the adapter changes blk.%d.%s, for which "
                            "profile %s has no adapter scales (make the profile with an adapter "
                            "that changes it)", ad->path, i / EL_N_LINEAR,
                            el_linear_tensor_suffix((el_linear)(i % EL_N_LINEAR)), pf->path);
    }
    return EL_OK;
}

static void report(const el_adapter *ad, const el_profile *pf, const clip_count *c) {
    if (c->n_clipped == 0) return;
    el_warn("%s: %llu of %llu values (%.3f%%) lie beyond the range of profile %s and were clamped "
            "to it; the worst, in blk.%d.%s, %.2f times the range", ad->path,
            (unsigned long long)c->n_clipped, (unsigned long long)c->n_values,
            100.0 * (double)c->n_clipped / (double)c->n_values, pf->path,
            c->worst_slot / EL_N_LINEAR,
            el_linear_tensor_suffix((el_linear)(c->worst_slot % EL_N_LINEAR)), (double)c->worst);
}

el_status el_adapter_apply_profile(el_adapter *ad) {
    const el_profile *pf = ad->model->profile;
    el_status st = check_profile(ad, pf);
    if (st || !pf) return st;
    if ((st = check_slots(ad, pf))) return st;
    size_t total = 0, most = 0;
    for (int32_t i = 0; i < pf->n_slots; i++) {
        const el_lora_pair *p = &ad->table[i];
        if (!p->a.n_out) continue;
        total += el_adapter_align_up(a_bytes(p)) + el_adapter_align_up(b_bytes(p));
        size_t n = (size_t)(p->a.n_in + p->b.n_out) * (size_t)p->a.n_out;
        if (n > most) most = n;
    }
    uint8_t *block = aligned_alloc(EL_ADAPTER_ALIGN, total);
    float *floats = malloc(most * sizeof *floats);
    int8_t *qb = malloc(most);
    if (!block || !floats || !qb) {
        free(block);
        free(floats);
        free(qb);
        return el_error(EL_ERR_NOMEM, "%s: out of memory for the adapter's int8 copy", ad->path);
    }
    clip_count c = {0};
    uint8_t *at = block;
    for (int32_t i = 0; i < pf->n_slots && st == EL_OK; i++) {
        el_lora_pair *p = &ad->table[i];
        if (!p->a.n_out) continue;
        float *a = floats, *b = floats + p->a.n_in * p->a.n_out;
        el_weight_floats(&p->a, a);
        st = el_lora_b_floats(p, b);
        size_t need = el_adapter_align_up(a_bytes(p)) + el_adapter_align_up(b_bytes(p));
        if (st == EL_OK) quantize_pair(p, &pf->slots[i], i, a, b, qb, at, &c);
        at += need;
    }
    free(floats);
    free(qb);
    if (st) {
        free(block);
        return st;
    }
    free(ad->block);
    ad->block = block;
    ad->bytes = total + (uint64_t)pf->n_slots * sizeof *ad->table;
    ad->quantized = true;
    ad->n_values = c.n_values;
    ad->n_clipped = c.n_clipped;
    report(ad, pf, &c);
    return EL_OK;
}
