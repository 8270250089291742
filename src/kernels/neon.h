/* neon.h - the NEON kernels that neon.c's and neon_dotprod.c's tables name from other files. */
#ifndef EL_KERNELS_NEON_H
#define EL_KERNELS_NEON_H

#include "kernels/dispatch.h"

/* attend_neon.c: baseline Advanced SIMD, so both NEON levels' */
void el_attend_neon(el_type kv_type, int group, int hd_k, int hd_v, int32_t nv, const float *q,
                    const void *const *k, const void *const *v, float *scores, size_t ld_scores,
                    float *out);
/* gemm_neon_dotprod.c: the packed products with SDOT, built with +dotprod; signed weights */
void el_gemm_neon_dotprod(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                          size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y,
                          int64_t ldy, void *panel);

#endif
