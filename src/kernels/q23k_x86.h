/* q23k_x86.h - Q2_K and Q3_K weight rows against Q8_K activation rows: the one body of the dot
 * products, gemvs and multi-row gemvs of both x86 levels. dot_q23k_avx2.c and gemv_q23k_avx2.c
 * build it with AVX2 (vpmaddubsw, then vpmaddwd by the sub-block scales and an add);
 * gemv_q23k_avx512.c with AVX-512 VL and VNNI, where vpdpwssd does the scale's multiply-add and
 * the add in one instruction, and Q3_K's high bits go in by a byte test into a mask register
 * and a masked or. Included inside the file's ISA guard.
 *
 * Both types keep their quants as Q2_K's 2-bit fields: in each half of 128 elements, 32 bytes
 * whose bits 2k, 2k+1 are the elements 32k..32k+31. So one 32-byte load of a half, shifted by
 * 2k and masked, is a chunk of 32 elements: sub-block 8h + 2k in the low 128-bit lane, 8h + 2k
 * + 1 in the high one, against 32 consecutive activations; vpmaddubsw of the unsigned quants
 * (Q2_K 0..3; Q3_K 0..7, the 2 bits and the high bit as bit 2) gives int16 pair sums, which the
 * multiply-add by the lane's sub-block scale widens to int32. The scales are laid out once per
 * block as int16, the even sub-blocks' in the low lane and the odd ones' in the high lane, so
 * chunk j takes element j of each lane (one in-lane shuffle).
 * Q2_K's mins and Q3_K's offset (level = field - 4 where the high bit is clear, so q - 4 for the
 * unsigned q = field + 4 * high) are sums of the activations per 16, which Q8_K keeps (bsums):
 * one vpmaddwd per block and activation row.
 *
 * Each weight row is worked on block by block on its own, the R rows (1, 2 or 4, far apart:
 * gemv_drive) taking turns per block so that their streams advance together; each chunk of a
 * weight row is unpacked once for the A activation rows (1, or 2-3 for the multi-row gemv). A
 * row's sums and their order depend only on the row and its activation, never on R or A, so
 * every output has the same bits in any company. */
#ifndef EL_KERNELS_Q23K_X86_H
#define EL_KERNELS_Q23K_X86_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/avx2_simd.h"
#include "kernels/blocks.h"
#include "kernels/dispatch.h"

/* acc + the int32 sums of adjacent pairs of p * scale (int16 lanes). */
static inline __m256i q23k_madd_acc(__m256i acc, __m256i p, __m256i scale) {
#if defined(__AVX512VL__) && defined(__AVX512VNNI__)
    return _mm256_dpwssd_epi32(acc, p, scale);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, scale));
#endif
}

static inline __m256i q23k_load(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* 16 scale bytes in natural order to the gemv's int16 layout: even sub-blocks in the low lane,
 * odd ones in the high lane (signed: sign-extended; else zero-extended). */
static inline __m256i q23k_scale_lanes(__m128i sc, bool is_signed) {
    const __m128i even_odd = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    __m128i v = _mm_shuffle_epi8(sc, even_odd);
    return is_signed ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
}

/* The 16 signed scales of a Q3_K block (field - 32) as bytes in natural order: the low 4 bits
 * of sub-block s are nibble s / 8 of byte s % 8, the top 2 bits bits 2 (s / 4), + 1 of byte
 * 8 + s % 4; worked out four at a time in 32-bit words on the integer pipes. */
static inline __m128i q23k_q3_k_scales(const uint8_t *scales) {
    uint32_t w[3];
    memcpy(w, scales, sizeof w);
    const uint32_t low4 = 0x0F0F0F0F, low2 = 0x03030303;
    __m128i v = _mm_setr_epi32((int)((w[0] & low4) | ((w[2] & low2) << 4)),
                               (int)((w[1] & low4) | (((w[2] >> 2) & low2) << 4)),
                               (int)(((w[0] >> 4) & low4) | (((w[2] >> 4) & low2) << 4)),
                               (int)(((w[1] >> 4) & low4) | (((w[2] >> 6) & low2) << 4)));
    return _mm_sub_epi8(v, _mm_set1_epi8(32));
}

/* Element j of each 128-bit lane of the scale layout into every int16 of the lane. */
static inline __m256i q23k_scale_of_chunk(__m256i lanes, int j) { return pick_i16(lanes, j); }

/* Where chunk k (0..3) of a half is kept: fields 0-2 are masked where they lie (bits 2k, 2k+1),
 * saving a shift, so the chunk holds 4^k times its quants (vpmaddubsw's pairs stay below 2 * 112
 * * 127 even with Q3_K's high bit); field 3 is shifted down (64 * 7 would not fit a byte). */
static inline int q23k_place(int k) { return k < 3 ? 2 * k : 0; }

/* Chunk k of the half's 32 bytes q, at q23k_place(k). */
static inline __m256i q23k_field(__m256i q, int k) {
    return k < 3 ? _mm256_and_si256(q, _mm256_set1_epi8((char)(3 << 2 * k)))
                 : _mm256_and_si256(_mm256_srli_epi16(q, 6), _mm256_set1_epi8(3));
}

/* The scale layout times 16 / 4^place for chunk k, so that every chunk's sum is 16 times its
 * own: sc, sc << 2 and sc << 4 (sc4, sc16) precomputed per block. */
static inline __m256i q23k_chunk_scale(__m256i sc, __m256i sc4, __m256i sc16, int h, int k) {
    int shift = 4 - q23k_place(k);
    return q23k_scale_of_chunk(shift == 4 ? sc16 : shift == 2 ? sc4 : sc, 4 * h + k);
}

/* Chunk j = 4h + k of a Q3_K block: its fields f (q23k_field) with the high bits, bit j of
 * hmask[l] for element 32j + l, as the bit above the field (level + 4 = field + 4 * high). */
static inline __m256i q23k_q3_k_chunk(__m256i f, __m256i hmask, int h, int k) {
    int j = 4 * h + k, to = q23k_place(k) + 2;
#if defined(__AVX512VL__) && defined(__AVX512VNNI__)
    __mmask32 high = _mm256_test_epi8_mask(hmask, _mm256_set1_epi8((char)(1 << j)));
    return _mm256_mask_add_epi8(f, high, f, _mm256_set1_epi8((char)(1 << to)));
#else
    /* 16-bit shifts: the bit masked lands in its own byte for every j and to here */
    __m256i hb = to >= j ? _mm256_slli_epi16(hmask, to - j) : _mm256_srli_epi16(hmask, j - to);
    return _mm256_or_si256(f, _mm256_and_si256(hb, _mm256_set1_epi8((char)(1 << to))));
#endif
}

/* Block i of a Q2_K row against block i of the A activation rows b[]:
 * acc[a] += d * ad * (sum of sc * q * y) - dmin * ad * (sum of m * bsums), the first sum taken
 * 16 times (q23k_place) and d * ad / 16 for it. */
static inline __attribute__((always_inline)) void q23k_block_q2_k(const char *xb,
                                                                  const el_block_q8_k *const b[],
                                                                  int64_t i, int A, __m256 acc[]) {
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const el_block_q2_k *x = (const el_block_q2_k *)xb;
    __m128i raw = _mm_loadu_si128((const __m128i *)x->scales);
    __m256i sc = q23k_scale_lanes(_mm_and_si128(raw, low4), false);
    __m256i sc4 = _mm256_slli_epi16(sc, 2), sc16 = _mm256_slli_epi16(sc, 4);
    __m256i mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), low4));
    __m256i sum[EL_GEMV_MULTI_MAX];
    #pragma GCC unroll 3
    for (int a = 0; a < A; a++) sum[a] = _mm256_setzero_si256();
    #pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        __m256i q = q23k_load(x->qs + 32 * h);
        #pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            __m256i u = q23k_field(q, k);
            __m256i s = q23k_chunk_scale(sc, sc4, sc16, h, k);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++)
                sum[a] = q23k_madd_acc(
                    sum[a], _mm256_maddubs_epi16(u, q23k_load(b[a][i].qs + 128 * h + 32 * k)), s);
        }
    }
    float d = fp16(x->d) * 0.0625f, dmin = fp16(x->dmin);
    #pragma GCC unroll 3
    for (int a = 0; a < A; a++) {
        __m256i mins = _mm256_madd_epi16(q23k_load(b[a][i].bsums), mins16);
        acc[a] = _mm256_fmadd_ps(_mm256_set1_ps(d * b[a][i].d), _mm256_cvtepi32_ps(sum[a]), acc[a]);
        acc[a] = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * b[a][i].d), _mm256_cvtepi32_ps(mins), acc[a]);
    }
}

/* Block i of a Q3_K row against block i of the A activation rows: q = field + 4 * high (0..7)
 * and level = q - 4, so acc[a] += d * ad * (sum of sc * q * y - 4 * sum of sc * bsums), the sums
 * taken 16 times (q23k_place) and d * ad / 16 for them. */
static inline __attribute__((always_inline)) void q23k_block_q3_k(const char *xb,
                                                                  const el_block_q8_k *const b[],
                                                                  int64_t i, int A, __m256 acc[]) {
    const el_block_q3_k *x = (const el_block_q3_k *)xb;
    __m128i sc8 = q23k_q3_k_scales(x->scales);
    __m256i sc = q23k_scale_lanes(sc8, true);
    __m256i sc4 = _mm256_slli_epi16(sc, 2), sc16 = _mm256_slli_epi16(sc, 4);
    /* 16 * -4 * sc in natural order, against the bsums */
    __m256i off = _mm256_slli_epi16(_mm256_sub_epi16(_mm256_setzero_si256(), _mm256_cvtepi8_epi16(sc8)), 6);
    __m256i hmask = q23k_load(x->hmask);
    __m256i sum[EL_GEMV_MULTI_MAX];
    #pragma GCC unroll 3
    for (int a = 0; a < A; a++) sum[a] = _mm256_madd_epi16(q23k_load(b[a][i].bsums), off);
    #pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        __m256i q = q23k_load(x->qs + 32 * h);
        #pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            __m256i u = q23k_q3_k_chunk(q23k_field(q, k), hmask, h, k);
            __m256i s = q23k_chunk_scale(sc, sc4, sc16, h, k);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++)
                sum[a] = q23k_madd_acc(
                    sum[a], _mm256_maddubs_epi16(u, q23k_load(b[a][i].qs + 128 * h + 32 * k)), s);
        }
    }
    float d = fp16(x->d) * 0.0625f;
    #pragma GCC unroll 3
    for (int a = 0; a < A; a++)
        acc[a] = _mm256_fmadd_ps(_mm256_set1_ps(d * b[a][i].d), _mm256_cvtepi32_ps(sum[a]), acc[a]);
}

/* The dots s[a][r] of the R weight rows x[r] (nb blocks of type, Q2_K or Q3_K) with the A
 * activation rows b[a] (type and the counts constants after inlining). */
static inline __attribute__((always_inline)) void q23k_rows(el_type type, int64_t nb,
                                                            const char *const x[], int R,
                                                            const el_block_q8_k *const b[], int A,
                                                            float s[][4]) {
    const size_t block = type == EL_TYPE_Q2_K ? sizeof(el_block_q2_k) : sizeof(el_block_q3_k);
    __m256 acc[4][EL_GEMV_MULTI_MAX];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) acc[r][a] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const char *xb = x[r] + i * block;
            if (type == EL_TYPE_Q2_K)
                q23k_block_q2_k(xb, b, i, A, acc[r]);
            else
                q23k_block_q3_k(xb, b, i, A, acc[r]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) s[a][r] = hsum_ps(acc[r][a]);
}

#endif
