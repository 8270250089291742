/* test_kernels_edge.c - edgelora's integer types (edge.h, docs/formats.md): row sizes, hand-built
 * rows and blocks, quantization error within half a step, reference dot products against the
 * float dot product of the dequantized operands, and per-row scales under prefix views. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/edge.h"
#include "testutil.h"

static const el_type weight_types[] = {EL_TYPE_W8, EL_TYPE_W4, EL_TYPE_W4G32, EL_TYPE_W4G64,
                                       EL_TYPE_W4G128};

static float rand_normal(test_rng *r) {
    float s = 0.0f;
    for (int i = 0; i < 4; i++) s += test_rand_uniform(r, -1.0f, 1.0f);
    return s * 0.866f;
}

static int test_layouts(void) {
    CHECK(el_row_size(EL_TYPE_A8, 64) == 8 + 64);
    CHECK(el_row_size(EL_TYPE_W8, 64) == 4 + 64);
    CHECK(el_row_size(EL_TYPE_W4, 64) == 4 + 32);
    CHECK(el_row_size(EL_TYPE_W4G32, 64) == 2 * (2 + 16));
    CHECK(el_row_size(EL_TYPE_W4G64, 128) == 2 * (2 + 32));
    CHECK(el_row_size(EL_TYPE_W4G128, 256) == 2 * (2 + 64));
    for (size_t i = 0; i < sizeof weight_types / sizeof weight_types[0]; i++) {
        const el_type_kernels *t = el_type_kernels_get(weight_types[i]);
        CHECK(t != NULL && t->vec_dot != NULL && t->vec_dot_type == EL_TYPE_A8);
    }
    CHECK(el_type_kernels_get(EL_TYPE_A8)->vec_dot == NULL);
    el_type ty;
    CHECK(el_type_from_name("W4G64", &ty) && ty == EL_TYPE_W4G64);
    CHECK(el_type_from_name("a8", &ty) && ty == EL_TYPE_A8);
    return TEST_PASS;
}

/* Rows and blocks written byte by byte from the layouts in edge.h. */
static int test_hand_built(void) {
    /* W4 row of 32: d = 0.5; byte 0 = 0x8F: element 0 = (15-8)*0.5, element 16 = (8-8)*0.5;
     * byte 15 = 0x10: element 15 = (0-8)*0.5, element 31 = (1-8)*0.5 */
    uint8_t w4[4 + 16];
    float d = 0.5f, y[128];
    memcpy(w4, &d, 4);
    memset(w4 + 4, 0x88, 16);
    w4[4] = 0x8F;
    w4[4 + 15] = 0x10;
    el_type_kernels_get(EL_TYPE_W4)->to_float(w4, y, 32);
    CHECK(y[0] == 3.5f && y[16] == 0.0f && y[15] == -4.0f && y[31] == -3.5f && y[1] == 0.0f);
    /* W4G64 block: fp16 2.0 = 0x4000; the second chunk's byte 3 = 0xA2: element 32+3 = -12,
     * element 32+19 = 4 */
    uint8_t g64[2 + 32];
    memset(g64, 0x88, sizeof g64);
    g64[0] = 0x00, g64[1] = 0x40;
    g64[2 + 16 + 3] = 0xA2;
    el_type_kernels_get(EL_TYPE_W4G64)->to_float(g64, y, 64);
    CHECK(y[35] == -12.0f && y[51] == 4.0f && y[0] == 0.0f && y[63] == 0.0f);
    /* A8 row: d = 0.25, sum unused by to_float; q[0] = -127, q[31] = 4 */
    uint8_t a8[8 + 32] = {0};
    d = 0.25f;
    memcpy(a8, &d, 4);
    a8[8] = (uint8_t)-127;
    a8[8 + 31] = 4;
    el_type_kernels_get(EL_TYPE_A8)->to_float(a8, y, 32);
    CHECK(y[0] == -31.75f && y[31] == 1.0f && y[5] == 0.0f);
    /* W8 row dot A8 row by hand: (3 * -127 + -2 * 4) * 0.5 * 0.25 */
    uint8_t w8[4 + 32] = {0};
    d = 0.5f;
    memcpy(w8, &d, 4);
    w8[4] = 3;
    w8[4 + 31] = (uint8_t)-2;
    float s = NAN;
    el_type_kernels_get(EL_TYPE_W8)->vec_dot(32, &s, w8, a8);
    CHECK(s == (3.0f * -127.0f - 2.0f * 4.0f) * 0.125f);
    return TEST_PASS;
}

/* Each element comes back within half a step (d/2) of the scale that covers it, plus for fp16
 * group scales the rounding of d (which can push the extreme up to a 2^-11 relative clamp);
 * A8's header sum is the sum of its quants; zero rows stay zero. */
static int test_roundtrip(void) {
    static const el_type types[] = {EL_TYPE_A8, EL_TYPE_W8, EL_TYPE_W4, EL_TYPE_W4G32,
                                    EL_TYPE_W4G64, EL_TYPE_W4G128};
    enum { N = 512 };
    test_rng r = {3};
    float x[N], y[N];
    uint8_t q[8 + N];
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const el_type_kernels *t = el_type_kernels_get(types[ti]);
        const el_type_layout *layout = el_type_layout_get(types[ti]);
        bool int4 = types[ti] != EL_TYPE_A8 && types[ti] != EL_TYPE_W8;
        int64_t group = layout->row_header ? N : layout->block_size;
        for (int rep = 0; rep < 4; rep++) {
            for (int i = 0; i < N; i++) x[i] = rep == 3 ? 0.0f : rand_normal(&r) * (rep + 1);
            if (rep == 1) x[77] = 30.0f;
            t->from_float(x, q, N);
            t->to_float(q, y, N);
            for (int64_t g0 = 0; g0 < N; g0 += group) {
                float amax = 0.0f;
                for (int64_t i = g0; i < g0 + group; i++) amax = fmaxf(amax, fabsf(x[i]));
                double step = amax / (int4 ? 7.0 : 127.0);
                double bound = step * 0.5 * (1 + 1e-6) + amax * 1e-3 * (layout->row_header == 0);
                for (int64_t i = g0; i < g0 + group; i++) {
                    if (!(fabs((double)x[i] - y[i]) <= bound)) {
                        test_note("%s rep %d: x[%lld] = %g came back %g (bound %g)",
                                  layout->ggml_name, rep, (long long)i, x[i], y[i], bound);
                        return TEST_FAIL;
                    }
                }
            }
            if (types[ti] == EL_TYPE_A8) {
                el_a8_header h;
                memcpy(&h, q, sizeof h);
                int32_t sum = 0;
                for (int i = 0; i < N; i++) sum += (int8_t)q[8 + i];
                CHECK(h.sum == sum);
            }
        }
    }
    return TEST_PASS;
}

/* vec_dot equals the float dot product of the dequantized rows, at full length and on a prefix
 * of the same stored row (a pruned view: the row's scale applies to its prefix too). */
static int test_vec_dot_ref(void) {
    enum { N = 512 };
    test_rng r = {8};
    float x[N], a[N], xd[N], ad[N];
    uint8_t *wq = malloc(el_row_size(EL_TYPE_W8, N)), *aq = malloc(el_row_size(EL_TYPE_A8, N));
    CHECK(wq && aq);
    for (size_t ti = 0; ti < sizeof weight_types / sizeof weight_types[0]; ti++) {
        const el_type_kernels *wt = el_type_kernels_get(weight_types[ti]);
        const el_type_layout *wt_layout = el_type_layout_get(weight_types[ti]);
        const el_type_kernels *at = el_type_kernels_get(EL_TYPE_A8);
        for (int i = 0; i < N; i++) {
            x[i] = rand_normal(&r) * 0.05f;
            a[i] = rand_normal(&r) * 3.0f + 0.5f;
        }
        wt->from_float(x, wq, N);
        wt->to_float(wq, xd, N);
        for (int64_t k = wt_layout->block_size; k <= N; k *= 2) {
            at->from_float(a, aq, k);
            at->to_float(aq, ad, k);
            double want = 0.0, mag = 0.0;
            for (int64_t i = 0; i < k; i++) {
                want += (double)xd[i] * ad[i];
                mag += fabs((double)xd[i] * ad[i]);
            }
            float got = NAN;
            wt->vec_dot(k, &got, wq, aq);
            if (!(fabs(got - want) <= 1e-5 * mag + 1e-6)) {
                test_note("%s k=%lld: got %.8g want %.8g", wt_layout->ggml_name, (long long)k, got,
                          want);
                return TEST_FAIL;
            }
        }
    }
    free(wq), free(aq);
    return TEST_PASS;
}

/* W8A16 (edge.h): W8's bytes against A16 rows. Layouts, a row built by hand, A16's round trip
 * within half a step (amax / 32767 / 2), and the dot product against the float dot product of
 * the dequantized rows, at full length and on prefixes. */
static int test_w8a16(void) {
    enum { N = 512 };
    const el_type_kernels *wt = el_type_kernels_get(EL_TYPE_W8A16),
                          *at = el_type_kernels_get(EL_TYPE_A16);
    CHECK(wt && at && wt->vec_dot && wt->vec_dot_type == EL_TYPE_A16 && at->vec_dot == NULL);
    CHECK(el_row_size(EL_TYPE_W8A16, 64) == el_row_size(EL_TYPE_W8, 64));
    CHECK(el_row_size(EL_TYPE_A16, 64) == 4 + 2 * 64);
    el_type ty;
    CHECK(el_type_from_name("W8A16", &ty) && ty == EL_TYPE_W8A16);
    /* by hand: d_w = 0.5, q[0] = -3, q[31] = 127; d_a = 0.25, a[0] = -32767, a[31] = 2 */
    uint8_t w[4 + 32] = {0}, a[4 + 64] = {0};
    float dw = 0.5f, da = 0.25f, y[N];
    memcpy(w, &dw, 4);
    memcpy(a, &da, 4);
    w[4] = (uint8_t)-3;
    w[4 + 31] = 127;
    int16_t a0 = -32767, a31 = 2;
    memcpy(a + 4, &a0, 2);
    memcpy(a + 4 + 62, &a31, 2);
    at->to_float(a, y, 32);
    CHECK(y[0] == -8191.75f && y[31] == 0.5f && y[1] == 0.0f);
    float s = NAN;
    wt->vec_dot(32, &s, w, a);
    CHECK(s == (-3.0f * -32767.0f + 127.0f * 2.0f) * 0.125f);
    /* round trip of A16 */
    test_rng r = {12};
    float x[N], xd[N], ad[N];
    uint8_t *wq = malloc(el_row_size(EL_TYPE_W8A16, N)), *aq = malloc(el_row_size(EL_TYPE_A16, N));
    CHECK(wq && aq);
    for (int rep = 0; rep < 3; rep++) {
        float amax = 0.0f;
        for (int i = 0; i < N; i++) {
            x[i] = rep == 2 ? 0.0f : rand_normal(&r) * (rep + 1);
            amax = fmaxf(amax, fabsf(x[i]));
        }
        at->from_float(x, aq, N);
        at->to_float(aq, y, N);
        for (int i = 0; i < N; i++) CHECK(fabs((double)x[i] - y[i]) <= amax / 32767.0 * 0.5 * (1 + 1e-6));
    }
    /* the dot product, as test_vec_dot_ref does for the A8 types */
    for (int i = 0; i < N; i++) {
        x[i] = rand_normal(&r) * 0.05f;
        y[i] = rand_normal(&r) * 3.0f + 0.5f;
    }
    wt->from_float(x, wq, N);
    wt->to_float(wq, xd, N);
    for (int64_t k = 32; k <= N; k *= 2) {
        at->from_float(y, aq, k);
        at->to_float(aq, ad, k);
        double want = 0.0, mag = 0.0;
        for (int64_t i = 0; i < k; i++) {
            want += (double)xd[i] * ad[i];
            mag += fabs((double)xd[i] * ad[i]);
        }
        wt->vec_dot(k, &s, wq, aq);
        CHECK(fabs(s - want) <= 1e-6 * mag + 1e-6);
    }
    free(wq), free(aq);
    return TEST_PASS;
}

int main(void) {
    run_test("layouts", test_layouts);
    run_test("hand_built", test_hand_built);
    run_test("roundtrip", test_roundtrip);
    run_test("vec_dot_ref", test_vec_dot_ref);
    run_test("w8a16", test_w8a16);
    return tests_exit_code();
}
