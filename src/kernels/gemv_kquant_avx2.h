/* gemv_kquant_avx2.h - Q4_K, Q5_K and Q6_K weight rows against Q8_K activation rows: the one
 * body of the dot products and gemvs of both x86 levels. gemv_kquant_avx2.c and
 * dot_kquant_avx2.c build it with AVX2 (vpmaddubsw, then vpmaddwd by the sub-block scales and an
 * add); gemv_kquant_avx512.c with AVX-512 VL and VNNI, where vpdpwssd does the scale's
 * multiply-add and the add in one instruction and vpternlogd merges the high bits into the
 * nibbles. Included inside the file's ISA guard.
 *
 * A block of 256 is worked on in chunks of 32 elements (one register of unsigned quants against
 * one register of activations): vpmaddubsw gives int16 pair sums, which fit (Q6_K: 2 * 63 *
 * 127), and the multiply-add by the sub-block's scale widens them to 8 int32 lanes. The block's
 * lanes take its float scale once. The mins of Q4_K and Q5_K, and Q6_K's offset of 32, are
 * sums of the activations per 16, which Q8_K keeps (bsums): one vpmaddwd per block and row.
 *
 * Each weight row is worked on block by block on its own, the R rows (1, 2 or 4, far apart:
 * gemv_drive) taking turns per block so that their streams advance together; the activation
 * block is reloaded from L1 for each row, which costs load slots but frees the registers the
 * unpacked quants need. Against A activation rows (1, 2-3 for the multi-row gemv, 4 for the
 * AVX2 tile) each chunk of a weight row is unpacked once for all of them. A row's sums and
 * their order depend only on the row and its activation, never on R or A, so every output has
 * the same bits in any company. */
#ifndef EL_KERNELS_GEMV_KQUANT_AVX2_H
#define EL_KERNELS_GEMV_KQUANT_AVX2_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/avx2_simd.h"
#include "kernels/blocks.h"
#include "kernels/dispatch.h"

/* acc + the int32 sums of adjacent pairs of p * scale (int16 lanes). */
static inline __m256i kq_madd_acc(__m256i acc, __m256i p, __m256i scale) {
#if defined(__AVX512VL__) && defined(__AVX512VNNI__)
    return _mm256_dpwssd_epi32(acc, p, scale);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, scale));
#endif
}

/* (q & low) | high, for high bits already in place and masked. */
static inline __m256i kq_merge(__m256i q, __m256i low, __m256i high) {
#if defined(__AVX512VL__) && defined(__AVX512VNNI__)
    return _mm256_ternarylogic_epi32(q, low, high, 0xEA);
#else
    return _mm256_or_si256(_mm256_and_si256(q, low), high);
#endif
}

/* v shifted left by k bits in each 16-bit lane (right by -k if k < 0); k a constant. */
static inline __m256i kq_shift(__m256i v, int k) {
    return k >= 0 ? _mm256_slli_epi16(v, k) : _mm256_srli_epi16(v, -k);
}

/* The 8 scales of a Q4_K / Q5_K block as int16 in both 128-bit lanes, and its 8 mins each twice
 * (m0 m0 m1 m1 ...), to pair with the 16 bsums. The 12 bytes are unpacked as el_q4_k_scales_mins
 * does, four sub-blocks per 32-bit lane: the 16-byte load reads 4 bytes of qs past them. */
static inline void kq_scales_mins(const uint8_t *scales, __m256i *sc, __m256i *mdup) {
    __m128i u = _mm_loadu_si128((const __m128i *)scales); /* words u0 u1 u2 */
    __m128i low = _mm_shuffle_epi32(u, _MM_SHUFFLE(2, 1, 2, 0)); /* u0 u2 u1 u2 */
    __m128i top = _mm_shuffle_epi32(u, _MM_SHUFFLE(1, 1, 0, 0)); /* u0 u0 u1 u1 */
    low = _mm_and_si128(_mm_srlv_epi32(low, _mm_setr_epi32(0, 0, 0, 4)),
                        _mm_setr_epi32(0x3F3F3F3F, 0x0F0F0F0F, 0x3F3F3F3F, 0x0F0F0F0F));
    /* the top 2 bits of each byte of u0 (u1) to bits 4-5: scales (mins) 4-7's high bits */
    top = _mm_and_si128(_mm_srli_epi32(top, 2), _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
    __m128i sm = _mm_or_si128(low, top); /* scales 0-7, mins 0-7 */
    *sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
    *mdup = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));
}

/* The 16 scales of a Q6_K block as int16, the even sub-blocks' in the low 128-bit lane and the
 * odd ones' in the high lane: chunk j (sub-blocks 2j, 2j+1) takes element j of each lane. */
static inline __m256i kq_q6_k_scales(const int8_t *scales) {
    const __m128i even_odd = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    return _mm256_cvtepi8_epi16(
        _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)scales), even_odd));
}

/* The 16 bsums in kq_q6_k_scales' order. */
static inline __m256i kq_bsums_even_odd(const int16_t *bsums) {
    const __m256i even_odd = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,
                                              0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    __m256i v = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)bsums), even_odd);
    return _mm256_permute4x64_epi64(v, 0xD8);
}

/* Activation rows a call takes at most: EL_GEMV_MULTI_MAX for the multi-row gemvs, EL_TILE
 * for the tiles. */
enum { KQ_MAX_ACTS = 4 };
_Static_assert(KQ_MAX_ACTS >= (int)EL_TILE && KQ_MAX_ACTS >= (int)EL_GEMV_MULTI_MAX,
               "a call's activation rows");

static inline __m256i kq_load(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* Block i of a Q4_K (q5 false) or Q5_K (q5) row against block i of the A activation rows b[]:
 * acc[a] += d * ad * (sum of sc * q * y) - dmin * ad * (sum of m * bsums). */
static inline __attribute__((always_inline)) void kq_block_q4_5(const char *xb, bool q5,
                                                                const el_block_q8_k *const b[],
                                                                int64_t i, int A, __m256 acc[]) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
    /* Q4_K and Q5_K keep d, dmin and the scales alike at the start of the block */
    const el_block_q4_k *x4 = (const el_block_q4_k *)xb;
    const uint8_t *qs = q5 ? ((const el_block_q5_k *)xb)->qs : x4->qs;
    __m256i sc, mdup, qh = _mm256_setzero_si256();
    kq_scales_mins(x4->scales, &sc, &mdup);
    if (q5) qh = kq_load(((const el_block_q5_k *)xb)->qh);
    __m256i sum[KQ_MAX_ACTS];
    #pragma GCC unroll 4
    for (int a = 0; a < A; a++) sum[a] = _mm256_setzero_si256();
    #pragma GCC unroll 4
    for (int c = 0; c < 4; c++) { /* 32 bytes: sub-blocks 2c (low nibbles), 2c+1 (high) */
        __m256i q = kq_load(qs + 32 * c);
        __m256i hi = _mm256_srli_epi16(q, 4);
        __m256i lo;
        if (q5) { /* the fifth bits: bit 2c of qh for the low nibbles, 2c + 1 for the high */
            lo = kq_merge(q, low4, _mm256_and_si256(kq_shift(qh, 4 - 2 * c), bit4));
            hi = kq_merge(hi, low4, _mm256_and_si256(kq_shift(qh, 3 - 2 * c), bit4));
        } else {
            lo = _mm256_and_si256(q, low4);
            hi = _mm256_and_si256(hi, low4);
        }
#if defined(__AVX512VL__) && defined(__AVX512VNNI__)
        /* vpdpbusd's sums of 4 fit int16 (4 * 31 * 127): both sub-blocks' packed into one
         * register, which one vpdpwssd takes by their scales (4 words each per 128-bit lane) */
        const short w0 = (short)(0x0101 * 4 * c + 0x0100), w1 = (short)(w0 + 0x0202);
        __m256i sp = _mm256_shuffle_epi8(sc, _mm256_setr_epi16(w0, w0, w0, w0, w1, w1, w1, w1,
                                                               w0, w0, w0, w0, w1, w1, w1, w1));
        #pragma GCC unroll 4
        for (int a = 0; a < A; a++) {
            const int8_t *y = b[a][i].qs + 64 * c;
            __m256i d0 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), lo, kq_load(y));
            __m256i d1 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), hi, kq_load(y + 32));
            sum[a] = _mm256_dpwssd_epi32(sum[a], _mm256_packs_epi32(d0, d1), sp);
        }
#else
        __m256i s0 = pick_i16(sc, 2 * c), s1 = pick_i16(sc, 2 * c + 1);
        #pragma GCC unroll 4
        for (int a = 0; a < A; a++) {
            __m256i p0 = _mm256_maddubs_epi16(lo, kq_load(b[a][i].qs + 64 * c));
            __m256i p1 = _mm256_maddubs_epi16(hi, kq_load(b[a][i].qs + 64 * c + 32));
            sum[a] = kq_madd_acc(kq_madd_acc(sum[a], p0, s0), p1, s1);
        }
#endif
    }
    /* d and dmin (adjacent) converted together, each times the activation's scale */
    uint32_t d_dmin;
    memcpy(&d_dmin, &x4->d, sizeof d_dmin);
    const __m128 dw = _mm_cvtph_ps(_mm_cvtsi32_si128((int)d_dmin));
    #pragma GCC unroll 4
    for (int a = 0; a < A; a++) {
        __m256 da = _mm256_castps128_ps256(_mm_mul_ps(dw, _mm_set1_ps(b[a][i].d)));
        __m256i mins = _mm256_madd_epi16(kq_load(b[a][i].bsums), mdup);
        acc[a] = _mm256_fmadd_ps(_mm256_broadcastss_ps(_mm256_castps256_ps128(da)),
                                 _mm256_cvtepi32_ps(sum[a]), acc[a]);
        acc[a] = _mm256_fnmadd_ps(_mm256_permutevar8x32_ps(da, _mm256_set1_epi32(1)),
                                  _mm256_cvtepi32_ps(mins), acc[a]);
    }
}

/* Block i of a Q6_K row against block i of the A activation rows: the quants 0..63 unsigned,
 * q - 32 taken as q * y - 32 * y with the sums of y from bsums:
 * acc[a] += d * ad * (sum of sc * q * y - 32 * sum of sc * bsums). */
static inline __attribute__((always_inline)) void kq_block_q6(const char *xb,
                                                              const el_block_q8_k *const b[],
                                                              int64_t i, int A, __m256 acc[]) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), top2 = _mm256_set1_epi8(0x30);
    const el_block_q6_k *x = (const el_block_q6_k *)xb;
    __m256i sc = kq_q6_k_scales(x->scales);
    __m256i off = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc, 5)); /* -32 sc */
    __m256i sum[KQ_MAX_ACTS];
    #pragma GCC unroll 4
    for (int a = 0; a < A; a++) sum[a] = _mm256_madd_epi16(kq_bsums_even_odd(b[a][i].bsums), off);
    #pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        __m256i qh = kq_load(x->qh + 32 * h);
        __m256i ql0 = kq_load(x->ql + 64 * h), ql1 = kq_load(x->ql + 64 * h + 32);
        #pragma GCC unroll 4
        for (int quarter = 0; quarter < 4; quarter++) {
            __m256i lo = quarter & 1 ? ql1 : ql0;
            if (quarter >> 1) lo = _mm256_srli_epi16(lo, 4);
            /* bits 2 * quarter, + 1 of qh to bits 4, 5 */
            __m256i q = kq_merge(lo, low4, _mm256_and_si256(kq_shift(qh, 4 - 2 * quarter), top2));
            __m256i s = pick_i16(sc, 4 * h + quarter);
            #pragma GCC unroll 4
            for (int a = 0; a < A; a++) {
                __m256i y = kq_load(b[a][i].qs + 128 * h + 32 * quarter);
                sum[a] = kq_madd_acc(sum[a], _mm256_maddubs_epi16(q, y), s);
            }
        }
    }
    float d = fp16(x->d);
    #pragma GCC unroll 4
    for (int a = 0; a < A; a++)
        acc[a] = _mm256_fmadd_ps(_mm256_set1_ps(d * b[a][i].d), _mm256_cvtepi32_ps(sum[a]), acc[a]);
}

/* The dots s[a][r] of the R weight rows x[r] (nb blocks of type) with the A activation rows b[a]
 * (type and the counts constants after inlining; s has KQ_MAX_ACTS rows). */
static inline __attribute__((always_inline)) void kq_rows(el_type type, int64_t nb,
                                                          const char *const x[], int R,
                                                          const el_block_q8_k *const b[], int A,
                                                          float s[][4]) {
    const size_t block = type == EL_TYPE_Q4_K ? sizeof(el_block_q4_k)
                         : type == EL_TYPE_Q5_K ? sizeof(el_block_q5_k)
                                                : sizeof(el_block_q6_k);
    __m256 acc[4][KQ_MAX_ACTS];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int a = 0; a < A; a++) acc[r][a] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const char *xb = x[r] + i * block;
            if (type == EL_TYPE_Q6_K)
                kq_block_q6(xb, b, i, A, acc[r]);
            else
                kq_block_q4_5(xb, type == EL_TYPE_Q5_K, b, i, A, acc[r]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 4
        for (int a = 0; a < A; a++) s[a][r] = hsum_ps(acc[r][a]);
}

#endif
