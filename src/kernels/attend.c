/* attend.c - the reference attention kernel (attend.h). */
#include "kernels/attend.h"

#include <math.h>
#include <string.h>

/* Element i of a key or value row of the cache's element type. */
static inline float kv_at(el_type kv_type, const void *row, int i) {
    return kv_type == EL_TYPE_F16 ? el_fp16_to_fp32(((const uint16_t *)row)[i])
                                  : ((const float *)row)[i];
}

void el_attend_ref(el_type kv_type, int group, int hd_k, int hd_v, int32_t nv, const float *q,
                   const void *const *k, const void *const *v, float *scores, size_t ld_scores,
                   float *out) {
    for (int g = 0; g < group; g++) {
        const float *qg = q + (size_t)g * hd_k;
        float *s = scores + (size_t)g * ld_scores, max = -INFINITY, sum = 0.0f;
        for (int32_t j = 0; j < nv; j++) {
            float dot = 0.0f;
            for (int i = 0; i < hd_k; i++)
                dot += qg[i] * kv_at(kv_type, k[j], i);
            s[j] = dot / sqrtf((float)hd_k);
            if (s[j] > max)
                max = s[j];
        }
        for (int32_t j = 0; j < nv; j++) {
            s[j] = expf(s[j] - max);
            sum += s[j];
        }
        for (int32_t j = 0; j < nv; j++)
            s[j] /= sum;
        float *o = out + (size_t)g * hd_v;
        memset(o, 0, (size_t)hd_v * sizeof *o);
        for (int32_t j = 0; j < nv; j++)
            for (int i = 0; i < hd_v; i++)
                o[i] += s[j] * kv_at(kv_type, v[j], i);
    }
}
