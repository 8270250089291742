/* batch.h - the requests of `edgelora batch`: read from JSONL, one output line each. */
#ifndef EL_CLI_BATCH_H
#define EL_CLI_BATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "adapters.h"
#include "cli.h"
#include "edgelora-tools.h"

/* One of the continuations of a request with "n". */
typedef struct batch_choice {
    char *text;
    int32_t first_token;
    int32_t n_tokens;
    const char *finish;   /* "eos" or "length" */
} batch_choice;

typedef struct batch_request {
    int line;             /* of the requests file, from 1 */
    char *id_json;        /* the id as JSON text, echoed as given ("null" if unreadable) */
    char *error;          /* set: the request fails with this message (others go on) */
    char *prompt;
    size_t prompt_len;
    long n_predict;       /* -1: until end of generation or the request's context is full */
    bool ignore_eos;
    el_sampler_params sp;
    el_binding *bind;     /* adapters (owned by the folder) and scales */
    int32_t n_bind;
    int32_t n_choices;    /* "n": 0 if absent (one "text"), else K continuations ("choices")
                           * generated together as concurrent variants */
    char *stops[CLI_MAX_STOPS]; /* "stop": the text ends before the first of them */
    int n_stops;
    int speculative;      /* "speculative": -1 not given, 0 false, 1 true */
    bool tree_given;      /* "tree": "auto" or [W1, W2, ...], instead of --tree's */
    el_spec_params tree;  /* the tree it decodes with (--tree's unless it gives one) */

    /* filled by the scheduler */
    int32_t *tokens;      /* prompt, then generated tokens */
    int32_t n_prompt, n_tokens;
    int32_t n_gen_max;    /* tokens it may generate */
    int32_t n_cells;      /* KV cells it may use at most */
    bool speculative_tree; /* it is to decode speculatively, with `tree` (at admission a set
                            * trained for another adapter leaves it plain) */
    char *text;
    const char *finish;   /* "eos" or "length" */
    batch_choice *choices; /* [n_choices] once done */
    double time_ms;
    bool done;
} batch_request;

/* Reads one line (line number `line` of file `path`) into r with the default sampling parameters
 * sp (its seed is the request's unless the request gives one). A request that cannot be served
 * (bad JSON, unknown field, wrong type, unknown adapter or one that does not fit) gets r->error;
 * false only when out of memory. Adapters are looked up in dir (NULL: none given). */
bool batch_request_parse(batch_request *r, const char *path, int line, const char *text,
                         size_t len, const el_sampler_params *sp, cli_lora_dir *dir);
/* Writes r's output line: {"id":..,"text":..,...} or {"id":..,"error":..}. */
void batch_request_write(FILE *out, const batch_request *r);
void batch_request_free(batch_request *r);
/* Sets r->error to "path:LINE: message" unless it has one. Returns false. */
bool batch_request_fail(batch_request *r, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
