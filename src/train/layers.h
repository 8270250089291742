/* layers.h - the training layers as forward/backward pairs over N rows, float32.
 * Every backward ADDS into its input gradients (callers zero them), so that several consumers of
 * one input (q, k and v of one normed row) accumulate. */
#ifndef EL_TRAIN_LAYERS_H
#define EL_TRAIN_LAYERS_H

#include <stdint.h>

#include "core/threadpool.h"

/* y[N][D] = w * x / rms(x); rs[N] keeps 1/rms for the backward pass. */
void el_rmsnorm_forward(float *y, float *rs, const float *x, const float *w, int64_t N, int64_t D,
                        float eps);
/* dx[N][D] += ..., dw[D] += ... (dw may be NULL) */
void el_rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w,
                         const float *rs, int64_t N, int64_t D);

/* y[N][out] = x[N][in] W^T with W [out][in] */
void el_linear_forward(float *y, const float *x, const float *w, int64_t N, int64_t in,
                       int64_t out);
/* dx[N][in] += dy W (dx may be NULL), dw[out][in] += dy^T x (dw may be NULL) */
void el_linear_backward(float *dx, float *dw, const float *dy, const float *x, const float *w,
                        int64_t N, int64_t in, int64_t out);

/* LoRA term of a linear layer: lx[N][R] = x A^T, y[N][out] += s lx B^T. */
void el_lora_forward(float *y, float *lx, const float *x, const float *a, const float *b, float s,
                     int64_t N, int64_t in, int64_t out, int64_t R);
/* dA, dB += ..., dx += ... (any may be NULL: dA and dB for a frozen adapter); dlx [N][R] is
 * scratch. */
void el_lora_backward(float *dx, float *da, float *db, float *dlx, const float *dy, const float *x,
                      const float *lx, const float *a, const float *b, float s, int64_t N,
                      int64_t in, int64_t out, int64_t R);

/* cos/sin [T][hd/2] of NORM-style RoPE at positions 0..T-1 (as the inference forward computes
 * them). */
void el_rope_tables(float *cs, float *sn, int64_t T, int64_t hd, float base);
/* Rotates pairs (2i, 2i+1) of each of n_heads heads of each row [N][n_heads*hd], row r at
 * position r % T; inverse rotates back (the backward pass: the transpose of a rotation).
 * pairs (NULL: the identity) gives each stored pair the original pair whose frequency it turns
 * at, [n_heads / group][hd/2]: a UniQL-sorted model's Q/K, whose heads of one KV group share
 * their K head's order. */
void el_rope_apply(float *x, const float *cs, const float *sn, int64_t N, int64_t T,
                   int64_t n_heads, int64_t hd, const int32_t *pairs, int64_t group, bool inverse);

/* Causal GQA attention of B sequences of T rows: q [B*T][H*hd], k, v [B*T][KVH*hd],
 * att [B][H][T][T] (probabilities, kept), out [B*T][H*hd]. Products by cblas_sgemm per
 * (sequence, head); softmax rows on the pool. */
typedef struct el_attn_dims {
    int64_t B, T, H, KVH, hd;
} el_attn_dims;
void el_attention_forward(el_threadpool *tp, const el_attn_dims *d, float *out, float *att,
                          const float *q, const float *k, const float *v);
/* dq, dk, dv are overwritten (not added); scratch is [B][H][T][T]. */
void el_attention_backward(el_threadpool *tp, const el_attn_dims *d, float *dq, float *dk,
                           float *dv, float *scratch, const float *dout, const float *att,
                           const float *q, const float *k, const float *v);

/* h = silu(g) * u over n */
void el_swiglu_forward(float *h, const float *g, const float *u, int64_t n);
/* dg, du are overwritten. */
void el_swiglu_backward(float *dg, float *du, const float *dh, const float *g, const float *u,
                        int64_t n);

/* probs[N][V] = softmax(logits) (in place allowed); returns the sum over rows with mask of
 * -log p[target] and adds the mask weights to *n_mask. */
double el_xent_forward(float *probs, const float *logits, const int32_t *targets,
                       const float *mask, int64_t N, int64_t V, double *n_mask);
/* dlogits[N][V] = scale * mask * (probs - onehot) (overwritten). */
void el_xent_backward(float *dlogits, const float *probs, const int32_t *targets,
                      const float *mask, int64_t N, int64_t V, float scale);

/* Distillation: probs[N][V] = q = softmax(logits) (in place allowed) and teacher[N][V], a
 * teacher's logits, becomes its distribution p (in place); returns the sum over rows with mask
 * of KL(p || q) = sum_i p_i (log p_i - log q_i) and adds the mask weights to *n_mask. */
double el_kl_forward(float *probs, const float *logits, float *teacher, const float *mask,
                     int64_t N, int64_t V, double *n_mask);
/* dlogits[N][V] = scale * mask * (q - p) (overwritten): the gradient of KL(p || q). */
void el_kl_backward(float *dlogits, const float *probs, const float *teacher, const float *mask,
                    int64_t N, int64_t V, float scale);

#endif
