/* plan.c - kept sizes per rate: n minus f * n rounded to the nearest multiple of the grain, f the
 * rate scaled up to what the prunable structures hold. */
#include "compress/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/types.h"

static const float MAX_RATE = 0.9f; /* beyond it a model has no quality left to choose from */

static bool prunable(int32_t n, int32_t grain) { return grain > 0 && grain < n; }

static int32_t kept(int32_t n, double frac, int32_t grain) {
    if (!prunable(n, grain)) return n;
    int32_t drop = (int32_t)floor(frac * n / grain + 0.5) * grain;
    return n - drop > 0 ? n - drop : grain;
}

static int32_t gcd(int32_t a, int32_t b) { return b ? gcd(b, a % b) : a; }

el_plan_grain el_plan_grain_for(const el_hparams *hp, el_type down_type, el_type o_type,
                                bool qk_sorted) {
    int32_t down_block = (int32_t)el_type_layout_get(down_type)->block_size;
    int32_t o_block = (int32_t)el_type_layout_get(o_type)->block_size;
    /* the layout stores O's columns dimension-major (dimension d of every head together), so
     * vo_kept * n_head columns must be whole blocks */
    return (el_plan_grain){
        .ff = down_block, .qk = qk_sorted ? 2 : 0, .vo = o_block / gcd(o_block, hp->n_head)};
}

el_status el_plan_build(const el_hparams *hp, const float *rates, int32_t n_rates,
                        el_plan_grain grain, el_uniql_plan *plan) {
    memset(plan, 0, sizeof *plan);
    if (n_rates < 1 || rates[0] != 0.0f)
        return el_error(EL_ERR_INVALID_ARG, "--rates: the first rate must be 0 (the whole model)");
    for (int32_t r = 1; r < n_rates; r++) {
        if (!(rates[r] > rates[r - 1]))
            return el_error(EL_ERR_INVALID_ARG, "--rates: %g after %g: rates must ascend", rates[r],
                            rates[r - 1]);
        if (!(rates[r] < MAX_RATE))
            return el_error(EL_ERR_INVALID_ARG, "--rates: %g is not below %g", rates[r], MAX_RATE);
    }
    /* elements of each structure in a block: MLP (gate, up, down), Q/K rows, V/O rows */
    double ff = 3.0 * hp->n_ff, qk = (double)(hp->n_head + hp->n_head_kv) * hp->head_dim_k,
           vo = (double)(hp->n_head + hp->n_head_kv) * hp->head_dim_v;
    double can = (prunable(hp->n_ff, grain.ff) ? ff : 0) +
                 (prunable(hp->head_dim_k, grain.qk) ? qk : 0) +
                 (prunable(hp->head_dim_v, grain.vo) ? vo : 0);
    double scale = can > 0 ? (ff + qk + vo) / can : 0;
    for (int32_t r = 1; r < n_rates; r++)
        if (!(rates[r] * scale < MAX_RATE))
            return el_error(EL_ERR_INVALID_ARG,
                            "--rates: %g would drop %.0f%% of the structures "
                            "this model's layout can prune (%.0f%% of its block weights)",
                            rates[r], 100.0 * rates[r] * scale, 100.0 / scale);
    el_status st = el_uniql_plan_alloc(plan, rates, n_rates, hp->n_layer);
    if (st) return st;
    for (int32_t r = 0; r < n_rates; r++)
        for (int32_t il = 0; il < hp->n_layer; il++) {
            size_t i = (size_t)r * hp->n_layer + il;
            plan->ff_kept[i] = kept(hp->n_ff, rates[r] * scale, grain.ff);
            plan->qk_kept[i] = kept(hp->head_dim_k, rates[r] * scale, grain.qk);
            plan->vo_kept[i] = kept(hp->head_dim_v, rates[r] * scale, grain.vo);
        }
    return EL_OK;
}
