/* serve.c - `edgelora serve`: an OpenAI-compatible HTTP server where every request brings its
 * own adapters, all running requests batched together (docs/serve.md).
 *
 * The main thread parses the options, loads the model and the adapter folder, starts the
 * scheduler (serve_sched.c, which owns the context) and the HTTP daemon (serve_http.c), then
 * waits for SIGTERM or SIGINT: it stops accepting connections, lets every request in flight
 * finish and be answered, and exits. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

static const char help[] =
    "usage: edgelora serve [-m MODEL] [--lora-dir DIR] [--host 127.0.0.1] [--port 8080]\n"
    "                      [--parallel N] [--ctx-size N] [--api-key KEY] [options]\n"
    "Serves the OpenAI API over HTTP: POST /v1/completions, POST /v1/chat/completions, GET\n"
    "/v1/models, POST /v1/adapters {\"name\"}, DELETE /v1/adapters/NAME, GET and POST\n"
    "/v1/prune, GET /health, GET /metrics (docs/serve.md). A request chooses its adapter with \"model\" (an adapter's name)\n"
    "or \"adapters\": [{\"name\", \"scale\"}]; requests with different adapters share every\n"
    "decode step. SIGTERM or SIGINT: finish the requests in flight, then exit.\n"
    "  -m, --model FILE       the base model (GGUF or llama2.c checkpoint)\n"
    "  --tokenizer FILE       llama2.c tokenizer.bin (for a llama2.c checkpoint)\n"
    "  --lora-dir DIR         the adapters, by name (a *.gguf file's name, a PEFT folder's)\n"
    "  --host ADDR            the address to listen on (default 127.0.0.1: this machine only)\n"
    "  --port N               the port (default 8080; 0: any free one, printed at start)\n"
    "  --parallel N           requests decoded together (sequences; default 8)\n"
    "  -c, --ctx-size N       KV cells shared by all requests (default 4096)\n"
    "  -b, --batch-size N     most rows per forward pass (default 512, or what --parallel\n"
    "                         trees need)\n"
    "  --prefix-cache N       finished requests whose cells are kept for a later prompt that\n"
    "                         begins the same way with the same adapters (default 16; 0: off);\n"
    "                         evicted, least recently used first, when running work needs them\n"
    "  --prompt-rows N        most prompt rows a step takes while requests generate (default\n"
    "                         64: an admission delays the streams by one such step at most)\n"
    "  -t, --threads N        threads (default: all cores)\n"
    "  --kv-type T            KV cache elements: f16 (default) or f32\n"
    "  --keep-page-cache      a model the page cache holds in 4 KB pages is left so (default:\n"
    "                         its unmapped cached pages are dropped and read again into 2 MB\n"
    "                         pages, which decode faster: docs/bench.md)\n"
    "  --prune RATE           a UniQL compressed model's pruning rate at start (rounded up to\n"
    "                         its table); POST /v1/prune {\"rate\": R} or {\"mem_budget\": B|\"auto\"}\n"
    "                         changes it for the requests that come after (docs/uniql.md)\n"
    "  --mem-budget B|auto    the smallest rate whose weights and KV cache fit B bytes (auto:\n"
    "                         the memory available now)\n"
    "  --profile FILE         run under a quantization profile (`edgelora profile`): its int8\n"
    "                         activation scales, adapters quantized to int8 with its scales\n"
    "  --api-key KEY          every request needs \"Authorization: Bearer KEY\" (/health aside)\n"
    "  --chat-template T      a template name or Jinja text (default: the model's own)\n"
    "  --queue N              requests waiting at most; more get 429 (default 64)\n"
    "  --max-tokens N         most tokens a request may generate (default 1024; chat's\n"
    "                         default)\n"
    "  --max-prompt N         most tokens of a prompt (default 4096)\n"
    "  --max-body N           most bytes of a request body (default 1048576)\n"
    "  --timeout S            close a connection idle for S seconds (default 60)\n"
    "  --forecast FILE        decode requests speculatively (docs/speculative.md): each its own\n"
    "                         tree in the shared steps, the same text; a request's\n"
    "                         \"speculative\": false decodes plainly, \"tree\": \"auto\" or [W1, ...]\n"
    "                         chooses its tree (at most --tree's rows); logprobs and n > 1\n"
    "                         decode plainly, as does a request whose adapters a set trained\n"
    "                         for one adapter does not serve. -b must hold --parallel trees\n"
    "  --tree auto|W1,W2,...  the tree of requests that give none (default auto); without\n"
    "                         --forecast, the set beside the model (MODEL.forecast.gguf)\n";

typedef struct serve_opts {
    cli_model_opts mo;
    const char *lora_dir, *host, *api_key, *chat_template;
    long port, parallel, n_batch, prompt_rows, prefix_cache, queue, max_tokens, max_prompt, max_body, timeout;
    cli_spec_opts spec;
} serve_opts;

static int parse_long(const char *a, int argc, char **argv, int *i, long lo, long hi, long *out) {
    const char *v = cli_value("serve", argc, argv, i);
    return v && cli_int("serve", a, v, lo, hi, out) ? CLI_OK : CLI_USAGE;
}

static int parse_args(serve_opts *o, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_model_opt("serve", &o->mo, argc, argv, &i);
        if (r == 0) r = cli_kv_opt("serve", &o->mo, argc, argv, &i);
        if (r == 0) r = cli_spec_opt("serve", &o->spec, argc, argv, &i);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        int rc = CLI_OK;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return -1;
        } else if (!strcmp(a, "--lora-dir")) {
            if (!(o->lora_dir = cli_value("serve", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--host")) {
            if (!(o->host = cli_value("serve", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--api-key")) {
            if (!(o->api_key = cli_value("serve", argc, argv, &i))) return CLI_USAGE;
            if (!*o->api_key) {
                cli_error("serve", "--api-key is empty");
                return CLI_USAGE;
            }
        } else if (!strcmp(a, "--chat-template")) {
            if (!(o->chat_template = cli_value("serve", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--port")) {
            rc = parse_long(a, argc, argv, &i, 0, 65535, &o->port);
        } else if (!strcmp(a, "--parallel")) {
            rc = parse_long(a, argc, argv, &i, 1, 256, &o->parallel);
        } else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
            rc = parse_long(a, argc, argv, &i, 1, 1 << 16, &o->n_batch);
        } else if (!strcmp(a, "--prefix-cache")) {
            rc = parse_long(a, argc, argv, &i, 0, 1024, &o->prefix_cache);
        } else if (!strcmp(a, "--prompt-rows")) {
            rc = parse_long(a, argc, argv, &i, 1, 1 << 16, &o->prompt_rows);
        } else if (!strcmp(a, "--queue")) {
            rc = parse_long(a, argc, argv, &i, 0, 1 << 16, &o->queue);
        } else if (!strcmp(a, "--max-tokens")) {
            rc = parse_long(a, argc, argv, &i, 1, 1 << 24, &o->max_tokens);
        } else if (!strcmp(a, "--max-prompt")) {
            rc = parse_long(a, argc, argv, &i, 1, 1 << 24, &o->max_prompt);
        } else if (!strcmp(a, "--max-body")) {
            rc = parse_long(a, argc, argv, &i, 1, 1L << 30, &o->max_body);
        } else if (!strcmp(a, "--timeout")) {
            rc = parse_long(a, argc, argv, &i, 1, 86400, &o->timeout);
        } else {
            cli_error("serve", "unknown option '%s'", a);
            return CLI_USAGE;
        }
        if (rc) return rc;
    }
    return CLI_OK;
}

/* The base's id in "model": its file name without directory and extension. */
static char *model_id(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char *id = strdup(base);
    char *dot = id ? strrchr(id, '.') : NULL;
    if (dot && dot != id) *dot = '\0';
    return id;
}

/* Waits for SIGTERM or SIGINT (blocked in every thread, so sigwait takes it here). */
static int wait_for_signal(const sigset_t *set) {
    int sig = 0;
    sigwait(set, &sig);
    return sig;
}

/* The rows a step needs with every sequence's tree in it (--parallel x --tree's largest step):
 * the batch's size unless -b says otherwise, refused if -b or -c cannot hold them. */
static int spec_batch(serve_opts *o, const el_forecast *f, int32_t spec_rows) {
    long need = o->parallel * (long)spec_rows;
    if (!f) {
        if (!o->n_batch) o->n_batch = 512;
        return CLI_OK;
    }
    if (o->n_batch && o->n_batch < need) {
        cli_error("serve", "-b %ld cannot hold the trees of --parallel %ld sequences (%d rows "
                  "each with --tree and the forecast set's %d slots): give -b %ld or more, or "
                  "a smaller --tree or --parallel", o->n_batch, o->parallel, spec_rows,
                  el_forecast_n_slots(f), need);
        return CLI_USAGE;
    }
    if (o->mo.ctx < spec_rows) {
        cli_error("serve", "-c %ld KV cells cannot hold one speculative step (%d rows with "
                  "--tree)", o->mo.ctx, spec_rows);
        return CLI_USAGE;
    }
    if (!o->n_batch) o->n_batch = need > 512 ? need : 512;
    return CLI_OK;
}

static int serve(const serve_opts *o, el_model *m, const char *path, const el_forecast *f) {
    serve_server sv = {.model = m, .chat_template = o->chat_template, .api_key = o->api_key,
                       .max_body = (size_t)o->max_body, .max_prompt = (int32_t)o->max_prompt,
                       .max_tokens = (int32_t)o->max_tokens, .timeout_s = (unsigned)o->timeout,
                       .n_ctx = (int32_t)o->mo.ctx, .kv_type = o->mo.kv_type,
                       .started = (long)time(NULL),
                       .max_connections = (int)(o->queue + o->parallel + 16),
                       .forecast = f, .spec = o->spec.params,
                       .spec_rows = f ? el_spec_max_rows(f, &o->spec.params) : 0};
    char *id = model_id(path);
    if (!id) {
        cli_error("serve", "out of memory");
        return CLI_FAIL;
    }
    sv.model_id = id;
    int rc = serve_adapters_open(m, o->lora_dir, &sv.adapters);
    serve_sched_params sp = {.model = m, .n_ctx = (int32_t)o->mo.ctx,
                             .n_parallel = (int32_t)o->parallel, .n_batch = (int32_t)o->n_batch,
                             .n_threads = (int32_t)o->mo.threads, .kv_type = o->mo.kv_type,
                             .queue_max = (int32_t)o->queue,
                             .n_prompt_rows = (int32_t)o->prompt_rows,
                             .n_cache = (int32_t)o->prefix_cache, .forecast = f};
    el_status st = EL_OK;
    if (!rc && (st = serve_sched_create(&sp, &sv.sched)) != EL_OK) rc = cli_fail("serve", st);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client gone mid-write is an error of that write */
    if (!rc) rc = serve_http_start(&sv, o->host, (int)o->port);
    if (!rc) {
        fprintf(stderr, "edgelora serve: %s with %d adapters, %ld sequences, %ld KV cells%s; "
                        "listening on http://%s:%d\n",
                id, serve_adapters_count(sv.adapters), o->parallel, o->mo.ctx,
                f ? ", speculative" : "", o->host, sv.port);
        int sig = wait_for_signal(&set);
        atomic_store(&sv.draining, true);
        fprintf(stderr, "edgelora serve: %s: finishing %ld requests in flight\n",
                sig == SIGTERM ? "SIGTERM" : "SIGINT", atomic_load(&sv.in_flight));
        serve_http_quiesce(&sv);
        while (atomic_load(&sv.in_flight) > 0) usleep(20000);
        serve_http_stop(&sv);
        fprintf(stderr, "edgelora serve: stopped\n");
    }
    serve_http_stop(&sv);
    serve_sched_free(sv.sched);
    serve_adapters_free(sv.adapters);
    free(id);
    return rc;
}

int cmd_serve(int argc, char **argv) {
    serve_opts o = {.host = "127.0.0.1", .port = 8080, .parallel = 8, .prefix_cache = 16,
                    .prompt_rows = 64, .queue = 64, .max_tokens = 1024, .max_prompt = 4096,
                    .max_body = 1 << 20, .timeout = 60};
    int rc = parse_args(&o, argc, argv);
    if (rc) return rc < 0 ? CLI_OK : rc;
#if defined(__GLIBC__) && defined(M_ARENA_MAX)
    /* every connection has a thread of its own, and glibc would give each new one an arena
     * whose freed pages stay resident: the server's memory would creep up with its traffic.
     * The HTTP threads allocate little (the scheduler thread does the work), so one arena costs
     * no contention worth having and keeps the resident set where the first requests left it
     * (tests/cli/test_serve_memory.sh) */
    mallopt(M_ARENA_MAX, 1);
#endif
    if (!o.mo.ctx) o.mo.ctx = 4096;
    const char *path = cli_model_path("serve", o.mo.model);
    if (!path) return CLI_FAIL;
    el_model *m;
    if ((rc = cli_load_model("serve", &o.mo, false, &m))) return rc;
    el_forecast *f = NULL;
    rc = cli_spec_load("serve", &o.spec, m, path, &f);
    if (!rc) rc = spec_batch(&o, f, f ? el_spec_max_rows(f, &o.spec.params) : 0);
    if (!rc) rc = serve(&o, m, path, f);
    el_forecast_free(f);
    el_model_free(m);
    return rc;
}
