/* data.h - training data: token streams from text or shard files, prompt/response examples from
 * JSONL, and a loader that deals them out in a seeded shuffled order.
 *
 * A loader hands out items of T tokens (inputs, next-token targets, loss mask). For a stream,
 * item i is the window starting at token i*T; for examples, item i is example i (truncated or
 * padded to T; padding is masked out). Each epoch visits every item once in an order drawn from
 * (seed, epoch), so the loader's whole state is (epoch, index): a checkpoint stores those two. */
#ifndef EL_TRAIN_DATA_H
#define EL_TRAIN_DATA_H

#include <stdint.h>

#include "edgelora-tools.h"

typedef struct el_tdata {
    int32_t *ids;
    float *mask;       /* per target position (examples only; NULL for a stream) */
    size_t n, cap;
    int64_t *starts;   /* examples: where each begins in ids; NULL for a stream */
    int64_t n_items;
} el_tdata;

void el_tdata_free(el_tdata *t);

/* Appends the tokens of files: ".u16"/".u32" files are little-endian token ids; anything else is
 * text tokenized with vocab (BOS first if the vocabulary adds one). Ids >= n_vocab are an error. */
el_status el_tdata_load_stream(el_tdata *t, const char *const *files, int32_t n_files,
                         const el_model *vocab, int32_t n_vocab);

/* Reads JSONL prompt/response pairs: tokens BOS? prompt response EOS, loss on response + EOS. */
el_status el_examples_load(el_tdata *t, const char *const *files, int32_t n_files,
                           const el_model *vocab);

typedef struct el_loader {
    const el_tdata *data;
    int32_t T;
    int64_t n_items;
    uint64_t seed;
    int64_t epoch, index;  /* the position: the next item is perm(epoch)[index] */
    int64_t *perm;
    bool shuffle;
} el_loader;

/* Errors if the data holds no item of T tokens. */
el_status el_loader_init(el_loader *l, const el_tdata *data, int32_t T, uint64_t seed,
                         bool shuffle, const char *what);
void el_loader_free(el_loader *l);
/* Moves to a position (from a checkpoint). */
void el_loader_seek(el_loader *l, int64_t epoch, int64_t index);
/* Fills B items: tokens, targets, mask each [B][T]. */
void el_loader_next(el_loader *l, int32_t B, int32_t *tokens, int32_t *targets, float *mask);

#endif
