/* gemv_avx2.c - AVX2 gemvs (decode) for q8_0, q4_0 (and w4g32, the same bytes), w8, w4,
 * w4g64, w4g128 and w8a16, and multi-row gemvs (2-3 activation rows) for q8_0, q4_0, w4g32, w8
 * and w4. */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>
#include <string.h>

#include "kernels/avx2_simd.h"
#include "kernels/blocks.h"
#include "kernels/edge.h"
#include "kernels/gemv_drive.h"
#include "kernels/legacy_x86_simd.h"
#include "kernels/w8a16.h"

/* ---- gemv (decode): rows side by side as gemv_drive (gemv_drive.h) picks them, sharing each
 * activation load and what depends only on it; each row's arithmetic is the same in any
 * company, so results do not depend on how rows are split between threads. */

/* The dots of R rows (4, 2 or 1) of q8_0 blocks with A rows of q8_0 activations b[a] (1, or 2-3
 * for the multi-row gemv): per group of 8 blocks the 8 scales of each side are converted once,
 * then per block one fmadd per output (the outputs are the independent chains); the last nb % 8
 * blocks alike with scalar scales. The weight's sign moves onto the activations (dot_i8), its
 * absolute value taken once for all A. */
static inline __attribute__((always_inline)) void rows_b32(int64_t nb, const char *const x[],
                                                           float s[][4], int R, int A,
                                                           const el_block_q8_0 *const b[]) {
    const size_t x_block = sizeof(el_block_q8_0);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[EL_GEMV_MULTI_MAX][4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) acc[a][r] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= nb; i += 8) {
        __m256 d[EL_GEMV_MULTI_MAX][4];
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m256 dx = fp16x8(x[r] + i * x_block, x_block);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++) d[a][r] = _mm256_mul_ps(dx, fp16x8(b[a] + i, sizeof *b[a]));
        }
        #pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            __m256i yq[EL_GEMV_MULTI_MAX];
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++) yq[a] = _mm256_loadu_si256((const __m256i *)b[a][i + k].qs);
            #pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                const el_block_q8_0 *xq = (const el_block_q8_0 *)(x[r] + (i + k) * x_block);
                __m256i xv = _mm256_loadu_si256((const __m256i *)xq->qs);
                __m256i ax = _mm256_sign_epi8(xv, xv);
                #pragma GCC unroll 3
                for (int a = 0; a < A; a++) {
                    __m256i p = _mm256_madd_epi16(
                        _mm256_maddubs_epi16(ax, _mm256_sign_epi8(yq[a], xv)), ones);
                    acc[a][r] = _mm256_fmadd_ps(lane(d[a][r], k), _mm256_cvtepi32_ps(p), acc[a][r]);
                }
            }
        }
    }
    for (; i < nb; i++) {
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const char *xb = x[r] + i * x_block;
            uint16_t dx;
            memcpy(&dx, xb, sizeof dx);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++) {
                __m256i p = q8_0_dot((const el_block_q8_0 *)xb, b[a] + i);
                acc[a][r] = _mm256_fmadd_ps(_mm256_set1_ps(fp16(dx) * fp16(b[a][i].d)),
                                            _mm256_cvtepi32_ps(p), acc[a][r]);
            }
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) s[a][r] = hsum_ps(acc[a][r]);
}

/* What the rows of a gemv share: its activation row and length. */
typedef struct gemv_act {
    const void *a;
    int64_t n;
} gemv_act;

/* The activation rows of a multi-row gemv. */
typedef struct gemv_acts {
    const void *a[EL_GEMV_MULTI_MAX];
    int64_t n;
} gemv_acts;

static inline __attribute__((always_inline)) void rows_q8_0(const void *ctx,
                                                            const char *const row[4], float s[4],
                                                            int R) {
    const gemv_act *ga = ctx;
    const el_block_q8_0 *b[1] = {ga->a};
    float t[1][4];
    rows_b32(ga->n / EL_QK8_0, row, t, R, 1, b);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = t[0][r];
}

static inline __attribute__((always_inline)) void rows_q8_0_multi(const void *ctx,
                                                                  const char *const row[2],
                                                                  float s[][2], int R, int A) {
    const gemv_acts *ga = ctx;
    const el_block_q8_0 *b[EL_GEMV_MULTI_MAX] = {ga->a[0], ga->a[1], ga->a[2]};
    float t[EL_GEMV_MULTI_MAX][4];
    rows_b32(ga->n / EL_QK8_0, row, t, R, A, b);
    for (int a = 0; a < A; a++)
        for (int r = 0; r < R; r++) s[a][r] = t[a][r];
}

/* ---- q4_0 gemv: blocks in pairs, the low nibbles of both in one register and the high ones
 * in another (one 16-byte load each, the second inserted), against activations prepared per
 * slice to match; vpmaddubsw of both gives 8 int16 lanes per block. Eight blocks' lanes fold by
 * three horizontal adds of int16 (a lane then holds 16 products of nibbles <= 15 with bytes of
 * magnitude <= 128: at most 30720, exact) and one vpmaddwd into one int32 lane each, plus the
 * prepared -8 * (the block's activation sum, legacy_comp), so one conversion and one
 * multiply-add by 8 scales serve them (the per-block conversion, lane broadcast and
 * multiply-add, with the scales' gathering, were half the work; a vpmaddwd and an offset per
 * block pair, before the folds took int32, a fifth of the rest). */
enum { GEMV_SLICE = 16384 };

/* the activations against each block's low and high nibbles, two blocks */
typedef legacy_pair q4_0_pair_prep;

/* A slice of the activations: q8_0 blocks b, or for w4g32 weights (q4_0's bytes, dotted with
 * int8 activations of one scale) an A8 row's quants a8 and scale a8_d. */
typedef struct q4_0_gemv_slice {
    const q4_0_pair_prep *p;
    const __m256 *d;        /* per 8 blocks: activation scales in the folded order */
    const __m256i *off;     /* per 8 blocks: -8 * each block's activation sum, folded order */
    const el_block_q8_0 *b; /* the activation row as q8_0 blocks, or NULL and: */
    const int8_t *a8;       /* an A8 row's quants */
    float a8_d;             /* and its scale */
    int64_t first, octs, last; /* its first block, whole groups of 8, end block */
} q4_0_gemv_slice;

/* The 32 activation quants of block k, and their scale. */
static inline const int8_t *slice_qs(const q4_0_gemv_slice *sl, int64_t k) {
    return sl->b ? sl->b[k].qs : sl->a8 + k * EL_QK4_0;
}
static inline float slice_d(const q4_0_gemv_slice *sl, int64_t k) {
    return sl->b ? fp16(sl->b[k].d) : sl->a8_d;
}

/* Folded lane l of 8 blocks holds block fold_block[l]. */
static const int fold_block[8] = {0, 2, 4, 6, 1, 3, 5, 7};

static void prepare_q4_0_pairs(const q4_0_gemv_slice *sl, q4_0_pair_prep *p, __m256 *d,
                               __m256i *off) {
    for (int64_t j = 0; j < 4 * sl->octs; j++) {
        const int8_t *c0 = slice_qs(sl, sl->first + 2 * j);
        const int8_t *c1 = slice_qs(sl, sl->first + 2 * j + 1);
        p[j].lo = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)c1),
                                   _mm_loadu_si128((const __m128i *)c0));
        p[j].hi = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(c1 + 16)),
                                   _mm_loadu_si128((const __m128i *)(c0 + 16)));
    }
    for (int64_t o = 0; o < sl->octs; o++) {
        float h[8];
        for (int l = 0; l < 8; l++) h[l] = slice_d(sl, sl->first + 8 * o + fold_block[l]);
        d[o] = _mm256_loadu_ps(h);
        off[o] = legacy_comp(p + 4 * o, 8);
    }
}

/* A block pair of a row unpacked: both blocks' low nibbles in lo, high ones in hi. */
typedef struct pair_nibbles {
    __m256i lo, hi;
} pair_nibbles;

static inline pair_nibbles unpack_pair(const char *xb) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m128i q0 = _mm_loadu_si128((const __m128i *)((const el_block_q4_0 *)xb)->qs);
    __m128i q1 = _mm_loadu_si128((const __m128i *)((const el_block_q4_0 *)xb + 1)->qs);
    __m256i q = _mm256_set_m128i(q1, q0);
    return (pair_nibbles){_mm256_and_si256(q, low4),
                          _mm256_and_si256(_mm256_srli_epi16(q, 4), low4)};
}

/* The int16 lanes of an unpacked pair against prepared activations (8 per block: the pair's
 * first block in the low 128 bits), each the sum of 4 products of unsigned nibbles. */
static inline __m256i pair_dot(pair_nibbles u, const q4_0_pair_prep *p) {
    return _mm256_add_epi16(_mm256_maddubs_epi16(u.lo, p->lo), _mm256_maddubs_epi16(u.hi, p->hi));
}

/* The weight scales of 8 blocks in the folded order. */
static inline __m256 fold_scales(const char *xb) {
    const el_block_q4_0 *x = (const el_block_q4_0 *)xb;
    return _mm256_cvtph_ps(_mm_setr_epi16((short)x[0].d, (short)x[2].d, (short)x[4].d,
                                          (short)x[6].d, (short)x[1].d, (short)x[3].d,
                                          (short)x[5].d, (short)x[7].d));
}

/* The dots of R weight rows with A activation rows (sl[a] the slice of row a): the one-row gemv
 * is A = 1 (R <= 4), the multi-row one A = 2 or 3 (R <= 2); each weight pair is unpacked once
 * for all A, and each output has the same arithmetic in any company. */
static inline __attribute__((always_inline)) void rows_q4_0_all(const q4_0_gemv_slice *sl,
                                                                const char *const row[],
                                                                float s[][4], int R, int A) {
    const size_t xb = sizeof(el_block_q4_0);
    __m256 acc[EL_GEMV_MULTI_MAX][4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) acc[a][r] = _mm256_setzero_ps();
    for (int64_t o = 0; o < sl[0].octs; o++) {
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const char *x = row[r] + (sl[0].first + 8 * o) * xb;
            __m256i f01[EL_GEMV_MULTI_MAX], f23[EL_GEMV_MULTI_MAX];
            pair_nibbles u0 = unpack_pair(x), u1 = unpack_pair(x + 2 * xb);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++) {
                const q4_0_pair_prep *p = sl[a].p + 4 * o;
                f01[a] = _mm256_hadd_epi16(pair_dot(u0, p), pair_dot(u1, p + 1));
            }
            pair_nibbles u2 = unpack_pair(x + 4 * xb), u3 = unpack_pair(x + 6 * xb);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++) {
                const q4_0_pair_prep *p = sl[a].p + 4 * o;
                f23[a] = _mm256_hadd_epi16(pair_dot(u2, p + 2), pair_dot(u3, p + 3));
            }
            __m256 dw = fold_scales(x);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++) {
                __m256i blocks = _mm256_add_epi32(
                    _mm256_madd_epi16(_mm256_hadd_epi16(f01[a], f23[a]), _mm256_set1_epi16(1)),
                    sl[a].off[o]);
                acc[a][r] = _mm256_fmadd_ps(_mm256_mul_ps(dw, sl[a].d[o]),
                                            _mm256_cvtepi32_ps(blocks), acc[a][r]);
            }
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) {
            for (int64_t k = sl[a].first + 8 * sl[a].octs; k < sl[a].last; k++) { /* the rest */
                const el_block_q4_0 *x = (const el_block_q4_0 *)row[r] + k;
                __m256i p = q4_0_dot(x, slice_qs(&sl[a], k));
                acc[a][r] = _mm256_fmadd_ps(_mm256_set1_ps(fp16(x->d) * slice_d(&sl[a], k)),
                                            _mm256_cvtepi32_ps(p), acc[a][r]);
            }
            s[a][r] = hsum_ps(acc[a][r]);
        }
}

static inline __attribute__((always_inline)) void rows_q4_0(const void *ctx,
                                                            const char *const row[4], float s[4],
                                                            int R) {
    float t[1][4];
    rows_q4_0_all(ctx, row, t, R, 1);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = t[0][r];
}

static inline __attribute__((always_inline)) void rows_q4_0_multi(const void *ctx,
                                                                  const char *const row[2],
                                                                  float s[][2], int R, int A) {
    float t[EL_GEMV_MULTI_MAX][4];
    rows_q4_0_all(ctx, row, t, R, A);
    for (int a = 0; a < A; a++)
        for (int r = 0; r < R; r++) s[a][r] = t[a][r];
}

/* q4_0 rows against q8_0 activations b or an A8 row's quants a8 (scale a8_d). */
static void gemv_q4_0_act(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                          const el_block_q8_0 *b, const int8_t *a8, float a8_d) {
    q4_0_pair_prep p[GEMV_SLICE / 64];
    __m256 d[GEMV_SLICE / 256];
    __m256i off[GEMV_SLICE / 256];
    for (int64_t k0 = 0; k0 < n; k0 += GEMV_SLICE) {
        int64_t len = n - k0 < GEMV_SLICE ? n - k0 : GEMV_SLICE;
        q4_0_gemv_slice sl = {p, d, off, b, a8, a8_d, k0 / EL_QK4_0, len / 256,
                              (k0 + len) / EL_QK4_0};
        prepare_q4_0_pairs(&sl, p, d, off);
        size_t prepared = (size_t)sl.octs * (4 * sizeof *p + sizeof *d + sizeof *off);
        int R = gemv_company((size_t)len / EL_QK4_0 * sizeof(el_block_q4_0), prepared);
        gemv_drive(n_rows, R, w, w_stride, y, k0 > 0, rows_q4_0, &sl);
    }
}

void el_gemv_q4_0_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a) {
    gemv_q4_0_act(n, y, n_rows, w, w_stride, a, NULL, 0.0f);
}

/* n_act (2 or 3) activation rows a_stride bytes apart, q8_0 blocks or (a8) A8 rows: the
 * one-row gemv's slices for each (78 KB of stack), weight rows two at a time. */
static void gemv_q4_0_multi_act(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                const void *w, size_t w_stride, const void *a, size_t a_stride,
                                bool a8) {
    q4_0_pair_prep p[EL_GEMV_MULTI_MAX][GEMV_SLICE / 64];
    __m256 d[EL_GEMV_MULTI_MAX][GEMV_SLICE / 256];
    __m256i off[EL_GEMV_MULTI_MAX][GEMV_SLICE / 256];
    for (int64_t k0 = 0; k0 < n; k0 += GEMV_SLICE) {
        int64_t len = n - k0 < GEMV_SLICE ? n - k0 : GEMV_SLICE;
        q4_0_gemv_slice sl[EL_GEMV_MULTI_MAX];
        for (int k = 0; k < n_act; k++) {
            const char *ak = (const char *)a + k * a_stride;
            el_a8_header h = {0};
            if (a8) memcpy(&h, ak, sizeof h);
            const el_block_q8_0 *b = a8 ? NULL : (const el_block_q8_0 *)ak;
            const int8_t *q = a8 ? (const int8_t *)ak + sizeof h : NULL;
            sl[k] = (q4_0_gemv_slice){p[k], d[k], off[k], b, q, h.d, k0 / EL_QK4_0, len / 256,
                                      (k0 + len) / EL_QK4_0};
            prepare_q4_0_pairs(&sl[k], p[k], d[k], off[k]);
        }
        gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, k0 > 0, rows_q4_0_multi, sl);
    }
}

void el_gemv_q4_0_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_q4_0_multi_act(n, y, ldy, n_act, n_rows, w, w_stride, a, a_stride, false);
}

void el_gemv_q8_0_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a) {
    gemv_act ga = {a, n};
    int R = gemv_company(w_stride, el_row_size(EL_TYPE_Q8_0, n));
    gemv_drive(n_rows, R, w, w_stride, y, false, rows_q8_0, &ga);
}

void el_gemv_q8_0_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_acts ga = {{a, (const char *)a + a_stride, (const char *)a + 2 * a_stride}, n};
    gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, false, rows_q8_0_multi, &ga);
}

/* W4 and W8 rows against A8 rows, R weight rows (4, 2 or 1) and A activation rows (1, or 2-3
 * for the multi-row gemv) at a time: int32 sums over the row (exact, so the same however rows
 * are grouped), 32 elements per step, each weight chunk loaded and unpacked once for all A; W4
 * nibbles unsigned with 8 * (the row's activation sum) off at the end, W8 with dot_i8's sign
 * trick (the weight's absolute value taken once). */
static inline __attribute__((always_inline)) void rows_wrow(int64_t n, const char *const q[4],
                                                            int32_t dot[][4], int R, int A,
                                                            const int8_t *const act[],
                                                            bool w4) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[EL_GEMV_MULTI_MAX][4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) acc[a][r] = _mm256_setzero_si256();
    for (int64_t i = 0; i < n; i += 32) {
        __m256i yv[EL_GEMV_MULTI_MAX];
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) yv[a] = _mm256_loadu_si256((const __m256i *)(act[a] + i));
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m256i x = w4 ? load_chunk_u4((const uint8_t *)q[r] + i / 2)
                           : _mm256_loadu_si256((const __m256i *)(q[r] + i));
            __m256i ux = w4 ? x : _mm256_sign_epi8(x, x);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++) {
                __m256i y = w4 ? yv[a] : _mm256_sign_epi8(yv[a], x);
                acc[a][r] = _mm256_add_epi32(acc[a][r],
                                             _mm256_madd_epi16(_mm256_maddubs_epi16(ux, y), ones));
            }
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) dot[a][r] = hsum_epi32(acc[a][r]);
}

/* A W4 (w4) or W8 row's exact integer dot with an A8 row (header h) as its float value: the
 * row's scale times the activations', times the dot less W4's 8 x the activation sum. Every W4
 * and W8 gemv path ends here, so they give the same bits. */
static inline float w_row_value(const char *row, const el_a8_header *h, int32_t dot, bool w4) {
    return el_edge_row_scale(row) * h->d * (float)(dot - (w4 ? 8 * h->sum : 0));
}

/* The dots of W4 (w4) or W8 rows with A A8 rows, scaled: the row's scale times the
 * activations'. */
static inline __attribute__((always_inline)) void rows_w(const void *const a8[], int64_t n,
                                                         const char *const row[], float s[][4],
                                                         int R, int A, bool w4) {
    el_a8_header h[EL_GEMV_MULTI_MAX];
    const int8_t *act[EL_GEMV_MULTI_MAX];
    for (int a = 0; a < A; a++) {
        memcpy(&h[a], a8[a], sizeof h[a]);
        act[a] = (const int8_t *)a8[a] + sizeof(el_a8_header);
    }
    const char *q[4];
    int32_t dot[EL_GEMV_MULTI_MAX][4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) q[r] = row[r] + sizeof(float);
    rows_wrow(n, q, dot, R, A, act, w4);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        for (int a = 0; a < A; a++) s[a][r] = w_row_value(row[r], &h[a], dot[a][r], w4);
}

static inline __attribute__((always_inline)) void rows_w1(const void *ctx,
                                                          const char *const row[4], float s[4],
                                                          int R, bool w4) {
    const gemv_act *ga = ctx;
    const void *a8[1] = {ga->a};
    float t[1][4];
    rows_w(a8, ga->n, row, t, R, 1, w4);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = t[0][r];
}

static inline __attribute__((always_inline)) void rows_w4(const void *ctx, const char *const row[4],
                                                          float s[4], int R) {
    rows_w1(ctx, row, s, R, true);
}

static inline __attribute__((always_inline)) void rows_w8(const void *ctx, const char *const row[4],
                                                          float s[4], int R) {
    rows_w1(ctx, row, s, R, false);
}

static inline __attribute__((always_inline)) void rows_wm(const void *ctx,
                                                          const char *const row[2], float s[][2],
                                                          int R, int A, bool w4) {
    const gemv_acts *ga = ctx;
    float t[EL_GEMV_MULTI_MAX][4];
    rows_w(ga->a, ga->n, row, t, R, A, w4);
    for (int a = 0; a < A; a++)
        for (int r = 0; r < R; r++) s[a][r] = t[a][r];
}

static inline __attribute__((always_inline)) void rows_w4_multi(const void *ctx,
                                                                const char *const row[2],
                                                                float s[][2], int R, int A) {
    rows_wm(ctx, row, s, R, A, true);
}

static inline __attribute__((always_inline)) void rows_w8_multi(const void *ctx,
                                                                const char *const row[2],
                                                                float s[][2], int R, int A) {
    rows_wm(ctx, row, s, R, A, false);
}

void el_gemv_w8_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                           const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_acts ga = {{a, (const char *)a + a_stride, (const char *)a + 2 * a_stride}, n};
    gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, false, rows_w8_multi, &ga);
}

/* Rows of an A8-activation type (rows: its kernel), R together, against the A8 row a. */
static inline __attribute__((always_inline)) void gemv_a8(int64_t n, float *y, int64_t n_rows,
                                                          const void *w, size_t w_stride,
                                                          const void *a, int R,
                                                          gemv_rows_fn rows) {
    gemv_act ga = {a, n};
    gemv_drive(n_rows, R, w, w_stride, y, false, rows, &ga);
}

void el_gemv_w8_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                     const void *a) {
    gemv_a8(n, y, n_rows, w, w_stride, a, gemv_company(w_stride, (size_t)n), rows_w8);
}

/* W4G32 rows have q4_0's bytes and value (d * (nibble - 8)); only the activations differ. */
void el_gemv_w4g32_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                        const void *a) {
    el_a8_header h;
    memcpy(&h, a, sizeof h);
    gemv_q4_0_act(n, y, n_rows, w, w_stride, NULL, (const int8_t *)a + sizeof h, h.d);
}

void el_gemv_w4g32_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                              const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_q4_0_multi_act(n, y, ldy, n_act, n_rows, w, w_stride, a, a_stride, true);
}

void el_gemv_w8a16_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                        const void *a) {
    el_a16_view v = el_a16_view_of(a, n);
    gemv_drive(n_rows, gemv_company(w_stride, (size_t)n * 2), w, w_stride, y, false, rows_w8a16,
               &v);
}

/* ---- W4G64 and W4G128 (int4 weights, an fp16 scale per group of G) against one A8 row.
 *
 * A group's quants are contiguous (G/2 bytes after its scale), so each 32-byte load holds two
 * chunks of 32 elements: masked, its low nibbles are the first 16 elements of both chunks and
 * its shifted high nibbles the last 16, against activations prepared per slice to match (the
 * 8-offset prepared too). Two vpmaddubsw, the offset's subtraction and one vpmaddwd give 8
 * int32 lanes of one group; a group's lanes add up in integers and take its scale in one
 * multiply-add. Against the dot products' routine it replaces (per chunk a 16-byte load, a
 * shift, an insert, a mask, vpmaddubsw, a subtraction, vpmaddwd and an add) that is about half
 * the instructions. R rows far apart share the activation loads (gemv_drive.h); each row's
 * arithmetic is the same in any company. (W4G32 goes through the Q4_0 gemv above: its bytes.) */

/* Elements prepared at a time (96 bytes per 64: 24 KB of stack); longer rows go in slices. */
enum { SLICE = 16384, PAIR = 64 };

typedef struct w4g_pair_prep {
    __m256i lo, hi; /* the activations against two chunks' low and high nibbles */
    __m256i off;    /* int16 pair sums of 8 * those activations */
} w4g_pair_prep;

typedef struct w4g_slice {
    const w4g_pair_prep *p;
    int64_t groups; /* of G elements */
    size_t first;   /* byte offset of the slice in a row */
    float d;        /* the activations' row scale */
} w4g_slice;

/* The activations of len elements (a multiple of 64), two chunks at a time: elements 0-15 and
 * 32-47 of the 64 in lo, 16-31 and 48-63 in hi. */
static void prepare(const int8_t *act, int64_t len, w4g_pair_prep *p) {
    const __m256i eight = _mm256_set1_epi8(8);
    for (int64_t j = 0; j < len / PAIR; j++) {
        const int8_t *a = act + j * PAIR;
        p[j].lo = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(a + 32)),
                                   _mm_loadu_si128((const __m128i *)a));
        p[j].hi = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(a + 48)),
                                   _mm_loadu_si128((const __m128i *)(a + 16)));
        p[j].off = _mm256_add_epi16(_mm256_maddubs_epi16(eight, p[j].lo),
                                    _mm256_maddubs_epi16(eight, p[j].hi));
    }
}

/* The 8 int32 lanes of two chunks of quants at qs against prepared activations p. */
static inline __m256i pair_sums(const char *qs, const w4g_pair_prep *p) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i q = _mm256_loadu_si256((const __m256i *)qs);
    __m256i t = _mm256_add_epi16(
        _mm256_maddubs_epi16(_mm256_and_si256(q, low4), p->lo),
        _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q, 4), low4), p->hi));
    return _mm256_madd_epi16(_mm256_sub_epi16(t, p->off), _mm256_set1_epi16(1));
}

/* The dots of R rows over a slice, scaled by the activations' row scale; inlined with group
 * constant. */
static inline __attribute__((always_inline)) void rows_w4g(const void *ctx,
                                                           const char *const row[4], float s[4],
                                                           int R, int group) {
    const w4g_slice *sl = ctx;
    const size_t block_bytes = 2 + (size_t)group / 2;
    __m256 acc[4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t g = 0; g < sl->groups; g++) {
        const w4g_pair_prep *p = sl->p + g * (group / PAIR);
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const char *b = row[r] + sl->first + g * block_bytes;
            __m256i t = pair_sums(b + 2, p);
            if (group == 128) t = _mm256_add_epi32(t, pair_sums(b + 34, p + 1));
            uint16_t d;
            memcpy(&d, b, sizeof d);
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(d)), _mm256_cvtepi32_ps(t), acc[r]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc[r]), _mm256_extractf128_ps(acc[r], 1));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        s[r] = _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h))) * sl->d;
    }
}

static inline __attribute__((always_inline)) void rows_w4g64(const void *ctx,
                                                             const char *const row[4], float s[4],
                                                             int R) {
    rows_w4g(ctx, row, s, R, 64);
}

static inline __attribute__((always_inline)) void rows_w4g128(const void *ctx,
                                                              const char *const row[4],
                                                              float s[4], int R) {
    rows_w4g(ctx, row, s, R, 128);
}

/* alone: rows one at a time (G=128: with 16 registers, R rows' two chunk pairs a group do not
 * fit, and the spills cost more than sharing the activation loads saves; G=64's fit, and it
 * gains from R = 4; docs/kernels.md, "W4G gemvs"). */
static inline __attribute__((always_inline)) void gemv_w4g(int64_t n, float *y, int64_t n_rows,
                                                           const void *w, size_t w_stride,
                                                           const void *a, int group, bool alone,
                                                           gemv_rows_fn rows) {
    w4g_pair_prep p[SLICE / PAIR];
    el_a8_header h;
    memcpy(&h, a, sizeof h);
    const size_t block_bytes = 2 + (size_t)group / 2;
    for (int64_t k0 = 0; k0 < n; k0 += SLICE) {
        int64_t len = n - k0 < SLICE ? n - k0 : SLICE;
        prepare((const int8_t *)a + sizeof h + k0, len, p);
        w4g_slice sl = {p, len / group, (size_t)(k0 / group) * block_bytes, h.d};
        int R = alone ? 1
                      : gemv_company((size_t)(len / group) * block_bytes,
                                     (size_t)len / PAIR * sizeof *p);
        gemv_drive(n_rows, R, w, w_stride, y, k0 > 0, rows, &sl);
    }
}

void el_gemv_w4g64_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                        const void *a) {
    gemv_w4g(n, y, n_rows, w, w_stride, a, 64, false, rows_w4g64);
}

void el_gemv_w4g128_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                         const void *a) {
    gemv_w4g(n, y, n_rows, w, w_stride, a, 128, true, rows_w4g128);
}

/* ---- W4 (one scale a row) through W4G's prepared pairs: a 32-byte load holds two chunks, whose
 * low and high nibbles meet the pair's prepared activations (half the instructions of a chunk
 * at a time). A row's integer dot is exact, as the chunk-at-a-time routine's (rows_wrow): int16
 * sums over W4_FOLD_PAIRS pairs, widened once, then w_row_value, so both give the same
 * bits. Rows not whole pairs, or longer than a slice of prepared
 * activations, take the chunk routine (rows_w4, rows_w4_multi). */
enum { W4_FOLD_PAIRS = 4 }; /* a lane: 4 pairs x 2 vpmaddubsw x 2 x 15 x 128 = 30720, exact */

typedef struct w4_pairs {
    const w4g_pair_prep *p[EL_GEMV_MULTI_MAX]; /* each activation row's prepared pairs */
    int64_t pairs;                             /* of PAIR elements */
    el_a8_header h[EL_GEMV_MULTI_MAX];
} w4_pairs;

/* The dots of R weight rows with A activation rows (1, or 2-3 for the multi-row gemv), each
 * pair of chunks of a weight row loaded and unpacked once for all A; the int16 sums kept over
 * W4_FOLD_PAIRS pairs where the registers allow (A x R <= 4), else widened every pair. */
static inline __attribute__((always_inline)) void rows_w4_pairs_all(const w4_pairs *wp,
                                                                    const char *const row[],
                                                                    float s[][4], int R, int A) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    const int fold = A * R <= 4 ? W4_FOLD_PAIRS : 1;
    __m256i acc[EL_GEMV_MULTI_MAX][4], part[EL_GEMV_MULTI_MAX][4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) acc[a][r] = part[a][r] = _mm256_setzero_si256();
    for (int64_t j = 0; j < wp->pairs; j++) {
        bool widen = j % fold == fold - 1 || j + 1 == wp->pairs;
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m256i q = _mm256_loadu_si256((const __m256i *)(row[r] + sizeof(float) + 32 * j));
            __m256i lo = _mm256_and_si256(q, low4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++) {
                const w4g_pair_prep *p = wp->p[a] + j;
                part[a][r] = _mm256_add_epi16(part[a][r],
                                              _mm256_add_epi16(_mm256_maddubs_epi16(lo, p->lo),
                                                               _mm256_maddubs_epi16(hi, p->hi)));
                if (widen) {
                    acc[a][r] = _mm256_add_epi32(acc[a][r], _mm256_madd_epi16(part[a][r], ones));
                    part[a][r] = _mm256_setzero_si256();
                }
            }
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++)
            s[a][r] = w_row_value(row[r], &wp->h[a], hsum_epi32(acc[a][r]), true);
}

static inline __attribute__((always_inline)) void rows_w4_pairs(const void *ctx,
                                                                const char *const row[4],
                                                                float s[4], int R) {
    float t[1][4];
    rows_w4_pairs_all(ctx, row, t, R, 1);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = t[0][r];
}

static inline __attribute__((always_inline)) void rows_w4_pairs_multi(const void *ctx,
                                                                      const char *const row[2],
                                                                      float s[][2], int R, int A) {
    float t[EL_GEMV_MULTI_MAX][4];
    rows_w4_pairs_all(ctx, row, t, R, A);
    for (int a = 0; a < A; a++)
        for (int r = 0; r < R; r++) s[a][r] = t[a][r];
}

/* Whether rows of n elements take the pairs: whole pairs, within one slice. */
static bool w4_by_pairs(int64_t n) { return n % PAIR == 0 && n <= SLICE; }

/* Activation row k's header and prepared pairs into wp. */
static void w4_prepare(w4_pairs *wp, int k, const void *a, int64_t n, w4g_pair_prep *p) {
    memcpy(&wp->h[k], a, sizeof wp->h[k]);
    prepare((const int8_t *)a + sizeof(el_a8_header), n, p);
    wp->p[k] = p;
}

void el_gemv_w4_avx2(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                     const void *a) {
    if (!w4_by_pairs(n)) {
        gemv_a8(n, y, n_rows, w, w_stride, a, gemv_company(w_stride, (size_t)n), rows_w4);
        return;
    }
    w4g_pair_prep p[SLICE / PAIR];
    w4_pairs wp = {.pairs = n / PAIR};
    w4_prepare(&wp, 0, a, n, p);
    gemv_drive(n_rows, gemv_company(w_stride, (size_t)wp.pairs * sizeof *p), w, w_stride, y, false,
               rows_w4_pairs, &wp);
}

/* n_act (2 or 3) activation rows a_stride bytes apart: each one's prepared pairs (24 KB of
 * stack apiece), weight rows two at a time. */
void el_gemv_w4_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                           const void *w, size_t w_stride, const void *a, size_t a_stride) {
    if (!w4_by_pairs(n)) {
        gemv_acts ga = {{a, (const char *)a + a_stride, (const char *)a + 2 * a_stride}, n};
        gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, false, rows_w4_multi, &ga);
        return;
    }
    w4g_pair_prep p[EL_GEMV_MULTI_MAX][SLICE / PAIR];
    w4_pairs wp = {.pairs = n / PAIR};
    for (int k = 0; k < n_act; k++)
        w4_prepare(&wp, k, (const char *)a + (size_t)k * a_stride, n, p[k]);
    gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, false, rows_w4_pairs_multi, &wp);
}

#endif
