/* test_vision_lora.c - the image model's adapters: the run-time low-rank terms against the
 * merged weights W + s B A through the plain model, the adapter's gradient (from the merged
 * weights' gradient) against finite differences, the file round trip, and a language model's
 * adapter refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "vision/lora.h"

static const el_unet_config tiny = {.ch = 4, .temb = 8, .groups = 2, .n_class = 3, .n_steps = 50};
enum {
    B = 2,
    NX = B * EL_UNET_IN * EL_UNET_SIDE * EL_UNET_SIDE,
    NE = B * EL_UNET_SIDE * EL_UNET_SIDE
};

typedef struct fixture {
    el_unet u;
    el_vlora l;
    float *p, *x, *r;
    int32_t t[B], cls[B];
} fixture;

static bool setup(fixture *f) {
    memset(f, 0, sizeof *f);
    if (el_unet_init(&f->u, &tiny) != EL_OK) return false;
    if (el_vlora_init(&f->l, &f->u, 2, 3.0f, "inpaint", 5) != EL_OK) return false;
    f->p = malloc(f->u.tb.n_floats * 4), f->x = malloc(NX * 4), f->r = malloc(NE * 4);
    el_unet_init_params(&f->u, f->p, 3);
    test_rng rng = {21};
    for (size_t i = 0; i < f->u.tb.n_floats; i++) f->p[i] += test_rand_uniform(&rng, -0.3f, 0.3f);
    /* B starts at zero: give it values so that the adapter changes something */
    for (size_t i = 0; i < f->l.tb.n_floats; i++) f->l.w[i] += test_rand_uniform(&rng, -0.3f, 0.3f);
    for (int i = 0; i < NX; i++) f->x[i] = test_rand_uniform(&rng, -1, 1);
    for (int i = 0; i < NE; i++) f->r[i] = test_rand_uniform(&rng, -1, 1);
    f->t[0] = 4, f->t[1] = 33, f->cls[0] = 3, f->cls[1] = 0;
    return true;
}

static void teardown(fixture *f) {
    free(f->p), free(f->x), free(f->r);
    el_vlora_free(&f->l);
    el_unet_free(&f->u);
}

static int test_runtime_equals_merged(void) {
    fixture f;
    CHECK(setup(&f));
    float *merged = malloc(f.u.tb.n_floats * 4), *e1 = malloc(NE * 4), *e2 = malloc(NE * 4),
          *e0 = malloc(NE * 4);
    el_vlora_merge(&f.l, &f.u, f.p, merged);
    el_arena a = {0};
    el_unet_bind bind = {.lora = &f.l};
    CHECK(el_unet_forward(&f.u, f.p, &bind, B, f.x, f.t, f.cls, e1, &a, NULL) == EL_OK);
    el_arena_reset(&a);
    CHECK(el_unet_forward(&f.u, merged, NULL, B, f.x, f.t, f.cls, e2, &a, NULL) == EL_OK);
    el_arena_reset(&a);
    CHECK(el_unet_forward(&f.u, f.p, NULL, B, f.x, f.t, f.cls, e0, &a, NULL) == EL_OK);
    double err = test_max_rel_err(e1, e2, NE), moved = test_max_rel_err(e0, e2, NE);
    test_note("runtime vs merged %.2g; base vs merged %.2g", err, moved);
    el_arena_free(&a);
    free(merged), free(e1), free(e2), free(e0);
    teardown(&f);
    CHECK(err < 1e-5);
    CHECK(moved > 1e-2); /* the adapter does change the output */
    return TEST_PASS;
}

static double loss_of(fixture *f, float *merged, el_arena *a) {
    float *eps = malloc(NE * 4);
    el_vlora_merge(&f->l, &f->u, f->p, merged);
    el_arena_reset(a);
    double s = 0.0;
    el_unet_forward(&f->u, merged, NULL, B, f->x, f->t, f->cls, eps, a, NULL);
    for (int i = 0; i < NE; i++) s += (double)eps[i] * f->r[i];
    free(eps);
    return s;
}

static int test_grad_vs_fd(void) {
    fixture f;
    CHECK(setup(&f));
    size_t n = f.u.tb.n_floats;
    float *merged = malloc(n * 4), *g = calloc(n, 4), *lg = malloc(f.l.tb.n_floats * 4);
    float *eps = malloc(NE * 4);
    el_arena a = {0};
    el_unet_acts *acts;
    el_vlora_merge(&f.l, &f.u, f.p, merged);
    CHECK(el_unet_forward(&f.u, merged, NULL, B, f.x, f.t, f.cls, eps, &a, &acts) == EL_OK);
    CHECK(el_unet_backward(&f.u, merged, g, acts, f.r, &a) == EL_OK);
    el_vlora_grad(&f.l, &f.u, g, lg);
    int bad = 0;
    for (int32_t k = 0; k < f.l.tb.n; k++) {
        const el_ttensor *t = &f.l.tb.t[k];
        size_t len = (size_t)(t->n_out * t->n_in), stride = len > 3 ? len / 3 : 1;
        double err = 0.0, scale = 1e-2;
        for (size_t i = 0; i < len; i += stride) {
            float *w = f.l.w + t->offset + i, keep = *w, h = 1e-2f;
            *w = keep + h;
            double lp = loss_of(&f, merged, &a);
            *w = keep - h;
            double lm = loss_of(&f, merged, &a);
            *w = keep;
            double fd = (lp - lm) / (2.0 * h);
            err = fmax(err, fabs(fd - lg[t->offset + i]));
            scale = fmax(scale, fabs(fd));
        }
        if (err / scale > 2e-2) {
            test_note("%s: max |grad - fd| %.3g, max |fd| %.3g", t->name, err, scale);
            bad++;
        }
    }
    el_arena_free(&a);
    free(merged), free(g), free(lg), free(eps);
    teardown(&f);
    CHECK(bad == 0);
    return TEST_PASS;
}

static int test_file_round_trip(void) {
    fixture f;
    CHECK(setup(&f));
    char path[4200];
    snprintf(path, sizeof path, "%s/task.gguf", test_tmp_dir());
    CHECK(el_vlora_save(path, &f.l, &f.u) == EL_OK);
    el_vlora back;
    CHECK(el_vlora_load(path, &back, &f.u) == EL_OK);
    int same = back.tb.n_floats == f.l.tb.n_floats && back.rank == 2 && back.alpha == 3.0f &&
               !strcmp(back.task, "inpaint") &&
               !memcmp(back.w, f.l.w, f.l.tb.n_floats * sizeof *f.l.w);
    el_vlora_free(&back);
    /* a model of another width has other shapes: refused, naming a tensor */
    el_unet wide;
    el_unet_config c = tiny;
    c.ch = 6;
    CHECK(el_unet_init(&wide, &c) == EL_OK);
    el_status st = el_vlora_load(path, &back, &wide);
    el_unet_free(&wide);
    CHECK(st == EL_ERR_MISMATCH && strstr(el_last_error(), "conv_in.lora_b"));
    /* a language model's adapter */
    st = el_vlora_load("tests/golden/lora_stories.gguf", &back, &f.u);
    CHECK(st == EL_ERR_MISMATCH && strstr(el_last_error(), "not for the image model"));
    teardown(&f);
    CHECK(same);
    return TEST_PASS;
}

int main(void) {
    run_test("lora_runtime_equals_merged", test_runtime_equals_merged);
    run_test("lora_grad_vs_fd", test_grad_vs_fd);
    run_test("lora_file_round_trip_and_refusals", test_file_round_trip);
    return tests_exit_code();
}
