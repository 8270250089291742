/* eval_gen.h - greedy generation of many prompts at once, for `edgelora eval`. */
#ifndef EL_CLI_EVAL_GEN_H
#define EL_CLI_EVAL_GEN_H

#include <stdbool.h>
#include <stdint.h>

#include "edgelora.h"

/* One generation: a tokenized prompt, the adapters to decode it with (n_bind 0: the bare base)
 * and when to stop. */
typedef struct eval_job {
    const int32_t *prompt;
    int32_t n_prompt;
    const el_binding *bind;
    int32_t n_bind;
    int32_t max_tokens;   /* >= 1 */
    bool stop_at_newline; /* end after the first token whose text holds a newline */
    /* the result */
    char *text;           /* malloc'd: the generated tokens' text, cut before a newline when
                           * stop_at_newline; never holds the end-of-generation token's text */
    int32_t n_generated;
} eval_job;

/* Called after each finished job with the number done. */
typedef void (*eval_gen_progress_fn)(void *user, size_t done, size_t total, long tokens);

/* Runs every job greedily (the most likely token, the lowest id on a tie), up to n_parallel at
 * once in one context of n_parallel sequences of up to `cells_per_seq` KV cells each (fewer if
 * no job needs that many): every step is
 * one el_decode with one row per generating job plus prompt rows of newly started ones. Each
 * job's cells are freed and its adapters unbound when it ends, and the next job takes its
 * sequence. Each job's result equals a single-sequence greedy run (its prompt, then one token at
 * a time). Every job must fit: n_prompt + max_tokens - 1 <= cells_per_seq. kv_type: the KV
 * cache's elements. */
el_status eval_generate(el_model *model, eval_job *jobs, size_t n_jobs, int32_t n_parallel,
                        int32_t cells_per_seq, int32_t n_threads, el_kv_type kv_type,
                        eval_gen_progress_fn progress, void *user);

#endif
