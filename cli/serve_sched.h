/* serve_sched.h - the scheduler of `edgelora serve`: one thread owns the context and runs
 * continuous batching over the jobs the HTTP threads submit.
 *
 * Every step is one el_decode: one row for each running request (its own adapters bound to its
 * own sequence), then chunks of the prompts of requests admitted since. A job joins between
 * steps when a sequence and its KV cells are free, and leaves when it ends or is cancelled (its
 * cells freed, its sequence unbound). A prompt that begins like a sequence already in the cache
 * with the same adapters (a shared system prompt) shares those cells instead of recomputing
 * them: a running request's, or a finished one's, whose cells are kept (serve_cache.h) until
 * running work needs them. A job with n > 1 choices runs as concurrent variants in n sequences. A speculative job
 * (docs/speculative.md) puts its step's tree of candidates and forecast slots into the shared
 * step instead of one row, and takes every token the tree gives.
 *
 * A job's fields up to `published` are the HTTP side's to set before serve_sched_submit and
 * read-only after; what the scheduler publishes is read under serve_job_lock. */
#ifndef EL_CLI_SERVE_SCHED_H
#define EL_CLI_SERVE_SCHED_H

#include <pthread.h>

#include "cli.h"
#include "serve_request.h"

typedef struct serve_sched serve_sched;

typedef struct serve_choice {
    char *text;            /* the final text so far (never changes once published) */
    size_t len;
    int32_t n_tokens;      /* generated */
    el_token_logprob *lp;  /* [n_lp] when logprobs were asked for */
    int32_t n_lp, cap_lp;
    const char *finish;    /* NULL while running; "stop" or "length" */
} serve_choice;

typedef struct serve_job {
    int32_t *prompt;       /* tokens (owned) */
    int32_t n_prompt;
    el_binding bind[SERVE_MAX_ADAPTERS];
    int32_t n_bind;
    el_sampler_params sp;  /* choice i samples with seed sp.seed + i */
    int32_t max_tokens;    /* of each choice, >= 1 */
    const char *const *stops;
    int n_stops;
    int32_t n_choices;
    int logprobs;          /* -1: none */
    bool speculative;      /* decode with the scheduler's forecast set, this tree (n_choices 1,
                            * no logprobs) */
    el_spec_params spec;   /* its tree (the scheduler sets seq_id) */

    /* published by the scheduler, read under serve_job_lock */
    serve_choice *choices; /* [n_choices] */
    bool done;             /* every choice finished, or failed */
    char error[256];       /* a failure: the job ended with this message */
    uint64_t version;      /* bumped at every publication */
    bool cancelled;        /* set by the HTTP side: the client went away */
    bool spec_ran;         /* it decodes speculatively (a set trained for another adapter
                            * leaves a speculative job to plain decoding) */
    int64_t spec_steps;    /* its speculative steps (after the first token) */
    int64_t spec_accepted; /* drafted tokens they accepted (beyond the one a step gives) */
    int32_t cached_tokens; /* prompt tokens shared from the cache instead of decoded */
    pthread_cond_t cond;
    int refs;
} serve_job;

typedef struct serve_sched_params {
    el_model *model;
    int32_t n_ctx, n_parallel, n_batch, n_threads;
    el_kv_type kv_type;
    int32_t queue_max;     /* jobs waiting at most (more: serve_sched_submit refuses) */
    int32_t n_prompt_rows; /* prompt rows a step takes at most while others generate */
    int32_t n_cache;       /* finished requests whose cells are kept for prefix reuse (0: none) */
    const el_forecast *forecast; /* for speculative jobs, or NULL (it must outlive the
                                  * scheduler); n_batch >= n_parallel * every job's
                                  * el_spec_max_rows, so that all trees fit in a step */
} serve_sched_params;

typedef struct serve_stats {
    int64_t requests, prompt_tokens, gen_tokens, reused_tokens, steps;
    int64_t spec_requests, spec_steps, spec_accepted; /* as a job's spec_ fields, summed */
    double step_seconds;
    double sched_seconds;  /* the scheduler's own work with the lock held, between decodes */
    int64_t cache_evicted; /* kept entries evicted for room */
    int32_t queued, running, kv_cells;
    int32_t kv_used;       /* cells running requests see */
    int32_t kv_cached;     /* cells only kept entries see (free for running work on demand) */
    int32_t cache_entries;
    float prune_rate;      /* the pruning rate new requests take */
} serve_stats;

/* Creates the context and starts the thread. */
el_status serve_sched_create(const serve_sched_params *p, serve_sched **out);
/* Drains: waits until every job submitted has ended, then stops the thread and frees all. */
void serve_sched_free(serve_sched *s);

/* A job with room for n_choices (zeroed; one reference, the caller's). */
serve_job *serve_job_new(int32_t n_choices);
/* Hands j to the scheduler (which takes a reference of its own). false: the queue is full, or
 * the job needs more cells than the context has (*too_big), or the server is draining. */
bool serve_sched_submit(serve_sched *s, serve_job *j, bool *too_big);
/* Drops a reference; the last frees the job. */
void serve_job_release(serve_sched *s, serve_job *j);
/* The lock published fields are read under, and waiting for the next publication (false if
 * timeout_ms passed first). */
void serve_job_lock(serve_sched *s);
void serve_job_unlock(serve_sched *s);
bool serve_job_wait(serve_sched *s, serve_job *j, uint64_t seen, int timeout_ms);
/* The client went away: the job ends at the next step and its cells are freed. */
void serve_job_cancel(serve_sched *s, serve_job *j);

/* Adapter a was removed (DELETE): the kept cells computed with it go, and no request that
 * used it is kept, so that it is freed after its last request. */
void serve_sched_forget_adapter(serve_sched *s, const el_adapter *a);

void serve_sched_get_stats(serve_sched *s, serve_stats *out);
/* The pruning rate of a UniQL compressed model that requests admitted from now on run at (a
 * rate of its table, checked by the caller); requests in flight finish at theirs. */
void serve_sched_set_prune(serve_sched *s, float rate);
/* Seconds until a sequence is expected to free (for Retry-After): at least 1. */
int serve_sched_retry_after(serve_sched *s);

#endif
