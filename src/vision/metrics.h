/* metrics.h - how close images are to a ground truth (PSNR, SSIM), and how close two sets of
 * images are as distributions (the Frechet distance between Gaussians fitted to their features,
 * which is FID when the features are a classifier's). */
#ifndef EL_VISION_METRICS_H
#define EL_VISION_METRICS_H

#include "edgelora-tools.h"

/* Mean of x [n][dim] (mu [dim]) and its covariance with n - 1 in the denominator (cov [dim][dim]),
 * in double. */
void el_feature_moments(const float *x, int64_t n, int64_t dim, double *mu, double *cov);

#endif
