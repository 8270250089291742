/* cli.h - what the subcommands of the edgelora program share: option parsing and reporting.
 * Every subcommand is `int cmd_x(int argc, char **argv)` with argv[0] the subcommand's name; it
 * returns the process exit code (0 ok, 1 failure, 2 bad usage). */
#ifndef EL_CLI_H
#define EL_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "edgelora-tools.h"

int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_compress(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_finetune(int argc, char **argv);
int cmd_train_forecast(int argc, char **argv);
int cmd_train_tokenizer(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_quad(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_uniql_layout(int argc, char **argv);
int cmd_batch(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_adapters(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_train_diffusion(int argc, char **argv);
int cmd_image(int argc, char **argv);
int cmd_finetune_diffusion(int argc, char **argv);
int cmd_train_classifier(int argc, char **argv);
int cmd_eval_image(int argc, char **argv);
int cmd_image_profile(int argc, char **argv);

/* Exit codes. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Prints "edgelora CMD: message" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the library's last error for a failed call. */
int cli_fail(const char *cmd, el_status st);
/* Turns the escapes \n \t \r \\ \" \' and \xHH of s into their characters in place (others
 * stay as written, as llama.cpp's -e leaves them); returns the new length. */
size_t cli_unescape(char *s);
/* Stop strings over the generated text s[0..n): if one occurs, *found and the offset of the
 * first occurrence (the output ends there); if none, the length that can be shown now (all but
 * the longest tail that begins a stop string). Empty stop strings never match. */
size_t cli_stop_scan(const char *s, size_t n, const char *const *stops, int n_stops, bool *found);

/* Warns on stderr when a context of n_ctx tokens passes the model's training context. */
void cli_warn_context(const char *cmd, const el_model_info *info, long n_ctx);
/* The log callback of the program: prints "edgelora: warning: MESSAGE" to stderr. */
void cli_log(void *user, el_log_level level, const char *message);

/* The value after flag argv[*i] (advancing *i), or NULL after printing an error. */
const char *cli_value(const char *cmd, int argc, char **argv, int *i);
/* Strict number parsing: the whole string, within [lo, hi]; prints an error naming the flag. */
bool cli_int(const char *cmd, const char *flag, const char *s, long lo, long hi, long *out);
bool cli_float(const char *cmd, const char *flag, const char *s, double lo, double hi,
               double *out);
bool cli_u64(const char *cmd, const char *flag, const char *s, uint64_t *out);

/* Milliseconds on the monotonic clock. */
double cli_now_ms(void);

/* Reads a whole file (or stdin for "-") into a malloc'd buffer; prints an error on failure. */
char *cli_read_file(const char *cmd, const char *path, size_t *len);

/* Options every model-using command shares: -m, --tokenizer, -t, -c. */
typedef struct cli_model_opts {
    const char *model;
    const char *tokenizer;
    long threads;
    long ctx;
    el_kv_type kv_type; /* --kv-type (cli_kv_opt), of the commands that run a context */
    const char *prune;      /* --prune RATE (cli_kv_opt): a UniQL model's pruning rate */
    const char *mem_budget; /* --mem-budget BYTES|auto (cli_kv_opt): the rate that fits it */
    bool keep_page_cache;   /* --keep-page-cache (cli_kv_opt): el_model_params' */
    const char *profile;    /* --profile FILE (cli_kv_opt): el_model_params.profile_path */
} cli_model_opts;

/* If argv[*i] is one of the shared model options, consumes it (and its value) and returns 1;
 * returns 0 if it is not; -1 after printing an error. */
int cli_model_opt(const char *cmd, cli_model_opts *o, int argc, char **argv, int *i);
/* If argv[*i] is an option of the commands that run a context (run, batch, bench, perplexity,
 * eval, chat): --kv-type f16|f32 (the KV cache's element type), --prune RATE or --mem-budget
 * BYTES|auto (a UniQL compressed model's pruning rate, or the smallest that fits the budget with
 * the KV cache; cli_load_model applies them), --keep-page-cache (the model's 4 KB pages in the
 * page cache are kept: el_model_params.keep_page_cache), --profile FILE (a quantization profile
 * to run under: el_model_params.profile_path), consumes it and its value and returns
 * 1; 0 if it is not; -1 after printing an error. */
int cli_kv_opt(const char *cmd, cli_model_opts *o, int argc, char **argv, int *i);
/* "f16" or "f32". */
const char *cli_kv_type_name(el_kv_type t);

/* The model to use: the given path, else the default model ($EDGELORA_MODEL, or models/base.gguf
 * beside the program, or PREFIX/share/edgelora/models/base.gguf when installed); NULL after an
 * error if there is none. The result may be static storage. */
const char *cli_model_path(const char *cmd, const char *given);
/* Loads o->model, or the default model, at the pruning rate o's --prune or --mem-budget choose. */
int cli_load_model(const char *cmd, const cli_model_opts *o, bool vocab_only, el_model **out);
/* Sets the rate contexts of m start at from o's --prune or --mem-budget. */
el_status cli_apply_prune(const char *cmd, const cli_model_opts *o, el_model *m);

/* Self-speculative decoding: --forecast FILE, --tree auto|W1,W2,... (cli/spec_opts.c). */
typedef struct cli_spec_opts {
    const char *forecast;
    bool on;                 /* --forecast or --tree given */
    el_spec_params params;
} cli_spec_opts;
extern const char cli_spec_help[];
/* 1 if argv[*i] was one of the options (consumed), 0 if not, -1 on a bad value. */
int cli_spec_opt(const char *cmd, cli_spec_opts *o, int argc, char **argv, int *i);
/* The forecast set the options name (*out NULL when speculation is off). */
int cli_spec_load(const char *cmd, cli_spec_opts *o, const el_model *m, const char *model_path,
                  el_forecast **out);

/* Adapters given with --lora FILE / --lora-scaled FILE SCALE (cli/lora_opts.c). */
enum { CLI_MAX_LORA = 64, CLI_MAX_STOPS = 16 };
typedef struct cli_lora_opts {
    const char *paths[CLI_MAX_LORA];
    float scales[CLI_MAX_LORA];
    int n;
} cli_lora_opts;

/* If argv[*i] is --lora or --lora-scaled, consumes it and its values and returns 1; 0 if it is
 * not; -1 after printing an error. */
int cli_lora_opt(const char *cmd, cli_lora_opts *o, int argc, char **argv, int *i);

/* Loads the adapters of o against m into bind[] (CLI_MAX_LORA entries) with their scales;
 * returns the status, and in *n how many were loaded (each to free with el_adapter_free, also
 * after a failure). */
el_status cli_lora_load(const cli_lora_opts *o, const el_model *m, el_binding *bind, int *n);

/* The sampling flags run and chat share (cli/sampling_opts.c). */
typedef struct cli_sampling_opts {
    el_sampler_params sp;
    bool seed_given; /* -s / --seed */
} cli_sampling_opts;
extern const char cli_sampling_help[]; /* their --help lines */
/* If argv[*i] is a sampling flag, consumes it and its value and returns 1; 0 if it is not; -1
 * after printing an error. */
int cli_sampling_opt(const char *cmd, cli_sampling_opts *o, int argc, char **argv, int *i);
/* Without --seed, a seed from the clock, printed to stderr when the sampler draws (temp > 0). */
void cli_sampling_seed(cli_sampling_opts *o);

/* Feeds tokens[0..n) of sequence 0 from position pos in chunks of n_batch rows; only the last
 * row's logits are asked for (row (n - 1) % n_batch of the last el_decode). */
el_status cli_decode_tokens(el_context *ctx, const int32_t *tokens, int32_t n, int32_t pos,
                            int32_t n_batch);

/* What of a generation's text can be shown: given the whole generated text[0..n) so far,
 * returns the end of what can be (the caller shows text[s->shown .. end) and sets s->shown to
 * end). A stop string ends the text where it begins (s->stopped); until the text is final, a
 * tail that may still become a stop string is held back. */
typedef struct cli_stream {
    size_t shown;
    bool stopped;
} cli_stream;
size_t cli_stream_update(cli_stream *s, const char *text, size_t n, const char *const *stops,
                         int n_stops, bool final);

/* The text tokens[n_prompt .. n_tokens) add after the prompt tokens[0 .. n_prompt), as `run`
 * prints it after printing the prompt (malloc'd into *text). */
el_status cli_continuation(const el_model *m, const int32_t *tokens, int32_t n_prompt,
                           int32_t n_tokens, char **text);

/* A request's n choices generated as concurrent variants (cli/choices.c): vp[0 .. n) and *gp
 * for el_variants_start (gp points into vp; on_text and user are left for the caller). */
typedef struct cli_choices {
    int32_t n, seq_id, max_tokens;
    el_sampler_params sp;      /* choice c samples with seed sp.seed + c */
    const el_binding *bind;    /* the prompt's and every choice's adapters */
    int32_t n_bind;
    const char *const *stops;
    int n_stops;
    bool ignore_eos;
} cli_choices;
void cli_choices_params(const cli_choices *ch, el_variant_params *vp, el_variants_params *gp);

/* Tokenizes text with a buffer that grows as needed; *tokens is malloc'd. */
el_status cli_tokenize(const el_model *m, const char *text, size_t len, bool add_special,
                       bool parse_special, int32_t **tokens, size_t *n);

/* Progress of a long write (an el_progress_fn; user is a cli_progress): on a terminal, one
 * line on stderr redrawn after each tensor with tensors done / total, MB written, MB/s and ETA. */
typedef struct cli_progress {
    double start;   /* monotonic seconds when the write began (cli_progress_start) */
    bool tty;       /* stderr is a terminal */
    uint64_t bytes; /* bytes written so far */
} cli_progress;

void cli_progress_start(cli_progress *p);
void cli_progress_update(void *user, int32_t done, int32_t total, uint64_t bytes_done,
                         uint64_t bytes_total);
/* Seconds since cli_progress_start; ends the progress line on a terminal. */
double cli_progress_end(cli_progress *p);

/* The image model's precision called name (NULL: float); false after printing why not. */
bool cli_image_precision(const char *cmd, const char *name, el_image_precision *out);
/* Writes images [rows * cols][28 * 28] as one grey PNG, rows of cols with 2-pixel gaps; false
 * after printing why not. */
bool cli_write_image_grid(const char *cmd, const char *path, const uint8_t *images, int32_t rows,
                          int32_t cols);

/* What the trainers (train, finetune; cli/train.c) share: optimization options, progress bar. */
typedef struct cli_train_opts {
    el_train_params p;
    bool no_plot, quiet, tty;
    int64_t first_step; /* the step before the first this process ran (-1: none yet) */
    float last_loss, last_eval;
    double tokens_per_s;
    const char *unit; /* what the rate counts: "tok" when NULL, "img" for the image model */
} cli_train_opts;
extern const char cli_train_opts_help[];
/* Consumes a shared training option like cli_model_opt (1, 0 or -1). */
int cli_train_opt(const char *cmd, cli_train_opts *o, int argc, char **argv, int *i);
/* Installs the progress bar, the plot path (beside out_path) and Ctrl-C handling. */
void cli_train_begin(cli_train_opts *o, const char *out_path, char *plot, size_t cap);
/* Reports the end of a run (EL_ERR_CANCELLED: interrupted) and frees the file lists; returns the
 * exit code. */
int cli_train_end(const char *cmd, cli_train_opts *o, el_status st, const char *out_path);

/* Perplexity as `edgelora perplexity` (and llama.cpp's perplexity tool) measures it: tokens
 * (the text tokenized with its special tokens) cut into windows of n_ctx, each window's first
 * token overwritten by BOS if the vocabulary adds one, the second half of each scored.
 * n_chunks == 0 in the result means the text is shorter than one window. progress (may be NULL)
 * is called after each window with the perplexity so far. */
typedef struct cli_ppl {
    double sum, sum_sq; /* of the scored tokens' negative log-likelihoods */
    long count;         /* scored tokens */
    size_t n_chunks;
} cli_ppl;
typedef void (*cli_ppl_progress_fn)(void *user, size_t done, size_t total, double ppl);
typedef struct cli_ppl_params {
    int32_t n_ctx, n_threads;
    el_kv_type kv_type;
    const el_binding *bind; /* adapters bound while scoring (n_bind of them), or NULL */
    int32_t n_bind;
    cli_ppl_progress_fn progress;
    void *user;
} cli_ppl_params;
el_status cli_perplexity(el_model *m, const int32_t *tokens, size_t n_tokens,
                         const cli_ppl_params *p, cli_ppl *result);
double cli_ppl_value(const cli_ppl *r); /* exp(mean NLL) */
double cli_ppl_error(const cli_ppl *r); /* its standard error */

#endif
