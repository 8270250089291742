/* profile.c - `edgelora profile`: a quantization profile for a base and its adapters. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora profile [-m MODEL] [--lora A.gguf ...] --data TEXT -o OUT.profile.gguf\n"
    "Calibrates one quantization profile for the base and every adapter given: the fixed scale\n"
    "of each linear layer's int8 input activations and of the adapters' int8 A, B and A x, from\n"
    "TEXT run through the model with each adapter bound in turn. Run under it with --profile\n"
    "(run, batch, bench, perplexity, eval, chat, serve): the adapters are then quantized to int8\n"
    "with the profile's scales when loaded and their terms computed in integers; an adapter the\n"
    "profile was not made with is clamped to its range (reported).\n"
    "  -m, --model FILE     the base model (default: the default model)\n"
    "  --lora FILE          an adapter the profile must hold (repeatable)\n"
    "  --data FILE          calibration text\n"
    "  --tokens N           tokens of it to use (default 4096)\n"
    "  --percentile P       of |x| and |A x| that maps to 127 (90..100, default 99.99)\n"
    "  -t, --threads N      threads (default: all cores)\n"
    "  -o, --output FILE    the profile (written whole or not at all)\n";

static volatile sig_atomic_t interrupted;

static void on_signal(int sig) {
    (void)sig;
    interrupted = 1;
}

typedef struct progress {
    double start;
    bool tty;
    int last_tenth; /* plain lines when stderr is a log: one per tenth */
} progress;

static bool on_tokens(void *user, int64_t done, int64_t total) {
    progress *p = user;
    double secs = (cli_now_ms() - p->start) / 1000.0, frac = (double)done / (double)total;
    double eta = frac > 0 ? secs / frac - secs : 0.0;
    if (p->tty) {
        fprintf(stderr, "\r\033[Kcalibrating %lld/%lld tokens  %.0f tok/s  ETA %.0f s",
                (long long)done, (long long)total, (double)done / (secs > 0 ? secs : 1e-9), eta);
    } else if ((int)(frac * 10) > p->last_tenth) {
        p->last_tenth = (int)(frac * 10);
        fprintf(stderr, "profile: %lld/%lld tokens, %.1f s, ETA %.0f s\n", (long long)done,
                (long long)total, secs, eta);
    }
    return !interrupted;
}

/* Each adapter loaded under the new profile: its int8 bytes and what it clamps. */
static int report(const char *model, const char *out, const cli_lora_opts *lo) {
    el_model_params mp = el_model_default_params();
    mp.profile_path = out;
    el_model *m = NULL;
    el_status st = el_model_load(model, &mp, &m);
    for (int i = 0; st == EL_OK && i < lo->n; i++) {
        el_adapter *ad = NULL;
        el_adapter_info info;
        if ((st = el_adapter_load(m, lo->paths[i], &ad)) == EL_OK &&
            (st = el_adapter_get_info(ad, &info)) == EL_OK)
            printf("  %-24s int8, %.1f KB, %llu of %llu values clamped\n", info.name,
                   (double)info.bytes / 1024.0, (unsigned long long)info.n_clipped,
                   (unsigned long long)info.n_values);
        el_adapter_free(ad);
    }
    el_model_free(m);
    return st == EL_OK ? CLI_OK : cli_fail("profile", st);
}

int cmd_profile(int argc, char **argv) {
    const char *model = NULL, *out = NULL;
    cli_lora_opts lo = {.n = 0};
    el_profile_params pp = el_profile_default_params();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        long n;
        double d;
        int r = cli_lora_opt("profile", &lo, argc, argv, &i);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return CLI_OK;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(model = cli_value("profile", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value("profile", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--data")) {
            if (!(pp.text_path = cli_value("profile", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--tokens")) {
            if (!(v = cli_value("profile", argc, argv, &i)) ||
                !cli_int("profile", a, v, 1, 1L << 30, &n))
                return CLI_USAGE;
            pp.max_tokens = n;
        } else if (!strcmp(a, "--percentile")) {
            if (!(v = cli_value("profile", argc, argv, &i)) ||
                !cli_float("profile", a, v, 90, 100, &d))
                return CLI_USAGE;
            pp.percentile = d;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!(v = cli_value("profile", argc, argv, &i)) ||
                !cli_int("profile", a, v, 1, 1024, &n))
                return CLI_USAGE;
            pp.n_threads = (int32_t)n;
        } else {
            cli_error("profile", "unknown option '%s'", a);
            return CLI_USAGE;
        }
    }
    if (!out || !pp.text_path) {
        cli_error("profile", "needs --data TEXT and -o OUT (see --help)");
        return CLI_USAGE;
    }
    if (!(model = cli_model_path("profile", model))) return CLI_USAGE;
    for (int i = 0; i < lo.n; i++)
        if (lo.scales[i] != 1.0f) {
            cli_error("profile", "--lora-scaled: a profile holds adapters at scale 1 (binding "
                                 "scales multiply their integer sums later)");
            return CLI_USAGE;
        }
    pp.adapters = lo.paths;
    pp.n_adapters = lo.n;
    progress p = {.start = cli_now_ms(), .tty = isatty(STDERR_FILENO), .last_tenth = 0};
    pp.progress = on_tokens;
    pp.user = &p;
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    el_status st = el_profile_make(model, &pp, out);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (p.tty) fputs("\r\033[K", stderr);
    if (st) return cli_fail("profile", st);
    printf("wrote %s in %.1f s (%d adapter%s, the %gth percentile over up to %lld tokens of %s)\n",
           out,
           (cli_now_ms() - p.start) / 1000.0, lo.n, lo.n == 1 ? "" : "s", pp.percentile,
           (long long)pp.max_tokens, pp.text_path);
    return report(model, out, &lo);
}
