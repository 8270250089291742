/* gemm_avx512.c - the packed products of gemm.h with AVX-512 VNNI: one vpdpbusd accumulates the
 * 16 outputs of a panel for one activation row and 4 elements, taking the activation's 4 bytes
 * by embedded broadcast; a tile of up to TILE_ROWS activation rows shares each load of the
 * packed weights. Covers q4_0, q8_0 (against q8_0 activations) and w4, w8, w4g32/64/128 (against
 * a8 activations), and the panels gemm_legacy_avx512.c packs: q5_0, iq4_nl (against q8_0), q4_1,
 * q5_1 (against q8_1, their mins per group) and iq4_xs (against q8_k).
 * Built with AVX-512 flags on x86 (see Makefile) and used only when the CPU runs them. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "kernels/blocks.h"
#include "kernels/edge.h"
#include "kernels/gemm.h"
#include "kernels/gemm_avx512.h"
#include "kernels/transpose_avx2.h"

enum {
    TILE_ROWS = 8,      /* activation rows per tile: 2 accumulators each stay in registers */
    PREFETCH = 768,     /* bytes ahead in each weight row that packing asks for */
    /* Up to this many activation rows, a full panel is not packed but transposed in registers
     * for each block of TILE_ROWS rows: the transposes cost per block what packing costs once,
     * which pays for itself only past a few dozen rows (docs/kernels.md) */
    DIRECT_MAX_ROWS = 32,
};

/* Chunk c of the 16 rows as 8 registers of unsigned bytes: register j holds elements 4j..4j+3
 * of every row. int4: elements 0-15 are the low nibbles, 16-31 the high ones. int8: + 128. */
static void pack_chunk(const el_gemm_layout *l, const char *const *rows, int64_t c, __m512i *dst) {
    size_t off = el_gemm_quant_offset(l, c);
    for (int o = 0; o < EL_GEMM_PANEL; o++) _mm_prefetch(rows[o] + off + PREFETCH, _MM_HINT_T0);
    __m512i t[4];
    transpose16x4(rows, off, t);
    if (l->int8) {
        const __m512i bias = _mm512_set1_epi8((char)0x80);
        for (int j = 0; j < 4; j++) _mm512_store_si512(dst + j, _mm512_xor_si512(t[j], bias));
        transpose16x4(rows, off + 16, t);
        for (int j = 0; j < 4; j++) _mm512_store_si512(dst + 4 + j, _mm512_xor_si512(t[j], bias));
    } else {
        const __m512i low4 = _mm512_set1_epi8(0x0F);
        for (int j = 0; j < 4; j++) {
            _mm512_store_si512(dst + j, _mm512_and_si512(t[j], low4));
            _mm512_store_si512(dst + 4 + j, _mm512_and_si512(_mm512_srli_epi16(t[j], 4), low4));
        }
    }
}

/* The panel: quants [k_in / 4][16][4] bytes, then the scales [groups][16] as floats. Rows past
 * n_out repeat the last one (their outputs are not stored). */
static void panel_rows(const el_weight *w, int64_t o0, int64_t n_out,
                       const char *rows[EL_GEMM_PANEL]) {
    for (int o = 0; o < EL_GEMM_PANEL; o++)
        rows[o] = (const char *)w->data + (o0 + (o < n_out ? o : n_out - 1)) * w->row_bytes;
}

static void pack_panel(const el_weight *w, const char *const *rows, void *panel) {
    el_gemm_layout l = el_gemm_layout_of(w);
    __m512i *q = panel;
    for (int64_t c = 0; c < w->k_in / EL_GEMM_CHUNK; c++) pack_chunk(&l, rows, c, q + c * 8);
    float *scales = (float *)((char *)panel + (size_t)w->k_in * EL_GEMM_PANEL);
    /* the scales by gathers (16 narrow loads into one register would stall on forwarding):
     * byte offsets of the panel's rows from the first */
    int32_t offs[EL_GEMM_PANEL];
    for (int o = 0; o < EL_GEMM_PANEL; o++) offs[o] = (int32_t)(rows[o] - rows[0]);
    const __m512i vo = _mm512_loadu_si512(offs);
    if (l.group_bytes == 0) {
        _mm512_store_ps(scales, _mm512_i32gather_ps(vo, rows[0], 1));
        return;
    }
    for (int64_t g = 0; g < el_gemm_groups(w); g++) {
        __m512i h = _mm512_i32gather_epi32(vo, rows[0] + (size_t)g * l.group_bytes, 1);
        _mm512_store_ps(scales + g * EL_GEMM_PANEL, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h)));
    }
}

typedef struct tile_args {
    const __m512i *q;      /* packed quants */
    const float *scales;   /* [groups][16] */
    const float *mins;     /* [groups][16] for weights with a min (q4_1, q5_1), else NULL */
    int64_t groups, dwords; /* scale groups, and 4-byte steps per group */
    const char *act;       /* first activation quant of row 0 */
    size_t act_stride, act_group; /* bytes between rows, and between groups within a row */
    int64_t block_mask;    /* groups per activation block - 1 (q8_k: 7, else 0); past a block */
    size_t act_skip;       /* the next block's quants are this many bytes further */
    const el_gemm_aux *aux;
    float *y;
    int64_t ldy;
    __mmask16 store;       /* outputs of the panel that exist */
} tile_args;

/* n activation rows (a constant after inlining) from row r0: per group, the integer sums start
 * at the aux offset term and take one vpdpbusd per 4 elements and row; then they are scaled by
 * (weight scales x activation scale) into float sums. */
static inline __attribute__((always_inline)) void tile(const tile_args *t, int64_t r0,
                                                       const int n) {
    __m512 f[TILE_ROWS];
    const char *a[TILE_ROWS];
    const el_gemm_aux *ax[TILE_ROWS];
    #pragma GCC unroll 8
    for (int r = 0; r < n; r++) {
        f[r] = _mm512_setzero_ps();
        a[r] = t->act + (size_t)(r0 + r) * t->act_stride;
        ax[r] = t->aux + (r0 + r) * t->groups;
    }
    const __m512i *q = t->q;
    for (int64_t g = 0; g < t->groups; g++, q += t->dwords) {
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
        scale_group(f, acc, _mm512_load_ps(t->scales + g * EL_GEMM_PANEL), ax, g, n);
        if (t->mins) /* the weights' min times the activation group's scaled sum */
            #pragma GCC unroll 8
            for (int r = 0; r < n; r++)
                f[r] = _mm512_fmadd_ps(_mm512_load_ps(t->mins + g * EL_GEMM_PANEL),
                                       _mm512_set1_ps(ax[r][g].s), f[r]);
        size_t next = t->act_group + (((g + 1) & t->block_mask) == 0 ? t->act_skip : 0);
        #pragma GCC unroll 8
        for (int r = 0; r < n; r++) a[r] += next;
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

/* ---- few activation rows (concurrent variants, small batches): unpacking a panel into memory
 * and reading it back would cost more than the products it serves, so each chunk of the panel is
 * transposed into registers and used at once by every activation row. The transposes work on 8
 * weight rows in 256-bit registers, within 128-bit lanes (on CPUs that split 512-bit operations,
 * as AMD's do, that costs a fraction of 512-bit cross-lane permutes); two halves are then joined
 * into 512-bit registers, so that one activation broadcast serves all 16 outputs. */

/* The 16 bytes at p + o * rb for the 8 rows o (rb bytes apart) as 4 registers: register c holds
 * dword c of rows 0..7. Rows are addressed from three bases so that few registers are needed. */
static inline void transpose8x4(const char *p, size_t rb, __m256i out[4]) {
    const char *p3 = p + 3 * rb, *p6 = p + 6 * rb;
    el_transpose8x4_avx2(el_rows2_avx2(p, p + 4 * rb), el_rows2_avx2(p + rb, p3 + 2 * rb),
                         el_rows2_avx2(p + 2 * rb, p6), el_rows2_avx2(p3, p3 + 4 * rb), out);
}

/* The chunk at p + o * rb of the 8 rows as 8 registers of unsigned bytes, as pack_chunk
 * lays them out for 16 rows: register j holds elements 4j..4j+3 of every row. */
static inline __attribute__((always_inline)) void load_chunk8(bool int8, const char *p, size_t rb,
                                                              __m256i q[8]) {
    __m256i t[4];
    transpose8x4(p, rb, t);
    if (int8) {
        const __m256i bias = _mm256_set1_epi8((char)0x80);
        #pragma GCC unroll 4
        for (int j = 0; j < 4; j++) q[j] = _mm256_xor_si256(t[j], bias);
        transpose8x4(p + 16, rb, t);
        #pragma GCC unroll 4
        for (int j = 0; j < 4; j++) q[4 + j] = _mm256_xor_si256(t[j], bias);
    } else {
        const __m256i low4 = _mm256_set1_epi8(0x0F);
        #pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            q[j] = _mm256_and_si256(t[j], low4);
            q[4 + j] = _mm256_and_si256(_mm256_srli_epi16(t[j], 4), low4);
        }
    }
}

/* The chunk at p + o * rb of the 16 rows as 8 registers laid out as pack_chunk stores them:
 * transposed as two halves of 8 rows in 256-bit registers, then joined. */
static inline __attribute__((always_inline)) void load_chunk16(bool int8, const char *p,
                                                               size_t rb, __m512i q[8]) {
    __m256i lo[8], hi[8];
    load_chunk8(int8, p, rb, lo);
    load_chunk8(int8, p + 8 * rb, rb, hi);
    #pragma GCC unroll 8
    for (int j = 0; j < 8; j++)
        q[j] = _mm512_inserti64x4(_mm512_castsi256_si512(lo[j]), hi[j], 1);
}

/* acc + dpbusd(q, the 4 bytes at p broadcast), with the broadcast embedded in the instruction:
 * gcc emits a separate broadcast for the intrinsics, which costs a vector slot per product. */
static inline __m512i dpbusd_bcast(__m512i acc, __m512i q, const char *p) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(q), "m"(*(const int32_t *)p));
    return acc;
}

/* n activation rows (n <= TILE_ROWS, a constant after inlining; rows past n_rows repeat row 0
 * and are not stored) against the full panel of 16 weight rows from p (rb bytes apart), whose
 * group scales are scales[g * 16 ..] (fp16; per-row types: row_scale). The integer sums and
 * their scaling happen in the same order as in tile(), so the results are the same bits. */
static inline __attribute__((always_inline)) void direct16(const el_gemm_layout *l, const char *p,
                                                           size_t rb, const uint16_t *scales,
                                                           __m512 row_scale, const tile_args *t,
                                                           int n_rows, int64_t prefetch_chunks,
                                                           const int n, const bool int8) {
    __m512 f[TILE_ROWS];
    const char *a[TILE_ROWS];
    const el_gemm_aux *ax[TILE_ROWS];
    #pragma GCC unroll 8
    for (int r = 0; r < n; r++) {
        int64_t row = r < n_rows ? r : 0;
        f[r] = _mm512_setzero_ps();
        a[r] = t->act + (size_t)row * t->act_stride;
        ax[r] = t->aux + row * t->groups;
    }
    const size_t chunk_bytes = int8 ? 32 : 16;
    /* While the products run, the next panel is asked for: the scale pass would otherwise meet
     * it in DRAM one line after another (half of a K = 8 step's time on the 1B shape). */
    const char *pf = p + EL_GEMM_PANEL * rb;
    const size_t pf_step = prefetch_chunks > 0 ? (EL_GEMM_PANEL * rb + (size_t)prefetch_chunks - 1) /
                                                     (size_t)prefetch_chunks
                                               : 0;
    for (int64_t g = 0; g < t->groups; g++) {
        __m512i acc[TILE_ROWS];
        #pragma GCC unroll 8
        for (int r = 0; r < n; r++) acc[r] = _mm512_set1_epi32(ax[r][g].comp);
        const char *wq = p + l->header + (size_t)g * l->group_bytes + l->scale_bytes;
        for (int64_t c = 0; c < l->chunks_per_group; c++, wq += chunk_bytes) {
            /* the next panel (16 rows follow each other in memory), a share per chunk */
            for (size_t b = 0; b < pf_step; b += 64) _mm_prefetch(pf + b, _MM_HINT_T0);
            pf += pf_step;
            __m512i q[8];
            load_chunk16(int8, wq, rb, q);
            #pragma GCC unroll 8
            for (int s = 0; s < 8; s++)
                #pragma GCC unroll 8
                for (int r = 0; r < n; r++)
                    acc[r] = dpbusd_bcast(acc[r], q[s], a[r] + c * EL_GEMM_CHUNK + 4 * s);
        }
        __m512 dw = row_scale;
        if (l->group_bytes != 0)
            dw = _mm512_cvtph_ps(
                _mm256_load_si256((const __m256i *)(scales + g * EL_GEMM_PANEL)));
        scale_group(f, acc, dw, ax, g, n);
        #pragma GCC unroll 8
        for (int r = 0; r < n; r++) a[r] += t->act_group;
    }
    #pragma GCC unroll 8
    for (int r = 0; r < n; r++)
        if (r < n_rows) _mm512_storeu_ps(t->y + r * t->ldy, f[r]);
}

/* The fp16 scales at p + o * rb + off of the 16 rows o, in row order. They are the last two
 * bytes of the 16 at off - 14, which the transposes of the products bring together: word 7 of
 * each row's 16 bytes is the top half of its dword 3. off >= 14 (inside the rows). */
static inline __m256i scales16(const char *p, size_t rb, size_t off) {
    __m256i lo[4], hi[4];
    transpose8x4(p + off - 14, rb, lo);
    transpose8x4(p + 8 * rb + off - 14, rb, hi);
    __m512i d3 = _mm512_inserti64x4(_mm512_castsi256_si512(lo[3]), hi[3], 1);
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(d3, 16));
}

/* The fp16 scales of groups g and g + 1 of rows p + o * rb, o < 4, for groups of 18 bytes (q4_0,
 * w4g32), from one 32-byte load per row at off - 12 (off: group g's start): group g's scale is
 * the low half of dword 3, group g + 1's (18 bytes on) the high half of dword 7. Returns dword 3
 * of the 4 rows in the low 128-bit lane and dword 7 in the high one. off >= 12 and
 * off + 20 <= the row's bytes. */
static inline __m256i scale_pair4(const char *p, size_t rb, size_t off) {
    const char *q = p + off - 12;
    __m256i r0 = _mm256_loadu_si256((const __m256i *)q);
    __m256i r1 = _mm256_loadu_si256((const __m256i *)(q + rb));
    __m256i r2 = _mm256_loadu_si256((const __m256i *)(q + 2 * rb));
    __m256i r3 = _mm256_loadu_si256((const __m256i *)(q + 3 * rb));
    return _mm256_unpackhi_epi64(_mm256_unpackhi_epi32(r0, r1), _mm256_unpackhi_epi32(r2, r3));
}

/* scales16 for groups g and g + 1 at once (groups of 18 bytes; off as for scale_pair4): 16
 * loads for two groups where scales16 needs 16 for one. */
static inline void scales16_pair(const char *p, size_t rb, size_t off, uint16_t *dst) {
    __m256i q0 = scale_pair4(p, rb, off), q1 = scale_pair4(p + 4 * rb, rb, off);
    __m256i q2 = scale_pair4(p + 8 * rb, rb, off), q3 = scale_pair4(p + 12 * rb, rb, off);
    __m512i first = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_permute2x128_si256(q0, q1, 0x20)),
        _mm256_permute2x128_si256(q2, q3, 0x20), 1);
    __m512i second = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_permute2x128_si256(q0, q1, 0x31)),
        _mm256_permute2x128_si256(q2, q3, 0x31), 1);
    _mm256_store_si256((__m256i *)dst, _mm512_cvtepi32_epi16(first));
    _mm256_store_si256((__m256i *)(dst + EL_GEMM_PANEL),
                       _mm512_cvtepi32_epi16(_mm512_srli_epi32(second, 16)));
}

/* The panel's scales for direct16: per-group types' fp16 scales as [groups][16] in the panel
 * buffer (group 0's copied one by one, the others by vector loads and transposes, since a scalar
 * copy of every scale was a large part of a step of concurrent variants; 18-byte groups two
 * at a time, which halves the loads; docs/kernels.md, "Figures behind the kernels'
 * comments"), per-row types' into row_scales. */
static void direct_scales(const el_gemm_layout *l, const char *p, size_t rb, int64_t groups,
                          uint16_t *scales, float row_scales[EL_GEMM_PANEL]) {
    if (l->group_bytes == 0) {
        for (int o = 0; o < EL_GEMM_PANEL; o++) memcpy(&row_scales[o], p + o * rb, sizeof(float));
        return;
    }
    for (int o = 0; o < EL_GEMM_PANEL; o++) memcpy(scales + o, p + o * rb, sizeof *scales);
    int64_t g = 1;
    if (l->group_bytes == 18)
        for (; g + 2 <= groups; g += 2)
            scales16_pair(p, rb, (size_t)g * 18, scales + g * EL_GEMM_PANEL);
    for (; g < groups; g++)
        _mm256_store_si256((__m256i *)(scales + g * EL_GEMM_PANEL),
                           scales16(p, rb, (size_t)g * l->group_bytes));
}

/* direct16 for at most 2, 4 or 8 rows: n and int8 as constants, so that each chunk stays in
 * registers; pf: over how many chunks to spread the prefetch of the next panel (0: none). */
static void direct2(const el_gemm_layout *l, const char *p, size_t rb, const uint16_t *sc,
                    __m512 rs, const tile_args *t, int n_rows, int64_t pf) {
    if (l->int8) direct16(l, p, rb, sc, rs, t, n_rows, pf, 2, true);
    else direct16(l, p, rb, sc, rs, t, n_rows, pf, 2, false);
}
static void direct4(const el_gemm_layout *l, const char *p, size_t rb, const uint16_t *sc,
                    __m512 rs, const tile_args *t, int n_rows, int64_t pf) {
    if (l->int8) direct16(l, p, rb, sc, rs, t, n_rows, pf, 4, true);
    else direct16(l, p, rb, sc, rs, t, n_rows, pf, 4, false);
}
static void direct8(const el_gemm_layout *l, const char *p, size_t rb, const uint16_t *sc,
                    __m512 rs, const tile_args *t, int n_rows, int64_t pf) {
    if (l->int8) direct16(l, p, rb, sc, rs, t, n_rows, pf, 8, true);
    else direct16(l, p, rb, sc, rs, t, n_rows, pf, 8, false);
}

/* A full panel from p against n_rows activation rows, TILE_ROWS at a time, each block
 * transposing the panel's chunks again (from cache). */
static void direct(const el_weight *w, const char *p, const tile_args *t, int64_t n_rows,
                   void *panel) {
    el_gemm_layout l = el_gemm_layout_of(w);
    float row_scales[EL_GEMM_PANEL];
    direct_scales(&l, p, w->row_bytes, t->groups, panel, row_scales);
    const __m512 rs = _mm512_loadu_ps(row_scales);
    for (int64_t r0 = 0; r0 < n_rows; r0 += TILE_ROWS) {
        int64_t n = n_rows - r0 < TILE_ROWS ? n_rows - r0 : TILE_ROWS;
        tile_args block = *t;
        block.act += (size_t)r0 * t->act_stride;
        block.aux += r0 * t->groups;
        block.y += r0 * t->ldy;
        void (*kernel)(const el_gemm_layout *, const char *, size_t, const uint16_t *, __m512,
                       const tile_args *, int, int64_t) =
            n <= 2 ? direct2 : n <= 4 ? direct4 : direct8;
        /* the first pass asks for the next panel, spread over its chunks */
        kernel(&l, p, w->row_bytes, panel, rs, &block, (int)n,
               r0 == 0 ? w->k_in / EL_GEMM_CHUNK : 0);
    }
}

void el_gemm_avx512(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                    size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y, int64_t ldy,
                    void *panel) {
    const char *rows[EL_GEMM_PANEL];
    panel_rows(w, o0, n_out, rows);
    int64_t group = el_gemm_group_size(w);
    bool q8_act = w->type == EL_TYPE_Q4_0 || w->type == EL_TYPE_Q8_0 ||
                  w->type == EL_TYPE_Q5_0 || w->type == EL_TYPE_IQ4_NL;
    bool q8k_act = w->type == EL_TYPE_IQ4_XS;
    bool q8_1_act = el_gemm_has_min(w->type);
    const float *scales = (const float *)((const char *)panel + (size_t)w->k_in * EL_GEMM_PANEL);
    tile_args t = {
        .q = panel,
        .scales = scales,
        .mins = q8_1_act ? scales + el_gemm_groups(w) * EL_GEMM_PANEL : NULL,
        .groups = el_gemm_groups(w),
        .dwords = group / 4,
        /* q8_0 blocks: fp16 d, then 32 quants; q8_1 blocks: fp16 d and s, then 32 quants; q8_k
         * blocks: float d, then 8 groups of quants and the sums; a8 rows: the header, then the
         * quants */
        .act = act + (q8_act     ? sizeof(uint16_t)
                      : q8_1_act ? offsetof(el_block_q8_1, qs)
                      : q8k_act  ? sizeof(float)
                                 : sizeof(el_a8_header)),
        .act_stride = act_stride,
        .act_group = q8_act     ? sizeof(el_block_q8_0)
                     : q8_1_act ? sizeof(el_block_q8_1)
                                : (size_t)group,
        .block_mask = q8k_act ? EL_QK_K / 32 - 1 : 0,
        .act_skip = q8k_act ? sizeof(el_block_q8_k) - EL_QK_K : 0,
        .aux = aux,
        .y = y + o0,
        .ldy = ldy,
        .store = (__mmask16)((1u << n_out) - 1),
    };
    /* the types of gemm_legacy_avx512.c have packers of their own, and no direct path */
    bool legacy = el_gemm_legacy_type(w->type);
    if (!legacy && n_rows <= DIRECT_MAX_ROWS && n_out == EL_GEMM_PANEL) {
        direct(w, rows[0], &t, n_rows, panel);
        return;
    }
    if (legacy)
        el_gemm_pack_legacy_avx512(w, rows, panel);
    else
        pack_panel(w, rows, panel);
    int64_t r = 0;
    for (; r + TILE_ROWS <= n_rows; r += TILE_ROWS) tiles[TILE_ROWS](&t, r);
    if (r < n_rows) tiles[n_rows - r](&t, r);
}

#endif
