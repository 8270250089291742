/* plan.h - the rule from a global pruning rate to the kept size of every matrix (docs/uniql.md):
 * a rate r drops r of the block weights' elements, taken in equal proportion f from every
 * structure the layout can prune (f = r * all / prunable, the same in every layer), each kept
 * size rounded to the granularity its layout needs. */
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

/* The grains the UniQL layout (docs/formats.md) needs of a sorted model whose down and O are
 * stored in down_type and o_type: MLP channels in whole blocks of down's type, V/O dimensions
 * such that every head's together (O's columns dimension-major) are whole blocks of O's, Q/K
 * in RoPE pairs if they were sorted (else not pruned). */
el_plan_grain el_plan_grain_for(const el_hparams *hp, el_type down_type, el_type o_type,
                                bool qk_sorted);

/* Fills plan (its arrays allocated here; rope_pairs NULL) for rates, which must ascend from 0
 * and stay below 0.9, and ask no structure to drop 0.9 or more (EL_ERR_INVALID_ARG naming the
 * bad rate otherwise). Free the plan with el_uniql_plan_free. */
el_status el_plan_build(const el_hparams *hp, const float *rates, int32_t n_rates,
                        el_plan_grain grain, el_uniql_plan *plan);

#endif
