/* gemv_few_avx512.c - AVX-512 VNNI few-row gemvs (el_gemv_few: 2..EL_GEMV_FEW_MAX activation
 * rows, each output with the bits of the type's gemv) for q4_0, w4g32 (q4_0's bytes against A8
 * rows) and w4.
 *
 * The weights go by panels of 16 consecutive rows. Each 32-element chunk of the panel is
 * transposed once into 8 registers (register j: elements 4j..4j+3 of every row, unsigned
 * nibbles) and then serves every activation row: 8 vpdpbusd with the activation's 4 bytes
 * broadcast give one lane per weight row, with no horizontal sums, so the unpacking is paid
 * once for up to 16 rows instead of once per row (the one-row gemvs' cost per byte). The next
 * panel is asked for while the products run.
 *
 * Same bits as the gemvs: integer sums are exact in any order, so only the float steps must be
 * the gemv's. w4's gemv scales one whole-row integer sum, which this does too. The q4_0 gemv
 * keeps 8 float lanes per row, lane l taking block L2B[l] of every 8 (a multiply-add of the
 * block's integer sum by weight scale times activation scale), and adds its lanes in a fixed
 * tree; here 8 float accumulators per activation row (one per block position, 16 weight rows
 * each) take the same multiply-adds in the same order and the same tree. Lengths the q4_0 gemv
 * handles otherwise (not whole pairs of groups of 4 blocks, or past its slice) and the rows
 * past the last whole panel go through the gemv itself. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include <immintrin.h>
#include <string.h>

#include "kernels/avx512_simd.h"
#include "kernels/blocks.h"
#include "kernels/edge.h"
#include "kernels/transpose_avx2.h"

enum {
    PANEL = 16,            /* weight rows per panel: one 512-bit lane each */
    Q4_0_PAIR = 256,       /* elements of the q4_0 gemv's step (two groups of 4 blocks) */
    Q4_0_MAX_N = 16384,    /* the q4_0 gemv's slice (gemv_avx512.c): longer rows are summed
                            * slice by slice there, so they go through it */
    Q4_0_BLOCKS = Q4_0_MAX_N / EL_QK4_0,
    ACT_AHEAD = 4, /* blocks ahead in each activation row that a panel asks for */
    PF_PANELS = 1,
};

/* The 16 bytes at p + o * rb of 16 rows o as 4 registers: register c holds dword c of rows
 * 0..15 (two 8-row in-lane transposes joined: on Zen 4 a 512-bit cross-lane permute costs
 * several in-lane 256-bit shuffles). */
static inline __attribute__((always_inline)) void rows16_dwords(const char *p, size_t rb, __m512i out[4]) {
    __m256i lo[4], hi[4];
    const char *p8 = p + 8 * rb;
    el_transpose8x4_avx2(el_rows2_avx2(p, p + 4 * rb), el_rows2_avx2(p + rb, p + 5 * rb),
                         el_rows2_avx2(p + 2 * rb, p + 6 * rb),
                         el_rows2_avx2(p + 3 * rb, p + 7 * rb), lo);
    el_transpose8x4_avx2(el_rows2_avx2(p8, p8 + 4 * rb), el_rows2_avx2(p8 + rb, p8 + 5 * rb),
                         el_rows2_avx2(p8 + 2 * rb, p8 + 6 * rb),
                         el_rows2_avx2(p8 + 3 * rb, p8 + 7 * rb), hi);
    #pragma GCC unroll 4
    for (int c = 0; c < 4; c++)
        out[c] = _mm512_inserti64x4(_mm512_castsi256_si512(lo[c]), hi[c], 1);
}

/* The chunk of 16 nibble bytes at p + o * rb of the 16 rows as 8 registers: register j holds
 * the nibbles of elements 4j..4j+3 of every row (low nibbles are elements 0-15). */
static inline void chunk16_nibbles(const char *p, size_t rb, __m512i q[8]) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    __m512i t[4];
    rows16_dwords(p, rb, t);
    #pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        q[j] = _mm512_and_si512(t[j], low4);
        q[4 + j] = _mm512_and_si512(_mm512_srli_epi16(t[j], 4), low4);
    }
}

/* acc + dpbusd(q, the 4 bytes at p broadcast), the broadcast embedded in the instruction (gcc
 * emits a separate broadcast for the intrinsics, a vector slot per product). */
static inline __m512i dpbusd_bcast(__m512i acc, __m512i q, const int8_t *p) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(q), "m"(*(const int32_t *)p));
    return acc;
}

/* acc + the dots of one chunk's 8 registers with the 32 activation quants at x, in two chains
 * of 4 (one of 8 dependent vpdpbusd per activation row kept too many waiting). */
static inline __m512i chunk_dot(__m512i acc, const __m512i q[8], const int8_t *x) {
    __m512i odd = _mm512_setzero_si512();
    #pragma GCC unroll 4
    for (int j = 0; j < 8; j += 2) {
        acc = dpbusd_bcast(acc, q[j], x + 4 * j);
        odd = dpbusd_bcast(odd, q[j + 1], x + 4 * j + 4);
    }
    return _mm512_add_epi32(acc, odd);
}

/* Asks for the share [from, from + bytes) of the next panel. */
static inline void prefetch_share(const char *next, size_t from, size_t bytes) {
    for (size_t b = from; b < from + bytes; b += 64) _mm_prefetch(next + b, _MM_HINT_T0);
}

/* ---- q4_0 (and w4g32): the activations of each row as quants per block with, per block, the
 * activation scale and -8 times the quants' sum (the nibbles' offset), prepared once a call. */
typedef struct q4_0_acts {
    const int8_t *q[EL_GEMV_FEW_MAX]; /* block b's 32 quants at q[k] + b * step */
    size_t step;
    struct {
        float d;
        int32_t comp;
    } s[Q4_0_BLOCKS][EL_GEMV_FEW_MAX]; /* block b of row k: its scale and -8 x its sum */
} q4_0_acts;

/* -8 times the sum of the 32 quants at x. */
static inline int32_t q4_0_offset(const int8_t *x) {
    __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(8),
                                    _mm256_loadu_si256((const __m256i *)x));
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(1, 0, 3, 2)));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(2, 3, 0, 1)));
    return -_mm_cvtsi128_si32(h);
}

/* n_act rows of q8_0 blocks (a8: of A8 rows) a_stride bytes apart. */
static void prepare_q4_0(q4_0_acts *pa, int64_t nb, int n_act, const char *a, size_t a_stride,
                         bool a8) {
    pa->step = a8 ? EL_QK4_0 : sizeof(el_block_q8_0);
    for (int k = 0; k < n_act; k++) {
        const char *ak = a + (size_t)k * a_stride;
        el_a8_header h = {0};
        if (a8) memcpy(&h, ak, sizeof h);
        pa->q[k] = a8 ? (const int8_t *)ak + sizeof h : ((const el_block_q8_0 *)ak)->qs;
        for (int64_t b = 0; b < nb; b++) {
            pa->s[b][k].d = a8 ? h.d : fp16(((const el_block_q8_0 *)ak)[b].d);
            pa->s[b][k].comp = q4_0_offset(pa->q[k] + b * pa->step);
        }
    }
}

/* The fp16 scales of block b of the 16 rows at p, rb bytes apart, as floats. */
static inline __m512 q4_0_scales16(const char *p, size_t rb, int64_t b) {
    uint16_t h[PANEL];
    #pragma GCC unroll 16
    for (int o = 0; o < PANEL; o++) memcpy(&h[o], p + o * rb + b * sizeof(el_block_q4_0), 2);
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)h));
}

/* The 4 activation bytes at p in every lane (one broadcast serves P panels' products). */
static inline __m512i broadcast4(const int8_t *p) {
    __m512i v;
    __asm__("vpbroadcastd %1, %0" : "=v"(v) : "m"(*(const int32_t *)p));
    return v;
}

/* P (1 or 2, a constant after inlining) full panels from p, 16 rows after 16 rows, against the
 * n_act prepared rows: y[k * ldy + o] for o < 16 P. Each activation broadcast serves the P
 * panels (on Zen 4 the broadcasts, embedded or not, cost as much as a product each). */
static inline __attribute__((always_inline)) void panels_q4_0(const char *p, size_t rb, int64_t nb,
                                                              const q4_0_acts *pa, int n_act,
                                                              float *y, int64_t ldy, const int P) {
    /* f[k][j][i]: activation row k, blocks j mod 8 (the gemv's lane L2B^-1[j]), panel i */
    __m512 f[EL_GEMV_FEW_MAX][8][2];
    for (int k = 0; k < n_act; k++)
        for (int j = 0; j < 8; j++)
            for (int i = 0; i < P; i++) f[k][j][i] = _mm512_setzero_ps();
    const char *next = p + PF_PANELS * P * PANEL * rb;
    const size_t share = (P * PANEL * rb + (size_t)nb - 1) / (size_t)nb;
    for (int64_t b = 0; b < nb; b++) {
        prefetch_share(next, (size_t)b * share, share);
        __m512i q[2][8];
        __m512 dw[2];
        #pragma GCC unroll 2
        for (int i = 0; i < P; i++) {
            const char *pi = p + i * PANEL * rb;
            chunk16_nibbles(pi + b * sizeof(el_block_q4_0) + sizeof(uint16_t), rb, q[i]);
            dw[i] = q4_0_scales16(pi, rb, b);
        }
        const int j = (int)(b % 8);
        for (int k = 0; k < n_act; k++) {
            const int8_t *x = pa->q[k] + b * pa->step;
            /* 16 rows of activations and the weights' 16 or 32 streams are more than the
             * hardware prefetchers follow: a row's activations fell out of L1 between panels */
            _mm_prefetch((const char *)x + ACT_AHEAD * pa->step, _MM_HINT_T0);
            __m512i s[2][2];
            #pragma GCC unroll 2
            for (int i = 0; i < P; i++) {
                s[i][0] = _mm512_set1_epi32(pa->s[b][k].comp);
                s[i][1] = _mm512_setzero_si512();
            }
            /* two chains of 4 per panel: one of 8 dependent products kept too many waiting */
            #pragma GCC unroll 8
            for (int e = 0; e < 8; e++) {
                __m512i a4 = broadcast4(x + 4 * e);
                #pragma GCC unroll 2
                for (int i = 0; i < P; i++)
                    s[i][e % 2] = _mm512_dpbusd_epi32(s[i][e % 2], q[i][e], a4);
            }
            const __m512 da = _mm512_set1_ps(pa->s[b][k].d);
            #pragma GCC unroll 2
            for (int i = 0; i < P; i++) {
                __m512i t = _mm512_add_epi32(s[i][0], s[i][1]);
                f[k][j][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_mul_ps(dw[i], da),
                                             f[k][j][i]);
            }
        }
    }
    /* the gemv's tree: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), lane l holding
     * blocks 0 2 4 6 1 3 5 7 of each 8 */
    for (int k = 0; k < n_act; k++)
        #pragma GCC unroll 2
        for (int i = 0; i < P; i++) {
            __m512 (*g)[2] = f[k];
            __m512 s = _mm512_add_ps(_mm512_add_ps(g[0][i], g[1][i]),
                                     _mm512_add_ps(g[4][i], g[5][i]));
            __m512 t = _mm512_add_ps(_mm512_add_ps(g[2][i], g[3][i]),
                                     _mm512_add_ps(g[6][i], g[7][i]));
            _mm512_storeu_ps(y + k * ldy + i * PANEL, _mm512_add_ps(s, t));
        }
}

static void panel_q4_0(const char *p, size_t rb, int64_t nb, const q4_0_acts *pa, int n_act,
                       float *y, int64_t ldy) {
    panels_q4_0(p, rb, nb, pa, n_act, y, ldy, 1);
}

static void panel_pair_q4_0(const char *p, size_t rb, int64_t nb, const q4_0_acts *pa, int n_act,
                            float *y, int64_t ldy) {
    panels_q4_0(p, rb, nb, pa, n_act, y, ldy, 2);
}

static void gemv_few_q4_0_act(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                              const void *w, size_t w_stride, const void *a, size_t a_stride,
                              bool a8) {
    el_gemv_fn gemv = a8 ? el_gemv_w4g32_avx512 : el_gemv_q4_0_avx512;
    int64_t panels = n % Q4_0_PAIR == 0 && n <= Q4_0_MAX_N ? n_rows / PANEL : 0;
    if (panels > 0) {
        q4_0_acts pa; /* 64 KB of stack at most */
        int64_t nb = n / EL_QK4_0;
        prepare_q4_0(&pa, nb, n_act, a, a_stride, a8);
        int64_t i = 0;
        for (; i + 2 <= panels; i += 2)
            panel_pair_q4_0((const char *)w + i * PANEL * w_stride, w_stride, nb, &pa, n_act,
                            y + i * PANEL, ldy);
        if (i < panels)
            panel_q4_0((const char *)w + i * PANEL * w_stride, w_stride, nb, &pa, n_act,
                       y + i * PANEL, ldy);
    }
    int64_t done = panels * PANEL;
    if (done < n_rows)
        for (int k = 0; k < n_act; k++)
            gemv(n, y + k * ldy + done, n_rows - done, (const char *)w + done * w_stride,
                 w_stride, (const char *)a + (size_t)k * a_stride);
}

void el_gemv_few_q4_0_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_few_q4_0_act(n, y, ldy, n_act, n_rows, w, w_stride, a, a_stride, false);
}

void el_gemv_few_w4g32_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                              const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_few_q4_0_act(n, y, ldy, n_act, n_rows, w, w_stride, a, a_stride, true);
}

/* ---- w4: the row's float scale, then n / 2 bytes of nibbles, chunk c's 16 bytes holding its
 * elements 0-15 in the low nibbles and 16-31 in the high ones; against A8 rows (the header,
 * then n quants). Its gemv scales one whole-row integer sum, so there are no blocks to keep
 * apart: each weight row is read as the gemv reads it (two rows far apart, two streams), each
 * 64 bytes unpacked once into two registers that meet the activations as they lie (128-bit
 * lanes [chunk 0 low, chunk 0 high, chunk 1 low, chunk 1 high] and the same for chunks 2-3), so
 * every product takes a full 64-byte load of an activation row (no broadcasts: on Zen 4 each
 * cost as much as a product) and every sum stays in a register to the row's end; then the
 * gemv's scaling: row scale x activation scale x (sum - 8 x activation sum). */
enum { W4_ACT_GROUP = 8 }; /* activation rows per pass: W = 2 rows x 8 sums in registers */

/* The first min(len, 64) bytes at p, the rest zero (masked: nothing past them is read). */
static inline __m512i load_upto64(const void *p, int64_t len) {
    if (len >= 64) return _mm512_loadu_si512(p);
    return _mm512_maskz_loadu_epi8(len > 0 ? (__mmask64)((1ull << len) - 1) : 0, p);
}

/* 64 bytes of w4 nibbles (chunks 0-3 in the 128-bit lanes) as the two registers against
 * activation bytes 0-63 and 64-127 of the step. */
static inline void w4_unpack(__m512i qv, __m512i u[2]) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i shift = _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4);
    u[0] = _mm512_and_si512(
        _mm512_srlv_epi64(_mm512_shuffle_i64x2(qv, qv, _MM_SHUFFLE(1, 1, 0, 0)), shift), low4);
    u[1] = _mm512_and_si512(
        _mm512_srlv_epi64(_mm512_shuffle_i64x2(qv, qv, _MM_SHUFFLE(3, 3, 2, 2)), shift), low4);
}

/* One step of 128 elements at i (the last one masked to end at n) of W weight rows q (their
 * nibbles) against A activation rows x (their quants). */
static inline __attribute__((always_inline)) void w4_step(__m512i acc[2][W4_ACT_GROUP],
                                                          const char *const q[2],
                                                          const int8_t *const x[], int64_t i,
                                                          int64_t n, const int W, const int A) {
    __m512i u[2][2];
    #pragma GCC unroll 2
    for (int w = 0; w < W; w++) w4_unpack(load_upto64(q[w] + i / 2, (n - i) / 2), u[w]);
    #pragma GCC unroll 8
    for (int a = 0; a < A; a++) {
        __m512i y0 = load_upto64(x[a] + i, n - i), y1 = load_upto64(x[a] + i + 64, n - i - 64);
        /* one load for the W rows, not one folded into each product: a 512-bit load per
         * product was what bound this loop */
        __asm__("" : "+v"(y0), "+v"(y1));
        #pragma GCC unroll 2
        for (int w = 0; w < W; w++) {
            acc[w][a] = _mm512_dpbusd_epi32(acc[w][a], u[w][0], y0);
            acc[w][a] = _mm512_dpbusd_epi32(acc[w][a], u[w][1], y1);
        }
    }
}

/* y[a * ldy + w * m] for W weight rows (row[w], w < W, m rows apart in y) and A activation
 * rows from a (a_stride bytes apart). */
static inline __attribute__((always_inline)) void w4_rows(const char *const row[2], int64_t m,
                                                          int64_t n, size_t rb, const char *a,
                                                          size_t a_stride, float *y, int64_t ldy,
                                                          const int W, const int A) {
    __m512i acc[2][W4_ACT_GROUP];
    const char *q[2];
    const int8_t *x[W4_ACT_GROUP];
    #pragma GCC unroll 2
    for (int w = 0; w < W; w++) {
        q[w] = row[w] + sizeof(float);
        #pragma GCC unroll 8
        for (int k = 0; k < A; k++) acc[w][k] = _mm512_setzero_si512();
    }
    #pragma GCC unroll 8
    for (int k = 0; k < A; k++) x[k] = (const int8_t *)(a + (size_t)k * a_stride) + sizeof(el_a8_header);
    int64_t i = 0;
    for (; i + 128 <= n; i += 128) {
        /* the same line of the row after: the hardware prefetchers alone left these streams,
         * read slowly, waiting on DRAM */
        #pragma GCC unroll 2
        for (int w = 0; w < W; w++) _mm_prefetch(q[w] + i / 2 + rb, _MM_HINT_T0);
        w4_step(acc, q, x, i, i + 128, W, A); /* unmasked */
    }
    if (i < n) w4_step(acc, q, x, i, n, W, A);
    #pragma GCC unroll 8
    for (int k = 0; k < A; k++) {
        el_a8_header h;
        memcpy(&h, a + (size_t)k * a_stride, sizeof h);
        #pragma GCC unroll 2
        for (int w = 0; w < W; w++) {
            int32_t dot = _mm512_reduce_add_epi32(acc[w][k]);
            y[k * ldy + w * m] = el_edge_row_scale(row[w]) * h.d * (float)(dot - 8 * h.sum);
        }
    }
}

/* w4_rows with W (1 or 2) and A (1..W4_ACT_GROUP) constants, so the sums stay in registers. */
static void w4_rows_n(const char *const row[2], int64_t m, int64_t n, size_t rb, const char *a,
                      size_t a_stride, float *y, int64_t ldy, int W, int A) {
    if (W == 2) {
        switch (A) {
        case 1: w4_rows(row, m, n, rb, a, a_stride, y, ldy, 2, 1); break;
        case 2: w4_rows(row, m, n, rb, a, a_stride, y, ldy, 2, 2); break;
        case 3: w4_rows(row, m, n, rb, a, a_stride, y, ldy, 2, 3); break;
        case 4: w4_rows(row, m, n, rb, a, a_stride, y, ldy, 2, 4); break;
        case 5: w4_rows(row, m, n, rb, a, a_stride, y, ldy, 2, 5); break;
        case 6: w4_rows(row, m, n, rb, a, a_stride, y, ldy, 2, 6); break;
        case 7: w4_rows(row, m, n, rb, a, a_stride, y, ldy, 2, 7); break;
        default: w4_rows(row, m, n, rb, a, a_stride, y, ldy, 2, 8); break;
        }
        return;
    }
    switch (A) {
    case 1: w4_rows(row, m, n, rb, a, a_stride, y, ldy, 1, 1); break;
    case 2: w4_rows(row, m, n, rb, a, a_stride, y, ldy, 1, 2); break;
    case 3: w4_rows(row, m, n, rb, a, a_stride, y, ldy, 1, 3); break;
    case 4: w4_rows(row, m, n, rb, a, a_stride, y, ldy, 1, 4); break;
    case 5: w4_rows(row, m, n, rb, a, a_stride, y, ldy, 1, 5); break;
    case 6: w4_rows(row, m, n, rb, a, a_stride, y, ldy, 1, 6); break;
    case 7: w4_rows(row, m, n, rb, a, a_stride, y, ldy, 1, 7); break;
    default: w4_rows(row, m, n, rb, a, a_stride, y, ldy, 1, 8); break;
    }
}

/* Rows i and i + n_rows / 2 together (an odd last one alone); for each pair the activation
 * rows in passes of at most W4_ACT_GROUP, as even as can be (the pair's weights come back from
 * L1 for the later passes). */
void el_gemv_few_w4_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                           const void *w, size_t w_stride, const void *a, size_t a_stride) {
    const int64_t m = n_rows / 2;
    const int passes = (n_act + W4_ACT_GROUP - 1) / W4_ACT_GROUP;
    for (int64_t i = 0; i < m + n_rows % 2; i++) {
        int64_t o = i < m ? i : 2 * m;
        int W = i < m ? 2 : 1;
        const char *row[2] = {(const char *)w + o * w_stride, (const char *)w + (o + m) * w_stride};
        for (int p = 0, k0 = 0; p < passes; p++) {
            int A = n_act / passes + (p < n_act % passes);
            w4_rows_n(row, m, n, w_stride, (const char *)a + (size_t)k0 * a_stride, a_stride,
                      y + (int64_t)k0 * ldy + o, ldy, W, A);
            k0 += A;
        }
    }
}

#endif
