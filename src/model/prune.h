/* prune.h - run-time pruning of a UniQL compressed model (docs/formats.md "UniQL",
 * docs/uniql.md).
 *
 * The compressed file holds a table that maps each global pruning rate to the kept size of every
 * matrix of every layer, laid out so that what a rate drops is contiguous in the file: every
 * prunable matrix is stored as pieces at the table's boundaries (row ranges of Q, K, V, gate and
 * up, whose Q/K/V rows are dimension-major so the kept dims of every head come first; column
 * ranges of down and O), and the pieces are ordered by the rate that first drops them, so what
 * a rate drops is one run at the end of the file.
 * The forward pass runs the matmuls on the kept part only and writes its results back in the
 * sorted model's layout with zeros in the dropped channels, so attention, RoPE, adapters and the
 * KV cache see the sorted model's shapes; rows of one batch may run at different rates. */
#ifndef EL_MODEL_PRUNE_H
#define EL_MODEL_PRUNE_H

#include <stdbool.h>
#include <stdint.h>

#include "edgelora.h"
#include "formats/gguf.h"
#include "kernels/matmul.h"
#include "model/model.h"

enum { EL_PRUNE_MAX_RATES = 64 };

/* The rate table: kept sizes of layer il at rate index r are at [r * n_layer + il]. */
typedef struct el_prune_table {
    int32_t n_rates;
    const float *rates;       /* ascending, rates[0] == 0 */
    const int32_t *ff_kept;   /* MLP channels */
    const int32_t *qk_kept;   /* Q/K dims of each head (even) */
    const int32_t *vo_kept;   /* V dims of each KV head, and O columns of each Q head */
    const int32_t *rope_pairs; /* [n_layer][n_head_kv][n_rot/2] original pair of each stored
                                * pair, or NULL: the identity */
} el_prune_table;

/* The block sizes the layout needs of each layer's kept sizes: ff_kept a multiple of ff_gran[il]
 * (down's column pieces are whole blocks), vo_kept * n_head a multiple of o_gran[il] (O's). */
typedef struct el_prune_grain {
    const int32_t *ff_gran; /* [n_layer] */
    const int32_t *o_gran;  /* [n_layer] */
} el_prune_grain;

/* Checks a table against a model's shape: rates ascending from 0 and below 1, the full sizes at
 * rate 0, kept sizes positive, non-increasing in the rate and multiples of the grain, each
 * head's pair index a permutation. Errors name `what` (the file or the plan) and the entry. */
el_status el_prune_table_check(const el_prune_table *t, const el_hparams *hp,
                               const el_prune_grain *g, const char *what);

/* Whether a model needs to run in the layout: the architecture features the layout does not
 * carry (biases, per-head norms, fused projections, partial rotation) are refused, naming what. */
el_status el_prune_shape_check(const el_hparams *hp, bool has_bias, bool has_qk_norm,
                               const char *what);

/* A prunable matrix as pieces: piece j holds its rows (Q, K, V, gate, up) or columns (down, O)
 * [b[j], b[j + 1]) as a weight of its own. */
typedef struct el_prune_pieces {
    int32_t n;
    el_weight *w;    /* [n] */
    int64_t *b;      /* [n + 1] */
} el_prune_pieces;

/* The kept sizes of one layer at one rate. */
typedef struct el_prune_kept {
    int32_t ff, qk, vo;
} el_prune_kept;

typedef struct el_prune {
    el_prune_table table;    /* pointing into the owned arrays below */
    el_prune_pieces *pieces; /* [n_layer * EL_N_LINEAR]: el_linear_slot(il, which) */
    void *owned;             /* the one block the arrays are carved from */
    int32_t context_rate;    /* the rate index new contexts start at (el_model_set_prune) */
} el_prune;

/* The key whose presence marks a compressed file, and its value (the layout's version). */
#define EL_PRUNE_KEY_VERSION "uniql.version"
/* The basis a sorted model's channels are in (model's uniql_basis), and the one an adapter was
 * re-expressed for (el_adapter's uniql_basis) */
#define EL_UNIQL_BASIS_KEY "uniql.basis"
#define EL_ADAPTER_UNIQL_BASIS_KEY "adapter.uniql.basis"
enum { EL_PRUNE_VERSION = 1 };

/* Whether a GGUF file is a compressed one. */
bool el_prune_is_compressed(const gguf_file *f);

/* For the tools that need every weight whole (quantize, merge, calibrate, fine-tune, ...): an
 * error naming the file and the tool when m is a compressed model, else EL_OK. */
el_status el_prune_refuse(const el_model *m, const char *tool);

/* The name of piece j of a linear of layer il: "blk.<il>.attn_q.piece.<j>" (buf of 96 bytes). */
const char *el_prune_piece_name(char *buf, int il, el_linear which, int j);

/* Whether a linear is pruned by columns (down, O: its inputs) rather than rows. */
bool el_prune_by_columns(el_linear which);

/* The rows (or columns) of a linear that rate index r keeps in layer il: its kept dims times the
 * heads that have them (Q n_head, K and V n_head_kv, O n_head; 1 for the MLP). */
int64_t el_prune_kept_count(const el_prune_table *t, const el_hparams *hp, int r, int il,
                            el_linear which);

/* The distinct kept counts of a linear of layer il over the table, ascending: the boundaries of
 * its pieces, b[0] = 0 and b[n] = the full size. Returns n. */
int32_t el_prune_boundaries(const el_prune_table *t, const el_hparams *hp, int il,
                            el_linear which, int64_t *b);

/* The first rate index that drops the piece starting at b0 (n_rates: none does): pieces are laid
 * out in the file by it, the latest dropped first. */
int32_t el_prune_piece_drop(const el_prune_table *t, const el_hparams *hp, int il,
                            el_linear which, int64_t b0);

/* Reads the table of a compressed model and its pieces, after the hyper-parameters and the
 * other weights; m->prune is set, and the layers' seven linears become views of their whole
 * shape without data (the forward runs the pieces; adapters and scratch go by the shapes). */
el_status el_prune_load(el_model *m);
void el_prune_free(el_prune *p);

/* The kept sizes of layer il at rate index r. */
el_prune_kept el_prune_kept_at(const el_prune *p, int n_layer, int r, int il);

/* The index of the smallest table rate at least `rate`; -1 if rate is negative or above the
 * table's last. */
int32_t el_prune_rate_index(const el_prune *p, float rate);

/* Bytes of the model's weights at rate index r (what the kept parts of the mapping hold). */
uint64_t el_prune_weight_bytes(const el_model *m, int32_t r);

/* Releases to the OS the pages of every part dropped at rate index r (madvise MADV_DONTNEED on
 * the page-aligned inside of each dropped range of the read-only mapping) and asks for the kept
 * parts to be read back in ahead of use (MADV_WILLNEED), which matters after a lower rate. The
 * mapping's contents never change: a dropped page another context still reads faults back in. */
void el_prune_release(el_model *m, int32_t r);

#endif
