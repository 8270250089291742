/* gemv_few_avx512.c - AVX-512 VNNI few-row gemvs (el_gemv_few: 2..EL_GEMV_FEW_MAX activation
 * rows, each output with the bits of the type's gemv) for q4_0, w4g32 (q4_0's bytes against A8
 * rows), w4 and w8.
 *
 * q4_0: the weights go by panels of 16 consecutive rows. Each block of the panel is transposed
 * once into 8 registers (register j: elements 4j..4j+3 of every row, unsigned nibbles) and
 * then serves every activation row: 8 vpdpbusd with the activation's 4 bytes broadcast give
 * one lane per weight row, with no horizontal sums, so the unpacking is paid once for up to 16
 * rows instead of once per row. The next panel is asked for while the products run.
 * Same bits as the gemv: integer sums are exact in any order, so only the float steps must be
 * the gemv's. The q4_0 gemv keeps 8 float lanes per row, lane l taking block L2B[l] of every 8
 * (a multiply-add of the block's integer sum by weight scale times activation scale), and adds
 * its lanes in a fixed tree; here 8 float accumulators per activation row (one per block
 * position, 16 weight rows each) take the same multiply-adds in the same order and the same
 * tree. Lengths the gemv handles otherwise (not whole pairs of groups of 4 blocks) or too long
 * to prepare, and the rows past the last whole panel, go through the gemv itself.
 * w4, w8: see few_per_row. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include <immintrin.h>
#include <string.h>

#include "kernels/avx512_simd.h"
#include "kernels/blocks.h"
#include "kernels/edge.h"
#include "kernels/gemm.h"
#include "kernels/transpose_avx2.h"

enum {
    PANEL = 16,            /* weight rows per panel: one 512-bit lane each */
    Q4_0_PAIR = 256,       /* elements of the q4_0 gemv's step (two groups of 4 blocks) */
    Q4_0_MAX_N = 8192,     /* longest rows prepared (168 KB of stack); longer ones, and those
                            * past the q4_0 gemv's slice (16384, summed slice by slice there),
                            * go through it */
    Q4_0_BLOCKS = Q4_0_MAX_N / EL_QK4_0,
};

/* The 16 bytes at p + o * rb of 16 rows o as 4 registers: register c holds dword c of rows
 * 0..15 (two 8-row in-lane transposes joined: on Zen 4 a 512-bit cross-lane permute costs
 * several in-lane 256-bit shuffles). */
static inline __attribute__((always_inline)) void rows16_dwords(const char *p, size_t rb,
                                                                __m512i out[4]) {
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
static inline __attribute__((always_inline)) void chunk16_nibbles(const char *p, size_t rb,
                                                                  __m512i q[8]) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    __m512i t[4];
    rows16_dwords(p, rb, t);
    #pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        q[j] = _mm512_and_si512(t[j], low4);
        q[4 + j] = _mm512_and_si512(_mm512_srli_epi16(t[j], 4), low4);
    }
}

/* Asks for the share [from, from + bytes) of the next panel. */
static inline void prefetch_share(const char *next, size_t from, size_t bytes) {
    for (size_t b = from; b < from + bytes; b += 64) _mm_prefetch(next + b, _MM_HINT_T0);
}

/* ---- q4_0 (and w4g32): the activations of each row as quants per block with, per block, the
 * activation scale and -8 times the quants' sum (the nibbles' offset), prepared once a call. */
typedef struct q4_0_acts {
    int8_t q[Q4_0_BLOCKS][EL_GEMV_FEW_MAX][EL_QK4_0]; /* block b of row k: its quants, */
    struct {
        float d;       /* its scale */
        int32_t comp;  /* and -8 x its sum */
    } s[Q4_0_BLOCKS][EL_GEMV_FEW_MAX];
} q4_0_acts; /* copied block by block so that one pointer (and constant offsets) reaches every
              * row's block: with a pointer per row the loop ran out of registers */

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
    const size_t step = a8 ? EL_QK4_0 : sizeof(el_block_q8_0);
    for (int k = 0; k < n_act; k++) {
        const char *ak = a + (size_t)k * a_stride;
        el_a8_header h = {0};
        if (a8) memcpy(&h, ak, sizeof h);
        const int8_t *q = a8 ? (const int8_t *)ak + sizeof h : ((const el_block_q8_0 *)ak)->qs;
        for (int64_t b = 0; b < nb; b++) {
            memcpy(pa->q[b][k], q + b * step, EL_QK4_0);
            pa->s[b][k].d = a8 ? h.d : fp16(((const el_block_q8_0 *)ak)[b].d);
            pa->s[b][k].comp = q4_0_offset(pa->q[b][k]);
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

/* P (1 or 2, a constant after inlining) full panels from p, 16 rows after 16 rows, against all
 * n_act prepared rows at once, block after block, the 8 float accumulators of each activation
 * row and panel in memory (faster than keeping one per row in registers and taking the blocks
 * lane by lane, or than passes of 8 rows, each transposing the panel again). Each activation
 * broadcast serves the P panels (on Zen 4 a broadcast, embedded or not, cost about as much as
 * a product). */
static inline __attribute__((always_inline)) void panels_q4_0(const char *p, size_t rb, int64_t nb,
                                                              const q4_0_acts *pa, int n_act,
                                                              float *y, int64_t ldy, const int P) {
    /* f[k][j][i]: activation row k, blocks j mod 8 (the gemv's lane L2B^-1[j]), panel i */
    __m512 f[EL_GEMV_FEW_MAX][8][2];
    for (int k = 0; k < n_act; k++)
        for (int j = 0; j < 8; j++)
            for (int i = 0; i < P; i++) f[k][j][i] = _mm512_setzero_ps();
    const char *next = p + P * PANEL * rb;
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
            const int8_t *x = pa->q[b][k];
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

static void panel_q4_0(const char *p, size_t rb, int64_t nb, const q4_0_acts *pa,
                            int n_act, float *y, int64_t ldy) {
    panels_q4_0(p, rb, nb, pa, n_act, y, ldy, 1);
}

static void panel_pair_q4_0(const char *p, size_t rb, int64_t nb, const q4_0_acts *pa,
                                 int n_act, float *y, int64_t ldy) {
    panels_q4_0(p, rb, nb, pa, n_act, y, ldy, 2);
}

static void gemv_few_q4_0_act(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                              const void *w, size_t w_stride, const void *a, size_t a_stride,
                              bool a8) {
    el_gemv_fn gemv = a8 ? el_gemv_w4g32_avx512 : el_gemv_q4_0_avx512;
    int64_t panels = n % Q4_0_PAIR == 0 && n <= Q4_0_MAX_N ? n_rows / PANEL : 0;
    if (panels > 0) {
        q4_0_acts pa;
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

/* ---- w4 and w8 (one scale per row, against A8 rows): their gemvs scale one whole-row integer
 * sum, (row scale x activation scale) x (sum - offset x activation sum), and so does the packed
 * gemm's register path (gemm_avx512.c: each 32-element chunk of a panel of 16 rows transposed
 * in registers for up to 8 activation rows, a second pass from cache for more), whose integer
 * sums start at the offset term: the same bits. So full panels go through it (measured faster
 * there than the one-row layout with 2-4 rows far apart and full activation loads: in cache as
 * fast, from DRAM 0.55-0.75 as fast), the rows past them and products of 2 or 3 rows (where
 * the gemv row after row over blocks the later rows find in L2 was faster: docs/kernels.md)
 * through the gemv. */
enum {
    FEW_PANEL_MIN = 4,               /* activation rows from which full panels take the gemm */
    FEW_REUSE_BYTES = 256 << 10,     /* a block of rows each activation row reads in turn */
};

static void few_per_row(el_type type, el_gemv_fn gemv, int64_t n, float *y, int64_t ldy,
                        int n_act, int64_t n_rows, const void *w, size_t w_stride, const void *a,
                        size_t a_stride) {
    int64_t done = 0;
    if (n_act >= FEW_PANEL_MIN && n_rows >= PANEL) {
        el_weight view = el_weight_view(type, w, n, n_rows);
        view.row_bytes = w_stride;
        el_gemm_aux aux[EL_GEMV_FEW_MAX];
        for (int k = 0; k < n_act; k++)
            el_gemm_aux_row(&view, false, (const char *)a + (size_t)k * a_stride, &aux[k]);
        /* full panels never touch the panel buffer for per-row types */
        for (; done + PANEL <= n_rows; done += PANEL)
            el_gemm_avx512(&view, done, PANEL, a, a_stride, aux, n_act, y, ldy, NULL);
    }
    int64_t step = (int64_t)(FEW_REUSE_BYTES / w_stride);
    if (step < 1) step = 1;
    for (int64_t o0 = done; o0 < n_rows; o0 += step) {
        int64_t rows = n_rows - o0 < step ? n_rows - o0 : step;
        for (int k = 0; k < n_act; k++)
            gemv(n, y + k * ldy + o0, rows, (const char *)w + o0 * w_stride, w_stride,
                 (const char *)a + (size_t)k * a_stride);
    }
}

void el_gemv_few_w4_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                           const void *w, size_t w_stride, const void *a, size_t a_stride) {
    few_per_row(EL_TYPE_W4, el_gemv_w4_avx512, n, y, ldy, n_act, n_rows, w, w_stride, a,
                a_stride);
}

void el_gemv_few_w8_avx512(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                           const void *w, size_t w_stride, const void *a, size_t a_stride) {
    few_per_row(EL_TYPE_W8, el_gemv_w8_avx512, n, y, ldy, n_act, n_rows, w, w_stride, a,
                a_stride);
}

#endif
