/* rope.c - rotary position embedding, the pair index fused into the rotation. */
#include "kernels/rope.h"

#include <stddef.h>

void el_rope_rotate(float *vec, int n_heads, int hd, int n_rot, bool neox, const float *cs,
                    const float *sn, const int32_t *pairs, int group) {
    int half = n_rot / 2;
    for (int h = 0; h < n_heads; h++) {
        float *p = vec + (size_t)h * hd;
        const int32_t *index = pairs ? pairs + (size_t)(h / group) * half : NULL;
        for (int i = 0; i < half; i++) {
            int fi = index ? index[i] : i;
            float *a = neox ? &p[i] : &p[2 * i];
            float *b = neox ? &p[i + half] : &p[2 * i + 1];
            float v0 = *a, v1 = *b;
            *a = v0 * cs[fi] - v1 * sn[fi];
            *b = v0 * sn[fi] + v1 * cs[fi];
        }
    }
}
