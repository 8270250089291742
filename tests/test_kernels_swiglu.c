/* test_kernels_swiglu.c - the gated activations of every kernel table this CPU runs. SwiGLU
 * against the reference (libm's expf) and hand-computed values: magnitudes from 1e-3 to 80 of
 * both signs (where e^-g over- or underflows the naive formula), lengths that leave every tail,
 * and the same bits however the array is split. GeGLU (and its reference) against the tanh
 * formula in double precision over the same magnitudes and lengths, and split the same way. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dispatch.h"
#include "testutil.h"

/* got against want: a few float roundings of the result's size (or of the smallest normal). */
static bool close_to(float got, double want) {
    return fabs((double)got - want) <= 1e-6 * fabs(want) + 1e-37;
}

/* An element's result does not depend on where the array is split (the thread pool splits it by
 * the batch's size): whole against pieces of 3, 13 and the rest, bit for bit. */
static int split_agrees(el_swiglu_fn f, test_rng *r) {
    enum { N = 77 };
    float whole[N], pieces[N], up[N];
    for (int i = 0; i < N; i++) {
        whole[i] = pieces[i] = test_rand_uniform(r, -12.0f, 12.0f);
        up[i] = test_rand_uniform(r, -2.0f, 2.0f);
    }
    f(whole, up, N);
    f(pieces, up, 3);
    f(pieces + 3, up + 3, 13);
    f(pieces + 16, up + 16, N - 16);
    CHECK(memcmp(whole, pieces, sizeof whole) == 0);
    return TEST_PASS;
}

static int check_table(const el_kernels *k) {
    test_rng r = {11};
    enum { N = 77 };
    float gate[N + 1] = {0}, up[N] = {0}, want[N] = {0};
    for (int len = 0; len <= N; len += (len < 20 ? 1 : 19)) {
        for (int i = 0; i < len; i++) {
            float mag = powf(10.0f, test_rand_uniform(&r, -3.0f, 1.9f));
            gate[i] = test_rand_u32(&r) % 2 ? mag : -mag;
            up[i] = test_rand_uniform(&r, -2.0f, 2.0f);
            want[i] = gate[i];
        }
        gate[len] = 12345.0f; /* past the end: must stay */
        el_swiglu_ref(want, up, (size_t)len);
        k->swiglu(gate, up, (size_t)len);
        for (int i = 0; i < len; i++) {
            if (!close_to(gate[i], want[i])) {
                test_note("%s: len %d [%d]: got %.9g, reference %.9g", k->isa, len, i, gate[i],
                          want[i]);
                return TEST_FAIL;
            }
        }
        CHECK(gate[len] == 12345.0f);
    }
    CHECK(split_agrees(k->swiglu, &r) == TEST_PASS);
    /* hand-computed: silu(0) = 0, silu(1) = 1 / (1 + 1/e), silu(-1) = -1 / (1 + e), and far out
     * silu(80) = 80, silu(-80) = -80 e^-80 (about -1.4e-33) */
    float g[9] = {0.0f, 1.0f, -1.0f, 80.0f, -80.0f, 2.0f, -2.0f, 10.0f, -10.0f};
    float u[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    k->swiglu(g, u, 9);
    double e = exp(1.0);
    CHECK(g[0] == 0.0f);
    CHECK(close_to(g[1], 1.0 / (1.0 + 1.0 / e)));
    CHECK(close_to(g[2], -1.0 / (1.0 + e)));
    CHECK(close_to(g[3], 80.0));
    CHECK(fabs(g[4] - (-80.0 * exp(-80.0))) <= 1e-6 * 80.0 * exp(-80.0) + 1e-37);
    CHECK(close_to(g[5], 2.0 / (1.0 + exp(-2.0))) && close_to(g[6], -2.0 / (1.0 + exp(2.0))));
    CHECK(close_to(g[7], 10.0 / (1.0 + exp(-10.0))) && close_to(g[8], -10.0 / (1.0 + exp(10.0))));
    return TEST_PASS;
}

/* gelu(x) * up in double: the definition (swiglu.h), not the float reference. */
static double geglu_double(double x, double up) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))) * up;
}

static int check_geglu(const char *isa, el_swiglu_fn geglu) {
    test_rng r = {12};
    enum { N = 77 };
    float gate[N + 1] = {0}, up[N] = {0}, x[N] = {0};
    for (int len = 0; len <= N; len += (len < 20 ? 1 : 19)) {
        for (int i = 0; i < len; i++) {
            float mag = powf(10.0f, test_rand_uniform(&r, -3.0f, 1.9f));
            x[i] = gate[i] = test_rand_u32(&r) % 2 ? mag : -mag;
            up[i] = test_rand_uniform(&r, -2.0f, 2.0f);
        }
        gate[len] = 12345.0f;
        geglu(gate, up, (size_t)len);
        for (int i = 0; i < len; i++) {
            double want = geglu_double(x[i], up[i]);
            /* float's 1 + tanh has an error of half an ulp of 1, times 0.5 |x up| */
            double tol = 1e-6 * fabs(want) + 1e-7 * fabs((double)x[i] * up[i]) + 1e-37;
            if (fabs(gate[i] - want) > tol) {
                test_note("%s geglu: len %d [%d]: x %.9g up %.9g: got %.9g, want %.9g", isa, len,
                          i, x[i], up[i], gate[i], want);
                return TEST_FAIL;
            }
        }
        CHECK(gate[len] == 12345.0f);
    }
    CHECK(split_agrees(geglu, &r) == TEST_PASS);
    return TEST_PASS;
}

static int test_tables(void) {
    el_kernels ref;
    el_kernels_reference(&ref);
    if (check_table(&ref) != TEST_PASS) return TEST_FAIL;
    el_kernels avx2;
    if (el_kernels_level("avx2", &avx2)) {
        test_note("tested the avx2 table's swiglu");
        if (check_table(&avx2) != TEST_PASS) return TEST_FAIL;
    }
    return check_table(el_kernels_get());
}

static int test_geglu(void) {
    el_kernels ref, avx2;
    el_kernels_reference(&ref);
    if (check_geglu("ref", ref.geglu) != TEST_PASS) return TEST_FAIL;
    if (el_kernels_level("avx2", &avx2) && check_geglu("avx2", avx2.geglu) != TEST_PASS)
        return TEST_FAIL;
    return check_geglu(el_kernels_get()->isa, el_kernels_get()->geglu);
}

int main(void) {
    run_test("tables", test_tables);
    run_test("geglu", test_geglu);
    return tests_exit_code();
}
