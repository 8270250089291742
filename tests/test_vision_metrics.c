/* test_vision_metrics.c - PSNR, SSIM and the Frechet distance against NumPy
 * (tests/golden/make_vision_metrics_golden.py), and the digit classifier of FID-MNIST: its
 * backward pass against central finite differences, its file, and training it on MNIST. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelora-tools.h"
#include "testutil.h"
#include "vision/classifier.h"
#include "vision/mnist.h"

static char *g_buf;
static size_t g_size, g_pos;

static const void *take(size_t n) {
    if (g_pos + n > g_size) return NULL;
    g_pos += n;
    return g_buf + g_pos - n;
}

static bool take_u32(uint32_t *v) {
    const void *p = take(4);
    if (p) memcpy(v, p, 4);
    return p != NULL;
}

static bool take_f64(double *v) {
    const void *p = take(8);
    if (p) memcpy(v, p, 8);
    return p != NULL;
}

/* equal, or both infinite, within a relative tolerance */
static bool close_to(double got, double want, double tol) {
    if (isinf(want)) return got == want;
    return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

static int test_image_metrics(void) {
    uint32_t n_pairs = 0;
    CHECK(g_buf && take_u32(&n_pairs) && n_pairs == 4);
    for (uint32_t k = 0; k < n_pairs; k++) {
        uint32_t w, h;
        CHECK(take_u32(&w) && take_u32(&h) && w * h <= 28 * 28);
        const uint8_t *a = take(w * h), *b = take(w * h), *mask = take(w * h);
        double psnr, psnr_mask, ssim;
        CHECK(a && b && mask && take_f64(&psnr) && take_f64(&psnr_mask) && take_f64(&ssim));
        double got[3] = {el_image_psnr(a, b, NULL, (int32_t)(w * h)),
                         el_image_psnr(a, b, mask, (int32_t)(w * h)),
                         el_image_ssim(a, b, (int32_t)w, (int32_t)h)};
        if (!close_to(got[0], psnr, 1e-12) || !close_to(got[1], psnr_mask, 1e-12) ||
            !close_to(got[2], ssim, 1e-9)) {
            test_note("pair %u: psnr %.12g/%.12g masked %.12g/%.12g ssim %.12g/%.12g", k, got[0],
                      psnr, got[1], psnr_mask, got[2], ssim);
            return TEST_FAIL;
        }
    }
    /* the pairs are not all alike: a test with equal answers everywhere would prove little */
    uint8_t flat[121] = {0}, dot[121] = {0};
    dot[60] = 255;
    CHECK(el_image_ssim(flat, flat, 11, 11) == 1.0 && el_image_ssim(flat, dot, 11, 11) < 1.0);
    CHECK(isnan(el_image_ssim(flat, flat, 10, 12)) && isnan(el_image_psnr(flat, dot, flat, 121)));
    return TEST_PASS;
}

static int test_frechet(void) {
    uint32_t n_cases = 0;
    CHECK(take_u32(&n_cases) && n_cases == 2);
    double got[2], want[2];
    for (uint32_t k = 0; k < n_cases; k++) {
        uint32_t na, nb, dim;
        CHECK(take_u32(&na) && take_u32(&nb) && take_u32(&dim));
        const float *fa = take((size_t)na * dim * 4), *fb = take((size_t)nb * dim * 4);
        CHECK(fa && fb && take_f64(&want[k]));
        CHECK(el_frechet_distance(fa, na, fb, nb, dim, &got[k]) == EL_OK);
    }
    CHECK(g_pos == g_size);
    if (!close_to(got[0], want[0], 1e-7) || fabs(got[1] - want[1]) > 1e-6 || want[0] < 1.0) {
        test_note("distance %.10g / %.10g, same set %.3g / %.3g", got[0], want[0], got[1], want[1]);
        return TEST_FAIL;
    }
    float bad[4] = {1, 2, NAN, 4};
    double d;
    CHECK(el_frechet_distance(bad, 2, bad, 2, 2, &d) == EL_ERR_INVALID_ARG);
    CHECK(el_frechet_distance(bad, 1, bad, 2, 2, &d) == EL_ERR_INVALID_ARG);
    return TEST_PASS;
}

/* ---------------------------------------------------------------- the classifier */

static const el_cnet_config tiny = {.c1 = 3, .c2 = 4, .n_feat = 5, .n_class = 10};
enum { B = 2, PIX = 784 };

static double loss_of(const el_cnet *n, const float *p, const float *x, const float *r,
                      el_arena *a) {
    float logits[B * 10];
    el_arena_reset(a);
    if (el_cnet_forward(n, p, B, x, logits, NULL, a, NULL) != EL_OK) return NAN;
    double s = 0.0;
    for (int i = 0; i < B * 10; i++) s += (double)logits[i] * r[i];
    return s;
}

static int test_classifier_grad_vs_fd(void) {
    el_cnet n;
    CHECK(el_cnet_init(&n, &tiny) == EL_OK);
    size_t nf = n.tb.n_floats;
    float *p = malloc(nf * 4), *g = calloc(nf, 4), *x = malloc(B * PIX * 4), r[B * 10];
    float logits[B * 10];
    el_cnet_init_params(&n, p, 3);
    test_rng rng = {5};
    for (size_t i = 0; i < nf; i++) p[i] += test_rand_uniform(&rng, -0.2f, 0.2f);
    for (int i = 0; i < B * PIX; i++) x[i] = test_rand_uniform(&rng, -1, 1);
    for (int i = 0; i < B * 10; i++) r[i] = test_rand_uniform(&rng, -1, 1);
    el_arena a = {0};
    el_cnet_acts *acts;
    CHECK(el_cnet_forward(&n, p, B, x, logits, NULL, &a, &acts) == EL_OK);
    CHECK(el_cnet_backward(&n, p, g, acts, r, &a) == EL_OK);
    int bad = 0;
    for (int32_t k = 0; k < n.tb.n; k++) {
        const el_ttensor *t = &n.tb.t[k];
        size_t len = (size_t)(t->n_out * t->n_in), stride = len > 7 ? len / 7 : 1;
        double err = 0.0, scale = 1e-2;
        for (size_t i = 0; i < len; i += stride) {
            float *w = p + t->offset + i, keep = *w, h = 1e-2f;
            *w = keep + h;
            double lp = loss_of(&n, p, x, r, &a);
            *w = keep - h;
            double lm = loss_of(&n, p, x, r, &a);
            *w = keep;
            double fd = (lp - lm) / (2.0 * h);
            err = fmax(err, fabs(fd - g[t->offset + i]));
            scale = fmax(scale, fabs(fd));
        }
        if (err > 1e-2 * scale) {
            test_note("%s: max |grad - fd| %.3g, max |fd| %.3g", t->name, err, scale);
            bad++;
        }
    }
    el_arena_free(&a);
    el_cnet_free(&n);
    free(p), free(g), free(x);
    CHECK(bad == 0);
    return TEST_PASS;
}

/* A short run on MNIST: the held-out accuracy is far above chance, the file loads back and
 * labels the held-out images as the run measured, and other files are refused. */
static int test_classifier_trains(void) {
    const char *img = test_data_path("images/t10k-images-idx3-ubyte.gz");
    if (!img) return test_skip("../shared/data/images absent");
    char images[4096];
    snprintf(images, sizeof images, "%s", img);
    const char *labels = test_data_path("images/t10k-labels-idx1-ubyte.gz");
    el_classifier_train_params p = el_classifier_train_default_params();
    p.images_path = images, p.labels_path = labels;
    p.c1 = 8, p.c2 = 8, p.n_feat = 16, p.n_steps = 400, p.n_heldout = 500, p.n_threads = 1;
    const char *out = test_tmp_path("digits.gguf");
    float acc = 0.0f;
    CHECK(el_train_classifier(&p, out, &acc) == EL_OK);
    test_note("held-out accuracy after 400 steps: %.3f", acc);
    CHECK(acc > 0.85f);
    el_digit_classifier *c;
    CHECK(el_digit_classifier_load(out, &c) == EL_OK);
    CHECK(el_digit_classifier_n_features(c) == 16);
    /* the run's held-out images through the public call: the accuracy the run measured */
    el_mnist d;
    CHECK(el_mnist_load(images, labels, &d) == EL_OK);
    int32_t first = d.n - p.n_heldout, *got = malloc((size_t)p.n_heldout * sizeof *got), right = 0;
    el_status st = el_digit_classifier_run(c, p.n_heldout, d.pixels + (size_t)first * PIX, got,
                                           NULL);
    for (int32_t i = 0; st == EL_OK && i < p.n_heldout; i++) right += got[i] == d.labels[first + i];
    free(got);
    el_mnist_free(&d);
    el_digit_classifier_free(c);
    CHECK(st == EL_OK && right == (int32_t)lroundf(acc * (float)p.n_heldout));
    CHECK(el_digit_classifier_load("models/digits-unet.gguf", &c) == EL_ERR_MISMATCH);
    CHECK(strstr(el_last_error(), "not a digit classifier"));
    p.lr = 2.0f;
    CHECK(el_train_classifier(&p, out, &acc) == EL_ERR_INVALID_ARG);
    return TEST_PASS;
}

int main(void) {
    g_buf = test_read_file("tests/golden/vision_metrics.bin", &g_size);
    uint32_t version = 0;
    if (g_buf && take(4) && !memcmp(g_buf, "ELVM", 4)) take_u32(&version);
    if (version != 1) {
        printf("FAIL golden: tests/golden/vision_metrics.bin missing or not version 1\n");
        return 1;
    }
    run_test("image_metrics_vs_numpy", test_image_metrics);
    run_test("frechet_distance_vs_numpy", test_frechet);
    run_test("classifier_grad_vs_fd", test_classifier_grad_vs_fd);
    run_test("classifier_trains", test_classifier_trains);
    free(g_buf);
    return tests_exit_code();
}
