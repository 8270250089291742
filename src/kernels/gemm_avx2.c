/* gemm_avx2.c - the packed products of gemm.h with AVX2 and no VNNI: q4_0, q8_0, q5_0, iq4_nl
 * (against q8_0 activations), w4, w8, w4g32/64/128 (against a8 activations) and iq4_xs
 * (against q8_k), for the x86 CPUs without AVX-512 VNNI, which otherwise take the 4x4 tiles of
 * tile_avx2.c and tile_legacy_avx2.c. The K-quants with integer sub-block scales have a file
 * of their own (gemm_kquant_avx2.c).
 *
 * Without vpdpbusd, unsigned weight bytes meet signed activation bytes in vpmaddubsw (pairs of
 * products summed into int16, saturating) and vpmaddwd with ones widens pairs of those to int32.
 * Exactness decides the representation:
 * - int4 weights are their unsigned nibbles u = q + 8 (<= 15): with |a| <= 128 a pair is at most
 *   2 * 15 * 128 = 3840, so the int16 sums of the 8 steps of a 32-element chunk (<= 30720) are
 *   exact and one vpmaddwd per chunk and activation row widens them;
 * - int8 weights as u = q + 128 would overflow (2 * 255 * 127 = 64770), so u is split into two
 *   nibble planes u = 16 hi + lo, each summed like int4 and the hi sum shifted by 4 after
 *   widening. That is twice the multiplies of int4; the sign trick (signed weights, one more
 *   vpsignb per activation row and step, and a vpmaddwd per step since its int16 pairs reach
 *   32258) costs more than the second plane saves (docs/kernels.md, "Figures behind the
 *   kernels' comments"), and would not keep gemm.h's offset (comp = -128 sum a).
 *
 * Each step of 4 elements takes two packed registers and one broadcast of the activation's 4
 * bytes per row: for int4, the 16 weight rows of gemm.h's panel (rows 0-7, rows 8-15); for int8,
 * the two planes of 8 rows, so a panel is done as two sub-panels of 8 rows. A sub-panel is
 * unpacked into the panel buffer as [chunk][step][2 registers][8 rows][4 bytes] and then run
 * against every activation row, TILE_ROWS at a time, each load of packed weights shared by the
 * tile's rows. Per scale group the integer sum starts at the aux term and is scaled in float in
 * group order, as gemm.h requires.
 * For a few activation rows (direct_max_rows) unpacking a sub-panel into memory and reading it
 * back costs more than the products it serves: the direct tiles instead transpose each chunk of
 * the weight rows as pack_chunk does and use it at once (chunk_direct), again for every tile of
 * rows. Their integer sums are the same, scaled the same way, so the bits are the same.
 * el_matmul takes it from 2 activation rows on, as the AVX-512 one: so a row's result never
 * depends on how many rows share its product (test_ubatch), though with int8 weights (twice the
 * multiplies and unpacking) the tiles and gemvs of tile_avx2.c and gemv_avx2.c are still faster
 * at a few rows.
 * Built with -mavx2 -mfma -mf16c on x86 (see Makefile); avx2.c's table names it. */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>
#include <string.h>

#include "kernels/avx2_simd.h"
#include "kernels/blocks.h"
#include "kernels/edge.h"
#include "kernels/gemm.h"
#include "kernels/legacy_x86_simd.h"
#include "kernels/transpose_avx2.h"

enum {
    LANES = 8,                 /* int32 or float lanes of a ymm: rows per packed register */
    TILE_ROWS = 4,             /* activation rows per tile: their int16 sums stay in registers */
    STEPS = EL_GEMM_CHUNK / 4, /* 4-byte steps per chunk, the span of one exact int16 sum */
};

/* Bytes of one chunk's quants in a weight row (el_gemm_layout: a group is its fp16 scale, if it
 * has one, and then its chunks). */
static size_t chunk_bytes(const el_gemm_layout *l) { return l->int8 ? 32 : 16; }

/* Weight rows per sub-panel: 16 int4 rows (two registers per step), 8 int8 rows (two planes). */
static int sub_rows(const el_gemm_layout *l) { return l->int8 ? LANES : 2 * LANES; }

/* The chunk at byte off of the sub-panel's rows as 2 * STEPS registers: dst[2s + k] holds
 * elements 4s..4s+3 of 8 rows, as unsigned nibbles. int4 (elements 0-15 are the low nibbles,
 * 16-31 the high ones): k = 0 rows 0-7, k = 1 rows 8-15. int8 (u = q ^ bias_byte: q + 128 for
 * signed bytes, the bytes themselves with a bias of 0): k = 0 the lo nibbles, k = 1 the hi. */
static void pack_chunk(const el_gemm_layout *l, const char *const *rows, size_t off,
                       char bias_byte, __m256i *dst) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i t[4];
    if (!l->int8) {
        for (int k = 0; k < 2; k++) {
            el_transpose_rows8x4_avx2(rows + LANES * k, off, t);
            for (int j = 0; j < 4; j++) {
                _mm256_store_si256(dst + 2 * j + k, _mm256_and_si256(t[j], low4));
                _mm256_store_si256(dst + 2 * (4 + j) + k,
                                   _mm256_and_si256(_mm256_srli_epi16(t[j], 4), low4));
            }
        }
        return;
    }
    const __m256i bias = _mm256_set1_epi8(bias_byte);
    for (int half = 0; half < 2; half++) { /* bytes 16 half ..: steps 4 half .. 4 half + 3 */
        el_transpose_rows8x4_avx2(rows, off + 16 * (size_t)half, t);
        for (int j = 0; j < 4; j++) {
            __m256i u = _mm256_xor_si256(t[j], bias);
            int s = 4 * half + j;
            _mm256_store_si256(dst + 2 * s, _mm256_and_si256(u, low4));
            _mm256_store_si256(dst + 2 * s + 1, _mm256_and_si256(_mm256_srli_epi16(u, 4), low4));
        }
    }
}

/* The fp16 bits at p, for _mm_setr_epi16 (8 narrow stores and one wide load would stall). */
static inline short fp16_at(const char *p) {
    short h;
    memcpy(&h, p, sizeof h);
    return h;
}

/* Q5_0 and IQ4_NL have their blocks unpacked into bytes first. Q5_0's 5-bit q = level + 16
 * (0..31, so u = q and gemm.h's offset is 16) goes into int4 registers (16 rows, a byte each),
 * its int16 sums widened every 4 steps (a pair reaches 2 * 31 * 128, so 4 steps fit where int4's
 * 8 do: `split`); IQ4_NL's signed levels are packed as int8 quants (u = level + 128 like
 * q8_0's). */
static bool unpacked_type(el_type t) { return t == EL_TYPE_Q5_0 || t == EL_TYPE_IQ4_NL; }

/* The 32 values of the Q5_0 or IQ4_NL block at b, as bytes in element order. */
static inline __m256i unpack_block(el_type t, const char *b) {
    return legacy_block_levels(t == EL_TYPE_Q5_0 ? LEGACY_Q5_0 : LEGACY_IQ4_NL, b,
                               legacy_iq4_table());
}

/* Bytes of the panel buffer before the scales: the quants of 16 int4 rows or 8 int8 rows. */
static size_t scales_offset(const el_weight *w) { return (size_t)w->k_in * EL_GEMM_PANEL; }

/* The weight rows of the sub-panel o0 .. o0 + n - 1 (n <= sub_rows): rows past n repeat the
 * last one (their outputs are not stored). */
static void sub_panel_rows(const el_weight *w, const el_gemm_layout *l, int64_t o0, int64_t n,
                           const char *rows[2 * LANES]) {
    for (int o = 0; o < sub_rows(l); o++)
        rows[o] = (const char *)w->data + (o0 + (o < n ? o : n - 1)) * w->row_bytes;
}

/* The sub-panel of `rows` into the panel buffer: quants [chunk][step][2][8][4] bytes if
 * `quants` (the direct tiles read the rows instead), then the scales [groups][sub_rows] as
 * floats, in one pass over the rows (a second pass would read the rows' lines again). */
static void pack_sub(const el_weight *w, const el_gemm_layout *l, const char *const *rows,
                     bool quants, void *panel) {
    int nr = sub_rows(l);
    __m256i *q = panel;
    float *scales = (float *)((char *)panel + scales_offset(w));
    bool unpack = unpacked_type(w->type);
    _Alignas(32) char bytes[2 * LANES][EL_GEMM_CHUNK];
    const char *byte_rows[2 * LANES];
    for (int o = 0; o < 2 * LANES; o++) byte_rows[o] = bytes[o];
    for (int64_t g = 0; g < el_gemm_groups(w); g++) {
        size_t group = l->header + (size_t)g * l->group_bytes;
        if (unpack && quants) { /* one block of 32 a group: its bytes, then packed */
            for (int o = 0; o < nr; o++)
                _mm256_store_si256((__m256i *)bytes[o], unpack_block(w->type, rows[o] + group));
            if (l->int8)
                pack_chunk(l, byte_rows, 0, (char)0x80, q);
            else /* Q5_0's levels 0..31, a byte each in int4 registers */
                el_pack_bytes16_avx2(byte_rows, q);
            q += 2 * STEPS;
        }
        for (int64_t c = 0; !unpack && quants && c < l->chunks_per_group; c++, q += 2 * STEPS)
            pack_chunk(l, rows, group + l->scale_bytes + (size_t)c * chunk_bytes(l),
                       (char)0x80, q);
        if (l->group_bytes == 0) continue;
        for (int o8 = 0; o8 < nr; o8 += LANES) {
            const char *const *r8 = rows + o8;
            __m128i h = _mm_setr_epi16(fp16_at(r8[0] + group), fp16_at(r8[1] + group),
                                       fp16_at(r8[2] + group), fp16_at(r8[3] + group),
                                       fp16_at(r8[4] + group), fp16_at(r8[5] + group),
                                       fp16_at(r8[6] + group), fp16_at(r8[7] + group));
            _mm256_store_ps(scales + g * nr + o8, _mm256_cvtph_ps(h));
        }
    }
    if (l->group_bytes == 0)
        for (int o = 0; o < nr; o++) scales[o] = el_edge_row_scale(rows[o]);
}

/* IQ4_XS: a group is a sub-block of 32 (scale d * (ls - 32), a float in the panel) against Q8_K
 * blocks; its levels are looked up into bytes and packed as int8 quants (u = level + 128, the
 * offset gemm.h gives it). */
static void pack_sub_iq4_xs(const el_weight *w, const el_gemm_layout *l, const char *const *rows,
                            void *panel) {
    __m256i *q = panel;
    float *scales = (float *)((char *)panel + scales_offset(w));
    _Alignas(32) char bytes[LANES][EL_GEMM_CHUNK];
    const char *byte_rows[LANES];
    for (int o = 0; o < LANES; o++) byte_rows[o] = bytes[o];
    for (int64_t i = 0; i < w->k_in / EL_QK_K; i++) {
        for (int j = 0; j < EL_QK_K / EL_GEMM_CHUNK; j++, q += 2 * STEPS) {
            for (int o = 0; o < LANES; o++) {
                const el_block_iq4_xs *b = (const el_block_iq4_xs *)rows[o] + i;
                scales[(8 * i + j) * LANES + o] = _cvtsh_ss(b->d) * (float)el_iq4_xs_scale(b, j);
                __m256i codes = legacy_nibbles((const char *)b->qs + 16 * j);
                _mm256_store_si256((__m256i *)bytes[o],
                                   _mm256_shuffle_epi8(legacy_iq4_table(), codes));
            }
            pack_chunk(l, byte_rows, 0, (char)0x80, q);
        }
    }
}

typedef struct tile_args {
    const __m256i *q;       /* packed quants (packed tiles) */
    const char *const *rows; /* the sub-panel's weight rows (direct tiles) */
    size_t group_bytes, first_quant; /* their group stride and first chunk's offset */
    const float *scales;    /* [groups][sub_rows] */
    int64_t groups, chunks_per_group;
    bool int8;
    const char *act;        /* first activation quant of row 0 */
    size_t act_stride, act_chunk; /* bytes between rows, and between chunks within a row */
    int64_t act_block_chunks; /* Q8_K rows: chunks per activation block (0: one run of chunks) */
    size_t act_block_gap;     /* bytes from one such block's last chunk to the next's first */
    bool split;             /* Q5_0: levels up to 31 in int4 registers, int16 sums of 4 steps */
    const el_gemm_aux *aux;
    float *y;
    int64_t ldy;
    __m256i store[2];       /* lanes of rows 0-7 and 8-15 whose outputs exist */
} tile_args;

/* Step s of a chunk (elements 4s..4s+3) for n activation rows at a[r]: the int16 sums s0, s1
 * take the products of the two packed registers w0, w1 with the rows' 4 bytes broadcast. */
static inline __attribute__((always_inline)) void step(__m256i s0[TILE_ROWS],
                                                       __m256i s1[TILE_ROWS], __m256i w0,
                                                       __m256i w1,
                                                       const char *const a[TILE_ROWS],
                                                       const int s, const bool first,
                                                       const int n) {
    #pragma GCC unroll 8
    for (int r = 0; r < n; r++) {
        __m256i b = broadcast_i32(a[r] + 4 * s);
        __m256i p0 = _mm256_maddubs_epi16(w0, b), p1 = _mm256_maddubs_epi16(w1, b);
        s0[r] = first ? p0 : _mm256_add_epi16(s0[r], p0);
        s1[r] = first ? p1 : _mm256_add_epi16(s1[r], p1);
        pin(&s0[r]);
        pin(&s1[r]);
    }
}

/* acc[k][r] += a chunk's int16 sums s0, s1 of n rows, widened by one vpmaddwd per row and
 * register. int4: k is rows 0-7 or 8-15. int8: the hi plane (s1) counts 16 times, into
 * acc[0]. */
static inline __attribute__((always_inline)) void widen(__m256i acc[2][TILE_ROWS],
                                                        const __m256i s0[TILE_ROWS],
                                                        const __m256i s1[TILE_ROWS], const int n,
                                                        const bool int8) {
    const __m256i ones = _mm256_set1_epi16(1);
    #pragma GCC unroll 8
    for (int r = 0; r < n; r++) {
        __m256i d0 = _mm256_madd_epi16(s0[r], ones), d1 = _mm256_madd_epi16(s1[r], ones);
        if (int8) {
            acc[0][r] = _mm256_add_epi32(acc[0][r], _mm256_add_epi32(d0, _mm256_slli_epi32(d1, 4)));
        } else {
            acc[0][r] = _mm256_add_epi32(acc[0][r], d0);
            acc[1][r] = _mm256_add_epi32(acc[1][r], d1);
        }
    }
}

/* acc[k][r] += the int32 sums (lanes: weight rows) of one chunk of n activation rows at a[r]
 * against the packed weights q: exact int16 sums of the nibble products over the chunk (see the
 * top) per packed register, then widened. */
static inline __attribute__((always_inline)) void chunk(__m256i acc[2][TILE_ROWS],
                                                        const __m256i *q,
                                                        const char *const a[TILE_ROWS],
                                                        const int n, const bool int8,
                                                        const bool split) {
    __m256i s0[TILE_ROWS], s1[TILE_ROWS];
    #pragma GCC unroll 8
    for (int s = 0; s < STEPS; s++) {
        step(s0, s1, _mm256_load_si256(q + 2 * s), _mm256_load_si256(q + 2 * s + 1), a, s,
             s == 0 || (split && s == STEPS / 2), n);
        if (split && s == STEPS / 2 - 1) widen(acc, s0, s1, n, int8);
    }
    widen(acc, s0, s1, n, int8);
}

/* chunk with the weights taken from the chunk at byte off of the sub-panel's rows, transposed
 * as pack_chunk does and used at once, each step's registers as soon as they exist. The
 * integer sums are exact, so they are the same as chunk's whatever the order of the steps. */
static inline __attribute__((always_inline)) void chunk_direct(__m256i acc[2][TILE_ROWS],
                                                               const char *const *rows,
                                                               size_t off,
                                                               const char *const a[TILE_ROWS],
                                                               const int n, const bool int8) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i s0[TILE_ROWS], s1[TILE_ROWS], t[4];
    if (int8) {
        const __m256i bias = _mm256_set1_epi8((char)0x80);
        #pragma GCC unroll 2
        for (int half = 0; half < 2; half++) {
            el_transpose_rows8x4_avx2(rows, off + 16 * (size_t)half, t);
            #pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                __m256i u = _mm256_xor_si256(t[j], bias);
                step(s0, s1, _mm256_and_si256(u, low4),
                     _mm256_and_si256(_mm256_srli_epi16(u, 4), low4), a, 4 * half + j,
                     half == 0 && j == 0, n);
            }
        }
    } else {
        __m256i t8[4];
        el_transpose_rows8x4_avx2(rows, off, t);
        el_transpose_rows8x4_avx2(rows + LANES, off, t8);
        #pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            step(s0, s1, _mm256_and_si256(t[j], low4), _mm256_and_si256(t8[j], low4), a, j, j == 0,
                 n);
        #pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            step(s0, s1, _mm256_and_si256(_mm256_srli_epi16(t[j], 4), low4),
                 _mm256_and_si256(_mm256_srli_epi16(t8[j], 4), low4), a, 4 + j, false, n);
    }
    widen(acc, s0, s1, n, int8);
}

/* n activation rows from row r0: per group, the integer sums start at the aux offset term and
 * take every chunk's sums; then they are scaled by (weight scales x activation scale) into
 * float sums. n, int8, one_chunk (groups of one chunk: q4_0, q8_0, w4g32) and direct (chunks
 * transposed from the rows as they are used, not read from the packed quants) are constants
 * after inlining; with one_chunk the chunk loop goes (its counter and branch are a large part
 * of so short a body). Both kinds of chunk give the
 * same integer sums, scaled in the same order: the same bits. */
static inline __attribute__((always_inline)) void tile(const tile_args *t, int64_t r0,
                                                       const int n, const bool int8,
                                                       const bool one_chunk, const bool direct,
                                                       const bool split) {
    const int halves = int8 ? 1 : 2; /* registers of 8 outputs per activation row */
    __m256 f[2][TILE_ROWS];
    const char *a[TILE_ROWS];
    const el_gemm_aux *ax[TILE_ROWS];
    #pragma GCC unroll 8
    for (int r = 0; r < n; r++) {
        f[0][r] = f[1][r] = _mm256_setzero_ps();
        a[r] = t->act + (size_t)(r0 + r) * t->act_stride;
        ax[r] = t->aux + (r0 + r) * t->groups;
    }
    const __m256i *q = t->q;
    for (int64_t g = 0; g < t->groups; g++) {
        __m256i acc[2][TILE_ROWS];
        #pragma GCC unroll 8
        for (int r = 0; r < n; r++) acc[0][r] = acc[1][r] = _mm256_set1_epi32(ax[r][g].comp);
        size_t off = t->first_quant + (size_t)g * t->group_bytes;
        for (int64_t c = 0; c < (one_chunk ? 1 : t->chunks_per_group); c++) {
            if (direct) {
                chunk_direct(acc, t->rows, off, a, n, int8);
                off += int8 ? 32 : 16;
            } else {
                chunk(acc, q, a, n, int8, split);
                q += 2 * STEPS;
            }
            #pragma GCC unroll 8
            for (int r = 0; r < n; r++) a[r] += t->act_chunk;
        }
        if (t->act_block_chunks > 0 && (g + 1) % t->act_block_chunks == 0) {
            #pragma GCC unroll 8
            for (int r = 0; r < n; r++) a[r] += t->act_block_gap;
        }
        #pragma GCC unroll 2
        for (int k = 0; k < halves; k++) {
            __m256 dw = _mm256_load_ps(t->scales + (g * halves + k) * LANES);
            #pragma GCC unroll 8
            for (int r = 0; r < n; r++) {
                __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(ax[r][g].d));
                f[k][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[k][r]), d, f[k][r]);
            }
        }
    }
    #pragma GCC unroll 2
    for (int k = 0; k < halves; k++) {
        #pragma GCC unroll 8
        for (int r = 0; r < n; r++)
            _mm256_maskstore_ps(t->y + (r0 + r) * t->ldy + k * LANES, t->store[k], f[k][r]);
    }
}

/* The tile of n rows (a constant after inlining) for the kind of t's weight. */
static inline __attribute__((always_inline)) void tile_kind(const tile_args *t, int64_t r0,
                                                            const int n, const bool direct) {
    bool one_chunk = t->chunks_per_group == 1;
    if (t->split) /* Q5_0: int4 registers of 5-bit bytes, groups of one chunk */
        tile(t, r0, n, false, true, false, true);
    else if (t->int8) {
        if (one_chunk)
            tile(t, r0, n, true, true, direct, false);
        else
            tile(t, r0, n, true, false, direct, false);
    } else {
        if (one_chunk)
            tile(t, r0, n, false, true, direct, false);
        else
            tile(t, r0, n, false, false, direct, false);
    }
}

static void tile1(const tile_args *t, int64_t r0) { tile_kind(t, r0, 1, false); }
static void tile2(const tile_args *t, int64_t r0) { tile_kind(t, r0, 2, false); }
static void tile3(const tile_args *t, int64_t r0) { tile_kind(t, r0, 3, false); }
static void tile4(const tile_args *t, int64_t r0) { tile_kind(t, r0, 4, false); }
static void direct1(const tile_args *t, int64_t r0) { tile_kind(t, r0, 1, true); }
static void direct2(const tile_args *t, int64_t r0) { tile_kind(t, r0, 2, true); }
static void direct3(const tile_args *t, int64_t r0) { tile_kind(t, r0, 3, true); }
static void direct4(const tile_args *t, int64_t r0) { tile_kind(t, r0, 4, true); }
/* [direct][n]: the tiles of n rows reading packed quants, or transposing the rows' chunks */
static void (*const tiles[2][TILE_ROWS + 1])(const tile_args *, int64_t) = {
    {NULL, tile1, tile2, tile3, tile4}, {NULL, direct1, direct2, direct3, direct4}};

/* Up to how many activation rows the direct tiles are faster than packing the sub-panel: the
 * transposes in registers cost per pass what packing costs once, so they win only while few
 * rows share each pass (measured: docs/kernels.md, "Figures behind the kernels' comments"):
 * one tile of rows for int8 and per-row int4, w8 (whose plain bytes transpose cheapest) two.
 * Int4 with a scale per group (q4_0, w4g*) gathers as many bytes of scales as it
 * transposes quants, and is slower direct. */
static int64_t direct_max_rows(const el_gemm_layout *l) {
    if (l->int8 && l->group_bytes == 0) return 2 * TILE_ROWS;
    if (l->int8 || l->group_bytes == 0) return TILE_ROWS;
    return 0;
}

void el_gemm_avx2(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                  size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y, int64_t ldy,
                  void *panel) {
    bool unpack = unpacked_type(w->type);
    bool q8_k = w->type == EL_TYPE_IQ4_XS; /* against Q8_K blocks */
    /* an unpacked type: a block of 32 a group, its fp16 d first, int8 quants once unpacked
     * (Q5_0: int4 registers of bytes); IQ4_XS: groups of one chunk, int8 (pack_sub_iq4_xs) */
    bool split = w->type == EL_TYPE_Q5_0;
    el_gemm_layout l = unpack ? (el_gemm_layout){0, el_row_size(w->type, EL_QK8_0), 2, 1, !split}
                       : q8_k ? (el_gemm_layout){0, 0, 0, 1, true}
                              : el_gemm_layout_of(w);
    bool q8_act = w->type == EL_TYPE_Q4_0 || w->type == EL_TYPE_Q8_0 || unpack;
    tile_args t = {
        .q = panel,
        .scales = (const float *)((const char *)panel + scales_offset(w)),
        .groups = el_gemm_groups(w),
        .chunks_per_group = el_gemm_group_size(w) / EL_GEMM_CHUNK,
        .int8 = l.int8,
        /* q8_0 blocks: fp16 d, then 32 quants; q8_k blocks: float d, 256 quants, the sums; a8
         * rows: the header, then the quants */
        .act = act + (q8_act ? sizeof(uint16_t) : q8_k ? sizeof(float) : sizeof(el_a8_header)),
        .act_stride = act_stride,
        .act_chunk = q8_act ? sizeof(el_block_q8_0) : EL_GEMM_CHUNK,
        .act_block_chunks = q8_k ? EL_QK_K / EL_GEMM_CHUNK : 0,
        .act_block_gap = q8_k ? sizeof(el_block_q8_k) - EL_QK_K : 0,
        .split = split,
        .aux = aux,
        .ldy = ldy,
        .group_bytes = l.group_bytes,
        .first_quant = l.header + l.scale_bytes,
    };
    const char *rows[2 * LANES];
    t.rows = rows;
    /* direct reads the rows' bytes as they are */
    bool direct = !unpack && !q8_k && n_rows <= direct_max_rows(&l);
    for (int64_t s0 = 0; s0 < n_out; s0 += sub_rows(&l)) {
        int64_t n = n_out - s0 < sub_rows(&l) ? n_out - s0 : sub_rows(&l);
        sub_panel_rows(w, &l, o0 + s0, n, rows);
        if (q8_k)
            pack_sub_iq4_xs(w, &l, rows, panel);
        else
            pack_sub(w, &l, rows, !direct, panel);
        t.y = y + o0 + s0;
        t.store[0] = lanes_below(n);
        t.store[1] = lanes_below(n - LANES);
        int64_t r = 0;
        for (; r + TILE_ROWS <= n_rows; r += TILE_ROWS) tiles[direct][TILE_ROWS](&t, r);
        if (r < n_rows) tiles[direct][n_rows - r](&t, r);
    }
}

#endif
