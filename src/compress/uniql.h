/* uniql.h - the plan that maps a global pruning rate to the kept size of every matrix of a sorted
 * model, and the writer that lays a sorted model out for pruning (docs/formats.md "UniQL").
 * `edgelora compress` builds the plan; the writer is the last step of compression. */
#ifndef EL_COMPRESS_UNIQL_H
#define EL_COMPRESS_UNIQL_H

#include <stdint.h>

#include "edgelora-tools.h"

typedef struct el_uniql_plan {
    int32_t n_rates;     /* rates ascending, rates[0] == 0 */
    float *rates;        /* global pruning rates, e.g. 0, 0.05, ..., 0.35 */
    int32_t *ff_kept;    /* [n_rates * n_layer], r-major: MLP channels kept at rate r in layer il */
    int32_t *qk_kept;    /* [n_rates * n_layer]: Q/K dims kept per head (even) */
    int32_t *vo_kept;    /* [n_rates * n_layer]: V/O dims kept per KV head */
    int32_t *rope_pairs; /* [n_layer * n_head_kv * n_rot/2]: original pair index of each stored
                          * pair, or NULL for the identity */
} el_uniql_plan;

/* Writes dst: the sorted model at src re-laid out for pruning, with the plan as metadata. */
el_status el_uniql_write(const char *src, const el_uniql_plan *plan, const char *dst);

/* The identity plan of the model at src: at each of the n_rates rates (ascending from 0) every
 * layer keeps the fraction 1 - rate of its MLP channels, Q/K and V/O dims, rounded down to the
 * layout's granularity (docs/formats.md "UniQL"), no RoPE pairs moved. For test files and speed
 * measurements of any model without compressing it. Free with el_uniql_plan_free. */
el_status el_uniql_plan_uniform(const char *src, const float *rates, int32_t n_rates,
                                el_uniql_plan *out);
/* Allocates a plan's arrays for n_rates rates (copied from rates) and n_layer layers, kept sizes
 * and rope_pairs left to the caller (rope_pairs NULL). */
el_status el_uniql_plan_alloc(el_uniql_plan *plan, const float *rates, int32_t n_rates,
                              int32_t n_layer);
/* Frees each array of a plan (malloc'd, as el_uniql_plan_uniform makes them) and zeroes it. */
void el_uniql_plan_free(el_uniql_plan *plan);

#endif
