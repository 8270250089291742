/* serve.h - what the parts of `edgelora serve` share: the server's state and limits
 * (serve.c), its HTTP side (serve_http.c), the JSON it answers with (serve_reply.c). */
#ifndef EL_CLI_SERVE_H
#define EL_CLI_SERVE_H

#include <stdatomic.h>
#include <stdio.h>

#include "serve_adapters.h"
#include "serve_sched.h"

typedef struct serve_server {
    el_model *model;
    const char *model_id;   /* the base's name in "model" and /v1/models */
    const char *chat_template; /* --chat-template, or NULL: the model's own */
    serve_sched *sched;
    serve_adapters *adapters;
    const char *api_key;    /* NULL: no key needed */
    size_t max_body;        /* bytes of a request body */
    int32_t max_prompt;     /* tokens of a prompt */
    int32_t max_tokens;     /* most tokens a request may ask for, and chat's default */
    const el_forecast *forecast; /* --forecast, or NULL: no speculative decoding */
    el_spec_params spec;    /* --tree: the tree of requests that give none */
    int32_t spec_rows;      /* the most rows a request's tree may take a step (--tree's) */
    unsigned timeout_s;     /* a connection idle this long is closed */
    int32_t n_ctx;          /* the scheduler context's cells and KV type (what a memory */
    el_kv_type kv_type;     /* budget must hold besides the weights) */
    long started;           /* Unix time, for "created" */
    atomic_long n_http[6];  /* answers by status class: [2] 2xx, [4] 4xx, [5] 5xx */
    atomic_long seq;        /* for the ids of answers */
    atomic_long in_flight;  /* completion requests accepted and not yet answered */
    atomic_bool draining;   /* SIGTERM came: finishing what is in flight */
    int max_connections;
    int port;               /* the one listened on (--port 0: the system's choice) */
    struct MHD_Daemon *daemon;
} serve_server;

/* Starts the HTTP daemon on host:port (serve_http.c). */
int serve_http_start(serve_server *sv, const char *host, int port);
/* Stops accepting connections; those open go on. */
void serve_http_quiesce(serve_server *sv);
void serve_http_stop(serve_server *sv);

/* The JSON answers (serve_reply.c); each returns a malloc'd string (NULL: out of memory). */
char *serve_reply_error(const serve_error *e);
/* The text written to f, an open_memstream of *buf, which fclose sets (NULL, *buf freed, if
 * the stream failed: out of memory). */
char *serve_memstream_close(FILE *f, char **buf);

/* GET /v1/prune: the rate new requests take, the model's table and the weight bytes of that
 * rate (serve_prune.c). */
char *serve_prune_get(serve_server *sv);
/* POST /v1/prune {"rate": R} or {"mem_budget": BYTES | "auto"}: the rate (rounded up to the
 * table) that requests admitted from now on run at; NULL with e set for a bad body, a model
 * that cannot be pruned, a rate outside the table or a budget no rate fits. */
char *serve_prune_post(serve_server *sv, const char *body, size_t len, serve_error *e);
/* A whole (non-streamed) completion of job j, read under the job lock. */
char *serve_reply_completion(const serve_server *sv, serve_kind kind, const char *id,
                             const char *model, const serve_job *j);
/* A streamed chunk: choice c's text[from..to) and logprobs [lp_from..lp_to), with its finish
 * reason if final; role: chat's first chunk, which only says the role. */
char *serve_reply_chunk(const serve_server *sv, serve_kind kind, const char *id,
                        const char *model, const serve_job *j, int32_t c, size_t from,
                        size_t to, int32_t lp_from, int32_t lp_to, bool final, bool role);
/* The last chunk with stream_options.include_usage: no choices, the usage. */
char *serve_reply_usage_chunk(const serve_server *sv, serve_kind kind, const char *id,
                              const char *model, const serve_job *j);

#endif
