/* sampler.h - what the library (beyond the public API) asks of a sampler. */
#ifndef EL_RUNTIME_SAMPLER_H
#define EL_RUNTIME_SAMPLER_H

#include "edgelora.h"

/* The tokens el_sampler_sample could pick from these logits, most likely first (ties: lower id
 * first): those that survive the repetition penalty, top-k, top-p and min-p; every token when
 * greedy. Writes min(n, cap) ids and sets *n_out to n. Draws nothing from the sampler's RNG. */
el_status el_sampler_candidates(el_sampler *s, const float *logits, int32_t *ids, int32_t cap,
                                int32_t *n_out);

#endif
