/* gemv_w4g_avx512.c - decode gemvs of W4G64 and W4G128 rows (int4 weights, an fp16 scale per
 * group of G) against one A8 row, on AVX-512 VNNI. (W4G32 has Q4_0's bytes and goes through
 * Q4_0's gemv in avx512.c, which that layout suits better: 65 G multiply-adds a second against
 * 39-49 here.)
 *
 * Without them a W4A8 model quantized per group decoded through the AVX2 dot products, at half
 * the bound its memory allows (docs/kernels.md, "W4G gemvs"). Here every 128 elements of a row are one step
 * for both G: their 64 quant bytes gathered into one 512-bit register (one load for G=128;
 * G=64 merges 2 loads under byte masks, the scale between its blocks skipped by the load
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
 * On Zen 4, one core, in cache, G=128 does 67-86 G multiply-adds a second and G=64 53-67
 * (Q4_0's gemv 65-68, the AVX2 dot products they replace 34-38). */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include <immintrin.h>
#include <string.h>

#include "kernels/edge.h"
#include "kernels/gemv_drive.h"

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
