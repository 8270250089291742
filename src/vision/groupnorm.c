/* groupnorm.c - group normalization over the channels of each image, in groups. */
#include "vision/layers.h"

#include <math.h>

void el_groupnorm_forward(float *y, float *mean, float *rstd, const float *x, const float *g,
                          const float *b, int64_t B, int64_t C, int64_t HW, int64_t G, float eps) {
    int64_t cg = C / G, n = cg * HW;
    for (int64_t i = 0; i < B; i++)
        for (int64_t j = 0; j < G; j++) {
            const float *xs = x + (i * C + j * cg) * HW;
            float *ys = y + (i * C + j * cg) * HW;
            double s = 0.0, ss = 0.0; /* double: a group holds thousands of values */
            for (int64_t e = 0; e < n; e++) s += xs[e];
            double mu = s / (double)n;
            for (int64_t e = 0; e < n; e++) ss += (xs[e] - mu) * (xs[e] - mu);
            float m = (float)mu, r = (float)(1.0 / sqrt(ss / (double)n + eps));
            mean[i * G + j] = m;
            rstd[i * G + j] = r;
            for (int64_t c = 0; c < cg; c++) {
                float gc = g[j * cg + c], bc = b[j * cg + c];
                for (int64_t p = 0; p < HW; p++)
                    ys[c * HW + p] = (xs[c * HW + p] - m) * r * gc + bc;
            }
        }
}

/* With xh = (x - m) r and dxh = dy g: dx = r (dxh - mean(dxh) - xh mean(dxh xh)) over the
 * group. */
void el_groupnorm_backward(float *dx, float *dg, float *db, const float *dy, const float *x,
                           const float *g, const float *mean, const float *rstd, int64_t B,
                           int64_t C, int64_t HW, int64_t G) {
    int64_t cg = C / G, n = cg * HW;
    for (int64_t i = 0; i < B; i++)
        for (int64_t j = 0; j < G; j++) {
            const float *xs = x + (i * C + j * cg) * HW, *dys = dy + (i * C + j * cg) * HW;
            float m = mean[i * G + j], r = rstd[i * G + j];
            double s1 = 0.0, s2 = 0.0;
            for (int64_t c = 0; c < cg; c++) {
                float gc = g[j * cg + c];
                double sdy = 0.0, sdyx = 0.0;
                for (int64_t p = 0; p < HW; p++) {
                    float xh = (xs[c * HW + p] - m) * r, d = dys[c * HW + p];
                    sdy += d;
                    sdyx += d * xh;
                }
                s1 += gc * sdy;
                s2 += gc * sdyx;
                if (dg) dg[j * cg + c] += (float)sdyx;
                if (db) db[j * cg + c] += (float)sdy;
            }
            if (!dx) continue;
            float a = (float)(s1 / (double)n), c2 = (float)(s2 / (double)n);
            float *dxs = dx + (i * C + j * cg) * HW;
            for (int64_t c = 0; c < cg; c++) {
                float gc = g[j * cg + c];
                for (int64_t p = 0; p < HW; p++) {
                    float xh = (xs[c * HW + p] - m) * r;
                    dxs[c * HW + p] += r * (dys[c * HW + p] * gc - a - xh * c2);
                }
            }
        }
}
