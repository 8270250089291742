/* gemm_kquant_avx512.c - the packed products of gemm.h for Q4_K, Q5_K and Q6_K against Q8_K,
 * with AVX-512 VNNI. A panel of 16 weight rows is unpacked once, block by block, into the
 * unsigned quants of gemm.h's layout ([k/4][16 rows][4 bytes]: Q4_K 0..15, Q5_K 0..31, Q6_K
 * 0..63, its offset of 32 taken off by the aux term), the float scale d * sc of every row and
 * sub-block, and for Q4_K / Q5_K the float min dmin * m. Each sub-block is a scale group: its
 * integer sum takes one vpdpbusd per 4 elements and activation row (16 outputs at once), then
 * one multiply-add by the 16 scales, and one by the 16 mins times the activation's sum over
 * the group (aux); the Q8_K block's scale multiplies the block's float sums once. Every output
 * is computed in that order whatever the rows in its tile, so its bits depend only on its
 * weight row and activation row. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "kernels/blocks.h"
#include "kernels/gemm.h"
#include "kernels/gemm_avx512.h"

enum {
    TILE_ROWS = 8,    /* activation rows per tile: three vectors each stay in registers */
    PREFETCH_BLOCKS = 4, /* blocks ahead in each weight row that packing asks for */
};

/* v shifted left by k bits in each 16-bit lane (right by -k if k < 0), masked to m. */
static inline __m512i shift_mask(__m512i v, int k, char m) {
    v = k >= 0 ? _mm512_slli_epi16(v, (unsigned)k) : _mm512_srli_epi16(v, (unsigned)-k);
    return _mm512_and_si512(v, _mm512_set1_epi8(m));
}

/* (v >> k) & 15 | high, k 0 or 4. */
static inline __m512i nibbles(__m512i v, int k, __m512i high) {
    if (k) v = _mm512_srli_epi16(v, 4);
    return _mm512_ternarylogic_epi32(v, _mm512_set1_epi8(0x0F), high, 0xEA);
}

static size_t block_bytes(el_type t) {
    return t == EL_TYPE_Q4_K ? sizeof(el_block_q4_k)
           : t == EL_TYPE_Q5_K ? sizeof(el_block_q5_k)
                               : sizeof(el_block_q6_k);
}

/* Block i of the 16 Q4_K (q5 false) or Q5_K rows into dst (64 registers, one per 4 elements).
 * A transposed dword of qs holds 4 elements' low nibbles and the 4 elements' 32 further on in
 * its high nibbles; the transposed dwords of qh hold the fifth bits of the same elements. */
static void pack_q4_5(const char *const *rows, bool q5, __m512i *dst) {
    const size_t qs = q5 ? offsetof(el_block_q5_k, qs) : offsetof(el_block_q4_k, qs);
    __m512i qh[2][4];
    if (q5) {
        transpose16x4(rows, offsetof(el_block_q5_k, qh), qh[0]);
        transpose16x4(rows, offsetof(el_block_q5_k, qh) + 16, qh[1]);
    }
    for (int c = 0; c < 4; c++) /* 64 elements: 32 bytes of qs */
        for (int half = 0; half < 2; half++) {
            __m512i t[4];
            transpose16x4(rows, qs + 32 * (size_t)c + 16 * (size_t)half, t);
            for (int j = 0; j < 4; j++) {
                __m512i lo_hi = _mm512_setzero_si512(), hi_hi = _mm512_setzero_si512();
                if (q5) { /* bit 2c of qh to bit 4 for the low nibbles, 2c + 1 for the high */
                    lo_hi = shift_mask(qh[half][j], 4 - 2 * c, 0x10);
                    hi_hi = shift_mask(qh[half][j], 3 - 2 * c, 0x10);
                }
                _mm512_store_si512(dst + 16 * c + 4 * half + j, nibbles(t[j], 0, lo_hi));
                _mm512_store_si512(dst + 16 * c + 8 + 4 * half + j, nibbles(t[j], 4, hi_hi));
            }
        }
}

/* Block i of the 16 Q6_K rows into dst: per half of 128 and 16 of its first 32 positions l,
 * the dwords of ql[l], ql[l + 32] and qh[l] give elements l, l + 32 (low nibbles, qh bits 0-1
 * and 2-3) and l + 64, l + 96 (high nibbles, bits 4-5 and 6-7). */
static void pack_q6(const char *const *rows, __m512i *dst) {
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l += 16) {
            __m512i a[4], b[4], hb[4];
            transpose16x4(rows, offsetof(el_block_q6_k, ql) + 64 * (size_t)h + (size_t)l, a);
            transpose16x4(rows, offsetof(el_block_q6_k, ql) + 64 * (size_t)h + 32 + (size_t)l, b);
            transpose16x4(rows, offsetof(el_block_q6_k, qh) + 32 * (size_t)h + (size_t)l, hb);
            __m512i *d = dst + 32 * h + l / 4;
            for (int j = 0; j < 4; j++) {
                _mm512_store_si512(d + j, nibbles(a[j], 0, shift_mask(hb[j], 4, 0x30)));
                _mm512_store_si512(d + 8 + j, nibbles(b[j], 0, shift_mask(hb[j], 2, 0x30)));
                _mm512_store_si512(d + 16 + j, nibbles(a[j], 4, shift_mask(hb[j], 0, 0x30)));
                _mm512_store_si512(d + 24 + j, nibbles(b[j], 4, shift_mask(hb[j], -2, 0x30)));
            }
        }
}

/* The panel: quants [k_in / 4][16][4] bytes, then the scales [groups][16] as floats, then (Q4_K,
 * Q5_K) the mins likewise. Rows past n_out repeat the last one (their outputs are not stored). */
static void pack_panel(const el_weight *w, int64_t o0, int64_t n_out, void *panel) {
    const el_type t = w->type;
    const size_t bb = block_bytes(t);
    const int64_t nb = w->k_in / EL_QK_K, groups = el_gemm_groups(w), per_block = groups / nb;
    const char *rows[EL_GEMM_PANEL];
    for (int o = 0; o < EL_GEMM_PANEL; o++)
        rows[o] = (const char *)w->data + (o0 + (o < n_out ? o : n_out - 1)) * w->row_bytes;
    __m512i *q = panel;
    float *scales = (float *)((char *)panel + (size_t)w->k_in * EL_GEMM_PANEL);
    float *mins = t == EL_TYPE_Q6_K ? NULL : scales + groups * EL_GEMM_PANEL;
    for (int64_t i = 0; i < nb; i++) {
        const char *blk[EL_GEMM_PANEL];
        for (int o = 0; o < EL_GEMM_PANEL; o++) {
            blk[o] = rows[o] + i * bb;
            for (size_t b = 0; b < bb; b += 64)
                _mm_prefetch(blk[o] + PREFETCH_BLOCKS * bb + b, _MM_HINT_T0);
        }
        if (t == EL_TYPE_Q6_K)
            pack_q6(blk, q + i * 64);
        else
            pack_q4_5(blk, t == EL_TYPE_Q5_K, q + i * 64);
        float *sc = scales + i * per_block * EL_GEMM_PANEL;
        for (int o = 0; o < EL_GEMM_PANEL; o++) {
            if (t == EL_TYPE_Q6_K) {
                const el_block_q6_k *b = (const el_block_q6_k *)blk[o];
                float d = el_fp16_to_fp32(b->d);
                for (int s = 0; s < 16; s++) sc[s * EL_GEMM_PANEL + o] = d * (float)b->scales[s];
                continue;
            }
            const el_block_q4_k *b = (const el_block_q4_k *)blk[o]; /* Q5_K's start alike */
            float d = el_fp16_to_fp32(b->d), dmin = el_fp16_to_fp32(b->dmin);
            uint32_t words[4];
            el_q4_k_scales_mins(b->scales, words);
            float *mn = mins + i * 8 * EL_GEMM_PANEL;
            for (int s = 0; s < 8; s++) { /* byte s % 4 of words[s / 4], mins 2 words on */
                unsigned shift = 8 * (unsigned)(s % 4);
                sc[s * EL_GEMM_PANEL + o] = d * (float)((words[s / 4] >> shift) & 0xFF);
                mn[s * EL_GEMM_PANEL + o] = dmin * (float)((words[2 + s / 4] >> shift) & 0xFF);
            }
        }
    }
}

typedef struct tile_args {
    const __m512i *q;      /* packed quants */
    const float *scales;   /* [groups][16] */
    const float *mins;     /* [groups][16], or NULL */
    int64_t blocks, per_block, dwords; /* Q8_K blocks, groups per block, dwords per group */
    const char *act;       /* activation row 0 (Q8_K blocks) */
    size_t act_stride;
    const el_gemm_aux *aux;
    float *y;
    int64_t ldy;
    __mmask16 store;       /* outputs of the panel that exist */
} tile_args;

/* n activation rows (a constant after inlining) from row r0: per group the integer sums start
 * at the aux offset term and take one vpdpbusd per 4 elements and row, then add into the
 * block's float sums by the 16 scales (and less the 16 mins times the activation's group sum);
 * the block's float sums take the Q8_K scale into the row's. */
static inline __attribute__((always_inline)) void tile(const tile_args *t, int64_t r0,
                                                       const int n) {
    __m512 f[TILE_ROWS];
    const char *a[TILE_ROWS];
    const el_gemm_aux *ax[TILE_ROWS];
    const int64_t groups = t->blocks * t->per_block, group_bytes = 4 * t->dwords;
    #pragma GCC unroll 8
    for (int r = 0; r < n; r++) {
        f[r] = _mm512_setzero_ps();
        a[r] = t->act + (size_t)(r0 + r) * t->act_stride + offsetof(el_block_q8_k, qs);
        ax[r] = t->aux + (r0 + r) * groups;
    }
    const __m512i *q = t->q;
    for (int64_t i = 0; i < t->blocks; i++) {
        __m512 fb[TILE_ROWS];
        #pragma GCC unroll 8
        for (int r = 0; r < n; r++) fb[r] = _mm512_setzero_ps();
        for (int64_t j = 0; j < t->per_block; j++, q += t->dwords) {
            const int64_t g = i * t->per_block + j;
            __m512i acc[TILE_ROWS];
            #pragma GCC unroll 8
            for (int r = 0; r < n; r++) acc[r] = _mm512_set1_epi32(ax[r][g].comp);
            if (n == TILE_ROWS) {
                group8(acc, q, a, t->dwords);
            } else {
                for (int64_t s = 0; s < t->dwords; s++) {
                    __m512i wq = _mm512_load_si512(q + s);
                    #pragma GCC unroll 8
                    for (int r = 0; r < n; r++)
                        acc[r] = _mm512_dpbusd_epi32(acc[r], wq, broadcast_i32(a[r] + 4 * s));
                }
            }
            const __m512 sc = _mm512_load_ps(t->scales + g * EL_GEMM_PANEL);
            #pragma GCC unroll 8
            for (int r = 0; r < n; r++) {
                fb[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r]), sc, fb[r]);
                a[r] += group_bytes;
            }
            if (t->mins) {
                const __m512 mn = _mm512_load_ps(t->mins + g * EL_GEMM_PANEL);
                #pragma GCC unroll 8
                for (int r = 0; r < n; r++)
                    fb[r] = _mm512_fnmadd_ps(mn, _mm512_set1_ps(ax[r][g].s), fb[r]);
            }
        }
        #pragma GCC unroll 8
        for (int r = 0; r < n; r++) {
            f[r] = _mm512_fmadd_ps(fb[r], _mm512_set1_ps(ax[r][i * t->per_block].d), f[r]);
            a[r] += sizeof(el_block_q8_k) - EL_QK_K; /* over the bsums and the next d */
        }
    }
    #pragma GCC unroll 8
    for (int r = 0; r < n; r++) _mm512_mask_storeu_ps(t->y + (r0 + r) * t->ldy, t->store, f[r]);
}

static void tile1(const tile_args *t, int64_t r0) { tile(t, r0, 1); }
static void tile2(const tile_args *t, int64_t r0) { tile(t, r0, 2); }
static void tile3(const tile_args *t, int64_t r0) { tile(t, r0, 3); }
static void tile4(const tile_args *t, int64_t r0) { tile(t, r0, 4); }
static void tile5(const tile_args *t, int64_t r0) { tile(t, r0, 5); }
static void tile6(const tile_args *t, int64_t r0) { tile(t, r0, 6); }
static void tile7(const tile_args *t, int64_t r0) { tile(t, r0, 7); }
static void tile8(const tile_args *t, int64_t r0) { tile(t, r0, 8); }
static void (*const tiles[TILE_ROWS + 1])(const tile_args *, int64_t) = {
    NULL, tile1, tile2, tile3, tile4, tile5, tile6, tile7, tile8};

void el_gemm_kquant_avx512(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                           size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y,
                           int64_t ldy, void *panel) {
    pack_panel(w, o0, n_out, panel);
    const int64_t groups = el_gemm_groups(w), blocks = w->k_in / EL_QK_K;
    const float *scales = (const float *)((const char *)panel + (size_t)w->k_in * EL_GEMM_PANEL);
    tile_args t = {
        .q = panel,
        .scales = scales,
        .mins = w->type == EL_TYPE_Q6_K ? NULL : scales + groups * EL_GEMM_PANEL,
        .blocks = blocks,
        .per_block = groups / blocks,
        .dwords = el_gemm_group_size(w) / 4,
        .act = act,
        .act_stride = act_stride,
        .aux = aux,
        .y = y + o0,
        .ldy = ldy,
        .store = (__mmask16)((1u << n_out) - 1),
    };
    int64_t r = 0;
    for (; r + TILE_ROWS <= n_rows; r += TILE_ROWS) tiles[TILE_ROWS](&t, r);
    if (r < n_rows) tiles[n_rows - r](&t, r);
}

#endif
