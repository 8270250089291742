/* test_train_grad.c - the training backward pass against central finite differences of an
 * independent float64 forward written here from the math (naive loops, no BLAS, no code shared
 * with src/train): every parameter of a tiny model (embeddings, norms, every linear weight, the
 * untied head, LoRA A and B on every target, forecast vectors read by rows in place of tokens),
 * tied and untied, with a loss mask. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "train/tmodel.h"

enum { B = 2, T = 5 };

/* ------------------------------------------------------------- float64 reference */

typedef struct ref {
    const el_tmodel *m; /* shapes and offsets only */
    const double *w, *lw, *fw;
    const el_tprune *kept; /* NULL: every channel; else each layer sliced to these sizes */
} ref;

static const double *rw(const ref *r, int idx) { return r->w + r->m->base.t[idx].offset; }

static void ref_rmsnorm(double *y, const double *x, const double *w, int D, double eps) {
    double ss = 0;
    for (int i = 0; i < D; i++)
        ss += x[i] * x[i];
    double s = 1.0 / sqrt(ss / D + eps);
    for (int i = 0; i < D; i++)
        y[i] = w[i] * x[i] * s;
}

/* y[out] = W x + s B (A x) for linear i of layer il */
static void ref_linear(const ref *r, int il, int i, const double *x, double *y) {
    const el_tmodel *m = r->m;
    const el_ttensor *t = &m->base.t[1 + il * EL_TK_COUNT + EL_TK_FIRST_LINEAR + i];
    const double *w = r->w + t->offset;
    for (int o = 0; o < t->n_out; o++) {
        double acc = 0;
        for (int j = 0; j < t->n_in; j++)
            acc += w[o * t->n_in + j] * x[j];
        y[o] = acc;
    }
    int li = m->rank ? m->lora_idx[il * EL_TN_LINEAR + i] : -1;
    if (li < 0)
        return;
    const double *a = r->lw + m->lora.t[li].offset, *b = r->lw + m->lora.t[li + 1].offset;
    double ax[16], s = (double)m->alpha / m->rank;
    for (int k = 0; k < m->rank; k++) {
        ax[k] = 0;
        for (int j = 0; j < t->n_in; j++)
            ax[k] += a[k * t->n_in + j] * x[j];
    }
    for (int o = 0; o < t->n_out; o++)
        for (int k = 0; k < m->rank; k++)
            y[o] += s * b[o * m->rank + k] * ax[k];
}

/* pairs: [n_heads / group][hd/2] the frequency index of each stored pair, or NULL */
static void ref_rope(double *v, int n_heads, int hd, int pos, double base, const int32_t *pairs,
                     int group) {
    for (int h = 0; h < n_heads; h++)
        for (int i = 0; i < hd / 2; i++) {
            int f = pairs ? pairs[h / group * (hd / 2) + i] : i;
            double th = pos * pow(base, -2.0 * f / hd);
            double *p = v + h * hd + 2 * i, a = p[0], b = p[1];
            p[0] = a * cos(th) - b * sin(th);
            p[1] = a * sin(th) + b * cos(th);
        }
}

#define MAXD 64
/* mean masked cross-entropy over B sequences of T tokens */
static double ref_loss(const ref *r, const int32_t *tok, const int32_t *tgt, const float *mask) {
    const el_tconfig *c = &r->m->c;
    int D = c->dim, hd = D / c->n_head, kvd = c->n_head_kv * hd, group = c->n_head / c->n_head_kv;
    static double x[T][MAXD], xn[T][MAXD], q[T][MAXD], k[T][MAXD], v[T][MAXD], ao[T][MAXD],
        tmp[MAXD], g[MAXD], u[MAXD];
    double loss = 0, n_mask = 0;
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++)
            for (int i = 0; i < D; i++)
                x[t][i] = tok[b * T + t] >= 0 ? rw(r, 0)[tok[b * T + t] * D + i]
                                              : r->fw[(-1 - tok[b * T + t]) * D + i];
        for (int il = 0; il < c->n_layer; il++) {
            int base = 1 + il * EL_TK_COUNT;
            /* the pruned model physically: sums over the kept dims and channels only */
            int qk = r->kept ? r->kept->qk[il] : hd, vo = r->kept ? r->kept->vo[il] : hd;
            int ff = r->kept ? r->kept->ff[il] : c->n_ff;
            const int32_t *pairs =
                r->m->rope_pairs ? r->m->rope_pairs + il * c->n_head_kv * (hd / 2) : NULL;
            for (int t = 0; t < T; t++) {
                ref_rmsnorm(xn[t], x[t], rw(r, base + EL_TK_ATTN_NORM), D, c->rms_eps);
                ref_linear(r, il, 0, xn[t], q[t]);
                ref_linear(r, il, 1, xn[t], k[t]);
                ref_linear(r, il, 2, xn[t], v[t]);
                ref_rope(q[t], c->n_head, hd, t, c->rope_base, pairs, group);
                ref_rope(k[t], c->n_head_kv, hd, t, c->rope_base, pairs, 1);
            }
            for (int t = 0; t < T; t++)
                for (int h = 0; h < c->n_head; h++) {
                    int kh = h / group;
                    double sc[T], max = -1e300, sum = 0;
                    for (int s = 0; s <= t; s++) {
                        sc[s] = 0;
                        for (int i = 0; i < qk; i++)
                            sc[s] += q[t][h * hd + i] * k[s][kh * hd + i];
                        sc[s] /= sqrt((double)hd);
                        max = fmax(max, sc[s]);
                    }
                    for (int s = 0; s <= t; s++)
                        sum += sc[s] = exp(sc[s] - max);
                    for (int i = 0; i < hd; i++) {
                        double o = 0;
                        for (int s = 0; s <= t; s++)
                            o += sc[s] / sum * v[s][kh * hd + i];
                        ao[t][h * hd + i] = i < vo ? o : 0.0;
                    }
                }
            (void)kvd;
            for (int t = 0; t < T; t++) {
                ref_linear(r, il, 3, ao[t], tmp);
                for (int i = 0; i < D; i++)
                    x[t][i] += tmp[i];
                ref_rmsnorm(xn[t], x[t], rw(r, base + EL_TK_FFN_NORM), D, c->rms_eps);
                ref_linear(r, il, 4, xn[t], g);
                ref_linear(r, il, 5, xn[t], u);
                for (int i = 0; i < c->n_ff; i++)
                    g[i] = i < ff ? g[i] / (1 + exp(-g[i])) * u[i] : 0.0;
                ref_linear(r, il, 6, g, tmp);
                for (int i = 0; i < D; i++)
                    x[t][i] += tmp[i];
            }
        }
        int out_norm = 1 + c->n_layer * EL_TK_COUNT;
        const double *E = rw(r, c->tied ? 0 : out_norm + 1);
        for (int t = 0; t < T; t++) {
            double mw = mask[b * T + t];
            if (mw == 0)
                continue;
            ref_rmsnorm(xn[t], x[t], rw(r, out_norm), D, c->rms_eps);
            double logit[64], max = -1e300, sum = 0;
            for (int o = 0; o < c->n_vocab; o++) {
                logit[o] = 0;
                for (int i = 0; i < D; i++)
                    logit[o] += E[o * D + i] * xn[t][i];
                max = fmax(max, logit[o]);
            }
            for (int o = 0; o < c->n_vocab; o++)
                sum += exp(logit[o] - max);
            loss += mw * -(logit[tgt[b * T + t]] - max - log(sum));
            n_mask += mw;
        }
    }
    return loss / n_mask;
}

/* ------------------------------------------------------------- the test */

/* Max over one tensor of |analytic - fd| / max(|fd|) must be small. */
static int compare(const char *name, const float *g, const double *fd, int64_t n) {
    double err = 0, scale = 1e-6;
    for (int64_t i = 0; i < n; i++) {
        err = fmax(err, fabs(g[i] - fd[i]));
        scale = fmax(scale, fabs(fd[i]));
    }
    if (err / scale > 2e-3) {
        test_note("%s: max |grad - fd| = %.3g, max |fd| = %.3g", name, err, scale);
        return TEST_FAIL;
    }
    return TEST_PASS;
}

/* FD of the loss for every element of a table's block; the block is double, h = 1e-5. */
static int check_table(const el_ttable *tb, double *block, const float *grads, ref *r,
                       const int32_t *tok, const int32_t *tgt, const float *mask) {
    double *fd = malloc(tb->n_floats * sizeof *fd);
    for (size_t i = 0; i < tb->n_floats; i++) {
        double keep = block[i], h = 1e-5;
        block[i] = keep + h;
        double lp = ref_loss(r, tok, tgt, mask);
        block[i] = keep - h;
        double lm = ref_loss(r, tok, tgt, mask);
        block[i] = keep;
        fd[i] = (lp - lm) / (2 * h);
    }
    int res = TEST_PASS;
    for (int32_t i = 0; i < tb->n && res == TEST_PASS; i++)
        res = compare(tb->t[i].name, grads + tb->t[i].offset, fd + tb->t[i].offset,
                      tb->t[i].n_out * tb->t[i].n_in);
    free(fd);
    return res;
}

/* pruned: a UniQL-sorted model's RoPE pair index and kept sizes (2 heads of 4 dims over one
 * KV head, so that a pair can move and be dropped) */
static int run_case(bool tied, bool lora, bool forecast, bool pruned) {
    el_tconfig c = {.dim = 8, .n_layer = 2, .n_head = pruned ? 2 : 4, .n_head_kv = pruned ? 1 : 2,
                    .n_ff = 12, .n_ctx = T, .n_vocab = 11, .tied = tied, .rms_eps = 1e-5f,
                    .rope_base = 10000.0f};
    el_tmodel m;
    CHECK(el_tmodel_init(&m, &c) == EL_OK);
    static const int32_t pairs[2 * 2] = {1, 0, 0, 1}, ff[2] = {7, 12}, qk[2] = {2, 4},
                         vo[2] = {3, 2};
    const el_tprune kept = {ff, qk, vo};
    if (pruned) CHECK(el_tmodel_set_rope_pairs(&m, pairs) == EL_OK);
    /* bigger weights than a real init, so that every path carries gradient; norms away from 1 */
    test_rng rng = {tied ? 7u : 8u};
    for (size_t i = 0; i < m.base.n_floats; i++)
        m.w[i] = test_rand_uniform(&rng, -0.5f, 0.5f);
    for (int32_t i = 0; i < m.base.n; i++)
        if (!m.base.t[i].decay)
            for (int64_t j = 0; j < m.base.t[i].n_in; j++)
                m.w[m.base.t[i].offset + (size_t)j] = test_rand_uniform(&rng, 0.5f, 1.5f);
    if (lora) {
        uint32_t tg;
        CHECK(el_lora_parse_targets("q,k,v,o,gate,up,down", &tg) == EL_OK);
        CHECK(el_tmodel_add_lora(&m, 3, 6.0f, tg, 1) == EL_OK);
        for (size_t i = 0; i < m.lora.n_floats; i++) /* B nonzero so that A gets gradient */
            m.lw[i] = test_rand_uniform(&rng, -0.5f, 0.5f);
    }
    if (forecast)
        CHECK(el_tmodel_add_forecast(&m, 2, 3) == EL_OK);
    int32_t tok[B * T], tgt[B * T];
    float mask[B * T];
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int32_t)(test_rand_u32(&rng) % (uint32_t)c.n_vocab);
        tgt[i] = (int32_t)(test_rand_u32(&rng) % (uint32_t)c.n_vocab);
        mask[i] = i % 4 == 1 ? 0.0f : 1.0f;
        if (forecast && i % T >= T - 2) /* the last two rows of each sequence: slots 0 and 1 */
            tok[i] = -1 - (i % T - (T - 2));
    }
    el_threadpool *tp;
    CHECK(el_threadpool_create(2, &tp) == EL_OK);
    el_tacts *a;
    CHECK(el_tacts_create(&m, B, T, &a) == EL_OK);
    if (pruned) el_tacts_set_prune(a, &kept);
    float *grads = calloc(m.base.n_floats, sizeof *grads);
    float *lgrads = lora ? calloc(m.lora.n_floats, sizeof *lgrads) : NULL;
    float *fgrads = forecast ? calloc(m.forecast.n_floats, sizeof *fgrads) : NULL;
    float loss = el_tmodel_forward(&m, a, tp, tok, tgt, mask, NULL);
    el_tmodel_backward(&m, a, tp, lora || forecast ? NULL : grads, forecast ? NULL : lgrads, fgrads,
                       1.0f);

    double *wd = malloc(m.base.n_floats * sizeof *wd);
    double *lwd = lora ? malloc(m.lora.n_floats * sizeof *lwd) : NULL;
    for (size_t i = 0; i < m.base.n_floats; i++)
        wd[i] = m.w[i];
    for (size_t i = 0; lora && i < m.lora.n_floats; i++)
        lwd[i] = m.lw[i];
    double *fwd = forecast ? malloc(m.forecast.n_floats * sizeof *fwd) : NULL;
    for (size_t i = 0; forecast && i < m.forecast.n_floats; i++)
        fwd[i] = m.fw[i];
    ref r = {&m, wd, lwd, fwd, pruned ? &kept : NULL};
    double ref_l = ref_loss(&r, tok, tgt, mask);
    int res = TEST_PASS;
    if (fabs(loss - ref_l) > 1e-5 * fmax(1, fabs(ref_l))) {
        test_note("loss %.8f, float64 reference %.8f", loss, ref_l);
        res = TEST_FAIL;
    }
    if (res == TEST_PASS)
        res = forecast ? check_table(&m.forecast, fwd, fgrads, &r, tok, tgt, mask)
              : lora   ? check_table(&m.lora, lwd, lgrads, &r, tok, tgt, mask)
                       : check_table(&m.base, wd, grads, &r, tok, tgt, mask);
    free(wd);
    free(lwd);
    free(grads);
    free(lgrads);
    free(fwd);
    free(fgrads);
    el_tacts_free(a);
    el_threadpool_free(tp);
    el_tmodel_free(&m);
    return res;
}

static int test_grad_untied(void) { return run_case(false, false, false, false); }
static int test_grad_tied(void) { return run_case(true, false, false, false); }
static int test_grad_lora(void) { return run_case(false, true, false, false); }
static int test_grad_forecast(void) { return run_case(false, false, true, false); }
/* through a frozen adapter: its terms carry the gradient down to the vectors */
static int test_grad_forecast_lora(void) { return run_case(true, true, true, false); }
/* UniQL's masked fine-tuning: the masked forward against the physically sliced one */
static int test_grad_pruned(void) { return run_case(false, false, false, true); }
static int test_grad_pruned_lora(void) { return run_case(true, true, false, true); }

int main(void) {
    run_test("grad_untied_vs_fd64", test_grad_untied);
    run_test("grad_tied_vs_fd64", test_grad_tied);
    run_test("grad_lora_vs_fd64", test_grad_lora);
    run_test("grad_forecast_vs_fd64", test_grad_forecast);
    run_test("grad_forecast_frozen_lora_vs_fd64", test_grad_forecast_lora);
    run_test("grad_pruned_sorted_vs_fd64", test_grad_pruned);
    run_test("grad_pruned_sorted_lora_vs_fd64", test_grad_pruned_lora);
    return tests_exit_code();
}
