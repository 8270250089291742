/* metrics.c - PSNR, SSIM and the Frechet distance (edgelora-tools.h). */
#include "vision/metrics.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

double el_image_psnr(const uint8_t *a, const uint8_t *b, const uint8_t *mask, int32_t n) {
    double sum = 0.0;
    int64_t count = 0;
    for (int32_t i = 0; i < n; i++) {
        if (mask && !mask[i]) continue;
        double d = (double)a[i] - (double)b[i];
        sum += d * d;
        count++;
    }
    if (!count) return NAN;
    if (sum == 0.0) return INFINITY;
    return 10.0 * log10(255.0 * 255.0 / (sum / (double)count));
}

enum { SSIM_WIN = 11 };

/* The 11-tap Gaussian of standard deviation 1.5, summing to 1; the window is its outer product. */
static void ssim_taps(double g[SSIM_WIN]) {
    double sum = 0.0;
    for (int i = 0; i < SSIM_WIN; i++) {
        double d = i - SSIM_WIN / 2;
        g[i] = exp(-d * d / (2.0 * 1.5 * 1.5));
        sum += g[i];
    }
    for (int i = 0; i < SSIM_WIN; i++) g[i] /= sum;
}

double el_image_ssim(const uint8_t *a, const uint8_t *b, int32_t w, int32_t h) {
    if (w < SSIM_WIN || h < SSIM_WIN) return NAN;
    double g[SSIM_WIN];
    ssim_taps(g);
    const double c1 = (0.01 * 255) * (0.01 * 255), c2 = (0.03 * 255) * (0.03 * 255);
    double total = 0.0;
    /* every window that lies inside the image (Wang et al.'s reference: filter2 'valid') */
    for (int32_t y = 0; y + SSIM_WIN <= h; y++)
        for (int32_t x = 0; x + SSIM_WIN <= w; x++) {
            double ma = 0, mb = 0, saa = 0, sbb = 0, sab = 0;
            for (int i = 0; i < SSIM_WIN; i++)
                for (int j = 0; j < SSIM_WIN; j++) {
                    double k = g[i] * g[j];
                    double va = a[(y + i) * w + x + j], vb = b[(y + i) * w + x + j];
                    ma += k * va, mb += k * vb;
                    saa += k * va * va, sbb += k * vb * vb, sab += k * va * vb;
                }
            double vaa = saa - ma * ma, vbb = sbb - mb * mb, vab = sab - ma * mb;
            total += (2 * ma * mb + c1) * (2 * vab + c2) /
                     ((ma * ma + mb * mb + c1) * (vaa + vbb + c2));
        }
    return total / ((double)(w - SSIM_WIN + 1) * (h - SSIM_WIN + 1));
}

void el_feature_moments(const float *x, int64_t n, int64_t dim, double *mu, double *cov) {
    memset(mu, 0, (size_t)dim * sizeof *mu);
    memset(cov, 0, (size_t)(dim * dim) * sizeof *cov);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < dim; j++) mu[j] += x[i * dim + j];
    for (int64_t j = 0; j < dim; j++) mu[j] /= (double)n;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < dim; j++) {
            double dj = x[i * dim + j] - mu[j];
            for (int64_t k = 0; k <= j; k++) cov[j * dim + k] += dj * (x[i * dim + k] - mu[k]);
        }
    for (int64_t j = 0; j < dim; j++)
        for (int64_t k = 0; k <= j; k++) {
            cov[j * dim + k] /= (double)(n - 1);
            cov[k * dim + j] = cov[j * dim + k];
        }
}

/* The eigenvalues of the symmetric s [n][n] (destroyed; with vectors, s holds them as columns). */
static bool eigen(double *s, int64_t n, double *lambda, bool vectors) {
    return LAPACKE_dsyev(LAPACK_ROW_MAJOR, vectors ? 'V' : 'N', 'U', (lapack_int)n, s,
                         (lapack_int)n, lambda) == 0;
}

/* tr(sqrt(A B)) for covariances A and B, as tr(sqrt(R B R)) with R = sqrt(A): R B R is symmetric
 * and has the eigenvalues of A B. Rounding can make tiny eigenvalues negative; they count 0. */
static el_status trace_sqrt_product(const double *A, const double *B, int64_t n, double *out) {
    size_t nn = (size_t)(n * n);
    double *v = malloc(nn * sizeof *v), *r = malloc(nn * sizeof *r), *t = malloc(nn * sizeof *t);
    double *lambda = malloc((size_t)n * sizeof *lambda);
    el_status st = EL_OK;
    if (!v || !r || !t || !lambda) st = el_error(EL_ERR_NOMEM, "Frechet distance: out of memory");
    if (st == EL_OK) {
        memcpy(v, A, nn * sizeof *v);
        if (!eigen(v, n, lambda, true))
            st = el_error(EL_ERR_INVALID_ARG, "Frechet distance: eigenvalues did not converge");
    }
    if (st == EL_OK) {
        /* r = V diag(sqrt(lambda)) V^T */
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double sum = 0.0;
                for (int64_t k = 0; k < n; k++)
                    sum += v[i * n + k] * sqrt(fmax(lambda[k], 0.0)) * v[j * n + k];
                r[i * n + j] = sum;
            }
        for (int64_t i = 0; i < n; i++) /* t = r B */
            for (int64_t j = 0; j < n; j++) {
                double sum = 0.0;
                for (int64_t k = 0; k < n; k++) sum += r[i * n + k] * B[k * n + j];
                t[i * n + j] = sum;
            }
        for (int64_t i = 0; i < n; i++) /* v = t r, symmetric */
            for (int64_t j = 0; j < n; j++) {
                double sum = 0.0;
                for (int64_t k = 0; k < n; k++) sum += t[i * n + k] * r[k * n + j];
                v[i * n + j] = sum;
            }
        if (!eigen(v, n, lambda, false))
            st = el_error(EL_ERR_INVALID_ARG, "Frechet distance: eigenvalues did not converge");
    }
    if (st == EL_OK) {
        double sum = 0.0;
        for (int64_t k = 0; k < n; k++) sum += sqrt(fmax(lambda[k], 0.0));
        *out = sum;
    }
    free(v), free(r), free(t), free(lambda);
    return st;
}

static bool all_finite(const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return false;
    return true;
}

el_status el_frechet_distance(const float *fa, int64_t na, const float *fb, int64_t nb,
                              int64_t dim, double *out) {
    if (na < 2 || nb < 2 || dim <= 0)
        return el_error(EL_ERR_INVALID_ARG,
                        "Frechet distance: %lld and %lld samples of %lld features (at least 2 "
                        "samples each)",
                        (long long)na, (long long)nb, (long long)dim);
    if (!all_finite(fa, na * dim) || !all_finite(fb, nb * dim))
        return el_error(EL_ERR_INVALID_ARG, "Frechet distance: a feature is not finite");
    size_t nn = (size_t)(dim * dim);
    double *mua = malloc((size_t)dim * sizeof *mua), *mub = malloc((size_t)dim * sizeof *mub);
    double *ca = malloc(nn * sizeof *ca), *cb = malloc(nn * sizeof *cb);
    el_status st = EL_OK;
    if (!mua || !mub || !ca || !cb) st = el_error(EL_ERR_NOMEM, "Frechet distance: out of memory");
    double cross = 0.0;
    if (st == EL_OK) {
        el_feature_moments(fa, na, dim, mua, ca);
        el_feature_moments(fb, nb, dim, mub, cb);
        st = trace_sqrt_product(ca, cb, dim, &cross);
    }
    if (st == EL_OK) {
        double d = 0.0;
        for (int64_t j = 0; j < dim; j++)
            d += (mua[j] - mub[j]) * (mua[j] - mub[j]) + ca[j * dim + j] + cb[j * dim + j];
        *out = fmax(d - 2.0 * cross, 0.0);
    }
    free(mua), free(mub), free(ca), free(cb);
    return st;
}
