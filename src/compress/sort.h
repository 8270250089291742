/* sort.h - the structured sorting of UniQL (docs/uniql.md): every block's weights reordered
 * or re-parametrized so that the least important channels come last and pruning a rate means
 * keeping a prefix, without changing the block's function. Weights are float matrices of
 * n_out rows of n_in, as stored; correlations are compress/corr.h's. */
#ifndef EL_COMPRESS_SORT_H
#define EL_COMPRESS_SORT_H

#include <stdint.h>

#include "edgelora.h"
#include "model/model.h"

/* The float weights of one block, indexed by el_linear: [n_out][n_in] each. */
typedef struct el_flayer {
    float *w[EL_N_LINEAR];
} el_flayer;

/* Ridge leverage scores of the n x n correlation c: score_i = (c (c + lambda I)^-1)_ii, by a
 * Cholesky factorization of the ridge system (score_i = 1 - lambda ((c + lambda I)^-1)_ii, the
 * diagonal of the inverse from the inverse of its factor), never a pseudo-inverse. */
el_status el_ridge_leverage(const double *c, int64_t n, double lambda, double *score);

/* The ridge of the leverage scores compress uses: `ridge` times the mean of c's diagonal. */
double el_ridge_lambda(const double *c, int64_t n, double ridge);

/* The MLP: intermediate channels in descending ridge leverage of c_mid (the correlation of
 * down's input), gate and up rows and down columns permuted alike, and c_mid permuted with them
 * (for GPTQ of down). perm[s] (may be NULL) is the original channel now at s. */
el_status el_sort_mlp(const el_hparams *hp, el_flayer *l, double *c_mid, double ridge,
                      int32_t *perm);

/* Q and K: in each KV group, the RoPE pairs of the head dimensions in descending importance
 * (the product of the K pair's and the group's Q pairs' output energies w^T c_in w), the same
 * order for the K head and its Q heads. rope_pairs[g * n_rot/2 + p] gets the original pair of
 * stored pair p of group g. Needs n_rot == head_dim_k (every dimension rotated). */
el_status el_sort_qk(const el_hparams *hp, el_flayer *l, const double *c_in, int32_t *rope_pairs);

/* V and O: for each KV head, the SVD of the product of its V rows and the O columns of its
 * group's Q heads, weighted by a Cholesky factor of c_in (so the order is that of the output
 * energy on calibration data); V becomes T V and O's columns O T^-1, with the singular values
 * in the V side, in descending order. c_out (the correlation of O's input) is transformed
 * with them (for GPTQ of O). t_out (may be NULL) gets each KV head's T, [n_head_kv][dv][dv]. */
el_status el_sort_vo(const el_hparams *hp, el_flayer *l, const double *c_in, double *c_out,
                     double *t_out);

/* How sorting changed one block's bases: what re-expresses a matrix acting on them (an adapter's
 * A and B) in the sorted block's. */
typedef struct el_sort_basis {
    const int32_t *mlp_perm; /* [n_ff]: the original intermediate channel now at s */
    const int32_t *qk_pairs; /* [n_head_kv][n_rot/2]: the original pair of stored pair p, or
                              * NULL (Q/K in order) */
    const double *vo_t;      /* [n_head_kv][dv][dv]: KV head j's V output is now t_j times what
                              * it was (el_sort_vo's t_out) */
} el_sort_basis;

/* A matrix with the output rows of linear `which` (n_out rows of n_cols: an adapter's B) as the
 * sorted block's weight has them: gate and up rows permuted, Q and K rows by RoPE pairs, each V
 * head's rows times t; O's and down's rows are unchanged. */
el_status el_sort_basis_rows(const el_hparams *hp, const el_sort_basis *b, el_linear which,
                             float *m, int64_t n_cols);

/* A matrix on the inputs of linear `which` (n_rows rows of n_in: an adapter's A) as the sorted
 * block's weight takes them: down's columns permuted, each head's O columns times t^-1 (refused
 * where t is singular); the other linears' inputs are unchanged. */
el_status el_sort_basis_cols(const el_hparams *hp, const el_sort_basis *b, el_linear which,
                             float *m, int64_t n_rows);

#endif
