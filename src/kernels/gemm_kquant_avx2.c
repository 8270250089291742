/* gemm_kquant_avx2.c - the packed products of gemm.h for Q4_K, Q5_K and Q6_K with AVX2 and no
 * VNNI (against Q8_K activation rows).
 *
 * A panel of 16 weight rows is packed as gemm_avx2.c packs int4 (two registers a step of 4
 * elements: rows 0-7, rows 8-15, one unsigned level a byte): Q4_K's 16 bytes at 32c of a
 * block's qs transposed once give sub-block 2c in their low nibbles and 2c + 1 in their high
 * ones; Q5_K's sub-blocks are first unpacked into bytes (nibble, fifth bit as 16), Q6_K's
 * chunks into bytes q (0..63; the level is q - 32).
 *
 * The sub-block scales are integers (6-bit sc and m for Q4_K and Q5_K, 8-bit signed for Q6_K),
 * so the widening vpmaddwd takes each row's scale (in its own int16 lanes) instead of ones and a
 * super-block sums exactly in int32, taking d times the activation's d in float once:
 * - Q4_K, Q5_K: a chunk is a sub-block of 32 (scale d * sc, min dmin * m). Q4_K's int16 sums of
 *   a chunk's 8 steps are exact (8 * 2 * 15 * 128); Q5_K's levels reach 31, so its sums are
 *   widened every 4 steps. A super-block's sc-weighted sum is at most 8 * 63 * 32 * 31 * 128,
 *   and its sum of m * (sub-block activation sum) is one vpmaddwd per pair of sub-blocks
 *   against Q8_K's sums of 16, which takes dmin times the activation's d.
 * - Q6_K: a chunk holds two sub-blocks of 16 (steps 0-3, 4-7); vpmaddubsw's pairs reach
 *   2 * 63 * 128, so two steps fill an int16 lane and are widened by that sub-block's scale. The
 *   offset -32 * sc * (sum of the sub-block's activations) is one more vpmaddwd a chunk: the
 *   rows' pairs (-32 sc_A, -32 sc_B) against Q8_K's two sums of 16.
 * Per sub-block in float, as the tiles do, the conversions and scale products were most of the
 * work (docs/kernels.md). Every output's integer sums are exact and scaled in block order, so
 * its value depends only on its rows, not on the panel or the rows beside it. */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>
#include <stddef.h>

#include "kernels/avx2_simd.h"
#include "kernels/blocks.h"
#include "kernels/gemm.h"
#include "kernels/transpose_avx2.h"

enum {
    LANES = 8,                        /* rows per register */
    ROWS = EL_GEMM_PANEL,             /* 16 rows a panel, two registers a step */
    STEPS = EL_GEMM_CHUNK / 4,        /* steps of 4 elements a chunk */
    CHUNKS = EL_QK_K / EL_GEMM_CHUNK, /* chunks (sub-blocks) a super-block */
    TILE_ROWS = 4,                    /* activation rows a pass over the panel */
};

/* The packed panel: for every chunk 2 * STEPS registers of levels, then for every chunk two
 * registers of the rows' scales (rows 0-7, rows 8-15; a row's two int16 lanes hold Q4_K's and
 * Q5_K's sc twice, Q6_K's sc of the chunk's first and second sub-block), then per super-block
 * the 16 rows' d as floats; for Q4_K and Q5_K then per super-block their dmin, and 8 registers
 * of min pairs (pair p of rows 8k..: m of sub-blocks 2p, 2p + 1 in a row's two int16 lanes, at
 * 2p + k). */
typedef struct panel_k {
    __m256i *q, *sc, *mins;
    float *d, *dmin;
} panel_k;

static panel_k panel_parts(const el_weight *w, void *panel) {
    int64_t chunks = w->k_in / EL_GEMM_CHUNK, blocks = w->k_in / EL_QK_K;
    __m256i *q = panel, *sc = q + chunks * 2 * STEPS;
    float *d = (float *)(sc + chunks * 2), *dmin = d + blocks * ROWS;
    if (w->type == EL_TYPE_Q6_K) return (panel_k){q, sc, NULL, d, NULL};
    return (panel_k){q, sc, (__m256i *)(dmin + blocks * ROWS), d, dmin};
}

/* Sub-block j of the Q5_K block b as 32 bytes in element order. */
static inline __m256i unpack_q5_k(const el_block_q5_k *b, int j) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), bit0 = _mm256_set1_epi8(1);
    __m256i q = _mm256_loadu_si256((const __m256i *)(b->qs + 32 * (j / 2)));
    __m256i nib = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(q, 4) : q, low4);
    __m256i h = _mm256_loadu_si256((const __m256i *)b->qh);
    __m256i fifth = _mm256_and_si256(_mm256_srl_epi16(h, _mm_cvtsi32_si128(j)), bit0);
    return _mm256_or_si256(nib, _mm256_slli_epi16(fifth, 4));
}

/* Chunk c (0..7) of the Q6_K block b as 32 bytes q in element order: its half h = c / 4 and
 * quarter c % 4 (see el_block_q6_k): the low or high nibbles of ql's 32 bytes at 64 h + 32
 * (quarter & 1), and bits 2 quarter, 2 quarter + 1 of qh's 32 bytes at 32 h. */
static inline __m256i unpack_chunk(const el_block_q6_k *b, int c) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), top2 = _mm256_set1_epi8(0x30);
    int h = c / 4, quarter = c % 4;
    __m256i ql = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h + 32 * (quarter & 1)));
    __m256i qh = _mm256_loadu_si256((const __m256i *)(b->qh + 32 * h));
    __m256i lo = _mm256_and_si256(quarter >> 1 ? _mm256_srli_epi16(ql, 4) : ql, low4);
    /* bits 2 quarter, 2 quarter + 1 of each byte to bits 4, 5 (what the 16-bit shifts bring in
     * from the other byte of a lane lands outside them) */
    __m256i hi = quarter < 2 ? _mm256_sll_epi16(qh, _mm_cvtsi32_si128(4 - 2 * quarter))
                             : _mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * quarter - 4));
    hi = _mm256_and_si256(hi, top2);
    return _mm256_or_si256(lo, hi);
}

/* Block i's levels of the 16 rows (bb bytes a block) into q, its 8 chunks: Q4_K's nibbles
 * transposed as they are, Q5_K's and Q6_K's chunks unpacked into bytes first. */
static void pack_levels(el_type type, const char *const rows[ROWS], int64_t i, size_t bb,
                        __m256i *q) {
    if (type != EL_TYPE_Q4_K) {
        _Alignas(32) char bytes[ROWS][EL_GEMM_CHUNK];
        const char *byte_rows[ROWS];
        for (int o = 0; o < ROWS; o++) byte_rows[o] = bytes[o];
        for (int j = 0; j < CHUNKS; j++) {
            for (int o = 0; o < ROWS; o++) {
                const char *b = rows[o] + i * bb;
                _mm256_store_si256((__m256i *)bytes[o],
                                   type == EL_TYPE_Q5_K
                                       ? unpack_q5_k((const el_block_q5_k *)b, j)
                                       : unpack_chunk((const el_block_q6_k *)b, j));
            }
            el_pack_bytes16_avx2(byte_rows, q + j * 2 * STEPS);
        }
        return;
    }
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int c = 0; c < CHUNKS / 2; c++) {
        __m256i *lo = q + 2 * c * 2 * STEPS, *hi = lo + 2 * STEPS;
        for (int half = 0; half < 2; half++)
            for (int k = 0; k < 2; k++) {
                __m256i t[4];
                el_transpose_rows8x4_avx2(rows + LANES * k,
                                          i * bb + offsetof(el_block_q4_k, qs) + 32 * c + 16 * half,
                                          t);
                for (int j = 0; j < 4; j++) {
                    _mm256_store_si256(lo + 2 * (4 * half + j) + k, _mm256_and_si256(t[j], low4));
                    _mm256_store_si256(hi + 2 * (4 * half + j) + k,
                                       _mm256_and_si256(_mm256_srli_epi16(t[j], 4), low4));
                }
            }
    }
}

/* The 16 rows' int32 lanes v[j][o] (chunk or min pair j) into registers dst[2j + k] (rows
 * 8k..8k+7). */
static void store_rows(const int32_t v[][ROWS], int count, __m256i *dst) {
    for (int j = 0; j < count; j++)
        for (int k = 0; k < 2; k++)
            _mm256_store_si256(dst + 2 * j + k,
                               _mm256_loadu_si256((const __m256i *)(v[j] + LANES * k)));
}

/* The rows of the panel at o0 (n of them; rows past n repeat the last) into p. */
static void pack_panel(const el_weight *w, int64_t o0, int64_t n, const panel_k *p) {
    const size_t bb = w->type == EL_TYPE_Q4_K   ? sizeof(el_block_q4_k)
                      : w->type == EL_TYPE_Q5_K ? sizeof(el_block_q5_k)
                                                : sizeof(el_block_q6_k);
    const char *rows[ROWS];
    for (int o = 0; o < ROWS; o++)
        rows[o] = (const char *)w->data + (o0 + (o < n ? o : n - 1)) * w->row_bytes;
    for (int64_t i = 0; i < w->k_in / EL_QK_K; i++) {
        int32_t sc[CHUNKS][ROWS], mins[CHUNKS / 2][ROWS];
        for (int o = 0; o < ROWS; o++) {
            const char *b = rows[o] + i * bb;
            if (w->type == EL_TYPE_Q6_K) {
                const el_block_q6_k *x = (const el_block_q6_k *)b;
                p->d[i * ROWS + o] = _cvtsh_ss(x->d);
                for (int j = 0; j < CHUNKS; j++)
                    sc[j][o] = (int32_t)((uint32_t)(uint16_t)x->scales[2 * j] |
                                         (uint32_t)(uint16_t)x->scales[2 * j + 1] << 16);
                continue;
            }
            /* Q5_K starts as Q4_K: d, dmin, the 12 bytes of scales and mins */
            const el_block_q4_k *x = (const el_block_q4_k *)b;
            p->d[i * ROWS + o] = _cvtsh_ss(x->d);
            p->dmin[i * ROWS + o] = _cvtsh_ss(x->dmin);
            int s[CHUNKS], m[CHUNKS];
            for (int j = 0; j < CHUNKS; j++) el_q4_k_scale_min(x->scales, j, &s[j], &m[j]);
            for (int j = 0; j < CHUNKS; j++) sc[j][o] = s[j] | s[j] << 16;
            for (int pr = 0; pr < CHUNKS / 2; pr++) mins[pr][o] = m[2 * pr] | m[2 * pr + 1] << 16;
        }
        store_rows(sc, CHUNKS, p->sc + i * CHUNKS * 2);
        if (p->mins) store_rows(mins, CHUNKS / 2, p->mins + i * CHUNKS);
        pack_levels(w->type, rows, i, bb, p->q + i * CHUNKS * 2 * STEPS);
    }
}

/* acc[r] += chunk c of super-block i of half k of a Q4_K (split false) or Q5_K (split) panel
 * against the n activation rows a[r]: the int16 sums of its steps (all 8, or 4 and 4 for
 * Q5_K) widened by the rows' sc. */
static inline __attribute__((always_inline)) void chunk_q45(__m256i acc[TILE_ROWS],
                                                            const __m256i *q, __m256i sc,
                                                            const el_block_q8_k *const a[],
                                                            int64_t i, int c, const int n,
                                                            const bool split) {
    __m256i s[TILE_ROWS];
    #pragma GCC unroll 8
    for (int st = 0; st < STEPS; st++) {
        __m256i wv = _mm256_load_si256(q + 2 * st);
        #pragma GCC unroll 4
        for (int r = 0; r < n; r++) {
            __m256i prod = maddubs_broadcast(wv, a[r][i].qs + EL_GEMM_CHUNK * c + 4 * st);
            s[r] = st == 0 || (split && st == STEPS / 2) ? prod : _mm256_add_epi16(s[r], prod);
            pin(&s[r]);
        }
        if ((split && st == STEPS / 2 - 1) || st == STEPS - 1) {
            #pragma GCC unroll 4
            for (int r = 0; r < n; r++)
                acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(s[r], sc));
        }
    }
}

/* The same for Q6_K, whose sc pairs hold the chunk's two sub-blocks' scales: its offset term
 * first, then two steps at a time widened by their sub-block's scale. */
static inline __attribute__((always_inline)) void chunk_q6(__m256i acc[TILE_ROWS],
                                                           const __m256i *q, __m256i pairs,
                                                           const el_block_q8_k *const a[],
                                                           int64_t i, int c, const int n) {
    /* the int16 scale of a pair's first (second) sub-block in both int16 lanes of a row */
    const __m256i dup_a = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13,
                                           0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13);
    const __m256i dup_b = _mm256_setr_epi8(2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15,
                                           2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15);
    /* the offset: -32 (sc_A S_A + sc_B S_B), Q8_K's sums of the two sub-blocks */
    __m256i off = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(pairs, 5));
    #pragma GCC unroll 4
    for (int r = 0; r < n; r++)
        acc[r] = _mm256_add_epi32(acc[r],
                                  _mm256_madd_epi16(off, broadcast_i32(a[r][i].bsums + 2 * c)));
    #pragma GCC unroll 4
    for (int s = 0; s < STEPS; s += 2) {
        __m256i scale = _mm256_shuffle_epi8(pairs, s < STEPS / 2 ? dup_a : dup_b);
        __m256i w0 = _mm256_load_si256(q + 2 * s), w1 = _mm256_load_si256(q + 2 * (s + 1));
        #pragma GCC unroll 4
        for (int r = 0; r < n; r++) {
            const int8_t *qs = a[r][i].qs + EL_GEMM_CHUNK * c + 4 * s;
            __m256i sum =
                _mm256_add_epi16(maddubs_broadcast(w0, qs), maddubs_broadcast(w1, qs + 4));
            acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(sum, scale));
        }
    }
}

/* n activation rows from r0 against the packed panel (type and n constants after inlining). */
static inline __attribute__((always_inline)) void tile(el_type type, const el_weight *w,
                                                       const panel_k *p, const char *act,
                                                       size_t act_stride, int64_t r0, const int n,
                                                       float *y, int64_t ldy,
                                                       const __m256i store[2]) {
    __m256 f[2][TILE_ROWS];
    const el_block_q8_k *a[TILE_ROWS];
    #pragma GCC unroll 4
    for (int r = 0; r < n; r++) {
        f[0][r] = f[1][r] = _mm256_setzero_ps();
        a[r] = (const el_block_q8_k *)(act + (size_t)(r0 + r) * act_stride);
    }
    for (int64_t i = 0; i < w->k_in / EL_QK_K; i++) {
        /* one half of the panel at a time through the super-block: the accumulators of both
         * and a chunk's sums would not fit the 16 registers */
        #pragma GCC unroll 2
        for (int k = 0; k < 2; k++) {
            __m256i acc[TILE_ROWS];
            #pragma GCC unroll 4
            for (int r = 0; r < n; r++) acc[r] = _mm256_setzero_si256();
            for (int c = 0; c < CHUNKS; c++) {
                int64_t chunk = i * CHUNKS + c;
                const __m256i *q = p->q + chunk * 2 * STEPS + k;
                __m256i sc = _mm256_load_si256(p->sc + chunk * 2 + k);
                if (type == EL_TYPE_Q6_K)
                    chunk_q6(acc, q, sc, a, i, c, n);
                else
                    chunk_q45(acc, q, sc, a, i, c, n, type == EL_TYPE_Q5_K);
            }
            __m256 dw = _mm256_load_ps(p->d + i * ROWS + LANES * k);
            #pragma GCC unroll 4
            for (int r = 0; r < n; r++) {
                __m256 da = _mm256_set1_ps(a[r][i].d);
                f[k][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r]), _mm256_mul_ps(dw, da),
                                          f[k][r]);
                if (type == EL_TYPE_Q6_K) continue;
                /* the activation's sums of sub-blocks 2p, 2p + 1 in the int16 lanes of dword
                 * {0, 1, 4, 5}[p] (hadd pairs Q8_K's sums of 16 within each 128-bit lane) */
                __m256i bs = _mm256_loadu_si256((const __m256i *)a[r][i].bsums);
                __m256i sums = _mm256_hadd_epi16(bs, bs), m = _mm256_setzero_si256();
                #pragma GCC unroll 4
                for (int pr = 0; pr < CHUNKS / 2; pr++) {
                    __m256i pair = _mm256_permutevar8x32_epi32(
                        sums, _mm256_set1_epi32(pr / 2 * 4 + pr % 2));
                    __m256i mp = _mm256_load_si256(p->mins + i * 8 + 2 * pr + k);
                    m = _mm256_add_epi32(m, _mm256_madd_epi16(mp, pair));
                }
                __m256 dm = _mm256_load_ps(p->dmin + i * ROWS + LANES * k);
                f[k][r] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(m), _mm256_mul_ps(dm, da), f[k][r]);
            }
        }
    }
    #pragma GCC unroll 2
    for (int k = 0; k < 2; k++) {
        #pragma GCC unroll 4
        for (int r = 0; r < n; r++)
            _mm256_maskstore_ps(y + (r0 + r) * ldy + k * LANES, store[k], f[k][r]);
    }
}

/* The tiles of n rows of the weight's type. */
static inline __attribute__((always_inline)) void tile_of(const el_weight *w, const panel_k *p,
                                                          const char *act, size_t act_stride,
                                                          int64_t r0, const int n, float *y,
                                                          int64_t ldy, const __m256i store[2]) {
    if (w->type == EL_TYPE_Q6_K)
        tile(EL_TYPE_Q6_K, w, p, act, act_stride, r0, n, y, ldy, store);
    else if (w->type == EL_TYPE_Q5_K)
        tile(EL_TYPE_Q5_K, w, p, act, act_stride, r0, n, y, ldy, store);
    else
        tile(EL_TYPE_Q4_K, w, p, act, act_stride, r0, n, y, ldy, store);
}

void el_gemm_kquant_avx2(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                         size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y,
                         int64_t ldy, void *panel) {
    (void)aux; /* the mins' and Q6_K's offset's activation sums come from Q8_K's own */
    panel_k p = panel_parts(w, panel);
    pack_panel(w, o0, n_out, &p);
    const __m256i store[2] = {lanes_below(n_out), lanes_below(n_out - LANES)};
    float *yo = y + o0;
    int64_t r = 0;
    for (; r + TILE_ROWS <= n_rows; r += TILE_ROWS)
        tile_of(w, &p, act, act_stride, r, 4, yo, ldy, store);
    switch (n_rows - r) {
    case 3: tile_of(w, &p, act, act_stride, r, 3, yo, ldy, store); break;
    case 2: tile_of(w, &p, act, act_stride, r, 2, yo, ldy, store); break;
    case 1: tile_of(w, &p, act, act_stride, r, 1, yo, ldy, store); break;
    default: break;
    }
}

#endif
