/* gemm_q23k_avx512.c - the packed products (gemm.h) of Q2_K and Q3_K weights against Q8_K
 * activations with AVX-512 VNNI (prompt processing).
 *
 * The sub-block scales are small enough to go into the weights: a panel of 16 rows is unpacked
 * once into bytes w = level * scale (Q2_K: 0..3 * 0..15, at most 45) or level * scale + 127 (Q3_K:
 * -4..3 * -32..31 lies in -124..128, so + 127 makes it 3..255), laid out as gemm.h's
 * [k/4][16 rows][4 bytes]. Then one vpdpbusd with the activation's 4 bytes broadcast accumulates
 * all 16 outputs over 4 elements, with no per-sub-block work left: a block of 256 takes 64 of
 * them and one float multiply-add by (the rows' d) x (the activation's d). Q3_K's + 127 comes off
 * through the aux term (-127 times the block's activation sum, el_gemm_aux_row); Q2_K's mins are
 * a second integer sum per block, of the rows' 16 mins (packed as int16 pairs) against the
 * activation's bsums: 8 vpdpwssd, scaled by dmin.
 * A tile of up to TILE_ROWS activation rows shares each load of the packed weights. Every output
 * is summed in integers exactly and scaled per block in block order, so it depends only on its
 * weight row and activation row. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include <immintrin.h>
#include <string.h>

#include "kernels/blocks.h"
#include "kernels/gemm.h"
#include "kernels/q23k_x86.h"
#include "kernels/transpose_avx2.h"

enum {
    TILE_ROWS = 8,              /* activation rows per tile: their sums stay in registers */
    BLOCK_DWORDS = EL_QK_K / 4, /* 4-byte steps per block */
    BLOCK_QUANTS = EL_QK_K * EL_GEMM_PANEL, /* packed bytes per block of the panel */
};

/* Where a panel keeps each part: per block i the quants, the rows' d (float), and for Q2_K
 * their dmin and mins ([8 pairs][16 rows][2 int16]), each part for all blocks together. */
typedef struct q23k_panel {
    __m512i *q;    /* [blocks][BLOCK_DWORDS] registers of 16 rows x 4 bytes */
    float *d;      /* [blocks][16] */
    float *dmin;   /* [blocks][16] (Q2_K) */
    __m512i *mins; /* [blocks][8] (Q2_K) */
} q23k_panel;

static q23k_panel panel_parts(void *panel, int64_t nb) {
    char *p = panel;
    q23k_panel parts;
    parts.q = (__m512i *)p;
    p += (size_t)nb * BLOCK_QUANTS;
    parts.d = (float *)p;
    p += (size_t)nb * EL_GEMM_PANEL * sizeof(float);
    parts.dmin = (float *)p;
    p += (size_t)nb * EL_GEMM_PANEL * sizeof(float);
    parts.mins = (__m512i *)p;
    return parts;
}

/* A pshufb control word repeated: byte v into the low byte of each word, zero into the high. */
static inline int64_t low_byte_words(int v) {
    return (int64_t)(0x0001000100010001ULL * (uint64_t)(0x8000 | v));
}

/* From 16 bytes broadcast to every 128-bit lane (a block's scales, natural order): lane L of the
 * result holds byte 4c + L, zero-extended, in every word: the scale of the sub-block that lane L
 * of elements 64c..64c+63 belongs to. */
static inline __m512i scale_words(__m512i bytes, int c) {
    return _mm512_shuffle_epi8(bytes, _mm512_set_epi64(
        low_byte_words(4 * c + 3), low_byte_words(4 * c + 3), low_byte_words(4 * c + 2),
        low_byte_words(4 * c + 2), low_byte_words(4 * c + 1), low_byte_words(4 * c + 1),
        low_byte_words(4 * c), low_byte_words(4 * c)));
}

/* Elements 64c..64c+63 of a block's 2-bit fields (qs: the block's 64 bytes), 0..3 as bytes:
 * half c / 2, shifted by 4 (c % 2) for the first 32 and 2 more for the next 32. */
static inline __m512i fields64(const uint8_t *qs, int c) {
    __m512i q = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(qs + 32 * (c / 2))));
    __m512i count = _mm512_inserti64x4(_mm512_set1_epi16((short)(4 * (c % 2))),
                                       _mm256_set1_epi16((short)(4 * (c % 2) + 2)), 1);
    return _mm512_and_si512(_mm512_srlv_epi16(q, count), _mm512_set1_epi8(3));
}

/* A Q2_K block's 256 packed bytes level * scale in element order, 64 per register: a word
 * multiply does both bytes of each word, since neither product passes 45. */
static inline void fold_q2_k(const el_block_q2_k *b, __m512i out[4]) {
    __m512i sc = _mm512_and_si512(
        _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)b->scales)), _mm512_set1_epi8(0x0F));
    #pragma GCC unroll 4
    for (int c = 0; c < 4; c++) out[c] = _mm512_mullo_epi16(fields64(b->qs, c), scale_words(sc, c));
}

/* A Q3_K block's 256 packed bytes level * scale + 127 in element order. With the scale's field f
 * (scale = f - 32) and q = 2-bit field + 4 * high bit (level q - 4), each lane's byte table
 * t[q] = (q - 4) f + 127 - 32 (q - 4) (3..255) is built two entries a word by one word multiply
 * of f and one add, exact modulo 2^16 since each byte stays in range, then looked up by q. */
static inline void fold_q3_k(const el_block_q3_k *b, __m512i out[4]) {
    __m512i f = _mm512_broadcast_i32x4(_mm_add_epi8(q23k_q3_k_scales(b->scales), _mm_set1_epi8(32)));
    __m512i hmask = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)b->hmask));
    /* word j makes table entries 2j and 2j + 1: levels 2j - 4 and 2j - 3 as (2j - 4) + 256 (2j - 3) */
    const __m512i level = _mm512_broadcast_i32x4(_mm_setr_epi16(
        (short)0xFCFC, (short)0xFEFE, 0x0100, 0x0302, 0, 0, 0, 0));
    const __m512i base = _mm512_broadcast_i32x4(_mm_setr_epi16(
        (short)0xDFFF, (short)0x9FBF, 0x5F7F, 0x1F3F, 0, 0, 0, 0)); /* 255, 223, ..., 31 */
    #pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        /* the high bits: bit 2c of hmask[l] for element 64c + l, l < 32; bit 2c + 1 after */
        __m512i bit = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << (2 * c))),
                                         _mm256_set1_epi8((char)(1 << (2 * c + 1))), 1);
        __m512i q = fields64(b->qs, c);
        q = _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(hmask, bit), q, _mm512_set1_epi8(4));
        __m512i table = _mm512_add_epi16(_mm512_mullo_epi16(scale_words(f, c), level), base);
        out[c] = _mm512_shuffle_epi8(table, q);
    }
}

/* The 16 bytes at column c (bytes 16c..16c+15) of the 16 rows of t (rb bytes apart) as
 * out[j] = dword 4c + j of rows 0..15: two in-lane transposes of 8 rows in 256-bit registers,
 * joined (a 512-bit cross-lane transpose costs several times as much on CPUs that split
 * 512-bit operations; gathers, which this replaced, took half the packing's time). */
static inline void transpose16(const char *t, size_t rb, int c, __m512i out[4]) {
    const char *p = t + 16 * c, *q = p + 8 * rb;
    __m256i lo[4], hi[4];
    el_transpose8x4_avx2(el_rows2_avx2(p, p + 4 * rb), el_rows2_avx2(p + rb, p + 5 * rb),
                         el_rows2_avx2(p + 2 * rb, p + 6 * rb), el_rows2_avx2(p + 3 * rb, p + 7 * rb),
                         lo);
    el_transpose8x4_avx2(el_rows2_avx2(q, q + 4 * rb), el_rows2_avx2(q + rb, q + 5 * rb),
                         el_rows2_avx2(q + 2 * rb, q + 6 * rb), el_rows2_avx2(q + 3 * rb, q + 7 * rb),
                         hi);
    #pragma GCC unroll 4
    for (int j = 0; j < 4; j++) out[j] = _mm512_inserti64x4(_mm512_castsi256_si512(lo[j]), hi[j], 1);
}

/* Packs the panel: rows[o] (16, the last repeated past n_out) of nb blocks. Each block's 16
 * rows are folded into a row-major buffer, then transposed into [k/4][16][4]. */
static void pack_panel(el_type type, const char *const rows[EL_GEMM_PANEL], int64_t nb,
                       q23k_panel p) {
    const size_t block = type == EL_TYPE_Q2_K ? sizeof(el_block_q2_k) : sizeof(el_block_q3_k);
    int32_t offs[EL_GEMM_PANEL];
    for (int o = 0; o < EL_GEMM_PANEL; o++) offs[o] = (int32_t)(rows[o] - rows[0]);
    const __m512i row_off = _mm512_loadu_si512(offs);
    _Alignas(64) uint8_t tmp[EL_GEMM_PANEL][EL_QK_K];
    _Alignas(64) int16_t mins[EL_GEMM_PANEL][16];
    for (int64_t i = 0; i < nb; i++) {
        for (int o = 0; o < EL_GEMM_PANEL; o++) {
            const char *xb = rows[o] + i * block;
            __m512i v[4];
            if (type == EL_TYPE_Q2_K) {
                const el_block_q2_k *b2 = (const el_block_q2_k *)xb;
                fold_q2_k(b2, v);
                __m128i m = _mm_and_si128(_mm_srli_epi16(_mm_loadu_si128((const __m128i *)b2->scales), 4),
                                          _mm_set1_epi8(0x0F));
                _mm256_store_si256((__m256i *)mins[o], _mm256_cvtepu8_epi16(m));
            } else {
                fold_q3_k((const el_block_q3_k *)xb, v);
            }
            #pragma GCC unroll 4
            for (int c = 0; c < 4; c++) _mm512_store_si512(tmp[o] + 64 * c, v[c]);
        }
        __m512i *q = p.q + i * BLOCK_DWORDS;
        for (int c = 0; c < EL_QK_K / 16; c++) transpose16((const char *)tmp, EL_QK_K, c, q + 4 * c);
        /* d (and Q2_K's dmin after it) are the block's last 4 bytes (2 for Q3_K) */
        __m512i h = _mm512_i32gather_epi32(row_off, rows[0] + i * block + block - 4, 1);
        if (type == EL_TYPE_Q2_K) {
            _mm512_store_ps(p.d + i * EL_GEMM_PANEL, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h)));
            _mm512_store_ps(p.dmin + i * EL_GEMM_PANEL,
                            _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(h, 16))));
            /* the mins' 32 bytes a row: pairs 0-3, then 4-7 */
            transpose16((const char *)mins, sizeof mins[0], 0, p.mins + i * 8);
            transpose16((const char *)mins, sizeof mins[0], 1, p.mins + i * 8 + 4);
        } else {
            _mm512_store_ps(p.d + i * EL_GEMM_PANEL,
                            _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(h, 16))));
        }
    }
}

/* acc + dpbusd(w, the 4 bytes at p broadcast), the broadcast embedded in the instruction (gcc
 * emits a separate broadcast for the intrinsics, a vector slot per product). */
static inline __m512i dpbusd_bcast(__m512i acc, __m512i w, const void *p) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*(const int32_t *)p));
    return acc;
}

static inline __m512i dpwssd_bcast(__m512i acc, __m512i w, const void *p) {
    __asm__("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*(const int32_t *)p));
    return acc;
}

/* n activation rows (a constant after inlining) from act against the packed panel: per block
 * the quant sums start at the aux term, the float sums take d x ad times them, and Q2_K's take
 * off dmin x ad times the mins' sums. */
static inline __attribute__((always_inline)) void tile(el_type type, q23k_panel p, int64_t nb,
                                                       const char *act, size_t act_stride,
                                                       const el_gemm_aux *aux, float *y,
                                                       int64_t ldy, __mmask16 store, const int n) {
    __m512 f[TILE_ROWS];
    const el_block_q8_k *a[TILE_ROWS];
    #pragma GCC unroll 8
    for (int r = 0; r < n; r++) {
        f[r] = _mm512_setzero_ps();
        a[r] = (const el_block_q8_k *)(act + (size_t)r * act_stride);
    }
    for (int64_t i = 0; i < nb; i++) {
        __m512i acc[TILE_ROWS];
        #pragma GCC unroll 8
        for (int r = 0; r < n; r++) acc[r] = _mm512_set1_epi32(aux[r * nb + i].comp);
        const __m512i *q = p.q + i * BLOCK_DWORDS;
        for (int t = 0; t < BLOCK_DWORDS; t++) {
            __m512i w = _mm512_load_si512(q + t);
            #pragma GCC unroll 8
            for (int r = 0; r < n; r++) acc[r] = dpbusd_bcast(acc[r], w, a[r][i].qs + 4 * t);
        }
        __m512 dw = _mm512_load_ps(p.d + i * EL_GEMM_PANEL);
        #pragma GCC unroll 8
        for (int r = 0; r < n; r++)
            f[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r]),
                                   _mm512_mul_ps(dw, _mm512_set1_ps(a[r][i].d)), f[r]);
        if (type == EL_TYPE_Q2_K) {
            #pragma GCC unroll 8
            for (int r = 0; r < n; r++) acc[r] = _mm512_setzero_si512();
            #pragma GCC unroll 8
            for (int pair = 0; pair < 8; pair++) {
                __m512i m = _mm512_load_si512(p.mins + i * 8 + pair);
                #pragma GCC unroll 8
                for (int r = 0; r < n; r++) acc[r] = dpwssd_bcast(acc[r], m, &a[r][i].bsums[2 * pair]);
            }
            __m512 dmin = _mm512_load_ps(p.dmin + i * EL_GEMM_PANEL);
            #pragma GCC unroll 8
            for (int r = 0; r < n; r++)
                f[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(acc[r]),
                                        _mm512_mul_ps(dmin, _mm512_set1_ps(a[r][i].d)), f[r]);
        }
    }
    #pragma GCC unroll 8
    for (int r = 0; r < n; r++) _mm512_mask_storeu_ps(y + r * ldy, store, f[r]);
}

/* All n_rows activation rows, TILE_ROWS at a time, then the rest in one smaller tile. */
static inline __attribute__((always_inline)) void tiles(el_type type, q23k_panel p, int64_t nb,
                                                        const char *act, size_t act_stride,
                                                        const el_gemm_aux *aux, int64_t n_rows,
                                                        float *y, int64_t ldy, __mmask16 store) {
    int64_t r = 0;
    for (; r + TILE_ROWS <= n_rows; r += TILE_ROWS)
        tile(type, p, nb, act + (size_t)r * act_stride, act_stride, aux + r * nb, y + r * ldy,
             ldy, store, TILE_ROWS);
    const char *ar = act + (size_t)r * act_stride;
    const el_gemm_aux *xr = aux + r * nb;
    float *yr = y + r * ldy;
    switch (n_rows - r) {
    case 1: tile(type, p, nb, ar, act_stride, xr, yr, ldy, store, 1); break;
    case 2: tile(type, p, nb, ar, act_stride, xr, yr, ldy, store, 2); break;
    case 3: tile(type, p, nb, ar, act_stride, xr, yr, ldy, store, 3); break;
    case 4: tile(type, p, nb, ar, act_stride, xr, yr, ldy, store, 4); break;
    case 5: tile(type, p, nb, ar, act_stride, xr, yr, ldy, store, 5); break;
    case 6: tile(type, p, nb, ar, act_stride, xr, yr, ldy, store, 6); break;
    case 7: tile(type, p, nb, ar, act_stride, xr, yr, ldy, store, 7); break;
    default: break;
    }
}

static void gemm_q23k(el_type type, const el_weight *w, int64_t o0, int64_t n_out,
                      const char *act, size_t act_stride, const el_gemm_aux *aux, int64_t n_rows,
                      float *y, int64_t ldy, void *panel) {
    const char *rows[EL_GEMM_PANEL];
    for (int o = 0; o < EL_GEMM_PANEL; o++)
        rows[o] = (const char *)w->data + (o0 + (o < n_out ? o : n_out - 1)) * w->row_bytes;
    int64_t nb = w->k_in / EL_QK_K;
    q23k_panel p = panel_parts(panel, nb);
    pack_panel(type, rows, nb, p);
    __mmask16 store = (__mmask16)((1u << n_out) - 1);
    if (type == EL_TYPE_Q2_K)
        tiles(EL_TYPE_Q2_K, p, nb, act, act_stride, aux, n_rows, y + o0, ldy, store);
    else
        tiles(EL_TYPE_Q3_K, p, nb, act, act_stride, aux, n_rows, y + o0, ldy, store);
}

void el_gemm_q2_k_avx512(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                         size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y,
                         int64_t ldy, void *panel) {
    gemm_q23k(EL_TYPE_Q2_K, w, o0, n_out, act, act_stride, aux, n_rows, y, ldy, panel);
}

void el_gemm_q3_k_avx512(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                         size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y,
                         int64_t ldy, void *panel) {
    gemm_q23k(EL_TYPE_Q3_K, w, o0, n_out, act, act_stride, aux, n_rows, y, ldy, panel);
}

#endif
