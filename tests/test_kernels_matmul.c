/* test_kernels_matmul.c - el_matmul against a float matmul of the dequantized weights, on views
 * and awkward sizes, with 1, 2 and 3 threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/threadpool.h"
#include "kernels/dispatch.h"
#include "kernels/matmul.h"
#include "testutil.h"

static float rand_normal(test_rng *r) {
    float s = 0.0f;
    for (int i = 0; i < 4; i++) s += test_rand_uniform(r, -1.0f, 1.0f);
    return s * 0.866f;
}

/* Largest error of one activation after quantization to type vt, per element of a block whose
 * largest magnitude is amax: half a step (amax/127) plus, for fp16 block scales, the scale's own
 * rounding (relative 2^-11, times at most 127 steps); 0 for float activations. */
/* wf (n_out rows of n_in floats) quantized into wq as a weight of type t. */
static el_weight quantized(el_type t, const float *wf, int64_t n_in, int64_t n_out, char *wq) {
    el_weight w = el_weight_view(t, wq, n_in, n_out);
    for (int64_t o = 0; o < n_out; o++)
        el_type_kernels_get(t)->from_float(wf + o * n_in, wq + o * w.row_bytes, n_in);
    return w;
}

static double act_error(el_type vt, double amax) {
    if (vt == EL_TYPE_F32) return 0.0;
    return amax / 127.0 * (0.5 + 127.0 / 2048.0) * 1.0001;
}

typedef struct shape {
    el_type type;
    int64_t n_in, n_out, k_in, k_out, n_rows;
} shape;

static int check_shape(el_threadpool *tp, const shape *s, test_rng *r) {
    const el_type_kernels *t = el_type_kernels_get(s->type);
    const el_type_layout *layout = el_type_layout_get(s->type);
    el_type vt = t->vec_dot_type;
    size_t row_bytes = el_row_size(s->type, s->n_in);
    size_t kept_bytes = el_row_size(s->type, s->k_in);
    int64_t ldx = s->n_in + 3, ldy = s->k_out + 2;
    char *wq = malloc(row_bytes * (size_t)s->n_out);
    float *wrow = malloc((size_t)s->n_in * sizeof(float));
    float *wd = malloc((size_t)(s->k_out * s->k_in) * sizeof(float));
    float *x = malloc((size_t)(s->n_rows * ldx) * sizeof(float));
    float *y = malloc((size_t)(s->n_rows * ldy) * sizeof(float));
    void *scratch = malloc(el_matmul_scratch_size(&(el_weight){.type = s->type, .k_in = s->k_in},
                                                  s->n_rows) + 1);
    CHECK(wq && wrow && wd && x && y && scratch);
    for (int64_t o = 0; o < s->n_out; o++) {
        for (int64_t i = 0; i < s->n_in; i++) wrow[i] = rand_normal(r) * 0.1f;
        t->from_float(wrow, wq + o * row_bytes, s->n_in);
        /* bytes outside the view are all ones (NaN scales and values): reading them shows */
        if (o < s->k_out) {
            memset(wq + o * row_bytes + kept_bytes, 0xFF, row_bytes - kept_bytes);
            t->to_float(wq + o * row_bytes, wd + o * s->k_in, s->k_in);
        } else {
            memset(wq + o * row_bytes, 0xFF, row_bytes);
        }
    }
    for (int64_t i = 0; i < s->n_rows * ldx; i++) x[i] = rand_normal(r) * 2.0f + 0.3f;
    for (int64_t i = 0; i < s->n_rows * ldy; i++) y[i] = 12345.0f; /* sentinel */
    el_weight w = el_weight_view(s->type, wq, s->n_in, s->n_out);
    CHECK(w.row_bytes == row_bytes && w.k_in == s->n_in && w.k_out == s->n_out);
    w.k_in = s->k_in;
    w.k_out = s->k_out;
    el_matmul(tp, &w, x, ldx, s->n_rows, y, ldy, scratch);

    /* the activations' scale covers a block, or the whole row for per-row types (a8) */
    int64_t bs = el_type_layout_get(vt)->row_header ? s->k_in : el_type_layout_get(vt)->block_size;
    for (int64_t row = 0; row < s->n_rows; row++) {
        const float *xr = x + row * ldx;
        for (int64_t o = 0; o < s->k_out; o++) {
            const float *wr = wd + o * s->k_in;
            double want = 0.0, bound = 0.0, mag = 0.0;
            for (int64_t b0 = 0; b0 < s->k_in; b0 += bs) {
                double amax = 0.0, wsum = 0.0;
                for (int64_t i = b0; i < b0 + bs; i++) {
                    want += (double)wr[i] * xr[i];
                    mag += fabs((double)wr[i] * xr[i]);
                    amax = fmax(amax, fabs(xr[i]));
                    wsum += fabs(wr[i]);
                }
                bound += act_error(vt, amax) * wsum;
            }
            bound += 1e-5 * mag + 1e-6; /* float accumulation */
            float got = y[row * ldy + o];
            if (!(fabs(got - want) <= bound)) {
                test_note("%s %lldx%lld view %lldx%lld rows %lld: y[%lld][%lld] = %g, want %g "
                          "(bound %g)", layout->ggml_name, (long long)s->n_out, (long long)s->n_in,
                          (long long)s->k_out, (long long)s->k_in, (long long)s->n_rows,
                          (long long)row, (long long)o, got, want, bound);
                return TEST_FAIL;
            }
        }
        for (int64_t o = s->k_out; o < ldy; o++) CHECK(y[row * ldy + o] == 12345.0f);
    }
    free(wq), free(wrow), free(wd), free(x), free(y), free(scratch);
    return TEST_PASS;
}

static int test_matmul_views(void) {
    static const el_type types[] = {EL_TYPE_F32,   EL_TYPE_F16,   EL_TYPE_BF16,   EL_TYPE_Q8_0,
                                    EL_TYPE_Q4_0,  EL_TYPE_Q4_K,  EL_TYPE_Q6_K,   EL_TYPE_W8,
                                    EL_TYPE_W4,    EL_TYPE_W4G32, EL_TYPE_W4G64,  EL_TYPE_W4G128,
                                    EL_TYPE_W8A16,
                                    /* types no ISA table accelerates: the reference vec_dot */
                                    EL_TYPE_Q4_1,  EL_TYPE_Q5_0,  EL_TYPE_Q5_1,   EL_TYPE_Q2_K,
                                    EL_TYPE_Q3_K,  EL_TYPE_Q5_K,  EL_TYPE_IQ4_NL, EL_TYPE_IQ4_XS};
    test_rng r = {21};
    el_threadpool *pools[3] = {NULL, NULL, NULL};
    for (int p = 0; p < 3; p++) CHECK(el_threadpool_create(p + 1, &pools[p]) == EL_OK);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        int64_t bs = el_type_layout_get(types[ti])->block_size;
        int64_t unit = bs == 1 ? 32 : bs;
        /* {n_in, n_out, k_in, k_out, n_rows} in units of blocks for n_in and k_in */
        static const int64_t dims[][5] = {
            {1, 1, 1, 1, 1},  {3, 7, 3, 7, 1},  {3, 7, 2, 5, 3},  {2, 9, 1, 9, 5},
            {4, 13, 3, 11, 2}, {2, 5, 2, 5, 70}, {1, 4, 1, 3, 67},
        };
        for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
            shape s = {types[ti], dims[d][0] * unit, dims[d][1], dims[d][2] * unit, dims[d][3],
                       dims[d][4]};
            for (int p = 0; p < 3; p++) {
                if (check_shape(pools[p], &s, &r) != TEST_PASS) {
                    test_note("with %d threads", p + 1);
                    return TEST_FAIL;
                }
            }
            if (check_shape(NULL, &s, &r) != TEST_PASS) return TEST_FAIL;
        }
    }
    for (int p = 0; p < 3; p++) el_threadpool_free(pools[p]);
    return TEST_PASS;
}

/* The split across threads must not change any result: each output is one dot product, by the
 * same kernel whatever the chunks (tiles and vec_dot for several rows, gemv for one). */
static int test_matmul_threads_agree(void) {
    enum { N_IN = 512, N_OUT = 37, ROWS = 6 };
    static const el_type types[] = {EL_TYPE_Q4_K, EL_TYPE_Q4_0, EL_TYPE_Q8_0, EL_TYPE_W4,
                                    EL_TYPE_W8,   EL_TYPE_W8A16};
    test_rng r = {4};
    float *wf = malloc(N_IN * N_OUT * sizeof *wf), x[ROWS * N_IN], y1[ROWS * N_OUT],
          y3[ROWS * N_OUT];
    char *wq = malloc(el_row_size(EL_TYPE_F32, N_IN) * N_OUT);
    char *scratch = malloc(el_row_size(EL_TYPE_F32, N_IN) * ROWS);
    el_threadpool *tp1, *tp3;
    CHECK(wf && wq && scratch && el_threadpool_create(1, &tp1) == EL_OK);
    CHECK(el_threadpool_create(3, &tp3) == EL_OK);
    for (int i = 0; i < N_IN * N_OUT; i++) wf[i] = rand_normal(&r);
    for (int i = 0; i < ROWS * N_IN; i++) x[i] = rand_normal(&r);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const el_type_layout *layout = el_type_layout_get(types[t]);
        el_weight w = quantized(types[t], wf, N_IN, N_OUT, wq);
        for (int rows = 1; rows <= ROWS; rows += ROWS - 1) {
            for (int i = 0; i < rows * N_OUT; i++) y1[i] = y3[i] = NAN; /* catches a row left out */
            el_matmul(tp1, &w, x, N_IN, rows, y1, N_OUT, scratch);
            el_matmul(tp3, &w, x, N_IN, rows, y3, N_OUT, scratch);
            for (int i = 0; i < rows * N_OUT; i++) CHECK(isfinite(y1[i]));
            if (memcmp(y1, y3, (size_t)rows * N_OUT * sizeof *y1) != 0)
                test_note("%s, %d rows: 1 and 3 threads differ", layout->ggml_name, rows);
            CHECK(memcmp(y1, y3, (size_t)rows * N_OUT * sizeof *y1) == 0);
        }
    }
    el_threadpool_free(tp1);
    el_threadpool_free(tp3);
    free(wf), free(wq), free(scratch);
    return TEST_PASS;
}

/* A decode step (one activation row, or two or three as concurrent sequences make) of a matrix
 * large enough that its rows go in long first chunks and then short ones (matmul.c), on 1 to 3
 * threads: every output is written, the same as one row alone on one thread, and that near the
 * float product of the dequantized weights. */
static int test_matmul_decode_chunks(void) {
    enum { N_IN = 4096, N_OUT = 1000, ROWS = 3 };
    static const el_type types[] = {EL_TYPE_Q4_0, EL_TYPE_W4,    EL_TYPE_Q8_0,
                                    EL_TYPE_W4G32, EL_TYPE_W4G64, EL_TYPE_W4G128};
    test_rng r = {5};
    float *wf = malloc((size_t)N_IN * N_OUT * sizeof *wf), *wd = malloc(N_IN * sizeof *wd);
    float *x = malloc((size_t)ROWS * N_IN * sizeof *x), *y1 = malloc(ROWS * N_OUT * sizeof *y1),
          *yn = malloc(ROWS * N_OUT * sizeof *yn);
    char *wq = malloc(el_row_size(EL_TYPE_F32, N_IN) * N_OUT);
    char *scratch = malloc(el_row_size(EL_TYPE_F32, N_IN) * ROWS);
    el_threadpool *tp[3] = {NULL, NULL, NULL};
    CHECK(wf && wd && x && y1 && yn && wq && scratch);
    for (int t = 0; t < 3; t++) CHECK(el_threadpool_create(t + 1, &tp[t]) == EL_OK);
    for (int i = 0; i < N_IN * N_OUT; i++) wf[i] = rand_normal(&r);
    for (int i = 0; i < ROWS * N_IN; i++) x[i] = rand_normal(&r);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const el_type_kernels *kernels = el_type_kernels_get(types[t]);
        const el_type_layout *layout = el_type_layout_get(types[t]);
        el_weight w = quantized(types[t], wf, N_IN, N_OUT, wq);
        /* each activation row alone on one thread: one gemv over the whole matrix */
        for (int i = 0; i < ROWS * N_OUT; i++) y1[i] = NAN;
        for (int k = 0; k < ROWS; k++)
            el_matmul(tp[0], &w, x + k * N_IN, N_IN, 1, y1 + k * N_OUT, N_OUT, scratch);
        for (int o = 0; o < N_OUT; o++) {
            kernels->to_float(wq + o * w.row_bytes, wd, N_IN);
            double want = 0.0, mag = 0.0;
            for (int i = 0; i < N_IN; i++) {
                want += (double)wd[i] * x[i];
                mag += fabs((double)wd[i] * x[i]);
            }
            /* int8 activations: each off by up to ~1/254 of its block's largest */
            CHECK(fabs(y1[o] - want) <= 0.02 * mag + 1e-3);
        }
        /* 1 to 3 rows at once (2 and 3: gemv per row over blocks of the weights the later rows
         * read from L2, 256 KB: 9 to 17 blocks here) on 1 to 3 threads: the same bits */
        for (int rows = 1; rows <= ROWS; rows++)
            for (int n = 1; n <= 3; n++) {
                if (rows == 1 && n == 1) continue;
                for (int i = 0; i < ROWS * N_OUT; i++) yn[i] = NAN;
                el_matmul(tp[n - 1], &w, x, N_IN, rows, yn, N_OUT, scratch);
                bool same = memcmp(y1, yn, (size_t)rows * N_OUT * sizeof *y1) == 0;
                if (!same)
                    test_note("%s: %d rows on %d threads differ", layout->ggml_name, rows, n);
                CHECK(same);
            }
    }
    for (int t = 0; t < 3; t++) el_threadpool_free(tp[t]);
    free(wf), free(wd), free(x), free(y1), free(yn), free(wq), free(scratch);
    return TEST_PASS;
}

/* el_matmul_many gives the bits of one el_matmul per weight, on 1, 2 and 3 threads: together
 * (decode steps of weights taking the same activations, the Q, K and V of a layer, say; 1 row,
 * or 3 of a type without gemm) and apart (rows that go through gemm; different activation
 * types; different static scales; a weight with no rows). Outputs start as NaN, so a product
 * left out shows. */
static int test_matmul_many(void) {
    enum { N_IN = 1024, MAX_OUT = 700, ROWS = 5, N = 3 };
    static const struct {
        el_type type[N];
        int64_t n_out[N];
        float act_scale[N];
    } sets[] = {
        {{EL_TYPE_Q4_0, EL_TYPE_Q4_0, EL_TYPE_Q4_0}, {512, 128, 700}, {0, 0, 0}},
        {{EL_TYPE_W4, EL_TYPE_W8, EL_TYPE_W4}, {64, 700, 3}, {0, 0, 0}},
        {{EL_TYPE_Q4_0, EL_TYPE_Q8_0, EL_TYPE_Q4_K}, {300, 200, 100}, {0, 0, 0}},
        {{EL_TYPE_W4, EL_TYPE_W4, EL_TYPE_W4}, {256, 256, 256}, {0.05f, 0.05f, 0.08f}},
        {{EL_TYPE_Q8_0, EL_TYPE_Q8_0, EL_TYPE_Q8_0}, {96, 0, 160}, {0, 0, 0}},
        /* no gemm: 3 rows still go through gemv (together) */
        {{EL_TYPE_W8A16, EL_TYPE_W8A16, EL_TYPE_W8A16}, {200, 64, 300}, {0, 0, 0}},
    };
    test_rng r = {6};
    size_t max_row = el_row_size(EL_TYPE_F32, N_IN);
    float *wf = malloc((size_t)N_IN * MAX_OUT * sizeof *wf), x[ROWS * N_IN];
    float *want = malloc((size_t)N * ROWS * MAX_OUT * sizeof *want);
    float *got = malloc((size_t)N * ROWS * MAX_OUT * sizeof *got);
    char *wq[N], *scratch = malloc(max_row * ROWS);
    el_threadpool *tp[3] = {NULL, NULL, NULL};
    CHECK(wf && want && got && scratch);
    for (int i = 0; i < N; i++) CHECK((wq[i] = malloc(max_row * MAX_OUT)) != NULL);
    for (int t = 0; t < 3; t++) CHECK(el_threadpool_create(t + 1, &tp[t]) == EL_OK);
    for (int i = 0; i < N_IN * MAX_OUT; i++) wf[i] = rand_normal(&r);
    for (int i = 0; i < ROWS * N_IN; i++) x[i] = rand_normal(&r);
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
        el_weight w[N];
        const el_weight *wp[N];
        float *yw[N], *yg[N];
        int64_t ldy[N];
        for (int i = 0; i < N; i++) {
            const el_type_kernels *kernels = el_type_kernels_get(sets[s].type[i]);
            w[i] = el_weight_view(sets[s].type[i], wq[i], N_IN, sets[s].n_out[i]);
            w[i].act_scale = sets[s].act_scale[i];
            for (int64_t o = 0; o < w[i].n_out; o++)
                kernels->from_float(wf + o * N_IN, wq[i] + o * w[i].row_bytes, N_IN);
            wp[i] = &w[i];
            ldy[i] = MAX_OUT;
            yw[i] = want + (size_t)i * ROWS * MAX_OUT;
            yg[i] = got + (size_t)i * ROWS * MAX_OUT;
        }
        for (int rows = 1; rows <= ROWS; rows += 2) {
            for (int t = 0; t < 3; t++) {
                for (size_t i = 0; i < (size_t)N * ROWS * MAX_OUT; i++) want[i] = got[i] = NAN;
                for (int i = 0; i < N; i++)
                    el_matmul(tp[t], &w[i], x, N_IN, rows, yw[i], ldy[i], scratch);
                el_matmul_many(tp[t], N, wp, x, N_IN, rows, yg, ldy, scratch);
                for (int i = 0; i < N; i++)
                    for (int row = 0; row < rows; row++)
                        for (int64_t o = 0; o < w[i].k_out; o++) {
                            float a = yw[i][row * MAX_OUT + o], b = yg[i][row * MAX_OUT + o];
                            if (!(isfinite(b) && memcmp(&a, &b, sizeof a) == 0)) {
                                test_note("set %zu, %d rows, %d threads: product %d row %d "
                                          "output %lld: %g, alone %g", s, rows, t + 1, i, row,
                                          (long long)o, b, a);
                                return TEST_FAIL;
                            }
                        }
            }
        }
    }
    for (int t = 0; t < 3; t++) el_threadpool_free(tp[t]);
    for (int i = 0; i < N; i++) free(wq[i]);
    free(wf), free(want), free(got), free(scratch);
    return TEST_PASS;
}

static int test_scratch_size(void) {
    el_weight w = el_weight_view(EL_TYPE_Q4_K, NULL, 512, 10);
    CHECK(el_matmul_scratch_size(&w, 3) == 3 * 2 * 292); /* q8_K rows of 512 */
    w.k_in = 256;
    CHECK(el_matmul_scratch_size(&w, 3) == 3 * 292);
    w = el_weight_view(EL_TYPE_Q4_0, NULL, 64, 10);
    CHECK(el_matmul_scratch_size(&w, 2) == 2 * 2 * 34); /* q8_0 */
    w = el_weight_view(EL_TYPE_F16, NULL, 64, 10);
    CHECK(el_matmul_scratch_size(&w, 2) == 0);
    CHECK(el_kernels_get()->isa != NULL);
    test_note("kernels in use: %s", el_kernels_get()->isa);
    return TEST_PASS;
}

int main(void) {
    run_test("scratch_size", test_scratch_size);
    run_test("matmul_views", test_matmul_views);
    run_test("matmul_threads_agree", test_matmul_threads_agree);
    run_test("matmul_decode_chunks", test_matmul_decode_chunks);
    run_test("matmul_many", test_matmul_many);
    return tests_exit_code();
}
