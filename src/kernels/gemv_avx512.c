/* gemv_avx512.c - AVX-512 VNNI gemvs (decode) for q8_0, q4_0 (and w4g32, the same bytes),
 * w4g64, w4g128, w8, w4 and w8a16, and multi-row gemvs (2-3 activation rows) for q8_0, q4_0,
 * w4g32, w4g64 and w4g128. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include <immintrin.h>
#include <string.h>

#include "kernels/avx512_simd.h"
#include "kernels/blocks.h"
#include "kernels/edge.h"
#include "kernels/gemv_drive.h"
#include "kernels/w8a16.h"

static int32_t hsum_epi32_256(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

/* ---- gemv (decode): many consecutive weight rows against one activation row, rows side by
 * side as gemv_drive (gemv_drive.h) picks them. What depends only on the activations is
 * prepared once per call into an aligned slice on the stack (GEMV_SLICE elements at a time);
 * each row keeps its sums in registers and reduces them once at its end.
 *
 * The block types work on 256-bit registers: on Zen 4 a 512-bit operation costs two 256-bit
 * pipe slots anyway, while 512-bit cross-lane permutes (which gathering blocks of 18 or 34
 * bytes from 64-byte loads needs) cost more than in-lane 256-bit shuffles. Weights are dotted
 * unsigned, the first operand of vpdpbusd: int4 nibbles as u = q + 8, q8_0 quants as
 * u = q + 128 (the top bit flipped); the extra 8 (or 128) times the activations comes off in
 * the integer sums, which start at minus that (prepared once per call). Each block's sums are
 * then scaled once in float by its activation scale times its weight scale. */

/* Activation elements prepared at a time (q4_0 22 KB, q8_0 26 KB of stack): longer rows are
 * read in pieces, one pass per slice, which the prefetcher follows badly (docs/kernels.md,
 * "Figures behind the kernels' comments"), so this covers the FFN widths of common models. */
enum { GEMV_SLICE = 16384 };

/* The low and high nibbles of each byte. */
static inline __m512i low_nibbles(__m512i q) { return _mm512_and_si512(q, _mm512_set1_epi8(0x0F)); }
static inline __m512i high_nibbles(__m512i q) {
    return _mm512_and_si512(_mm512_srli_epi16(q, 4), _mm512_set1_epi8(0x0F));
}

/* ---- q4_0: groups of 4 blocks (72 weight bytes, 128 elements) on 256-bit registers, read by
 * three 32-byte loads (bytes 0-31, 32-63 and 40-71 of the group). Two word permutes of them
 * give two registers of quant bytes whose 32-bit lanes belong to blocks [0 2 0 2 | 1 3 1 3],
 * each block's four 32-bit words spread over both (q4_0_lanes: the words each pair of
 * loads reaches). So the four vpdpbusd of a group (low and high nibbles of both) sum into
 * integer lanes of one block each, started at -8 times the activations each lane meets (the
 * q - 8 offset, prepared). The high nibbles are only masked, not shifted: their sums, 16 times
 * too large, go in a second register (which also halves the chain of dependent vpdpbusd) and
 * are shifted back exactly. Two groups fold into one register of 8 lanes, one per block (an
 * in-lane interleave of 64-bit halves and an add), so one conversion and one float multiply-add
 * per two groups scale the sums by activation scale times weight scale; the fp16 weight scales
 * come by a third word permute of each group's first two loads. On Zen 4 the vector pipe slots
 * per group set the speed, not the loads (unaligned, 72 bytes apart: no cost seen): this takes
 * fewer than four 16-byte loads with inserts and interleaves did, and 512-bit registers (two
 * slots per operation) were slower (docs/kernels.md). */
typedef struct q4_0_prep {
    __m256i lo[2], hi[2]; /* the activations against the low and high nibbles of each register */
    __m256i off;          /* per lane: -8 * the sum of its activations */
} q4_0_prep;

/* The 16 bytes at lo and at hi in the two 128-bit lanes. */
static inline __m256i load_16_16(const void *lo, const void *hi) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)lo)),
                                   _mm_loadu_si128((const __m128i *)hi), 1);
}

/* The 16-byte halves x[0] (one block's first 16 quants or activations, the same for the others)
 * of blocks [0 | 1] and [2 | 3] into the two registers of a group, lanes of blocks
 * [0 2 0 2 | 1 3 1 3]: by lane, the 32-bit words [0 0 1 1 0 0 3 1] of their blocks in the first
 * register and [2 2 3 3 2 2 1 3] in the second, what the loads of the weights reach (block 1's
 * words 1 and 3 swapped against an interleave of the halves). */
static inline void q4_0_lanes(__m256i x01, __m256i x23, __m256i r[2]) {
    __m256i lo = _mm256_unpacklo_epi32(x01, x23), hi = _mm256_unpackhi_epi32(x01, x23);
    r[0] = _mm256_blend_epi32(lo, hi, 0x40);
    r[1] = _mm256_blend_epi32(hi, lo, 0x40);
}

/* What the q4_0 rows of one slice share: its prepared groups and where it lies in the rows. The
 * activations are q8_0 blocks b, or for w4g32 weights (q4_0's bytes, dotted with int8
 * activations of one scale) an A8 row's quants a8 with its scale a8_d. */
typedef struct q4_0_slice {
    const q4_0_prep *p;
    const __m256 *d; /* per two groups: their activation scales */
    const el_block_q8_0 *b; /* the activation row as q8_0 blocks, or NULL and: */
    const int8_t *a8;       /* an A8 row's quants */
    float a8_d;             /* and its scale */
    int64_t first, groups, last; /* its first block, whole groups, and end block */
} q4_0_slice;

/* The 32 activation quants of block k, and their scale. */
static inline const int8_t *slice_qs(const q4_0_slice *sl, int64_t k) {
    return sl->b ? sl->b[k].qs : sl->a8 + k * EL_QK4_0;
}
static inline float slice_d(const q4_0_slice *sl, int64_t k) {
    return sl->b ? fp16(sl->b[k].d) : sl->a8_d;
}

/* The activations of the slice's groups into p, and into d per two groups the activation scales
 * of their 8 blocks in the folded lanes' order (zero for the missing second group of an odd
 * end). */
static void prepare_q4_0(const q4_0_slice *sl, q4_0_prep *p, __m256 *d) {
    const __m256i eight = _mm256_set1_epi8(8);
    const int64_t groups = sl->groups;
    for (int64_t g = 0; g < groups; g++) {
        const int8_t *c[4];
        for (int k = 0; k < 4; k++) c[k] = slice_qs(sl, sl->first + 4 * g + k);
        q4_0_lanes(load_16_16(c[0], c[1]), load_16_16(c[2], c[3]), p[g].lo);
        q4_0_lanes(load_16_16(c[0] + 16, c[1] + 16), load_16_16(c[2] + 16, c[3] + 16), p[g].hi);
        __m256i s = _mm256_setzero_si256();
        for (int k = 0; k < 2; k++) {
            s = _mm256_dpbusd_epi32(s, eight, p[g].lo[k]);
            s = _mm256_dpbusd_epi32(s, eight, p[g].hi[k]);
        }
        p[g].off = _mm256_sub_epi32(_mm256_setzero_si256(), s);
    }
    for (int64_t g = 0; g < groups; g += 2) {
        float h[8] = {0};
        for (int k = 0; k < (g + 1 < groups ? 8 : 4); k++)
            h[k % 2 * 4 + k / 2] = slice_d(sl, sl->first + 4 * g + k);
        d[g / 2] = _mm256_loadu_ps(h);
    }
}

/* Words of a group's weights gathered into the two registers in q4_0_lanes' order (block b's
 * quants start at word 1 + 9b): the first register from the group's first 64 bytes, the second
 * from its first 32 and bytes 40-71 (so block 1's word 3, bytes 32-35, goes in the first). */
static const int16_t q4_0_q_words[2][16] = {
    {1, 2, 19, 20, 3, 4, 21, 22, 10, 11, 28, 29, 16, 17, 30, 31},
    {5, 6, 19, 20, 7, 8, 21, 22, 14, 15, 28, 29, 12, 13, 30, 31}};

/* Words of a group's first 64 bytes holding the weight scales, for the first group of a pair
 * (lanes 0, 1, 4, 5) and the second (2, 3, 6, 7) of the folded order. */
static const int16_t q4_0_d_words[2][16] = {{0, 18, 0, 0, 9, 27}, {0, 0, 0, 18, 0, 0, 9, 27}};

typedef struct q4_0_consts {
    __m256i q_words[2], d_words[2];
} q4_0_consts;

/* A q4_0 group of a row unpacked: its quants in q4_0_lanes' order, low nibbles in lo and high
 * ones (16 times too large) in hi; into *dw the words of its scales picked by d_words. */
static inline void unpack_q4_0(const char *wb, const __m256i q_words[2], __m256i d_words,
                               __mmask16 dmask, __m256i lo[2], __m256i hi[2], __m256i *dw) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), high4 = _mm256_set1_epi8((char)0xF0);
    __m256i a = _mm256_loadu_si256((const __m256i *)wb);
    __m256i b = _mm256_loadu_si256((const __m256i *)(wb + 32));
    __m256i u[2] = {_mm256_permutex2var_epi16(a, q_words[0], b),
                    _mm256_permutex2var_epi16(a, q_words[1],
                                             _mm256_loadu_si256((const __m256i *)(wb + 40)))};
    *dw = _mm256_maskz_permutex2var_epi16(dmask, a, d_words, b);
    for (int k = 0; k < 2; k++) {
        lo[k] = _mm256_and_si256(u[k], low4);
        hi[k] = _mm256_and_si256(u[k], high4);
    }
}

/* The integer sums of an unpacked group against prepared activations, lanes as the
 * activations' [0 2 0 2 | 1 3 1 3]. */
static inline __m256i dot_q4_0(const __m256i lo[2], const __m256i hi[2], const q4_0_prep *p) {
    __m256i s = p->off, s16 = _mm256_setzero_si256();
    #pragma GCC unroll 2
    for (int k = 0; k < 2; k++) {
        s = _mm256_dpbusd_epi32(s, lo[k], p->lo[k]);
        s16 = _mm256_dpbusd_epi32(s16, hi[k], p->hi[k]);
    }
    return _mm256_add_epi32(s, _mm256_srai_epi32(s16, 4));
}

/* The integer sums of one q4_0 group of a row, and into *dw the words of its scales. */
static inline __m256i group_q4_0(const char *wb, const q4_0_prep *p, const __m256i q_words[2],
                                 __m256i d_words, __mmask16 dmask, __m256i *dw) {
    __m256i lo[2], hi[2];
    unpack_q4_0(wb, q_words, d_words, dmask, lo, hi, dw);
    return dot_q4_0(lo, hi, p);
}

/* acc + the float sums of two groups' integer sums s0 and s1 (folded: lanes [0 2 4 6 | 1 3 5 7]
 * of their 8 blocks) with the weight scales dw (fp16, in that order), activation scales d. */
static inline __m256 scale_q4_0(__m256 acc, __m256i s0, __m256i s1, __m256i dw, __m256 d) {
    __m256i t = _mm256_add_epi32(_mm256_unpacklo_epi64(s0, s1), _mm256_unpackhi_epi64(s0, s1));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(t),
                           _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(dw)), d), acc);
}

/* acc + the float sums of groups g and g + 1 of a row (wb the first's bytes, p its prepared
 * activations, d their scales). */
static inline __m256 pair_q4_0(__m256 acc, const char *wb, const q4_0_prep *p, const __m256 *d,
                               const q4_0_consts *c) {
    __m256i dw0, dw1;
    __m256i s0 = group_q4_0(wb, p, c->q_words, c->d_words[0], 0x33, &dw0);
    __m256i s1 = group_q4_0(wb + 72, p + 1, c->q_words, c->d_words[1], 0xCC, &dw1);
    return scale_q4_0(acc, s0, s1, _mm256_or_si256(dw0, dw1), *d);
}

/* The same for a last group alone (the second's lanes zero; nothing read past the group). */
static inline __m256 single_q4_0(__m256 acc, const char *wb, const q4_0_prep *p, const __m256 *d,
                                 const q4_0_consts *c) {
    __m256i dw;
    __m256i s0 = group_q4_0(wb, p, c->q_words, c->d_words[0], 0x33, &dw);
    return scale_q4_0(acc, s0, _mm256_setzero_si256(), dw, *d);
}

static inline q4_0_consts q4_0_consts_load(void) {
    return (q4_0_consts){{_mm256_loadu_si256((const __m256i *)q4_0_q_words[0]),
                          _mm256_loadu_si256((const __m256i *)q4_0_q_words[1])},
                         {_mm256_loadu_si256((const __m256i *)q4_0_d_words[0]),
                          _mm256_loadu_si256((const __m256i *)q4_0_d_words[1])}};
}

/* A row's dot over a slice from acc, its sums over the slice's first g groups (all its pairs):
 * the odd last group, the blocks past the whole groups, and the sum of the lanes. wb is the
 * row's bytes at the slice's first block. */
static inline float finish_q4_0(__m256 acc, const char *row, const char *wb, int64_t g,
                                const q4_0_slice *sl, const q4_0_consts *c) {
    const el_block_q4_0 *wr = (const el_block_q4_0 *)row;
    if (g < sl->groups)
        acc = single_q4_0(acc, wb + g * 4 * sizeof(el_block_q4_0), sl->p + g, sl->d + g / 2, c);
    for (int64_t k = sl->first + 4 * sl->groups; k < sl->last; k++) {
        __m256 d = _mm256_set1_ps(fp16(wr[k].d) * slice_d(sl, k));
        __m256i dot = q4_0_dot1(wr + k, slice_qs(sl, k));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot), acc);
    }
    return hsum256_ps(acc);
}

/* The dots of R rows over a slice, each row as it would be alone: two groups per step (rows far
 * apart in memory: separate streams sharing the activation loads), then the last blocks one by
 * one. */
static inline __attribute__((always_inline)) void rows_q4_0(const void *ctx,
                                                            const char *const row[4], float s[4],
                                                            int R) {
    const q4_0_slice *sl = ctx;
    const q4_0_prep *p = sl->p;
    const size_t group_bytes = 4 * sizeof(el_block_q4_0);
    const q4_0_consts c = q4_0_consts_load();
    const char *wb[4];
    __m256 acc[4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        wb[r] = row[r] + sl->first * sizeof(el_block_q4_0);
        acc[r] = _mm256_setzero_ps();
    }
    int64_t g = 0;
    for (; g + 2 <= sl->groups; g += 2) {
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            acc[r] = pair_q4_0(acc[r], wb[r] + g * group_bytes, p + g, sl->d + g / 2, &c);
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = finish_q4_0(acc[r], row[r], wb[r], g, sl, &c);
}

/* y = the rows' dots with q8_0 activations b or an A8 row's quants a8 (scale a8_d), one slice
 * of the activations at a time (summed over slices). */
static void gemv_q4_0_act(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                          const el_block_q8_0 *b, const int8_t *a8, float a8_d) {
    q4_0_prep p[GEMV_SLICE / 128];
    __m256 d[GEMV_SLICE / 256];
    for (int64_t k0 = 0; k0 < n; k0 += GEMV_SLICE) {
        int64_t len = n - k0 < GEMV_SLICE ? n - k0 : GEMV_SLICE;
        q4_0_slice sl = {p, d, b, a8, a8_d, k0 / EL_QK4_0, len / 128, (k0 + len) / EL_QK4_0};
        prepare_q4_0(&sl, p, d);
        size_t prepared = (size_t)sl.groups * sizeof *p + (size_t)(sl.groups + 1) / 2 * sizeof *d;
        int R = gemv_company((size_t)len / EL_QK4_0 * sizeof(el_block_q4_0), prepared);
        gemv_drive(n_rows, R, w, w_stride, y, k0 > 0, rows_q4_0, &sl);
    }
}

void el_gemv_q4_0_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a) {
    gemv_q4_0_act(n, y, n_rows, w, w_stride, a, NULL, 0.0f);
}

/* W4G32 rows have q4_0's bytes and value (d * (nibble - 8)); only the activations differ. */
void el_gemv_w4g32_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                          const void *a) {
    el_a8_header h;
    memcpy(&h, a, sizeof h);
    gemv_q4_0_act(n, y, n_rows, w, w_stride, NULL, (const int8_t *)a + sizeof h, h.d);
}

/* ---- q4_0 against two or three activation rows (concurrent sequences, el_gemv_multi_fn):
 * each pair of groups of a weight row is loaded and unpacked once and dotted with every row's
 * prepared activations, the operations of the one-row kernel in its order for each, so each
 * output has the bits gemv_q4_0 gives it. Two weight rows far apart go together. */
static inline __attribute__((always_inline)) void rows_q4_0_multi(const void *ctx,
                                                                  const char *const row[2],
                                                                  float s[][2], int R, int A) {
    const q4_0_slice *sl = ctx;
    const size_t group_bytes = 4 * sizeof(el_block_q4_0);
    const q4_0_consts c = q4_0_consts_load();
    const char *wb[2];
    __m256 acc[EL_GEMV_MULTI_MAX][2];
    #pragma GCC unroll 2
    for (int r = 0; r < R; r++) {
        wb[r] = row[r] + sl[0].first * sizeof(el_block_q4_0);
        for (int a = 0; a < A; a++) acc[a][r] = _mm256_setzero_ps();
    }
    int64_t g = 0;
    for (; g + 2 <= sl[0].groups; g += 2) {
        #pragma GCC unroll 2
        for (int r = 0; r < R; r++) {
            __m256i lo0[2], hi0[2], lo1[2], hi1[2], dw0, dw1;
            unpack_q4_0(wb[r] + g * group_bytes, c.q_words, c.d_words[0], 0x33, lo0, hi0, &dw0);
            unpack_q4_0(wb[r] + (g + 1) * group_bytes, c.q_words, c.d_words[1], 0xCC, lo1, hi1,
                        &dw1);
            __m256i dw = _mm256_or_si256(dw0, dw1);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++)
                acc[a][r] = scale_q4_0(acc[a][r], dot_q4_0(lo0, hi0, sl[a].p + g),
                                       dot_q4_0(lo1, hi1, sl[a].p + g + 1), dw, sl[a].d[g / 2]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int a = 0; a < A; a++) s[a][r] = finish_q4_0(acc[a][r], row[r], wb[r], g, &sl[a], &c);
}

/* y[a * ldy + o] = the dots of rows o < n_rows with activation rows a < n_act (2 or 3), q8_0
 * blocks or (a8) A8 rows, summed over slices; rows i and i + n_rows / 2 together, an odd last
 * one alone. */
static void gemv_q4_0_multi_act(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                const void *w, size_t w_stride, const void *a, size_t a_stride,
                                bool a8) {
    /* 67 KB of stack: the one-row kernel's slices (the same bits need the same slicing) */
    q4_0_prep p[EL_GEMV_MULTI_MAX][GEMV_SLICE / 128];
    __m256 d[EL_GEMV_MULTI_MAX][GEMV_SLICE / 256];
    for (int64_t k0 = 0; k0 < n; k0 += GEMV_SLICE) {
        int64_t len = n - k0 < GEMV_SLICE ? n - k0 : GEMV_SLICE;
        q4_0_slice sl[EL_GEMV_MULTI_MAX];
        for (int k = 0; k < n_act; k++) {
            const char *ak = (const char *)a + k * a_stride;
            el_a8_header h = {0};
            if (a8) memcpy(&h, ak, sizeof h);
            const el_block_q8_0 *b = a8 ? NULL : (const el_block_q8_0 *)ak;
            const int8_t *q = a8 ? (const int8_t *)ak + sizeof h : NULL;
            sl[k] = (q4_0_slice){p[k], d[k], b, q, h.d, k0 / EL_QK4_0, len / 128,
                                 (k0 + len) / EL_QK4_0};
            prepare_q4_0(&sl[k], p[k], d[k]);
        }
        gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, k0 > 0, rows_q4_0_multi, sl);
    }
}

void el_gemv_q4_0_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_q4_0_multi_act(n, y, ldy, n_act, n_rows, w, w_stride, a, a_stride, false);
}

void el_gemv_w4g32_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_q4_0_multi_act(n, y, ldy, n_act, n_rows, w, w_stride, a, a_stride, true);
}

/* ---- q8_0: pairs of blocks (68 bytes, 64 elements) on 256-bit registers. The 32 quants of
 * each block are one load; an in-lane interleave of their 32-bit words (unpacklo/hi) gives two
 * registers whose lanes belong to blocks [0 1 0 1 | 0 1 0 1]. Weights are dotted as u = q + 128
 * (the top bit flipped), the unsigned operand of vpdpbusd, in one integer sum per pair started
 * at -128 times the activations each lane meets (prepared); one float multiply-add per pair
 * scales it by activation scale times weight scale, the two fp16 weight scales coming by one
 * word permute of the pair's first 64 bytes. */
typedef struct q8_0_prep {
    __m256i y[2]; /* the activations in the lanes' order */
    __m256i off;  /* per lane: -128 * the sum of its activations */
} q8_0_prep; /* the two activation scales of a pair apart, as 8 bytes loaded by a broadcast */

/* Words of the pair's first 64 bytes holding the weight scales in the lanes' block order
 * (block 0's scale is word 0, block 1's word 17); the upper 8 entries are unused. */
static const int16_t q8_0_d_words[16] = {0, 17, 0, 17, 0, 17, 0, 17};

static void prepare_q8_0(const el_block_q8_0 *b, int64_t pairs, q8_0_prep *p, double *da) {
    const __m256i top = _mm256_set1_epi8((char)0x80);
    for (int64_t g = 0; g < pairs; g++, b += 2) {
        __m256i y0 = _mm256_loadu_si256((const __m256i *)b[0].qs);
        __m256i y1 = _mm256_loadu_si256((const __m256i *)b[1].qs);
        p[g].y[0] = _mm256_unpacklo_epi32(y0, y1);
        p[g].y[1] = _mm256_unpackhi_epi32(y0, y1);
        __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), top, p[g].y[0]);
        p[g].off = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_dpbusd_epi32(s, top, p[g].y[1]));
        __m128 d = _mm_cvtph_ps(_mm_setr_epi16((short)b[0].d, (short)b[1].d, 0, 0, 0, 0, 0, 0));
        _mm_storel_pd(da + g, _mm_castps_pd(d)); /* d0 d1 as the 8 bytes of one double */
    }
}

/* acc + the float sums (8 lanes) of one q8_0 pair of a row. */
/* A q8_0 pair of a row unpacked: its quants as unsigned bytes in the lanes' order, and its two
 * weight scales as floats. */
static inline void unpack_q8_0(const char *wb, __m256i d_words, __m256i u[2], __m256 *dw) {
    const __m256i top = _mm256_set1_epi8((char)0x80);
    __m256i q0 = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(wb + 2)), top);
    __m256i q1 = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(wb + 36)), top);
    u[0] = _mm256_unpacklo_epi32(q0, q1);
    u[1] = _mm256_unpackhi_epi32(q0, q1);
    __m256i dwi = _mm256_permutex2var_epi16(_mm256_loadu_si256((const __m256i *)wb), d_words,
                                            _mm256_loadu_si256((const __m256i *)(wb + 32)));
    *dw = _mm256_cvtph_ps(_mm256_castsi256_si128(dwi));
}

/* acc + the float sums of an unpacked pair against prepared activations. */
static inline __m256 dot_q8_0(__m256 acc, const __m256i u[2], __m256 dw, const q8_0_prep *p,
                              const double *da) {
    __m256i s = _mm256_dpbusd_epi32(p->off, u[0], p->y[0]);
    s = _mm256_dpbusd_epi32(s, u[1], p->y[1]);
    __m256 d = _mm256_mul_ps(dw, _mm256_castpd_ps(_mm256_broadcast_sd(da)));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), d, acc);
}

/* acc + the float sums (8 lanes) of one q8_0 pair of a row. */
static inline __m256 pair_q8_0(__m256 acc, const char *wb, const q8_0_prep *p, const double *da,
                               __m256i d_words) {
    __m256i u[2];
    __m256 dw;
    unpack_q8_0(wb, d_words, u, &dw);
    return dot_q8_0(acc, u, dw, p, da);
}

/* As q4_0_slice, for q8_0 pairs. */
typedef struct q8_0_slice {
    const q8_0_prep *p;
    const double *da; /* per pair: the two activation scales as floats */
    const el_block_q8_0 *b;
    int64_t first, pairs, last;
} q8_0_slice;

/* A row's dot over a slice from its two accumulators (even and odd pairs, over the first g
 * pairs): an odd last pair, the sum of the lanes, an odd last block. */
static inline float finish_q8_0(__m256 acc0, __m256 acc1, const char *row, const char *wb,
                                int64_t g, const q8_0_slice *sl, __m256i d_words) {
    const size_t pair_bytes = 2 * sizeof(el_block_q8_0);
    if (g < sl->pairs) acc0 = pair_q8_0(acc0, wb + g * pair_bytes, sl->p + g, sl->da + g, d_words);
    float s = hsum256_ps(_mm256_add_ps(acc0, acc1));
    const el_block_q8_0 *wr = (const el_block_q8_0 *)row;
    if (sl->first + 2 * sl->pairs < sl->last) { /* an odd last block */
        int64_t k = sl->last - 1;
        s += fp16(wr[k].d) * fp16(sl->b[k].d) * (float)hsum_epi32_256(q8_0_dot1(wr + k, sl->b + k));
    }
    return s;
}

/* As rows_q4_0, for q8_0 pairs; an odd last block of each row goes alone. */
static inline __attribute__((always_inline)) void rows_q8_0(const void *ctx,
                                                            const char *const row[4], float s[4],
                                                            int R) {
    const q8_0_slice *sl = ctx;
    const q8_0_prep *p = sl->p;
    const size_t pair_bytes = 2 * sizeof(el_block_q8_0);
    const __m256i d_words = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)q8_0_d_words));
    const char *wb[4];
    __m256 acc[4][2];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        wb[r] = row[r] + sl->first * sizeof(el_block_q8_0);
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    }
    int64_t g = 0;
    for (; g + 2 <= sl->pairs; g += 2) {
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            acc[r][0] = pair_q8_0(acc[r][0], wb[r] + g * pair_bytes, p + g, sl->da + g, d_words);
            acc[r][1] = pair_q8_0(acc[r][1], wb[r] + (g + 1) * pair_bytes, p + g + 1,
                                  sl->da + g + 1, d_words);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        s[r] = finish_q8_0(acc[r][0], acc[r][1], row[r], wb[r], g, sl, d_words);
}

/* As gemv_q4_0. */
void el_gemv_q8_0_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a) {
    q8_0_prep p[GEMV_SLICE / 64];
    double da[GEMV_SLICE / 64];
    for (int64_t k0 = 0; k0 < n; k0 += GEMV_SLICE) {
        int64_t len = n - k0 < GEMV_SLICE ? n - k0 : GEMV_SLICE;
        q8_0_slice sl = {p, da, a, k0 / EL_QK8_0, len / 64, (k0 + len) / EL_QK8_0};
        prepare_q8_0(sl.b + sl.first, sl.pairs, p, da);
        int R = gemv_company((size_t)len / EL_QK8_0 * sizeof(el_block_q8_0),
                             (size_t)sl.pairs * (sizeof *p + sizeof *da));
        gemv_drive(n_rows, R, w, w_stride, y, k0 > 0, rows_q8_0, &sl);
    }
}

/* q8_0 against two or three activation rows, as gemv_q4_0_multi: each pair of a weight row is
 * loaded and unpacked once for every activation row, each in rows_q8_0's order. */
static inline __attribute__((always_inline)) void rows_q8_0_multi(const void *ctx,
                                                                  const char *const row[2],
                                                                  float s[][2], int R, int A) {
    const q8_0_slice *sl = ctx;
    const size_t pair_bytes = 2 * sizeof(el_block_q8_0);
    const __m256i d_words = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)q8_0_d_words));
    const char *wb[2];
    __m256 acc[EL_GEMV_MULTI_MAX][2][2];
    #pragma GCC unroll 2
    for (int r = 0; r < R; r++) {
        wb[r] = row[r] + sl[0].first * sizeof(el_block_q8_0);
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) acc[a][r][0] = acc[a][r][1] = _mm256_setzero_ps();
    }
    int64_t g = 0;
    for (; g + 2 <= sl[0].pairs; g += 2) {
        #pragma GCC unroll 2
        for (int r = 0; r < R; r++) {
            __m256i u0[2], u1[2];
            __m256 dw0, dw1;
            unpack_q8_0(wb[r] + g * pair_bytes, d_words, u0, &dw0);
            unpack_q8_0(wb[r] + (g + 1) * pair_bytes, d_words, u1, &dw1);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++) {
                acc[a][r][0] = dot_q8_0(acc[a][r][0], u0, dw0, sl[a].p + g, sl[a].da + g);
                acc[a][r][1] = dot_q8_0(acc[a][r][1], u1, dw1, sl[a].p + g + 1, sl[a].da + g + 1);
            }
        }
    }
    for (int r = 0; r < R; r++)
        for (int a = 0; a < A; a++)
            s[a][r] = finish_q8_0(acc[a][r][0], acc[a][r][1], row[r], wb[r], g, &sl[a], d_words);
}

void el_gemv_q8_0_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                               const void *w, size_t w_stride, const void *a, size_t a_stride) {
    /* 80 KB of stack: the one-row kernel's slices (the same bits need the same slicing) */
    q8_0_prep p[EL_GEMV_MULTI_MAX][GEMV_SLICE / 64];
    double da[EL_GEMV_MULTI_MAX][GEMV_SLICE / 64];
    for (int64_t k0 = 0; k0 < n; k0 += GEMV_SLICE) {
        int64_t len = n - k0 < GEMV_SLICE ? n - k0 : GEMV_SLICE;
        q8_0_slice sl[EL_GEMV_MULTI_MAX];
        for (int k = 0; k < n_act; k++) {
            const el_block_q8_0 *b = (const el_block_q8_0 *)((const char *)a + k * a_stride);
            sl[k] = (q8_0_slice){p[k], da[k], b, k0 / EL_QK8_0, len / 64, (k0 + len) / EL_QK8_0};
            prepare_q8_0(sl[k].b + sl[k].first, sl[k].pairs, p[k], da[k]);
        }
        gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, k0 > 0, rows_q8_0_multi, sl);
    }
}

/* The first min(len, 64) bytes at p, the rest zero (masked: nothing past them is read). */
static inline __m512i load_upto64(const void *p, int64_t len) {
    if (len >= 64) return _mm512_loadu_si512(p);
    return _mm512_maskz_loadu_epi8(len > 0 ? (__mmask64)((1ull << len) - 1) : 0, p);
}

/* What W4 or W8 rows share: the A8 activation row. */
typedef struct wrow_act {
    const int8_t *act;
    el_a8_header h;
    int64_t n;
} wrow_act;

/* W4 and W8 rows against an A8 row: int32 sums over the whole row, one float multiply at the
 * end; the activations are used as they are (no scales to gather). Steps of 128 elements: for
 * W4 4 chunks (64 bytes), 128-bit lane c of the weights holding chunk c against the activations
 * split into each chunk's 16 low and 16 high elements; for W8 two registers. The last step's
 * elements are loaded masked (zeros add nothing; masked-off bytes of W8 count as 0 ^ 0x80 =
 * 128, against zero activations: nothing). R rows share the activation loads; integer sums are
 * exact, so each row's result is the same in any company. */
static inline __attribute__((always_inline)) void step_wrow(__m512i acc[4][2],
                                                            const char *const q[4], int R,
                                                            const int8_t *act, int64_t i,
                                                            int64_t n, bool w4) {
    const __m512i top = _mm512_set1_epi8((char)0x80);
    __m512i y0 = load_upto64(act + i, n - i), y1 = load_upto64(act + i + 64, n - i - 64);
    if (w4) {
        __m512i lo = _mm512_shuffle_i64x2(y0, y1, _MM_SHUFFLE(2, 0, 2, 0));
        __m512i hi = _mm512_shuffle_i64x2(y0, y1, _MM_SHUFFLE(3, 1, 3, 1));
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m512i qv = load_upto64(q[r] + i / 2, (n - i) / 2);
            __asm__("" : "+v"(qv)); /* one load for both nibbles, not one folded into each use */
            acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], low_nibbles(qv), lo);
            acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], high_nibbles(qv), hi);
        }
    } else {
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m512i q0 = _mm512_xor_si512(load_upto64(q[r] + i, n - i), top);
            __m512i q1 = _mm512_xor_si512(load_upto64(q[r] + i + 64, n - i - 64), top);
            acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], q0, y0);
            acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], q1, y1);
        }
    }
}

static inline __attribute__((always_inline)) void rows_wrow(const wrow_act *wa,
                                                            const char *const row[4], float s[4],
                                                            int R, bool w4) {
    const int64_t n = wa->n;
    const char *q[4];
    __m512i acc[4][2];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        q[r] = row[r] + sizeof(float);
        acc[r][0] = acc[r][1] = _mm512_setzero_si512();
    }
    int64_t i = 0;
    for (; i + 128 <= n; i += 128) step_wrow(acc, q, R, wa->act, i, i + 128, w4); /* unmasked */
    if (i < n) step_wrow(acc, q, R, wa->act, i, n, w4);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        int32_t dot = _mm512_reduce_add_epi32(_mm512_add_epi32(acc[r][0], acc[r][1]));
        s[r] = el_edge_row_scale(row[r]) * wa->h.d * (float)(dot - (w4 ? 8 : 128) * wa->h.sum);
    }
}

static inline __attribute__((always_inline)) void rows_w4(const void *ctx, const char *const row[4],
                                                          float s[4], int R) {
    rows_wrow(ctx, row, s, R, true);
}

static inline __attribute__((always_inline)) void rows_w8(const void *ctx, const char *const row[4],
                                                          float s[4], int R) {
    rows_wrow(ctx, row, s, R, false);
}

static wrow_act wrow_activations(int64_t n, const void *a) {
    wrow_act wa = {.act = (const int8_t *)a + sizeof(el_a8_header), .n = n};
    memcpy(&wa.h, a, sizeof wa.h);
    return wa;
}

void el_gemv_w4_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a) {
    wrow_act wa = wrow_activations(n, a);
    gemv_drive(n_rows, gemv_company(w_stride, (size_t)n), w, w_stride, y, false, rows_w4, &wa);
}

void el_gemv_w8_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a) {
    wrow_act wa = wrow_activations(n, a);
    gemv_drive(n_rows, gemv_company(w_stride, (size_t)n), w, w_stride, y, false, rows_w8, &wa);
}

void el_gemv_w8a16_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                          const void *a) {
    el_a16_view v = el_a16_view_of(a, n);
    gemv_drive(n_rows, gemv_company(w_stride, (size_t)n * 2), w, w_stride, y, false, rows_w8a16,
               &v);
}

/* ---- W4G64 and W4G128 (int4 weights, an fp16 scale per group of G) against one A8 row.
 * (W4G32 has Q4_0's bytes and goes through Q4_0's gemv above, which that layout suits better:
 * its two permutes gather what this would take four loads for.)
 *
 * Without them a W4A8 model quantized per group decoded through the AVX2 dot products, at half
 * the bound its memory allows (docs/kernels.md, "W4G gemvs"). Here every 128 elements of a
 * row are one step for both G: their 64 quant bytes gathered into one 512-bit register (one
 * load for G=128; G=64 merges 2 loads under byte masks, the scale between its blocks skipped by the load
 * addresses, not by a shuffle), each 128-bit lane one chunk of 32 elements. The int8
 * activations are prepared once per slice for every row: the elements each chunk's low and
 * high nibbles meet, and per 32-bit lane -8 times the activations it meets (so the sums start
 * at the q - 8 offset). Two vpdpbusd give 4 integer lanes per chunk; two steps' lanes fold
 * in-lane into one register (2 lanes per chunk of each), which one conversion and one float
 * multiply-add scale by each lane's group scale (spread over the lanes by a word permute, or
 * for G=128 two broadcasts: each load counted); the activations' row scale multiplies once at
 * the end. R rows far apart share the activation loads (gemv_drive.h); each row's sums are the
 * same code in any company. For 2-3 activation rows (concurrent sequences) each step's quants
 * and scales are unpacked once for all of them, each output with the one-row kernel's bits.
 * (Its speed against Q4_0's gemv and the dot products it replaces: docs/kernels.md.) */

/* Elements prepared at a time (192 bytes per 128: 24 KB of stack); longer rows go in slices. */
enum { SLICE = 16384, STEP = 128 };

typedef struct w4g_prep {
    __m512i lo, hi; /* the activations against each chunk's low and high nibbles */
    __m512i off;    /* per lane: -8 * the sum of its activations */
} w4g_prep;

/* What the rows of one slice share. */
typedef struct w4g_slice {
    const w4g_prep *p;
    int64_t steps;     /* whole steps of 128 elements */
    int last_blocks;   /* blocks of a last short step (G = 64), or 0 */
    size_t first;      /* byte offset of the slice in a row */
    float d;           /* the activations' row scale */
    __m512i scale_idx; /* words of a step's first 64 bytes holding each lane's scale */
    __m512i pair_idx;  /* the same for the folded lanes of two steps (step_pair) */
} w4g_slice;

/* A mask of the first n (0..64) bytes of a register. */
static inline __mmask64 first_bytes(int64_t n) {
    return n >= 64 ? ~0ull : n <= 0 ? 0 : (1ull << n) - 1;
}

/* The activations of the slice's steps (the last may be short: its missing elements zero):
 * chunk c of a step (elements 32c..32c+31) in 128-bit lane c, its 16 low-nibble elements in lo
 * and its 16 high-nibble ones in hi. */
static void prepare(const int8_t *act, int64_t len, w4g_prep *p) {
    const __m512i eight = _mm512_set1_epi8(8);
    for (int64_t s = 0; s * STEP < len; s++) {
        const int8_t *a = act + s * STEP;
        int64_t left = len - s * STEP;
        __m512i y0 = _mm512_maskz_loadu_epi8(first_bytes(left), a);
        __m512i y1 = _mm512_maskz_loadu_epi8(first_bytes(left - 64), a + 64);
        p[s].lo = _mm512_shuffle_i64x2(y0, y1, _MM_SHUFFLE(2, 0, 2, 0));
        p[s].hi = _mm512_shuffle_i64x2(y0, y1, _MM_SHUFFLE(3, 1, 3, 1));
        __m512i sum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), eight, p[s].lo);
        sum = _mm512_dpbusd_epi32(sum, eight, p[s].hi);
        p[s].off = _mm512_sub_epi32(_mm512_setzero_si512(), sum);
    }
}

/* The quant bytes of a step of `blocks` blocks (1, or whole steps: 128 / G) starting at b,
 * blocks 2 + G/2 bytes apart: their chunks of 16 bytes in order. A G=64 step's second block is
 * loaded from 2 bytes further so that its chunks land right after the first's; masked-off
 * bytes are not read. */
static inline __m512i step_quants(const char *b, int group, int blocks) {
    if (group == 128) return _mm512_loadu_si512(b + 2);
    __m512i q = _mm512_maskz_loadu_epi8(0xFFFFFFFFull, b + 2);
    return blocks == 2 ? _mm512_mask_loadu_epi8(q, 0xFFFFFFFF00000000ull, b + 4) : q;
}

/* Per 32-bit lane, the scale of its group, from the step's first `bytes` bytes (for G=64 the
 * words idx picks, 0 and 17; G=128 has one, broadcast). The lanes of a block missing from a
 * short step get zero. */
static inline __m512 step_scales(const char *b, int group, __m512i idx, int64_t bytes) {
    if (group == 128) {
        uint16_t d;
        memcpy(&d, b, sizeof d);
        return _mm512_cvtph_ps(_mm256_set1_epi16((short)d));
    }
    __m512i words = _mm512_permutexvar_epi16(idx, _mm512_maskz_loadu_epi8(first_bytes(bytes), b));
    return _mm512_cvtph_ps(_mm512_castsi512_si256(words));
}

/* A step's quants (step_quants) as low and high nibbles. */
typedef struct w4g_nibbles {
    __m512i lo, hi;
} w4g_nibbles;

static inline w4g_nibbles step_nibbles(const char *b, int group, int blocks) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    __m512i q = step_quants(b, group, blocks);
    __asm__("" : "+v"(q)); /* one load for both nibbles, not one folded into each use */
    return (w4g_nibbles){_mm512_and_si512(q, low4),
                         _mm512_and_si512(_mm512_srli_epi16(q, 4), low4)};
}

/* The integer sums of a step's nibbles against prepared activations p: 4 lanes per chunk,
 * 128-bit lane c holding chunk c. */
static inline __m512i nibble_sums(w4g_nibbles u, const w4g_prep *p) {
    return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(p->off, u.lo, p->lo), u.hi, p->hi);
}

/* acc + the float sums of one step (the odd last whole one, or a short one): its sums u
 * against p, its scales d (step_scales). */
static inline __m512 step(__m512 acc, w4g_nibbles u, const w4g_prep *p, __m512 d) {
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(nibble_sums(u, p)), d, acc);
}

/* The scales of the folded lanes of two whole steps at b and b + step_bytes (step_pair):
 * pair_idx picks each lane's word from the two steps' first 64 bytes; G=128's one scale a step
 * comes by two broadcasts blended (fewer loads). */
static inline __m512 pair_scales(const char *b, size_t step_bytes, int group, __m512i pair_idx) {
    __m256i words;
    if (group == 128) {
        uint16_t d0, d1;
        memcpy(&d0, b, sizeof d0);
        memcpy(&d1, b + step_bytes, sizeof d1);
        words = _mm256_mask_blend_epi16(0xCCCC, _mm256_set1_epi16((short)d0),
                                        _mm256_set1_epi16((short)d1));
    } else {
        words = _mm512_castsi512_si256(_mm512_permutex2var_epi16(
            _mm512_loadu_si512(b), pair_idx, _mm512_loadu_si512(b + step_bytes)));
    }
    return _mm512_cvtph_ps(words);
}

/* acc + the float sums of two whole steps, nibbles u0 and u1 against p[0] and p[1]: their
 * integer sums folded first (in-lane: per 128-bit lane, two lanes of each step's chunk), so one
 * conversion and one multiply-add by the scales d (pair_scales) serve both. */
static inline __m512 step_pair(__m512 acc, w4g_nibbles u0, w4g_nibbles u1, const w4g_prep *p,
                               __m512 d) {
    __m512i s0 = nibble_sums(u0, p), s1 = nibble_sums(u1, p + 1);
    __m512i t = _mm512_add_epi32(_mm512_unpacklo_epi64(s0, s1), _mm512_unpackhi_epi64(s0, s1));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), d, acc);
}

/* acc[a][r][chain] + two whole steps of weight row r at bk (steps k and k + 1), for each of
 * the A activation rows: the quants and scales loaded and unpacked once. */
static inline __attribute__((always_inline)) void pair_all(__m512 acc[][4][2], int r, int chain,
                                                           const char *bk, size_t step_bytes,
                                                           const w4g_slice *sl, int64_t k, int A,
                                                           int group) {
    w4g_nibbles u0 = step_nibbles(bk, group, STEP / group);
    w4g_nibbles u1 = step_nibbles(bk + step_bytes, group, STEP / group);
    __m512 d = pair_scales(bk, step_bytes, group, sl[0].pair_idx);
    #pragma GCC unroll 3
    for (int a = 0; a < A; a++)
        acc[a][r][chain] = step_pair(acc[a][r][chain], u0, u1, sl[a].p + k, d);
}

/* acc[a][r][chain] + one step of `blocks` blocks of weight row r at bk (step k), for each of
 * the A activation rows. */
static inline __attribute__((always_inline)) void step_all(__m512 acc[][4][2], int r, int chain,
                                                           const char *bk, int blocks,
                                                           const w4g_slice *sl, int64_t k, int A,
                                                           int group) {
    w4g_nibbles u = step_nibbles(bk, group, blocks);
    __m512 d = step_scales(bk, group, sl[0].scale_idx, (int64_t)blocks * (2 + group / 2));
    #pragma GCC unroll 3
    for (int a = 0; a < A; a++) acc[a][r][chain] = step(acc[a][r][chain], u, sl[a].p + k, d);
}

/* The dots of R weight rows (R <= 2) with A activation rows (A <= 3) over a slice, sl[a] the
 * slice of activation row a, each scaled by its row scale: every step's quants and scales are
 * loaded and unpacked once per weight row for all A. The one-row gemv is A = 1 (R <= 4): each
 * output has the same arithmetic, so the same bits, alone or in company. Steps go in pairs, two
 * chains of multiply-adds per output; inlined with group, R and A constant. */
static inline __attribute__((always_inline)) void rows_w4g(const w4g_slice *sl,
                                                           const char *const row[], float s[][4],
                                                           int R, int A, int group) {
    const int per_step = STEP / group;
    const size_t step_bytes = (size_t)per_step * (2 + (size_t)group / 2);
    const char *b[4];
    __m512 acc[EL_GEMV_MULTI_MAX][4][2];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        b[r] = row[r] + sl[0].first;
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) acc[a][r][0] = acc[a][r][1] = _mm512_setzero_ps();
    }
    /* pairs of steps alternate between the chains: two pairs an iteration (a chain index
     * computed from k kept the accumulators in memory) */
    int64_t k = 0;
    for (; k + 4 <= sl[0].steps; k += 4) {
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const char *bk = b[r] + k * step_bytes;
            #pragma GCC unroll 2
            for (int chain = 0; chain < 2; chain++)
                pair_all(acc, r, chain, bk + 2 * chain * step_bytes, step_bytes, sl, k + 2 * chain,
                         A, group);
        }
    }
    if (k + 2 <= sl[0].steps) {
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            pair_all(acc, r, 0, b[r] + k * step_bytes, step_bytes, sl, k, A, group);
        k += 2;
    }
    if (k < sl[0].steps) { /* the odd last whole step, on chain 0 */
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            step_all(acc, r, 0, b[r] + k * step_bytes, per_step, sl, k, A, group);
        k++;
    }
    if (sl[0].last_blocks > 0) { /* a short one, on chain 1 */
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            step_all(acc, r, 1, b[r] + k * step_bytes, sl[0].last_blocks, sl, k, A, group);
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++)
            s[a][r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[a][r][0], acc[a][r][1])) * sl[a].d;
}

/* gemv_drive's rows: R weight rows against one activation row. */
static inline __attribute__((always_inline)) void rows_one(const void *ctx,
                                                           const char *const row[4], float s[4],
                                                           int R, int group) {
    float t[1][4];
    rows_w4g(ctx, row, t, R, 1, group);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = t[0][r];
}

/* gemv_multi_drive's rows: R (1 or 2) weight rows against A (2 or 3) activation rows. */
static inline __attribute__((always_inline)) void rows_multi(const void *ctx,
                                                             const char *const row[2],
                                                             float s[][2], int R, int A,
                                                             int group) {
    float t[EL_GEMV_MULTI_MAX][4];
    rows_w4g(ctx, row, t, R, A, group);
    for (int a = 0; a < A; a++)
        for (int r = 0; r < R; r++) s[a][r] = t[a][r];
}

static inline __attribute__((always_inline)) void rows_w4g64(const void *ctx,
                                                             const char *const row[4], float s[4],
                                                             int R) {
    rows_one(ctx, row, s, R, 64);
}

static inline __attribute__((always_inline)) void rows_w4g128(const void *ctx,
                                                              const char *const row[4],
                                                              float s[4], int R) {
    rows_one(ctx, row, s, R, 128);
}

static inline __attribute__((always_inline)) void rows_w4g64_multi(const void *ctx,
                                                                   const char *const row[2],
                                                                   float s[][2], int R, int A) {
    rows_multi(ctx, row, s, R, A, 64);
}

static inline __attribute__((always_inline)) void rows_w4g128_multi(const void *ctx,
                                                                    const char *const row[2],
                                                                    float s[][2], int R, int A) {
    rows_multi(ctx, row, s, R, A, 128);
}

/* Lane l's scale word: lane l is in chunk l / 4, of block l / 4 / (G / 32), whose scale is the
 * word at byte (2 + G / 2) * block. */
static __m512i scale_words(int group) {
    int16_t w[32] = {0};
    for (int l = 0; l < 16; l++) w[l] = (int16_t)((2 + group / 2) / 2 * (l / 4 / (group / 32)));
    return _mm512_loadu_si512(w);
}

/* For step_pair: folded lane l holds chunk l / 4 of the first step (l % 4 < 2) or of the
 * second, whose words come after the first's 32 in the two-register permute. */
static __m512i pair_scale_words(int group) {
    int16_t w[32] = {0};
    for (int l = 0; l < 16; l++)
        w[l] = (int16_t)((l % 4 < 2 ? 0 : 32) + (2 + group / 2) / 2 * (l / 4 / (group / 32)));
    return _mm512_loadu_si512(w);
}

/* The slice of A8 row a from element k0 (len elements), its activations prepared into p. */
static w4g_slice slice_of(const void *a, int64_t k0, int64_t len, int group, w4g_prep *p) {
    el_a8_header h;
    memcpy(&h, a, sizeof h);
    prepare((const int8_t *)a + sizeof h + k0, len, p);
    return (w4g_slice){p, len / STEP, (int)(len % STEP / group),
                       (size_t)(k0 / group) * (2 + (size_t)group / 2), h.d, scale_words(group),
                       pair_scale_words(group)};
}

static inline __attribute__((always_inline)) void gemv_w4g(int64_t n, float *y, int64_t n_rows,
                                                           const void *w, size_t w_stride,
                                                           const void *a, int group,
                                                           gemv_rows_fn rows) {
    w4g_prep p[SLICE / STEP];
    for (int64_t k0 = 0; k0 < n; k0 += SLICE) {
        int64_t len = n - k0 < SLICE ? n - k0 : SLICE;
        w4g_slice sl = slice_of(a, k0, len, group, p);
        size_t prepared = (size_t)(len + STEP - 1) / STEP * sizeof *p;
        int R = gemv_company((size_t)(len / group) * (2 + (size_t)group / 2), prepared);
        gemv_drive(n_rows, R, w, w_stride, y, k0 > 0, rows, &sl);
    }
}

/* n_act (2 or 3) activation rows a_stride bytes apart: the one-row gemv's slices for each (the
 * same bits need the same slicing: 72 KB of stack), weight rows two at a time. */
static inline __attribute__((always_inline)) void gemv_w4g_multi(
    int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows, const void *w, size_t w_stride,
    const void *a, size_t a_stride, int group, gemv_multi_rows_fn rows) {
    w4g_prep p[EL_GEMV_MULTI_MAX][SLICE / STEP];
    for (int64_t k0 = 0; k0 < n; k0 += SLICE) {
        int64_t len = n - k0 < SLICE ? n - k0 : SLICE;
        w4g_slice sl[EL_GEMV_MULTI_MAX];
        for (int k = 0; k < n_act; k++)
            sl[k] = slice_of((const char *)a + k * a_stride, k0, len, group, p[k]);
        gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, k0 > 0, rows, sl);
    }
}

void el_gemv_w4g64_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                          const void *a) {
    gemv_w4g(n, y, n_rows, w, w_stride, a, 64, rows_w4g64);
}

void el_gemv_w4g128_avx512(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                           const void *a) {
    gemv_w4g(n, y, n_rows, w, w_stride, a, 128, rows_w4g128);
}

void el_gemv_w4g64_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_w4g_multi(n, y, ldy, n_act, n_rows, w, w_stride, a, a_stride, 64, rows_w4g64_multi);
}

void el_gemv_w4g128_multi_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                 const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_w4g_multi(n, y, ldy, n_act, n_rows, w, w_stride, a, a_stride, 128, rows_w4g128_multi);
}

#endif
