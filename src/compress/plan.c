/* plan.c - kept sizes per rate: n minus r * n rounded down to the grain. Rounding down keeps at
 * least (1 - r) of every structure, so the rate is a bound on what is dropped. */
#include "compress/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static const float MAX_RATE = 0.9f; /* beyond it a model has no quality left to choose from */

static int32_t kept(int32_t n, float rate, int32_t grain) {
    if (grain <= 0) return n;
    int32_t drop = (int32_t)floor((double)rate * n / grain + 1e-9) * grain;
    return n - drop > 0 ? n - drop : grain;
}

el_status el_plan_build(const el_hparams *hp, const float *rates, int32_t n_rates,
                        el_plan_grain grain, el_uniql_plan *plan) {
    memset(plan, 0, sizeof *plan);
    if (n_rates < 1 || rates[0] != 0.0f)
        return el_error(EL_ERR_INVALID_ARG, "--rates: the first rate must be 0 (the whole model)");
    for (int32_t r = 1; r < n_rates; r++) {
        if (!(rates[r] > rates[r - 1]))
            return el_error(EL_ERR_INVALID_ARG, "--rates: %g after %g: rates must ascend",
                            rates[r], rates[r - 1]);
        if (!(rates[r] < MAX_RATE))
            return el_error(EL_ERR_INVALID_ARG, "--rates: %g is not below %g", rates[r],
                            MAX_RATE);
    }
    size_t n = (size_t)n_rates * (size_t)hp->n_layer;
    plan->n_rates = n_rates;
    plan->rates = malloc((size_t)n_rates * sizeof *plan->rates);
    plan->ff_kept = malloc(n * sizeof *plan->ff_kept);
    plan->qk_kept = malloc(n * sizeof *plan->qk_kept);
    plan->vo_kept = malloc(n * sizeof *plan->vo_kept);
    if (!plan->rates || !plan->ff_kept || !plan->qk_kept || !plan->vo_kept) {
        el_plan_free(plan);
        return el_error(EL_ERR_NOMEM, "plan: out of memory");
    }
    memcpy(plan->rates, rates, (size_t)n_rates * sizeof *rates);
    for (int32_t r = 0; r < n_rates; r++)
        for (int32_t il = 0; il < hp->n_layer; il++) {
            size_t i = (size_t)r * hp->n_layer + il;
            plan->ff_kept[i] = kept(hp->n_ff, rates[r], grain.ff);
            plan->qk_kept[i] = kept(hp->head_dim_k, rates[r], grain.qk);
            plan->vo_kept[i] = kept(hp->head_dim_v, rates[r], grain.vo);
        }
    return EL_OK;
}

void el_plan_free(el_uniql_plan *plan) {
    free(plan->rates);
    free(plan->ff_kept);
    free(plan->qk_kept);
    free(plan->vo_kept);
    free(plan->rope_pairs);
    memset(plan, 0, sizeof *plan);
}
