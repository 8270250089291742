/* conv.c - k x k convolutions as matrix products: each image's im2col matrix (one row per input
 * channel and kernel offset, one column per output pixel) times the weights, by cblas_sgemm. */
#include "vision/layers.h"

#include <cblas.h>
#include <string.h>

int64_t el_conv_col_size(const el_conv_dims *d) { return d->cin * d->k * d->k * d->H * d->W; }

/* col[(c*k + dy)*k + dx][y*W + x] = img[c][y + dy - k/2][x + dx - k/2], 0 outside */
static void im2col(float *col, const float *img, const el_conv_dims *d) {
    int64_t H = d->H, W = d->W, k = d->k, r = k / 2;
    for (int64_t c = 0; c < d->cin; c++)
        for (int64_t ky = 0; ky < k; ky++)
            for (int64_t kx = 0; kx < k; kx++) {
                float *row = col + ((c * k + ky) * k + kx) * H * W;
                for (int64_t y = 0; y < H; y++) {
                    int64_t sy = y + ky - r;
                    float *out = row + y * W;
                    if (sy < 0 || sy >= H) {
                        memset(out, 0, (size_t)W * sizeof *out);
                        continue;
                    }
                    const float *in = img + (c * H + sy) * W;
                    for (int64_t x = 0; x < W; x++) {
                        int64_t sx = x + kx - r;
                        out[x] = sx >= 0 && sx < W ? in[sx] : 0.0f;
                    }
                }
            }
}

/* The transpose of im2col: adds each column entry back into the pixel it was read from. */
static void col2im_add(float *img, const float *col, const el_conv_dims *d) {
    int64_t H = d->H, W = d->W, k = d->k, r = k / 2;
    for (int64_t c = 0; c < d->cin; c++)
        for (int64_t ky = 0; ky < k; ky++)
            for (int64_t kx = 0; kx < k; kx++) {
                const float *row = col + ((c * k + ky) * k + kx) * H * W;
                for (int64_t y = 0; y < H; y++) {
                    int64_t sy = y + ky - r;
                    if (sy < 0 || sy >= H) continue;
                    float *out = img + (c * H + sy) * W;
                    const float *in = row + y * W;
                    for (int64_t x = 0; x < W; x++) {
                        int64_t sx = x + kx - r;
                        if (sx >= 0 && sx < W) out[sx] += in[x];
                    }
                }
            }
}

void el_conv_forward(float *y, const float *x, const float *w, const float *b,
                     const el_conv_dims *d, float *col) {
    int64_t HW = d->H * d->W, K = d->cin * d->k * d->k;
    for (int64_t i = 0; i < d->B; i++) {
        const float *xi = x + i * d->cin * HW;
        float *yi = y + i * d->cout * HW;
        const float *src = xi;
        if (d->k > 1) { /* a 1 x 1 kernel reads the image as it is */
            im2col(col, xi, d);
            src = col;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)d->cout, (int)HW, (int)K, 1.0f,
                    w, (int)K, src, (int)HW, 0.0f, yi, (int)HW);
        if (b)
            for (int64_t o = 0; o < d->cout; o++)
                for (int64_t p = 0; p < HW; p++) yi[o * HW + p] += b[o];
    }
}

void el_conv_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                      const float *w, const el_conv_dims *d, float *col, float *dcol) {
    int64_t HW = d->H * d->W, K = d->cin * d->k * d->k;
    for (int64_t i = 0; i < d->B; i++) {
        const float *dyi = dy + i * d->cout * HW;
        if (db)
            for (int64_t o = 0; o < d->cout; o++) {
                float s = 0.0f;
                for (int64_t p = 0; p < HW; p++) s += dyi[o * HW + p];
                db[o] += s;
            }
        if (dw) { /* dw [cout][K] += dy [cout][HW] col^T [HW][K] */
            const float *src = x + i * d->cin * HW;
            if (d->k > 1) {
                im2col(col, src, d);
                src = col;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)d->cout, (int)K, (int)HW,
                        1.0f, dyi, (int)HW, src, (int)HW, 1.0f, dw, (int)K);
        }
        if (dx) { /* dcol [K][HW] = w^T [K][cout] dy [cout][HW] */
            float *dxi = dx + i * d->cin * HW;
            if (d->k == 1) {
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)HW, (int)d->cout,
                            1.0f, w, (int)K, dyi, (int)HW, 1.0f, dxi, (int)HW);
                continue;
            }
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)HW, (int)d->cout,
                        1.0f, w, (int)K, dyi, (int)HW, 0.0f, dcol, (int)HW);
            col2im_add(dxi, dcol, d);
        }
    }
}

void el_conv_lora_forward(float *y, const float *x, const float *a, const float *b, float s,
                          int64_t rank, const el_conv_dims *d, float *col, float *lx) {
    int64_t HW = d->H * d->W, K = d->cin * d->k * d->k;
    for (int64_t i = 0; i < d->B; i++) {
        const float *src = x + i * d->cin * HW;
        if (d->k > 1) {
            im2col(col, src, d);
            src = col;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rank, (int)HW, (int)K, 1.0f, a,
                    (int)K, src, (int)HW, 0.0f, lx, (int)HW);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)d->cout, (int)HW, (int)rank, s,
                    b, (int)rank, lx, (int)HW, 1.0f, y + i * d->cout * HW, (int)HW);
    }
}
