/* test_kernels_float.c - the float weight types (F32, F16, BF16) give an output the same bits
 * on every path of a table: its gemv (alone and in company), its multi-row gemv and its tile
 * against the table's own vec_dot, bit for bit; and el_matmul of a batch of 1..70 rows against
 * each row alone (a row's logits must not depend on the batch it is in: speculative rows,
 * variants, chunked prompts). The dot products themselves are checked against a double
 * precision sum here (and test_kernels_simd against the reference kernels). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/threadpool.h"
#include "kernels/dispatch.h"
#include "kernels/matmul.h"
#include "testutil.h"

static const el_type float_types[] = {EL_TYPE_F32, EL_TYPE_F16, EL_TYPE_BF16};
enum { N_FLOAT_TYPES = 3 };

/* Lengths: every tail of the vector widths (4, 8, 16) and of two-vector steps, and long rows. */
static const int64_t lengths[] = {1,  2,  3,  5,  7,  8,  9,  15, 16, 17, 23, 31,  32,  33,
                                  40, 47, 63, 64, 65, 97, 128, 129, 255, 288, 1000, 2051};
enum { N_LENGTHS = sizeof lengths / sizeof lengths[0] };

/* n random floats in [-1, 1), a few of them zeros of either sign and large outliers, so that a
 * change in the order of the float operations changes the rounding. */
static void random_floats(float *x, int64_t n, test_rng *r) {
    for (int64_t i = 0; i < n; i++) {
        x[i] = test_rand_uniform(r, -1.0f, 1.0f);
        uint32_t pick = test_rand_u32(r) % 32;
        if (pick == 0) x[i] = 0.0f;
        if (pick == 1) x[i] = -0.0f;
        if (pick == 2) x[i] *= 300.0f;
    }
}

static bool same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* The dot of the stored weight row with a, in double precision, and sum |w a|. */
static double exact_dot(el_type t, const void *w, const float *a, int64_t n, double *mag) {
    float *wf = malloc((size_t)n * sizeof *wf);
    if (wf == NULL) return NAN;
    el_type_kernels_get(t)->to_float(w, wf, n);
    double s = 0.0;
    *mag = 0.0;
    for (int64_t i = 0; i < n; i++) {
        s += (double)wf[i] * a[i];
        *mag += fabs((double)wf[i] * a[i]);
    }
    free(wf);
    return s;
}

enum { ROWS = 13, ACTS = EL_TILE, LDY = ROWS + 2 };

/* One type of one table at length n: ROWS weight rows (strided with padding, the bytes past
 * the last poisoned) against ACTS activation rows. */
static int check_paths(const el_kernels *k, el_type t, int64_t n, test_rng *r) {
    const char *name = el_type_layout_get(t)->ggml_name;
    size_t w_stride = el_row_size(t, n) + 8, a_stride = (size_t)n * sizeof(float) + 12;
    char *w = malloc(w_stride * ROWS + 64), *a = malloc(a_stride * ACTS + 64);
    float *f = malloc((size_t)n * sizeof *f);
    static float want[ACTS][ROWS], y[ACTS * LDY];
    CHECK(w && a && f);
    memset(w, 0xFF, w_stride * ROWS + 64);
    memset(a, 0xFF, a_stride * ACTS + 64);
    for (int o = 0; o < ROWS; o++) {
        random_floats(f, n, r);
        el_type_kernels_get(t)->from_float(f, w + o * w_stride, n);
    }
    for (int k2 = 0; k2 < ACTS; k2++) random_floats((float *)(a + k2 * a_stride), n, r);
    /* the table's vec_dot, itself against the exact sum */
    for (int k2 = 0; k2 < ACTS; k2++)
        for (int o = 0; o < ROWS; o++) {
            const float *ak = (const float *)(a + k2 * a_stride);
            k->vec_dot[t](n, &want[k2][o], w + o * w_stride, ak);
            double mag = 0.0, exact = exact_dot(t, w + o * w_stride, ak, n, &mag);
            /* the rounding bound of any order of n float multiply-adds: n u sum |w a| */
            if (!(fabs(want[k2][o] - exact) <= (double)(n + 4) * 0x1p-24 * mag + 1e-30)) {
                test_note("%s vec_dot %s n=%lld: %.9g, exact %.9g", k->isa, name, (long long)n,
                          want[k2][o], exact);
                return TEST_FAIL;
            }
        }
    if (k->gemv[t]) /* every row count to ROWS, with the activation row of each act */
        for (int k2 = 0; k2 < ACTS; k2++)
            for (int rows = 1; rows <= ROWS; rows++) {
                for (int o = 0; o <= rows; o++) y[o] = 12345.0f;
                k->gemv[t](n, y, rows, w, w_stride, a + k2 * a_stride);
                CHECK(y[rows] == 12345.0f);
                for (int o = 0; o < rows; o++)
                    if (!same_bits(y[o], want[k2][o])) {
                        test_note("%s gemv %s n=%lld rows %d y[%d] = %.9g, vec_dot %.9g", k->isa,
                                  name, (long long)n, rows, o, y[o], want[k2][o]);
                        return TEST_FAIL;
                    }
            }
    if (k->gemv_multi[t])
        for (int n_act = 2; n_act <= EL_GEMV_MULTI_MAX; n_act++)
            for (int rows = 1; rows <= ROWS; rows++) {
                for (int i = 0; i < ACTS * LDY; i++) y[i] = 12345.0f;
                k->gemv_multi[t](n, y, LDY, n_act, rows, w, w_stride, a, a_stride);
                for (int k2 = 0; k2 < ACTS; k2++)
                    for (int o = 0; o < LDY; o++) {
                        float got = y[k2 * LDY + o];
                        if (k2 >= n_act || o >= rows) {
                            CHECK(got == 12345.0f);
                        } else if (!same_bits(got, want[k2][o])) {
                            test_note("%s gemv_multi %s n=%lld %d acts %d rows y[%d][%d] = %.9g, "
                                      "vec_dot %.9g", k->isa, name, (long long)n, n_act, rows,
                                      k2, o, got, want[k2][o]);
                            return TEST_FAIL;
                        }
                    }
            }
    if (k->tile[t])
        for (int o0 = 0; o0 + EL_TILE <= ROWS; o0 += 3) { /* tiles at several offsets */
            for (int i = 0; i < ACTS * LDY; i++) y[i] = 12345.0f;
            k->tile[t](n, y + o0, LDY, w + o0 * w_stride, w_stride, a, a_stride);
            for (int k2 = 0; k2 < EL_TILE; k2++)
                for (int o = 0; o < LDY; o++) {
                    float got = y[k2 * LDY + o];
                    if (o < o0 || o >= o0 + EL_TILE) {
                        CHECK(got == 12345.0f);
                    } else if (!same_bits(got, want[k2][o])) {
                        test_note("%s tile %s n=%lld y[%d][%d] = %.9g, vec_dot %.9g", k->isa,
                                  name, (long long)n, k2, o, got, want[k2][o]);
                        return TEST_FAIL;
                    }
                }
        }
    free(w), free(a), free(f);
    return TEST_PASS;
}

static int check_table(const el_kernels *k) {
    test_rng r = {2024};
    for (int ti = 0; ti < N_FLOAT_TYPES; ti++)
        for (int li = 0; li < N_LENGTHS; li++)
            if (check_paths(k, float_types[ti], lengths[li], &r) != TEST_PASS) return TEST_FAIL;
    return TEST_PASS;
}

/* Every level this CPU runs, as the dispatcher composes it, and the table in use. */
static int test_paths_agree(void) {
    for (size_t i = 0; el_kernels_level_name(i) != NULL; i++) {
        el_kernels k;
        if (!el_kernels_level(el_kernels_level_name(i), &k)) continue;
        test_note("level %s", k.isa);
        if (check_table(&k) != TEST_PASS) return TEST_FAIL;
    }
    el_kernels ref;
    el_kernels_reference(&ref);
    if (check_table(&ref) != TEST_PASS) return TEST_FAIL;
    return check_table(el_kernels_get());
}

/* el_matmul of batches of every size to 70 rows (tiles, their edges, multi-row gemvs and gemvs
 * in every mix), with 1 and 2 threads, against each row alone through el_matmul, bit for bit;
 * shapes with edges of the tiles (n_out not a multiple of 4) and tails of every vector width. */
static int test_batch_invariance(void) {
    typedef struct { int64_t n_in, n_out; } shape;
    static const shape shapes[] = {{288, 290}, {37, 11}, {100, 768}};
    enum { MAX_ROWS = 70 };
    test_rng r = {77};
    for (int nth = 1; nth <= 2; nth++) {
        el_threadpool *tp = NULL;
        if (nth > 1) CHECK(el_threadpool_create(nth, &tp) == EL_OK);
        for (int ti = 0; ti < N_FLOAT_TYPES; ti++)
            for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
                el_type t = float_types[ti];
                int64_t n_in = shapes[si].n_in, n_out = shapes[si].n_out;
                el_weight w = el_weight_view(t, NULL, n_in, n_out);
                char *wq = malloc(w.row_bytes * (size_t)n_out);
                float *x = malloc((size_t)(MAX_ROWS * n_in) * sizeof *x);
                float *alone = malloc((size_t)(MAX_ROWS * n_out) * sizeof *alone);
                float *y = malloc((size_t)(MAX_ROWS * n_out) * sizeof *y);
                CHECK(wq && x && alone && y);
                w.data = wq;
                for (int64_t o = 0; o < n_out; o++) {
                    random_floats(x, n_in, &r);
                    el_type_kernels_get(t)->from_float(x, wq + o * w.row_bytes, n_in);
                }
                random_floats(x, MAX_ROWS * n_in, &r);
                for (int64_t row = 0; row < MAX_ROWS; row++)
                    el_matmul(tp, &w, x + row * n_in, n_in, 1, alone + row * n_out, n_out, NULL);
                for (int64_t rows = 2; rows <= MAX_ROWS; rows++) {
                    int64_t first = (rows * 7) % (MAX_ROWS - rows + 1); /* somewhere in x */
                    el_matmul(tp, &w, x + first * n_in, n_in, rows, y, n_out, NULL);
                    for (int64_t i = 0; i < rows * n_out; i++)
                        if (!same_bits(y[i], alone[first * n_out + i])) {
                            test_note("%s %lldx%lld, %d threads, %lld rows: y[%lld][%lld] = "
                                      "%.9g, alone %.9g", el_type_layout_get(t)->ggml_name,
                                      (long long)n_out, (long long)n_in, nth, (long long)rows,
                                      (long long)(i / n_out), (long long)(i % n_out), y[i],
                                      alone[first * n_out + i]);
                            return TEST_FAIL;
                        }
                }
                free(wq), free(x), free(alone), free(y);
            }
        el_threadpool_free(tp);
    }
    return TEST_PASS;
}

int main(void) {
    run_test("paths_agree", test_paths_agree);
    run_test("batch_invariance", test_batch_invariance);
    return tests_exit_code();
}
