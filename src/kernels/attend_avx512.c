/* attend_avx512.c - the attention kernel of attend.h with AVX-512: dot products and weighted
 * sums of values 16 floats at a time, the heads of a group sharing each load of a value. The
 * exponentials are the reference's (scalar expf); the weights are normalized on the output, so
 * results agree with the reference to float rounding. Head sizes that are not multiples of 16
 * (and groups of more than 64 heads) go to the reference.
 * Built with AVX-512 flags on x86 (see Makefile) and used only when the CPU runs them. */
#include "kernels/dispatch.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)

#include <immintrin.h>
#include <math.h>

enum {
    HEADS_AT_ONCE = 4,        /* accumulators of one 16-float column for 4 heads */
    MAX_GROUP = 64, /* query heads per kv head this kernel takes */
};

/* s = exp(s - max s) in place; returns 1 / sum s (the weights are normalized afterwards, on
 * the output). */
static float softmax_unnormalized(float *s, int32_t nv) {
    __m512 vmax = _mm512_set1_ps(-INFINITY);
    int32_t j = 0;
    for (; j + 16 <= nv; j += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(s + j));
    float max = _mm512_reduce_max_ps(vmax), sum = 0.0f;
    for (; j < nv; j++)
        if (s[j] > max) max = s[j];
    for (j = 0; j < nv; j++) {
        s[j] = expf(s[j] - max);
        sum += s[j];
    }
    return 1.0f / sum;
}

/* out_g = norm_g sum_j p_g[j] v_j for n heads (a constant after inlining), p_g at p + g * ld. */
static inline __attribute__((always_inline)) void weigh(const int n, int hd_v, int32_t nv,
                                                        const float *p, size_t ld,
                                                        const float *norm,
                                                        const float *const *v, float *out) {
    for (int c = 0; c < hd_v; c += 16) {
        __m512 acc[HEADS_AT_ONCE];
        #pragma GCC unroll 4
        for (int g = 0; g < n; g++) acc[g] = _mm512_setzero_ps();
        for (int32_t j = 0; j < nv; j++) {
            __m512 vj = _mm512_loadu_ps(v[j] + c);
            #pragma GCC unroll 4
            for (int g = 0; g < n; g++)
                acc[g] = _mm512_fmadd_ps(_mm512_set1_ps(p[g * ld + j]), vj, acc[g]);
        }
        #pragma GCC unroll 4
        for (int g = 0; g < n; g++)
            _mm512_storeu_ps(out + (size_t)g * hd_v + c,
                             _mm512_mul_ps(acc[g], _mm512_set1_ps(norm[g])));
    }
}

static void attend(int group, int hd_k, int hd_v, int32_t nv, const float *q,
                   const float *const *k, const float *const *v, float *scores, size_t ld_scores,
                   float *out) {
    if (hd_k % 16 != 0 || hd_v % 16 != 0 || group > MAX_GROUP) {
        el_attend_ref(group, hd_k, hd_v, nv, q, k, v, scores, ld_scores, out);
        return;
    }
    const float inv_scale = 1.0f / sqrtf((float)hd_k);
    float norm[MAX_GROUP];
    for (int32_t j = 0; j < nv; j++) {
        for (int g = 0; g < group; g++) {
            const float *qg = q + (size_t)g * hd_k;
            __m512 acc = _mm512_mul_ps(_mm512_loadu_ps(qg), _mm512_loadu_ps(k[j]));
            for (int c = 16; c < hd_k; c += 16)
                acc = _mm512_fmadd_ps(_mm512_loadu_ps(qg + c), _mm512_loadu_ps(k[j] + c), acc);
            scores[(size_t)g * ld_scores + j] = _mm512_reduce_add_ps(acc) * inv_scale;
        }
    }
    for (int g = 0; g < group; g++) norm[g] = softmax_unnormalized(scores + (size_t)g * ld_scores, nv);
    for (int g = 0; g < group; g += HEADS_AT_ONCE) {
        const float *p = scores + (size_t)g * ld_scores;
        float *o = out + (size_t)g * hd_v;
        switch (group - g < HEADS_AT_ONCE ? group - g : HEADS_AT_ONCE) {
        case 1: weigh(1, hd_v, nv, p, ld_scores, norm + g, v, o); break;
        case 2: weigh(2, hd_v, nv, p, ld_scores, norm + g, v, o); break;
        case 3: weigh(3, hd_v, nv, p, ld_scores, norm + g, v, o); break;
        default: weigh(4, hd_v, nv, p, ld_scores, norm + g, v, o); break;
        }
    }
}

bool el_attend_avx512(el_kernels *k) {
    k->attend = attend;
    return true;
}

#else

/* Built without AVX-512 code generation (not x86, or without the Makefile's per-file flags). */
bool el_attend_avx512(el_kernels *k) {
    (void)k;
    return false;
}

#endif
