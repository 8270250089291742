/* context.h - what an el_context holds: the model it runs, its KV cache, forward scratch, thread
 * pool, and where the last decode's logits are. */
#ifndef EL_RUNTIME_CONTEXT_H
#define EL_RUNTIME_CONTEXT_H

#include "core/threadpool.h"
#include "kernels/lora.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"

/* Step sizes whose times a context keeps: 1..256 rows. */
enum { EL_SPEC_TIME_BUCKETS = 257 };

struct el_context {
    el_model *model;
    el_context_params params;
    el_threadpool *tp;
    el_kv_cache kv;
    el_forward fwd;
    int32_t *cells;        /* [n_batch] cells of the rows being decoded */
    int32_t *out_rows;     /* [n_batch] rows whose logits were asked for */
    int32_t *logit_index;  /* [n_batch] row -> index into fwd.logits, or -1 */
    int32_t last_n_rows;   /* rows of the last successful decode */
    bool cells_current;    /* cells[] still holds those rows (no cache change since) */
    /* adapters bound to each sequence (each holds a reference), and the rows of a batch grouped
     * by binding (rebuilt by every decode into these n_batch-sized arrays) */
    struct el_seq_binding {
        el_binding *items;
        el_lora_term *terms;
        int32_t n;
    } *bind;               /* [n_seq_max] */
    int32_t *row_group;    /* [n_batch] */
    int32_t *group_rows;   /* [n_batch] row indices, group after group */
    el_lora_group *groups; /* [n_batch] */
    int32_t *group_seq;    /* [n_batch] a sequence bound as each group is */
    /* compressed models (model/prune.h): the rate index new sequences take, the one each
     * sequence took at its first decode (-1: none yet, or emptied since), each row's of a batch */
    int32_t prune_rate;
    int32_t *seq_rate;     /* [n_seq_max] or NULL */
    int32_t *row_rate;     /* [n_batch] or NULL */
    /* seconds of a decode step of n rows (0: not measured), kept for every speculative decoder
     * on the context: the model and threads that set them are the context's, so a generation
     * after the first need not time steps again (speculate.c) */
    double spec_seconds[EL_SPEC_TIME_BUCKETS];
};

#endif
