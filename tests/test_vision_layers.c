/* test_vision_layers.c - the image model's layers (src/vision/layers.h), forward and backward,
 * against NumPy (tests/golden/make_vision_golden.py: shifted-image convolutions, Jacobians of
 * group norm and softmax written out) and against central finite differences of the loss
 * L = sum(y * dy), whose gradient the backward pass computes from dy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "vision/layers.h"

/* ------------------------------------------------------------- the golden file */

typedef struct golden {
    char *buf;
    size_t size, pos;
} golden;

static golden g_file;

/* The next array of the file, checked to hold n floats (NULL if it does not). */
static float *next_array(size_t n) {
    golden *g = &g_file;
    uint32_t count;
    if (g->pos + 4 > g->size) return NULL;
    memcpy(&count, g->buf + g->pos, 4);
    if (count != n || g->pos + 4 + (size_t)count * 4 > g->size) {
        test_note("golden array of %u floats where %zu were expected", count, n);
        return NULL;
    }
    float *a = malloc(n * sizeof *a);
    memcpy(a, g->buf + g->pos + 4, n * 4);
    g->pos += 4 + n * 4;
    return a;
}

static bool close_to(const char *what, const float *got, const float *want, size_t n, double tol) {
    double err = test_max_rel_err(got, want, n);
    if (err > tol) test_note("%s: max relative error %.3g", what, err);
    return err <= tol;
}

/* ------------------------------------------------------------- finite differences */

/* One layer under test: its forward from the current inputs into y. */
typedef struct layer_case {
    void (*forward)(struct layer_case *c, float *y);
    float *in[4]; /* the inputs a gradient is checked for */
    size_t n_in[4];
    const float *extra[4]; /* inputs held fixed */
    int64_t dims[6];
} layer_case;

static double loss(layer_case *c, float *y, const float *dy, size_t ny) {
    c->forward(c, y);
    double s = 0.0;
    for (size_t i = 0; i < ny; i++) s += (double)y[i] * dy[i];
    return s;
}

/* Compares grad (of input `which`) with central differences at up to 40 of its elements. */
static bool fd_check(const char *what, layer_case *c, int which, const float *grad, const float *dy,
                     size_t ny) {
    float *y = malloc(ny * sizeof *y), *a = c->in[which], h = 1e-2f;
    size_t n = c->n_in[which], stride = n > 40 ? n / 40 : 1;
    double err = 0.0, scale = 1e-3;
    for (size_t i = 0; i < n; i += stride) {
        float keep = a[i];
        a[i] = keep + h;
        double lp = loss(c, y, dy, ny);
        a[i] = keep - h;
        double lm = loss(c, y, dy, ny);
        a[i] = keep;
        double fd = (lp - lm) / (2.0 * h);
        err = fmax(err, fabs(fd - grad[i]));
        scale = fmax(scale, fabs(fd));
    }
    free(y);
    if (err / scale > 2e-3) test_note("%s: max |grad - fd| %.3g, max |fd| %.3g", what, err, scale);
    return err / scale <= 2e-3;
}

/* ------------------------------------------------------------- convolution */

static void conv_fwd(layer_case *c, float *y) {
    el_conv_dims d = {c->dims[0], c->dims[1], c->dims[2], c->dims[3], c->dims[4], c->dims[5]};
    float *col = malloc((size_t)el_conv_col_size(&d) * sizeof *col);
    el_conv_forward(y, c->in[0], c->in[1], c->in[2], &d, col);
    free(col);
}

static int check_conv(int64_t B, int64_t cin, int64_t cout, int64_t H, int64_t W, int64_t k) {
    el_conv_dims d = {B, cin, cout, H, W, k};
    size_t nx = (size_t)(B * cin * H * W), nw = (size_t)(cout * cin * k * k),
           ny = (size_t)(B * cout * H * W);
    float *x = next_array(nx), *w = next_array(nw), *b = next_array((size_t)cout),
          *dy = next_array(ny), *ry = next_array(ny), *rdx = next_array(nx), *rdw = next_array(nw),
          *rdb = next_array((size_t)cout);
    CHECK(x && w && b && dy && ry && rdx && rdw && rdb);
    float *y = malloc(ny * 4), *dx = calloc(nx, 4), *dw = calloc(nw, 4),
          *db = calloc((size_t)cout, 4);
    size_t ncol = (size_t)el_conv_col_size(&d);
    float *col = malloc(ncol * 4), *dcol = malloc(ncol * 4);
    el_conv_forward(y, x, w, b, &d, col);
    el_conv_backward(dx, dw, db, dy, x, w, &d, col, dcol);
    int ok = close_to("y", y, ry, ny, 1e-5) && close_to("dx", dx, rdx, nx, 1e-5) &&
             close_to("dw", dw, rdw, nw, 1e-5) && close_to("db", db, rdb, (size_t)cout, 1e-5);
    layer_case c = {conv_fwd, {x, w, b}, {nx, nw, (size_t)cout}, {0}, {B, cin, cout, H, W, k}};
    ok = ok && fd_check("dx fd", &c, 0, dx, dy, ny) && fd_check("dw fd", &c, 1, dw, dy, ny) &&
         fd_check("db fd", &c, 2, db, dy, ny);
    free(x), free(w), free(b), free(dy), free(ry), free(rdx), free(rdw), free(rdb);
    free(y), free(dx), free(dw), free(db), free(col), free(dcol);
    CHECK(ok);
    return TEST_PASS;
}

static int test_conv3(void) { return check_conv(2, 3, 4, 5, 6, 3); }
static int test_conv1(void) { return check_conv(2, 3, 2, 4, 3, 1); }

/* ------------------------------------------------------------- group norm */

static void gn_fwd(layer_case *c, float *y) {
    int64_t B = c->dims[0], C = c->dims[1], HW = c->dims[2], G = c->dims[3];
    float mean[16], rstd[16];
    el_groupnorm_forward(y, mean, rstd, c->in[0], c->in[1], c->in[2], B, C, HW, G, 1e-5f);
}

static int test_groupnorm(void) {
    int64_t B = 2, C = 6, HW = 5, G = 3;
    size_t n = (size_t)(B * C * HW);
    float *x = next_array(n), *g = next_array(6), *b = next_array(6), *dy = next_array(n),
          *ry = next_array(n), *rdx = next_array(n), *rdg = next_array(6), *rdb = next_array(6);
    CHECK(x && g && b && dy && ry && rdx && rdg && rdb);
    float y[60], dx[60] = {0}, dg[6] = {0}, db[6] = {0}, mean[6], rstd[6];
    el_groupnorm_forward(y, mean, rstd, x, g, b, B, C, HW, G, 1e-5f);
    el_groupnorm_backward(dx, dg, db, dy, x, g, mean, rstd, B, C, HW, G);
    int ok = close_to("y", y, ry, n, 1e-5) && close_to("dx", dx, rdx, n, 1e-5) &&
             close_to("dg", dg, rdg, 6, 1e-5) && close_to("db", db, rdb, 6, 1e-5);
    layer_case c = {gn_fwd, {x, g, b}, {n, 6, 6}, {0}, {B, C, HW, G}};
    ok = ok && fd_check("dx fd", &c, 0, dx, dy, n) && fd_check("dg fd", &c, 1, dg, dy, n) &&
         fd_check("db fd", &c, 2, db, dy, n);
    free(x), free(g), free(b), free(dy), free(ry), free(rdx), free(rdg), free(rdb);
    CHECK(ok);
    return TEST_PASS;
}

/* ------------------------------------------------------------- SiLU and resampling */

static void silu_fwd(layer_case *c, float *y) { el_silu_forward(y, c->in[0], c->dims[0]); }

static int test_silu(void) {
    float *x = next_array(11), *dy = next_array(11), *ry = next_array(11), *rdx = next_array(11);
    CHECK(x && dy && ry && rdx);
    float y[11], dx[11] = {0};
    el_silu_forward(y, x, 11);
    el_silu_backward(dx, dy, x, 11);
    layer_case c = {silu_fwd, {x}, {11}, {0}, {11}};
    int ok = close_to("y", y, ry, 11, 1e-6) && close_to("dx", dx, rdx, 11, 1e-6) &&
             fd_check("dx fd", &c, 0, dx, dy, 11);
    free(x), free(dy), free(ry), free(rdx);
    CHECK(ok);
    return TEST_PASS;
}

static void pool_fwd(layer_case *c, float *y) {
    el_avgpool2_forward(y, c->in[0], c->dims[0], c->dims[1], c->dims[2]);
}
static void up_fwd(layer_case *c, float *y) {
    el_upsample2_forward(y, c->in[0], c->dims[0], c->dims[1], c->dims[2]);
}

static int check_resample(bool pool, int64_t P, int64_t H, int64_t W) {
    size_t nx = (size_t)(P * H * W), ny = pool ? nx / 4 : nx * 4;
    float *x = next_array(nx), *dy = next_array(ny), *ry = next_array(ny), *rdx = next_array(nx);
    CHECK(x && dy && ry && rdx);
    float *y = malloc(ny * 4), *dx = calloc(nx, 4);
    if (pool) {
        el_avgpool2_forward(y, x, P, H, W);
        el_avgpool2_backward(dx, dy, P, H, W);
    } else {
        el_upsample2_forward(y, x, P, H, W);
        el_upsample2_backward(dx, dy, P, H, W);
    }
    layer_case c = {pool ? pool_fwd : up_fwd, {x}, {nx}, {0}, {P, H, W}};
    int ok = close_to("y", y, ry, ny, 1e-6) && close_to("dx", dx, rdx, nx, 1e-6) &&
             fd_check("dx fd", &c, 0, dx, dy, ny);
    free(x), free(dy), free(ry), free(rdx), free(y), free(dx);
    CHECK(ok);
    return TEST_PASS;
}

static int test_avgpool(void) { return check_resample(true, 3, 4, 6); }
static int test_upsample(void) { return check_resample(false, 3, 2, 3); }

/* ------------------------------------------------------------- attention */

static void attn_fwd(layer_case *c, float *y) {
    float p[72];
    el_spatial_attention_forward(y, p, c->in[0], c->in[1], c->in[2], 2, 4, 6);
}

static int test_attention(void) {
    size_t n = 2 * 4 * 6;
    float *q = next_array(n), *k = next_array(n), *v = next_array(n), *dout = next_array(n),
          *rout = next_array(n), *rdq = next_array(n), *rdk = next_array(n), *rdv = next_array(n);
    CHECK(q && k && v && dout && rout && rdq && rdk && rdv);
    float out[48], p[72], ds[36], dq[48] = {0}, dk[48] = {0}, dv[48] = {0};
    el_spatial_attention_forward(out, p, q, k, v, 2, 4, 6);
    el_spatial_attention_backward(dq, dk, dv, ds, dout, p, q, k, v, 2, 4, 6);
    layer_case c = {attn_fwd, {q, k, v}, {n, n, n}, {0}, {0}};
    int ok = close_to("out", out, rout, n, 1e-5) && close_to("dq", dq, rdq, n, 1e-5) &&
             close_to("dk", dk, rdk, n, 1e-5) && close_to("dv", dv, rdv, n, 1e-5) &&
             fd_check("dq fd", &c, 0, dq, dout, n) && fd_check("dk fd", &c, 1, dk, dout, n) &&
             fd_check("dv fd", &c, 2, dv, dout, n);
    free(q), free(k), free(v), free(dout), free(rout), free(rdq), free(rdk), free(rdv);
    CHECK(ok);
    return TEST_PASS;
}

/* ------------------------------------------------------------- embeddings, dense */

static int test_timestep(void) {
    float *re = next_array(24);
    CHECK(re);
    int32_t t[3] = {0, 17, 999};
    float e[24];
    el_timestep_embedding(e, t, 3, 8);
    int ok = close_to("e", e, re, 24, 1e-6);
    free(re);
    CHECK(ok);
    return TEST_PASS;
}

static void dense_fwd(layer_case *c, float *y) {
    el_dense_forward(y, c->in[0], c->in[1], c->in[2], 3, 5, 4);
}

static int test_dense(void) {
    float *x = next_array(15), *w = next_array(20), *b = next_array(4), *dy = next_array(12),
          *ry = next_array(12), *rdx = next_array(15), *rdw = next_array(20), *rdb = next_array(4);
    CHECK(x && w && b && dy && ry && rdx && rdw && rdb);
    float y[12], dx[15] = {0}, dw[20] = {0}, db[4] = {0};
    el_dense_forward(y, x, w, b, 3, 5, 4);
    el_dense_backward(dx, dw, db, dy, x, w, 3, 5, 4);
    layer_case c = {dense_fwd, {x, w, b}, {15, 20, 4}, {0}, {0}};
    int ok = close_to("y", y, ry, 12, 1e-5) && close_to("dx", dx, rdx, 15, 1e-5) &&
             close_to("dw", dw, rdw, 20, 1e-5) && close_to("db", db, rdb, 4, 1e-5) &&
             fd_check("dx fd", &c, 0, dx, dy, 12) && fd_check("dw fd", &c, 1, dw, dy, 12) &&
             fd_check("db fd", &c, 2, db, dy, 12);
    free(x), free(w), free(b), free(dy), free(ry), free(rdx), free(rdw), free(rdb);
    CHECK(ok);
    return TEST_PASS;
}

static int test_golden_end(void) {
    CHECK(g_file.pos == g_file.size); /* every case read: the file and the test agree */
    return TEST_PASS;
}

int main(void) {
    g_file.buf = test_read_file("tests/golden/vision_layers.bin", &g_file.size);
    if (!g_file.buf || g_file.size < 8 || memcmp(g_file.buf, "ELVG\1\0\0\0", 8)) {
        printf("FAIL golden: tests/golden/vision_layers.bin missing or not version 1\n");
        return 1;
    }
    g_file.pos = 8;
    /* the cases read the file in its order */
    run_test("conv3x3_vs_numpy_and_fd", test_conv3);
    run_test("conv1x1_vs_numpy_and_fd", test_conv1);
    run_test("groupnorm_vs_numpy_and_fd", test_groupnorm);
    run_test("silu_vs_numpy_and_fd", test_silu);
    run_test("avgpool2_vs_numpy_and_fd", test_avgpool);
    run_test("upsample2_vs_numpy_and_fd", test_upsample);
    run_test("attention_vs_numpy_and_fd", test_attention);
    run_test("timestep_embedding_vs_numpy", test_timestep);
    run_test("dense_vs_numpy_and_fd", test_dense);
    run_test("golden_file_fully_read", test_golden_end);
    free(g_file.buf);
    return tests_exit_code();
}
