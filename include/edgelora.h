/*
 * edgelora.h - the public C API of edgelora: one frozen, quantized base model serving many
 * tasks through LoRA adapters bound at run time.
 *
 * Conventions
 *  - Every object is an opaque handle made by a `create` or `load` call and released by its `free`.
 *  - Every call that can fail returns an el_status; on failure el_last_error() gives a readable
 *    message (naming the file and the problem where there is one). The library never prints and
 *    never exits; warnings go to the callback el_log_set installs, if any.
 *  - Thread safety: a loaded el_model is read-only and may be shared by any number of threads and
 *    contexts. An el_context (KV cache, scratch, bound adapters) and an el_sampler belong to one
 *    thread at a time. el_last_error() is per thread.
 *
 * This is what an application that runs models needs; it links libedgelora (libc, libm and
 * pthreads only). Conversion, merging, quantization, training, file descriptions, measurement
 * and the JSON reader are in edgelora-tools.h (libedgelora-tools, which links OpenBLAS).
 */
#ifndef EDGELORA_H
#define EDGELORA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EL_VERSION_STRING "0.1.0"

typedef enum el_status {
    EL_OK = 0,
    EL_ERR_INVALID_ARG,   /* a bad argument or option value */
    EL_ERR_IO,            /* a file could not be opened, read or written */
    EL_ERR_FORMAT,        /* a file is truncated, corrupted or not what it claims to be */
    EL_ERR_UNSUPPORTED,   /* a valid file or request that this version cannot handle */
    EL_ERR_NOMEM,         /* an allocation failed */
    EL_ERR_CONTEXT_FULL,  /* the KV cache has no free cells for the batch */
    EL_ERR_MISMATCH,      /* an adapter or file does not fit the model it is used with */
    EL_ERR_NOT_FOUND,     /* a named item (key, tensor, adapter) does not exist */
    EL_ERR_CANCELLED,     /* a caller's callback stopped the call (edgelora-tools.h's long runs) */
} el_status;

/* The message of the last failed call on this thread ("" if none). */
const char *el_last_error(void);
/* A short fixed name for a status ("ok", "format error", ...). */
const char *el_status_name(el_status st);

/* How serious a logged message is. */
typedef enum el_log_level {
    EL_LOG_WARNING, /* a file was accepted, but something in it was ignored or replaced */
} el_log_level;

/* Receives each message the libraries log, without a trailing newline, on the thread that
 * logged it (possibly several threads at once). */
typedef void (*el_log_fn)(void *user, el_log_level level, const char *message);

/* Installs fn (NULL: none, the default; messages are then dropped) for every thread. Safe to call
 * while other threads load files; a message being logged meanwhile goes to the old or new one. */
void el_log_set(el_log_fn fn, void *user);

/* ------------------------------------------------------------------ model */

typedef struct el_model el_model;

typedef struct el_model_params {
    const char *tokenizer_path; /* llama2.c checkpoints: the tokenizer.bin to use (NULL: none) */
    bool vocab_only;            /* load only the tokenizer (vocab-only GGUFs work either way) */
    bool ignore_act_scales;     /* quantize int8 activations per token even where the file
                                 * stores static scales (which are then not read or checked) */
    bool keep_page_cache;       /* a model of 64 MB or more that the page cache holds in 4 KB
                                 * pages is read in again into 2 MB ones, which decoding reads
                                 * 15-30% faster: its cached pages that no process maps are
                                 * dropped first (docs/bench.md, "Page size"). true: keep them,
                                 * and the 4 KB pages */
    const char *profile_path;   /* a quantization profile (`edgelora profile`, a GGUF) to run
                                 * under: its static int8 activation scales replace the file's,
                                 * and adapters loaded for the model are quantized to int8 with
                                 * its scales (docs/formats.md). NULL: none */
} el_model_params;

el_model_params el_model_default_params(void);

/* Loads a GGUF file or a llama2.c checkpoint (detected from the file's contents). The weights are
 * mapped read-only and never written. */
el_status el_model_load(const char *path, const el_model_params *params, el_model **out);
void el_model_free(el_model *model);

typedef struct el_model_info {
    const char *arch;         /* "llama", "qwen2", ... */
    const char *name;         /* general.name or the file name */
    int32_t n_vocab;
    int32_t n_embd;
    int32_t n_layer;
    int32_t n_head;
    int32_t n_head_kv;
    int32_t n_ff;
    int32_t n_ctx_train;
    int64_t n_params;
    uint64_t weight_bytes;    /* bytes of all weight tensors as stored */
    bool has_weights;         /* false for a vocab-only file */
} el_model_info;

el_status el_model_get_info(const el_model *model, el_model_info *out);

/* -------------------------------------------------------------- tokenizer */

/* Tokenizes len bytes of text (any bytes: invalid UTF-8 is handled, never rejected).
 * add_special adds BOS/EOS as the vocabulary's settings say; parse_special turns text that spells a
 * special or control token into that token (otherwise it is plain text).
 * On return *n_tokens is the number of tokens the text needs; if it exceeds cap, nothing useful
 * is in tokens and EL_ERR_INVALID_ARG is returned, so call again with a larger buffer. */
el_status el_tokenize(const el_model *model, const char *text, size_t len, bool add_special,
                      bool parse_special, int32_t *tokens, size_t cap, size_t *n_tokens);

/* Writes the text of one token (not NUL-terminated) into buf; *len is the length it needs.
 * Special tokens give their text only if render_special. Returns EL_ERR_INVALID_ARG if cap is
 * too small (with *len set) or the token id is out of range. */
el_status el_token_to_piece(const el_model *model, int32_t token, bool render_special, char *buf,
                            size_t cap, size_t *len);

/* Turns tokens back into text (a malloc'd, NUL-terminated string the caller frees with free()).
 * With remove_leading_space, the space a SentencePiece vocabulary put before the first word is
 * dropped, so that detokenize(tokenize(text)) == text. */
el_status el_detokenize(const el_model *model, const int32_t *tokens, size_t n, bool render_special,
                        bool remove_leading_space, char **text);

int32_t el_token_bos(const el_model *model); /* -1 if the vocabulary has none */
/* Whether el_tokenize with add_special starts the text with BOS (the vocabulary's
 * add_bos_token; Qwen2's, for one, has a BOS it does not add). */
bool el_token_adds_bos(const el_model *model);
int32_t el_token_eos(const el_model *model); /* -1 if the vocabulary has none */
bool el_token_is_eog(const el_model *model, int32_t token); /* end of generation (EOS, EOT, ...) */

/* ---------------------------------------------------------- chat templates */

/* One turn of a conversation: role "system", "user" or "assistant" (others are written as given
 * where the template has a place for them), and its text. */
typedef struct el_chat_message {
    const char *role;
    const char *content;
} el_chat_message;

/* The conversation as the text the model's chat template makes of it, to be tokenized with
 * add_special and parse_special (the text has no BOS: tokenizing adds it), ending with the start
 * of the assistant's reply if add_assistant. tmpl chooses the template: NULL for the model's own
 * (tokenizer.chat_template), or a name (el_chat_template_name), or a Jinja template's text,
 * recognized by its markers as one of the families edgelora writes (docs/formats.md); an
 * unknown one is EL_ERR_INVALID_ARG with a message naming the choices. *text is malloc'd; free
 * it with free(). */
el_status el_chat_apply(const el_model *model, const char *tmpl, const el_chat_message *msgs,
                        size_t n, bool add_assistant, char **text);

/* The name of the family tmpl (or, if NULL, the model's own template) is recognized as. */
el_status el_chat_template_family(const el_model *model, const char *tmpl, const char **name);

/* The names of the templates edgelora writes ("chatml", "llama3", ...); NULL past the last. */
const char *el_chat_template_name(size_t i);

/* ---------------------------------------------------------------- context */

/* A context holds one KV cache and the scratch of one forward pass. Several sequences (ids
 * 0..n_seq_max-1) live in one context; cells of the cache may be visible to several sequences. */
typedef struct el_context el_context;

/* The element type of the keys and values a context's KV cache stores. fp16 (the default, as in
 * llama.cpp) halves the cache's memory and the bytes attention reads per token; rounding each
 * element to fp16's 11-bit significand (relative error <= 2^-11) moves the logits slightly (a
 * few 1e-4 of their largest magnitude on the test models). float32 stores them exactly. */
typedef enum el_kv_type {
    EL_KV_F16 = 0,
    EL_KV_F32 = 1,
} el_kv_type;

typedef struct el_context_params {
    int32_t n_ctx;      /* KV cells (0: the model's training context, capped at 4096) */
    int32_t n_batch;    /* most rows per el_decode call */
    int32_t n_ubatch;   /* most rows the forward runs at once (0: 128; at most n_batch): a
                         * larger batch goes through in chunks, with the same results, in
                         * scratch of this size */
    int32_t n_seq_max;  /* most sequences */
    int32_t n_threads;  /* 0: all cores */
    el_kv_type kv_type; /* of the KV cache (default EL_KV_F16); el_kv_cell_bytes tells the size */
} el_context_params;

el_context_params el_context_default_params(void);
el_status el_context_create(el_model *model, const el_context_params *params, el_context **out);
void el_context_free(el_context *ctx);

/* A batch of rows for one forward pass. Row i is the token token[i] (or, where token is NULL or
 * token[i] < 0, the vector embd[i*n_embd ... ]) at position pos[i] of sequence seq_id[i].
 * A row attends to the cells of its sequence with a position not after its own, including the
 * rows of this batch. If parent is not NULL, rows of this batch are a tree: row i sees, among this
 * batch's rows, only itself and its ancestors (parent[i] is a row index < i, or -1 for a row that
 * hangs directly below the sequence's cached cells). logits[i] != 0 asks for row i's logits. */
typedef struct el_batch {
    int32_t n_rows;
    const int32_t *token;   /* [n_rows] or NULL */
    const float *embd;      /* [n_rows * n_embd] or NULL */
    const int32_t *pos;     /* [n_rows] */
    const int32_t *seq_id;  /* [n_rows] */
    const int32_t *parent;  /* [n_rows] or NULL */
    const int8_t *logits;   /* [n_rows] or NULL: only the last row's logits */
} el_batch;

/* Runs the model over the batch: writes each row's K/V into the cache, computes the requested
 * logits. On failure the cache is as it was before the call. */
el_status el_decode(el_context *ctx, const el_batch *batch);

/* The logits (n_vocab floats) of row `row` of the last el_decode, or NULL if not requested. */
const float *el_get_logits(el_context *ctx, int32_t row);

/* Cache management. Positions [p0, p1) of a sequence; p1 < 0 means "to the end". */
el_status el_kv_seq_remove(el_context *ctx, int32_t seq_id, int32_t p0, int32_t p1);
/* Makes the cells of src in [p0, p1) visible to dst too, without copying anything. */
el_status el_kv_seq_share(el_context *ctx, int32_t src, int32_t dst, int32_t p0, int32_t p1);
/* Frees the cells that rows[0..n-1] of the last el_decode were written to, whatever sequences
 * see them: the rejected candidates of a speculative tree (a row already freed: nothing). Only
 * until the cache next changes otherwise (another decode, a sequence removed or shared, a
 * clear); after that it is EL_ERR_INVALID_ARG. */
el_status el_kv_remove_rows(el_context *ctx, const int32_t *rows, int32_t n);
void el_kv_clear(el_context *ctx);
int32_t el_kv_used_cells(const el_context *ctx);
/* The cells at least one sequence of [seq0, seq1) sees (a cell shared with a sequence outside
 * counts too): of el_kv_used_cells, those that removing every other sequence would keep. */
int32_t el_kv_seqs_cells(const el_context *ctx, int32_t seq0, int32_t seq1);
int32_t el_kv_seq_pos_max(const el_context *ctx, int32_t seq_id); /* -1 if empty */
size_t el_kv_cell_bytes(const el_context *ctx); /* bytes of K and V one cell holds (kv_type's) */

/* ---------------------------------------------------------------- pruning
 * A UniQL compressed model (docs/uniql.md) runs at any pruning rate of its file's table: the
 * matmuls read only the kept part of each weight. A context has a rate that new requests take: a
 * sequence keeps the rate it had at its first el_decode until it is emptied (el_kv_seq_remove of
 * all its cells, el_kv_clear), so lowering or raising the rate while serving changes nothing for
 * requests in flight. A sequence el_kv_seq_share fills takes the rate of its source. */

/* The rates the model's file supports, ascending from 0, in *rates (the model's storage); returns
 * their number, 0 for a model that cannot be pruned. */
int32_t el_model_prune_rates(const el_model *model, const float **rates);

/* Bytes of weights the model reads at `rate` (rounded up to a rate of the table, as
 * el_context_set_prune does): what stays resident once the dropped parts are released. */
el_status el_model_prune_bytes(const el_model *model, float rate, uint64_t *bytes);

/* Sets the rate new sequences of ctx run at: rounded up to the next rate of the table, an error
 * naming the table's range for one outside it (or for a model that cannot be pruned, unless 0).
 * The memory of the parts no sequence of ctx uses any more is released to the OS (madvise on the
 * read-only mapping; a part read again is faulted back in). */
el_status el_context_set_prune(el_context *ctx, float rate);
/* The rate contexts created on the model from now on start at (0 at load), checked and rounded
 * as above; for programs that choose one rate for everything they run. */
el_status el_model_set_prune(el_model *model, float rate);
float el_context_get_prune(const el_context *ctx); /* the table rate new sequences take */

/* The memory available to this process now: MemAvailable of /proc/meminfo, lowered to the room
 * left under the cgroup's limit (v2 memory.max, or v1 memory.limit_in_bytes) if there is one. */
el_status el_mem_available(uint64_t *bytes);

/* The smallest table rate at which the model's weights and the KV cache of a context created
 * with params fit in `budget` bytes, into *rate; EL_ERR_INVALID_ARG when none does, the message
 * naming the smallest budget that would. A model that cannot be pruned has the one rate 0. */
el_status el_model_prune_fit(const el_model *model, const el_context_params *params,
                             uint64_t budget, float *rate);

/* ---------------------------------------------------------------- sampler */

typedef struct el_sampler el_sampler;

typedef struct el_sampler_params {
    float temperature;     /* <= 0: greedy */
    int32_t top_k;         /* <= 0: off */
    float top_p;           /* >= 1: off */
    float min_p;           /* <= 0: off */
    float repeat_penalty;  /* 1: off */
    int32_t repeat_last_n; /* tokens the penalty looks back on */
    uint64_t seed;
} el_sampler_params;

el_sampler_params el_sampler_default_params(void);
el_status el_sampler_create(const el_sampler_params *params, int32_t n_vocab, el_sampler **out);
void el_sampler_free(el_sampler *s);
/* Picks a token from logits (n_vocab floats; not modified). */
el_status el_sampler_sample(el_sampler *s, const float *logits, int32_t *token);
/* Records a token (prompt or generated) for the repetition penalty. */
void el_sampler_accept(el_sampler *s, int32_t token);

/* A token's log-probability under the model's distribution (the softmax of a row of raw logits,
 * before temperature, penalties or filters: what OpenAI's logprobs report), and the n_top most
 * likely tokens with theirs, most likely first (equal logits: the lower id first). */
enum { EL_MAX_TOP_LOGPROBS = 20 };
typedef struct el_token_logprob {
    int32_t token;
    float logprob;
    int32_t n_top;
    int32_t top_token[EL_MAX_TOP_LOGPROBS];
    float top_logprob[EL_MAX_TOP_LOGPROBS];
} el_token_logprob;

/* out for token under logits[n_vocab]; 0 <= n_top <= min(EL_MAX_TOP_LOGPROBS, n_vocab). */
el_status el_token_logprobs(const float *logits, int32_t n_vocab, int32_t token, int32_t n_top,
                            el_token_logprob *out);

/* --------------------------------------------------------------- adapters */

/* A LoRA adapter: low-rank terms added to some of the base model's linear layers at run time.
 * The base weights are never modified. An adapter is made for one model and checked against it
 * (architecture, tensor names, shapes); different adapters may have different ranks and target
 * different layers. Adapters are reference-counted: el_adapter_free drops the caller's
 * reference, and a context that binds an adapter keeps it alive until unbound. Loading and
 * freeing adapters is safe while other threads decode with other contexts. */
typedef struct el_adapter el_adapter;

/* Loads a GGUF LoRA adapter (general.type = adapter) or a Hugging Face PEFT adapter (a folder
 * with adapter_config.json and adapter_model.safetensors, or either of those files). Under a
 * model's quantization profile (el_model_params.profile_path) its A and B are quantized to int8
 * with the profile's scales and its terms computed in integers; values beyond the profile's
 * range are clamped, counted in el_adapter_info and reported with a warning. An adapter tuned
 * for another profile (a GGUF with adapter.profile) is refused. Otherwise float32 matrices are
 * held as float16 where float16 keeps every value within 2^-11 of the matrix's largest (half the
 * bytes each decode step reads; el_adapter_info.bytes says what is held). */
el_status el_adapter_load(const el_model *model, const char *path, el_adapter **out);
void el_adapter_free(el_adapter *adapter);

typedef struct el_adapter_info {
    const char *name;      /* file name without extension (or the folder's name) */
    const char *format;    /* "gguf" or "peft" */
    float alpha;           /* as stored (0 if absent) */
    int32_t n_targets;     /* linear layers it changes */
    int32_t rank_max;      /* largest rank of any target */
    uint64_t bytes;        /* memory it holds */
    bool profiled;         /* quantized to int8 with the scales of the model's profile */
    uint64_t n_values;     /* values so quantized */
    uint64_t n_clipped;    /* of those, the ones beyond the profile's range (clamped to it) */
} el_adapter_info;

el_status el_adapter_get_info(const el_adapter *adapter, el_adapter_info *out);

/* One adapter and the scale its terms are multiplied by (on top of alpha / rank). */
typedef struct el_binding {
    el_adapter *adapter;
    float scale;
} el_binding;

/* Binds adapters to a sequence of a context: every row of that sequence gets the sum of their
 * terms from the next el_decode on. n = 0 unbinds. Costs nothing proportional to the model. */
el_status el_context_bind(el_context *ctx, int32_t seq_id, const el_binding *bindings, int32_t n);

/* ------------------------------------------------------ concurrent variants */

/* K continuations ("variants") of one prompt generated together, e.g. reply suggestions in
 * different styles. The prompt is decoded once, into the group's first sequence, and its cells are
 * made visible to the other K-1 sequences (el_kv_seq_share: stored once, nothing copied). Each
 * variant gets a distinct first token, then decodes on in its own sequence with its own sampler,
 * adapters and stop conditions. All running variants advance together, one el_decode per step
 * with one row per variant (the weights are read once per step); a variant that ends leaves the
 * group, which shrinks until none runs.
 *
 * First tokens are chosen from the logits after the prompt, in this order: variants with a forced
 * first_token take it (forced tokens need not be distinct); then variants with a first_allowed
 * mask, then the others, each in index order, take a token no variant has taken yet:
 *  - EL_FIRST_TOP (default): the most likely token that the variant's own sampler could pick
 *    (after its repetition penalty, top-k, top-p and min-p; every token when greedy). With greedy
 *    samplers the variants start with the K most likely tokens.
 *  - EL_FIRST_SAMPLE: a draw from the variant's sampler with the taken tokens removed.
 * End-of-generation tokens are never chosen (unless the variant has ignore_eos): a variant that
 * ends before it starts is no suggestion. If a variant finds no token left, el_variants_start
 * fails with EL_ERR_INVALID_ARG and a message saying how many tokens its filters allowed: ask for
 * fewer variants, widen the filters (or use greedy), or give masks or forced tokens.
 * A variant's adapters apply to its own tokens, from its first token on; the shared prompt is
 * decoded with prompt_bindings (none: the base model). So variant i equals a single-sequence run
 * that decodes the prompt with prompt_bindings, then binds variant i's adapters, feeds the same
 * first token and samples on with the same sampler settings and seed. K = 1 with a greedy sampler
 * (or EL_FIRST_SAMPLE) is a plain run.
 *
 * The group uses sequences seq_id .. seq_id+K-1 of the context, which must be empty, and binds
 * their adapters; the context needs n_seq_max >= seq_id+K, n_batch >= K and free cells for the
 * prompt plus every variant's max_tokens - 1 (checked up front: a group never runs out midway).
 * el_variants_free removes the group's cells and bindings. KV memory: the prompt's cells once,
 * plus one cell per decoded token of each variant (el_variant_result.n_cells).
 * A model without a vocabulary (a GGUF with no tokenizer) gives tokens and empty texts. */
typedef struct el_variants el_variants;

typedef enum el_finish {
    EL_FINISH_NONE = 0,  /* still running */
    EL_FINISH_EOS,       /* an end-of-generation token (not in text or tokens) */
    EL_FINISH_STOP,      /* a stop string appeared: text ends before it, tokens keep the token
                          * that completed it */
    EL_FINISH_LENGTH,    /* max_tokens generated */
} el_finish;

typedef enum el_first_policy {
    EL_FIRST_TOP = 0,    /* the most likely token still free (deterministic) */
    EL_FIRST_SAMPLE,     /* a draw from the sampler among the tokens still free */
} el_first_policy;

typedef struct el_variant_params {
    el_sampler_params sampler;    /* this variant's sampling settings and seed */
    const el_binding *bindings;   /* its adapters (copied by el_variants_start), or NULL */
    int32_t n_bindings;
    int32_t first_token;          /* >= 0: start with this token; -1: choose one */
    const uint8_t *first_allowed; /* [n_vocab], nonzero = may be chosen first; NULL: any */
    int32_t max_tokens;           /* tokens to generate, >= 1 */
    const char *const *stop;      /* stop strings (copied), or NULL */
    int32_t n_stop;
    bool ignore_eos;              /* end-of-generation tokens are ordinary tokens */
} el_variant_params;

/* Sampler defaults, no adapters, first token chosen, 128 tokens, no stop strings. */
el_variant_params el_variant_default_params(void);

/* Called with each variant's new text as soon as it is final (text that may be the start of a
 * stop string is held back until it is not). Not NUL-terminated; valid during the call. */
typedef void (*el_variant_text_fn)(void *user, int32_t variant, const char *text, size_t len);

typedef struct el_variants_params {
    int32_t n_variants;                /* K >= 1 */
    const el_variant_params *variants; /* [K] */
    int32_t seq_id;                    /* first of the K sequences */
    el_first_policy first;
    const el_binding *prompt_bindings; /* adapters for the shared prompt, or NULL */
    int32_t n_prompt_bindings;
    el_variant_text_fn on_text;        /* or NULL */
    void *user;
    bool logprobs;                     /* every generated token's el_token_logprobs, in
                                        * el_variant_result.logprobs (default false) */
    int32_t top_logprobs;              /* with logprobs: alternatives each holds,
                                        * 0..EL_MAX_TOP_LOGPROBS (default 0) */
    int32_t n_past;                    /* prompt tokens already in sequence seq_id's cells
                                        * (positions 0 .. n_past-1, computed with
                                        * prompt_bindings; el_kv_seq_share from another
                                        * sequence, say): only the rest is decoded.
                                        * 0 <= n_past < n_prompt; default 0 */
} el_variants_params;

el_variants_params el_variants_default_params(void);

/* Decodes the prompt (n_prompt >= 1 tokens, BOS included if wanted; those after n_past) and
 * chooses the first tokens. Parameters refused (EL_ERR_INVALID_ARG, EL_ERR_CONTEXT_FULL) leave
 * the context as it was; a failure after that leaves the K sequences empty (n_past's cells
 * too). */
el_status el_variants_start(el_context *ctx, const el_variants_params *params,
                            const int32_t *prompt, int32_t n_prompt, el_variants **out);
/* One step: one el_decode for all running variants, then each samples its next token. */
el_status el_variants_step(el_variants *g);
/* Running variants (0: done). */
int32_t el_variants_running(const el_variants *g);
/* start, then step until done (on failure *out is NULL and the context as before). */
el_status el_variants_generate(el_context *ctx, const el_variants_params *params,
                               const int32_t *prompt, int32_t n_prompt, el_variants **out);

/* For callers that put the group's rows into their own batches (continuous batching): writes the
 * rows of the next step, one per running variant, into token/pos/seq_id[0 .. return value).
 * Decode them with their logits requested, then call el_variants_accept with the index of the
 * first of them in that batch. */
int32_t el_variants_next_rows(el_variants *g, int32_t *token, int32_t *pos,
                              int32_t *seq_id);
el_status el_variants_accept(el_variants *g, int32_t first_row);

typedef struct el_variant_result {
    const char *text;       /* the continuation (after the prompt's text), NUL-terminated */
    size_t text_len;
    int32_t first_token;
    const int32_t *tokens;  /* generated tokens, first_token first */
    int32_t n_tokens;
    int32_t n_cells;        /* KV cells the variant holds beyond the shared prompt */
    el_finish finish;
    const el_token_logprob *logprobs; /* [n_tokens] if the group was asked for them, else NULL */
} el_variant_result;

/* Variant i's state so far; the pointers stay valid until the next step or el_variants_free. */
el_status el_variants_result(const el_variants *g, int32_t i, el_variant_result *out);
/* Frees the group, its KV cells (prompt and variants) and its sequences' adapter bindings. */
void el_variants_free(el_variants *g);

/* ------------------------------------------- self-speculative decoding (DS2D) */

/* A forecast set: n_slots learned vectors of n_embd floats. Appended after a token as batch rows
 * of embd (slot j at the token's position + j, each the child of the one before in a tree
 * batch), they make the forward pass that computes the next token also guess the ones after it:
 * slot j's logits predict the token j + 1 positions after the token it follows. A set is trained
 * for one base model (`train-forecast`), and maybe for one adapter; it is refused for another
 * model (el_forecast_load) and for a sequence bound otherwise (el_spec_create). */
typedef struct el_forecast el_forecast;

/* Loads a forecast GGUF (general.type = "forecast", docs/formats.md) made for this model. */
el_status el_forecast_load(const el_model *model, const char *path, el_forecast **out);
/* A set of n_slots vectors [n_slots * n_embd] (copied), for this model and no adapter. */
el_status el_forecast_create(const el_model *model, int32_t n_slots, const float *vectors,
                             el_forecast **out);
void el_forecast_free(el_forecast *f);
int32_t el_forecast_n_slots(const el_forecast *f);

/* Speculative decoding of one sequence: each step decodes the pending token, a tree of
 * candidates for the tokens after it (drafted by the forecast slots of the step before) and
 * forecast slots after every candidate, in one el_decode with tree attention; then walks the tree
 * from the pending token, sampling each token from the model's own logits with the caller's
 * sampler, as long as the sampled token is a candidate. So the tokens are exactly those of plain
 * decoding with that sampler (greedy: identical; sampling: the same draws from the same
 * distributions); the tree only decides how many come out of one step. Rejected rows leave the
 * cache (el_kv_remove_rows).
 * Tree: depth d (1..n_depth <= n_slots) holds width[d-1] candidates, the most likely tokens of
 * forecast slot d, below the most likely candidate of depth d-1. tree_auto chooses the depth and
 * widths every step: the tree that maximizes accepted tokens per second, from the acceptance
 * seen so far (per depth and rank) and the measured time of steps of each size; no tree
 * (plain decoding, no slots) when none pays. */
enum { EL_SPEC_MAX_DEPTH = 8 };

typedef struct el_spec_params {
    int32_t seq_id;
    int32_t n_depth;                    /* 0: plain decoding */
    int32_t width[EL_SPEC_MAX_DEPTH];   /* >= 1 each */
    bool tree_auto;                     /* choose depth and widths (n_depth, width ignored) */
} el_spec_params;

typedef struct el_spec el_spec;

/* ctx needs n_batch >= the largest step (el_spec_max_rows). */
el_status el_spec_create(el_context *ctx, const el_forecast *forecast, el_sampler *sampler,
                         const el_spec_params *params, el_spec **out);
void el_spec_free(el_spec *s);
/* Rows the largest step of these params needs: (1 + candidates) * (1 + n_slots). */
int32_t el_spec_max_rows(const el_forecast *forecast, const el_spec_params *params);
/* Decodes the prompt (n >= 1 tokens) and samples the first token into *first. The caller has
 * given the prompt to the sampler (el_sampler_accept) if it wants penalties over it. If the
 * sequence's cache holds the prompt's first k < n tokens already (positions 0..k-1, as a
 * conversation's earlier turns), only the rest is decoded; on an error, the cache is left as it
 * was given. */
el_status el_spec_start(el_spec *s, const int32_t *prompt, int32_t n, int32_t *first);
/* One step: writes the next 1..cap tokens to tokens[], their count to *n (fewer than a tree
 * allowed when cap is reached or an end-of-generation token comes: it is the last). */
el_status el_spec_step(el_spec *s, int32_t *tokens, int32_t cap, int32_t *n);

/* For callers that decode several sequences' steps in one batch (each with its own tree, as
 * `batch` does): writes the rows of s's next step into the caller's arrays from index `first`
 * (token, embd [n_embd floats a row], pos, seq_id, parent, logits; rows up to `cap`) and returns
 * how many (0 if they do not fit, or s is not started). Decode the batch, then el_spec_accept
 * with the same `first`: the same tokens as el_spec_step. */
int32_t el_spec_next_rows(el_spec *s, int32_t first, int32_t cap, int32_t *token, float *embd,
                          int32_t *pos, int32_t *seq_id, int32_t *parent, int8_t *logits);
el_status el_spec_accept(el_spec *s, int32_t first, int32_t *tokens, int32_t cap, int32_t *n);

typedef struct el_spec_stats {
    int64_t steps;        /* el_spec_step calls */
    int64_t tokens;       /* tokens they produced */
    int64_t rows;         /* rows they decoded */
    int64_t tree_steps;   /* steps that carried a tree */
    double decode_seconds;
} el_spec_stats;

el_status el_spec_get_stats(const el_spec *s, el_spec_stats *out);

/* What the last el_spec_step did: its tree, its rows, the tokens it produced (for traces that
 * `bench --replay` times on another model). */
typedef struct el_spec_step_info {
    int32_t n_depth;                    /* 0: plain */
    int32_t width[EL_SPEC_MAX_DEPTH];
    bool slots;                         /* forecast slots after every node */
    int32_t n_slots;
    int32_t n_rows;
    int32_t tokens;
} el_spec_step_info;

el_status el_spec_last_step(const el_spec *s, el_spec_step_info *out);

/* ------------------------------------------------------- one-call generation */

/* The simple case in one call: el_generate tokenizes prompt (with the vocabulary's special
 * tokens), runs it in a context of its own with the adapters bound, and samples up to n_predict
 * tokens, stopping at the end of generation unless ignore_eos. */
typedef struct el_generate_params {
    int32_t n_predict;          /* tokens at most (default 128) */
    int32_t n_ctx;              /* KV cells (0: the prompt's plus n_predict) */
    int32_t n_threads;          /* 0: all cores */
    el_sampler_params sampler;  /* el_sampler_default_params(); temperature 0 is greedy */
    const el_binding *bindings; /* adapters and their scales, or NULL */
    int32_t n_bindings;
    bool ignore_eos;
} el_generate_params;

el_generate_params el_generate_default_params(void);

/* *text (malloc'd; free it with free()) is the text the generated tokens add after the prompt.
 * params NULL: the defaults. */
el_status el_generate(el_model *model, const char *prompt, const el_generate_params *params,
                      char **text);

#ifdef __cplusplus
}
#endif

#endif
