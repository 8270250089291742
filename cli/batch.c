/* batch.c - `edgelora batch`: many requests, each with its own adapters and sampler, served
 * together by one context (continuous batching).
 *
 * Up to --parallel requests are active at once, each in its own sequence of the context with
 * its adapters bound to that sequence. Every step is one el_decode: one row for each generating
 * request (its last token), then prompt rows of newly admitted requests in chunks, up to the
 * batch size. When a request ends its cells are freed and its sequence unbound, and the next
 * request takes its place. Each request samples with its own sampler exactly as `edgelora run`
 * does, so its text is that of a single run with the same prompt, adapters and seed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "cli.h"

static const char help[] =
    "usage: edgelora batch -m BASE -f REQUESTS.jsonl [--lora-dir DIR] [-o OUT.jsonl] [options]\n"
    "Runs every request of REQUESTS.jsonl (one JSON object a line) together and writes one JSON\n"
    "object a line, in input order: {\"id\", \"text\", \"tokens_prompt\", \"tokens_generated\",\n"
    "\"time_ms\", \"finish_reason\": \"eos\"|\"length\"|\"stop\"}, or {\"id\", \"error\"} for a request\n"
    "that cannot be served: malformed, parameters the sampler refuses, an adapter that does not\n"
    "load or fit, a prompt longer than the context, a failure while it runs. The others still\n"
    "run, with the same output as without it.\n"
    "Exit status: 0 if at least one request succeeded (or there were none); 1 if every request\n"
    "failed (their error lines are still written) or the batch could not run (nothing is\n"
    "written); 2 for a usage error.\n"
    "Request fields: \"id\" (string or number, echoed as given), \"prompt\" (string), and\n"
    "optionally \"n_predict\" (or \"max_tokens\"; default 128; -1: until end of text or\n"
    "context), \"stop\" (a string or a list of up to 16: the text ends before the first to\n"
    "appear, finish_reason \"stop\"), \"temperature\",\n"
    "\"top_k\", \"top_p\", \"min_p\", \"repeat_penalty\", \"repeat_last_n\", \"seed\",\n"
    "\"ignore_eos\" (defaults as for `edgelora run`), and \"adapter\": a name from DIR (a *.gguf\n"
    "file's name without extension, or a PEFT folder's name) or a list of\n"
    "{\"name\": NAME, \"scale\": X}.\n"
    "\"n\": K (1..64, at most --parallel) asks for K continuations, generated together from one\n"
    "pass over the prompt (concurrent variants: each starts with a different token, drawn from\n"
    "the sampler among the tokens not taken yet; choice i samples with seed + i); the output\n"
    "then has \"choices\": [{\"index\", \"text\", \"first_token_id\", \"tokens_generated\",\n"
    "\"finish_reason\"}, ...] instead of \"text\". A request whose sampler leaves fewer than K\n"
    "first tokens (top-k, top-p, min-p) fails; widen them or ask for fewer.\n"
    "  -m, --model FILE       the base model (GGUF or llama2.c checkpoint)\n"
    "  --tokenizer FILE       llama2.c tokenizer.bin (for a llama2.c checkpoint)\n"
    "  -f, --file FILE        the requests (- for stdin)\n"
    "  --lora-dir DIR         the folder the adapters are named from\n"
    "  -o, --output FILE      write the results there (complete or not at all; default stdout)\n"
    "  --parallel N           requests decoded together (default 8)\n"
    "  -c, --ctx-size N       KV cells one request may use (default: prompt + n_predict, or\n"
    "                         the model's training context for n_predict -1)\n"
    "  -b, --batch-size N     most rows per forward pass (default 512)\n"
    "  -t, --threads N        threads (default: all cores)\n"
    "  --kv-type T            KV cache elements: f16 (default; half the memory) or f32\n"
    "  --keep-page-cache      a model the page cache holds in 4 KB pages is left so (default:\n"
    "                         its unmapped cached pages are dropped and read again into 2 MB\n"
    "                         pages, which decode faster: docs/bench.md)\n"
    "  --profile FILE         run under a quantization profile (`edgelora profile`): its int8\n"
    "                         activation scales, adapters quantized to int8 with its scales\n"
    "  --prune RATE           a UniQL compressed model's pruning rate (0: whole; rounded up to\n"
    "                         a rate of the file's table)\n"
    "  --mem-budget B|auto    the smallest rate whose weights and KV cache fit B bytes (auto: the\n"
    "                         memory available now, /proc/meminfo and the cgroup limit)\n"
    "  -s, --seed S           a request that gives no seed gets S + its line number\n"
    "                         (default S: from the clock)\n"
    "  --forecast FILE        decode requests without \"n\" speculatively (docs/speculative.md):\n"
    "                         each its own tree in the shared steps, the same text; a set\n"
    "                         trained for an adapter serves the requests bound to it alone;\n"
    "                         a request's \"speculative\": false decodes plainly, its \"tree\":\n"
    "                         \"auto\" or [W1, W2, ...] is its own tree\n"
    "  --tree auto|W1,W2,...  the candidate tree of requests that give none (default auto)\n";

typedef struct batch_opts {
    cli_model_opts mo;
    const char *requests, *lora_dir, *output;
    long parallel, n_batch;
    uint64_t seed;
    bool seed_given;
    cli_spec_opts spec;
} batch_opts;

static int parse_args(batch_opts *o, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int r = cli_model_opt("batch", &o->mo, argc, argv, &i);
        if (r == 0) r = cli_kv_opt("batch", &o->mo, argc, argv, &i);
        if (r == 0) r = cli_spec_opt("batch", &o->spec, argc, argv, &i);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return -1;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            if (!(o->requests = cli_value("batch", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--lora-dir")) {
            if (!(o->lora_dir = cli_value("batch", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(o->output = cli_value("batch", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--parallel")) {
            if (!(v = cli_value("batch", argc, argv, &i)) ||
                !cli_int("batch", a, v, 1, 256, &o->parallel))
                return CLI_USAGE;
        } else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
            if (!(v = cli_value("batch", argc, argv, &i)) ||
                !cli_int("batch", a, v, 1, 1 << 16, &o->n_batch))
                return CLI_USAGE;
        } else if (!strcmp(a, "-s") || !strcmp(a, "--seed")) {
            if (!(v = cli_value("batch", argc, argv, &i)) || !cli_u64("batch", a, v, &o->seed))
                return CLI_USAGE;
            o->seed_given = true;
        } else {
            cli_error("batch", "unknown option '%s'", a);
            return CLI_USAGE;
        }
    }
    if (!o->requests) {
        cli_error("batch", "no requests given (-f REQUESTS.jsonl)");
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* ------------------------------------------------------------ the requests */

typedef struct request_list {
    batch_request *r;
    size_t n;
} request_list;

static void requests_free(request_list *l) {
    for (size_t i = 0; i < l->n; i++) batch_request_free(&l->r[i]);
    free(l->r);
}

/* One request per non-blank line of text. */
static int requests_parse(const batch_opts *o, const char *text, size_t len, cli_lora_dir *dir,
                          request_list *out) {
    size_t cap = 0;
    int line = 0;
    el_sampler_params sp = el_sampler_default_params();
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len, n = end - at;
        line++;
        if (n && text[at + n - 1] == '\r') n--;
        size_t blank = 0;
        while (blank < n && (text[at + blank] == ' ' || text[at + blank] == '\t')) blank++;
        if (blank < n) {
            if (out->n == cap) {
                cap = cap ? 2 * cap : 64;
                batch_request *more = realloc(out->r, cap * sizeof *more);
                if (!more) goto nomem;
                out->r = more;
            }
            sp.seed = o->seed + (uint64_t)line; /* distinct streams for requests without one */
            if (!batch_request_parse(&out->r[out->n++], o->requests, line, text + at, n, &sp,
                                     dir))
                goto nomem;
        }
        at = end + 1;
    }
    return CLI_OK;
nomem:
    cli_error("batch", "out of memory reading %s", o->requests);
    return CLI_FAIL;
}

/* A request with "n": K sequences, each choice within -c together with the shared prompt. */
static void prepare_choices(const batch_opts *o, batch_request *r, long limit) {
    long k = r->n_choices, gen = r->n_gen_max;
    if (k > o->parallel) {
        batch_request_fail(r, o->requests, "\"n\" is %ld, more than --parallel %ld (the "
                           "sequences decoded together)", k, o->parallel);
        return;
    }
    if (o->mo.ctx && (long)r->n_prompt + k * gen > limit) gen = (limit - r->n_prompt) / k;
    if (gen < 1) {
        batch_request_fail(r, o->requests, "\"n\": no room for a token per choice (n_predict "
                           "%ld, context %ld)", r->n_predict, limit);
        return;
    }
    r->n_gen_max = (int32_t)gen;
    r->n_cells = (int32_t)(r->n_prompt + k * gen);
}

/* Whether the sampler takes r's parameters: it is asked, so that a request is refused for
 * exactly what it would refuse, before anything runs. */
static void check_sampler(const batch_opts *o, batch_request *r, int32_t n_vocab) {
    el_sampler *probe;
    if (el_sampler_create(&r->sp, n_vocab, &probe) == EL_OK)
        el_sampler_free(probe);
    else
        batch_request_fail(r, o->requests, "%s", el_last_error());
}

/* Tokenizes each request and sizes it: the prompt and the tokens it may generate, within -c
 * (the same limits as `edgelora run -c`). */
static int requests_prepare(const batch_opts *o, el_model *m, request_list *l) {
    el_model_info info;
    el_model_get_info(m, &info);
    long train_ctx = info.n_ctx_train > 0 && info.n_ctx_train < 4096 ? info.n_ctx_train : 4096;
    for (size_t i = 0; i < l->n; i++) {
        batch_request *r = &l->r[i];
        if (!r->error) check_sampler(o, r, info.n_vocab);
        if (r->error) continue;
        size_t n_prompt;
        el_status st = cli_tokenize(m, r->prompt, r->prompt_len, true, true, &r->tokens,
                                    &n_prompt);
        if (st == EL_ERR_NOMEM) {
            cli_error("batch", "out of memory");
            return CLI_FAIL;
        }
        if (st != EL_OK) {
            batch_request_fail(r, o->requests, "%s", el_last_error());
        } else if (n_prompt == 0) {
            batch_request_fail(r, o->requests, "the prompt is empty and the vocabulary has no "
                                               "BOS token");
        } else {
            long limit = o->mo.ctx ? o->mo.ctx
                         : r->n_predict < 0 ? train_ctx
                                            : (long)n_prompt + r->n_predict;
            if ((long)n_prompt > limit || ((long)n_prompt == limit && r->n_predict != 0)) {
                batch_request_fail(r, o->requests, "the prompt has %zu tokens, more than the "
                                   "context of %ld (-c)", n_prompt, limit);
            } else {
                long gen = limit - (long)n_prompt;
                if (r->n_predict >= 0 && r->n_predict < gen) gen = r->n_predict;
                int32_t *all = realloc(r->tokens, (n_prompt + (size_t)gen) * sizeof *all);
                if (!all) {
                    cli_error("batch", "out of memory");
                    return CLI_FAIL;
                }
                r->tokens = all;
                r->n_prompt = r->n_tokens = (int32_t)n_prompt;
                r->n_gen_max = (int32_t)gen;
                r->n_cells = (int32_t)(n_prompt + (size_t)gen);
                if (r->n_choices > 0) prepare_choices(o, r, limit);
                continue;
            }
        }
        if (!r->error) {
            cli_error("batch", "out of memory");
            return CLI_FAIL;
        }
    }
    return CLI_OK;
}

/* ------------------------------------------------------------ the output */

/* Output goes to stdout, or to -o through an el_output: the file appears only when complete. */
typedef struct output {
    FILE *f;
    el_output *file; /* NULL: stdout */
    size_t next;     /* first request not yet written */
    size_t n_failed; /* error lines written */
} output;

static int output_open(const char *path, output *out) {
    *out = (output){.f = stdout};
    if (!path) return CLI_OK;
    el_status st = el_output_open(path, &out->file);
    if (st) return cli_fail("batch", st);
    out->f = el_output_stream(out->file);
    return CLI_OK;
}

/* Writes every finished request at the head of the list, in input order. */
static void output_flush(output *out, request_list *l) {
    for (; out->next < l->n && l->r[out->next].done; out->next++) {
        out->n_failed += l->r[out->next].error != NULL;
        batch_request_write(out->f, &l->r[out->next]);
        batch_request_free(&l->r[out->next]);
        l->r[out->next].done = true;
    }
    fflush(out->f);
}

/* Completes the output (ok) or discards it; returns the exit code. */
static int output_close(output *out, bool ok) {
    if (!out->file) {
        if (fflush(stdout) || ferror(stdout)) {
            cli_error("batch", "writing the output failed");
            return CLI_FAIL;
        }
        return ok ? CLI_OK : CLI_FAIL;
    }
    if (!ok) {
        el_output_discard(out->file);
        return CLI_FAIL;
    }
    el_status st = el_output_commit(out->file);
    return st ? cli_fail("batch", st) : CLI_OK;
}

/* ------------------------------------------------------------ the scheduler */

typedef struct slot {
    batch_request *r; /* NULL: free */
    el_sampler *smp;
    int32_t fed;      /* prompt tokens already in the cache */
    bool generating;  /* the prompt is in; each step feeds the last token sampled */
    el_variants *group; /* a request with "n": its choices, in this slot and the next n-1 */
    el_spec *spec;    /* a request decoded speculatively (its tree's rows at first_row) */
    int32_t spec_tok[EL_SPEC_MAX_DEPTH + 1], n_spec_tok; /* what this step's tree gave */
    char spec_error[256]; /* walking that tree failed: why */
    bool follower;    /* one of those next n-1 slots (the first one does the work) */
    int32_t row;      /* row of this step whose logits it samples from, or -1 */
    int32_t first_row, n_rows; /* its rows in this step */
    double t0;
} slot;

typedef struct scheduler {
    const char *path; /* the requests file, for the requests' error messages */
    el_model *model;
    el_context *ctx;
    slot *slots;
    int32_t n_slots, n_batch, n_vocab, n_embd;
    int32_t *tok, *pos, *seq; /* [n_batch] the rows of one step */
    int8_t *logits;
    int32_t *parent;          /* [n_batch] (used when a speculative tree is in the step) */
    float *embd;              /* [n_batch][n_embd] the trees' forecast rows */
    const el_forecast *forecast; /* --forecast, or NULL */
    bool tree_rows;           /* this step holds a tree */
    long n_prompt_tokens, n_gen_tokens;
    int64_t spec_steps, spec_tokens; /* of the finished speculative requests */
} scheduler;

/* Whether a failure is the request's own, to become its error line: all but running out of
 * memory, which stops the batch. */
static bool is_request_failure(el_status st) { return st != EL_OK && st != EL_ERR_NOMEM; }

/* Ends slot s's request (and the slots of its choices) with the error line why (the library's
 * last error, mostly); its cells and adapters are released and the other requests go on. */
static el_status slot_fail_why(scheduler *sc, slot *s, const char *why) {
    batch_request *r = s->r;
    batch_request_fail(r, sc->path, "%s", why);
    if (!r->error) return EL_ERR_NOMEM;
    int32_t seq = (int32_t)(s - sc->slots), n_slots = s->group ? r->n_choices : 1;
    el_status st = EL_OK;
    if (s->group) {
        el_variants_free(s->group); /* its cells and bindings */
    } else {
        el_spec_free(s->spec);
        st = el_kv_seq_remove(sc->ctx, seq, 0, -1);
        if (st == EL_OK) st = el_context_bind(sc->ctx, seq, NULL, 0);
        el_sampler_free(s->smp);
    }
    r->done = true;
    for (int32_t c = n_slots - 1; c >= 0; c--) s[c] = (slot){.row = -1};
    return st;
}

static el_status slot_fail(scheduler *sc, slot *s) { return slot_fail_why(sc, s, el_last_error()); }

/* Ends slot s's request: its text, its cells and adapters released. */
static el_status slot_finish(scheduler *sc, slot *s, const char *reason) {
    batch_request *r = s->r;
    int32_t seq = (int32_t)(s - sc->slots);
    el_status st = cli_continuation(sc->model, r->tokens, r->n_prompt, r->n_tokens, &r->text);
    if (st == EL_OK && r->n_stops > 0) { /* the text ends before the first stop string */
        bool found;
        size_t at = cli_stop_scan(r->text, strlen(r->text), (const char *const *)r->stops,
                                  r->n_stops, &found);
        if (found) r->text[at] = '\0';
    }
    el_spec_stats ss;
    if (s->spec && el_spec_get_stats(s->spec, &ss) == EL_OK)
        sc->spec_steps += ss.steps, sc->spec_tokens += ss.tokens;
    el_spec_free(s->spec);
    if (st == EL_OK) st = el_kv_seq_remove(sc->ctx, seq, 0, -1);
    if (st == EL_OK) st = el_context_bind(sc->ctx, seq, NULL, 0);
    el_sampler_free(s->smp);
    sc->n_gen_tokens += r->n_tokens - r->n_prompt;
    r->finish = reason;
    r->time_ms = cli_now_ms() - s->t0;
    r->done = true;
    *s = (slot){.row = -1};
    if (!is_request_failure(st)) return st;
    batch_request_fail(r, sc->path, "%s", el_last_error());
    return r->error ? EL_OK : EL_ERR_NOMEM;
}

static el_status take_token(scheduler *sc, slot *s, int32_t tok);

/* A speculative request decodes its prompt at admission (with the forecast slots after it) and
 * takes its first token; a set trained for another binding leaves it to plain decoding. */
static el_status spec_admit(scheduler *sc, slot *s) {
    el_spec_params sp = s->r->tree;
    sp.seq_id = (int32_t)(s - sc->slots);
    el_status st = el_spec_create(sc->ctx, sc->forecast, s->smp, &sp, &s->spec);
    if (st == EL_ERR_MISMATCH) return EL_OK;
    int32_t first;
    if (st == EL_OK) st = el_spec_start(s->spec, s->r->tokens, s->r->n_prompt, &first);
    if (st != EL_OK) return st;
    s->fed = s->r->n_prompt;
    s->generating = true;
    return take_token(sc, s, first);
}

/* Puts the next request into free slot s; an error that is the request's own (its adapters
 * cannot be bound, its sampler not made) fails only that request. */
static el_status slot_admit(scheduler *sc, slot *s, batch_request *r) {
    int32_t seq = (int32_t)(s - sc->slots);
    *s = (slot){.r = r, .row = -1, .t0 = cli_now_ms()};
    el_status st = el_context_bind(sc->ctx, seq, r->bind, r->n_bind);
    if (st != EL_OK) return is_request_failure(st) ? slot_fail(sc, s) : st;
    if ((st = el_sampler_create(&r->sp, sc->n_vocab, &s->smp)) != EL_OK)
        return is_request_failure(st) ? slot_fail(sc, s) : st;
    for (int32_t i = 0; i < r->n_prompt; i++) el_sampler_accept(s->smp, r->tokens[i]);
    sc->n_prompt_tokens += r->n_prompt;
    if (r->n_gen_max == 0) return slot_finish(sc, s, "length");
    if (r->speculative_tree && (st = spec_admit(sc, s)) != EL_OK)
        return is_request_failure(st) ? slot_fail(sc, s) : st;
    return EL_OK;
}

/* Ends the request with choices in slot s (and the slots after it). */
static el_status group_finish(scheduler *sc, slot *s) {
    batch_request *r = s->r;
    int32_t k = r->n_choices;
    el_status st = (r->choices = calloc((size_t)k, sizeof *r->choices)) ? EL_OK : EL_ERR_NOMEM;
    for (int32_t c = 0; c < k && st == EL_OK; c++) {
        el_variant_result v;
        el_variants_result(s->group, c, &v);
        static const char *const reasons[] = {[EL_FINISH_EOS] = "eos", [EL_FINISH_STOP] = "stop",
                                              [EL_FINISH_LENGTH] = "length"};
        r->choices[c] = (batch_choice){.text = strdup(v.text), .first_token = v.first_token,
                                       .n_tokens = v.n_tokens, .finish = reasons[v.finish]};
        if (!r->choices[c].text) st = EL_ERR_NOMEM;
        sc->n_gen_tokens += v.n_tokens;
    }
    el_variants_free(s->group); /* its cells and bindings */
    r->time_ms = cli_now_ms() - s->t0;
    r->done = true;
    for (int32_t c = k - 1; c >= 0; c--) s[c] = (slot){.row = -1};
    return st;
}

/* Starts a request with "n" in slots i .. i+n-1 (free): the prompt is decoded now, once, and
 * the choices' first tokens drawn; an error that is the request's own fails only it. */
static el_status group_admit(scheduler *sc, int32_t i, batch_request *r) {
    int32_t k = r->n_choices;
    el_variant_params *vp = malloc((size_t)k * sizeof *vp);
    if (!vp) return EL_ERR_NOMEM;
    el_variants_params gp;
    cli_choices ch = {.n = k, .seq_id = i, .max_tokens = r->n_gen_max, .sp = r->sp,
                      .bind = r->bind, .n_bind = r->n_bind, .ignore_eos = r->ignore_eos};
    cli_choices_params(&ch, vp, &gp);
    slot *s = &sc->slots[i];
    *s = (slot){.r = r, .row = -1, .t0 = cli_now_ms()};
    el_status st = el_variants_start(sc->ctx, &gp, r->tokens, r->n_prompt, &s->group);
    free(vp);
    if (st != EL_OK) return is_request_failure(st) ? slot_fail(sc, s) : st;
    for (int32_t c = 1; c < k; c++) s[c] = (slot){.r = r, .row = -1, .follower = true};
    s->generating = true;
    sc->n_prompt_tokens += r->n_prompt;
    return el_variants_running(s->group) ? EL_OK : group_finish(sc, s);
}

/* Are slots i .. i+k-1 all free? */
static bool slots_free(const scheduler *sc, int32_t i, int32_t k) {
    if (i + k > sc->n_slots) return false;
    for (int32_t j = i; j < i + k; j++)
        if (sc->slots[j].r) return false;
    return true;
}

/* Adds rows: first the last token of every generating slot (of every running choice of a
 * request with "n"), then prompt chunks. Returns the number of rows. */
static int32_t build_step(scheduler *sc) {
    int32_t n = 0;
    for (int32_t i = 0; i < sc->n_slots; i++) {
        slot *s = &sc->slots[i];
        s->row = -1;
        s->first_row = n;
        s->n_rows = 0;
        if (!s->r || !s->generating) continue;
        if (s->spec) { /* its tree, if it fits this step (else it waits for the next) */
            int32_t k = el_spec_next_rows(s->spec, n, sc->n_batch, sc->tok, sc->embd, sc->pos,
                                          sc->seq, sc->parent, sc->logits);
            if (k == 0) continue;
            s->row = n;
            s->n_rows = k;
            n += k;
            sc->tree_rows = true;
            continue;
        }
        if (s->group) {
            int32_t k = el_variants_next_rows(s->group, sc->tok + n, sc->pos + n, sc->seq + n);
            memset(sc->logits + n, 1, (size_t)k);
            s->row = n;
            s->n_rows = k;
            n += k;
            continue;
        }
        sc->tok[n] = s->r->tokens[s->r->n_tokens - 1];
        sc->pos[n] = s->r->n_tokens - 1;
        sc->seq[n] = i;
        sc->logits[n] = 1;
        sc->parent[n] = -1;
        s->n_rows = 1;
        s->row = n++;
    }
    for (int32_t i = 0; i < sc->n_slots && n < sc->n_batch; i++) {
        slot *s = &sc->slots[i];
        if (!s->r || s->generating || s->follower) continue;
        int32_t k = s->r->n_prompt - s->fed;
        if (k > sc->n_batch - n) k = sc->n_batch - n;
        s->first_row = n;
        s->n_rows = k;
        for (int32_t j = 0; j < k; j++, n++) {
            sc->tok[n] = s->r->tokens[s->fed + j];
            sc->pos[n] = s->fed + j;
            sc->seq[n] = i;
            sc->logits[n] = 0;
            sc->parent[n] = j > 0 ? n - 1 : -1; /* a chunk's rows see each other in a tree step */
        }
        s->fed += k;
        if (s->fed == s->r->n_prompt) {
            sc->logits[n - 1] = 1;
            s->row = n - 1;
            s->generating = true;
        }
    }
    return n;
}

/* Samples the next token of slot s from the logits of row `row` of the last decode, as `run`
 * does. */
/* Whether r's generated text now contains one of its stop strings. */
static el_status stop_reached(scheduler *sc, batch_request *r, bool *stopped) {
    char *gen;
    el_status st = el_detokenize(sc->model, r->tokens + r->n_prompt,
                                 (size_t)(r->n_tokens - r->n_prompt), false, false, &gen);
    if (st != EL_OK) return st;
    cli_stop_scan(gen, strlen(gen), (const char *const *)r->stops, r->n_stops, stopped);
    free(gen);
    return EL_OK;
}

static el_status sample_slot(scheduler *sc, slot *s, int32_t row) {
    if (s->group) {
        el_status st = el_variants_accept(s->group, row);
        if (st == EL_OK && !el_variants_running(s->group)) st = group_finish(sc, s);
        return st;
    }
    el_status st;
    if (s->spec) { /* the walked tree's tokens one by one, until one ends the request */
        for (int32_t i = 0; i < s->n_spec_tok && s->r; i++)
            if ((st = take_token(sc, s, s->spec_tok[i])) != EL_OK) return st;
        return EL_OK;
    }
    int32_t tok;
    if ((st = el_sampler_sample(s->smp, el_get_logits(sc->ctx, row), &tok)) != EL_OK) return st;
    el_sampler_accept(s->smp, tok);
    return take_token(sc, s, tok);
}

/* Appends a sampled token to s's request, or ends it (end of generation, a stop string, its
 * length). */
static el_status take_token(scheduler *sc, slot *s, int32_t tok) {
    batch_request *r = s->r;
    el_status st;
    if (!r->ignore_eos && el_token_is_eog(sc->model, tok)) return slot_finish(sc, s, "eos");
    r->tokens[r->n_tokens++] = tok;
    if (r->n_stops > 0) {
        bool stopped;
        if ((st = stop_reached(sc, r, &stopped)) != EL_OK) return st;
        if (stopped) return slot_finish(sc, s, "stop");
    }
    if (r->n_tokens - r->n_prompt == r->n_gen_max) return slot_finish(sc, s, "length");
    return EL_OK;
}

/* Walks speculative slot s's tree, decoded from batch row `row` on (el_spec_accept: it samples
 * the tokens), into s->spec_tok for sample_slot. */
static el_status spec_walk(slot *s, int32_t row) {
    batch_request *r = s->r;
    int32_t cap = r->n_gen_max - (r->n_tokens - r->n_prompt);
    return el_spec_accept(s->spec, row, s->spec_tok, cap < EL_SPEC_MAX_DEPTH + 1 ? cap
                          : EL_SPEC_MAX_DEPTH + 1, &s->n_spec_tok);
}

/* Samples every slot that has logits in this step; a slot that fails fails its request only.
 * Every tree is walked first: walking frees its rejected rows (el_kv_remove_rows), which is
 * possible only until the cache changes otherwise, as it does when a request ends. */
static el_status sample_step(scheduler *sc) {
    for (int32_t i = 0; i < sc->n_slots; i++) {
        slot *s = &sc->slots[i];
        s->spec_error[0] = '\0';
        if (!s->r || s->row < 0 || !s->spec) continue;
        el_status st = spec_walk(s, s->row);
        if (st != EL_OK && !is_request_failure(st)) return st;
        if (st != EL_OK) snprintf(s->spec_error, sizeof s->spec_error, "%s", el_last_error());
    }
    for (int32_t i = 0; i < sc->n_slots; i++) {
        slot *s = &sc->slots[i];
        if (!s->r || s->row < 0) continue;
        el_status st = s->spec_error[0] ? slot_fail_why(sc, s, s->spec_error)
                                        : sample_slot(sc, s, s->row);
        if (is_request_failure(st)) st = slot_fail(sc, s);
        if (st != EL_OK) return st;
    }
    return EL_OK;
}

/* After a step's decode failed (which changes nothing): each slot's rows decoded and sampled
 * alone, so that the request whose rows cannot be decoded fails and the others go on. A
 * sequence's results do not depend on which rows it shares a decode with. */
static el_status decode_each(scheduler *sc) {
    for (int32_t i = 0; i < sc->n_slots; i++) {
        slot *s = &sc->slots[i];
        if (!s->r || s->n_rows == 0) continue;
        int32_t at = s->first_row;
        for (int32_t r = at; s->spec && r < at + s->n_rows; r++)
            if (sc->parent[r] >= 0) sc->parent[r] -= at;
        el_batch b = {.n_rows = s->n_rows, .token = sc->tok + at, .pos = sc->pos + at,
                      .seq_id = sc->seq + at, .logits = sc->logits + at,
                      .embd = s->spec ? sc->embd + (size_t)at * (size_t)sc->n_embd : NULL,
                      .parent = s->spec ? sc->parent + at : NULL};
        el_status st = el_decode(sc->ctx, &b);
        if (st == EL_OK && s->row >= 0 && s->spec) st = spec_walk(s, s->row - at);
        if (st == EL_OK && s->row >= 0) st = sample_slot(sc, s, s->row - at);
        if (is_request_failure(st)) st = slot_fail(sc, s);
        if (st != EL_OK) return st;
    }
    return EL_OK;
}

static el_status schedule(scheduler *sc, request_list *l, output *out) {
    size_t next = 0;
    el_status st = EL_OK;
    for (;;) {
        for (int32_t i = 0; i < sc->n_slots && st == EL_OK; i++) {
            while (!sc->slots[i].r && next < l->n && st == EL_OK) {
                batch_request *r = &l->r[next];
                /* a request with "n" waits, in its turn, for n free slots in a row */
                if (!r->error && r->n_choices > 0 && !slots_free(sc, i, r->n_choices)) break;
                next++;
                if (r->error)
                    r->done = true;
                else if (r->n_choices > 0)
                    st = group_admit(sc, i, r);
                else
                    st = slot_admit(sc, &sc->slots[i], r);
            }
        }
        output_flush(out, l);
        if (st != EL_OK) return st;
        sc->tree_rows = false;
        int32_t n = build_step(sc);
        if (n == 0) return EL_OK; /* nothing active and nothing left */
        el_batch b = {.n_rows = n, .token = sc->tok, .pos = sc->pos, .seq_id = sc->seq,
                      .logits = sc->logits, .embd = sc->tree_rows ? sc->embd : NULL,
                      .parent = sc->tree_rows ? sc->parent : NULL};
        st = el_decode(sc->ctx, &b);
        st = st == EL_OK ? sample_step(sc) : is_request_failure(st) ? decode_each(sc) : st;
        if (st != EL_OK) return st;
    }
}

/* The KV cells the batch needs at most: the largest n_slots requests all active at once. */
static int64_t cells_needed(const request_list *l, int32_t n_slots) {
    int32_t *c = malloc((l->n + 1) * sizeof *c);
    if (!c) return -1;
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++)
        if (!l->r[i].error) c[n++] = l->r[i].n_cells;
    int64_t sum = 0;
    for (int32_t k = 0; k < n_slots && (size_t)k < n; k++) { /* partial selection of the top */
        size_t best = (size_t)k;
        for (size_t j = (size_t)k + 1; j < n; j++)
            if (c[j] > c[best]) best = j;
        int32_t t = c[k];
        c[k] = c[best];
        c[best] = t;
        sum += c[k];
    }
    free(c);
    return sum;
}

/* Which requests decode speculatively, with which tree: with --forecast, those without "n" or
 * "speculative": false, with --tree's tree unless they give one. Each reserves cells for its
 * largest step on top of its tokens; returns the largest step of all (0: none). */
static int32_t spec_prepare(const batch_opts *o, request_list *l, const el_forecast *forecast) {
    int32_t most = 0;
    for (size_t i = 0; i < l->n; i++) {
        batch_request *r = &l->r[i];
        if (!r->tree_given) r->tree = o->spec.params;
        if (!forecast && (r->speculative == 1 || r->tree_given))
            batch_request_fail(r, o->requests, "\"%s\": the batch runs without --forecast",
                               r->tree_given ? "tree" : "speculative");
        if (!forecast || r->error || r->speculative == 0 || r->n_choices > 0) continue;
        int32_t slots = el_forecast_n_slots(forecast);
        if (!r->tree.tree_auto && r->tree.n_depth > slots) {
            batch_request_fail(r, o->requests, "\"tree\" has %d depths; the forecast set has %d "
                               "slots", r->tree.n_depth, slots);
            continue;
        }
        int32_t rows = el_spec_max_rows(forecast, &r->tree);
        r->speculative_tree = true;
        r->n_cells += rows;
        if (rows > most) most = rows;
    }
    return most;
}

static int run_batch(const batch_opts *o, el_model *m, request_list *l, output *out,
                     const el_forecast *forecast) {
    el_model_info info;
    el_model_get_info(m, &info);
    int32_t spec_rows = spec_prepare(o, l, forecast);
    size_t n_seqs = 0; /* a request with "n" takes n sequences */
    for (size_t i = 0; i < l->n; i++)
        if (!l->r[i].error) n_seqs += l->r[i].n_choices > 0 ? (size_t)l->r[i].n_choices : 1;
    int32_t n_slots = (int32_t)(n_seqs < (size_t)o->parallel ? n_seqs : (size_t)o->parallel);
    if (n_slots == 0) { /* every request failed: only error lines */
        for (size_t i = 0; i < l->n; i++) l->r[i].done = true;
        output_flush(out, l);
        return CLI_OK;
    }
    int64_t cells = cells_needed(l, n_slots);
    if (cells < 0 || cells > INT32_MAX) {
        cli_error("batch", cells < 0 ? "out of memory" : "the requests need too many KV cells");
        return CLI_FAIL;
    }
    el_context_params cp = el_context_default_params();
    cp.n_ctx = (int32_t)cells;
    cp.n_seq_max = n_slots;
    cp.n_batch = (int32_t)(o->n_batch ? o->n_batch : 512);
    if (cp.n_batch < n_slots) cp.n_batch = n_slots;
    if (cp.n_batch < n_slots * spec_rows) cp.n_batch = n_slots * spec_rows; /* every tree */
    if (cp.n_batch > cp.n_ctx) cp.n_batch = cp.n_ctx;
    cp.n_threads = (int32_t)o->mo.threads;
    cp.kv_type = o->mo.kv_type;
    scheduler sc = {.path = o->requests, .model = m, .n_slots = n_slots, .n_batch = cp.n_batch,
                    .n_vocab = info.n_vocab, .n_embd = info.n_embd, .forecast = forecast};
    sc.slots = calloc((size_t)n_slots, sizeof *sc.slots);
    sc.tok = malloc((size_t)cp.n_batch * sizeof *sc.tok);
    sc.pos = malloc((size_t)cp.n_batch * sizeof *sc.pos);
    sc.seq = malloc((size_t)cp.n_batch * sizeof *sc.seq);
    sc.logits = malloc((size_t)cp.n_batch);
    sc.parent = malloc((size_t)cp.n_batch * sizeof *sc.parent);
    sc.embd = forecast ? malloc((size_t)cp.n_batch * (size_t)info.n_embd * sizeof *sc.embd) : NULL;
    el_status st = sc.slots && sc.tok && sc.pos && sc.seq && sc.logits && sc.parent &&
                   (sc.embd || !forecast) ? EL_OK : EL_ERR_NOMEM;
    if (st == EL_OK) st = el_context_create(m, &cp, &sc.ctx);
    double t0 = cli_now_ms();
    if (st == EL_OK) st = schedule(&sc, l, out);
    double t = cli_now_ms() - t0;
    if (st == EL_OK)
        fprintf(stderr, "batch: %zu requests (%zu failed), %d at a time: %ld prompt + %ld "
                        "generated tokens in %.1f ms (%.1f generated tokens/s)\n",
                l->n, out->n_failed, n_slots, sc.n_prompt_tokens, sc.n_gen_tokens, t,
                sc.n_gen_tokens / (t / 1e3 + 1e-9));
    if (st == EL_OK && sc.spec_steps > 0)
        fprintf(stderr, "speculative: %lld steps gave %lld tokens (%.2f a step)\n",
                (long long)sc.spec_steps, (long long)sc.spec_tokens,
                (double)sc.spec_tokens / (double)sc.spec_steps);
    for (int32_t i = 0; sc.slots && i < n_slots; i++) {
        el_spec_free(sc.slots[i].spec);
        el_sampler_free(sc.slots[i].smp);
        el_variants_free(sc.slots[i].group);
    }
    el_context_free(sc.ctx);
    free(sc.slots);
    free(sc.tok);
    free(sc.pos);
    free(sc.seq);
    free(sc.logits);
    free(sc.parent);
    free(sc.embd);
    return st == EL_OK ? CLI_OK : cli_fail("batch", st);
}

int cmd_batch(int argc, char **argv) {
    batch_opts o = {.parallel = 8};
    int rc = parse_args(&o, argc, argv);
    if (rc) return rc < 0 ? CLI_OK : rc;
    if (!o.seed_given) o.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    el_model *m;
    if ((rc = cli_load_model("batch", &o.mo, false, &m))) return rc;
    cli_lora_dir dir = {0};
    request_list l = {0};
    size_t len;
    char *text = NULL;
    output out = {0};
    if (o.lora_dir) rc = cli_lora_dir_scan("batch", m, o.lora_dir, &dir);
    if (!rc) rc = (text = cli_read_file("batch", o.requests, &len)) ? CLI_OK : CLI_FAIL;
    if (!rc) rc = requests_parse(&o, text, len, o.lora_dir ? &dir : NULL, &l);
    if (!rc) rc = requests_prepare(&o, m, &l);
    el_forecast *forecast = NULL;
    if (!rc) rc = cli_spec_load("batch", &o.spec, m, cli_model_path("batch", o.mo.model), &forecast);
    if (!rc && !(rc = output_open(o.output, &out))) {
        rc = output_close(&out, run_batch(&o, m, &l, &out, forecast) == CLI_OK);
        if (!rc && l.n > 0 && out.n_failed == l.n) {
            cli_error("batch", "every request failed (their error lines say why)");
            rc = CLI_FAIL;
        }
    }
    el_forecast_free(forecast);
    free(text);
    requests_free(&l);
    cli_lora_dir_free(&dir);
    el_model_free(m);
    return rc;
}
