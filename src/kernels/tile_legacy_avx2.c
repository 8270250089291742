/* tile_legacy_avx2.c - AVX2 4x4 tiles (prompt processing) for Q5_0, IQ4_NL (against Q8_0), Q5_1
 * (against Q8_1) and IQ4_XS (against Q8_K): the path where the packed gemm (gemm_avx2.c) does
 * not take a type or cannot have its memory. Without them a prompt ran through the gemv one
 * activation row at a time, each row reading the weights again from L2. Q4_1 has none: its gemv
 * row after row over blocks the later rows find in L2 measured faster (docs/kernels.md). */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>
#include <stdbool.h>

#include "kernels/avx2_simd.h"
#include "kernels/blocks.h"
#include "kernels/legacy_x86_simd.h"

/* Four weight rows of a block type of 32 against four activation rows, one weight row at a time:
 * each block of it is unpacked once into 32 bytes in element order (nibbles, fifth bits or'ed
 * in as 16, IQ4's levels looked up) for the four activation rows, and each block's 8 int32
 * lanes take their scale in float, so nothing is summed across lanes before the row's end
 * (horizontal adds per block ran at half this speed). Q5_0's levels q - 16 and IQ4's are signed
 * and take the sign trick (|level| <= 128 keeps vpmaddubsw's pairs in int16); Q5_1's levels
 * stay unsigned, and their min times the Q8_1 block's s is summed apart. */
static inline __attribute__((always_inline)) void tile_legacy(legacy_kind t, int64_t n, float *y,
                                                              int64_t ldy, const void *w,
                                                              size_t w_stride, const void *a,
                                                              size_t a_stride) {
    const __m256i ones = _mm256_set1_epi16(1), sixteen = _mm256_set1_epi8(16);
    const __m256i table = legacy_iq4_table();
    const bool sign = !legacy_has_min(t);
    const size_t wb = legacy_block_bytes(t), ab = legacy_act_bytes(t), aq = legacy_act_quants(t);
    const int64_t nb = n / EL_QK4_0;
    for (int o = 0; o < EL_TILE; o++) {
        const char *wr = (const char *)w + o * w_stride;
        __m256 acc[EL_TILE];
        float mins[EL_TILE] = {0};
        #pragma GCC unroll 4
        for (int r = 0; r < EL_TILE; r++) acc[r] = _mm256_setzero_ps();
        for (int64_t i = 0; i < nb; i++) {
            const char *b = wr + i * wb;
            __m256i u = legacy_block_levels(t, b, table);
            __m256i levels = t == LEGACY_Q5_0 ? _mm256_sub_epi8(u, sixteen) : u;
            __m256i mag = sign ? _mm256_sign_epi8(levels, levels) : u;
            float dw = fp16(legacy_half_at(b));
            float mw = legacy_has_min(t) ? fp16(legacy_half_at(b + 2)) : 0.0f;
            #pragma GCC unroll 4
            for (int r = 0; r < EL_TILE; r++) {
                const char *blk = (const char *)a + r * a_stride + i * ab;
                __m256i yq = _mm256_loadu_si256((const __m256i *)(blk + aq));
                if (sign) yq = _mm256_sign_epi8(yq, levels);
                __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(mag, yq), ones);
                float d = dw * fp16(legacy_half_at(blk));
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(d), acc[r]);
                if (legacy_has_min(t)) mins[r] += mw * fp16(legacy_half_at(blk + 2));
            }
        }
        #pragma GCC unroll 4
        for (int r = 0; r < EL_TILE; r++) y[r * ldy + o] = hsum_ps(acc[r]) + mins[r];
    }
}

void el_tile_q5_0_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride) {
    tile_legacy(LEGACY_Q5_0, n, y, ldy, w, w_stride, a, a_stride);
}

void el_tile_iq4_nl_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                         const void *a, size_t a_stride) {
    tile_legacy(LEGACY_IQ4_NL, n, y, ldy, w, w_stride, a, a_stride);
}

void el_tile_q5_1_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride) {
    tile_legacy(LEGACY_Q5_1, n, y, ldy, w, w_stride, a, a_stride);
}

/* IQ4_XS: one weight row at a time against the four activation rows. Each sub-block of 32 is
 * looked up once (its |levels| and signs) for the four; vpmaddwd by the sub-block's scale - 32
 * (instead of by ones) both widens the pairs and scales them, so a super-block's 8 sub-blocks
 * sum exactly into one int32 register per activation row (at most 8 * 2 * 32258 * 32 per
 * lane), which takes d times the activation's d once. */
void el_tile_iq4_xs_avx2(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                         const void *a, size_t a_stride) {
    const __m256i table = legacy_iq4_table();
    const int64_t nb = n / EL_QK_K;
    const el_block_q8_k *act[EL_TILE];
    for (int r = 0; r < EL_TILE; r++)
        act[r] = (const el_block_q8_k *)((const char *)a + r * a_stride);
    for (int o = 0; o < EL_TILE; o++) {
        const el_block_iq4_xs *x = (const el_block_iq4_xs *)((const char *)w + o * w_stride);
        __m256 acc[EL_TILE];
        #pragma GCC unroll 4
        for (int r = 0; r < EL_TILE; r++) acc[r] = _mm256_setzero_ps();
        for (int64_t i = 0; i < nb; i++) {
            __m256i sum[EL_TILE];
            #pragma GCC unroll 4
            for (int r = 0; r < EL_TILE; r++) sum[r] = _mm256_setzero_si256();
            #pragma GCC unroll 8
            for (int s = 0; s < EL_QK_K / 32; s++) {
                __m256i codes = legacy_nibbles((const char *)x[i].qs + 16 * s);
                __m256i lv = _mm256_shuffle_epi8(table, codes), mag = _mm256_sign_epi8(lv, lv);
                __m256i scale = _mm256_set1_epi16((short)el_iq4_xs_scale(&x[i], s));
                #pragma GCC unroll 4
                for (int r = 0; r < EL_TILE; r++) {
                    __m256i yq = _mm256_loadu_si256((const __m256i *)(act[r][i].qs + 32 * s));
                    __m256i p = _mm256_maddubs_epi16(mag, _mm256_sign_epi8(yq, lv));
                    sum[r] = _mm256_add_epi32(sum[r], _mm256_madd_epi16(p, scale));
                }
            }
            float dw = fp16(x[i].d);
            #pragma GCC unroll 4
            for (int r = 0; r < EL_TILE; r++)
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[r]),
                                         _mm256_set1_ps(dw * act[r][i].d), acc[r]);
        }
        #pragma GCC unroll 4
        for (int r = 0; r < EL_TILE; r++) y[r * ldy + o] = hsum_ps(acc[r]);
    }
}

#endif
