/* test_kernels_gemm.c - the multi-row path of el_matmul (the packed gemm kernels where the CPU
 * has them) against the reference: activations quantized by the reference quantizer and dotted
 * by the reference vec_dot of the type, on awkward shapes (partial panels, 1..70 rows, pruned
 * views whose bytes outside the view are NaN), with 1, 2 and 3 threads giving identical bits;
 * every ISA table's gemm kernels this CPU runs, called directly, against the same reference and
 * split into other panels and row blocks giving identical bits, and rows in batches of 2..20 as
 * in a batch of 40; and the attention kernels (dispatched and per table) against el_attend_ref,
 * on float32 and fp16 keys and values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/threadpool.h"
#include "kernels/attend.h"
#include "kernels/dispatch.h"
#include "kernels/matmul.h"
#include "testutil.h"

static float rand_normal(test_rng *r) {
    float s = 0.0f;
    for (int i = 0; i < 4; i++) s += test_rand_uniform(r, -1.0f, 1.0f);
    return s * 0.866f;
}

typedef struct shape {
    el_type type;
    int64_t n_in, n_out, k_in, k_out, n_rows;
} shape;

/* The exact value of the reference's product of quantized operands, and its scale (sum of the
 * magnitudes of the terms), from the dequantized weight row and activation row. */
static void exact_dot(const float *w, const float *a, int64_t n, double *dot, double *mag) {
    *dot = 0.0, *mag = 0.0;
    for (int64_t i = 0; i < n; i++) {
        *dot += (double)w[i] * a[i];
        *mag += fabs((double)w[i] * a[i]);
    }
}

/* A quantized weight of s's stored size whose bytes outside the view are all ones (NaN scales:
 * reading them shows), and the dequantized view wd [k_out][k_in]. extreme: every 16 elements
 * one -16 and fifteen +15, so that the quantizers put the rest at their largest level. */
static void make_weight(const shape *s, test_rng *r, bool extreme, char *wq, float *wrow,
                        float *wd) {
    const el_type_kernels *t = el_type_kernels_get(s->type);
    size_t row_bytes = el_row_size(s->type, s->n_in), kept = el_row_size(s->type, s->k_in);
    for (int64_t o = 0; o < s->n_out; o++) {
        for (int64_t i = 0; i < s->n_in; i++)
            wrow[i] = extreme ? (i % 16 == 0 ? -16.0f : 15.0f) * 0.05f : rand_normal(r) * 0.05f;
        t->from_float(wrow, wq + o * row_bytes, s->n_in);
        if (o < s->k_out) {
            memset(wq + o * row_bytes + kept, 0xFF, row_bytes - kept);
            t->to_float(wq + o * row_bytes, wd + o * s->k_in, s->k_in);
        } else {
            memset(wq + o * row_bytes, 0xFF, row_bytes);
        }
    }
}

/* y [n_rows][ldy] against the reference: each activation row x[row] quantized by the reference
 * quantizer, dotted by the reference vec_dot, both within a float rounding bound of the exact
 * product of the quantized operands; y's columns past k_out still hold the sentinel. */
/* What Q8_1's fp16 block sums s (which the offset types' min multiplies) move a product of row
 * w (Q4_1 or Q5_1: the fp16 min right after d) from the exact one: at most half an fp16 ulp of
 * each block's m * sum of its activations, taken twice for the products' own rounding. */
static double q8_1_sum_rounding(const char *w, size_t block_bytes, const float *ad, int64_t n) {
    double err = 0.0;
    for (int64_t b = 0; b < n / 32; b++) {
        uint16_t m;
        memcpy(&m, w + b * block_bytes + sizeof(uint16_t), sizeof m);
        double sum = 0.0;
        for (int j = 0; j < 32; j++) sum += ad[32 * b + j];
        err += fabs(el_fp16_to_fp32(m) * sum) * (1.0 / 1024.0);
    }
    return err;
}

static int check_outputs(const shape *s, const char *wq, const float *wd, const float *x,
                         int64_t ldx, const float *y, int64_t ldy) {
    const el_type_kernels *t = el_type_kernels_get(s->type),
                          *vt = el_type_kernels_get(t->vec_dot_type);
    const el_type_layout *layout = el_type_layout_get(s->type);
    size_t row_bytes = el_row_size(s->type, s->n_in);
    float *ad = malloc((size_t)s->k_in * sizeof(float));
    char *aq = malloc(el_row_size(t->vec_dot_type, s->k_in));
    CHECK(ad && aq);
    for (int64_t row = 0; row < s->n_rows; row++) {
        vt->from_float(x + row * ldx, aq, s->k_in); /* the reference quantizer */
        vt->to_float(aq, ad, s->k_in);
        for (int64_t o = 0; o < s->k_out; o++) {
            float ref;
            t->vec_dot(s->k_in, &ref, wq + o * row_bytes, aq);
            double want, mag;
            exact_dot(wd + o * s->k_in, ad, s->k_in, &want, &mag);
            double got = y[row * ldy + o], bound = 2e-6 * mag + 1e-30;
            if (t->vec_dot_type == EL_TYPE_Q8_1)
                bound += q8_1_sum_rounding(wq + o * row_bytes, layout->type_size, ad, s->k_in);
            if (!(fabs(got - want) <= bound) || !(fabs(ref - want) <= bound)) {
                test_note("%s %lldx%lld view %lldx%lld rows %lld: y[%lld][%lld] = %.9g, "
                          "reference %.9g, exact %.9g (bound %g)",
                          layout->ggml_name, (long long)s->n_out, (long long)s->n_in,
                          (long long)s->k_out, (long long)s->k_in, (long long)s->n_rows,
                          (long long)row, (long long)o, got, ref, want, bound);
                return TEST_FAIL;
            }
        }
        for (int64_t o = s->k_out; o < ldy; o++) CHECK(y[row * ldy + o] == 12345.0f);
    }
    free(ad), free(aq);
    return TEST_PASS;
}

/* extreme: make_weight's extreme weights against activations all alike and positive (every
 * quant at the top of its range), the largest integer sums the kernels' int16 and int32 steps
 * must hold. */
static int check_shape(el_threadpool *const *pools, int n_pools, const shape *s, test_rng *r,
                       bool extreme) {
    const el_type_layout *layout = el_type_layout_get(s->type);
    size_t row_bytes = el_row_size(s->type, s->n_in);
    int64_t ldx = s->n_in + 5, ldy = s->k_out + 3;
    char *wq = malloc(row_bytes * (size_t)s->n_out);
    float *wrow = malloc((size_t)s->n_in * sizeof(float));
    float *wd = malloc((size_t)(s->k_out * s->k_in) * sizeof(float));
    float *x = malloc((size_t)(s->n_rows * ldx) * sizeof(float));
    float *y = malloc((size_t)(s->n_rows * ldy) * sizeof(float));
    float *y0 = malloc((size_t)(s->n_rows * ldy) * sizeof(float));
    el_weight w = el_weight_view(s->type, wq, s->n_in, s->n_out);
    w.k_in = s->k_in;
    w.k_out = s->k_out;
    void *scratch = malloc(el_matmul_scratch_size(&w, s->n_rows) + 1);
    CHECK(wq && wrow && wd && x && y && y0 && scratch);
    make_weight(s, r, extreme, wq, wrow, wd);
    for (int64_t i = 0; i < s->n_rows * ldx; i++)
        x[i] = extreme ? 1.0f : rand_normal(r) * 3.0f - 0.5f;

    for (int p = 0; p < n_pools; p++) {
        float *out = p == 0 ? y0 : y;
        for (int64_t i = 0; i < s->n_rows * ldy; i++) out[i] = 12345.0f; /* sentinel */
        el_matmul(pools[p], &w, x, ldx, s->n_rows, out, ldy, scratch);
        if (p > 0 && memcmp(y, y0, (size_t)(s->n_rows * ldy) * sizeof *y) != 0) {
            test_note("%s: %d threads disagree with 1", layout->ggml_name, p + 1);
            return TEST_FAIL;
        }
    }
    if (check_outputs(s, wq, wd, x, ldx, y0, ldy) != TEST_PASS) return TEST_FAIL;
    free(wq), free(wrow), free(wd), free(x), free(y), free(y0), free(scratch);
    return TEST_PASS;
}

/* The weight types with packed products on some ISA: every gemm test goes over all of them. */
static const el_type packed_types[] = {
    EL_TYPE_Q4_0,   EL_TYPE_Q8_0,   EL_TYPE_W4,   EL_TYPE_W8,   EL_TYPE_W4G32, EL_TYPE_W4G64,
    EL_TYPE_W4G128, EL_TYPE_Q5_0,   EL_TYPE_IQ4_NL, EL_TYPE_IQ4_XS, EL_TYPE_Q4_1, EL_TYPE_Q5_1,
    EL_TYPE_Q2_K,   EL_TYPE_Q3_K,   EL_TYPE_Q4_K, EL_TYPE_Q5_K, EL_TYPE_Q6_K};

static int test_gemm_types(void) {
    /* {n_in, n_out, k_in, k_out} (n_in, k_in in units of the type's group or 32) */
    static const int64_t dims[][4] = {
        {1, 16, 1, 16}, {3, 17, 3, 17}, {4, 40, 2, 33}, {2, 9, 1, 5}, {5, 48, 5, 47}, {2, 70, 2, 1},
    };
    static const int64_t rows[] = {2, 3, 7, 8, 9, 16, 17, 33, 70};
    test_rng r = {77};
    el_threadpool *pools[4] = {NULL, NULL, NULL, NULL};
    for (int p = 1; p < 4; p++) CHECK(el_threadpool_create(p, &pools[p]) == EL_OK);
    for (size_t ti = 0; ti < sizeof packed_types / sizeof packed_types[0]; ti++) {
        int64_t unit = el_type_layout_get(packed_types[ti])->block_size;
        unit = unit < 32 ? 32 : unit;
        for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
            for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
                shape s = {packed_types[ti], dims[d][0] * unit, dims[d][1], dims[d][2] * unit,
                           dims[d][3], rows[ri]};
                if (check_shape(pools, 4, &s, &r, false) != TEST_PASS) return TEST_FAIL;
            }
        }
    }
    if (el_kernels_get()->gemm[EL_TYPE_Q4_0] == NULL)
        test_note("no gemm kernels on this CPU (%s): checked the tile path", el_kernels_get()->isa);
    for (int p = 1; p < 4; p++) el_threadpool_free(pools[p]);
    return TEST_PASS;
}

/* The largest sums: every type's quants at the top of their range against activations all
 * at +127, on the packed paths (17 and 40 rows), the few-row ones (2 and 5) and the gemv (1). */
static int test_gemm_extremes(void) {
    static const int64_t rows[] = {1, 2, 5, 17, 40};
    test_rng r = {3};
    el_threadpool *pools[2] = {NULL, NULL};
    CHECK(el_threadpool_create(2, &pools[1]) == EL_OK);
    for (size_t ti = 0; ti < sizeof packed_types / sizeof packed_types[0]; ti++)
        for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
            shape s = {packed_types[ti], 512, 33, 512, 33, rows[ri]};
            if (check_shape(pools, 2, &s, &r, true) != TEST_PASS) return TEST_FAIL;
        }
    el_threadpool_free(pools[1]);
    return TEST_PASS;
}

/* Long rows: the integer sums of the per-row types span all of k_in (2048 and 8192 here). */
static int test_gemm_long_rows(void) {
    static const el_type types[] = {EL_TYPE_W8, EL_TYPE_W4, EL_TYPE_Q4_0, EL_TYPE_Q5_0,
                                    EL_TYPE_IQ4_XS};
    test_rng r = {5};
    el_threadpool *pools[2] = {NULL, NULL};
    CHECK(el_threadpool_create(2, &pools[1]) == EL_OK);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        shape s = {types[ti], 8192, 20, 8192, 20, 9};
        if (check_shape(pools, 2, &s, &r, false) != TEST_PASS) return TEST_FAIL;
        shape s2 = {types[ti], 8192, 18, 2048, 17, 4};
        if (check_shape(pools, 2, &s2, &r, false) != TEST_PASS) return TEST_FAIL;
    }
    el_threadpool_free(pools[1]);
    return TEST_PASS;
}

/* Calls gemm as el_matmul does, over output rows [0, k_out) in panels of `panel_rows` (<=
 * EL_GEMM_PANEL) and activation rows in blocks of `block` rows. */
static void gemm_direct(el_gemm_fn gemm, const el_weight *w, const char *act, size_t act_stride,
                        const el_gemm_aux *aux, int64_t n_rows, float *y, int64_t ldy,
                        void *panel, int64_t panel_rows, int64_t block) {
    int64_t groups = el_gemm_groups(w);
    for (int64_t r0 = 0; r0 < n_rows; r0 += block) {
        int64_t nr = n_rows - r0 < block ? n_rows - r0 : block;
        for (int64_t o0 = 0; o0 < w->k_out; o0 += panel_rows) {
            int64_t n = w->k_out - o0 < panel_rows ? w->k_out - o0 : panel_rows;
            gemm(w, o0, n, act + r0 * act_stride, act_stride, aux + r0 * groups, nr,
                 y + r0 * ldy, ldy, panel);
        }
    }
}

/* One table's gemm for s->type called directly (whatever the table in use): against the
 * reference, and bit-identical when the outputs are split into other panels (as threads split
 * them) and the activation rows into other blocks (as tiles do). */
static int check_gemm_direct(el_gemm_fn gemm, bool signed_weights, const shape *s,
                             test_rng *r) {
    el_type vt = el_type_kernels_get(s->type)->vec_dot_type;
    size_t row_bytes = el_row_size(s->type, s->n_in);
    /* rows apart by more than their size, at the alignment of their blocks (q8_k: a float) */
    size_t act_stride = el_row_size(vt, s->k_in) + 8;
    int64_t ldx = s->n_in + 5, ldy = s->k_out + 3;
    el_weight w = el_weight_view(s->type, NULL, s->n_in, s->n_out);
    w.k_in = s->k_in;
    w.k_out = s->k_out;
    int64_t groups = el_gemm_groups(&w);
    size_t y_bytes = (size_t)(s->n_rows * ldy) * sizeof(float);
    char *wq = malloc(row_bytes * (size_t)s->n_out);
    float *wrow = malloc((size_t)s->n_in * sizeof(float));
    float *wd = malloc((size_t)(s->k_out * s->k_in) * sizeof(float));
    float *x = malloc((size_t)(s->n_rows * ldx) * sizeof(float));
    char *act = malloc(act_stride * (size_t)s->n_rows);
    el_gemm_aux *aux = malloc((size_t)(s->n_rows * groups) * sizeof *aux);
    float *y0 = malloc(y_bytes), *y = malloc(y_bytes);
    void *panel = aligned_alloc(64, el_gemm_panel_size(&w));
    CHECK(groups > 0 && wq && wrow && wd && x && act && aux && y0 && y && panel);
    w.data = wq;
    make_weight(s, r, false, wq, wrow, wd);
    for (int64_t i = 0; i < s->n_rows * ldx; i++) x[i] = rand_normal(r) * 3.0f - 0.5f;
    for (int64_t row = 0; row < s->n_rows; row++) {
        el_type_kernels_get(vt)->from_float(x + row * ldx, act + row * act_stride, s->k_in);
        el_gemm_aux_row(&w, signed_weights, act + row * act_stride, aux + row * groups);
    }
    memset(panel, 0x7F, el_gemm_panel_size(&w));
    static const int64_t splits[][2] = {{EL_GEMM_PANEL, 1 << 30}, {7, 1}, {EL_GEMM_PANEL, 5}};
    for (size_t k = 0; k < sizeof splits / sizeof splits[0]; k++) {
        float *out = k == 0 ? y0 : y;
        for (int64_t i = 0; i < s->n_rows * ldy; i++) out[i] = 12345.0f; /* sentinel */
        gemm_direct(gemm, &w, act, act_stride, aux, s->n_rows, out, ldy, panel, splits[k][0],
                    splits[k][1]);
        if (k > 0 && memcmp(y, y0, y_bytes) != 0) {
            test_note("%s: panels of %lld rows, blocks of %lld rows disagree with the whole",
                      el_type_layout_get(s->type)->ggml_name, (long long)splits[k][0],
                      (long long)splits[k][1]);
            return TEST_FAIL;
        }
    }
    if (check_outputs(s, wq, wd, x, ldx, y0, ldy) != TEST_PASS) return TEST_FAIL;
    free(wq), free(wrow), free(wd), free(x), free(act), free(aux), free(y0), free(y), free(panel);
    return TEST_PASS;
}

/* One table's gemm for `type` called directly: rows computed in batches of 2..20 give the same
 * bits as in a batch of 40 (few rows may take another path through the kernel than many, as
 * AVX-512's and AVX2's direct tiles do), over a view ending in a partial panel. */
static int check_gemm_batches(el_gemm_fn gemm, bool signed_weights, el_type type, test_rng *r) {
    static const int64_t batches[] = {2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 20};
    enum { N_OUT = 48, K_OUT = 45, ROWS = 40 };
    const el_type_kernels *t = el_type_kernels_get(type);
    const el_type_layout *layout = el_type_layout_get(type);
    el_type vt = t->vec_dot_type;
    int64_t n_in = 256, ldy = N_OUT;
    size_t row_bytes = el_row_size(type, n_in), act_stride = el_row_size(vt, n_in);
    el_weight w = el_weight_view(type, NULL, n_in, N_OUT);
    w.k_out = K_OUT;
    int64_t groups = el_gemm_groups(&w);
    size_t y_bytes = (size_t)(ROWS * ldy) * sizeof(float);
    char *wq = malloc(row_bytes * N_OUT), *act = malloc(act_stride * ROWS);
    float *x = malloc((size_t)(ROWS * n_in) * sizeof(float));
    el_gemm_aux *aux = malloc((size_t)(ROWS * groups) * sizeof *aux);
    float *all = malloc(y_bytes), *few = malloc(y_bytes);
    void *panel = aligned_alloc(64, el_gemm_panel_size(&w));
    CHECK(groups > 0 && wq && act && x && aux && all && few && panel);
    w.data = wq;
    for (int64_t o = 0; o < N_OUT; o++) {
        for (int64_t i = 0; i < n_in; i++) x[i] = rand_normal(r) * 0.05f;
        t->from_float(x, wq + o * row_bytes, n_in);
    }
    for (int64_t i = 0; i < ROWS * n_in; i++) x[i] = rand_normal(r);
    for (int64_t row = 0; row < ROWS; row++) {
        el_type_kernels_get(vt)->from_float(x + row * n_in, act + row * act_stride, n_in);
        el_gemm_aux_row(&w, signed_weights, act + row * act_stride, aux + row * groups);
    }
    gemm_direct(gemm, &w, act, act_stride, aux, ROWS, all, ldy, panel, EL_GEMM_PANEL, ROWS);
    for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
        for (int64_t r0 = 0; r0 + batches[b] <= ROWS; r0 += batches[b]) {
            memset(few, 0, y_bytes);
            gemm_direct(gemm, &w, act + r0 * act_stride, act_stride, aux + r0 * groups,
                        batches[b], few, ldy, panel, EL_GEMM_PANEL, batches[b]);
            for (int64_t row = 0; row < batches[b]; row++) {
                if (memcmp(few + row * ldy, all + (r0 + row) * ldy, K_OUT * sizeof(float))) {
                    test_note("%s: row %lld in a batch of %lld differs from a batch of %d",
                              layout->ggml_name, (long long)(r0 + row), (long long)batches[b],
                              ROWS);
                    return TEST_FAIL;
                }
            }
        }
    }
    free(wq), free(act), free(x), free(aux), free(all), free(few), free(panel);
    return TEST_PASS;
}

/* Types whose gemm only some levels have (the others take their tiles or gemvs): issue 17's,
 * packed by AVX-512, and of them Q5_0, IQ4_NL, IQ4_XS, Q4_K, Q5_K and Q6_K by AVX2 too. */
static bool packed_by_some_levels(el_type t) {
    switch (t) {
    case EL_TYPE_Q2_K: case EL_TYPE_Q3_K: case EL_TYPE_Q4_K: case EL_TYPE_Q5_K:
    case EL_TYPE_Q6_K: case EL_TYPE_Q5_0: case EL_TYPE_Q4_1:
    case EL_TYPE_Q5_1: case EL_TYPE_IQ4_NL: case EL_TYPE_IQ4_XS: return true;
    default: return false;
    }
}

/* Every ISA table's gemm kernels that this CPU runs, tested directly: so each is covered
 * wherever the tests run, not only the one el_kernels_get picks. */
static int test_gemm_tables(void) {
    /* {n_in, n_out, k_in, k_out} (n_in, k_in in units of the type's group or 32) */
    static const int64_t dims[][4] = {{1, 16, 1, 16}, {3, 17, 3, 17}, {4, 40, 2, 33},
                                      {2, 9, 1, 5},   {5, 48, 5, 47}};
    static const int64_t rows[] = {1, 2, 3, 4, 5, 8, 9, 17};
    test_rng r = {31};
    int n_tested = 0;
    const char *name;
    for (size_t ti = 0; (name = el_kernels_level_name(ti)) != NULL; ti++) {
        el_kernels k;
        if (!el_kernels_level(name, &k) || k.gemm[EL_TYPE_Q4_0] == NULL) continue;
        n_tested++;
        for (size_t ty = 0; ty < sizeof packed_types / sizeof packed_types[0]; ty++) {
            el_gemm_fn gemm = k.gemm[packed_types[ty]];
            if (gemm == NULL && packed_by_some_levels(packed_types[ty])) continue;
            CHECK(gemm != NULL);
            int64_t unit = el_type_layout_get(packed_types[ty])->block_size;
            unit = unit < 32 ? 32 : unit;
            for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
                for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
                    shape s = {packed_types[ty], dims[d][0] * unit, dims[d][1], dims[d][2] * unit,
                               dims[d][3], rows[ri]};
                    if (check_gemm_direct(gemm, k.gemm_signed, &s, &r) != TEST_PASS) {
                        test_note("in the %s table", name);
                        return TEST_FAIL;
                    }
                }
            }
            /* long rows: the integer sums of per-row types span all of k_in */
            shape s = {packed_types[ty], 8192, 20, 8192, 19, 6};
            if (check_gemm_direct(gemm, k.gemm_signed, &s, &r) != TEST_PASS ||
                check_gemm_batches(gemm, k.gemm_signed, packed_types[ty], &r) != TEST_PASS) {
                test_note("in the %s table", name);
                return TEST_FAIL;
            }
        }
        test_note("tested the %s table's gemm kernels", name);
    }
    if (n_tested == 0) return test_skip("no gemm kernels built for this CPU");
    return TEST_PASS;
}

/* A row's outputs do not depend on how many rows share the product, within each of two paths:
 * rows in batches of 2 to EL_GEMV_FEW_MAX that go through a type's gemvs (2 and 3 rows for a
 * type with a gemv: its multi-row gemv, or it row after row; up to EL_GEMV_FEW_MAX for a type
 * with a few-row gemv, and up to EL_GEMV_BY_MULTI_MAX on a level with few_rows_by_multi
 * (AVX2) for a type with a multi-row gemv) give the bits of each row alone, and rows in batches
 * that take the
 * register and packed panel paths (from 4 rows, or 2 without a gemv, up to 20) the bits of a
 * batch of 40. Concurrent variants, speculative verification and served batches rely on it as
 * their rows come and go. */
static int test_gemm_batch_invariance(void) {
    static const int64_t batches[] = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20};
    enum { N_OUT = 53, ROWS = 40 }; /* 3 panels of 16 and 5 rows past them */
    test_rng r = {31};
    el_threadpool *tp = NULL;
    CHECK(el_threadpool_create(2, &tp) == EL_OK);
    for (size_t ti = 0; ti < sizeof packed_types / sizeof packed_types[0]; ti++) {
        const el_type type = packed_types[ti];
        const el_type_kernels *t = el_type_kernels_get(type);
        const el_type_layout *layout = el_type_layout_get(type);
        if (el_kernels_get()->gemm[type] == NULL) { /* tiles and gemv: to rounding only */
            test_note("%s: no gemm kernel here (%s)", layout->ggml_name, el_kernels_get()->isa);
            continue;
        }
      /* rows longer than one slice of a gemv's prepared activations (16384) too, in whole
       * blocks of every type (a multiple of 256) */
      for (int64_t n_in = 256; n_in <= 17664; n_in += 17664 - 256) {
        size_t row_bytes = el_row_size(type, n_in);
        char *wq = malloc(row_bytes * N_OUT);
        float *wrow = malloc((size_t)n_in * sizeof(float));
        float *x = malloc((size_t)(ROWS * n_in) * sizeof(float));
        float *all = malloc((size_t)(ROWS * N_OUT) * sizeof(float));
        float *few = malloc((size_t)(ROWS * N_OUT) * sizeof(float));
        float *alone = malloc((size_t)(ROWS * N_OUT) * sizeof(float));
        el_weight w = el_weight_view(type, wq, n_in, N_OUT);
        void *scratch = malloc(el_matmul_scratch_size(&w, ROWS) + 1);
        CHECK(wq && wrow && x && all && few && alone && scratch);
        for (int64_t o = 0; o < N_OUT; o++) {
            for (int64_t i = 0; i < n_in; i++) wrow[i] = rand_normal(&r) * 0.05f;
            t->from_float(wrow, wq + o * row_bytes, n_in);
        }
        for (int64_t i = 0; i < ROWS * n_in; i++) x[i] = rand_normal(&r);
        el_matmul(tp, &w, x, n_in, ROWS, all, N_OUT, scratch);
        for (int64_t k = 0; k < ROWS; k++)
            el_matmul(tp, &w, x + k * n_in, n_in, 1, alone + k * N_OUT, N_OUT, scratch);
        const el_kernels *k = el_kernels_get();
        /* a few-row gemv's type (W4, W8 on AVX-512): its panel paths give the gemv's bits */
        if (k->gemv_few[type] != NULL &&
            memcmp(all, alone, (size_t)(ROWS * N_OUT) * sizeof(float)) != 0) {
            test_note("%s n_in %lld: a batch of %d differs from each row alone",
                      layout->ggml_name, (long long)n_in, ROWS);
            return TEST_FAIL;
        }
        for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
            int64_t nb = batches[b];
            /* a few-row gemv, or (AVX2) the multi-row gemv three rows at a time */
            bool by_multi = k->few_rows_by_multi && k->gemv_multi[type] != NULL;
            /* a type whose gemm a level takes only from more rows (AVX2's K-quants): below
             * that its tiles, whose rows are the gemv's (tile_kquant_avx2.c) */
            bool late_gemm = k->gemm_min_rows[type] > 0 && nb < k->gemm_min_rows[type];
            bool gemvs = (k->gemv[type] != NULL && nb <= EL_GEMV_MULTI_MAX) ||
                         (k->gemv_few[type] != NULL && nb <= EL_GEMV_FEW_MAX) ||
                         (by_multi && nb <= EL_GEMV_BY_MULTI_MAX) || late_gemm;
            for (int64_t r0 = 0; r0 + nb <= ROWS; r0 += nb) {
                const float *want = (gemvs ? alone : all) + r0 * N_OUT;
                el_matmul(tp, &w, x + r0 * n_in, n_in, nb, few, N_OUT, scratch);
                if (memcmp(few, want, (size_t)(nb * N_OUT) * sizeof(float)) != 0) {
                    test_note("%s n_in %lld: rows %lld.. in a batch of %lld differ from %s",
                              layout->ggml_name, (long long)n_in, (long long)r0,
                              (long long)nb, gemvs ? "each alone" : "all 40");
                    return TEST_FAIL;
                }
            }
        }
        free(wq), free(wrow), free(x), free(all), free(few), free(alone), free(scratch);
      }
    }
    el_threadpool_free(tp);
    return TEST_PASS;
}

/* Random keys and values (normal, as fp16 too) in MAX_NV cells reached in a scrambled order, as
 * a cache holds them; a query of up to MAX_GROUP heads. */
enum { MAX_NV = 300, MAX_GROUP = 5, MAX_HD = 80 };
static float keys[MAX_NV][MAX_HD], values[MAX_NV][MAX_HD];
static uint16_t keys16[MAX_NV][MAX_HD], values16[MAX_NV][MAX_HD];
static const void *key_rows[2][MAX_NV], *value_rows[2][MAX_NV]; /* [f32, f16][cell] */

static void fill_cells(void) {
    test_rng r = {9};
    for (int32_t j = 0; j < MAX_NV; j++) {
        int kj = (j * 7) % MAX_NV, vj = (j * 11) % MAX_NV;
        key_rows[0][j] = keys[kj], key_rows[1][j] = keys16[kj];
        value_rows[0][j] = values[vj], value_rows[1][j] = values16[vj];
        for (int i = 0; i < MAX_HD; i++) {
            keys[j][i] = rand_normal(&r);
            values[j][i] = rand_normal(&r);
            keys16[j][i] = el_fp32_to_fp16(keys[j][i]);
            values16[j][i] = el_fp32_to_fp16(values[j][i]);
        }
    }
}

/* One attention kernel against the reference, on float32 or fp16 cells: random queries, groups
 * of 1 to 5 heads, head sizes the SIMD kernels take (16, 64, 80; 8, 24 and 40 only AVX2's and
 * NEON's) and one the x86 ones hand back (20; NEON's takes it, with a last step of 4 elements),
 * cell counts around the vector widths. */
static int check_attend(el_attend_fn attend, el_type kv_type, const char *name) {
    static const int hds[] = {16, 64, 80, 8, 24, 40, 20};
    static const int32_t nvs[] = {1, 2, 3, 15, 16, 17, 100, 300};
    test_rng r = {13};
    static float q[MAX_GROUP * MAX_HD], scores[MAX_GROUP * MAX_NV], out[MAX_GROUP * MAX_HD],
        want[MAX_GROUP * MAX_HD];
    int f16 = kv_type == EL_TYPE_F16;
    const void *const *kp = key_rows[f16], *const *vp = value_rows[f16];
    for (size_t h = 0; h < sizeof hds / sizeof hds[0]; h++) {
        for (int group = 1; group <= MAX_GROUP; group++) {
            for (size_t n = 0; n < sizeof nvs / sizeof nvs[0]; n++) {
                int hd = hds[h];
                for (int i = 0; i < group * hd; i++) q[i] = rand_normal(&r) * 2.0f;
                el_attend_ref(kv_type, group, hd, hd, nvs[n], q, kp, vp, scores, MAX_NV, want);
                /* the kernel gets exactly nv row pointers, so that a read past them (the
                 * prefetches run ahead of the cells) is a heap overflow under ASan */
                const void **ke = malloc((size_t)nvs[n] * sizeof *ke);
                const void **ve = malloc((size_t)nvs[n] * sizeof *ve);
                if (!ke || !ve) {
                    free(ke), free(ve);
                    test_note("out of memory");
                    return TEST_FAIL;
                }
                memcpy(ke, kp, (size_t)nvs[n] * sizeof *ke);
                memcpy(ve, vp, (size_t)nvs[n] * sizeof *ve);
                attend(kv_type, group, hd, hd, nvs[n], q, ke, ve, scores, MAX_NV, out);
                free(ke), free(ve);
                for (int i = 0; i < group * hd; i++) {
                    /* outputs are averages of values of magnitude ~1: relative to that */
                    if (!(fabsf(out[i] - want[i]) <= 2e-5f)) {
                        test_note("%s attend %s hd %d group %d cells %d: out[%d] = %.8g, want "
                                  "%.8g",
                                  name, el_type_layout_get(kv_type)->ggml_name, hd, group, nvs[n],
                                  i, out[i], want[i]);
                        return TEST_FAIL;
                    }
                }
            }
        }
    }
    return TEST_PASS;
}

/* The reference on fp16 cells is the reference on their float values (fp16 -> float is exact),
 * bit for bit; and near the float32 cells they were rounded from (relative error of each element
 * <= 2^-11, so outputs of magnitude ~1 within a few 1e-3). */
static int test_attend_ref_f16(void) {
    fill_cells();
    static float widened_k[MAX_NV][MAX_HD], widened_v[MAX_NV][MAX_HD];
    const void *kw[MAX_NV], *vw[MAX_NV];
    for (int32_t j = 0; j < MAX_NV; j++) {
        for (int i = 0; i < MAX_HD; i++) {
            widened_k[j][i] = el_fp16_to_fp32(keys16[j][i]);
            widened_v[j][i] = el_fp16_to_fp32(values16[j][i]);
        }
        kw[j] = widened_k[(j * 7) % MAX_NV], vw[j] = widened_v[(j * 11) % MAX_NV];
    }
    test_rng r = {5};
    static float q[MAX_GROUP * MAX_HD], scores[MAX_GROUP * MAX_NV], f16[MAX_GROUP * MAX_HD],
        wide[MAX_GROUP * MAX_HD], f32[MAX_GROUP * MAX_HD];
    for (int i = 0; i < MAX_GROUP * MAX_HD; i++) q[i] = rand_normal(&r) * 2.0f;
    el_attend_ref(EL_TYPE_F16, MAX_GROUP, MAX_HD, MAX_HD, MAX_NV, q, key_rows[1], value_rows[1],
                  scores, MAX_NV, f16);
    el_attend_ref(EL_TYPE_F32, MAX_GROUP, MAX_HD, MAX_HD, MAX_NV, q, kw, vw, scores, MAX_NV,
                  wide);
    el_attend_ref(EL_TYPE_F32, MAX_GROUP, MAX_HD, MAX_HD, MAX_NV, q, key_rows[0], value_rows[0],
                  scores, MAX_NV, f32);
    CHECK(memcmp(f16, wide, sizeof f16) == 0);
    float worst = 0.0f;
    for (int i = 0; i < MAX_GROUP * MAX_HD; i++)
        worst = fmaxf(worst, fabsf(f16[i] - f32[i]));
    test_note("fp16 cells move the reference's outputs by at most %.2g", worst);
    CHECK(worst > 0.0f && worst < 5e-3f);
    return TEST_PASS;
}

/* The attention kernel in use, and every ISA table's one this CPU runs, called directly (so
 * AVX2's is covered on AVX-512 machines too), on float32 and on fp16 cells. */
static int test_attend(void) {
    static const el_type kv_types[] = {EL_TYPE_F32, EL_TYPE_F16};
    fill_cells();
    el_attend_fn attend = el_kernels_get()->attend;
    CHECK(attend != NULL);
    for (size_t t = 0; t < 2; t++) {
        if (check_attend(attend, kv_types[t], el_kernels_get()->isa) != TEST_PASS)
            return TEST_FAIL;
        el_attend_fn tested = NULL; /* a level's base's, which it may keep */
        const char *name;
        for (size_t ti = 0; (name = el_kernels_level_name(ti)) != NULL; ti++) {
            el_kernels k;
            if (!el_kernels_level(name, &k) || k.attend == tested) continue;
            CHECK(k.attend != el_attend_ref);
            if (check_attend(k.attend, kv_types[t], name) != TEST_PASS) return TEST_FAIL;
            tested = k.attend;
            test_note("tested the %s table's attention kernel on %s cells", name,
                      el_type_layout_get(kv_types[t])->ggml_name);
        }
    }
    return TEST_PASS;
}

int main(void) {
    test_note("kernels in use: %s", el_kernels_get()->isa);
    run_test("gemm_types", test_gemm_types);
    run_test("gemm_long_rows", test_gemm_long_rows);
    run_test("gemm_extremes", test_gemm_extremes);
    run_test("gemm_batch_invariance", test_gemm_batch_invariance);
    run_test("gemm_tables", test_gemm_tables);
    run_test("attend_ref_f16", test_attend_ref_f16);
    run_test("attend", test_attend);
    return tests_exit_code();
}
