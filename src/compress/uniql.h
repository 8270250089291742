/* uniql.h - the plan that maps a global pruning rate to the kept size of every matrix of a sorted
 * model, and the writer that lays a sorted model out for pruning (docs/formats.md "UniQL").
 * `edgelora compress` builds the plan; the writer is the last step of compression. */
#ifndef EL_COMPRESS_UNIQL_H
#define EL_COMPRESS_UNIQL_H

#include <stdint.h>

#include "edgelora.h"

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

#endif
