/* test_vision_unet.c - the UNet's backward pass against central finite differences of
 * L = sum(eps * r) on a tiny shape, a few elements of every parameter tensor (the layers
 * themselves are checked against NumPy in test_vision_layers). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "vision/unet.h"

static const el_unet_config tiny = {.ch = 4, .temb = 8, .groups = 2, .n_class = 3, .n_steps = 50};
enum {
    B = 2,
    NX = B * EL_UNET_IN * EL_UNET_SIDE * EL_UNET_SIDE,
    NE = B * EL_UNET_SIDE * EL_UNET_SIDE
};

/* sum eps . r of the forward (the loss the backward differentiates); with mag, also sum |eps r|,
 * the size its float rounding scales with. */
static double loss_of(const el_unet *u, const float *p, const float *x, const int32_t *t,
                      const int32_t *cls, const float *r, el_arena *a, double *mag) {
    float *eps = malloc(NE * sizeof *eps);
    el_arena_reset(a);
    double s = NAN;
    if (el_unet_forward(u, p, NULL, B, x, t, cls, eps, a, NULL) == EL_OK) {
        s = 0.0;
        for (int i = 0; i < NE; i++) s += (double)eps[i] * r[i];
        for (int i = 0; mag && i < NE; i++) *mag += fabs((double)eps[i] * r[i]);
    }
    free(eps);
    return s;
}

static int test_grad_vs_fd(void) {
    el_unet u;
    CHECK(el_unet_init(&u, &tiny) == EL_OK);
    size_t n = u.tb.n_floats;
    float *p = malloc(n * 4), *g = calloc(n, 4), *x = malloc(NX * 4), *r = malloc(NE * 4);
    float *eps = malloc(NE * 4);
    el_unet_init_params(&u, p, 7);
    test_rng rng = {11};
    /* conv_out starts at zero, which would hide every gradient behind it */
    for (size_t i = 0; i < n; i++) p[i] += test_rand_uniform(&rng, -0.3f, 0.3f);
    for (int i = 0; i < NX; i++) x[i] = test_rand_uniform(&rng, -1, 1);
    for (int i = 0; i < NE; i++) r[i] = test_rand_uniform(&rng, -1, 1);
    int32_t t[B] = {3, 41}, cls[B] = {1, 3}; /* class 3 = "no class" */
    el_arena a = {0};
    el_unet_acts *acts;
    CHECK(el_unet_forward(&u, p, NULL, B, x, t, cls, eps, &a, &acts) == EL_OK);
    CHECK(el_unet_backward(&u, p, g, acts, r, &a) == EL_OK);
    /* The forward is float: each output a few ulps off, so a central difference of step h carries
     * noise up to about 16 eps sum|eps r| / h, which a gradient that is zero in exact arithmetic
     * (a key bias: softmax ignores what it adds to every score) shows and nothing else. */
    double mag = 0.0;
    loss_of(&u, p, x, t, cls, r, &a, &mag);
    int bad = 0;
    for (int32_t k = 0; k < u.tb.n; k++) {
        const el_ttensor *tt = &u.tb.t[k];
        size_t len = (size_t)(tt->n_out * tt->n_in), stride = len > 5 ? len / 5 : 1;
        double err = 0.0, scale = 1e-2;
        for (size_t i = 0; i < len; i += stride) {
            float *w = p + tt->offset + i, keep = *w, h = 1e-2f;
            *w = keep + h;
            double lp = loss_of(&u, p, x, t, cls, r, &a, NULL);
            *w = keep - h;
            double lm = loss_of(&u, p, x, t, cls, r, &a, NULL);
            *w = keep;
            double fd = (lp - lm) / (2.0 * h);
            err = fmax(err, fabs(fd - g[tt->offset + i]));
            scale = fmax(scale, fabs(fd));
        }
        if (err > 2e-2 * scale + 16.0 * FLT_EPSILON * mag / 1e-2) {
            test_note("%s: max |grad - fd| %.3g, max |fd| %.3g", tt->name, err, scale);
            bad++;
        }
    }
    el_arena_free(&a);
    free(p), free(g), free(x), free(r), free(eps);
    el_unet_free(&u);
    CHECK(bad == 0);
    return TEST_PASS;
}

static int test_bad_shape(void) {
    el_unet u;
    el_unet_config c = tiny;
    c.groups = 3; /* 4 channels do not split into 3 groups */
    CHECK(el_unet_init(&u, &c) == EL_ERR_INVALID_ARG);
    CHECK(strstr(el_last_error(), "groups") != NULL);
    return TEST_PASS;
}

int main(void) {
    run_test("unet_grad_vs_fd", test_grad_vs_fd);
    run_test("unet_bad_shape", test_bad_shape);
    return tests_exit_code();
}
