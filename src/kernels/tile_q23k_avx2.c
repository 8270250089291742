/* tile_q23k_avx2.c - AVX2 4x4 tiles (prompt processing) of Q2_K and Q3_K weights against Q8_K
 * activations. Per block the four weight rows are unpacked once (q23k_x86.h's chunks: unsigned
 * quants as bytes, each chunk's two sub-block scales as int16 lanes); then for each activation
 * row the 4 x 8 chunk dots reuse them, folded per row into [o0..o3 | o0..o3]. Q3_K's offset
 * (-4 times the scales against the bsums) starts the integer sums; Q2_K's mins are a second
 * folded sum, scaled by dmin. */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include "kernels/q23k_x86.h"

/* Four rows' 8 int32 partial sums folded into one register: lanes o and o + 4 together hold
 * row o's total. */
static inline __m256i fold4(__m256i p0, __m256i p1, __m256i p2, __m256i p3) {
    return _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
}

/* Stores the four sums of acc's two halves to y[0..3]. */
static inline void store_fold(float *y, __m256 acc) {
    _mm_storeu_ps(y, _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1)));
}

/* One block of four weight rows unpacked: chunk c's quants and scales (q23k_place: the quant
 * sums come out 16 times, and d is taken / 16), the per-16 factors that meet the bsums (Q2_K:
 * the mins; Q3_K: 16 * -4 times the scales), and the float scales. */
typedef struct unpacked4 {
    __m256i q[EL_TILE][8];
    __m256i scale[EL_TILE][8];
    __m256i bsum_factor[EL_TILE];
    float d[EL_TILE], dmin[EL_TILE];
} unpacked4;

static inline __attribute__((always_inline)) void unpack_q2_k(const el_block_q2_k *x, int o,
                                                              unpacked4 *u) {
    const __m128i low4 = _mm_set1_epi8(0x0F);
    __m128i raw = _mm_loadu_si128((const __m128i *)x->scales);
    __m256i sc = q23k_scale_lanes(_mm_and_si128(raw, low4), false);
    __m256i sc4 = _mm256_slli_epi16(sc, 2), sc16 = _mm256_slli_epi16(sc, 4);
    u->bsum_factor[o] = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), low4));
    #pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        __m256i q = q23k_load(x->qs + 32 * h);
        #pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            u->q[o][4 * h + k] = q23k_field(q, k);
            u->scale[o][4 * h + k] = q23k_chunk_scale(sc, sc4, sc16, h, k);
        }
    }
    u->d[o] = fp16(x->d) * 0.0625f;
    u->dmin[o] = fp16(x->dmin);
}

static inline __attribute__((always_inline)) void unpack_q3_k(const el_block_q3_k *x, int o,
                                                              unpacked4 *u) {
    __m128i sc8 = q23k_q3_k_scales(x->scales);
    __m256i sc = q23k_scale_lanes(sc8, true);
    __m256i sc4 = _mm256_slli_epi16(sc, 2), sc16 = _mm256_slli_epi16(sc, 4);
    u->bsum_factor[o] = _mm256_slli_epi16(
        _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_cvtepi8_epi16(sc8)), 6);
    __m256i hmask = q23k_load(x->hmask);
    #pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        __m256i q = q23k_load(x->qs + 32 * h);
        #pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            u->q[o][4 * h + k] = q23k_q3_k_chunk(q23k_field(q, k), hmask, h, k);
            u->scale[o][4 * h + k] = q23k_chunk_scale(sc, sc4, sc16, h, k);
        }
    }
    u->d[o] = fp16(x->d) * 0.0625f;
    u->dmin[o] = 0.0f;
}

/* The tile for type Q2_K or Q3_K (a constant after inlining). */
static inline __attribute__((always_inline)) void tile_q23k(el_type type, int64_t n, float *y,
                                                            int64_t ldy, const void *w,
                                                            size_t w_stride, const void *a,
                                                            size_t a_stride) {
    const size_t block = type == EL_TYPE_Q2_K ? sizeof(el_block_q2_k) : sizeof(el_block_q3_k);
    __m256 acc[EL_TILE];
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        unpacked4 u;
        #pragma GCC unroll 4
        for (int o = 0; o < EL_TILE; o++) {
            const char *xb = (const char *)w + o * w_stride + i * block;
            if (type == EL_TYPE_Q2_K)
                unpack_q2_k((const el_block_q2_k *)xb, o, &u);
            else
                unpack_q3_k((const el_block_q3_k *)xb, o, &u);
        }
        __m128 d4 = _mm_setr_ps(u.d[0], u.d[1], u.d[2], u.d[3]);
        __m128 dmin4 = _mm_setr_ps(u.dmin[0], u.dmin[1], u.dmin[2], u.dmin[3]);
        __m256 dv = _mm256_set_m128(d4, d4), dminv = _mm256_set_m128(dmin4, dmin4);
        for (int r = 0; r < EL_TILE; r++) {
            const el_block_q8_k *ab = (const el_block_q8_k *)((const char *)a + r * a_stride) + i;
            __m256i bs = q23k_load(ab->bsums);
            __m256i sum[EL_TILE];
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++)
                sum[o] = type == EL_TYPE_Q3_K ? _mm256_madd_epi16(bs, u.bsum_factor[o])
                                              : _mm256_setzero_si256();
            #pragma GCC unroll 8
            for (int c = 0; c < 8; c++) {
                __m256i yq = q23k_load(ab->qs + 32 * c);
                #pragma GCC unroll 4
                for (int o = 0; o < EL_TILE; o++)
                    sum[o] = q23k_madd_acc(sum[o], _mm256_maddubs_epi16(u.q[o][c], yq),
                                           u.scale[o][c]);
            }
            __m256 da = _mm256_set1_ps(ab->d);
            acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(dv, da),
                                     _mm256_cvtepi32_ps(fold4(sum[0], sum[1], sum[2], sum[3])),
                                     acc[r]);
            if (type == EL_TYPE_Q2_K) {
                __m256i mins = fold4(_mm256_madd_epi16(bs, u.bsum_factor[0]),
                                     _mm256_madd_epi16(bs, u.bsum_factor[1]),
                                     _mm256_madd_epi16(bs, u.bsum_factor[2]),
                                     _mm256_madd_epi16(bs, u.bsum_factor[3]));
                acc[r] = _mm256_fnmadd_ps(_mm256_mul_ps(dminv, da), _mm256_cvtepi32_ps(mins), acc[r]);
            }
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) store_fold(y + r * ldy, acc[r]);
}

void el_tile_q2_k_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride) {
    tile_q23k(EL_TYPE_Q2_K, n, y, ldy, w, w_stride, a, a_stride);
}

void el_tile_q3_k_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride) {
    tile_q23k(EL_TYPE_Q3_K, n, y, ldy, w, w_stride, a, a_stride);
}

#endif
