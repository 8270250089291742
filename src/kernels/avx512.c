/* avx512.c - AVX-512 kernels with VNNI (vpdpbusd: 4 unsigned x signed byte products summed
 * into each 32-bit lane in one instruction) for q8_0 and q4_0 weights: dot products two blocks
 * per 512-bit register (one at a time on 256 bits for the last few), and 4x4 tiles on 256-bit
 * registers (AVX512-VL); gemvs (decode) for q8_0, q4_0 (and w4g32, the same bytes), w8 and w4.
 * Its table (el_level_avx512) builds on AVX2's: other types keep the AVX2 kernels.
 * Built with -mavx512f -mavx512bw -mavx512vl -mavx512vnni (and AVX2's flags) on x86 (see
 * Makefile) and used only when the CPU and the OS support them. */
#include "kernels/avx2.h"
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include <cpuid.h>
#include <immintrin.h>
#include <string.h>

#include "kernels/blocks.h"
#include "kernels/edge.h"
#include "kernels/gemv_drive.h"
#include "kernels/w8a16.h"

static float fp16(uint16_t h) { return _cvtsh_ss(h); }

/* The 32 quants of blocks b[0] and b[1] in the two halves of a register. */
static inline __m512i load2_q8_0(const el_block_q8_0 *b) {
    __m256i lo = _mm256_loadu_si256((const __m256i *)b[0].qs);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo),
                              _mm256_loadu_si256((const __m256i *)b[1].qs), 1);
}

/* Signed x . signed y per lane of 4 bytes: vpdpbusd wants x unsigned, so the sign of x moves
 * onto y (exact for |y| <= 127, which holds for activations quantized by el_*_from_float). */
static inline __m512i dot_i8(__m512i x, __m512i y) {
    __m512i sy = _mm512_mask_sub_epi8(y, _mm512_movepi8_mask(x), _mm512_setzero_si512(), y);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(x), sy);
}

/* Blocks k and k+1 of a q8_0 pair: int32 lanes 0-7 belong to block k, 8-15 to block k+1. */
static inline __m512i q8_0_dot2(const el_block_q8_0 *a, const el_block_q8_0 *b) {
    return dot_i8(load2_q8_0(a), load2_q8_0(b));
}

/* Blocks k and k+1 of a q4_0 pair, arranged by 128-bit lanes as [lo_k lo_k+1 hi_k hi_k+1]
 * (nibbles: the 16 bytes of both blocks, then the same shifted by 4) against the activations
 * rearranged to match; so int32 lanes 0-3 and 8-11 belong to block k, 4-7 and 12-15 to k+1.
 * sum (u - 8) y = sum u y - sum 8 y with u unsigned. */
static inline __m512i q4_0_dot2(const el_block_q4_0 *a, const el_block_q8_0 *b) {
    __m256i q = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)a[1].qs),
                                 _mm_loadu_si128((const __m128i *)a[0].qs));
    __m512i shifts = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
    __m512i u = _mm512_and_si512(_mm512_srlv_epi16(_mm512_broadcast_i64x4(q), shifts),
                                 _mm512_set1_epi8(0x0F));
    __m512i y = load2_q8_0(b); /* [y_k lo, y_k hi, y_k+1 lo, y_k+1 hi] */
    y = _mm512_shuffle_i64x2(y, y, _MM_SHUFFLE(3, 1, 2, 0));
    __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, y);
    return _mm512_sub_epi32(p, _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(8), y));
}

/* One block pair on 256 bits (the tails): the integer dots as 8 int32 lanes. */
static inline __m256i q8_0_dot1(const el_block_q8_0 *a, const el_block_q8_0 *b) {
    __m256i x = _mm256_loadu_si256((const __m256i *)a->qs);
    __m256i y = _mm256_loadu_si256((const __m256i *)b->qs);
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/* One q4_0 block against the 32 int8 activations at yq. */
static inline __m256i q4_0_dot1(const el_block_q4_0 *a, const int8_t *yq) {
    __m128i q = _mm_loadu_si128((const __m128i *)a->qs);
    __m256i u = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0F));
    __m256i y = _mm256_loadu_si256((const __m256i *)yq);
    __m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, y);
    return _mm256_sub_epi32(p, _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(8), y));
}

static int32_t hsum_epi32_256(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

static float hsum256_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The fp16 scales d of 8 consecutive blocks stride bytes apart (d first in each), as floats. */
static inline __m256 fp16x8(const void *blocks, size_t stride) {
    const char *p = blocks;
    uint16_t h[8];
    for (int k = 0; k < 8; k++) memcpy(&h[k], p + k * stride, sizeof h[k]);
    return _mm256_cvtph_ps(_mm_setr_epi16((short)h[0], (short)h[1], (short)h[2], (short)h[3],
                                          (short)h[4], (short)h[5], (short)h[6], (short)h[7]));
}

/* Groups of 8 blocks share one conversion of their 16 scales, spread to the lanes of each pair
 * by a permute; two accumulators hide the fmadd latency; the last nb % 8 blocks go one by one
 * on 256 bits. x is q4_0 (q4) or q8_0 blocks, y q8_0 blocks. */
static inline __attribute__((always_inline)) float dot_blocks32(int64_t nb, const void *x,
                                                                size_t x_block, const void *y,
                                                                bool q4) {
    const char *xa = x;
    const el_block_q8_0 *b = y;
    /* lane -> block of the pair: q8_0 pairs are 8 + 8 lanes, q4_0 pairs 4 + 4 + 4 + 4 */
    const __m512i pick0 = q4 ? _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1)
                             : _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    int64_t i = 0;
    for (; i + 8 <= nb; i += 8) {
        __m512 d = _mm512_castps256_ps512(
            _mm256_mul_ps(fp16x8(xa + i * x_block, x_block), fp16x8(b + i, sizeof *b)));
        #pragma GCC unroll 4
        for (int k = 0; k < 8; k += 2) {
            const void *xb = xa + (i + k) * x_block;
            __m512i p = q4 ? q4_0_dot2(xb, b + i + k) : q8_0_dot2(xb, b + i + k);
            __m512 dk = _mm512_permutexvar_ps(_mm512_add_epi32(pick0, _mm512_set1_epi32(k)), d);
            acc[(k / 2) & 1] = _mm512_fmadd_ps(dk, _mm512_cvtepi32_ps(p), acc[(k / 2) & 1]);
        }
    }
    __m256 tail = _mm256_setzero_ps();
    for (; i < nb; i++) {
        const void *xb = xa + i * x_block;
        uint16_t dx;
        memcpy(&dx, xb, sizeof dx);
        __m256i p = q4 ? q4_0_dot1(xb, b[i].qs) : q8_0_dot1(xb, b + i);
        tail = _mm256_fmadd_ps(_mm256_set1_ps(fp16(dx) * fp16(b[i].d)), _mm256_cvtepi32_ps(p), tail);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1])) + hsum256_ps(tail);
}

static void vec_dot_q8_0(int64_t n, float *s, const void *x, const void *y) {
    *s = dot_blocks32(n / EL_QK8_0, x, sizeof(el_block_q8_0), y, false);
}

static void vec_dot_q4_0(int64_t n, float *s, const void *x, const void *y) {
    *s = dot_blocks32(n / EL_QK4_0, x, sizeof(el_block_q4_0), y, true);
}

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

/* The 4x4 tiles: as avx2.c's, with vpdpbusd doing the byte products. For q4_0 the quants stay
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

static void tile_q8_0(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    tile_b32(n, y, ldy, w, w_stride, a, a_stride, false);
}

static void tile_q4_0(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    tile_b32(n, y, ldy, w, w_stride, a, a_stride, true);
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
 * read in pieces, one pass per slice, which the prefetcher follows badly (a row of 8192 in
 * two slices read at 2/3 of the speed), so this covers the FFN widths of common models. */
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

static void gemv_q4_0(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    gemv_q4_0_act(n, y, n_rows, w, w_stride, a, NULL, 0.0f);
}

/* W4G32 rows have q4_0's bytes and value (d * (nibble - 8)); only the activations differ. */
static void gemv_w4g32(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
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

static void gemv_q4_0_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                            const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_q4_0_multi_act(n, y, ldy, n_act, n_rows, w, w_stride, a, a_stride, false);
}

static void gemv_w4g32_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
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
static void gemv_q8_0(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
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

static void gemv_q8_0_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
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

static void gemv_w4(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                    const void *a) {
    wrow_act wa = wrow_activations(n, a);
    gemv_drive(n_rows, gemv_company(w_stride, (size_t)n), w, w_stride, y, false, rows_w4, &wa);
}

static void gemv_w8(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                    const void *a) {
    wrow_act wa = wrow_activations(n, a);
    gemv_drive(n_rows, gemv_company(w_stride, (size_t)n), w, w_stride, y, false, rows_w8, &wa);
}

/* cpuid leaf 7 ebx: AVX512F (bit 16), AVX512BW (30), AVX512VL (31); ecx: AVX512_VNNI (11).
 * The OS must save the opmask and ZMM state: xgetbv(0) bits 1, 2 and 5-7. */
static bool cpu_has_avx512_vnni(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || (c & (1u << 27)) == 0) return false; /* OSXSAVE */
    unsigned xcr0_lo, xcr0_hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & 0xE6) != 0xE6) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const unsigned need_b = (1u << 16) | (1u << 30) | (1u << 31);
    return (b & need_b) == need_b && (c & (1u << 11)) != 0;
}

/* The sum of the 16 int32 lanes of v, in int64 (lanes may sum past 2^31). */
static inline int64_t hsum_epi32_wide(__m512i v) {
    return _mm512_reduce_add_epi64(_mm512_add_epi64(
        _mm512_cvtepi32_epi64(_mm512_castsi512_si256(v)),
        _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1))));
}

/* 32 int8 weights widened to int16. */
static inline __m512i widen32(const int8_t *q) {
    return _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)q));
}

/* EL_TILE W8 rows against EL_TILE A16 rows (a prompt): each weight chunk widened once for the
 * tile's activation rows, each activation chunk loaded once for its weight rows. */
static void tile_w8a16(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
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

/* W8A16 rows against one A16 row (a decode step): R rows far apart share each activation load,
 * two chains of vpdpwssd per row; a row's sum is exact, so the same in any company. */
static inline __attribute__((always_inline)) void rows_w8a16(const void *ctx,
                                                             const char *const row[4], float s[4],
                                                             int R) {
    const el_a16_view *a = ctx;
    const int8_t *q[4];
    int64_t sum[4] = {0, 0, 0, 0};
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) q[r] = (const int8_t *)row[r] + sizeof(float);
    for (int64_t i = 0; i < a->n;) {
        int64_t end = el_a16_run_end(i, a->n);
        __m512i acc[4][2];
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
        for (; i + 64 <= end; i += 64) {
            __m512i a0 = _mm512_loadu_si512(a->q + 2 * i);
            __m512i a1 = _mm512_loadu_si512(a->q + 2 * i + 64);
            #pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                acc[r][0] = _mm512_dpwssd_epi32(acc[r][0], widen32(q[r] + i), a0);
                acc[r][1] = _mm512_dpwssd_epi32(acc[r][1], widen32(q[r] + i + 32), a1);
            }
        }
        if (i < end) { /* a last 32 */
            __m512i a0 = _mm512_loadu_si512(a->q + 2 * i);
            #pragma GCC unroll 4
            for (int r = 0; r < R; r++)
                acc[r][0] = _mm512_dpwssd_epi32(acc[r][0], widen32(q[r] + i), a0);
            i += 32;
        }
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            sum[r] += hsum_epi32_wide(acc[r][0]) + hsum_epi32_wide(acc[r][1]);
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = el_w8a16_scale(row[r], a->d, sum[r]);
}

/* W8 . A16: one row of rows_w8a16. */
static void vec_dot_w8a16(int64_t n, float *s, const void *x, const void *y) {
    el_a16_view a = el_a16_view_of(y, n);
    const char *const row[4] = {x};
    rows_w8a16(&a, row, s, 1);
}

static void gemv_w8a16(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a) {
    el_a16_view v = el_a16_view_of(a, n);
    gemv_drive(n_rows, gemv_company(w_stride, (size_t)n * 2), w, w_stride, y, false, rows_w8a16,
               &v);
}

/* AVX-512 VNNI's kernels, on AVX2's: types and entries not named keep AVX2's. */
const el_kernel_level el_level_avx512 = {
    .name = "avx512",
    .base = &el_level_avx2,
    .supported = cpu_has_avx512_vnni,
    .kernels = {
        .isa = "avx512vnni",
        .vec_dot = {[EL_TYPE_Q8_0] = vec_dot_q8_0, [EL_TYPE_Q4_0] = vec_dot_q4_0,
                    [EL_TYPE_W8A16] = vec_dot_w8a16},
        .tile = {[EL_TYPE_Q8_0] = tile_q8_0, [EL_TYPE_Q4_0] = tile_q4_0,
                 [EL_TYPE_W8A16] = tile_w8a16},
        .gemm = {[EL_TYPE_Q4_0] = el_gemm_avx512, [EL_TYPE_Q8_0] = el_gemm_avx512,
                 [EL_TYPE_W4] = el_gemm_avx512, [EL_TYPE_W8] = el_gemm_avx512,
                 [EL_TYPE_W4G32] = el_gemm_avx512, [EL_TYPE_W4G64] = el_gemm_avx512,
                 [EL_TYPE_W4G128] = el_gemm_avx512},
        .gemm_signed = false,
        .attend = el_attend_avx512,
        .gemv = {[EL_TYPE_Q8_0] = gemv_q8_0, [EL_TYPE_Q4_0] = gemv_q4_0,
                 [EL_TYPE_W4G32] = gemv_w4g32, [EL_TYPE_W4G64] = el_gemv_w4g64_avx512,
                 [EL_TYPE_W4G128] = el_gemv_w4g128_avx512, [EL_TYPE_W8] = gemv_w8,
                 [EL_TYPE_W4] = gemv_w4, [EL_TYPE_W8A16] = gemv_w8a16},
        /* W8: AVX2's, whose integer sums and final scaling give this gemv's bits and which
         * is faster here than this gemv row by row; W4: none, AVX2's being slower here than
         * this gemv row by row (docs/kernels.md); W8A16: none. */
        .gemv_multi = {[EL_TYPE_Q8_0] = gemv_q8_0_multi, [EL_TYPE_Q4_0] = gemv_q4_0_multi,
                       [EL_TYPE_W4G32] = gemv_w4g32_multi,
                       [EL_TYPE_W4G64] = el_gemv_w4g64_multi_avx512,
                       [EL_TYPE_W4G128] = el_gemv_w4g128_multi_avx512,
                       [EL_TYPE_W8] = el_gemv_w8_multi_avx2},
    },
};

#else

const el_kernel_level el_level_avx512 = {.name = "avx512"}; /* not built in */

#endif
