/* attend.h - attention of the query heads that share one kv head, over the cells one row sees.
 *
 * For g < group: s_j = q_g . k_j / sqrt(hd_k) over the nv visible cells j, p = softmax(s),
 * out_g = sum_j p_j v_j. q holds the group's heads one after the other (hd_k floats each), out
 * likewise (hd_v floats each); k[j] and v[j] point at cell j's key and value of this kv head,
 * elements of kv_type: EL_TYPE_F32 or EL_TYPE_F16 (the KV cache's element type; an fp16 element
 * is converted to float exactly on load, the arithmetic after that is float either way).
 * scores is scratch of group rows of ld_scores >= nv floats. Cells are taken in the order given,
 * so a row gives the same result whatever else is in its batch. */
#ifndef EL_KERNELS_ATTEND_H
#define EL_KERNELS_ATTEND_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/types.h"

typedef void (*el_attend_fn)(el_type kv_type, int group, int hd_k, int hd_v, int32_t nv,
                             const float *q, const void *const *k, const void *const *v,
                             float *scores, size_t ld_scores, float *out);

/* The portable reference: scalar float sums in the order of llama2.c's run.c. */
void el_attend_ref(el_type kv_type, int group, int hd_k, int hd_v, int32_t nv, const float *q,
                   const void *const *k, const void *const *v, float *scores, size_t ld_scores,
                   float *out);

#endif
