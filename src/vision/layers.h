/* layers.h - the image model's layers as forward/backward pairs, float32, over B images stored
 * channel-major ([B][C][H][W], a plane of H*W values per channel).
 * Every backward ADDS into its input gradients (callers zero them), as src/train/layers.h does, so
 * that a tensor read by two layers (a skip connection) accumulates both. Any gradient argument
 * may be NULL where nothing needs it (a frozen weight, the input image). */
#ifndef EL_VISION_LAYERS_H
#define EL_VISION_LAYERS_H

#include <stdint.h>

/* ---------------------------------------------------------------- convolution */

/* A k x k convolution, stride 1, zero padding k / 2 (k odd), so the output keeps H x W. */
typedef struct el_conv_dims {
    int64_t B, cin, cout, H, W, k;
} el_conv_dims;

/* Floats of the im2col scratch one call needs: [cin * k * k][H * W]. */
int64_t el_conv_col_size(const el_conv_dims *d);

/* y [B][cout][H][W] = w [cout][cin][k][k] * x [B][cin][H][W] + b [cout] (b may be NULL), as one
 * sgemm per image over its im2col matrix (col: el_conv_col_size floats). */
void el_conv_forward(float *y, const float *x, const float *w, const float *b,
                     const el_conv_dims *d, float *col);
/* dx += w^T * dy (through col2im), dw += dy * col^T, db += sum of dy over each plane; col and
 * dcol are scratch of el_conv_col_size floats each. */
void el_conv_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                      const float *w, const el_conv_dims *d, float *col, float *dcol);

/* y += s B (A col): a LoRA term of the convolution, A [rank][cin k k], B [cout][rank]; col
 * (el_conv_col_size floats) and lx [rank][H W] are scratch. */
void el_conv_lora_forward(float *y, const float *x, const float *a, const float *b, float s,
                          int64_t rank, const el_conv_dims *d, float *col, float *lx);

/* ---------------------------------------------------------------- group norm */

/* y [B][C][HW] = (x - mean) * rstd * g[c] + b[c], mean and rstd over each of G groups of C / G
 * channels of an image; mean, rstd [B][G] are kept for the backward pass. */
void el_groupnorm_forward(float *y, float *mean, float *rstd, const float *x, const float *g,
                          const float *b, int64_t B, int64_t C, int64_t HW, int64_t G, float eps);
void el_groupnorm_backward(float *dx, float *dg, float *db, const float *dy, const float *x,
                           const float *g, const float *mean, const float *rstd, int64_t B,
                           int64_t C, int64_t HW, int64_t G);

/* ---------------------------------------------------------------- SiLU */

/* y = x * sigmoid(x) over n (in place allowed) */
void el_silu_forward(float *y, const float *x, int64_t n);
/* dx += dy * silu'(x) */
void el_silu_backward(float *dx, const float *dy, const float *x, int64_t n);

/* ---------------------------------------------------------------- resampling */

/* y [P][H/2][W/2] = the mean of each 2 x 2 block of x [P][H][W] (P planes, H and W even) */
void el_avgpool2_forward(float *y, const float *x, int64_t P, int64_t H, int64_t W);
void el_avgpool2_backward(float *dx, const float *dy, int64_t P, int64_t H, int64_t W);
/* y [P][2H][2W]: each value of x [P][H][W] repeated over a 2 x 2 block (nearest) */
void el_upsample2_forward(float *y, const float *x, int64_t P, int64_t H, int64_t W);
void el_upsample2_backward(float *dx, const float *dy, int64_t P, int64_t H, int64_t W);

/* ---------------------------------------------------------------- self-attention */

/* One-head attention of every position of an image over all of its positions (not causal):
 * q, k, v, out [B][C][N] (channel-major, N = H * W), p [B][N][N] the probabilities, kept:
 * out[c][i] = sum_j p[i][j] v[c][j], p[i] = softmax_j(sum_c q[c][i] k[c][j] / sqrt(C)). */
void el_spatial_attention_forward(float *out, float *p, const float *q, const float *k,
                                  const float *v, int64_t B, int64_t C, int64_t N);
/* dq, dk, dv += ...; ds [N][N] is scratch. */
void el_spatial_attention_backward(float *dq, float *dk, float *dv, float *ds, const float *dout,
                                   const float *p, const float *q, const float *k, const float *v,
                                   int64_t B, int64_t C, int64_t N);

/* ---------------------------------------------------------------- embeddings */

/* e [B][D] (D even): e[i] = sin(t f_i), e[D/2 + i] = cos(t f_i), f_i = 10000^(-i / (D/2)),
 * the sinusoidal embedding of each image's timestep t[b]; no parameters, no backward. */
void el_timestep_embedding(float *e, const int32_t *t, int64_t B, int64_t D);

/* y [N][out] = x [N][in] w^T + b, w [out][in] (b may be NULL) */
void el_dense_forward(float *y, const float *x, const float *w, const float *b, int64_t N,
                      int64_t in, int64_t out);
void el_dense_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                       const float *w, int64_t N, int64_t in, int64_t out);

#endif
