/* serve_request.h - the body of an OpenAI request to `edgelora serve`, read and checked.
 *
 * Parsing needs nothing but the JSON reader: no model, no adapters (names are resolved by the
 * server afterwards), so the fuzz target (tests/fuzz/fuzz_serve_request.c) runs it alone. */
#ifndef EL_CLI_SERVE_REQUEST_H
#define EL_CLI_SERVE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "edgelora-tools.h"

enum { SERVE_MAX_STOPS = 16, SERVE_MAX_ADAPTERS = 8, SERVE_MAX_N = 16, SERVE_MAX_LOGPROBS = 5 };

typedef enum serve_kind { SERVE_COMPLETION, SERVE_CHAT } serve_kind;

typedef struct serve_adapter_ref {
    char *name;
    float scale;
} serve_adapter_ref;

typedef struct serve_params {
    serve_kind kind;
    char *model;                  /* "model", or NULL when absent */
    char *prompt;                 /* completions: the text after which to continue */
    size_t prompt_len;
    el_chat_message *messages;    /* chat: the conversation (its strings owned here) */
    size_t n_messages;
    serve_adapter_ref adapters[SERVE_MAX_ADAPTERS]; /* "adapters": [{name, scale}] */
    int n_adapters;
    long max_tokens;              /* -1: not given */
    char *stops[SERVE_MAX_STOPS];
    int n_stops;
    el_sampler_params sp;         /* OpenAI's defaults: temperature 1, top_p 1, no top-k */
    bool seed_given;
    int n;                        /* choices, 1..SERVE_MAX_N */
    bool stream, include_usage;   /* "stream", "stream_options": {"include_usage"} */
    int logprobs;                 /* -1: none; else how many alternatives each token lists */
    int speculative;              /* "speculative": -1 not given, 0 false, 1 true */
    bool tree_given;              /* "tree": "auto" or [W1, W2, ...] (it asks for speculation) */
    el_spec_params tree;          /* that tree (seq_id unset) */
} serve_params;

/* An error to send back: HTTP status, OpenAI's "type" and "code", the message. */
typedef struct serve_error {
    int status;
    const char *type, *code;
    char message[512];
} serve_error;

/* Sets e (status 400, invalid_request_error) and returns false. */
bool serve_error_set(serve_error *e, int status, const char *type, const char *code,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Reads body[0..len) as a request of the given kind into p (zeroed first). On a bad request,
 * false with e saying why; p holds nothing then. */
bool serve_params_parse(serve_params *p, serve_kind kind, const char *body, size_t len,
                        serve_error *e);
void serve_params_free(serve_params *p);

#endif
