/* sort.c - MLP channels by ridge leverage, Q/K RoPE pairs by energy, V/O by a weighted SVD.
 *
 * Every transform is exact: a permutation of channels (MLP, Q/K pairs, carried by both sides
 * of the product they meet in) or an invertible change of basis of each V head's outputs that
 * the O columns reading them undo. The V/O basis is built without inverting anything: with the
 * group's O columns stacked as B = Q_B R (thin QR) and R V L = U S W^T (L a Cholesky factor of
 * the input correlation), V' = U^T R V and B' = Q_B U, so B' V' = Q_B R V = B V exactly. */
#include "compress/sort.h"

#include <cblas.h>
#include <lapacke.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* the weighting factor of V/O is that of the damped correlation, so a rank-deficient one (fewer
 * calibration rows than inputs) still has a Cholesky factor */
static const double VO_DAMP = 1e-3;

double el_ridge_lambda(const double *c, int64_t n, double ridge) {
    double t = 0;
    for (int64_t i = 0; i < n; i++) t += c[i * n + i];
    return ridge * (t > 0 ? t / (double)n : 1.0);
}

el_status el_ridge_leverage(const double *c, int64_t n, double lambda, double *score) {
    if (!(lambda > 0)) return el_error(EL_ERR_INVALID_ARG, "leverage: ridge %g is not > 0", lambda);
    double *a = malloc((size_t)(n * n) * sizeof *a);
    if (!a) return el_error(EL_ERR_NOMEM, "leverage: out of memory");
    memcpy(a, c, (size_t)(n * n) * sizeof *a);
    for (int64_t i = 0; i < n; i++) a[i * n + i] += lambda;
    /* a = L L^T; (a^-1)_ii = sum over k >= i of (L^-1)_ki^2 */
    el_status st = EL_OK;
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', (lapack_int)n, a, (lapack_int)n) != 0 ||
        LAPACKE_dtrtri(LAPACK_ROW_MAJOR, 'L', 'N', (lapack_int)n, a, (lapack_int)n) != 0)
        st = el_error(EL_ERR_INVALID_ARG, "leverage: the ridge system is not positive definite");
    for (int64_t i = 0; st == EL_OK && i < n; i++) {
        double inv = 0;
        for (int64_t k = i; k < n; k++) inv += a[k * n + i] * a[k * n + i];
        score[i] = 1.0 - lambda * inv;
    }
    free(a);
    return st;
}

/* Indices 0..n-1 in descending key, ties in index order. */
typedef struct keyed {
    double key;
    int32_t index;
} keyed;

static int by_key_desc(const void *pa, const void *pb) {
    const keyed *a = pa, *b = pb;
    if (a->key != b->key) return a->key > b->key ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

static el_status order_desc(const double *key, int32_t n, int32_t *order) {
    keyed *k = malloc((size_t)n * sizeof *k);
    if (!k) return el_error(EL_ERR_NOMEM, "sort: out of memory");
    for (int32_t i = 0; i < n; i++) k[i] = (keyed){key[i], i};
    qsort(k, (size_t)n, sizeof *k, by_key_desc);
    for (int32_t i = 0; i < n; i++) order[i] = k[i].index;
    free(k);
    return EL_OK;
}

/* Rows of w (n_in floats each) in the order perm: new row s is old row perm[s]. */
static el_status permute_rows(float *w, int64_t n_in, const int32_t *perm, int32_t n) {
    float *t = malloc((size_t)(n * n_in) * sizeof *t);
    if (!t) return el_error(EL_ERR_NOMEM, "sort: out of memory");
    for (int32_t s = 0; s < n; s++)
        memcpy(t + s * n_in, w + perm[s] * n_in, (size_t)n_in * sizeof *t);
    memcpy(w, t, (size_t)(n * n_in) * sizeof *t);
    free(t);
    return EL_OK;
}

el_status el_sort_mlp(const el_hparams *hp, el_flayer *l, double *c_mid, double ridge,
                      int32_t *perm_out) {
    int32_t f = hp->n_ff;
    int64_t e = hp->n_embd;
    double *score = malloc((size_t)f * sizeof *score);
    int32_t *perm = malloc((size_t)f * sizeof *perm);
    double *c = malloc((size_t)f * (size_t)f * sizeof *c);
    el_status st = score && perm && c ? EL_OK : el_error(EL_ERR_NOMEM, "sort: out of memory");
    if (st == EL_OK) st = el_ridge_leverage(c_mid, f, el_ridge_lambda(c_mid, f, ridge), score);
    if (st == EL_OK) st = order_desc(score, f, perm);
    /* the weights move as anything re-expressed in the sorted basis does */
    el_sort_basis b = {.mlp_perm = perm};
    if (st == EL_OK) st = el_sort_basis_rows(hp, &b, EL_LINEAR_GATE, l->w[EL_LINEAR_GATE], e);
    if (st == EL_OK) st = el_sort_basis_rows(hp, &b, EL_LINEAR_UP, l->w[EL_LINEAR_UP], e);
    if (st == EL_OK) st = el_sort_basis_cols(hp, &b, EL_LINEAR_DOWN, l->w[EL_LINEAR_DOWN], e);
    if (st == EL_OK) {
        for (int32_t s = 0; s < f; s++)
            for (int32_t t = 0; t < f; t++)
                c[(size_t)s * f + t] = c_mid[(size_t)perm[s] * f + perm[t]];
        memcpy(c_mid, c, (size_t)f * (size_t)f * sizeof *c);
        if (perm_out) memcpy(perm_out, perm, (size_t)f * sizeof *perm);
    }
    free(score);
    free(perm);
    free(c);
    return st;
}

/* w^T c w of every row of w (rows x n, float) against the n x n c. */
static el_status row_energies(const float *w, int64_t rows, int64_t n, const double *c,
                              double *out) {
    double *wd = malloc((size_t)(rows * n) * sizeof *wd);
    double *wc = malloc((size_t)(rows * n) * sizeof *wc);
    el_status st = wd && wc ? EL_OK : el_error(EL_ERR_NOMEM, "sort: out of memory");
    if (st == EL_OK) {
        for (int64_t i = 0; i < rows * n; i++) wd[i] = w[i];
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)n, (int)n, 1.0, wd,
                    (int)n, c, (int)n, 0.0, wc, (int)n);
        for (int64_t r = 0; r < rows; r++)
            out[r] = cblas_ddot((int)n, wd + r * n, 1, wc + r * n, 1);
    }
    free(wd);
    free(wc);
    return st;
}

/* The two head dimensions RoPE rotates together as pair p. */
static void pair_dims(const el_hparams *hp, int32_t p, int32_t *a, int32_t *b) {
    if (hp->rope_style == EL_ROPE_NEOX) {
        *a = p;
        *b = p + hp->n_rot / 2;
    } else {
        *a = 2 * p;
        *b = 2 * p + 1;
    }
}

/* Rows of the head starting at row h0 of w with its pairs in the order perm. */
static void permute_head_pairs(const el_hparams *hp, float *w, int64_t n_in, int64_t h0,
                               const int32_t *perm, float *tmp) {
    int32_t hd = hp->head_dim_k;
    memcpy(tmp, w + h0 * n_in, (size_t)(hd * n_in) * sizeof *tmp);
    for (int32_t s = 0; s < hp->n_rot / 2; s++) {
        int32_t sa, sb, oa, ob;
        pair_dims(hp, s, &sa, &sb);
        pair_dims(hp, perm[s], &oa, &ob);
        memcpy(w + (h0 + sa) * n_in, tmp + oa * n_in, (size_t)n_in * sizeof *tmp);
        memcpy(w + (h0 + sb) * n_in, tmp + ob * n_in, (size_t)n_in * sizeof *tmp);
    }
}

el_status el_sort_qk(const el_hparams *hp, el_flayer *l, const double *c_in, int32_t *rope_pairs) {
    if (hp->n_rot != hp->head_dim_k)
        return el_error(EL_ERR_UNSUPPORTED,
                        "sort: Q/K sorting needs every head dimension rotated (n_rot %d, head "
                        "dimension %d)",
                        hp->n_rot, hp->head_dim_k);
    int64_t e = hp->n_embd;
    int32_t hd = hp->head_dim_k, np = hp->n_rot / 2, group = hp->n_head / hp->n_head_kv;
    double *eq = malloc((size_t)hp->n_head * hd * sizeof *eq);
    double *ek = malloc((size_t)hp->n_head_kv * hd * sizeof *ek);
    double *imp = malloc((size_t)np * sizeof *imp);
    el_status st = eq && ek && imp ? EL_OK : el_error(EL_ERR_NOMEM, "sort: out of memory");
    if (st == EL_OK) st = row_energies(l->w[EL_LINEAR_Q], (int64_t)hp->n_head * hd, e, c_in, eq);
    if (st == EL_OK) st = row_energies(l->w[EL_LINEAR_K], (int64_t)hp->n_head_kv * hd, e, c_in, ek);
    for (int32_t g = 0; st == EL_OK && g < hp->n_head_kv; g++) {
        int32_t *perm = rope_pairs + g * np;
        for (int32_t p = 0; p < np; p++) {
            int32_t a, b;
            pair_dims(hp, p, &a, &b);
            double q = 0;
            for (int32_t h = g * group; h < (g + 1) * group; h++)
                q += eq[h * hd + a] + eq[h * hd + b];
            imp[p] = q * (ek[g * hd + a] + ek[g * hd + b]);
        }
        st = order_desc(imp, np, perm);
    }
    /* every group's order is chosen from the energies before any row moves; the weights then
     * move as anything re-expressed in the sorted basis does */
    el_sort_basis b = {.qk_pairs = rope_pairs};
    if (st == EL_OK) st = el_sort_basis_rows(hp, &b, EL_LINEAR_K, l->w[EL_LINEAR_K], e);
    if (st == EL_OK) st = el_sort_basis_rows(hp, &b, EL_LINEAR_Q, l->w[EL_LINEAR_Q], e);
    free(eq);
    free(ek);
    free(imp);
    return st;
}

/* The basis change of one KV head: fills t (dv x dv) and rewrites V's rows and the group's O
 * columns. l_in is the lower Cholesky factor of the input correlation (e x e). */
static el_status vo_head(const el_hparams *hp, el_flayer *l, int32_t j, const double *l_in,
                         double *t) {
    int64_t e = hp->n_embd, dv = hp->head_dim_v, o_in = (int64_t)hp->n_head * dv;
    int32_t group = hp->n_head / hp->n_head_kv;
    int64_t m = group * e;
    double *b = malloc((size_t)(m * dv) * sizeof *b);
    double *v = malloc((size_t)(dv * e) * sizeof *v);
    double *rv = malloc((size_t)(dv * e) * sizeof *rv);
    double *a = malloc((size_t)(dv * e) * sizeof *a);
    double *r = calloc((size_t)(dv * dv), sizeof *r);
    double *u = malloc((size_t)(dv * dv) * sizeof *u);
    double *vt = malloc((size_t)(dv * e) * sizeof *vt);
    double *bu = malloc((size_t)(m * dv) * sizeof *bu);
    double *tau = malloc((size_t)dv * sizeof *tau), *s = malloc((size_t)dv * sizeof *s);
    el_status st = b && v && rv && a && r && u && vt && bu && tau && s
                       ? EL_OK
                       : el_error(EL_ERR_NOMEM, "sort: out of memory");
    if (st == EL_OK) {
        float *wv = l->w[EL_LINEAR_V] + j * dv * e, *wo = l->w[EL_LINEAR_O];
        for (int64_t i = 0; i < dv * e; i++) v[i] = wv[i];
        for (int32_t g = 0; g < group; g++)
            for (int64_t row = 0; row < e; row++)
                for (int64_t c = 0; c < dv; c++)
                    b[(g * e + row) * dv + c] = wo[row * o_in + ((int64_t)j * group + g) * dv + c];
        if (LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)dv, b, (lapack_int)dv,
                           tau) != 0)
            st = el_error(EL_ERR_INVALID_ARG, "sort: QR of the O columns failed");
    }
    if (st == EL_OK) {
        for (int64_t i = 0; i < dv; i++)
            for (int64_t c = i; c < dv; c++) r[i * dv + c] = b[i * dv + c];
        if (LAPACKE_dorgqr(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)dv, (lapack_int)dv, b,
                           (lapack_int)dv, tau) != 0)
            st = el_error(EL_ERR_INVALID_ARG, "sort: QR of the O columns failed");
    }
    if (st == EL_OK) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)dv, (int)e, (int)dv, 1.0, r,
                    (int)dv, v, (int)e, 0.0, rv, (int)e);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)dv, (int)e, (int)e, 1.0, rv,
                    (int)e, l_in, (int)e, 0.0, a, (int)e);
        if (LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', (lapack_int)dv, (lapack_int)e, a, (lapack_int)e,
                           s, u, (lapack_int)dv, vt, (lapack_int)e) != 0)
            st = el_error(EL_ERR_INVALID_ARG, "sort: SVD of a V/O product did not converge");
    }
    if (st == EL_OK) {
        /* t = U^T R; V' = U^T R V = t V; B' = Q_B U */
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)dv, (int)dv, (int)dv, 1.0, u,
                    (int)dv, r, (int)dv, 0.0, t, (int)dv);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)dv, (int)e, (int)dv, 1.0, u,
                    (int)dv, rv, (int)e, 0.0, a, (int)e);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)dv, (int)dv, 1.0, b,
                    (int)dv, u, (int)dv, 0.0, bu, (int)dv);
        float *wv = l->w[EL_LINEAR_V] + j * dv * e, *wo = l->w[EL_LINEAR_O];
        for (int64_t i = 0; i < dv * e; i++) wv[i] = (float)a[i];
        for (int32_t g = 0; g < group; g++)
            for (int64_t row = 0; row < e; row++)
                for (int64_t c = 0; c < dv; c++)
                    wo[row * o_in + ((int64_t)j * group + g) * dv + c] =
                        (float)bu[(g * e + row) * dv + c];
    }
    free(b);
    free(v);
    free(rv);
    free(a);
    free(r);
    free(u);
    free(vt);
    free(bu);
    free(tau);
    free(s);
    return st;
}

el_status el_sort_vo(const el_hparams *hp, el_flayer *l, const double *c_in, double *c_out,
                     double *t_out) {
    int64_t e = hp->n_embd, dv = hp->head_dim_v, o_in = (int64_t)hp->n_head * dv;
    int32_t group = hp->n_head / hp->n_head_kv;
    double *lc = malloc((size_t)(e * e) * sizeof *lc);
    double *t = malloc((size_t)(hp->n_head_kv * dv * dv) * sizeof *t);
    double *c2 = malloc((size_t)(o_in * o_in) * sizeof *c2);
    double *blk = malloc((size_t)(dv * dv) * sizeof *blk);
    double *tmp = malloc((size_t)(dv * dv) * sizeof *tmp);
    el_status st =
        lc && t && c2 && blk && tmp ? EL_OK : el_error(EL_ERR_NOMEM, "sort: out of memory");
    if (st == EL_OK) {
        memcpy(lc, c_in, (size_t)(e * e) * sizeof *lc);
        double damp = el_ridge_lambda(c_in, e, VO_DAMP);
        for (int64_t i = 0; i < e; i++) lc[i * e + i] += damp;
        if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', (lapack_int)e, lc, (lapack_int)e) != 0)
            st = el_error(EL_ERR_INVALID_ARG, "sort: the attention input correlation is not "
                                              "positive definite");
        for (int64_t i = 0; st == EL_OK && i < e; i++)
            for (int64_t c = i + 1; c < e; c++) lc[i * e + c] = 0;
    }
    for (int32_t j = 0; st == EL_OK && j < hp->n_head_kv; j++)
        st = vo_head(hp, l, j, lc, t + j * dv * dv);
    /* O's input of Q head h is now t_{kv(h)} times what it was: c_out' = T c_out T^T blockwise */
    for (int32_t h = 0; st == EL_OK && h < hp->n_head; h++)
        for (int32_t h2 = 0; h2 < hp->n_head; h2++) {
            for (int64_t i = 0; i < dv; i++)
                for (int64_t c = 0; c < dv; c++)
                    blk[i * dv + c] = c_out[(h * dv + i) * o_in + h2 * dv + c];
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)dv, (int)dv, (int)dv, 1.0,
                        t + (h / group) * dv * dv, (int)dv, blk, (int)dv, 0.0, tmp, (int)dv);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)dv, (int)dv, (int)dv, 1.0,
                        tmp, (int)dv, t + (h2 / group) * dv * dv, (int)dv, 0.0, blk, (int)dv);
            for (int64_t i = 0; i < dv; i++)
                for (int64_t c = 0; c < dv; c++)
                    c2[(h * dv + i) * o_in + h2 * dv + c] = blk[i * dv + c];
        }
    if (st == EL_OK) memcpy(c_out, c2, (size_t)(o_in * o_in) * sizeof *c2);
    if (st == EL_OK && t_out) memcpy(t_out, t, (size_t)(hp->n_head_kv * dv * dv) * sizeof *t);
    free(lc);
    free(t);
    free(c2);
    free(blk);
    free(tmp);
    return st;
}

el_status el_sort_basis_rows(const el_hparams *hp, const el_sort_basis *b, el_linear which,
                             float *m, int64_t n_cols) {
    int32_t hd = hp->head_dim_k, group = hp->n_head / hp->n_head_kv;
    int64_t dv = hp->head_dim_v;
    el_status st = EL_OK;
    if (which == EL_LINEAR_GATE || which == EL_LINEAR_UP)
        return permute_rows(m, n_cols, b->mlp_perm, hp->n_ff);
    if ((which == EL_LINEAR_Q || which == EL_LINEAR_K) && b->qk_pairs) {
        float *tmp = malloc((size_t)(hd * n_cols) * sizeof *tmp);
        if (!tmp) return el_error(EL_ERR_NOMEM, "sort: out of memory");
        int32_t heads = which == EL_LINEAR_Q ? hp->n_head : hp->n_head_kv;
        for (int32_t h = 0; h < heads; h++) {
            int32_t g = which == EL_LINEAR_Q ? h / group : h;
            permute_head_pairs(hp, m, n_cols, (int64_t)h * hd,
                               b->qk_pairs + (size_t)g * (hp->n_rot / 2), tmp);
        }
        free(tmp);
    } else if (which == EL_LINEAR_V) {
        /* head j's rows: t_j times them */
        double *x = malloc((size_t)(dv * n_cols) * sizeof *x);
        double *y = malloc((size_t)(dv * n_cols) * sizeof *y);
        st = x && y ? EL_OK : el_error(EL_ERR_NOMEM, "sort: out of memory");
        for (int32_t j = 0; st == EL_OK && j < hp->n_head_kv; j++) {
            float *h = m + (size_t)j * dv * n_cols;
            for (int64_t i = 0; i < dv * n_cols; i++) x[i] = h[i];
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)dv, (int)n_cols, (int)dv,
                        1.0, b->vo_t + (size_t)j * dv * dv, (int)dv, x, (int)n_cols, 0.0, y,
                        (int)n_cols);
            for (int64_t i = 0; i < dv * n_cols; i++) h[i] = (float)y[i];
        }
        free(x);
        free(y);
    }
    return st;
}

el_status el_sort_basis_cols(const el_hparams *hp, const el_sort_basis *b, el_linear which,
                             float *m, int64_t n_rows) {
    int32_t group = hp->n_head / hp->n_head_kv;
    int64_t dv = hp->head_dim_v, o_in = (int64_t)hp->n_head * dv, f = hp->n_ff;
    if (which == EL_LINEAR_DOWN) {
        float *row = malloc((size_t)f * sizeof *row);
        if (!row) return el_error(EL_ERR_NOMEM, "sort: out of memory");
        for (int64_t r = 0; r < n_rows; r++) {
            float *d = m + r * f;
            for (int64_t s = 0; s < f; s++) row[s] = d[b->mlp_perm[s]];
            memcpy(d, row, (size_t)f * sizeof *row);
        }
        free(row);
        return EL_OK;
    }
    if (which != EL_LINEAR_O) return EL_OK;
    /* O's input of head h is now t_{kv(h)} x: a matrix M on it becomes M t^-1, solved from
     * t^T (M')^T = M^T (LU), the columns of each head at once */
    double *tt = malloc((size_t)(dv * dv) * sizeof *tt);
    double *x = malloc((size_t)(dv * n_rows) * sizeof *x);
    lapack_int *piv = malloc((size_t)dv * sizeof *piv);
    el_status st = tt && x && piv ? EL_OK : el_error(EL_ERR_NOMEM, "sort: out of memory");
    for (int32_t h = 0; st == EL_OK && h < hp->n_head; h++) {
        const double *t = b->vo_t + (size_t)(h / group) * dv * dv;
        for (int64_t i = 0; i < dv; i++)
            for (int64_t c = 0; c < dv; c++) tt[i * dv + c] = t[c * dv + i];
        for (int64_t r = 0; r < n_rows; r++)
            for (int64_t c = 0; c < dv; c++) x[c * n_rows + r] = m[r * o_in + h * dv + c];
        if (LAPACKE_dgesv(LAPACK_ROW_MAJOR, (lapack_int)dv, (lapack_int)n_rows, tt,
                          (lapack_int)dv, piv, x, (lapack_int)n_rows) != 0)
            st = el_error(EL_ERR_UNSUPPORTED, "sort: the V/O basis of head %d is singular (its O "
                          "columns are rank-deficient): what acts on O's input cannot be "
                          "re-expressed", h);
        for (int64_t r = 0; st == EL_OK && r < n_rows; r++)
            for (int64_t c = 0; c < dv; c++) m[r * o_in + h * dv + c] = (float)x[c * n_rows + r];
    }
    free(tt);
    free(x);
    free(piv);
    return st;
}
