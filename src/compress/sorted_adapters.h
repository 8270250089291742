/* sorted_adapters.h - LoRA adapters of a model re-expressed for its UniQL-sorted form
 * (compress --lora, docs/uniql.md): sorting moves the MLP channels and the Q/K pairs and turns
 * each V/O head into another basis, so an adapter trained on the original model computes
 * something else on the sorted one until its B rows and A columns follow the same moves
 * (compress/sort.h's el_sort_basis_rows and _cols). The re-expressed adapters are tagged with
 * the sorted model's basis, which the loader checks both ways. */
#ifndef EL_COMPRESS_SORTED_ADAPTERS_H
#define EL_COMPRESS_SORTED_ADAPTERS_H

#include "compress/sort.h"
#include "runtime/adapter.h"

typedef struct el_sorted_adapters {
    int32_t n;
    el_adapter **src;  /* [n] as loaded against the original model */
    char **out;        /* [n] where each is written: DIR/<its name>.gguf */
    float **a, **b;    /* [n][n_layer * EL_N_LINEAR]: each pair's A (rank x n_in) and B
                        * (n_out x rank) in float, re-expressed layer by layer (NULL: no pair) */
    int32_t n_slots;
} el_sorted_adapters;

/* Loads the adapters at paths[0..n) against m (the model being compressed), each to be written
 * to dir: mismatched files, two of one name, and an output that is its own source are refused
 * here, before the long work. */
el_status el_sorted_adapters_load(el_sorted_adapters *s, const el_model *m,
                                  const char *const *paths, int32_t n, const char *dir);

/* Re-expresses every adapter's pairs of layer il in the basis b that layer was sorted into. */
el_status el_sorted_adapters_layer(el_sorted_adapters *s, const el_hparams *hp, int il,
                                   const el_sort_basis *b);

/* Writes adapter i as a GGUF adapter of float A and B to s->out[i], tagged with basis. */
el_status el_sorted_adapters_write(const el_sorted_adapters *s, int32_t i, uint64_t basis);

void el_sorted_adapters_free(el_sorted_adapters *s);

#endif
