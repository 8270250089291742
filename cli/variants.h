/* variants.h - `edgelora run --variants K`: K continuations of one prompt generated together
 * (the concurrent variants of edgelora.h), printed one after another or as one JSON object. */
#ifndef EL_CLI_VARIANTS_H
#define EL_CLI_VARIANTS_H

#include "cli.h"

typedef struct cli_variants_opts {
    long k;               /* 0: a plain run */
    const char *adapters; /* --variant-adapters: comma-separated adapter paths ("" or "-": none) */
    const char *first;    /* --variant-first: '|'-separated first tokens ("": chosen) */
    bool json;            /* run --json */
} cli_variants_opts;

/* The --help lines of the flags. */
extern const char cli_variants_help[];

/* If argv[*i] is one of the flags, consumes it (and its value) and returns 1; 0 if it is not; -1
 * after printing an error. */
int cli_variants_opt(cli_variants_opts *o, int argc, char **argv, int *i);

/* What a run of the variants needs besides the model. n_predict < 0: until EOS or the context's
 * end; ctx 0: prompt + K * n_predict. */
typedef struct cli_variants_run_args {
    const el_binding *lora; /* --lora adapters: the prompt's and every variant's */
    int n_lora;
    el_sampler_params sp;   /* variant i samples with seed sp.seed + i */
    bool ignore_eos;
    long n_predict, ctx, n_batch, threads;
    el_kv_type kv_type;     /* of the KV cache */
} cli_variants_run_args;

int cli_variants_run(const cli_variants_opts *o, const cli_variants_run_args *a, el_model *m,
                     const int32_t *prompt, size_t n_prompt);

#endif
