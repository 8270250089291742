/* gemm_neon_dotprod.c - the packed products of gemm.h with the aarch64 dot product instructions.
 * The panel holds signed weight quants (int4 as nibble - 8, int8 as they are), so SDOT takes them
 * directly and no offset terms are wanted (el_kernels.gemm_signed). One SDOT by lane
 * (vdotq_laneq_s32) accumulates 4 outputs of the panel for one activation row and 4 elements,
 * taking the activation's 4 bytes from one lane of a 16-byte load; four cover the 16 outputs. A
 * tile of up to TILE_ROWS activation rows shares each load of the packed weights. Covers q4_0,
 * q8_0 (against q8_0 activations) and w4, w8, w4g32/64/128 (against a8 activations). Built with
 * -march=armv8.2-a+dotprod on aarch64 (see Makefile); neon_dotprod.c's table names it. */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

#include <arm_neon.h>
#include <string.h>

#include "kernels/blocks.h"
#include "kernels/edge.h"
#include "kernels/gemm.h"

enum {
    TILE_ROWS = 4, /* activation rows per tile: 16 int32 accumulators, 4 + 4 operand registers */
    ACT_LOAD = 16, /* elements per activation load: 4 lanes of 4 bytes */
    PACKED4 = 4 * EL_GEMM_PANEL, /* packed bytes per 4 elements: [16 rows][4 bytes] */
};

static float group_scale(const el_gemm_layout *l, const char *row, int64_t g) {
    if (l->group_bytes == 0) return el_edge_row_scale(row);
    uint16_t d;
    memcpy(&d, row + (size_t)g * l->group_bytes, sizeof d);
    return el_fp16_to_fp32(d);
}

/* The 16 bytes at off of rows r[0..3] transposed by 4-byte words: out[c] holds word c (bytes
 * 4c..4c+3) of row i in its lane i. */
static inline void transpose4x4(const char *const *r, size_t off, int8x16_t out[4]) {
    int32x4_t x0 = vreinterpretq_s32_s8(vld1q_s8((const int8_t *)(r[0] + off)));
    int32x4_t x1 = vreinterpretq_s32_s8(vld1q_s8((const int8_t *)(r[1] + off)));
    int32x4_t x2 = vreinterpretq_s32_s8(vld1q_s8((const int8_t *)(r[2] + off)));
    int32x4_t x3 = vreinterpretq_s32_s8(vld1q_s8((const int8_t *)(r[3] + off)));
    int64x2_t t0 = vreinterpretq_s64_s32(vtrn1q_s32(x0, x1)); /* words 0, 2 of rows 0, 1 */
    int64x2_t t1 = vreinterpretq_s64_s32(vtrn2q_s32(x0, x1)); /* words 1, 3 of rows 0, 1 */
    int64x2_t t2 = vreinterpretq_s64_s32(vtrn1q_s32(x2, x3));
    int64x2_t t3 = vreinterpretq_s64_s32(vtrn2q_s32(x2, x3));
    out[0] = vreinterpretq_s8_s64(vtrn1q_s64(t0, t2));
    out[1] = vreinterpretq_s8_s64(vtrn1q_s64(t1, t3));
    out[2] = vreinterpretq_s8_s64(vtrn2q_s64(t0, t2));
    out[3] = vreinterpretq_s8_s64(vtrn2q_s64(t1, t3));
}

/* Chunk c of the 16 rows as signed bytes, elements 4s..4s+3 of row o at
 * dst + s * PACKED4 + 4 o. int4: elements 0-15 are the low nibbles, 16-31 the high ones. */
static void pack_chunk(const el_gemm_layout *l, const char *const *rows, int64_t c, int8_t *dst) {
    size_t off = el_gemm_quant_offset(l, c);
    const uint8x16_t low4 = vdupq_n_u8(0x0F);
    const int8x16_t eight = vdupq_n_s8(8);
    for (int p = 0; p < EL_GEMM_PANEL / 4; p++) { /* rows 4p .. 4p+3 */
        int8x16_t t[4];
        transpose4x4(rows + 4 * p, off, t);
        if (l->int8) {
            for (int s = 0; s < 4; s++) vst1q_s8(dst + s * PACKED4 + 16 * p, t[s]);
            transpose4x4(rows + 4 * p, off + 16, t);
            for (int s = 0; s < 4; s++) vst1q_s8(dst + (4 + s) * PACKED4 + 16 * p, t[s]);
        } else {
            for (int s = 0; s < 4; s++) {
                uint8x16_t u = vreinterpretq_u8_s8(t[s]);
                int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(u, low4)), eight);
                int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(u, 4)), eight);
                vst1q_s8(dst + s * PACKED4 + 16 * p, lo);
                vst1q_s8(dst + (4 + s) * PACKED4 + 16 * p, hi);
            }
        }
    }
}

/* The panel: quants [k_in / 4][16][4] signed bytes, then the scales [groups][16] as floats.
 * Rows past n_out repeat the last one (their outputs are not stored). */
static void pack_panel(const el_weight *w, int64_t o0, int64_t n_out, void *panel) {
    el_gemm_layout l = el_gemm_layout_of(w);
    const char *rows[EL_GEMM_PANEL];
    for (int o = 0; o < EL_GEMM_PANEL; o++)
        rows[o] = (const char *)w->data + (o0 + (o < n_out ? o : n_out - 1)) * w->row_bytes;
    int8_t *q = panel;
    for (int64_t c = 0; c < w->k_in / EL_GEMM_CHUNK; c++)
        pack_chunk(&l, rows, c, q + c * (EL_GEMM_CHUNK / 4) * PACKED4);
    float *scales = (float *)((char *)panel + (size_t)w->k_in * EL_GEMM_PANEL);
    for (int64_t g = 0; g < el_gemm_groups(w); g++) {
        for (int o = 0; o < EL_GEMM_PANEL; o++)
            scales[g * EL_GEMM_PANEL + o] = group_scale(&l, rows[o], g);
    }
}

typedef struct tile_args {
    const int8_t *q;         /* packed quants */
    const float *scales;     /* [groups][16] */
    int64_t groups, group;   /* scale groups, and elements per group */
    const int8_t *act;       /* first activation quant of row 0 */
    size_t act_stride, act_group; /* bytes between rows, and between groups within a row */
    const el_gemm_aux *aux;
    float *y;
    int64_t ldy, n_out;
} tile_args;

/* acc[r][j] (outputs 4j..4j+3 of activation row r) += the dots of w[j] (4 elements of those
 * outputs) with the 4 activation bytes in lane `lane` of a[r]. */
static inline __attribute__((always_inline)) void dot_lane(int32x4_t acc[][4], const int8_t *q,
                                                           const int8x16_t *a, const int n,
                                                           const int lane) {
    int8x16_t w[4];
    #pragma GCC unroll 4
    for (int j = 0; j < 4; j++) w[j] = vld1q_s8(q + 16 * j);
    #pragma GCC unroll 4
    for (int r = 0; r < n; r++) {
        #pragma GCC unroll 4
        for (int j = 0; j < 4; j++) acc[r][j] = vdotq_laneq_s32(acc[r][j], w[j], a[r], lane);
    }
}

/* n activation rows (a constant after inlining) from row r0: per group, exact integer sums
 * (they start at 0: with signed weights the aux comp terms are 0 and not read), then scaled by
 * (weight scales x activation scale) into float sums in group order, so each output is the
 * same whatever tile, panel or thread computes it. */
static inline __attribute__((always_inline)) void tile(const tile_args *t, int64_t r0,
                                                       const int n) {
    float32x4_t f[TILE_ROWS][4];
    const int8_t *a[TILE_ROWS];
    const el_gemm_aux *ax[TILE_ROWS];
    #pragma GCC unroll 4
    for (int r = 0; r < n; r++) {
        #pragma GCC unroll 4
        for (int j = 0; j < 4; j++) f[r][j] = vdupq_n_f32(0.0f);
        a[r] = t->act + (size_t)(r0 + r) * t->act_stride;
        ax[r] = t->aux + (r0 + r) * t->groups;
    }
    const int8_t *q = t->q;
    for (int64_t g = 0; g < t->groups; g++) {
        int32x4_t acc[TILE_ROWS][4];
        #pragma GCC unroll 4
        for (int r = 0; r < n; r++) {
            #pragma GCC unroll 4
            for (int j = 0; j < 4; j++) acc[r][j] = vdupq_n_s32(0);
        }
        for (int64_t e = 0; e < t->group; e += ACT_LOAD, q += 4 * PACKED4) {
            int8x16_t av[TILE_ROWS];
            #pragma GCC unroll 4
            for (int r = 0; r < n; r++) av[r] = vld1q_s8(a[r] + e);
            dot_lane(acc, q, av, n, 0);
            dot_lane(acc, q + PACKED4, av, n, 1);
            dot_lane(acc, q + 2 * PACKED4, av, n, 2);
            dot_lane(acc, q + 3 * PACKED4, av, n, 3);
        }
        const float *dw = t->scales + g * EL_GEMM_PANEL;
        #pragma GCC unroll 4
        for (int r = 0; r < n; r++) {
            #pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                float32x4_t d = vmulq_n_f32(vld1q_f32(dw + 4 * j), ax[r][g].d);
                f[r][j] = vfmaq_f32(f[r][j], vcvtq_f32_s32(acc[r][j]), d);
            }
            a[r] += t->act_group;
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < n; r++) {
        float *yr = t->y + (r0 + r) * t->ldy;
        if (t->n_out == EL_GEMM_PANEL) {
            #pragma GCC unroll 4
            for (int j = 0; j < 4; j++) vst1q_f32(yr + 4 * j, f[r][j]);
        } else { /* a partial panel: only the outputs that exist */
            float out[EL_GEMM_PANEL];
            #pragma GCC unroll 4
            for (int j = 0; j < 4; j++) vst1q_f32(out + 4 * j, f[r][j]);
            memcpy(yr, out, (size_t)t->n_out * sizeof *out);
        }
    }
}

void el_gemm_neon_dotprod(const el_weight *w, int64_t o0, int64_t n_out, const char *act,
                          size_t act_stride, const el_gemm_aux *aux, int64_t n_rows, float *y,
                          int64_t ldy, void *panel) {
    pack_panel(w, o0, n_out, panel);
    int64_t group = el_gemm_group_size(w);
    bool q8_act = w->type == EL_TYPE_Q4_0 || w->type == EL_TYPE_Q8_0;
    tile_args t = {
        .q = panel,
        .scales = (const float *)((const char *)panel + (size_t)w->k_in * EL_GEMM_PANEL),
        .groups = el_gemm_groups(w),
        .group = group,
        /* q8_0 blocks: fp16 d, then 32 quants; a8 rows: the header, then the quants */
        .act = (const int8_t *)act + (q8_act ? sizeof(uint16_t) : sizeof(el_a8_header)),
        .act_stride = act_stride,
        .act_group = q8_act ? sizeof(el_block_q8_0) : (size_t)group,
        .aux = aux,
        .y = y + o0,
        .ldy = ldy,
        .n_out = n_out,
    };
    int64_t r = 0;
    for (; r + TILE_ROWS <= n_rows; r += TILE_ROWS) tile(&t, r, TILE_ROWS);
    switch (n_rows - r) {
    case 1: tile(&t, r, 1); break;
    case 2: tile(&t, r, 2); break;
    case 3: tile(&t, r, 3); break;
    default: break;
    }
}

#endif
