/* tile_avx512.c - AVX-512 VNNI 4x4 tiles (prompt processing) for q8_0 and q4_0 on 256-bit
 * registers (AVX512-VL), and W8A16's on 512 bits. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include <immintrin.h>
#include <string.h>

#include "kernels/avx512_simd.h"
#include "kernels/blocks.h"
#include "kernels/edge.h"
#include "kernels/w8a16.h"

/* Folds the 8 int32 lanes of four dots into [d0 d1 d2 d3 | d0 d1 d2 d3], each half a partial
 * sum (two rounds of hadd). */
static inline __m256i fold4(__m256i p0, __m256i p1, __m256i p2, __m256i p3) {
    return _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
}

/* The four fp16 scales of a tile's weight rows for one block, in both halves. */
static inline __m256 tile_scales(const uint16_t wd[EL_TILE]) {
    __m128 d = _mm_cvtph_ps(_mm_setr_epi16((short)wd[0], (short)wd[1], (short)wd[2],
                                           (short)wd[3], 0, 0, 0, 0));
    return _mm256_set_m128(d, d);
}

/* The 4x4 tiles: as tile_avx2.c's, with vpdpbusd doing the byte products. For q4_0 the quants stay
 * unsigned and the offset 8 * sum y comes off once per activation row; for q8_0 the sign trick
 * moves the weight's sign onto the activation. Loops over the tile are unrolled so its arrays
 * live in registers. */
static inline __attribute__((always_inline)) void tile_b32(int64_t n, float *y, int64_t ldy,
                                                           const void *w, size_t w_stride,
                                                           const void *a, size_t a_stride,
                                                           bool q4) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), eight = _mm256_set1_epi8(8);
    const __m256i zero = _mm256_setzero_si256();
    const size_t w_block = q4 ? sizeof(el_block_q4_0) : sizeof(el_block_q8_0);
    __m256 acc[EL_TILE];
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) acc[r] = _mm256_setzero_ps();
    const char *wp = w;
    for (int64_t i = 0; i < n / EL_QK8_0; i++, wp += w_block) {
        __m256i wq[EL_TILE], wu[EL_TILE]; /* signed quants (q8_0) and the unsigned operand */
        uint16_t wd[EL_TILE];
        #pragma GCC unroll 4
        for (int o = 0; o < EL_TILE; o++) {
            const char *blk = wp + (size_t)o * w_stride;
            if (q4) {
                __m128i q = _mm_loadu_si128((const __m128i *)((const el_block_q4_0 *)blk)->qs);
                wu[o] = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), low4);
                wq[o] = zero;
                wd[o] = ((const el_block_q4_0 *)blk)->d;
            } else {
                wq[o] = _mm256_loadu_si256((const __m256i *)((const el_block_q8_0 *)blk)->qs);
                wu[o] = _mm256_sign_epi8(wq[o], wq[o]);
                wd[o] = ((const el_block_q8_0 *)blk)->d;
            }
        }
        const __m256 dw = tile_scales(wd);
        #pragma GCC unroll 4
        for (int r = 0; r < EL_TILE; r++) {
            const el_block_q8_0 *ab = (const el_block_q8_0 *)((const char *)a + r * a_stride) + i;
            __m256i yq = _mm256_loadu_si256((const __m256i *)ab->qs);
            __m256i p[EL_TILE];
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++)
                p[o] = _mm256_dpbusd_epi32(zero, wu[o], q4 ? yq : _mm256_sign_epi8(yq, wq[o]));
            __m256i dots = fold4(p[0], p[1], p[2], p[3]);
            if (q4) {
                __m256i off = _mm256_dpbusd_epi32(zero, eight, yq);
                dots = _mm256_sub_epi32(dots, fold4(off, off, off, off));
            }
            __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(fp16(ab->d)));
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), d, acc[r]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) {
        __m128 v = _mm_add_ps(_mm256_castps256_ps128(acc[r]), _mm256_extractf128_ps(acc[r], 1));
        _mm_storeu_ps(y + r * ldy, v);
    }
}

void el_tile_q8_0_avx512(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                         const void *a, size_t a_stride) {
    tile_b32(n, y, ldy, w, w_stride, a, a_stride, false);
}

void el_tile_q4_0_avx512(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                         const void *a, size_t a_stride) {
    tile_b32(n, y, ldy, w, w_stride, a, a_stride, true);
}

/* EL_TILE W8 rows against EL_TILE A16 rows (a prompt): each weight chunk widened once for the
 * tile's activation rows, each activation chunk loaded once for its weight rows. */
void el_tile_w8a16_avx512(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                          const void *a, size_t a_stride) {
    const int8_t *q[EL_TILE];
    const char *v[EL_TILE];
    int64_t sum[EL_TILE][EL_TILE] = {{0}};
    for (int t = 0; t < EL_TILE; t++) {
        q[t] = (const int8_t *)((const char *)w + t * w_stride) + sizeof(float);
        v[t] = el_a16_view_of((const char *)a + t * a_stride, n).q;
    }
    for (int64_t i = 0; i < n;) {
        int64_t end = el_a16_run_end(i, n);
        __m512i acc[EL_TILE][EL_TILE];
        #pragma GCC unroll 4
        for (int r = 0; r < EL_TILE; r++)
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++) acc[r][o] = _mm512_setzero_si512();
        for (; i < end; i += 32) {
            __m512i wq[EL_TILE];
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++) wq[o] = widen32(q[o] + i);
            #pragma GCC unroll 4
            for (int r = 0; r < EL_TILE; r++) {
                __m512i av = _mm512_loadu_si512(v[r] + 2 * i);
                #pragma GCC unroll 4
                for (int o = 0; o < EL_TILE; o++)
                    acc[r][o] = _mm512_dpwssd_epi32(acc[r][o], wq[o], av);
            }
        }
        #pragma GCC unroll 4
        for (int r = 0; r < EL_TILE; r++)
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++) sum[r][o] += hsum_epi32_wide(acc[r][o]);
    }
    el_w8a16_tile_store(sum, y, ldy, w, w_stride, a, a_stride);
}

#endif
