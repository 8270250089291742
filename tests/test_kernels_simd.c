/* test_kernels_simd.c - every ISA-specific kernel against the portable reference: dot products,
 * tiles and gemvs on blocks of random bytes (every bit pattern of quants and scales) and
 * awkward lengths, activation quantizers and the fp16 row conversion byte for byte. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/blocks.h"
#include "kernels/dispatch.h"
#include "kernels/edge.h"
#include "testutil.h"

/* Random bytes for a weight row, with its block scales replaced by sane fp16 values (random
 * bits there would mostly be huge, inf or nan). */
static void random_weights(el_type type, void *data, int64_t n, test_rng *r) {
    size_t bytes = el_row_size(type, n);
    uint8_t *p = data;
    for (size_t i = 0; i < bytes; i++) p[i] = (uint8_t)test_rand_u32(r);
    int64_t nb = n / el_type_layout_get(type)->block_size;
    for (int64_t b = 0; b < nb; b++) {
        uint16_t d = el_fp32_to_fp16(test_rand_uniform(r, -0.02f, 0.02f));
        uint16_t dmin = el_fp32_to_fp16(test_rand_uniform(r, 0.0f, 0.01f));
        void *blk = (char *)data + b * el_type_layout_get(type)->type_size;
        switch (type) {
        case EL_TYPE_Q8_0: ((el_block_q8_0 *)data)[b].d = d; break;
        case EL_TYPE_Q4_0: ((el_block_q4_0 *)data)[b].d = d; break;
        case EL_TYPE_Q4_1: ((el_block_q4_1 *)data)[b].d = d, ((el_block_q4_1 *)data)[b].m = dmin; break;
        case EL_TYPE_Q5_0: ((el_block_q5_0 *)data)[b].d = d; break;
        case EL_TYPE_Q5_1: ((el_block_q5_1 *)data)[b].d = d, ((el_block_q5_1 *)data)[b].m = dmin; break;
        case EL_TYPE_IQ4_NL: ((el_block_iq4_nl *)data)[b].d = d; break;
        case EL_TYPE_IQ4_XS: ((el_block_iq4_xs *)data)[b].d = d; break;
        case EL_TYPE_Q2_K:
            ((el_block_q2_k *)data)[b].d = d;
            ((el_block_q2_k *)data)[b].dmin = dmin;
            break;
        case EL_TYPE_Q3_K: ((el_block_q3_k *)data)[b].d = d; break;
        case EL_TYPE_Q4_K:
            ((el_block_q4_k *)data)[b].d = d;
            ((el_block_q4_k *)data)[b].dmin = dmin;
            break;
        case EL_TYPE_Q5_K:
            ((el_block_q5_k *)data)[b].d = d;
            ((el_block_q5_k *)data)[b].dmin = dmin;
            break;
        case EL_TYPE_Q6_K: ((el_block_q6_k *)data)[b].d = d; break;
        case EL_TYPE_W4G32: case EL_TYPE_W4G64: case EL_TYPE_W4G128:
            memcpy(blk, &d, sizeof d);
            break;
        default: break;
        }
    }
    if (el_type_layout_get(type)->row_header != 0) { /* a per-row float scale */
        float d = test_rand_uniform(r, -0.02f, 0.02f);
        memcpy(data, &d, sizeof d);
    }
    if (type == EL_TYPE_F32 || type == EL_TYPE_F16 || type == EL_TYPE_BF16) {
        float *f = malloc((size_t)n * sizeof *f);
        for (int64_t i = 0; i < n; i++) f[i] = test_rand_uniform(r, -1.0f, 1.0f);
        el_type_kernels_get(type)->from_float(f, data, n);
        free(f);
    }
}

/* Every dot product of the table that is not the reference's own. */
static int compare_tables(const el_kernels *simd) {
    test_rng r = {99};
    for (uint32_t ty = 0; ty < EL_TYPE_COUNT; ty++) {
        const el_type_kernels *ref = el_type_kernels_get(ty);
        if (simd->vec_dot[ty] == NULL || ref == NULL || simd->vec_dot[ty] == ref->vec_dot) continue;
        const el_type_kernels *wt = ref;
        const el_type_layout *wt_layout = el_type_layout_get((el_type)ty);
        const el_type_kernels *at = el_type_kernels_get(wt->vec_dot_type);
        int64_t unit = wt_layout->block_size == 1 ? 32 : wt_layout->block_size;
        /* 1-9 blocks, then lengths past the kernels' groups of 8 blocks with every tail */
        static const int block_counts[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 23, 31, 64};
        for (size_t bc = 0; bc < sizeof block_counts / sizeof block_counts[0]; bc++) {
            int blocks = block_counts[bc];
            for (int extra = 0; extra < (wt_layout->block_size == 1 ? 16 : 1); extra += 5) {
                int64_t n = unit * blocks + extra;
                void *w = malloc(el_row_size((el_type)ty, n) + 1);
                float *a = malloc((size_t)n * sizeof *a);
                void *aq = malloc(el_row_size(EL_TYPE_F32, n));
                float *ad = malloc((size_t)n * sizeof *ad);
                float *wd = malloc((size_t)n * sizeof *wd);
                CHECK(w && a && aq && ad && wd);
                random_weights((el_type)ty, w, n, &r);
                for (int64_t i = 0; i < n; i++) a[i] = test_rand_uniform(&r, -4.0f, 4.0f);
                a[r.s % n] = 9.0f; /* an outlier: some quants at +-127 */
                at->from_float(a, aq, n);
                at->to_float(aq, ad, n);
                wt->to_float(w, wd, n);
                double mag = 0.0;
                for (int64_t i = 0; i < n; i++) mag += fabs((double)wd[i] * ad[i]);
                float want = NAN, got = NAN;
                wt->vec_dot(n, &want, w, aq);
                simd->vec_dot[(el_type)ty](n, &got, w, aq);
                if (!(fabs((double)got - want) <= 2e-5 * mag + 1e-6)) {
                    test_note("%s %s n=%lld: got %.9g, reference %.9g", simd->isa,
                              wt_layout->ggml_name, (long long)n, got, want);
                    return TEST_FAIL;
                }
                free(w), free(a), free(aq), free(ad), free(wd);
            }
        }
    }
    return TEST_PASS;
}

/* Activation quantizers must write exactly the reference's bytes: both compute d = amax / 127
 * (/ 32767 for A16) and q = round-to-nearest-even(x * (1 / d)) in float (Q8_1: halves away
 * from zero, as roundf), and round d to fp16 the same way. Rows mix magnitudes (down to fp16
 * subnormal scales), all-zero blocks, exact halves, and blocks of scale 1 where the halves are
 * ties of the rounding. */
static int compare_quantizers(const el_kernels *simd) {
    static const el_type types[] = {EL_TYPE_Q8_0, EL_TYPE_Q8_1, EL_TYPE_Q8_K, EL_TYPE_A8,
                                    EL_TYPE_A16};
    test_rng r = {7};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const el_type_kernels *t = el_type_kernels_get(types[ti]);
        const el_type_layout *layout = el_type_layout_get(types[ti]);
        for (int blocks = 1; blocks <= 5; blocks++) {
            int64_t n = layout->block_size * blocks;
            size_t bytes = el_row_size(types[ti], n);
            float *x = malloc((size_t)n * sizeof *x);
            char *want = malloc(bytes), *got = malloc(bytes);
            CHECK(x && want && got);
            for (int rep = 0; rep < 20; rep++) {
                float scale = ldexpf(1.0f, (int)(test_rand_u32(&r) % 40) - 30);
                for (int64_t i = 0; i < n; i++) {
                    x[i] = test_rand_uniform(&r, -1.0f, 1.0f) * scale;
                    if (test_rand_u32(&r) % 8 == 0) x[i] = (float)((int)(test_rand_u32(&r) % 255) - 127) * 0.5f;
                }
                if (rep % 5 == 0) memset(x, 0, (size_t)layout->block_size * sizeof *x);
                if (rep % 5 == 1) { /* a first block of scale 1 (amax 127): its halves are ties */
                    for (int64_t i = 0; i < layout->block_size; i++)
                        x[i] = (float)((int)(test_rand_u32(&r) % 253) - 126) * 0.5f;
                    x[0] = 127.0f;
                }
                t->from_float(x, want, n);
                memset(got, 0xAB, bytes);
                simd->quantize[types[ti]](x, got, n);
                if (memcmp(want, got, bytes) != 0) {
                    test_note("%s quantize %s n=%lld rep %d: bytes differ from the reference",
                              simd->isa, layout->ggml_name, (long long)n, rep);
                    return TEST_FAIL;
                }
            }
            free(x), free(want), free(got);
        }
    }
    return TEST_PASS;
}

/* Rows of a fixed scale (static activation scales, profiles) must be the reference's bytes,
 * sums and block scales, for A8, A16 and the block types (q8_0 and q8_1 on the grid of the scale's
 * f16 value): values far beyond the scale's range (clamped to +-127), exact halves of the step
 * (ties, rounded to even), zeros, NaN and infinities, in rows of 1 to 5 chunks or blocks; at
 * scales that are powers of two, and at scales an f16 does not hold exactly (its normal range
 * and its subnormals), where a kernel on d instead of its f16 step gives other bytes. */
static int compare_static(const el_kernels *simd) {
    static const el_type types[] = {EL_TYPE_A8, EL_TYPE_A16, EL_TYPE_Q8_0, EL_TYPE_Q8_1,
                                    EL_TYPE_Q8_K};
    el_kernels ref;
    el_kernels_reference(&ref);
    test_rng r = {13};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        el_type t = types[ti];
        int64_t unit = t == EL_TYPE_Q8_K ? EL_QK_K : 32;
        if (!simd->quantize_static[t]) {
            test_note("%s: no static quantizer for type %d", simd->isa, (int)t);
            return TEST_FAIL;
        }
        for (int64_t n = unit; n <= 5 * unit; n += unit) {
            size_t bytes = el_row_size(t, n);
            float *x = malloc((size_t)n * sizeof *x);
            char *want = malloc(bytes), *got = malloc(bytes);
            CHECK(x && want && got);
            static const float odd_scales[] = {0.0123f, 3e-6f, 1.7e-5f, 0.31f};
            for (int rep = 0; rep < 24; rep++) {
                float d = rep % 3 == 2 ? odd_scales[(rep / 3) % 4]
                                       : ldexpf(1.0f, (int)(test_rand_u32(&r) % 20) - 14);
                float step = el_static_step(t, d);
                for (int64_t i = 0; i < n; i++) {
                    uint32_t pick = test_rand_u32(&r) % 5;
                    x[i] = pick == 0 ? (float)((int)(test_rand_u32(&r) % 301) - 150) * 0.5f * step
                           : pick == 1 ? test_rand_uniform(&r, -1e6f, 1e6f) * d
                           : pick == 2 ? 0.0f
                           : pick == 3 ? test_rand_uniform(&r, -127.0f, 127.0f) * d
                                       : (const float[]){NAN, INFINITY, -INFINITY}[i % 3];
                }
                ref.quantize_static[t](x, want, n, d);
                memset(got, 0xAB, bytes);
                simd->quantize_static[t](x, got, n, d);
                if (memcmp(want, got, bytes) != 0) {
                    test_note("%s static quantizer of type %d n=%lld rep %d: bytes differ from "
                              "the reference", simd->isa, (int)t, (long long)n, rep);
                    return TEST_FAIL;
                }
            }
            free(x), free(want), free(got);
        }
    }
    return TEST_PASS;
}

/* The row conversion to fp16 (the KV cache's rows) must write exactly el_fp32_to_fp16's bits:
 * magnitudes from fp16's subnormals (below 2^-14) past its largest finite value (65504, then
 * inf), exact ties between two halves (rounded to even), zeros of both signs, inf and NaN, in
 * rows of every length to 40 (vector bodies and tails) and 100. */
static int compare_f16_rows(const el_kernels *simd) {
    enum { MAX_N = 100 };
    static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 65504.0f, 65520.0f,
                                    65519.99f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f,
                                    1.0f + 0x1p-11f, 1.0f + 0x3p-11f, -(1.0f + 0x1p-11f),
                                    0x1.0p-14f - 0x1p-26f, 0x1.002p-15f};
    test_rng r = {21};
    float x[MAX_N];
    uint16_t want[MAX_N], got[MAX_N + 1];
    for (int64_t n = 1; n <= MAX_N; n = n < 40 ? n + 1 : MAX_N) {
        for (int rep = 0; rep < 4; rep++) {
            for (int64_t i = 0; i < n; i++) {
                uint32_t pick = test_rand_u32(&r) % 4;
                if (pick == 0) {
                    x[i] = special[test_rand_u32(&r) % (sizeof special / sizeof special[0])];
                } else if (pick == 1) { /* a tie: halfway between two normal halves */
                    uint32_t h = 0x0400 + test_rand_u32(&r) % 0x7000;
                    x[i] = (el_fp16_to_fp32((uint16_t)h) + el_fp16_to_fp32((uint16_t)(h + 1))) / 2;
                } else {
                    x[i] = test_rand_uniform(&r, -1.0f, 1.0f) *
                           ldexpf(1.0f, (int)(test_rand_u32(&r) % 50) - 30);
                }
                want[i] = el_fp32_to_fp16(x[i]);
            }
            got[n] = 0xABCD;
            simd->quantize[EL_TYPE_F16](x, got, n);
            CHECK(got[n] == 0xABCD); /* nothing written past the row */
            for (int64_t i = 0; i < n; i++) {
                if (got[i] != want[i]) {
                    test_note("%s fp16 row of %lld: x[%lld] = %a gives 0x%04x, want 0x%04x",
                              simd->isa, (long long)n, (long long)i, x[i], got[i], want[i]);
                    return TEST_FAIL;
                }
            }
        }
        if (n == MAX_N) break;
    }
    return TEST_PASS;
}

/* sum |w[i] * a[i]| of the dequantized rows: the scale of float rounding in a dot product. */
static double dot_magnitude(el_type wtype, const void *w, const void *a, int64_t n) {
    const el_type_kernels *wt = el_type_kernels_get(wtype),
                          *at = el_type_kernels_get(wt->vec_dot_type);
    float *wd = malloc((size_t)n * sizeof *wd), *ad = malloc((size_t)n * sizeof *ad);
    if (wd == NULL || ad == NULL) return NAN;
    wt->to_float(w, wd, n);
    at->to_float(a, ad, n);
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) m += fabs((double)wd[i] * ad[i]);
    free(wd), free(ad);
    return m;
}

/* Each output of a tile against the reference vec_dot of its weight row and activation row;
 * rows are strided with padding so a stride mix-up shows. */
static int compare_tiles(const el_kernels *simd) {
    test_rng r = {31};
    for (uint32_t ty = 0; ty < EL_TYPE_COUNT; ty++) {
        if (simd->tile[ty] == NULL) continue;
        const el_type_kernels *wt = el_type_kernels_get(ty);
        const el_type_layout *wt_layout = el_type_layout_get(ty);
        const el_type_kernels *at = el_type_kernels_get(wt->vec_dot_type);
        for (int blocks = 1; blocks <= 9; blocks += 2) {
            int64_t n = wt_layout->block_size * blocks;
            size_t w_stride = el_row_size((el_type)ty, n) + 8; /* padded, aligned as the blocks */
            size_t a_stride = el_row_size(wt->vec_dot_type, n) + 4;
            int64_t ldy = EL_TILE + 3;
            char *w = malloc(w_stride * EL_TILE), *aq = malloc(a_stride * EL_TILE);
            float *a = malloc((size_t)n * sizeof *a), *y = malloc(sizeof(float) * EL_TILE * ldy);
            CHECK(w && aq && a && y);
            for (int row = 0; row < EL_TILE; row++) {
                random_weights((el_type)ty, w + row * w_stride, n, &r);
                for (int64_t i = 0; i < n; i++) a[i] = test_rand_uniform(&r, -4.0f, 4.0f);
                a[test_rand_u32(&r) % n] = -9.0f;
                at->from_float(a, aq + row * a_stride, n);
            }
            for (int i = 0; i < EL_TILE * ldy; i++) y[i] = 12345.0f;
            simd->tile[ty](n, y, ldy, w, w_stride, aq, a_stride);
            for (int ar = 0; ar < EL_TILE; ar++) {
                for (int o = 0; o < ldy; o++) {
                    float got = y[ar * ldy + o];
                    if (o >= EL_TILE) {
                        CHECK(got == 12345.0f); /* outside the tile: untouched */
                        continue;
                    }
                    const char *wo = w + o * w_stride, *ao = aq + ar * a_stride;
                    float want = NAN;
                    wt->vec_dot(n, &want, wo, ao);
                    double mag = dot_magnitude((el_type)ty, wo, ao, n);
                    if (!(fabs((double)got - want) <= 2e-5 * mag + 1e-6)) {
                        test_note("%s tile %s n=%lld y[%d][%d]: got %.9g, reference %.9g",
                                  simd->isa, wt_layout->ggml_name, (long long)n, ar, o, got, want);
                        return TEST_FAIL;
                    }
                }
            }
            free(w), free(aq), free(a), free(y);
        }
    }
    return TEST_PASS;
}

/* Each output of a gemv over 1 to GEMV_ROWS weight rows (counts below, at and past the kernels'
 * companies of 4 and 2 rows, with rows left over) against the reference vec_dot of its row, and
 * bit for bit against the same kernel on that row alone (results must not depend on how rows are
 * split between threads). Lengths leave every remainder of the kernels' groups of blocks and
 * of 128 elements, reach past the slices the kernels prepare at a time, and span the row lengths
 * at which the AVX-512 kernels read 4, 2 or 1 rows side by side (160-480 blocks); weight rows are
 * strided with padding so a stride mix-up shows, and the bytes after the activation row and
 * the last weight row are poisoned (reading them shows as a wrong result). */
enum { GEMV_ROWS = 13 };

static int compare_gemvs(const el_kernels *simd) {
    test_rng r = {57};
    static const int block_counts[] = {1,  2,  3,  4,   5,   6,   7,   8,   9,  11,
                                       13, 16, 17, 64, 67, 160, 256, 320, 480, 521};
    static const int row_counts[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 13};
    for (uint32_t ty = 0; ty < EL_TYPE_COUNT; ty++) {
        if (simd->gemv[ty] == NULL) continue;
        const el_type_kernels *wt = el_type_kernels_get(ty);
        const el_type_layout *wt_layout = el_type_layout_get(ty);
        const el_type_kernels *at = el_type_kernels_get(wt->vec_dot_type);
        int64_t unit = wt_layout->block_size == 1 ? 32 : wt_layout->block_size;
        for (size_t bc = 0; bc < sizeof block_counts / sizeof block_counts[0]; bc++) {
            int64_t n = unit * block_counts[bc];
            size_t w_stride = el_row_size((el_type)ty, n) + 8; /* padded, aligned as the blocks */
            size_t a_bytes = el_row_size(wt->vec_dot_type, n);
            char *w = malloc(w_stride * GEMV_ROWS), *aq = malloc(a_bytes + 64);
            float *a = malloc((size_t)n * sizeof *a), y[GEMV_ROWS + 1];
            float want[GEMV_ROWS], alone[GEMV_ROWS];
            double mag[GEMV_ROWS];
            CHECK(w && aq && a);
            memset(w, 0xFF, w_stride * GEMV_ROWS);
            for (int row = 0; row < GEMV_ROWS; row++)
                random_weights((el_type)ty, w + row * w_stride, n, &r);
            for (int64_t i = 0; i < n; i++) a[i] = test_rand_uniform(&r, -4.0f, 4.0f);
            a[test_rand_u32(&r) % n] = -9.0f;
            at->from_float(a, aq, n);
            memset(aq + a_bytes, 0x7F, 64);
            for (int o = 0; o < GEMV_ROWS; o++) {
                const char *wo = w + o * w_stride;
                wt->vec_dot(n, &want[o], wo, aq);
                mag[o] = dot_magnitude((el_type)ty, wo, aq, n);
                simd->gemv[ty](n, &alone[o], 1, wo, w_stride, aq);
            }
            for (size_t rc = 0; rc < sizeof row_counts / sizeof row_counts[0]; rc++) {
                int rows = row_counts[rc];
                for (int o = 0; o <= rows; o++) y[o] = 12345.0f; /* sentinels */
                simd->gemv[ty](n, y, rows, w, w_stride, aq);
                CHECK(y[rows] == 12345.0f); /* past the outputs: untouched */
                for (int o = 0; o < rows; o++) {
                    if (!(fabs((double)y[o] - want[o]) <= 2e-5 * mag[o] + 1e-6)) {
                        test_note("%s gemv %s n=%lld rows %d y[%d]: got %.9g, reference %.9g",
                                  simd->isa, wt_layout->ggml_name, (long long)n, rows, o, y[o],
                                  want[o]);
                        return TEST_FAIL;
                    }
                    CHECK(memcmp(&alone[o], &y[o], sizeof alone[o]) == 0);
                }
            }
            free(w), free(aq), free(a);
        }
    }
    return TEST_PASS;
}

/* Each output of a multi-row gemv (2 and 3 activation rows, one weight read for all) or a
 * few-row gemv (2..EL_GEMV_FEW_MAX) bit for bit against the same table's gemv of that activation
 * row alone (concurrent sequences must get the bits a sequence has alone), over lengths that
 * leave every tail and reach past a prepared slice, row counts below, at and past whole panels
 * of 16, activation rows strided with padding; the outputs past each activation row's n_rows
 * are sentinels. */
static int compare_multi_entry(const el_kernels *simd, const el_gemv_multi_fn *entry,
                               int max_act, const char *what) {
    test_rng r = {71};
    static const int block_counts[] = {1, 3, 8, 9, 13, 64, 67, 521};
    static const int row_counts[] = {1, 2, 3, 5, 16, 21, 33};
    enum { ROWS = 33, LDY = ROWS + 1, MAX_ACT = EL_GEMV_FEW_MAX };
    for (uint32_t ty = 0; ty < EL_TYPE_COUNT; ty++) {
        if (entry[ty] == NULL) continue;
        CHECK(simd->gemv[ty] != NULL);
        const el_type_kernels *wt = el_type_kernels_get(ty);
        const el_type_layout *wt_layout = el_type_layout_get(ty);
        const el_type_kernels *at = el_type_kernels_get(wt->vec_dot_type);
        int64_t unit = wt_layout->block_size == 1 ? 32 : wt_layout->block_size;
        for (size_t bc = 0; bc < sizeof block_counts / sizeof block_counts[0]; bc++) {
            int64_t n = unit * block_counts[bc];
            if (wt_layout->block_size == 128 && block_counts[bc] == 521)
                n = 128 * 161; /* > a slice */
            size_t w_stride = el_row_size((el_type)ty, n) + 8;
            size_t a_stride = el_row_size(wt->vec_dot_type, n) + 8;
            char *w = malloc(w_stride * ROWS), *aq = malloc(a_stride * MAX_ACT);
            float *a = malloc((size_t)n * sizeof *a);
            static float alone[MAX_ACT][ROWS], y[MAX_ACT * LDY];
            CHECK(w && aq && a);
            memset(w, 0xFF, w_stride * ROWS);
            memset(aq, 0x7F, a_stride * MAX_ACT);
            for (int row = 0; row < ROWS; row++)
                random_weights((el_type)ty, w + row * w_stride, n, &r);
            for (int k = 0; k < max_act; k++) {
                for (int64_t i = 0; i < n; i++) a[i] = test_rand_uniform(&r, -4.0f, 4.0f);
                at->from_float(a, aq + k * a_stride, n);
            }
            for (int k = 0; k < max_act; k++)
                for (int o = 0; o < ROWS; o++)
                    simd->gemv[ty](n, &alone[k][o], 1, w + o * w_stride, w_stride,
                                   aq + k * a_stride);
            for (int n_act = 2; n_act <= max_act; n_act++)
                for (size_t rc = 0; rc < sizeof row_counts / sizeof row_counts[0]; rc++) {
                    int rows = row_counts[rc];
                    for (int i = 0; i < max_act * LDY; i++) y[i] = 12345.0f;
                    entry[ty](n, y, LDY, n_act, rows, w, w_stride, aq, a_stride);
                    for (int k = 0; k < max_act; k++)
                        for (int o = 0; o < LDY; o++) {
                            float got = y[k * LDY + o];
                            if (k >= n_act || o >= rows) {
                                CHECK(got == 12345.0f);
                                continue;
                            }
                            if (memcmp(&got, &alone[k][o], sizeof got) != 0) {
                                test_note("%s %s %s n=%lld %d activation rows, %d rows: "
                                          "y[%d][%d] = %.9g, alone %.9g",
                                          simd->isa, what, wt_layout->ggml_name, (long long)n,
                                          n_act, rows, k, o, got, alone[k][o]);
                                return TEST_FAIL;
                            }
                        }
                }
            free(w), free(aq), free(a);
        }
    }
    return TEST_PASS;
}

static int compare_gemv_multis(const el_kernels *simd) {
    if (compare_multi_entry(simd, simd->gemv_multi, EL_GEMV_MULTI_MAX, "gemv_multi") != TEST_PASS)
        return TEST_FAIL;
    return compare_multi_entry(simd, simd->gemv_few, EL_GEMV_FEW_MAX, "gemv_few");
}

/* W8A16 sums must be exact past the int32 range, so every kernel (dot product, tile, gemv) gives
 * the reference's bits:
 * random rows, and rows of one extreme weight (127, or -128 as a stored byte may hold) against
 * +-32767 on lengths whose sums pass 2^31 (65536 x 127 x 32767 = 2.7e11), where the result must
 * also be (d_w d_a) times the float of the sum worked out here by hand. */
static int compare_w8a16(const el_kernels *simd) {
    static const int64_t lengths[] = {32, 64, 992, 1024, 1056, 4128, 65536};
    test_rng r = {5};
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
        int64_t n = lengths[li];
        char *w = malloc(el_row_size(EL_TYPE_W8A16, n)), *a = malloc(el_row_size(EL_TYPE_A16, n));
        CHECK(w && a);
        float dw = 0.5f, da = 0.25f;
        memcpy(w, &dw, sizeof dw);
        memcpy(a, &da, sizeof da);
        for (int pattern = 0; pattern < 4; pattern++) {
            int8_t wq = pattern == 1 ? 127 : -128;
            int16_t aq = pattern == 3 ? 32767 : -32767;
            for (int64_t i = 0; i < n; i++) {
                int16_t v = pattern == 0 ? (int16_t)(test_rand_u32(&r) % 65535 - 32767) : aq;
                w[sizeof dw + i] = (char)(pattern == 0 ? (int8_t)test_rand_u32(&r) : wq);
                memcpy(a + sizeof da + 2 * i, &v, sizeof v);
            }
            float want = NAN, got = NAN, tile[EL_TILE * EL_TILE];
            el_type_kernels_get(EL_TYPE_W8A16)->vec_dot(n, &want, w, a);
            simd->vec_dot[EL_TYPE_W8A16](n, &got, w, a);
            if (memcmp(&want, &got, sizeof got) != 0) {
                test_note("%s w8a16 n=%lld pattern %d: got %.9g, reference %.9g", simd->isa,
                          (long long)n, pattern, got, want);
                return TEST_FAIL;
            }
            if (simd->tile[EL_TYPE_W8A16]) { /* the same rows EL_TILE times (strides 0) */
                simd->tile[EL_TYPE_W8A16](n, tile, EL_TILE, w, 0, a, 0);
                for (int t = 0; t < EL_TILE * EL_TILE; t++)
                    CHECK(memcmp(&want, &tile[t], sizeof want) == 0);
            }
            if (simd->gemv[EL_TYPE_W8A16]) { /* the row 9 times: alone and in company */
                float y[9];
                simd->gemv[EL_TYPE_W8A16](n, y, 9, w, 0, a);
                for (int t = 0; t < 9; t++) CHECK(memcmp(&want, &y[t], sizeof want) == 0);
            }
            if (pattern > 0) CHECK(want == dw * da * (float)((int64_t)wq * aq * n));
        }
        free(w), free(a);
    }
    return TEST_PASS;
}

static int compare_all(const el_kernels *k) {
    if (compare_tables(k) != TEST_PASS) return TEST_FAIL;
    if (compare_quantizers(k) != TEST_PASS) return TEST_FAIL;
    if (compare_static(k) != TEST_PASS) return TEST_FAIL;
    if (compare_f16_rows(k) != TEST_PASS) return TEST_FAIL;
    if (compare_w8a16(k) != TEST_PASS) return TEST_FAIL;
    if (compare_gemvs(k) != TEST_PASS) return TEST_FAIL;
    if (compare_gemv_multis(k) != TEST_PASS) return TEST_FAIL;
    return compare_tiles(k);
}

/* Each ISA level's table as the dispatcher composes it. */
static int check_level(const char *name, const char *why_not) {
    el_kernels k;
    if (!el_kernels_level(name, &k)) return test_skip(why_not);
    return compare_all(&k);
}

static int test_avx2(void) { return check_level("avx2", "no AVX2 on this CPU or in this build"); }

static int test_avx512(void) {
    return check_level("avx512", "no AVX-512 VNNI on this CPU or in this build");
}

static int test_neon(void) { return check_level("neon", "not an aarch64 build"); }

static int test_neon_dotprod(void) {
    return check_level("neon-dotprod", "no NEON dot product on this CPU or in this build");
}

/* Whatever the dispatcher picked (also under EL_FORCE_REFERENCE=1) must agree too. */
static int test_dispatched(void) {
    test_note("kernels in use: %s", el_kernels_get()->isa);
    return compare_all(el_kernels_get());
}

int main(void) {
    run_test("avx2", test_avx2);
    run_test("avx512", test_avx512);
    run_test("neon", test_neon);
    run_test("neon_dotprod", test_neon_dotprod);
    run_test("dispatched", test_dispatched);
    return tests_exit_code();
}
