/* tile_avx2.c - AVX2 4x4 tiles (prompt processing) for q8_0, q4_0, w8, w8a16 and w4 (the
 * K-quants' are in tile_kquant_avx2.c): four weight rows against four activation rows, each
 * weight block unpacked once for the four activation rows. */
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
