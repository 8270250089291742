/* gemv_w4g_avx2.c - decode gemvs of W4G64 and W4G128 rows (int4 weights, an fp16 scale per
 * group of G) against one A8 row, on AVX2.
 *
 * A group's quants are contiguous (G/2 bytes after its scale), so each 32-byte load holds two
 * chunks of 32 elements: masked, its low nibbles are the first 16 elements of both chunks and
 * its shifted high nibbles the last 16, against activations prepared per slice to match (the
 * 8-offset prepared too). Two vpmaddubsw, the offset's subtraction and one vpmaddwd give 8
 * int32 lanes of one group; a group's lanes add up in integers and take its scale in one
 * multiply-add. Against the dot products' routine it replaces (per chunk a 16-byte load, a
 * shift, an insert, a mask, vpmaddubsw, a subtraction, vpmaddwd and an add) that is about half
 * the instructions. R rows far apart share the activation loads (gemv_drive.h); each row's
 * arithmetic is the same in any company. (W4G32 goes through avx2.c's Q4_0 gemv: its bytes.) */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>
#include <string.h>

#include "kernels/edge.h"
#include "kernels/gemv_drive.h"

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

/* alone: rows one at a time (G=128: with 16 registers, R rows' two chunk pairs a group did not
 * fit; bench_gemm, Zen 4, one core: R = 1 56-61 G multiply-adds a second, R = 4 29-44, where
 * G=64 gains 5-15% from R = 4). */
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

#endif
