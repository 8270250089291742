/* bench_leverage.c - the MLP sorting step's ridge leverage scores by a Cholesky solve
 * (compress/sort.c) against the pseudo-inverse baseline, diag(C pinv(C + lambda I)) with the
 * pseudo-inverse from an SVD (as torch.linalg.pinv computes it), on random correlations of
 * n channels (docs/uniql.md has the figures).
 *
 *   build/bench/bench_leverage [N ...]        (default 1024 2048 4096)
 *
 * Both use the same OpenBLAS/LAPACK (its threads: OPENBLAS_NUM_THREADS). The two results are
 * compared, so the timed work is the work that gives the scores. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress/sort.h"
#include "core/clock.h"

/* diag(C pinv(A)), A = C + lambda I = U S V^T: pinv = V S^-1 U^T */
static double pinv_scores(const double *c, int n, double lambda, double *score) {
    double *a = malloc(sizeof(double) * n * n), *u = malloc(sizeof(double) * n * n);
    double *vt = malloc(sizeof(double) * n * n), *s = malloc(sizeof(double) * n);
    double *p = malloc(sizeof(double) * n * n);
    double t0 = el_now_seconds();
    memcpy(a, c, sizeof(double) * n * n);
    for (int i = 0; i < n; i++) a[i * n + i] += lambda;
    LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'A', n, n, a, n, s, u, n, vt, n);
    /* u := U S^-1 (cut at the rank), p = V (U S^-1)^T = pinv */
    for (int i = 0; i < n; i++)
        for (int q = 0; q < n; q++) u[i * n + q] = s[q] > 1e-12 * s[0] ? u[i * n + q] / s[q] : 0;
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasTrans, n, n, n, 1.0, vt, n, u, n, 0.0, p, n);
    for (int i = 0; i < n; i++) score[i] = cblas_ddot(n, c + (size_t)i * n, 1, p + i, n);
    double t = el_now_seconds() - t0;
    free(a), free(u), free(vt), free(s), free(p);
    return t;
}

int main(int argc, char **argv) {
    int sizes[16] = {1024, 2048, 4096}, n_sizes = 3;
    if (argc > 1) {
        n_sizes = 0;
        for (int i = 1; i < argc && n_sizes < 16; i++) sizes[n_sizes++] = atoi(argv[i]);
    }
    printf("%8s %14s %14s %8s %12s\n", "n", "cholesky_s", "pinv_s", "speedup", "max_diff");
    for (int k = 0; k < n_sizes; k++) {
        int n = sizes[k], rows = 2 * n;
        double *x = malloc(sizeof(double) * rows * n), *c = malloc(sizeof(double) * n * n);
        double *s1 = malloc(sizeof(double) * n), *s2 = malloc(sizeof(double) * n);
        uint64_t state = 12345;
        for (size_t i = 0; i < (size_t)rows * n; i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            x[i] = ((double)(state >> 11) / 9007199254740992.0 - 0.5) * (1 + (i % n) % 7);
        }
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, n, rows, 1.0, x, n, x, n, 0.0, c,
                    n);
        double lambda = el_ridge_lambda(c, n, 0.1);
        double t0 = el_now_seconds();
        if (el_ridge_leverage(c, n, lambda, s1) != EL_OK) return 1;
        double tc = el_now_seconds() - t0;
        double tp = pinv_scores(c, n, lambda, s2), d = 0;
        for (int i = 0; i < n; i++) d = fmax(d, fabs(s1[i] - s2[i]));
        printf("%8d %14.3f %14.3f %7.1fx %12.2e\n", n, tc, tp, tp / tc, d);
        fflush(stdout);
        free(x), free(c), free(s1), free(s2);
    }
    return 0;
}
