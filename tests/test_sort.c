/* test_sort.c - UniQL's sorting (compress/sort.c) on random blocks, each against a direct
 * formula: the ridge leverage scores against diag(C pinv(C + lambda I)) with the pseudo-inverse
 * from an SVD; the MLP, V/O and Q/K functions of a block before and after sorting, computed
 * here from the weights (the Q/K scores with RoPE applied to each stored pair at the frequency
 * of its original pair, both pair layouts); the transformed correlations against those of the
 * sorted block's own activations; and the order (descending leverage after the MLP sort). */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compress/sort.h"
#include "testutil.h"

enum { E = 32, HEADS = 4, KV = 2, HD = 8, FF = 48, T = 40 };

static el_hparams shape(el_rope_style style) {
    return (el_hparams){.n_embd = E,
                        .n_layer = 1,
                        .n_head = HEADS,
                        .n_head_kv = KV,
                        .n_ff = FF,
                        .head_dim_k = HD,
                        .head_dim_v = HD,
                        .n_rot = HD,
                        .rope_freq_base = 10000,
                        .rope_style = style};
}

typedef struct block {
    el_flayer l;
    float *x;  /* [T][E] the block's inputs */
    double *c; /* [E][E] their correlation */
} block;

static int64_t n_out(el_linear w) {
    return w == EL_LINEAR_Q || w == EL_LINEAR_O   ? HEADS * HD
           : w == EL_LINEAR_K || w == EL_LINEAR_V ? KV * HD
           : w == EL_LINEAR_DOWN                  ? E
                                                  : FF;
}
static int64_t n_in(el_linear w) {
    return w == EL_LINEAR_O ? HEADS * HD : w == EL_LINEAR_DOWN ? FF : E;
}

static void block_make(block *b, uint64_t seed) {
    test_rng r = {seed};
    for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++) {
        /* O is stored n_embd rows of HEADS*HD inputs */
        int64_t rows = w == EL_LINEAR_O ? E : n_out(w), cols = n_in(w);
        b->l.w[w] = malloc(sizeof(float) * rows * cols);
        for (int64_t i = 0; i < rows * cols; i++) b->l.w[w][i] = test_rand_uniform(&r, -0.5f, 0.5f);
    }
    b->x = malloc(sizeof(float) * T * E);
    b->c = calloc(E * E, sizeof(double));
    for (int i = 0; i < T * E; i++) b->x[i] = test_rand_uniform(&r, -1, 1) * (1 + (i % E) % 5);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < E; i++)
            for (int j = 0; j < E; j++)
                b->c[i * E + j] += (double)b->x[t * E + i] * b->x[t * E + j];
}

static void block_free(block *b) {
    for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++) free(b->l.w[w]);
    free(b->x);
    free(b->c);
}

/* y[rows] = w[rows][cols] x */
static void matvec(const float *w, int64_t rows, int64_t cols, const float *x, double *y) {
    for (int64_t r = 0; r < rows; r++) {
        double s = 0;
        for (int64_t c = 0; c < cols; c++) s += (double)w[r * cols + c] * x[c];
        y[r] = s;
    }
}

/* The MLP's intermediate h [T][FF] and output y [T][E]. */
static void mlp(const el_flayer *l, const float *x, double *h, double *y) {
    double g[FF], u[FF];
    float hf[FF];
    for (int t = 0; t < T; t++) {
        matvec(l->w[EL_LINEAR_GATE], FF, E, x + t * E, g);
        matvec(l->w[EL_LINEAR_UP], FF, E, x + t * E, u);
        for (int i = 0; i < FF; i++) {
            h[t * FF + i] = g[i] / (1 + exp(-g[i])) * u[i];
            hf[i] = (float)h[t * FF + i];
        }
        matvec(l->w[EL_LINEAR_DOWN], E, FF, hf, y + t * E);
    }
}

static double max_diff(const double *a, const double *b, int64_t n, double *scale) {
    double d = 0, s = 0;
    for (int64_t i = 0; i < n; i++) {
        d = fmax(d, fabs(a[i] - b[i]));
        s = fmax(s, fabs(b[i]));
    }
    *scale = s;
    return d;
}

static void correlation(const double *h, int64_t rows, int64_t n, double *c) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t t = 0; t < rows; t++) s += h[t * n + i] * h[t * n + j];
            c[i * n + j] = s;
        }
}

static int test_leverage_against_pinv(void) {
    /* fewer rows than channels: a singular correlation, where the ridge matters */
    enum { N = 24, ROWS = 16 };
    test_rng r = {3};
    double x[ROWS * N], c[N * N], a[N * N], s[N], u[N * N], vt[N * N], superb[N];
    for (int i = 0; i < ROWS * N; i++) x[i] = test_rand_uniform(&r, -1, 1) * (1 + i % 3);
    correlation(x, ROWS, N, c);
    const double ridges[] = {1e-3, 0.1, 10};
    for (int k = 0; k < 3; k++) {
        double lambda = el_ridge_lambda(c, N, ridges[k]), got[N];
        CHECK(el_ridge_leverage(c, N, lambda, got) == EL_OK);
        memcpy(a, c, sizeof a);
        for (int i = 0; i < N; i++) a[i * N + i] += lambda;
        CHECK(LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'A', 'A', N, N, a, N, s, u, N, vt, N, superb) == 0);
        /* pinv = V diag(1/s) U^T for s above the cutoff; score_i = sum_j c_ij pinv_ji */
        double worst = 0;
        for (int i = 0; i < N; i++) {
            double score = 0;
            for (int j = 0; j < N; j++) {
                double p = 0;
                for (int q = 0; q < N; q++)
                    if (s[q] > 1e-12 * s[0]) p += vt[q * N + j] * u[i * N + q] / s[q];
                score += c[i * N + j] * p;
            }
            worst = fmax(worst, fabs(score - got[i]));
        }
        test_note("ridge %g: max |Cholesky - pinv| %.3g", ridges[k], worst);
        CHECK(worst < 1e-9);
    }
    CHECK(el_ridge_leverage(c, N, 0, s) == EL_ERR_INVALID_ARG);
    return TEST_PASS;
}

static int test_sort_mlp_exact(void) {
    el_hparams hp = shape(EL_ROPE_NORM);
    block b;
    block_make(&b, 4);
    double *h0 = malloc(sizeof(double) * T * FF), *y0 = malloc(sizeof(double) * T * E);
    double *h1 = malloc(sizeof(double) * T * FF), *y1 = malloc(sizeof(double) * T * E);
    double *cmid = malloc(sizeof(double) * FF * FF), *cref = malloc(sizeof(double) * FF * FF);
    mlp(&b.l, b.x, h0, y0);
    correlation(h0, T, FF, cmid);
    int32_t perm[FF];
    CHECK(el_sort_mlp(&hp, &b.l, cmid, 0.1, perm) == EL_OK);
    mlp(&b.l, b.x, h1, y1);
    double scale, d = max_diff(y1, y0, T * E, &scale);
    test_note("MLP output: max diff %.3g of %.3g", d, scale);
    CHECK(d <= 1e-5 * scale);
    correlation(h1, T, FF, cref);
    d = max_diff(cmid, cref, FF * FF, &scale);
    CHECK(d <= 1e-5 * scale);
    /* the order is by descending leverage, and it is a permutation */
    double score[FF];
    CHECK(el_ridge_leverage(cmid, FF, el_ridge_lambda(cmid, FF, 0.1), score) == EL_OK);
    for (int i = 1; i < FF; i++) CHECK(score[i] <= score[i - 1] + 1e-12);
    int seen[FF] = {0};
    for (int i = 0; i < FF; i++) seen[perm[i]]++;
    for (int i = 0; i < FF; i++) CHECK(seen[i] == 1);
    CHECK(perm[0] != 0 || perm[1] != 1 || perm[2] != 2); /* random channels did move */
    free(h0), free(y0), free(h1), free(y1), free(cmid), free(cref);
    block_free(&b);
    return TEST_PASS;
}

/* Attention output through O with fixed random attention weights a[h][t][s]: the V/O part of a
 * block (softmax and Q/K do not matter to it). att [T][HEADS*HD], y [T][E]. */
static void vo(const el_flayer *l, const float *x, const double *a, double *att, double *y) {
    double v[T][KV * HD];
    for (int t = 0; t < T; t++) matvec(l->w[EL_LINEAR_V], KV * HD, E, x + t * E, v[t]);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < HEADS; h++)
            for (int c = 0; c < HD; c++) {
                double s = 0;
                for (int u = 0; u < T; u++)
                    s += a[(h * T + t) * T + u] * v[u][(h / (HEADS / KV)) * HD + c];
                att[t * HEADS * HD + h * HD + c] = s;
            }
    float af[HEADS * HD];
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < HEADS * HD; i++) af[i] = (float)att[t * HEADS * HD + i];
        matvec(l->w[EL_LINEAR_O], E, HEADS * HD, af, y + t * E);
    }
}

static int test_sort_vo_exact(void) {
    el_hparams hp = shape(EL_ROPE_NORM);
    block b;
    block_make(&b, 5);
    test_rng r = {6};
    double *a = malloc(sizeof(double) * HEADS * T * T);
    for (int i = 0; i < HEADS * T * T; i++) a[i] = test_rand_uniform(&r, 0, 1) / T;
    double *att0 = malloc(sizeof(double) * T * HEADS * HD), *y0 = malloc(sizeof(double) * T * E);
    double *att1 = malloc(sizeof(double) * T * HEADS * HD), *y1 = malloc(sizeof(double) * T * E);
    int64_t o = HEADS * HD;
    double *cout = malloc(sizeof(double) * o * o), *cref = malloc(sizeof(double) * o * o);
    vo(&b.l, b.x, a, att0, y0);
    correlation(att0, T, o, cout);
    CHECK(el_sort_vo(&hp, &b.l, b.c, cout, NULL) == EL_OK);
    vo(&b.l, b.x, a, att1, y1);
    double scale, d = max_diff(y1, y0, T * E, &scale);
    test_note("V/O output: max diff %.3g of %.3g", d, scale);
    CHECK(d <= 1e-5 * scale);
    correlation(att1, T, o, cref);
    d = max_diff(cout, cref, o * o, &scale);
    test_note("O input correlation: max diff %.3g of %.3g", d, scale);
    CHECK(d <= 1e-4 * scale);
    /* singular values folded into V: each V head's rows in descending output energy */
    double v[KV * HD];
    for (int j = 0; j < KV; j++) {
        double energy[HD] = {0};
        for (int t = 0; t < T; t++) {
            matvec(b.l.w[EL_LINEAR_V], KV * HD, E, b.x + t * E, v);
            for (int c = 0; c < HD; c++) energy[c] += v[j * HD + c] * v[j * HD + c];
        }
        /* O's columns are orthonormal over the group, so V's row energies are the ordered
         * singular values squared (of the damped weighting: allow 1%) */
        for (int c = 1; c < HD; c++) CHECK(energy[c] <= energy[c - 1] * 1.01);
    }
    free(a), free(att0), free(y0), free(att1), free(y1), free(cout), free(cref);
    block_free(&b);
    return TEST_PASS;
}

/* RoPE of one head vector at position pos, stored pair p rotating at the frequency of original
 * pair orig[p] (NULL: p). */
static void rope(const el_hparams *hp, double *v, int pos, const int32_t *orig) {
    for (int p = 0; p < hp->n_rot / 2; p++) {
        int i = orig ? orig[p] : p;
        double theta = pos * pow(hp->rope_freq_base, -2.0 * i / hp->n_rot);
        int a = hp->rope_style == EL_ROPE_NEOX ? p : 2 * p;
        int b2 = hp->rope_style == EL_ROPE_NEOX ? p + hp->n_rot / 2 : 2 * p + 1;
        double x0 = v[a], x1 = v[b2];
        v[a] = x0 * cos(theta) - x1 * sin(theta);
        v[b2] = x0 * sin(theta) + x1 * cos(theta);
    }
}

/* scores[h][t][s] = rope(q_h(x_t), t) . rope(k_kv(h)(x_s), s) */
static void qk(const el_hparams *hp, const el_flayer *l, const float *x, const int32_t *pairs,
               double *scores) {
    double q[HEADS * HD], k[T][KV * HD];
    for (int s = 0; s < T; s++) {
        matvec(l->w[EL_LINEAR_K], KV * HD, E, x + s * E, k[s]);
        for (int j = 0; j < KV; j++) rope(hp, k[s] + j * HD, s, pairs ? pairs + j * HD / 2 : NULL);
    }
    for (int t = 0; t < T; t++) {
        matvec(l->w[EL_LINEAR_Q], HEADS * HD, E, x + t * E, q);
        for (int h = 0; h < HEADS; h++) {
            int j = h / (HEADS / KV);
            rope(hp, q + h * HD, t, pairs ? pairs + j * HD / 2 : NULL);
            for (int s = 0; s < T; s++) {
                double d = 0;
                for (int c = 0; c < HD; c++) d += q[h * HD + c] * k[s][j * HD + c];
                scores[(h * T + t) * T + s] = d;
            }
        }
    }
}

static int test_sort_qk_exact(void) {
    const el_rope_style styles[] = {EL_ROPE_NORM, EL_ROPE_NEOX};
    for (int st = 0; st < 2; st++) {
        el_hparams hp = shape(styles[st]);
        block b;
        block_make(&b, 9 + st);
        double *s0 = malloc(sizeof(double) * HEADS * T * T),
               *s1 = malloc(sizeof(double) * HEADS * T * T);
        int32_t pairs[KV * HD / 2];
        qk(&hp, &b.l, b.x, NULL, s0);
        CHECK(el_sort_qk(&hp, &b.l, b.c, pairs) == EL_OK);
        qk(&hp, &b.l, b.x, pairs, s1);
        double scale, d = max_diff(s1, s0, HEADS * T * T, &scale);
        test_note("%s: Q.K scores max diff %.3g of %.3g", st ? "neox" : "norm", d, scale);
        CHECK(d <= 1e-5 * scale);
        bool moved = false;
        for (int p = 0; p < KV * HD / 2; p++) moved = moved || pairs[p] != p % (HD / 2);
        CHECK(moved);
        /* without the index the scores differ: the check above can fail */
        qk(&hp, &b.l, b.x, NULL, s1);
        CHECK(max_diff(s1, s0, HEADS * T * T, &scale) > 1e-3 * scale);
        free(s0), free(s1);
        block_free(&b);
    }
    el_hparams partial = shape(EL_ROPE_NORM);
    partial.n_rot = HD / 2;
    block b;
    block_make(&b, 12);
    int32_t pairs[KV * HD / 2];
    CHECK(el_sort_qk(&partial, &b.l, b.c, pairs) == EL_ERR_UNSUPPORTED);
    block_free(&b);
    return TEST_PASS;
}

/* w (rows x cols) += b (rows x R) a (R x cols) */
static void add_product(float *w, int64_t rows, int64_t cols, const float *b, const float *a,
                        int R) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            double s = 0;
            for (int k = 0; k < R; k++) s += (double)b[r * R + k] * a[k * cols + c];
            w[r * cols + c] += (float)s;
        }
}

/* An adapter on every linear, re-expressed in the sorted basis (el_sort_basis_rows on B,
 * el_sort_basis_cols on A) and merged into the sorted block, computes what it computes merged
 * into the original block: the MLP output, the V/O output and the Q.K scores (with the index). */
static int test_sort_basis_adapter_exact(void) {
    enum { R = 3 };
    el_hparams hp = shape(EL_ROPE_NEOX);
    block b, merged;
    block_make(&b, 21);
    block_make(&merged, 21);
    test_rng r = {22};
    float *ad_a[EL_N_LINEAR], *ad_b[EL_N_LINEAR];
    for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++) {
        int64_t rows = w == EL_LINEAR_O ? E : n_out(w), cols = n_in(w);
        ad_a[w] = malloc(sizeof(float) * R * cols);
        ad_b[w] = malloc(sizeof(float) * rows * R);
        for (int64_t i = 0; i < R * cols; i++) ad_a[w][i] = test_rand_uniform(&r, -0.3f, 0.3f);
        for (int64_t i = 0; i < rows * R; i++) ad_b[w][i] = test_rand_uniform(&r, -0.3f, 0.3f);
        add_product(merged.l.w[w], rows, cols, ad_b[w], ad_a[w], R);
    }
    double *a = malloc(sizeof(double) * HEADS * T * T);
    for (int i = 0; i < HEADS * T * T; i++) a[i] = test_rand_uniform(&r, 0, 1) / T;
    double *h0 = malloc(sizeof(double) * T * FF), *y0 = malloc(sizeof(double) * T * E);
    double *h1 = malloc(sizeof(double) * T * FF), *y1 = malloc(sizeof(double) * T * E);
    double *att = malloc(sizeof(double) * T * HEADS * HD), *v0 = malloc(sizeof(double) * T * E),
           *v1 = malloc(sizeof(double) * T * E);
    double *s0 = malloc(sizeof(double) * HEADS * T * T), *s1 = malloc(sizeof(double) * HEADS * T * T);
    mlp(&merged.l, merged.x, h0, y0);
    vo(&merged.l, merged.x, a, att, v0);
    qk(&hp, &merged.l, merged.x, NULL, s0);

    /* the basis comes from the base alone */
    int64_t o = HEADS * HD;
    double *cmid = malloc(sizeof(double) * FF * FF), *cout = malloc(sizeof(double) * o * o);
    double *t = malloc(sizeof(double) * KV * HD * HD);
    mlp(&b.l, b.x, h1, y1);
    correlation(h1, T, FF, cmid);
    vo(&b.l, b.x, a, att, v1);
    correlation(att, T, o, cout);
    int32_t perm[FF], pairs[KV * HD / 2];
    CHECK(el_sort_mlp(&hp, &b.l, cmid, 0.1, perm) == EL_OK);
    CHECK(el_sort_qk(&hp, &b.l, b.c, pairs) == EL_OK);
    CHECK(el_sort_vo(&hp, &b.l, b.c, cout, t) == EL_OK);
    el_sort_basis basis = {perm, pairs, t};
    for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++) {
        int64_t rows = w == EL_LINEAR_O ? E : n_out(w), cols = n_in(w);
        CHECK(el_sort_basis_rows(&hp, &basis, w, ad_b[w], R) == EL_OK);
        CHECK(el_sort_basis_cols(&hp, &basis, w, ad_a[w], R) == EL_OK);
        add_product(b.l.w[w], rows, cols, ad_b[w], ad_a[w], R);
    }
    mlp(&b.l, b.x, h1, y1);
    vo(&b.l, b.x, a, att, v1);
    qk(&hp, &b.l, b.x, pairs, s1);
    double scale, d;
    d = max_diff(y1, y0, T * E, &scale);
    test_note("MLP with the adapter: max diff %.3g of %.3g", d, scale);
    CHECK(d <= 1e-5 * scale);
    d = max_diff(v1, v0, T * E, &scale);
    test_note("V/O with the adapter: max diff %.3g of %.3g", d, scale);
    CHECK(d <= 1e-5 * scale);
    d = max_diff(s1, s0, HEADS * T * T, &scale);
    test_note("Q.K with the adapter: max diff %.3g of %.3g", d, scale);
    CHECK(d <= 1e-5 * scale);
    for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++) free(ad_a[w]), free(ad_b[w]);
    free(a), free(h0), free(y0), free(h1), free(y1), free(att), free(v0), free(v1), free(s0),
        free(s1), free(cmid), free(cout), free(t);
    block_free(&b);
    block_free(&merged);
    return TEST_PASS;
}

int main(void) {
    run_test("leverage_against_pinv", test_leverage_against_pinv);
    run_test("sort_mlp_exact", test_sort_mlp_exact);
    run_test("sort_vo_exact", test_sort_vo_exact);
    run_test("sort_qk_exact", test_sort_qk_exact);
    run_test("sort_basis_adapter_exact", test_sort_basis_adapter_exact);
    return tests_exit_code();
}
