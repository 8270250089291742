/* attend.c - the reference attention kernel (attend.h). */
#include "kernels/attend.h"

#include <math.h>
#include <string.h>

void el_attend_ref(int group, int hd_k, int hd_v, int32_t nv, const float *q,
                   const float *const *k, const float *const *v, float *scores, size_t ld_scores,
                   float *out) {
    for (int g = 0; g < group; g++) {
        const float *qg = q + (size_t)g * hd_k;
        float *s = scores + (size_t)g * ld_scores, max = -INFINITY, sum = 0.0f;
        for (int32_t j = 0; j < nv; j++) {
            float dot = 0.0f;
            for (int i = 0; i < hd_k; i++)
                dot += qg[i] * k[j][i];
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
                o[i] += s[j] * v[j][i];
    }
}
