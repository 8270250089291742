/* test_vision_sampler.c - the noise schedule and the DDIM and DDPM samplers against NumPy
 * (tests/golden/make_vision_sampler_golden.py) on the same starting noise, with a fixed noise
 * predictor both sides compute, eps(x, t) = tanh(0.7 x + 0.01 t - 0.2). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "vision/sample.h"

enum { PIX = 784 };

static char *g_buf;
static size_t g_size, g_pos;
static int32_t g_T, g_n;
static float g_b1, g_bT;

static float *next_array(size_t n) {
    uint32_t count;
    if (g_pos + 4 > g_size) return NULL;
    memcpy(&count, g_buf + g_pos, 4);
    if (count != n || g_pos + 4 + (size_t)count * 4 > g_size) return NULL;
    float *a = malloc(n * sizeof *a);
    memcpy(a, g_buf + g_pos + 4, n * 4);
    g_pos += 4 + n * 4;
    return a;
}

static el_status fixed_eps(void *user, const float *x, int32_t t, float *eps) {
    int64_t n = *(int64_t *)user;
    for (int64_t i = 0; i < n * PIX; i++) eps[i] = tanhf(0.7f * x[i] + 0.01f * (float)t - 0.2f);
    return EL_OK;
}

typedef struct zs {
    const float *z;
    size_t pos;
} zs;

static void recorded_noise(void *user, float *z, int64_t n) {
    zs *s = user;
    memcpy(z, s->z + s->pos, (size_t)n * sizeof *z);
    s->pos += (size_t)n;
}

static int test_samplers(void) {
    size_t nx = (size_t)g_n * PIX;
    float *abar = next_array((size_t)g_T), *xT = next_array(nx), *ts5 = next_array(5);
    float *x5 = next_array(nx), *x20 = next_array(nx), *z = next_array((size_t)(g_T - 1) * nx);
    float *xddpm = next_array(nx);
    CHECK(abar && xT && ts5 && x5 && x20 && z && xddpm && g_pos == g_size);
    el_schedule s;
    CHECK(el_schedule_init(&s, g_T, g_b1, g_bT) == EL_OK);
    int ok = test_max_rel_err(s.abar, abar, (size_t)g_T) < 1e-6;
    int32_t ts[5];
    el_schedule_ddim_steps(&s, 5, ts);
    for (int i = 0; i < 5; i++) ok = ok && ts[i] == (int32_t)ts5[i];
    float *x = malloc(nx * sizeof *x);
    int64_t n = g_n;
    memcpy(x, xT, nx * sizeof *x);
    CHECK(el_sample_ddim(&s, 5, n, x, fixed_eps, &n) == EL_OK);
    double e5 = test_max_rel_err(x, x5, nx);
    memcpy(x, xT, nx * sizeof *x);
    CHECK(el_sample_ddim(&s, 20, n, x, fixed_eps, &n) == EL_OK);
    double e20 = test_max_rel_err(x, x20, nx);
    memcpy(x, xT, nx * sizeof *x);
    zs rec = {z, 0};
    CHECK(el_sample_ddpm(&s, n, x, fixed_eps, &n, recorded_noise, &rec) == EL_OK);
    double ep = test_max_rel_err(x, xddpm, nx);
    test_note("max relative error: DDIM 5 steps %.2g, 20 steps %.2g, DDPM %.2g", e5, e20, ep);
    ok = ok && e5 < 1e-4 && e20 < 1e-4 && ep < 1e-4 && rec.pos == (size_t)(g_T - 1) * nx;
    /* DDIM's step count is checked against the schedule */
    CHECK(el_sample_ddim(&s, g_T + 1, n, x, fixed_eps, &n) == EL_ERR_INVALID_ARG);
    el_schedule_free(&s);
    free(abar), free(xT), free(ts5), free(x5), free(x20), free(z), free(xddpm), free(x);
    CHECK(ok);
    return TEST_PASS;
}

int main(void) {
    g_buf = test_read_file("tests/golden/vision_sampler.bin", &g_size);
    if (!g_buf || g_size < 24 || memcmp(g_buf, "ELVS\1\0\0\0", 8)) {
        printf("FAIL golden: tests/golden/vision_sampler.bin missing or not version 1\n");
        return 1;
    }
    memcpy(&g_T, g_buf + 8, 4), memcpy(&g_n, g_buf + 12, 4);
    memcpy(&g_b1, g_buf + 16, 4), memcpy(&g_bT, g_buf + 20, 4);
    g_pos = 24;
    run_test("ddim_ddpm_vs_numpy", test_samplers);
    free(g_buf);
    return tests_exit_code();
}
