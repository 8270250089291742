/* test_vision_quant.c - the image model's integer convolutions (W8A16, W8A8):
 * - each convolution against the same convolution computed here in double from the definition
 *   (shifted images, no im2col) on the dequantized weights and the activations rounded to the
 *   static grid: the integer path may differ only by float rounding;
 * - the same against the float convolution, within what 8-bit weights cost;
 * - the whole forward under a calibrated profile against the float forward;
 * - profiles: a calibration's ranges are the largest inputs seen, the file round trip draws the
 *   same bytes, and files of another kind or model are refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelora-tools.h"
#include "kernels/types.h"
#include "testutil.h"
#include "vision/image_model.h"
#include "vision/quant.h"

static const el_unet_config tiny = {.ch = 4, .temb = 8, .groups = 2, .n_class = 3, .n_steps = 50};
enum { B = 2, SIDE = EL_UNET_SIDE, PIX = SIDE * SIDE, NX = B * EL_UNET_IN * PIX };

/* the convolution of x [cin][side^2] with weights w [cout][cin k k] and bias, in double */
static void conv_ref(double *y, const float *x, const float *w, const float *b, int64_t cin,
                     int64_t cout, int64_t side, int64_t k) {
    int64_t r = k / 2;
    for (int64_t o = 0; o < cout; o++)
        for (int64_t py = 0; py < side; py++)
            for (int64_t px = 0; px < side; px++) {
                double s = b[o];
                for (int64_t c = 0; c < cin; c++)
                    for (int64_t ky = 0; ky < k; ky++)
                        for (int64_t kx = 0; kx < k; kx++) {
                            int64_t sy = py + ky - r, sx = px + kx - r;
                            if (sy < 0 || sy >= side || sx < 0 || sx >= side) continue;
                            s += (double)w[(o * cin + c) * k * k + ky * k + kx] *
                                 x[(c * side + sy) * side + sx];
                        }
                y[(o * side + py) * side + px] = s;
            }
}

static int check_precision(el_image_precision prec) {
    el_unet u;
    CHECK(el_unet_init(&u, &tiny) == EL_OK);
    float *p = malloc(u.tb.n_floats * 4), *amax = calloc((size_t)u.tb.n, 4);
    el_unet_init_params(&u, p, 3);
    test_rng rng = {9};
    for (size_t i = 0; i < u.tb.n_floats; i++) p[i] += test_rand_uniform(&rng, -0.3f, 0.3f);
    int64_t cin = 8, side = 14;
    float *x = malloc((size_t)(cin * side * side) * 4);
    for (int64_t i = 0; i < cin * side * side; i++) x[i] = test_rand_uniform(&rng, -2, 2);
    x[5] = 2.5f; /* the range */
    for (int32_t i = 0; i < u.tb.n; i++) amax[i] = 2.5f;
    el_unet_quant q;
    CHECK(el_unet_quant_init(&q, &u, p, prec, amax) == EL_OK);
    float levels = prec == EL_IMAGE_W8A16 ? 32767.0f : 127.0f, d = 2.5f / levels;
    /* d1's first convolution: 4 -> 8 channels at 14 x 14 would need a 4-channel input; the
     * skip of d1 (1 x 1, 4 -> 8) and m0's conv1 (3 x 3, 8 -> 8) cover both kernel sizes */
    const el_unet_conv *convs[2] = {&u.m0.c1, &u.d1.skip};
    int bad = 0;
    for (int k = 0; k < 2; k++) {
        const el_unet_conv *c = convs[k];
        int64_t K = (int64_t)c->cin * c->k * c->k, n = c->cout * side * side;
        const el_weight *w = &q.w[c->w];
        /* the weights as the integer path holds them, and the activations on its grid */
        float *wq = malloc((size_t)(c->cout * K) * 4), *row = malloc((size_t)w->n_in * 4);
        for (int64_t o = 0; o < c->cout; o++) {
            el_type_kernels_get(w->type)->to_float((const char *)w->data + o * w->row_bytes, row,
                                                    w->n_in);
            memcpy(wq + o * K, row, (size_t)K * 4);
        }
        float *xq = malloc((size_t)(c->cin * side * side) * 4);
        for (int64_t i = 0; i < c->cin * side * side; i++)
            xq[i] = d * fmaxf(-levels, fminf(levels, rintf(x[i] / d)));
        const float *bias = p + u.tb.t[c->b].offset, *wf = p + u.tb.t[c->w].offset;
        double *ref = malloc((size_t)n * 8), *flt = malloc((size_t)n * 8);
        conv_ref(ref, xq, wq, bias, c->cin, c->cout, side, c->k);
        conv_ref(flt, x, wf, bias, c->cin, c->cout, side, c->k);
        float *y = malloc((size_t)n * 4);
        el_arena a = {0};
        el_unet_qconv_forward(&q, c, bias, 1, side, x, y, &a);
        CHECK(!a.failed);
        double err = 0, errf = 0, mag = 0;
        for (int64_t i = 0; i < n; i++) {
            err = fmax(err, fabs(y[i] - ref[i]));
            errf = fmax(errf, fabs(y[i] - flt[i]));
            mag = fmax(mag, fabs(flt[i]));
        }
        /* float rounding of the sums; 8-bit weights cost about 1% of the output's range */
        if (err > 1e-5 * mag || errf > 2e-2 * mag) {
            test_note("%s %s: |int - ref| %.3g, |int - float| %.3g, max |y| %.3g",
                      el_image_precision_name(prec), u.tb.t[c->w].name, err, errf, mag);
            bad++;
        }
        el_arena_free(&a);
        free(wq), free(row), free(xq), free(ref), free(flt), free(y);
    }
    /* a convolution without a range is refused */
    amax[u.conv_out.w] = 0.0f;
    el_unet_quant q2;
    CHECK(el_unet_quant_init(&q2, &u, p, prec, amax) == EL_ERR_INVALID_ARG);
    CHECK(strstr(el_last_error(), "conv_out.weight"));
    el_unet_quant_free(&q);
    el_unet_free(&u);
    free(p), free(amax), free(x);
    CHECK(bad == 0);
    return TEST_PASS;
}

static int test_qconv_w8a16(void) { return check_precision(EL_IMAGE_W8A16); }
static int test_qconv_w8a8(void) { return check_precision(EL_IMAGE_W8A8); }

/* Training for an integer form (fake quantization: weights on their int8 grids, each
 * convolution's input rounded at its step) computes what the integer form computes, up to float
 * rounding: the sums' order differs, and on W8A16's fine grid a difference of an ulp now and
 * then moves a later input by one step (1e-4 of the output's range here), far less than what
 * quantization itself moves. */
static int test_fake_quant_equals_integer(void) {
    el_unet u;
    CHECK(el_unet_init(&u, &tiny) == EL_OK);
    size_t nf = u.tb.n_floats;
    float *p = malloc(nf * 4), *pq = malloc(nf * 4), *amax = calloc((size_t)u.tb.n, 4);
    float *step = calloc((size_t)u.tb.n, 4), *x = malloc(NX * 4);
    float *e_float = malloc(B * PIX * 4), *e_int = malloc(B * PIX * 4);
    float *e_fake = malloc(B * PIX * 4);
    el_unet_init_params(&u, p, 5);
    test_rng rng = {13};
    for (size_t i = 0; i < nf; i++) p[i] += test_rand_uniform(&rng, -0.3f, 0.3f);
    for (int i = 0; i < NX; i++) x[i] = test_rand_uniform(&rng, -1.5f, 1.5f);
    int32_t t[B] = {7, 40}, cls[B] = {1, 3};
    el_arena a = {0};
    /* the ranges from the float forward itself, then a little smaller so that some inputs clip */
    el_unet_bind cal = {.amax = amax};
    CHECK(el_unet_forward(&u, p, &cal, B, x, t, cls, e_float, &a, NULL) == EL_OK);
    int bad = 0;
    for (int k = 0; k < 2; k++) {
        el_image_precision prec = k ? EL_IMAGE_W8A8 : EL_IMAGE_W8A16;
        float levels = el_unet_act_levels(prec);
        for (int32_t i = 0; i < u.tb.n; i++) amax[i] *= k ? 1.0f : 0.9f;
        el_unet_quant q;
        CHECK(el_unet_quant_init(&q, &u, p, prec, amax) == EL_OK);
        el_unet_bind integer = {.quant = &q};
        el_arena_reset(&a);
        CHECK(el_unet_forward(&u, p, &integer, B, x, t, cls, e_int, &a, NULL) == EL_OK);
        memcpy(pq, p, nf * 4);
        el_unet_fake_quant_weights(&u, pq);
        for (int32_t i = 0; i < u.tb.n; i++) step[i] = amax[i] / levels;
        el_unet_bind fake = {.fake_step = step, .fake_levels = levels};
        el_arena_reset(&a);
        CHECK(el_unet_forward(&u, pq, &fake, B, x, t, cls, e_fake, &a, NULL) == EL_OK);
        double err = test_max_rel_err(e_fake, e_int, B * PIX);
        double moved = test_max_rel_err(e_float, e_int, B * PIX);
        test_note("%s: fake against integer %.2g; integer against float %.2g",
                  el_image_precision_name(prec), err, moved);
        if (err > 1e-3 || moved < 10 * err) bad++;
        el_unet_quant_free(&q);
    }
    el_arena_free(&a);
    el_unet_free(&u);
    free(p), free(pq), free(amax), free(step), free(x), free(e_float), free(e_int), free(e_fake);
    CHECK(bad == 0);
    return TEST_PASS;
}

/* The committed model under a calibrated profile draws what the float model draws, nearly; the
 * ranges are the largest inputs; the file round trip draws the same bytes. */
static int test_profiles(void) {
    el_image_model *m;
    if (el_image_model_load("models/digits-unet.gguf", &m) != EL_OK)
        return test_skip("models/digits-unet.gguf does not load");
    el_image_params p = el_image_default_params();
    p.n_steps = 8, p.n_threads = 1, p.cls = 4;
    enum { N = 4 };
    uint8_t ref[N * PIX], got[N * PIX], back[N * PIX];
    CHECK(el_image_generate(m, &p, N, ref) == EL_OK);
    int bad = 0;
    for (int k = 0; k < 2; k++) {
        el_image_precision prec = k ? EL_IMAGE_W8A8 : EL_IMAGE_W8A16;
        el_image_profile *pr, *loaded;
        CHECK(el_image_profile_calibrate(m, &p, N, prec, &pr) == EL_OK);
        CHECK(el_image_profile_precision(pr) == prec);
        /* conv_in sees the noised image and the zero condition channels: its range is the
         * largest |x| of the starting noise or of a step's image */
        CHECK(pr->amax[m->u.conv_in.w] > 2.0f && pr->amax[m->u.conv_out.w] > 0.0f);
        el_image_params pq = p;
        pq.profile = pr;
        CHECK(el_image_generate(m, &pq, N, got) == EL_OK);
        double mse = 0;
        for (int i = 0; i < N * PIX; i++) {
            double e = (double)got[i] - ref[i];
            mse += e * e;
        }
        double psnr = 10 * log10(255.0 * 255.0 / fmax(mse / (N * PIX), 1e-9));
        test_note("%s against float: PSNR %.1f dB", el_image_precision_name(prec), psnr);
        if (psnr < (prec == EL_IMAGE_W8A16 ? 30 : 20)) bad++;
        const char *path = test_tmp_path("profile.gguf");
        CHECK(el_image_profile_save(pr, path) == EL_OK);
        CHECK(el_image_profile_load(m, path, &loaded) == EL_OK);
        pq.profile = loaded;
        CHECK(el_image_generate(m, &pq, N, back) == EL_OK);
        CHECK(!memcmp(got, back, sizeof got));
        el_image_profile_free(loaded);
        el_image_profile_free(pr);
    }
    /* files of another kind */
    el_image_profile *x;
    CHECK(el_image_profile_load(m, "models/digits-unet.gguf", &x) == EL_ERR_MISMATCH);
    CHECK(strstr(el_last_error(), "not an image model's profile"));
    el_image_model_free(m);
    CHECK(bad == 0);
    return TEST_PASS;
}

int main(void) {
    run_test("qconv_w8a16_vs_reference", test_qconv_w8a16);
    run_test("qconv_w8a8_vs_reference", test_qconv_w8a8);
    run_test("fake_quant_equals_integer", test_fake_quant_equals_integer);
    run_test("profiles_calibrate_draw_and_round_trip", test_profiles);
    return tests_exit_code();
}
