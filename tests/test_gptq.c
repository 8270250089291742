/* test_gptq.c - GPTQ (compress/gptq.c) against round to nearest on the same grid: lower layer
 * output error ||X (W - Q)^T|| on the calibration rows X its Hessian came from, for each 4-bit
 * type; the packed blocks against the types' own dequantizers; and the dequantized weight
 * against tests/golden/gptq_golden.py, GPTQ written column by column in NumPy (run when
 * python3 with numpy is there), which checks the lazy block updates and the grids. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress/gptq.h"
#include "kernels/types.h"
#include "testutil.h"

enum { ROWS = 24, COLS = 256, TOKENS = 512 };

/* Calibration rows with correlated inputs (what makes GPTQ's feedback worth something): each
 * x = z M with z Gaussian-ish and M a random mixing, plus a few large input channels. */
static void make_inputs(test_rng *r, float *x, int64_t tokens, int64_t cols) {
    float *m = malloc((size_t)(cols * cols) * sizeof *m);
    for (int64_t i = 0; i < cols * cols; i++)
        m[i] = test_rand_uniform(r, -1, 1) / sqrtf((float)cols);
    float *z = malloc((size_t)cols * sizeof *z);
    for (int64_t t = 0; t < tokens; t++) {
        for (int64_t i = 0; i < cols; i++)
            z[i] =
                test_rand_uniform(r, -1, 1) + test_rand_uniform(r, -1, 1) * (i % 17 == 0 ? 6 : 1);
        for (int64_t j = 0; j < cols; j++) {
            double s = 0;
            for (int64_t i = 0; i < cols; i++) s += z[i] * m[i * cols + j];
            x[t * cols + j] = (float)s + 0.3f * z[j];
        }
    }
    free(m);
    free(z);
}

static void hessian(const float *x, int64_t tokens, int64_t cols, double *h) {
    for (int64_t i = 0; i < cols; i++)
        for (int64_t j = 0; j < cols; j++) {
            double s = 0;
            for (int64_t t = 0; t < tokens; t++) s += (double)x[t * cols + i] * x[t * cols + j];
            h[i * cols + j] = s;
        }
}

/* ||X (W - Q)^T||^2 directly */
static double output_error(const float *x, const float *w, const float *q, int64_t tokens,
                           int64_t rows, int64_t cols) {
    double e = 0;
    for (int64_t t = 0; t < tokens; t++)
        for (int64_t r = 0; r < rows; r++) {
            double s = 0;
            for (int64_t c = 0; c < cols; c++)
                s += (double)x[t * cols + c] * (w[r * cols + c] - q[r * cols + c]);
            e += s * s;
        }
    return e;
}

typedef struct fixture {
    float *x, *w;
    double *h;
} fixture;

static void fixture_make(fixture *f, uint64_t seed) {
    test_rng r = {seed};
    f->x = malloc((size_t)TOKENS * COLS * sizeof *f->x);
    f->w = malloc((size_t)ROWS * COLS * sizeof *f->w);
    f->h = malloc((size_t)COLS * COLS * sizeof *f->h);
    make_inputs(&r, f->x, TOKENS, COLS);
    for (int64_t i = 0; i < ROWS * COLS; i++) f->w[i] = test_rand_uniform(&r, -1, 1);
    hessian(f->x, TOKENS, COLS, f->h);
}

static void fixture_free(fixture *f) {
    free(f->x);
    free(f->w);
    free(f->h);
}

static const char *const types[] = {"q4_0", "w4g32", "w4g64", "w4g128"};

static int test_gptq_beats_rtn(void) {
    fixture f;
    fixture_make(&f, 7);
    float *g = malloc(sizeof(float) * ROWS * COLS), *n = malloc(sizeof(float) * ROWS * COLS);
    int result = TEST_PASS;
    for (size_t t = 0; t < sizeof types / sizeof *types && result == TEST_PASS; t++) {
        el_gptq_grid grid;
        CHECK(el_gptq_grid_get(types[t], 0, &grid) == EL_OK);
        memcpy(g, f.w, sizeof(float) * ROWS * COLS);
        memcpy(n, f.w, sizeof(float) * ROWS * COLS);
        CHECK(el_gptq_quantize(g, ROWS, COLS, f.h, 0.01, 64, grid, NULL) == EL_OK);
        el_rtn_quantize(n, ROWS, COLS, grid, NULL);
        double eg = output_error(f.x, f.w, g, TOKENS, ROWS, COLS);
        double en = output_error(f.x, f.w, n, TOKENS, ROWS, COLS);
        test_note("%s: layer output error GPTQ %.4g, round to nearest %.4g (%.2fx)", types[t], eg,
                  en, en / eg);
        /* GPTQ's paper reports several times lower errors on correlated inputs; 1.5x is a
         * margin no rounding variant reaches by luck */
        if (!(eg * 1.5 < en)) result = TEST_FAIL;
    }
    free(g);
    free(n);
    fixture_free(&f);
    return result;
}

/* The packed rows decode (with the type's own dequantizer) to the weight GPTQ returns. */
static int test_gptq_packed_blocks(void) {
    fixture f;
    fixture_make(&f, 8);
    float *g = malloc(sizeof(float) * ROWS * COLS), *back = malloc(sizeof(float) * COLS);
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        el_gptq_grid grid;
        CHECK(el_gptq_grid_get(types[t], 0, &grid) == EL_OK);
        size_t row = el_row_size(grid.type, COLS);
        uint8_t *packed = malloc(row * ROWS);
        memcpy(g, f.w, sizeof(float) * ROWS * COLS);
        CHECK(el_gptq_quantize(g, ROWS, COLS, f.h, 0.01, 0, grid, packed) == EL_OK);
        for (int r = 0; r < ROWS; r++) {
            el_type_kernels_get(grid.type)->to_float(packed + r * row, back, COLS);
            CHECK(memcmp(back, g + r * COLS, sizeof(float) * COLS) == 0);
        }
        free(packed);
    }
    free(g);
    free(back);
    fixture_free(&f);
    return TEST_PASS;
}

static int test_gptq_grids(void) {
    el_gptq_grid g;
    CHECK(el_gptq_grid_get(NULL, 64, &g) == EL_OK && g.type == EL_TYPE_W4G64 && g.group == 64);
    CHECK(el_gptq_grid_get(NULL, 128, &g) == EL_OK && g.type == EL_TYPE_W4G128);
    CHECK(el_gptq_grid_get("q4_0", 0, &g) == EL_OK && g.group == 32);
    CHECK(el_gptq_grid_get("q4_0", 64, &g) == EL_ERR_INVALID_ARG);
    CHECK(strstr(el_last_error(), "w4g64"));
    CHECK(el_gptq_grid_get(NULL, 48, &g) == EL_ERR_INVALID_ARG);
    CHECK(el_gptq_grid_get("q8_0", 0, &g) == EL_ERR_INVALID_ARG);
    return TEST_PASS;
}

/* The NumPy reference on a small case, each grid and an input never seen (a zero column). */
static int test_gptq_golden_numpy(void) {
    if (system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0)
        return test_skip("/usr/bin/python3 with numpy is not installed");
    enum { R = 6, C = 128, T = 200 };
    test_rng rng = {11};
    float *x = malloc(sizeof(float) * T * C), *w = malloc(sizeof(float) * R * C);
    double *h = malloc(sizeof(double) * C * C), *ref = malloc(sizeof(double) * R * C);
    make_inputs(&rng, x, T, C);
    for (int t = 0; t < T; t++) x[t * C + 5] = 0; /* input 5 never seen */
    for (int i = 0; i < R * C; i++) w[i] = test_rand_uniform(&rng, -1, 1);
    hessian(x, T, C, h);
    char in[512], out[512], cmd[1200];
    snprintf(in, sizeof in, "%s/gptq.in", test_tmp_dir());
    snprintf(out, sizeof out, "%s/gptq.out", test_tmp_dir());
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        el_gptq_grid grid;
        CHECK(el_gptq_grid_get(types[t], 0, &grid) == EL_OK);
        int32_t head[4] = {R, C, grid.group, grid.type == EL_TYPE_Q4_0 ? 0 : 1};
        double damp = 0.02;
        FILE *f = fopen(in, "wb");
        CHECK(f);
        fwrite(head, sizeof head, 1, f);
        fwrite(&damp, sizeof damp, 1, f);
        fwrite(w, sizeof(float), R * C, f);
        fwrite(h, sizeof(double), C * C, f);
        fclose(f);
        snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/golden/gptq_golden.py '%s' '%s'", in,
                 out);
        CHECK(system(cmd) == 0);
        f = fopen(out, "rb");
        CHECK(f && fread(ref, sizeof(double), R * C, f) == R * C);
        fclose(f);
        float *g = malloc(sizeof(float) * R * C);
        memcpy(g, w, sizeof(float) * R * C);
        /* lazy blocks of 32 columns: four blocks, so the deferred updates are exercised */
        CHECK(el_gptq_quantize(g, R, C, h, damp, 32, grid, NULL) == EL_OK);
        double worst = 0;
        for (int i = 0; i < R * C; i++) worst = fmax(worst, fabs(g[i] - ref[i]));
        test_note("%s: max |C - NumPy| %.3g", types[t], worst);
        free(g);
        CHECK(worst < 1e-5);
    }
    free(x);
    free(w);
    free(h);
    free(ref);
    return TEST_PASS;
}

int main(void) {
    run_test("gptq_beats_rtn", test_gptq_beats_rtn);
    run_test("gptq_packed_blocks", test_gptq_packed_blocks);
    run_test("gptq_grids", test_gptq_grids);
    run_test("gptq_golden_numpy", test_gptq_golden_numpy);
    return tests_exit_code();
}
