/* gemm_q6_k_avx2.c - the packed product of gemm.h for Q6_K with AVX2 and no VNNI (against Q8_K
 * activation rows): the prompt's path where it took the 4x4 tile.
 *
 * A panel of 16 weight rows is packed as gemm_avx2.c packs int4 (two registers a step of 4
 * elements: rows 0-7, rows 8-15, one byte an element), each 32-element chunk unpacked first into
 * bytes u = q (0..63; the level is q - 32). vpmaddubsw's pairs then reach 2 * 63 * 128, so two
 * steps fill an int16 lane, and the widening vpmaddwd takes the sub-block's scale instead of
 * ones: a chunk's two sub-blocks of 16 (steps 0-3, 4-7) are scaled as integers, each row's
 * scale in its own lanes, and a super-block sums exactly in int32 (at most 256 * 128 * 63 * 128
 * plus the offset). The offset -32 * sc * (sum of the sub-block's activations) is one more
 * vpmaddwd a chunk: the rows' pairs (-32 sc_A, -32 sc_B) against Q8_K's two sums of 16, which
 * the activation block keeps (bsums). A super-block's sum takes d times the activation's d in
 * float, once. Every output's integer sums are exact and scaled in block order, so its value
 * depends only on its rows, not on the panel or the rows beside it. */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>
#include <string.h>

#include "kernels/avx2_simd.h"
#include "kernels/blocks.h"
#include "kernels/gemm.h"
#include "kernels/transpose_avx2.h"

enum {
    LANES = 8,                   /* rows per register */
    ROWS = EL_GEMM_PANEL,             /* 16 rows a panel, two registers a step */
    STEPS = EL_GEMM_CHUNK / 4,        /* steps of 4 elements a chunk */
    CHUNKS = EL_QK_K / EL_GEMM_CHUNK, /* chunks a super-block */
    TILE_ROWS = 4,                    /* activation rows a pass over the panel */
};

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

/* The packed panel: for every chunk, 2 * STEPS registers of quants, then for every chunk 2
 * registers of the rows' scale pairs (int16 sc of the chunk's first sub-block, then its
 * second's; rows 0-7, rows 8-15), then every super-block's d of the 16 rows as floats. */
typedef struct panel_q6 {
    __m256i *q, *sc;
    float *d;
} panel_q6;

static panel_q6 panel_parts(const el_weight *w, void *panel) {
    int64_t chunks = w->k_in / EL_GEMM_CHUNK;
    __m256i *q = panel;
    return (panel_q6){q, q + chunks * 2 * STEPS, (float *)(q + chunks * 2 * STEPS + chunks * 2)};
}

/* The rows of the panel at o0 (n of them; rows past n repeat the last) into p. */
static void pack_panel(const el_weight *w, int64_t o0, int64_t n, const panel_q6 *p) {
    const el_block_q6_k *rows[ROWS];
    for (int o = 0; o < ROWS; o++)
        rows[o] = (const el_block_q6_k *)((const char *)w->data +
                                           (o0 + (o < n ? o : n - 1)) * w->row_bytes);
    _Alignas(32) char bytes[ROWS][EL_GEMM_CHUNK];
    const char *byte_rows[ROWS];
    for (int o = 0; o < ROWS; o++) byte_rows[o] = bytes[o];
    for (int64_t i = 0; i < w->k_in / EL_QK_K; i++) {
        for (int o = 0; o < ROWS; o++) p->d[i * ROWS + o] = _cvtsh_ss(rows[o][i].d);
        for (int c = 0; c < CHUNKS; c++) {
            int64_t chunk = i * CHUNKS + c;
            for (int o = 0; o < ROWS; o++)
                _mm256_store_si256((__m256i *)bytes[o], unpack_chunk(&rows[o][i], c));
            el_pack_bytes16_avx2(byte_rows, p->q + chunk * 2 * STEPS);
            for (int k = 0; k < 2; k++) {
                int32_t pairs[LANES];
                for (int o = 0; o < LANES; o++) {
                    const int8_t *sc = rows[LANES * k + o][i].scales + 2 * c;
                    pairs[o] = (int32_t)((uint32_t)(uint16_t)sc[0] |
                                         (uint32_t)(uint16_t)sc[1] << 16);
                }
                _mm256_store_si256(p->sc + chunk * 2 + k,
                                   _mm256_loadu_si256((const __m256i *)pairs));
            }
        }
    }
}

/* n activation rows from r0 (n a constant after inlining) against the packed panel. */
static inline __attribute__((always_inline)) void tile(const el_weight *w, const panel_q6 *p,
                                                       const char *act, size_t act_stride,
                                                       int64_t r0, const int n, float *y,
                                                       int64_t ldy, const __m256i store[2]) {
    /* the int16 scale of a pair's first (second) sub-block in both int16 lanes of a row */
    const __m256i dup_a = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13,
                                           0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13);
    const __m256i dup_b = _mm256_setr_epi8(2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15,
                                           2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15);
    __m256 f[2][TILE_ROWS];
    const el_block_q8_k *a[TILE_ROWS];
    #pragma GCC unroll 4
    for (int r = 0; r < n; r++) {
        f[0][r] = f[1][r] = _mm256_setzero_ps();
        a[r] = (const el_block_q8_k *)(act + (size_t)(r0 + r) * act_stride);
    }
    for (int64_t i = 0; i < w->k_in / EL_QK_K; i++) {
        /* one half of the panel at a time through the super-block: the accumulators of both
         * would not fit the 16 registers beside a step's */
        #pragma GCC unroll 2
        for (int k = 0; k < 2; k++) {
            __m256i acc[TILE_ROWS];
            #pragma GCC unroll 4
            for (int r = 0; r < n; r++) acc[r] = _mm256_setzero_si256();
            for (int c = 0; c < CHUNKS; c++) {
                int64_t chunk = i * CHUNKS + c;
                const __m256i *q = p->q + chunk * 2 * STEPS + k;
                __m256i pairs = _mm256_load_si256(p->sc + chunk * 2 + k);
                /* the offset: -32 (sc_A S_A + sc_B S_B), Q8_K's sums of the two sub-blocks */
                __m256i off =
                    _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(pairs, 5));
                #pragma GCC unroll 4
                for (int r = 0; r < n; r++)
                    acc[r] = _mm256_add_epi32(
                        acc[r], _mm256_madd_epi16(off, broadcast_i32(a[r][i].bsums + 2 * c)));
                #pragma GCC unroll 4
                for (int s = 0; s < STEPS; s += 2) {
                    __m256i scale = _mm256_shuffle_epi8(pairs, s < STEPS / 2 ? dup_a : dup_b);
                    __m256i w0 = _mm256_load_si256(q + 2 * s);
                    __m256i w1 = _mm256_load_si256(q + 2 * (s + 1));
                    #pragma GCC unroll 4
                    for (int r = 0; r < n; r++) {
                        const int8_t *qs = a[r][i].qs + EL_GEMM_CHUNK * c + 4 * s;
                        __m256i sum = _mm256_add_epi16(maddubs_broadcast(w0, qs),
                                                       maddubs_broadcast(w1, qs + 4));
                        acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(sum, scale));
                    }
                }
            }
            __m256 dw = _mm256_loadu_ps(p->d + i * ROWS + LANES * k);
            #pragma GCC unroll 4
            for (int r = 0; r < n; r++)
                f[k][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r]),
                                          _mm256_mul_ps(dw, _mm256_set1_ps(a[r][i].d)), f[k][r]);
        }
    }
    #pragma GCC unroll 2
    for (int k = 0; k < 2; k++) {
        #pragma GCC unroll 4
        for (int r = 0; r < n; r++)
            _mm256_maskstore_ps(y + (r0 + r) * ldy + k * LANES, store[k], f[k][r]);
    }
}

void el_gemm_q6_k_avx2(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                       size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y,
                       int64_t ldy, void *panel) {
    (void)aux; /* the offset comes from Q8_K's own sums, scaled per row */
    panel_q6 p = panel_parts(w, panel);
    pack_panel(w, o0, n_out, &p);
    const __m256i store[2] = {lanes_below(n_out), lanes_below(n_out - LANES)};
    float *yo = y + o0;
    int64_t r = 0;
    for (; r + TILE_ROWS <= n_rows; r += TILE_ROWS)
        tile(w, &p, act, act_stride, r, 4, yo, ldy, store);
    switch (n_rows - r) {
    case 3: tile(w, &p, act, act_stride, r, 3, yo, ldy, store); break;
    case 2: tile(w, &p, act, act_stride, r, 2, yo, ldy, store); break;
    case 1: tile(w, &p, act, act_stride, r, 1, yo, ldy, store); break;
    default: break;
    }
}

#endif
