/* bench.h - what `edgelora bench` (bench.c) and its concurrent-variants mode (bench_variants.c)
 * share: the options, the tokens they decode, CPU time, median-and-range summaries, the start
 * of their JSON objects. */
#ifndef EL_CLI_BENCH_H
#define EL_CLI_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"

typedef struct bench_stat {
    double med, min, max;
} bench_stat;

enum { BENCH_MAX_ROWS = 64, BENCH_MAX_ROW_COUNTS = 32 };

typedef struct bench_opts {
    cli_model_opts mo;
    long n_prompt, n_gen, n_batch, n_ubatch, reps; /* n_ubatch 0: the library's default */
    long variants; /* > 0: measure K concurrent variants against one (bench_variants) */
    int32_t rows[BENCH_MAX_ROW_COUNTS]; /* --rows: the step sizes to measure (bench_rows) */
    int n_rows;
    cli_lora_opts lora; /* adapters bound to the measured sequence */
    cli_spec_opts spec; /* --forecast, --tree: speculative against plain (bench_spec) */
    const char *prompts_path; /* --prompts: the texts bench_spec decodes from */
    const char *record_path;  /* --record: bench_spec writes its steps here */
    const char *replay_path;  /* --replay: times recorded steps (bench_replay) */
    bool json;
} bench_opts;

/* Any tokens do for speed: n of a fixed pseudo-random sequence over the vocabulary. */
void bench_tokens(int32_t *toks, size_t n, int32_t n_vocab);
/* CPU time of the process, all threads: the work done, whatever else shares the cores. */
double bench_cpu_seconds(void);
/* Median, min and max of n values (sorted in place). */
bench_stat bench_summarize(double *v, int n);
/* `{"model": .., "type": .., "threads": .., "n_prompt": .., "n_gen": .., "reps": .., "kv_type":
 * ..` on stdout: what both JSON objects begin with. */
void bench_json_begin(const bench_opts *o, const char *type, int32_t threads);
/* `, "name": med, "name_min": min, "name_max": max` on stdout. */
void bench_json_stat(const char *name, bench_stat s);

/* The concurrent-variants measurement on a loaded model (load_ms: its load times, for the
 * report); prints the table or the JSON object. Returns the process exit code. */
int bench_variants(const bench_opts *o, el_model *m, int32_t threads, uint64_t file_bytes,
                   bench_stat load_ms);

/* The steps of R rows for each R of o->rows, next to their memory and compute floors; prints
 * the table or the JSON object. Returns the process exit code. */
int bench_rows(const bench_opts *o, el_model *m, int32_t threads);

/* Speculative against plain greedy decoding over o->prompts_path, alternated; the text checked
 * identical; the steps written to o->record_path if set. */
int bench_spec(const bench_opts *o, el_model *m, int32_t threads);
/* The steps of a trace (--record) decoded on this model against as many plain steps. */
int bench_replay(const bench_opts *o, el_model *m, int32_t threads);

#endif
