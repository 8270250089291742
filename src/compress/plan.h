/* plan.h - the rule from a global pruning rate to the kept size of every matrix (docs/uniql.md):
 * each sorted structure of each layer drops the same fraction of its channels, rounded down to
 * the granularity its layout needs, so the model drops about that fraction of its block weights. */
#ifndef EL_COMPRESS_PLAN_H
#define EL_COMPRESS_PLAN_H

#include "compress/uniql.h"
#include "model/model.h"

/* Granularity of each structure's kept size; 0: the structure is not pruned (kept whole). */
typedef struct el_plan_grain {
    int32_t ff; /* MLP channels: down's columns come in its blocks */
    int32_t qk; /* Q/K head dimensions: RoPE pairs, 2 */
    int32_t vo; /* V/O head dimensions: O's columns come in its blocks */
} el_plan_grain;

/* Fills plan (its arrays allocated here; rope_pairs NULL) for rates, which must ascend from 0
 * and stay below 0.9 (EL_ERR_INVALID_ARG naming the bad one otherwise). */
el_status el_plan_build(const el_hparams *hp, const float *rates, int32_t n_rates,
                        el_plan_grain grain, el_uniql_plan *plan);
void el_plan_free(el_uniql_plan *plan);

#endif
