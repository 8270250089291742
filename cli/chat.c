/* chat.c - `edgelora chat`: a conversation on a terminal (or over a pipe). The conversation
 * stays in the KV cache between turns (chat_session.c); adapters loaded at the start can be
 * switched between turns without reloading anything. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "adapters.h"
#include "chat_session.h"
#include "cli.h"
#include "line_input.h"

static const char help[] =
    "usage: edgelora chat [-m MODEL] [--lora FILE] [--lora-dir DIR] [--system TEXT] [options]\n"
    "A conversation: each line read is a user's message, answered through the model's chat\n"
    "template. On a terminal lines are edited (cursor keys, backspace, history with up and\n"
    "down); otherwise they are read as they come, so a conversation can be piped in. Replies\n"
    "go to stdout, one line after each; the prompt, messages and commands' output to stderr.\n"
    "The conversation stays in the KV cache: a turn decodes only its new tokens. When the\n"
    "context is full, the oldest turns are dropped (the system message stays). Ctrl-C stops a\n"
    "reply (what was written stays in the conversation); Ctrl-C at the prompt, Ctrl-D or the\n"
    "end of the input ends the chat.\n"
    "Commands: /help, /reset, /lora [NAME|none], /quit (a message that starts with '/' is\n"
    "written '//...').\n"
    "  -m, --model FILE       GGUF model or llama2.c checkpoint (default: the default model)\n"
    "  --tokenizer FILE       llama2.c tokenizer.bin (for a llama2.c checkpoint)\n"
    "  --chat-template NAME   chatml, llama3, gemma, phi3, mistral-v1, mistral-v3,\n"
    "                         mistral-v3-tekken, mistral-v7, llama2, llama2-sys,\n"
    "                         llama2-sys-bos, llama2-sys-strip or edgelora (default: the\n"
    "                         model's own, tokenizer.chat_template)\n"
    "  --system TEXT          the system message\n"
    "  --lora FILE            an adapter (GGUF file or PEFT folder), bound from the start;\n"
    "                         repeatable, the terms of several adapters add up\n"
    "  --lora-scaled FILE S   the same with scale S\n"
    "  --lora-dir DIR         a folder of adapters /lora NAME can bind (not bound at first)\n"
    "  --stop TEXT            end a reply where its text first contains TEXT; repeatable\n"
    "  -n, --n-predict N      most tokens a reply (default -1: until the end of generation or\n"
    "                         of the context)\n"
    "  -c, --ctx-size N       KV cache size in tokens (default: the model's training context)\n"
    "  -b, --batch-size N     prompt tokens per forward pass (default 512)\n"
    "  -t, --threads N        threads (default: all cores)\n"
    "  --kv-type T            KV cache elements: f16 (default) or f32\n"
    "  --keep-page-cache      a model the page cache holds in 4 KB pages is left so (default:\n"
    "                         its unmapped cached pages are dropped and read again into 2 MB\n"
    "                         pages, which decode faster: docs/bench.md)\n"
    "  --profile FILE         run under a quantization profile (`edgelora profile`): its int8\n"
    "                         activation scales, adapters quantized to int8 with its scales\n"
    "  --prune RATE           a UniQL compressed model's pruning rate (0: whole; rounded up to\n"
    "                         a rate of the file's table)\n"
    "  --mem-budget B|auto    the smallest rate whose weights and KV cache fit B bytes (auto: the\n"
    "                         memory available now, /proc/meminfo and the cgroup limit)\n"
    "  --ignore-eos           keep generating past the end-of-sequence token\n"
    "  -v, --verbose          after each reply, a line on stderr: the conversation's tokens,\n"
    "                         how many came from the cache, how many were decoded\n";

static const char commands_help[] =
    "  /reset        forget the conversation (the system message stays)\n"
    "  /lora NAME    bind the adapter NAME alone (one of --lora's, or of --lora-dir's folder);\n"
    "                the conversation is decoded again under it with the next message\n"
    "  /lora none    unbind every adapter\n"
    "  /lora         list the adapters and which are bound\n"
    "  /quit         end the chat (so do Ctrl-D and Ctrl-C at the prompt)\n"
    "  //TEXT        send the message '/TEXT'\n";

typedef struct chat_opts {
    cli_model_opts mo;
    cli_sampling_opts sampling;
    cli_lora_opts lora;
    cli_spec_opts spec;
    const char *lora_dir, *tmpl, *system;
    const char *stops[CLI_MAX_STOPS];
    int n_stops;
    long n_predict, n_batch;
    bool ignore_eos, verbose;
} chat_opts;

static int parse_args(chat_opts *o, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int r = cli_model_opt("chat", &o->mo, argc, argv, &i);
        if (r == 0) r = cli_kv_opt("chat", &o->mo, argc, argv, &i);
        if (r == 0) r = cli_sampling_opt("chat", &o->sampling, argc, argv, &i);
        if (r == 0) r = cli_lora_opt("chat", &o->lora, argc, argv, &i);
        if (r == 0) r = cli_spec_opt("chat", &o->spec, argc, argv, &i);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            fputs(cli_spec_help, stdout);
            fputs(cli_sampling_help, stdout);
            return -1;
        } else if (!strcmp(a, "--lora-dir")) {
            if (!(o->lora_dir = cli_value("chat", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--chat-template")) {
            if (!(o->tmpl = cli_value("chat", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--system")) {
            if (!(o->system = cli_value("chat", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--stop")) {
            if (!(v = cli_value("chat", argc, argv, &i))) return CLI_USAGE;
            if (o->n_stops == CLI_MAX_STOPS || !*v) {
                cli_error("chat", "--stop takes a non-empty string, at most %d times",
                          CLI_MAX_STOPS);
                return CLI_USAGE;
            }
            o->stops[o->n_stops++] = v;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) {
            if (!(v = cli_value("chat", argc, argv, &i)) ||
                !cli_int("chat", a, v, -1, 1 << 24, &o->n_predict))
                return CLI_USAGE;
        } else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
            if (!(v = cli_value("chat", argc, argv, &i)) ||
                !cli_int("chat", a, v, 1, 1 << 16, &o->n_batch))
                return CLI_USAGE;
        } else if (!strcmp(a, "--ignore-eos")) {
            o->ignore_eos = true;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            o->verbose = true;
        } else {
            cli_error("chat", "unknown option '%s'", a);
            return CLI_USAGE;
        }
    }
    return CLI_OK;
}

/* Set by Ctrl-C: stops a reply, or ends the wait for a line. */
static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig) {
    (void)sig;
    interrupted = 1;
}

/* The adapters /lora can bind: --lora's (loaded, bound at the start) and --lora-dir's (loaded
 * when first bound). */
typedef struct chat_adapters {
    el_binding given[CLI_MAX_LORA];
    int n_given;
    cli_lora_dir dir; /* dir.dir NULL: no --lora-dir */
    char bound[256];  /* what is bound, for /lora's listing */
} chat_adapters;

static const char *given_name(const chat_adapters *ad, int i) {
    el_adapter_info ai;
    el_adapter_get_info(ad->given[i].adapter, &ai);
    return ai.name;
}

static void list_adapters(const chat_adapters *ad) {
    fprintf(stderr, "adapters (bound: %s):", ad->bound);
    for (int i = 0; i < ad->n_given; i++) fprintf(stderr, " %s", given_name(ad, i));
    for (size_t i = 0; i < ad->dir.n; i++) {
        bool shadowed = false; /* by a --lora adapter of that name, which /lora NAME binds */
        for (int k = 0; k < ad->n_given && !shadowed; k++)
            shadowed = !strcmp(given_name(ad, k), ad->dir.entries[i].name);
        if (!shadowed) fprintf(stderr, " %s", ad->dir.entries[i].name);
    }
    fprintf(stderr, "%s\n", ad->n_given || ad->dir.n ? "" : " none (give --lora or --lora-dir)");
}

/* /lora NAME: binds NAME alone (its --lora-scaled scale, or 1), or nothing for "none". */
static void switch_adapter(chat_session *s, chat_adapters *ad, const char *name) {
    el_binding b = {.adapter = NULL, .scale = 1.0f};
    for (int i = 0; i < ad->n_given && !b.adapter; i++)
        if (!strcmp(given_name(ad, i), name)) b = ad->given[i];
    if (!b.adapter && strcmp(name, "none") != 0) {
        cli_lora_entry *e = ad->dir.dir ? cli_lora_dir_find(&ad->dir, name) : NULL;
        if (!e) {
            cli_error("chat", "no adapter '%s' was loaded (/lora lists them)", name);
            return;
        }
        if (!(b.adapter = cli_lora_dir_load(&ad->dir, e))) {
            cli_error("chat", "adapter '%s' cannot be used: %s", name, e->error);
            return;
        }
    }
    el_status st = chat_session_bind(s, &b, b.adapter ? 1 : 0);
    if (st != EL_OK) {
        cli_fail("chat", st);
        return;
    }
    snprintf(ad->bound, sizeof ad->bound, "%s", b.adapter ? name : "none");
    fprintf(stderr, "edgelora chat: %s%s; the conversation is decoded again with the next "
                    "message\n", b.adapter ? "bound " : "no adapter bound", b.adapter ? name : "");
}

/* Runs a command line (it starts with '/'); false for /quit. */
static bool command(chat_session *s, chat_adapters *ad, const char *line) {
    const char *arg = strchr(line, ' ');
    size_t len = arg ? (size_t)(arg - line) : strlen(line);
    while (arg && *arg == ' ') arg++;
    if (arg && !*arg) arg = NULL;
    if (len == 5 && !strncmp(line, "/quit", 5)) return false;
    if (len == 5 && !strncmp(line, "/help", 5)) {
        fputs(commands_help, stderr);
    } else if (len == 6 && !strncmp(line, "/reset", 6)) {
        chat_session_reset(s);
        fprintf(stderr, "edgelora chat: the conversation is forgotten\n");
    } else if (len == 5 && !strncmp(line, "/lora", 5)) {
        if (arg)
            switch_adapter(s, ad, arg);
        else
            list_adapters(ad);
    } else {
        cli_error("chat", "unknown command '%.*s' (/help lists the commands)", (int)len, line);
    }
    return true;
}

static void write_reply(void *user, const char *text, size_t len) {
    (void)user;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
}

/* Reads lines until the end of the input or /quit; returns the exit code. */
static int converse(const chat_opts *o, chat_session *s, chat_adapters *ad) {
    cli_line_input *in = cli_line_open("edgelora", "> ");
    if (!in) {
        cli_error("chat", "out of memory");
        return CLI_FAIL;
    }
    bool tty = cli_line_is_terminal(in);
    if (tty)
        fprintf(stderr, "edgelora chat: adapters bound: %s; /help lists the commands, Ctrl-D "
                        "ends\n", ad->bound);
    int rc = CLI_OK;
    for (;;) {
        interrupted = 0;
        const char *line = cli_line_read(in);
        if (!line) break;
        if (!*line) continue;
        if (line[0] == '/' && line[1] != '/') {
            if (!command(s, ad, line)) break;
            continue;
        }
        chat_turn t;
        chat_result res = chat_session_turn(s, line[0] == '/' ? line + 1 : line, write_reply,
                                            NULL, &interrupted, &t);
        if (res == CHAT_FAILED) {
            rc = CLI_FAIL;
            break;
        }
        if (res == CHAT_REFUSED) continue;
        fputc('\n', stdout);
        fflush(stdout);
        if (!strcmp(t.finish, "interrupted"))
            fprintf(stderr, "edgelora chat: reply interrupted\n");
        if (o->verbose && t.n_steps > 0)
            fprintf(stderr, "edgelora chat: %d tokens of conversation, %d from the cache, %d "
                            "decoded; %d generated (%s) in %d speculative steps\n",
                    t.n_total, t.n_reused, t.n_total - t.n_reused, t.n_gen, t.finish,
                    t.n_steps);
        else if (o->verbose)
            fprintf(stderr, "edgelora chat: %d tokens of conversation, %d from the cache, %d "
                            "decoded; %d generated (%s)\n",
                    t.n_total, t.n_reused, t.n_total - t.n_reused, t.n_gen, t.finish);
    }
    if (tty) fputc('\n', stderr); /* the shell's prompt on a line of its own */
    cli_line_close(in);
    return rc;
}

/* The model, its context, adapters and forecast set ready; then the conversation. */
static int chat(const chat_opts *o, el_model *m, chat_adapters *ad, const el_forecast *forecast) {
    el_model_info info;
    el_model_get_info(m, &info);
    long n_ctx = o->mo.ctx ? o->mo.ctx : info.n_ctx_train > 0 ? info.n_ctx_train : 4096;
    cli_warn_context("chat", &info, n_ctx);
    el_context_params cp = el_context_default_params();
    cp.n_ctx = (int32_t)n_ctx;
    cp.n_batch = (int32_t)(o->n_batch ? o->n_batch : 512);
    if (cp.n_batch > n_ctx) cp.n_batch = (int32_t)n_ctx;
    int32_t spec_rows = forecast ? el_spec_max_rows(forecast, &o->spec.params) : 0;
    if (cp.n_batch < spec_rows) cp.n_batch = spec_rows;
    cp.n_seq_max = 1;
    cp.n_threads = (int32_t)o->mo.threads;
    cp.kv_type = o->mo.kv_type;
    chat_settings set = {.tmpl = o->tmpl, .system = o->system, .sp = o->sampling.sp,
                         .n_predict = o->n_predict, .stops = o->stops, .n_stops = o->n_stops,
                         .ignore_eos = o->ignore_eos, .forecast = forecast,
                         .spec = o->spec.params};
    el_context *ctx = NULL;
    chat_session *s = NULL;
    el_status st;
    if ((st = el_context_create(m, &cp, &ctx)) != EL_OK ||
        (st = el_context_bind(ctx, 0, ad->given, ad->n_given)) != EL_OK) {
        el_context_free(ctx);
        return cli_fail("chat", st);
    }
    if (chat_session_create(m, ctx, cp.n_ctx, cp.n_batch, &set, &s) != EL_OK) {
        el_context_free(ctx);
        cli_error("chat", "out of memory");
        return CLI_FAIL;
    }
    struct sigaction sa = {.sa_handler = on_interrupt}; /* no SA_RESTART: a read is cut short */
    sigemptyset(&sa.sa_mask);
    struct sigaction old;
    sigaction(SIGINT, &sa, &old);
    int rc = converse(o, s, ad);
    sigaction(SIGINT, &old, NULL);
    chat_session_free(s);
    el_context_free(ctx);
    return rc;
}

int cmd_chat(int argc, char **argv) {
    chat_opts o = {.n_predict = -1, .sampling = {.sp = el_sampler_default_params()}};
    int rc = parse_args(&o, argc, argv);
    if (rc) return rc < 0 ? CLI_OK : rc;
    cli_sampling_seed(&o.sampling);
    el_model *m;
    if ((rc = cli_load_model("chat", &o.mo, false, &m))) return rc;
    const char *family;
    chat_adapters ad = {.bound = "none"};
    el_status st = el_chat_template_family(m, o.tmpl, &family);
    if (st == EL_OK) st = cli_lora_load(&o.lora, m, ad.given, &ad.n_given);
    if (st != EL_OK) {
        rc = cli_fail("chat", st);
    } else if (o.lora_dir && (rc = cli_lora_dir_scan("chat", m, o.lora_dir, &ad.dir))) {
        ad.dir.dir = NULL;
    } else {
        size_t at = 0;
        for (int i = 0; i < ad.n_given && at < sizeof ad.bound; i++)
            at += (size_t)snprintf(ad.bound + at, sizeof ad.bound - at, i ? ", %s" : "%s",
                                   given_name(&ad, i));
        el_forecast *forecast = NULL;
        rc = cli_spec_load("chat", &o.spec, m, cli_model_path("chat", o.mo.model), &forecast);
        if (rc == CLI_OK) rc = chat(&o, m, &ad, forecast);
        el_forecast_free(forecast);
    }
    for (int i = 0; i < ad.n_given; i++) el_adapter_free(ad.given[i].adapter);
    if (ad.dir.dir) cli_lora_dir_free(&ad.dir);
    el_model_free(m);
    return rc;
}
