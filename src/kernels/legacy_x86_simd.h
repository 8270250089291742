/* legacy_x86_simd.h - what the x86 kernels of Q5_0, IQ4_NL, Q4_1, Q5_1 and IQ4_XS share (the
 * gemvs of gemv_legacy_x86.h, the gemm packing of gemm_legacy_avx512.c): nibbles, fifth bits,
 * IQ4's table, the byte dots and the activation pairs with their offset sums (AVX2's Q4_0 gemv
 * takes those too), in AVX-512 VNNI's form or AVX2's by the ISA macros the file's flags set.
 * Included inside an AVX2 guard. */
#ifndef EL_KERNELS_LEGACY_X86_SIMD_H
#define EL_KERNELS_LEGACY_X86_SIMD_H

#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "kernels/blocks.h"

static inline short legacy_half_at(const char *p) {
    short h;
    memcpy(&h, p, sizeof h);
    return h;
}

/* The block types of 32 and what each takes: its bytes, where its quants and fifth bits are,
 * its activations (Q8_0 or Q8_1 blocks) and the offset taken off its unsigned levels. */
typedef enum legacy_kind { LEGACY_Q5_0, LEGACY_IQ4_NL, LEGACY_Q4_1, LEGACY_Q5_1 } legacy_kind;

static inline size_t legacy_block_bytes(legacy_kind t) {
    switch (t) {
    case LEGACY_Q5_0: return sizeof(el_block_q5_0);
    case LEGACY_IQ4_NL: return sizeof(el_block_iq4_nl);
    case LEGACY_Q4_1: return sizeof(el_block_q4_1);
    default: return sizeof(el_block_q5_1);
    }
}

/* Q4_1 and Q5_1 have a min and dot Q8_1 (whose block sum meets it), the others Q8_0. */
static inline bool legacy_has_min(legacy_kind t) { return t == LEGACY_Q4_1 || t == LEGACY_Q5_1; }

static inline size_t legacy_act_bytes(legacy_kind t) {
    return legacy_has_min(t) ? sizeof(el_block_q8_1) : sizeof(el_block_q8_0);
}

static inline size_t legacy_act_quants(legacy_kind t) {
    return legacy_has_min(t) ? offsetof(el_block_q8_1, qs) : offsetof(el_block_q8_0, qs);
}

static inline bool legacy_has_fifth(legacy_kind t) { return t == LEGACY_Q5_0 || t == LEGACY_Q5_1; }

/* Where a block keeps its 16 bytes of nibbles, and (Q5_0, Q5_1) its 4 bytes of fifth bits. */
static inline size_t legacy_quants_at(legacy_kind t) {
    switch (t) {
    case LEGACY_Q5_0: return offsetof(el_block_q5_0, qs);
    case LEGACY_IQ4_NL: return offsetof(el_block_iq4_nl, qs);
    case LEGACY_Q4_1: return offsetof(el_block_q4_1, qs);
    default: return offsetof(el_block_q5_1, qs);
    }
}

static inline size_t legacy_fifths_at(legacy_kind t) {
    return t == LEGACY_Q5_0 ? offsetof(el_block_q5_0, qh) : offsetof(el_block_q5_1, qh);
}

static inline uint32_t legacy_word_at(const char *p) {
    uint32_t m;
    memcpy(&m, p, sizeof m);
    return m;
}

/* The 32 nibbles of 16 bytes of quants in element order (low nibbles, then high). */
static inline __m256i legacy_nibbles(const char *qs) {
    __m128i q = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0F));
}

/* Block pairs folded: v[p] holds block 2p's 4 lanes of sums, then block 2p + 1's; lane i of the
 * result is the sum of block {0, 2, 4, 6, 1, 3, 5, 7}[i]'s (the order of two rounds of in-lane
 * horizontal adds). */
static inline __m256i legacy_fold4(const __m256i v[4]) {
    return _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
}

#if defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)

/* vpdpbusd sums unsigned times signed bytes straight into int32: IQ4's levels go in shifted by
 * 128 (0..255) and the 128 comes off through the activation sums. */
enum { IQ4_OFFSET = 128 };

static inline __m256i legacy_dot_u8(__m256i u, __m256i a) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, a);
}

/* u with 16 added in byte j where bit j of m is set: m is a byte mask. */
static inline __m256i legacy_add_fifth(__m256i u, uint32_t m) {
    return _mm256_mask_add_epi8(u, (__mmask32)m, u, _mm256_set1_epi8(0x10));
}

/* A block pair's fifth bits (h0: the first block's qh, h1: the second's) into its unpacked low
 * (elements 0-15 of each) and high (16-31) levels. */
static inline void legacy_add_fifths(__m256i *lo, __m256i *hi, uint32_t h0, uint32_t h1) {
    *lo = legacy_add_fifth(*lo, (h0 & 0xFFFF) | h1 << 16);
    *hi = legacy_add_fifth(*hi, h0 >> 16 | (h1 & 0xFFFF0000u));
}

/* The levels vpshufb looks up, in both 128-bit lanes. */
static inline __m256i legacy_iq4_table(void) {
    __m128i t = _mm_xor_si128(_mm_loadu_si128((const __m128i *)el_iq4nl_values),
                              _mm_set1_epi8((char)0x80));
    return _mm256_broadcastsi128_si256(t);
}

static inline __m256i legacy_dot_iq4(__m256i levels, __m256i a) { return legacy_dot_u8(levels, a); }

/* A block pair of unsigned levels up to 31 (Q5_0, Q4_1, Q5_1: lo and hi, unpacked as the
 * gemvs do) against its activations, and four such pairs folded as legacy_fold4 folds: vpdpbusd
 * sums straight into int32. */
static inline __m256i legacy_pair_dot_u31(__m256i lo, __m256i alo, __m256i hi, __m256i ahi) {
    return _mm256_add_epi32(legacy_dot_u8(lo, alo), legacy_dot_u8(hi, ahi));
}

static inline __m256i legacy_fold4_u31(const __m256i v[4]) { return legacy_fold4(v); }

#else

/* vpmaddubsw sums pairs into int16: unsigned levels up to 31 stay exact (2 * 31 * 128), IQ4's
 * signed ones by the sign trick. */
enum { IQ4_OFFSET = 0 };

static inline __m256i legacy_dot_u8(__m256i u, __m256i a) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, a), _mm256_set1_epi16(1));
}

/* u or'ed with 16 in byte j where bit j % 8 of the byte of hv that spread picks for it is set:
 * the picked bytes spread over 8 bytes each, each of which tests its bit. */
static inline __m256i legacy_or_fifth(__m256i u, __m256i hv, __m256i spread) {
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    __m256i x = _mm256_and_si256(_mm256_shuffle_epi8(hv, spread), bit);
    return _mm256_or_si256(u, _mm256_and_si256(_mm256_cmpeq_epi8(x, bit), _mm256_set1_epi8(0x10)));
}

/* u or'ed with 16 in byte j where bit j of m is set. */
static inline __m256i legacy_add_fifth(__m256i u, uint32_t m) {
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    return legacy_or_fifth(u, _mm256_set1_epi32((int)m), spread);
}

/* A block pair's fifth bits (h0: the first block's qh, h1: the second's) into its unpacked low
 * (elements 0-15 of each) and high (16-31) levels: both from one broadcast of h0 and h1, each
 * 128-bit lane picking its block's bytes (lane 0 h0's, lane 1 h1's). */
static inline void legacy_add_fifths(__m256i *lo, __m256i *hi, uint32_t h0, uint32_t h1) {
    const __m256i spread_lo = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                               4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5);
    const __m256i spread_hi = _mm256_setr_epi8(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
                                               6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7);
    __m256i hv = _mm256_set1_epi64x((long long)((uint64_t)h1 << 32 | h0));
    *lo = legacy_or_fifth(*lo, hv, spread_lo);
    *hi = legacy_or_fifth(*hi, hv, spread_hi);
}

static inline __m256i legacy_iq4_table(void) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)el_iq4nl_values));
}

/* The level's sign moves onto the activation, so vpmaddubsw takes |level| as unsigned. */
static inline __m256i legacy_dot_iq4(__m256i levels, __m256i a) {
    return legacy_dot_u8(_mm256_sign_epi8(levels, levels), _mm256_sign_epi8(a, levels));
}

/* A block pair of unsigned levels up to 31 (Q5_0, Q4_1, Q5_1: lo and hi, unpacked as the
 * gemvs do) against its activations: int16 sums of 4 products each (at most 4 * 31 * 127), not
 * yet widened. Four such pairs fold as legacy_fold4 folds: one round of int16 horizontal adds (a
 * lane then holds 8 products, at most 31496: exact; a second round would overflow), widened,
 * and one of int32. */
static inline __m256i legacy_pair_dot_u31(__m256i lo, __m256i alo, __m256i hi, __m256i ahi) {
    return _mm256_add_epi16(_mm256_maddubs_epi16(lo, alo), _mm256_maddubs_epi16(hi, ahi));
}

static inline __m256i legacy_fold4_u31(const __m256i v[4]) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i x = _mm256_madd_epi16(_mm256_hadd_epi16(v[0], v[1]), ones);
    __m256i y = _mm256_madd_epi16(_mm256_hadd_epi16(v[2], v[3]), ones);
    return _mm256_hadd_epi32(x, y);
}

#endif

/* The activations of a pair of blocks as the unpacked weights meet them: lo holds the first 16
 * quants of each block (lane 0 the first block's, lane 1 the second's), hi the last 16. */
typedef struct legacy_pair {
    __m256i lo, hi;
} legacy_pair;

/* -offset * the sums of the blocks of 4 prepared pairs, in the folded order. */
static inline __m256i legacy_comp(const legacy_pair *pr, int offset) {
    const __m256i ones = _mm256_set1_epi8(1);
    __m256i v[4];
    for (int k = 0; k < 4; k++)
        v[k] = _mm256_add_epi32(legacy_dot_u8(ones, pr[k].lo), legacy_dot_u8(ones, pr[k].hi));
    return _mm256_mullo_epi32(legacy_fold4(v), _mm256_set1_epi32(-offset));
}

/* The 32 values of the block at b as bytes in element order: its nibbles, with Q5_0's and
 * Q5_1's fifth bits or'ed in as 16 (unsigned, 0..31), or IQ4_NL's levels looked up in table
 * (legacy_iq4_table: signed, or shifted by IQ4_OFFSET where vpdpbusd takes them). */
static inline __m256i legacy_block_levels(legacy_kind t, const char *b, __m256i table) {
    __m256i u = legacy_nibbles(b + legacy_quants_at(t));
    if (legacy_has_fifth(t)) u = legacy_add_fifth(u, legacy_word_at(b + legacy_fifths_at(t)));
    return t == LEGACY_IQ4_NL ? _mm256_shuffle_epi8(table, u) : u;
}

#endif
