/* tile_avx2.c - AVX2 4x4 tiles (prompt processing) for q8_0, q4_0, q4_K, q6_K, w8, w8a16 and
 * w4: four weight rows against four activation rows, each weight block unpacked once for the
 * four activation rows. */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>
#include <string.h>

#include "kernels/avx2_simd.h"
#include "kernels/blocks.h"
#include "kernels/edge.h"
#include "kernels/w8a16.h"

/* Folds the 8 int32 lanes of four dots into [d0 d1 d2 d3 | d0 d1 d2 d3], each half a partial
 * sum (two rounds of hadd). */
static inline __m256i fold4(__m256i p0, __m256i p1, __m256i p2, __m256i p3) {
    return _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
}

/* Stores the four sums of acc's two halves to y[0..3]. */
static inline void store_fold(float *y, __m256 acc) {
    _mm_storeu_ps(y, _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1)));
}

/* The EL_TILE x EL_TILE tiles (prompt processing). Per block the four weight rows are unpacked
 * once; for each activation row the four dots are folded into one vector (fold4), scaled by
 * the four weight scales times the activation's and accumulated in acc[r], whose halves add up
 * to y[r][0..3]. The loops over the tile are unrolled so that its arrays live in registers
 * (-O2 would keep them in memory). */
void el_tile_q8_0_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[EL_TILE];
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EL_QK8_0; i++) {
        __m256i wq[EL_TILE], wabs[EL_TILE];
        uint16_t wd[EL_TILE];
        #pragma GCC unroll 4
        for (int o = 0; o < EL_TILE; o++) {
            const el_block_q8_0 *b = (const el_block_q8_0 *)((const char *)w + o * w_stride) + i;
            wq[o] = _mm256_loadu_si256((const __m256i *)b->qs);
            wabs[o] = _mm256_sign_epi8(wq[o], wq[o]); /* for dot_i8's sign trick, once */
            wd[o] = b->d;
        }
        __m128 dw4 = _mm_cvtph_ps(_mm_setr_epi16((short)wd[0], (short)wd[1], (short)wd[2],
                                                 (short)wd[3], 0, 0, 0, 0));
        __m256 dw = _mm256_set_m128(dw4, dw4);
        #pragma GCC unroll 4
        for (int r = 0; r < EL_TILE; r++) {
            const el_block_q8_0 *ab = (const el_block_q8_0 *)((const char *)a + r * a_stride) + i;
            __m256i yq = _mm256_loadu_si256((const __m256i *)ab->qs);
            __m256i p[EL_TILE];
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++)
                p[o] = _mm256_madd_epi16(
                    _mm256_maddubs_epi16(wabs[o], _mm256_sign_epi8(yq, wq[o])), ones);
            __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(fp16(ab->d)));
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(fold4(p[0], p[1], p[2], p[3])), d, acc[r]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) store_fold(y + r * ldy, acc[r]);
}

/* Q4_0 quants stay unsigned (q in 0..15, maddubs takes them as they are) and the offset comes
 * off once per activation row: sum (q - 8) y = sum q y - 8 sum y. */
void el_tile_q4_0_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), eight = _mm256_set1_epi8(8);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[EL_TILE];
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EL_QK4_0; i++) {
        __m256i wq[EL_TILE];
        uint16_t wd[EL_TILE];
        #pragma GCC unroll 4
        for (int o = 0; o < EL_TILE; o++) {
            const el_block_q4_0 *b = (const el_block_q4_0 *)((const char *)w + o * w_stride) + i;
            __m128i q = _mm_loadu_si128((const __m128i *)b->qs);
            wq[o] = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), low4);
            wd[o] = b->d;
        }
        __m128 dw4 = _mm_cvtph_ps(_mm_setr_epi16((short)wd[0], (short)wd[1], (short)wd[2],
                                                 (short)wd[3], 0, 0, 0, 0));
        __m256 dw = _mm256_set_m128(dw4, dw4);
        #pragma GCC unroll 4
        for (int r = 0; r < EL_TILE; r++) {
            const el_block_q8_0 *ab = (const el_block_q8_0 *)((const char *)a + r * a_stride) + i;
            __m256i yq = _mm256_loadu_si256((const __m256i *)ab->qs);
            __m256i p[EL_TILE];
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++)
                p[o] = _mm256_madd_epi16(_mm256_maddubs_epi16(wq[o], yq), ones);
            __m256i off = _mm256_madd_epi16(_mm256_maddubs_epi16(eight, yq), ones);
            __m256i dots = _mm256_sub_epi32(fold4(p[0], p[1], p[2], p[3]), fold4(off, off, off, off));
            __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(fp16(ab->d)));
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), d, acc[r]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) store_fold(y + r * ldy, acc[r]);
}

/* For the K-quant tiles: the integer sums of four weight rows' 256 unsigned quant bytes (as 8
 * chunks of 32, w[o][c]) against one Q8_K row, each pair product weighted by its chunk's scale
 * (scale[o][c], int16 lanes); sum[o] gets 8 int32 partial sums for row o. */
static inline __attribute__((always_inline)) void tile_k_sums(const el_block_q8_k *ab,
                                                              const __m256i w[EL_TILE][8],
                                                              const __m256i scale[EL_TILE][8],
                                                              __m256i sum[EL_TILE]) {
    #pragma GCC unroll 4
    for (int o = 0; o < EL_TILE; o++) sum[o] = _mm256_setzero_si256();
    #pragma GCC unroll 8
    for (int c = 0; c < 8; c++) {
        __m256i yq = _mm256_loadu_si256((const __m256i *)(ab->qs + 32 * c));
        #pragma GCC unroll 4
        for (int o = 0; o < EL_TILE; o++)
            sum[o] = _mm256_add_epi32(sum[o], _mm256_madd_epi16(
                _mm256_maddubs_epi16(w[o][c], yq), scale[o][c]));
    }
}

/* The 4x4 tile of Q4_K weights against Q8_K activations. Per block, the four weight rows are
 * unpacked once into small buffers (nibbles as bytes; each sub-block's scale widened to int16
 * lanes, ready for madd; mins duplicated per pair of bsums); then for each activation row
 * the 4 x 8 sub-block dots reuse them, folded per row into [o0..o3 | o0..o3] (fold4). */
void el_tile_q4_k_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256 acc[EL_TILE];
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        __m256i nib[EL_TILE][8];   /* [o][sub-block]: the 32 nibbles as bytes */
        __m256i scale[EL_TILE][8]; /* [o][sub-block]: its scale in every int16 lane */
        __m256i mdup[EL_TILE];     /* mins, each twice: pairs with the 16 bsums */
        float dw[EL_TILE], dminw[EL_TILE];
        #pragma GCC unroll 4
        for (int o = 0; o < EL_TILE; o++) {
            const el_block_q4_k *b = (const el_block_q4_k *)((const char *)w + o * w_stride) + i;
            uint32_t words[4];
            el_q4_k_scales_mins(b->scales, words);
            __m128i sm = _mm_setr_epi32((int)words[0], (int)words[1], (int)words[2], (int)words[3]);
            __m256i sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
            mdup[o] = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));
            #pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                __m256i q = _mm256_loadu_si256((const __m256i *)(b->qs + 32 * c));
                nib[o][2 * c] = _mm256_and_si256(q, low4);
                nib[o][2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
                scale[o][2 * c] = pick_i16(sc, 2 * c);
                scale[o][2 * c + 1] = pick_i16(sc, 2 * c + 1);
            }
            dw[o] = fp16(b->d);
            dminw[o] = fp16(b->dmin);
        }
        __m128 dw4 = _mm_setr_ps(dw[0], dw[1], dw[2], dw[3]);
        __m128 dminw4 = _mm_setr_ps(dminw[0], dminw[1], dminw[2], dminw[3]);
        __m256 dwv = _mm256_set_m128(dw4, dw4), dminv = _mm256_set_m128(dminw4, dminw4);
        for (int r = 0; r < EL_TILE; r++) {
            const el_block_q8_k *ab = (const el_block_q8_k *)((const char *)a + r * a_stride) + i;
            __m256i sum[EL_TILE];
            tile_k_sums(ab, nib, scale, sum);
            __m256i bs = _mm256_loadu_si256((const __m256i *)ab->bsums);
            __m256i mins = fold4(_mm256_madd_epi16(bs, mdup[0]), _mm256_madd_epi16(bs, mdup[1]),
                                 _mm256_madd_epi16(bs, mdup[2]), _mm256_madd_epi16(bs, mdup[3]));
            __m256 da = _mm256_set1_ps(ab->d);
            acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(dwv, da),
                                     _mm256_cvtepi32_ps(fold4(sum[0], sum[1], sum[2], sum[3])), acc[r]);
            acc[r] = _mm256_fnmadd_ps(_mm256_mul_ps(dminv, da), _mm256_cvtepi32_ps(mins), acc[r]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) store_fold(y + r * ldy, acc[r]);
}

/* The 4x4 tile of Q6_K weights against Q8_K activations, like tile_q4_k: per block the four
 * weight rows' 6-bit quants are unpacked once into bytes (0..63, unsigned for maddubs: pairs
 * <= 2*63*128 fit int16) with, per 32 elements, the two sub-blocks' scales in the two 128-bit
 * lanes; the - 32 offset is 32 * sum_s scale[s] * bsums[s], one madd per row pair. */
void el_tile_q6_k_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(3);
    __m256 acc[EL_TILE];
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        __m256i q6[EL_TILE][8];    /* [o][32-element chunk]: quants 0..63 as bytes */
        __m256i scale[EL_TILE][8]; /* [o][chunk]: its two sub-blocks' scales, one per lane */
        __m256i sc16[EL_TILE];     /* the 16 scales as int16, for the offset term */
        float dw[EL_TILE];
        #pragma GCC unroll 4
        for (int o = 0; o < EL_TILE; o++) {
            const el_block_q6_k *b = (const el_block_q6_k *)((const char *)w + o * w_stride) + i;
            sc16[o] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b->scales));
            #pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                __m256i sch = h ? _mm256_permute2x128_si256(sc16[o], sc16[o], 0x11)
                                : _mm256_permute2x128_si256(sc16[o], sc16[o], 0x00);
                __m256i qh = _mm256_loadu_si256((const __m256i *)(b->qh + 32 * h));
                __m256i ql0 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h));
                __m256i ql1 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h + 32));
                #pragma GCC unroll 4
                for (int quarter = 0; quarter < 4; quarter++) {
                    __m256i lo = quarter & 1 ? ql1 : ql0;
                    if (quarter >> 1) lo = _mm256_srli_epi16(lo, 4);
                    lo = _mm256_and_si256(lo, low4);
                    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * quarter), low2);
                    q6[o][4 * h + quarter] = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
                    scale[o][4 * h + quarter] = _mm256_blend_epi32(
                        pick_i16(sch, 2 * quarter), pick_i16(sch, 2 * quarter + 1), 0xF0);
                }
            }
            dw[o] = fp16(b->d);
        }
        __m128 dw4 = _mm_setr_ps(dw[0], dw[1], dw[2], dw[3]);
        __m256 dwv = _mm256_set_m128(dw4, dw4);
        for (int r = 0; r < EL_TILE; r++) {
            const el_block_q8_k *ab = (const el_block_q8_k *)((const char *)a + r * a_stride) + i;
            __m256i sum[EL_TILE];
            tile_k_sums(ab, q6, scale, sum);
            __m256i bs = _mm256_loadu_si256((const __m256i *)ab->bsums);
            __m256i off = fold4(_mm256_madd_epi16(sc16[0], bs), _mm256_madd_epi16(sc16[1], bs),
                                _mm256_madd_epi16(sc16[2], bs), _mm256_madd_epi16(sc16[3], bs));
            __m256i dots = _mm256_sub_epi32(fold4(sum[0], sum[1], sum[2], sum[3]),
                                            _mm256_slli_epi32(off, 5));
            acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(dwv, _mm256_set1_ps(ab->d)),
                                     _mm256_cvtepi32_ps(dots), acc[r]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) store_fold(y + r * ldy, acc[r]);
}

/* EL_TILE W8 rows against EL_TILE A16 rows, two activation rows at a time (16 registers do not
 * hold all 16 sums). */
void el_tile_w8a16_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                        const void *a, size_t a_stride) {
    const int8_t *q[EL_TILE];
    int64_t sum[EL_TILE][EL_TILE] = {{0}};
    for (int o = 0; o < EL_TILE; o++)
        q[o] = (const int8_t *)((const char *)w + o * w_stride) + sizeof(float);
    for (int r0 = 0; r0 < EL_TILE; r0 += 2) {
        const char *v[2] = {el_a16_view_of((const char *)a + r0 * a_stride, n).q,
                            el_a16_view_of((const char *)a + (r0 + 1) * a_stride, n).q};
        for (int64_t i = 0; i < n;) {
            int64_t end = el_a16_run_end(i, n);
            __m256i acc[2][EL_TILE];
            #pragma GCC unroll 2
            for (int r = 0; r < 2; r++)
                #pragma GCC unroll 4
                for (int o = 0; o < EL_TILE; o++) acc[r][o] = _mm256_setzero_si256();
            for (; i < end; i += 16) {
                __m256i wq[EL_TILE];
                #pragma GCC unroll 4
                for (int o = 0; o < EL_TILE; o++) wq[o] = widen16(q[o] + i);
                #pragma GCC unroll 2
                for (int r = 0; r < 2; r++) {
                    __m256i av = _mm256_loadu_si256((const __m256i *)(v[r] + 2 * i));
                    #pragma GCC unroll 4
                    for (int o = 0; o < EL_TILE; o++)
                        acc[r][o] = _mm256_add_epi32(acc[r][o], _mm256_madd_epi16(wq[o], av));
                }
            }
            #pragma GCC unroll 2
            for (int r = 0; r < 2; r++)
                #pragma GCC unroll 4
                for (int o = 0; o < EL_TILE; o++) sum[r0 + r][o] += hsum_epi32_wide(acc[r][o]);
        }
    }
    el_w8a16_tile_store(sum, y, ldy, w, w_stride, a, a_stride);
}

/* The 4x4 tile of W8 or W4 rows against A8 rows: integer sums over the whole row and one float
 * multiply per output at the end. Two weight rows at a time against the four activation rows
 * keep 8 int32 accumulators (and the weight chunks) in registers; each weight chunk is loaded
 * and unpacked once for four activation rows. W4 nibbles stay unsigned and 8 * (the A8 row's
 * sum) comes off at the end, as in vec_dot_w4. */
static inline __attribute__((always_inline)) void tile_wrow(int64_t n, float *y, int64_t ldy,
                                                            const void *w, size_t w_stride,
                                                            const void *a, size_t a_stride,
                                                            bool w4) {
    const __m256i ones = _mm256_set1_epi16(1);
    el_a8_header ah[EL_TILE];
    const int8_t *act[EL_TILE];
    for (int r = 0; r < EL_TILE; r++) {
        memcpy(&ah[r], (const char *)a + r * a_stride, sizeof ah[r]);
        act[r] = (const int8_t *)a + r * a_stride + sizeof ah[r];
    }
    for (int o0 = 0; o0 < EL_TILE; o0 += 2) {
        const char *row[2] = {(const char *)w + o0 * w_stride, (const char *)w + (o0 + 1) * w_stride};
        __m256i acc[2][EL_TILE];
        #pragma GCC unroll 2
        for (int k = 0; k < 2; k++) {
            #pragma GCC unroll 4
            for (int r = 0; r < EL_TILE; r++) acc[k][r] = _mm256_setzero_si256();
        }
        for (int64_t i = 0; i < n; i += 32) {
            __m256i wv[2], wabs[2];
            #pragma GCC unroll 2
            for (int k = 0; k < 2; k++) {
                const char *q = row[k] + sizeof(float);
                if (w4) {
                    wv[k] = wabs[k] = load_chunk_u4((const uint8_t *)q + i / 2);
                } else {
                    wv[k] = _mm256_loadu_si256((const __m256i *)(q + i));
                    wabs[k] = _mm256_sign_epi8(wv[k], wv[k]);
                }
            }
            #pragma GCC unroll 4
            for (int r = 0; r < EL_TILE; r++) {
                __m256i yv = _mm256_loadu_si256((const __m256i *)(act[r] + i));
                #pragma GCC unroll 2
                for (int k = 0; k < 2; k++) {
                    __m256i p = _mm256_maddubs_epi16(wabs[k], w4 ? yv : _mm256_sign_epi8(yv, wv[k]));
                    acc[k][r] = _mm256_add_epi32(acc[k][r], _mm256_madd_epi16(p, ones));
                }
            }
        }
        for (int k = 0; k < 2; k++) {
            float dw = el_edge_row_scale(row[k]);
            for (int r = 0; r < EL_TILE; r++) {
                int32_t dot = hsum_epi32(acc[k][r]) - (w4 ? 8 * ah[r].sum : 0);
                y[r * ldy + o0 + k] = dw * ah[r].d * (float)dot;
            }
        }
    }
}

void el_tile_w8_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                     const void *a, size_t a_stride) {
    tile_wrow(n, y, ldy, w, w_stride, a, a_stride, false);
}

void el_tile_w4_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                     const void *a, size_t a_stride) {
    tile_wrow(n, y, ldy, w, w_stride, a, a_stride, true);
}

#endif
