/* layers.c - forward/backward pairs of the training layers (see layers.h). Matrix products go to
 * cblas_sgemm (OpenBLAS threads them); attention runs on our pool. */
#include "train/layers.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------- RMSNorm */

void el_rmsnorm_forward(float *y, float *rs, const float *x, const float *w, int64_t N, int64_t D,
                        float eps) {
    for (int64_t r = 0; r < N; r++) {
        const float *xr = x + r * D;
        float *yr = y + r * D;
        float ss = 0.0f;
        for (int64_t i = 0; i < D; i++)
            ss += xr[i] * xr[i];
        float s = 1.0f / sqrtf(ss / (float)D + eps);
        rs[r] = s;
        for (int64_t i = 0; i < D; i++)
            yr[i] = w[i] * (s * xr[i]);
    }
}

/* y_i = w_i x_i s with s = (mean(x^2) + eps)^-1/2, so ds/dx_j = -s^3 x_j / D and
 * dx_j = s w_j dy_j - x_j s^3 / D * sum_i dy_i w_i x_i. */
void el_rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w,
                         const float *rs, int64_t N, int64_t D) {
    for (int64_t r = 0; r < N; r++) {
        const float *xr = x + r * D, *dyr = dy + r * D;
        float *dxr = dx + r * D;
        float s = rs[r], dot = 0.0f;
        for (int64_t i = 0; i < D; i++)
            dot += dyr[i] * w[i] * xr[i];
        float c = s * s * s * dot / (float)D;
        for (int64_t i = 0; i < D; i++) {
            dxr[i] += s * w[i] * dyr[i] - c * xr[i];
            if (dw)
                dw[i] += dyr[i] * xr[i] * s;
        }
    }
}

/* ------------------------------------------------------------- linear */

void el_linear_forward(float *y, const float *x, const float *w, int64_t N, int64_t in,
                       int64_t out) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)out, (int)in, 1.0f, x,
                (int)in, w, (int)in, 0.0f, y, (int)out);
}

void el_linear_backward(float *dx, float *dw, const float *dy, const float *x, const float *w,
                        int64_t N, int64_t in, int64_t out) {
    if (dx) /* dx[N][in] += dy[N][out] W[out][in] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)in, (int)out, 1.0f, dy,
                    (int)out, w, (int)in, 1.0f, dx, (int)in);
    if (dw) /* dW[out][in] += dy^T[out][N] x[N][in] */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)out, (int)in, (int)N, 1.0f, dy,
                    (int)out, x, (int)in, 1.0f, dw, (int)in);
}

void el_lora_forward(float *y, float *lx, const float *x, const float *a, const float *b, float s,
                     int64_t N, int64_t in, int64_t out, int64_t R) {
    el_linear_forward(lx, x, a, N, in, R); /* lx[N][R] */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)out, (int)R, s, lx, (int)R,
                b, (int)R, 1.0f, y, (int)out);
}

void el_lora_backward(float *dx, float *da, float *db, float *dlx, const float *dy, const float *x,
                      const float *lx, const float *a, const float *b, float s, int64_t N,
                      int64_t in, int64_t out, int64_t R) {
    /* dB[out][R] += s dy^T lx (frozen adapter: no db) */
    if (db)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)out, (int)R, (int)N, s, dy, (int)out,
                lx, (int)R, 1.0f, db, (int)R);
    /* dlx[N][R] = s dy B */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)R, (int)out, s, dy,
                (int)out, b, (int)R, 0.0f, dlx, (int)R);
    el_linear_backward(dx, da, dlx, x, a, N, in, R);
}

/* ------------------------------------------------------------- RoPE */

void el_rope_tables(float *cs, float *sn, int64_t T, int64_t hd, float base) {
    int64_t half = hd / 2;
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < half; i++) {
            float freq = 1.0f / powf(base, (float)(2 * i) / (float)hd);
            float val = (float)t * freq;
            cs[t * half + i] = cosf(val);
            sn[t * half + i] = sinf(val);
        }
}

void el_rope_apply(float *x, const float *cs, const float *sn, int64_t N, int64_t T,
                   int64_t n_heads, int64_t hd, const int32_t *pairs, int64_t group, bool inverse) {
    int64_t half = hd / 2;
    for (int64_t r = 0; r < N; r++) {
        const float *c = cs + (r % T) * half, *s = sn + (r % T) * half;
        for (int64_t h = 0; h < n_heads; h++) {
            float *p = x + (r * n_heads + h) * hd;
            const int32_t *orig = pairs ? pairs + (h / group) * half : NULL;
            for (int64_t i = 0; i < half; i++) {
                int64_t f = orig ? orig[i] : i;
                float v0 = p[2 * i], v1 = p[2 * i + 1];
                float si = inverse ? -s[f] : s[f];
                p[2 * i] = v0 * c[f] - v1 * si;
                p[2 * i + 1] = v0 * si + v1 * c[f];
            }
        }
    }
}

/* ------------------------------------------------------------- attention */

/* Per (sequence b, head h) with kv head g = h / (H / KVH), as matrices (rows strided in the
 * [B*T][heads*hd] buffers): S = Q K^T * scale, P = causal row softmax of S, O = P V. The products
 * go to cblas_sgemm (full T x T, the upper triangle then masked: at BLAS speed that beats
 * skipping it); the row-wise softmax parts run on our pool, one row (b, h, t) per unit. */

typedef struct attn_rows_job {
    const el_attn_dims *d;
    float *p;        /* [B][H][T][T]: scores in, probabilities out (forward) */
    float *dp;       /* [B][H][T][T]: dP in, dS out (backward) */
    float scale;
} attn_rows_job;

static void softmax_rows_task(void *arg, int ith, int nth) {
    const attn_rows_job *j = arg;
    int64_t T = j->d->T, rows = j->d->B * j->d->H * T;
    for (int64_t r = ith; r < rows; r += nth) {
        int64_t t = r % T;
        float *p = j->p + r * T, max = -INFINITY, sum = 0.0f;
        for (int64_t s = 0; s <= t; s++)
            max = p[s] > max ? p[s] : max;
        for (int64_t s = 0; s <= t; s++) {
            p[s] = expf(p[s] - max);
            sum += p[s];
        }
        for (int64_t s = 0; s <= t; s++)
            p[s] /= sum;
        for (int64_t s = t + 1; s < T; s++)
            p[s] = 0.0f;
    }
}

/* dS = P * (dP - sum_s P dP) * scale, row by row (P is 0 above the diagonal, so is dS) */
static void softmax_back_task(void *arg, int ith, int nth) {
    const attn_rows_job *j = arg;
    int64_t T = j->d->T, rows = j->d->B * j->d->H * T;
    for (int64_t r = ith; r < rows; r += nth) {
        const float *p = j->p + r * T;
        float *dp = j->dp + r * T, dot = 0.0f;
        for (int64_t s = 0; s < T; s++)
            dot += p[s] * dp[s];
        for (int64_t s = 0; s < T; s++)
            dp[s] = p[s] * (dp[s] - dot) * j->scale;
    }
}

void el_attention_forward(el_threadpool *tp, const el_attn_dims *d, float *out, float *att,
                          const float *q, const float *k, const float *v) {
    int T = (int)d->T, hd = (int)d->hd, qd = (int)(d->H * d->hd), kvd = (int)(d->KVH * d->hd);
    int64_t group = d->H / d->KVH;
    float scale = 1.0f / sqrtf((float)hd);
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t h = 0; h < d->H; h++) /* S[T][T] = Q[T][hd] K[T][hd]^T * scale */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hd, scale,
                        q + b * T * qd + h * hd, qd, k + b * T * kvd + (h / group) * hd, kvd,
                        0.0f, att + (b * d->H + h) * T * T, T);
    attn_rows_job j = {.d = d, .p = att};
    el_threadpool_run(tp, softmax_rows_task, &j);
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t h = 0; h < d->H; h++) /* O[T][hd] = P[T][T] V[T][hd] */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hd, T, 1.0f,
                        att + (b * d->H + h) * T * T, T, v + b * T * kvd + (h / group) * hd, kvd,
                        0.0f, out + b * T * qd + h * hd, qd);
}

/* dP = dO V^T, dV += P^T dO, dS as above, dQ = dS K, dK += dS^T Q (scale folded into dS). */
void el_attention_backward(el_threadpool *tp, const el_attn_dims *d, float *dq, float *dk,
                           float *dv, float *scratch, const float *dout, const float *att,
                           const float *q, const float *k, const float *v) {
    int T = (int)d->T, hd = (int)d->hd, qd = (int)(d->H * d->hd), kvd = (int)(d->KVH * d->hd);
    int64_t group = d->H / d->KVH;
    memset(dk, 0, (size_t)(d->B * T * kvd) * sizeof(float));
    memset(dv, 0, (size_t)(d->B * T * kvd) * sizeof(float));
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t h = 0; h < d->H; h++) {
            const float *p = att + (b * d->H + h) * T * T, *o = dout + b * T * qd + h * hd;
            int64_t kv = b * T * kvd + (h / group) * hd;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hd, 1.0f, o, qd, v + kv,
                        kvd, 0.0f, scratch + (b * d->H + h) * T * T, T);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hd, T, 1.0f, p, T, o, qd,
                        1.0f, dv + kv, kvd);
        }
    attn_rows_job j = {.d = d, .p = (float *)att, .dp = scratch, .scale = 1.0f / sqrtf((float)hd)};
    el_threadpool_run(tp, softmax_back_task, &j);
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t h = 0; h < d->H; h++) {
            const float *ds = scratch + (b * d->H + h) * T * T;
            int64_t kv = b * T * kvd + (h / group) * hd, qo = b * T * qd + h * hd;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hd, T, 1.0f, ds, T, k + kv,
                        kvd, 0.0f, dq + qo, qd);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hd, T, 1.0f, ds, T, q + qo,
                        qd, 1.0f, dk + kv, kvd);
        }
}

/* ------------------------------------------------------------- SwiGLU */

void el_swiglu_forward(float *h, const float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float x = g[i];
        h[i] = x * (1.0f / (1.0f + expf(-x))) * u[i];
    }
}

/* silu'(x) = sig(x) (1 + x (1 - sig(x))) */
void el_swiglu_backward(float *dg, float *du, const float *dh, const float *g, const float *u,
                        int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float x = g[i], sig = 1.0f / (1.0f + expf(-x));
        du[i] = dh[i] * x * sig;
        dg[i] = dh[i] * u[i] * sig * (1.0f + x * (1.0f - sig));
    }
}

/* ------------------------------------------------------------- cross-entropy */

double el_xent_forward(float *probs, const float *logits, const int32_t *targets,
                       const float *mask, int64_t N, int64_t V, double *n_mask) {
    double loss = 0.0;
    for (int64_t r = 0; r < N; r++) {
        const float *l = logits + r * V;
        float *p = probs + r * V;
        float max = -INFINITY, lt = l[targets ? targets[r] : 0]; /* before an in-place overwrite */
        for (int64_t i = 0; i < V; i++)
            if (l[i] > max)
                max = l[i];
        double sum = 0.0;
        for (int64_t i = 0; i < V; i++) {
            p[i] = expf(l[i] - max);
            sum += p[i];
        }
        for (int64_t i = 0; i < V; i++)
            p[i] = (float)(p[i] / sum);
        float mw = mask ? mask[r] : 1.0f;
        if (mw != 0.0f) {
            loss -= mw * ((double)(lt - max) - log(sum));
            *n_mask += mw;
        }
    }
    return loss;
}

void el_xent_backward(float *dlogits, const float *probs, const int32_t *targets,
                      const float *mask, int64_t N, int64_t V, float scale) {
    for (int64_t r = 0; r < N; r++) {
        float s = scale * (mask ? mask[r] : 1.0f);
        float *d = dlogits + r * V;
        const float *p = probs + r * V;
        for (int64_t i = 0; i < V; i++)
            d[i] = s * p[i];
        d[targets[r]] -= s;
    }
}

/* ------------------------------------------------------------- distillation */

/* log(sum_i exp(l_i)), from the largest l so that no exp overflows. */
static double log_sum_exp(const float *l, int64_t V) {
    float max = -INFINITY;
    for (int64_t i = 0; i < V; i++)
        if (l[i] > max) max = l[i];
    double sum = 0.0;
    for (int64_t i = 0; i < V; i++) sum += exp((double)l[i] - max);
    return max + log(sum);
}

double el_kl_forward(float *probs, const float *logits, float *teacher, const float *mask,
                     int64_t N, int64_t V, double *n_mask) {
    double loss = 0.0;
    for (int64_t r = 0; r < N; r++) {
        float mw = mask ? mask[r] : 1.0f;
        const float *l = logits + r * V;
        float *t = teacher + r * V, *q = probs + r * V;
        double lse_q = log_sum_exp(l, V), lse_p = log_sum_exp(t, V);
        if (mw != 0.0f) { /* from the log-probabilities, before either row is overwritten */
            double kl = 0.0;
            for (int64_t i = 0; i < V; i++) {
                double lp = t[i] - lse_p;
                kl += exp(lp) * (lp - ((double)l[i] - lse_q));
            }
            loss += mw * kl;
            *n_mask += mw;
        }
        for (int64_t i = 0; i < V; i++) q[i] = (float)exp((double)l[i] - lse_q);
        for (int64_t i = 0; i < V; i++) t[i] = (float)exp((double)t[i] - lse_p);
    }
    return loss;
}

void el_kl_backward(float *dlogits, const float *probs, const float *teacher, const float *mask,
                    int64_t N, int64_t V, float scale) {
    for (int64_t r = 0; r < N; r++) {
        float s = scale * (mask ? mask[r] : 1.0f);
        for (int64_t i = 0; i < V; i++)
            dlogits[r * V + i] = s * (probs[r * V + i] - teacher[r * V + i]);
    }
}
