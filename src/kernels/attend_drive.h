/* attend_drive.h - the order of work the SIMD attention kernels (attend.h) share: the group's
 * query heads in blocks of up to ATTEND_HEADS_AT_ONCE, each block's dot products over every
 * cell, each head's softmax, then each block's weighted sum of values. The ISA files supply the
 * three steps; a block's head count reaches them as a constant (through the switch, once this
 * is inlined with the steps known), so they keep their accumulators in registers. */
#ifndef EL_KERNELS_ATTEND_DRIVE_H
#define EL_KERNELS_ATTEND_DRIVE_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/attend.h"

enum {
    ATTEND_HEADS_AT_ONCE = 4, /* query heads a step serves with one key or value load */
    ATTEND_MAX_GROUP = 64,    /* query heads per kv head the SIMD kernels take */
};

/* q_h . k_j / sqrt(hd_k) into scores[h * ld + j] for heads h < n of q and every cell j < nv. */
typedef void (*attend_dots_fn)(bool f16, int n, int hd_k, int32_t nv, const float *q,
                               const void *const *k, float inv_scale, float *scores, size_t ld);
/* s = exp(s - max s) over nv scores; returns 1 / their sum. */
typedef float (*attend_softmax_fn)(float *s, int32_t nv);
/* out_h = norm_h sum_j p[h * ld + j] v_j for heads h < n. */
typedef void (*attend_weigh_fn)(bool f16, int n, int hd_v, int32_t nv, const float *p, size_t ld,
                                const float *norm, const void *const *v, float *out);

static inline __attribute__((always_inline)) void attend_drive(
    const bool f16, int group, int hd_k, int hd_v, int32_t nv, const float *q,
    const void *const *k, const void *const *v, float *scores, size_t ld_scores, float *out,
    attend_dots_fn dots, attend_softmax_fn softmax, attend_weigh_fn weigh) {
    const float inv_scale = 1.0f / sqrtf((float)hd_k);
    float norm[ATTEND_MAX_GROUP];
    for (int g = 0; g < group; g += ATTEND_HEADS_AT_ONCE) {
        const float *qg = q + (size_t)g * hd_k;
        float *s = scores + (size_t)g * ld_scores;
        switch (group - g < ATTEND_HEADS_AT_ONCE ? group - g : ATTEND_HEADS_AT_ONCE) {
        case 1: dots(f16, 1, hd_k, nv, qg, k, inv_scale, s, ld_scores); break;
        case 2: dots(f16, 2, hd_k, nv, qg, k, inv_scale, s, ld_scores); break;
        case 3: dots(f16, 3, hd_k, nv, qg, k, inv_scale, s, ld_scores); break;
        default: dots(f16, 4, hd_k, nv, qg, k, inv_scale, s, ld_scores); break;
        }
    }
    for (int g = 0; g < group; g++) norm[g] = softmax(scores + (size_t)g * ld_scores, nv);
    for (int g = 0; g < group; g += ATTEND_HEADS_AT_ONCE) {
        const float *p = scores + (size_t)g * ld_scores;
        float *o = out + (size_t)g * hd_v;
        switch (group - g < ATTEND_HEADS_AT_ONCE ? group - g : ATTEND_HEADS_AT_ONCE) {
        case 1: weigh(f16, 1, hd_v, nv, p, ld_scores, norm + g, v, o); break;
        case 2: weigh(f16, 2, hd_v, nv, p, ld_scores, norm + g, v, o); break;
        case 3: weigh(f16, 3, hd_v, nv, p, ld_scores, norm + g, v, o); break;
        default: weigh(f16, 4, hd_v, nv, p, ld_scores, norm + g, v, o); break;
        }
    }
}

/* An ISA's whole el_attend_fn: shapes its steps do not take (head sizes not a multiple of its
 * lanes, groups over ATTEND_MAX_GROUP, no cells, where 1 / sum would make 0 * inf) go to the
 * reference; otherwise the element type becomes a constant for the steps. */
static inline __attribute__((always_inline)) void attend_simd(
    int lanes, el_type kv_type, int group, int hd_k, int hd_v, int32_t nv, const float *q,
    const void *const *k, const void *const *v, float *scores, size_t ld_scores, float *out,
    attend_dots_fn dots, attend_softmax_fn softmax, attend_weigh_fn weigh) {
    if (hd_k % lanes != 0 || hd_v % lanes != 0 || group > ATTEND_MAX_GROUP || nv < 1)
        el_attend_ref(kv_type, group, hd_k, hd_v, nv, q, k, v, scores, ld_scores, out);
    else if (kv_type == EL_TYPE_F16)
        attend_drive(true, group, hd_k, hd_v, nv, q, k, v, scores, ld_scores, out, dots, softmax,
                     weigh);
    else
        attend_drive(false, group, hd_k, hd_v, nv, q, k, v, scores, ld_scores, out, dots,
                     softmax, weigh);
}

#endif
