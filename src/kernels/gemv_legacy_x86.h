/* gemv_legacy_x86.h - the gemvs (decode) of Q5_0 and IQ4_NL (against Q8_0), Q4_1 and Q5_1
 * (against Q8_1) and IQ4_XS (against Q8_K), and their multi-row gemvs (2-3 activation rows),
 * written once for x86's two levels:
 * gemv_legacy_avx2.c builds them over vpmaddubsw, gemv_legacy_avx512.c over vpdpbusd and
 * AVX-512BW's byte masks (by the ISA macros their flags set), and each gives them its level's
 * names. Included inside the AVX2 guard.
 *
 * Each block of 32 is unpacked into 32 bytes in element order (the nibbles as Q4_0's, the fifth
 * bits of Q5_0 / Q5_1 or'ed in as 16, IQ4's codes looked up by vpshufb in the table of 16
 * levels) and dotted with its 32 activation quants into 8 int32 lanes. Eight blocks' lanes fold
 * by horizontal adds into one lane each, so one conversion and one multiply-add by the 8 weight
 * scales times the 8 activation scales serve 8 blocks; the rest of what depends only on the
 * activations (their scales, the offset terms) is prepared once per call for all rows. Weights
 * are dotted as unsigned bytes where they are (Q5_0's 0..31 with its 16 taken off through the
 * activation sums, Q4_1's and Q5_1's levels, whose min meets Q8_1's block sum in float); IQ4's
 * signed levels take the sign trick over vpmaddubsw (|level| <= 127, so pairs stay in int16),
 * and with vpdpbusd (no int16 pairs) the table shifted by 128, the 128 taken off like Q5_0's 16.
 * IQ4_XS's 8 sub-blocks of a super-block are the 8 folded lanes, so its 6-bit scales multiply
 * them as integers before the super-block's one float scale. Rows go side by side as
 * gemv_drive picks them, each row's arithmetic the same in any company. */
#ifndef EL_KERNELS_GEMV_LEGACY_X86_H
#define EL_KERNELS_GEMV_LEGACY_X86_H

#include <stddef.h>
#include <string.h>

#include "kernels/blocks.h"
#include "kernels/gemv_drive.h"
#include "kernels/legacy_x86_simd.h"

/* Lane i of legacy_fold4's result is the sum of block LEGACY_ORDER[i]'s lanes. */
static const int LEGACY_ORDER[8] = {0, 2, 4, 6, 1, 3, 5, 7};

static inline float legacy_hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The fp16 values at p + k * stride for blocks k < count (the rest 0) in the folded order, as
 * floats: built in a register (narrow stores and one wide load would stall on forwarding). */
static inline __m256 legacy_halves(const char *p, size_t stride, int count) {
    short h[8];
    #pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        h[i] = LEGACY_ORDER[i] < count ? legacy_half_at(p + LEGACY_ORDER[i] * stride) : 0;
    return _mm256_cvtph_ps(_mm_setr_epi16(h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]));
}

static inline int legacy_offset(legacy_kind t) {
    return t == LEGACY_Q5_0 ? 16 : t == LEGACY_IQ4_NL ? IQ4_OFFSET : 0;
}

/* The 16 bytes at lo and at hi in the two 128-bit lanes; a NULL hi gives zeros there. */
static inline __m256i legacy_load_16_16(const char *lo, const char *hi) {
    __m256i x = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)lo));
    return hi ? _mm256_inserti128_si256(x, _mm_loadu_si128((const __m128i *)hi), 1)
              : _mm256_inserti128_si256(x, _mm_setzero_si128(), 1);
}


/* The weights of blocks b0 and b1 (b1 NULL: none, zeros) of one row unpacked for
 * legacy_pair_dot: both blocks' low nibbles in lo, high nibbles in hi (IQ4's looked up in the
 * table), so each 16-byte load serves 32 levels. */
typedef struct legacy_unpacked {
    __m256i lo, hi;
} legacy_unpacked;

static inline __attribute__((always_inline)) legacy_unpacked legacy_pair_unpack(
    legacy_kind t, const char *b0, const char *b1, __m256i table) {
    size_t qs = legacy_quants_at(t);
    __m256i q = legacy_load_16_16(b0 + qs, b1 ? b1 + qs : NULL);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i lo = _mm256_and_si256(q, low4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
    if (legacy_has_fifth(t)) { /* bit j of qh is element j's fifth bit */
        size_t qh = legacy_fifths_at(t);
        uint32_t h0 = legacy_word_at(b0 + qh), h1 = b1 ? legacy_word_at(b1 + qh) : 0;
        legacy_add_fifths(&lo, &hi, h0, h1);
    }
    if (t == LEGACY_IQ4_NL) {
        lo = _mm256_shuffle_epi8(table, lo);
        hi = _mm256_shuffle_epi8(table, hi);
    }
    return (legacy_unpacked){lo, hi};
}

/* An unpacked pair against its prepared activations p: block b0's sums, then b1's, in the form
 * legacy_fold takes (for unsigned levels over vpmaddubsw, int16 not yet widened). */
static inline __attribute__((always_inline)) __m256i legacy_pair_dot(legacy_kind t,
                                                                     const legacy_unpacked *u,
                                                                     const legacy_pair *p) {
    if (t == LEGACY_IQ4_NL)
        return _mm256_add_epi32(legacy_dot_iq4(u->lo, p->lo), legacy_dot_iq4(u->hi, p->hi));
    return legacy_pair_dot_u31(u->lo, p->lo, u->hi, p->hi);
}

/* Four pairs' legacy_pair_dot sums folded into one int32 lane per block, in legacy_fold4's
 * order. */
static inline __attribute__((always_inline)) __m256i legacy_fold(legacy_kind t,
                                                                 const __m256i v[4]) {
    return t == LEGACY_IQ4_NL ? legacy_fold4(v) : legacy_fold4_u31(v);
}

/* Activation elements prepared at a time: longer rows go in slices (summed). */
enum { LEGACY_SLICE = 16384 };

/* What 8 activation blocks (one group) give every row, in the folded order: their scales d,
 * for Q8_1 their scaled sums s, and -offset * the sum of each block's quants. */
typedef struct legacy_prep {
    __m256 d, s;
    __m256i comp;
} legacy_prep;

/* One slice of the activations: its first block, its blocks, its prepared pairs and groups. */
typedef struct legacy_slice {
    const char *act; /* the activation row */
    int64_t first, blocks;
    legacy_pair *pairs;
    legacy_prep *p;
} legacy_slice;

/* The activation pair of the 32 quants at q0 and at q1 (NULL: zeros). */
static inline legacy_pair legacy_pair_of(const char *q0, const char *q1) {
    return (legacy_pair){legacy_load_16_16(q0, q1), legacy_load_16_16(q0 + 16, q1 ? q1 + 16 : NULL)};
}

/* The slice's pairs of activation blocks and its groups of 8 (the last ones short). */
static inline __attribute__((always_inline)) void legacy_prepare(legacy_kind t,
                                                                 const legacy_slice *sl) {
    const size_t ab = legacy_act_bytes(t), aq = legacy_act_quants(t);
    const char *b = sl->act + sl->first * ab;
    for (int64_t k = 0; k < sl->blocks; k += 2)
        sl->pairs[k / 2] = legacy_pair_of(b + k * ab + aq,
                                          k + 1 < sl->blocks ? b + (k + 1) * ab + aq : NULL);
    for (int64_t g = 0; 8 * g < sl->blocks; g++) {
        int count = sl->blocks - 8 * g < 8 ? (int)(sl->blocks - 8 * g) : 8;
        const char *bg = b + 8 * g * ab;
        legacy_pair pr[4];
        for (int k = 0; k < 4; k++)
            pr[k] = 2 * k < count ? sl->pairs[4 * g + k] : (legacy_pair){_mm256_setzero_si256(),
                                                                          _mm256_setzero_si256()};
        sl->p[g].d = legacy_halves(bg, ab, count);
        sl->p[g].s = legacy_has_min(t) ? legacy_halves(bg + offsetof(el_block_q8_1, s), ab, count)
                                       : _mm256_setzero_ps();
        sl->p[g].comp = legacy_offset(t) != 0 ? legacy_comp(pr, legacy_offset(t))
                                              : _mm256_setzero_si256();
    }
}

/* A group of `count` blocks of a row at wb (8, or fewer at the slice's end) unpacked: its pairs,
 * its scales (and Q4_1's / Q5_1's mins) in the folded order. */
typedef struct legacy_group_w {
    legacy_unpacked pair[4];
    __m256 dw, dmin;
} legacy_group_w;

static inline __attribute__((always_inline)) void legacy_group_unpack(legacy_kind t,
                                                                      const char *wb, int count,
                                                                      __m256i table,
                                                                      legacy_group_w *g) {
    const size_t wbytes = legacy_block_bytes(t);
    #pragma GCC unroll 4
    for (int k = 0; k < 4; k++)
        g->pair[k] = 2 * k < count
                         ? legacy_pair_unpack(t, wb + 2 * k * wbytes,
                                              2 * k + 1 < count ? wb + (2 * k + 1) * wbytes : NULL,
                                              table)
                         : (legacy_unpacked){_mm256_setzero_si256(), _mm256_setzero_si256()};
    g->dw = legacy_halves(wb, wbytes, count);
    if (legacy_has_min(t)) /* Q4_1 and Q5_1 keep their min right after d */
        g->dmin = legacy_halves(wb + sizeof(uint16_t), wbytes, count);
}

/* acc + an unpacked group against its prepared pairs pr and group p: the folded integer sums,
 * offset, scaled. */
static inline __attribute__((always_inline)) __m256 legacy_group_dot(legacy_kind t, __m256 acc,
                                                                     const legacy_group_w *g,
                                                                     const legacy_pair *pr,
                                                                     const legacy_prep *p,
                                                                     int count) {
    __m256i v[4];
    #pragma GCC unroll 4
    for (int k = 0; k < 4; k++)
        v[k] = 2 * k < count ? legacy_pair_dot(t, &g->pair[k], pr + k) : _mm256_setzero_si256();
    __m256i sum = legacy_fold(t, v);
    if (legacy_offset(t) != 0) sum = _mm256_add_epi32(sum, p->comp);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(g->dw, p->d), acc);
    if (legacy_has_min(t)) acc = _mm256_fmadd_ps(g->dmin, p->s, acc);
    return acc;
}

static inline __attribute__((always_inline)) __m256 legacy_group(legacy_kind t, __m256 acc,
                                                                 const char *wb,
                                                                 const legacy_pair *pr,
                                                                 const legacy_prep *p, int count,
                                                                 __m256i table) {
    legacy_group_w g;
    legacy_group_unpack(t, wb, count, table, &g);
    return legacy_group_dot(t, acc, &g, pr, p, count);
}

/* The dots of R rows over a slice, each as it would be alone. */
static inline __attribute__((always_inline)) void legacy_rows(legacy_kind t, const void *ctx,
                                                              const char *const row[4],
                                                              float s[4], int R) {
    const legacy_slice *sl = ctx;
    const size_t wbytes = legacy_block_bytes(t);
    const __m256i table = legacy_iq4_table();
    __m256 acc[4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
    int64_t g = 0;
    for (; 8 * g + 8 <= sl->blocks; g++) {
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            acc[r] = legacy_group(t, acc[r], row[r] + (sl->first + 8 * g) * wbytes,
                                  sl->pairs + 4 * g, &sl->p[g], 8, table);
    }
    if (8 * g < sl->blocks) {
        int count = (int)(sl->blocks - 8 * g);
        for (int r = 0; r < R; r++)
            acc[r] = legacy_group(t, acc[r], row[r] + (sl->first + 8 * g) * wbytes,
                                  sl->pairs + 4 * g, &sl->p[g], count, table);
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = legacy_hsum(acc[r]);
}

static inline __attribute__((always_inline)) void legacy_gemv(legacy_kind t, gemv_rows_fn rows,
                                                              int64_t n, float *y, int64_t n_rows,
                                                              const void *w, size_t w_stride,
                                                              const void *a) {
    legacy_pair pairs[LEGACY_SLICE / 64];
    legacy_prep p[LEGACY_SLICE / 256];
    for (int64_t k0 = 0; k0 < n; k0 += LEGACY_SLICE) {
        int64_t len = n - k0 < LEGACY_SLICE ? n - k0 : LEGACY_SLICE;
        legacy_slice sl = {a, k0 / EL_QK4_0, len / EL_QK4_0, pairs, p};
        legacy_prepare(t, &sl);
        size_t act = (size_t)(sl.blocks + 1) / 2 * sizeof *pairs + (size_t)(sl.blocks + 7) / 8 * sizeof *p;
        int R = gemv_company((size_t)sl.blocks * legacy_block_bytes(t), act);
        gemv_drive(n_rows, R, w, w_stride, y, k0 > 0, rows, &sl);
    }
}

/* ---- against 2 or 3 activation rows (el_gemv_multi_fn: concurrent sequences): each group of a
 * weight row is unpacked once and dotted with every activation row's prepared slice, the one-row
 * kernel's operations in its order for each, so each output has the bits the gemv gives it. */
typedef struct legacy_multi {
    legacy_slice sl[EL_GEMV_MULTI_MAX];
} legacy_multi;

/* acc[a][r] + group g (count blocks) of weight rows row[r] against activation rows a. */
static inline __attribute__((always_inline)) void legacy_multi_group(
    legacy_kind t, const legacy_multi *m, const char *const row[2], int R, int A, int64_t g,
    int count, __m256i table, __m256 acc[][2]) {
    const size_t wbytes = legacy_block_bytes(t);
    for (int r = 0; r < R; r++) {
        legacy_group_w w;
        legacy_group_unpack(t, row[r] + (m->sl[0].first + 8 * g) * wbytes, count, table, &w);
        for (int a = 0; a < A; a++)
            acc[a][r] = legacy_group_dot(t, acc[a][r], &w, m->sl[a].pairs + 4 * g, &m->sl[a].p[g],
                                         count);
    }
}

static inline __attribute__((always_inline)) void legacy_rows_multi(legacy_kind t,
                                                                    const void *ctx,
                                                                    const char *const row[2],
                                                                    float s[][2], int R, int A) {
    const legacy_multi *m = ctx;
    const int64_t blocks = m->sl[0].blocks;
    const __m256i table = legacy_iq4_table();
    __m256 acc[EL_GEMV_MULTI_MAX][2];
    for (int a = 0; a < A; a++)
        for (int r = 0; r < R; r++) acc[a][r] = _mm256_setzero_ps();
    int64_t g = 0;
    for (; 8 * g + 8 <= blocks; g++) legacy_multi_group(t, m, row, R, A, g, 8, table, acc);
    if (8 * g < blocks) legacy_multi_group(t, m, row, R, A, g, (int)(blocks - 8 * g), table, acc);
    for (int a = 0; a < A; a++)
        for (int r = 0; r < R; r++) s[a][r] = legacy_hsum(acc[a][r]);
}

static inline __attribute__((always_inline)) void legacy_gemv_multi(
    legacy_kind t, gemv_multi_rows_fn rows, int64_t n, float *y, int64_t ldy, int n_act,
    int64_t n_rows, const void *w, size_t w_stride, const void *a, size_t a_stride) {
    legacy_pair pairs[EL_GEMV_MULTI_MAX][LEGACY_SLICE / 64];
    legacy_prep p[EL_GEMV_MULTI_MAX][LEGACY_SLICE / 256];
    for (int64_t k0 = 0; k0 < n; k0 += LEGACY_SLICE) {
        int64_t len = n - k0 < LEGACY_SLICE ? n - k0 : LEGACY_SLICE;
        legacy_multi m;
        for (int k = 0; k < n_act; k++) {
            m.sl[k] = (legacy_slice){(const char *)a + k * a_stride, k0 / EL_QK4_0,
                                     len / EL_QK4_0, pairs[k], p[k]};
            legacy_prepare(t, &m.sl[k]);
        }
        gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, k0 > 0, rows, &m);
    }
}

static inline __attribute__((always_inline)) void rows_q5_0(const void *ctx, const char *const row[4],
                                                            float s[4], int R) {
    legacy_rows(LEGACY_Q5_0, ctx, row, s, R);
}
static inline __attribute__((always_inline)) void rows_iq4_nl(const void *ctx,
                                                              const char *const row[4], float s[4],
                                                              int R) {
    legacy_rows(LEGACY_IQ4_NL, ctx, row, s, R);
}
static inline __attribute__((always_inline)) void rows_q4_1(const void *ctx, const char *const row[4],
                                                            float s[4], int R) {
    legacy_rows(LEGACY_Q4_1, ctx, row, s, R);
}
static inline __attribute__((always_inline)) void rows_q5_1(const void *ctx, const char *const row[4],
                                                            float s[4], int R) {
    legacy_rows(LEGACY_Q5_1, ctx, row, s, R);
}

static void gemv_q5_0(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    legacy_gemv(LEGACY_Q5_0, rows_q5_0, n, y, n_rows, w, w_stride, a);
}
static void gemv_iq4_nl(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                        const void *a) {
    legacy_gemv(LEGACY_IQ4_NL, rows_iq4_nl, n, y, n_rows, w, w_stride, a);
}
static void gemv_q4_1(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    legacy_gemv(LEGACY_Q4_1, rows_q4_1, n, y, n_rows, w, w_stride, a);
}
static void gemv_q5_1(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    legacy_gemv(LEGACY_Q5_1, rows_q5_1, n, y, n_rows, w, w_stride, a);
}

static inline __attribute__((always_inline)) void rows_q5_0_multi(const void *ctx,
                                                                  const char *const row[2],
                                                                  float s[][2], int R, int A) {
    legacy_rows_multi(LEGACY_Q5_0, ctx, row, s, R, A);
}
static void gemv_q5_0_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                           const void *w, size_t w_stride, const void *a, size_t a_stride) {
    legacy_gemv_multi(LEGACY_Q5_0, rows_q5_0_multi, n, y, ldy, n_act, n_rows, w, w_stride, a,
                      a_stride);
}
static inline __attribute__((always_inline)) void rows_iq4_nl_multi(const void *ctx,
                                                                  const char *const row[2],
                                                                  float s[][2], int R, int A) {
    legacy_rows_multi(LEGACY_IQ4_NL, ctx, row, s, R, A);
}
static void gemv_iq4_nl_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                           const void *w, size_t w_stride, const void *a, size_t a_stride) {
    legacy_gemv_multi(LEGACY_IQ4_NL, rows_iq4_nl_multi, n, y, ldy, n_act, n_rows, w, w_stride, a,
                      a_stride);
}
static inline __attribute__((always_inline)) void rows_q4_1_multi(const void *ctx,
                                                                  const char *const row[2],
                                                                  float s[][2], int R, int A) {
    legacy_rows_multi(LEGACY_Q4_1, ctx, row, s, R, A);
}
static void gemv_q4_1_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                           const void *w, size_t w_stride, const void *a, size_t a_stride) {
    legacy_gemv_multi(LEGACY_Q4_1, rows_q4_1_multi, n, y, ldy, n_act, n_rows, w, w_stride, a,
                      a_stride);
}
static inline __attribute__((always_inline)) void rows_q5_1_multi(const void *ctx,
                                                                  const char *const row[2],
                                                                  float s[][2], int R, int A) {
    legacy_rows_multi(LEGACY_Q5_1, ctx, row, s, R, A);
}
static void gemv_q5_1_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                           const void *w, size_t w_stride, const void *a, size_t a_stride) {
    legacy_gemv_multi(LEGACY_Q5_1, rows_q5_1_multi, n, y, ldy, n_act, n_rows, w, w_stride, a,
                      a_stride);
}

/* ---- IQ4_XS against Q8_K: a super-block's 8 sub-blocks are 4 pairs of 32 contiguous bytes of
 * codes, low nibbles and high nibbles each a register against activations prepared to match;
 * their sums fold into 8 lanes (the folded order), which take the offset term (prepared from
 * Q8_K's sums of 16), then the 6-bit scales - 32 as integers (|sum * scale| < 2^25, exact),
 * then one float multiply-add by d times the activation super-block's d. */
typedef struct xs_prep {
    legacy_pair pairs[4];
    __m256i comp; /* per sub-block, folded order: -IQ4_OFFSET * the sum of its quants */
    float d;
} xs_prep;

typedef struct xs_slice {
    const el_block_q8_k *act;
    int64_t first, blocks;
    const xs_prep *p;
} xs_slice;

/* The sub-block scales of an IQ4_XS block, ls - 32, as 8 int32 lanes in the folded order:
 * sub-block s's low 4 bits are bits 4s.. of the little-endian word scales_l, its top 2 bits
 * 2s.. of scales_h. */
static inline __m256i xs_scales(const el_block_iq4_xs *b) {
    uint32_t l;
    memcpy(&l, b->scales_l, sizeof l);
    __m256i lo = _mm256_srlv_epi32(_mm256_set1_epi32((int)l),
                                   _mm256_setr_epi32(0, 8, 16, 24, 4, 12, 20, 28));
    __m256i hi = _mm256_srlv_epi32(_mm256_set1_epi32(b->scales_h),
                                   _mm256_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14));
    __m256i ls = _mm256_or_si256(_mm256_and_si256(lo, _mm256_set1_epi32(0xF)),
                                 _mm256_slli_epi32(_mm256_and_si256(hi, _mm256_set1_epi32(3)), 4));
    return _mm256_sub_epi32(ls, _mm256_set1_epi32(32));
}

static inline void xs_prepare(const xs_slice *sl, xs_prep *p) {
    for (int64_t i = 0; i < sl->blocks; i++) {
        const el_block_q8_k *b = sl->act + sl->first + i;
        for (int k = 0; k < 4; k++)
            p[i].pairs[k] = legacy_pair_of((const char *)b->qs + 64 * k,
                                           (const char *)b->qs + 64 * k + 32);
        /* Q8_K's sums of 16 in pairs: sub-block j's sum, in sub-block order */
        __m256i sums = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)b->bsums),
                                         _mm256_set1_epi16(1));
        sums = _mm256_permutevar8x32_epi32(sums, _mm256_loadu_si256((const __m256i *)LEGACY_ORDER));
        p[i].comp = _mm256_mullo_epi32(sums, _mm256_set1_epi32(-IQ4_OFFSET));
        p[i].d = b->d;
    }
}

/* An IQ4_XS block of a row unpacked: its 4 pairs of levels, its sub-block scales and d. */
typedef struct xs_block_w {
    legacy_unpacked pair[4];
    __m256i scales;
    float d;
} xs_block_w;

static inline __attribute__((always_inline)) void xs_unpack(const el_block_iq4_xs *x,
                                                            __m256i table, xs_block_w *w) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    #pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        __m256i q = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * k));
        w->pair[k].lo = _mm256_shuffle_epi8(table, _mm256_and_si256(q, low4));
        w->pair[k].hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(q, 4), low4));
    }
    w->scales = xs_scales(x);
    w->d = _cvtsh_ss(x->d);
}

/* acc + an unpacked block against its prepared activations p. */
static inline __attribute__((always_inline)) __m256 xs_dot(__m256 acc, const xs_block_w *w,
                                                           const xs_prep *p) {
    __m256i v[4];
    #pragma GCC unroll 4
    for (int k = 0; k < 4; k++)
        v[k] = _mm256_add_epi32(legacy_dot_iq4(w->pair[k].lo, p->pairs[k].lo),
                                legacy_dot_iq4(w->pair[k].hi, p->pairs[k].hi));
    __m256i sum = legacy_fold4(v);
    if (IQ4_OFFSET != 0) sum = _mm256_add_epi32(sum, p->comp);
    sum = _mm256_mullo_epi32(sum, w->scales);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(w->d * p->d), acc);
}

static inline __attribute__((always_inline)) void rows_iq4_xs(const void *ctx,
                                                              const char *const row[4], float s[4],
                                                              int R) {
    const xs_slice *sl = ctx;
    const __m256i table = legacy_iq4_table();
    __m256 acc[4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < sl->blocks; i++) {
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            xs_block_w w;
            xs_unpack((const el_block_iq4_xs *)row[r] + sl->first + i, table, &w);
            acc[r] = xs_dot(acc[r], &w, &sl->p[i]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = legacy_hsum(acc[r]);
}

static void gemv_iq4_xs(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                        const void *a) {
    xs_prep p[LEGACY_SLICE / EL_QK_K];
    for (int64_t k0 = 0; k0 < n; k0 += LEGACY_SLICE) {
        int64_t len = n - k0 < LEGACY_SLICE ? n - k0 : LEGACY_SLICE;
        xs_slice sl = {a, k0 / EL_QK_K, len / EL_QK_K, p};
        xs_prepare(&sl, p);
        size_t act = (size_t)sl.blocks * sizeof *p;
        int R = gemv_company((size_t)sl.blocks * sizeof(el_block_iq4_xs), act);
        gemv_drive(n_rows, R, w, w_stride, y, k0 > 0, rows_iq4_xs, &sl);
    }
}

/* Against 2 or 3 activation rows: each block of a weight row unpacked once for all of them, the
 * one-row kernel's operations for each (the gemv's bits). */
typedef struct xs_multi {
    xs_slice sl[EL_GEMV_MULTI_MAX];
} xs_multi;

static inline __attribute__((always_inline)) void rows_iq4_xs_multi(const void *ctx,
                                                                    const char *const row[2],
                                                                    float s[][2], int R, int A) {
    const xs_multi *m = ctx;
    const __m256i table = legacy_iq4_table();
    __m256 acc[EL_GEMV_MULTI_MAX][2];
    for (int a = 0; a < A; a++)
        for (int r = 0; r < R; r++) acc[a][r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < m->sl[0].blocks; i++)
        for (int r = 0; r < R; r++) {
            xs_block_w w;
            xs_unpack((const el_block_iq4_xs *)row[r] + m->sl[0].first + i, table, &w);
            for (int a = 0; a < A; a++) acc[a][r] = xs_dot(acc[a][r], &w, &m->sl[a].p[i]);
        }
    for (int a = 0; a < A; a++)
        for (int r = 0; r < R; r++) s[a][r] = legacy_hsum(acc[a][r]);
}

static void gemv_iq4_xs_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                              const void *w, size_t w_stride, const void *a, size_t a_stride) {
    xs_prep p[EL_GEMV_MULTI_MAX][LEGACY_SLICE / EL_QK_K];
    for (int64_t k0 = 0; k0 < n; k0 += LEGACY_SLICE) {
        int64_t len = n - k0 < LEGACY_SLICE ? n - k0 : LEGACY_SLICE;
        xs_multi m;
        for (int k = 0; k < n_act; k++) {
            m.sl[k] = (xs_slice){(const el_block_q8_k *)((const char *)a + k * a_stride),
                                 k0 / EL_QK_K, len / EL_QK_K, p[k]};
            xs_prepare(&m.sl[k], p[k]);
        }
        gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, k0 > 0, rows_iq4_xs_multi, &m);
    }
}

#endif
