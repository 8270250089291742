/* quantize.c - `edgelora quantize`: a GGUF model with its weight matrices in another type, the
 * error of each converted tensor, with --calibrate static activation scales, and with
 * --ppl-text the perplexity before and after. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora quantize IN.gguf OUT.gguf --type TYPE [--pure] [--ppl-text FILE [-c CTX]]\n"
    "                         [--calibrate TEXTFILE [--calib-tokens N] [--calib-percentile P]]\n"
    "                         [-t THREADS]\n"
    "Writes IN with its weight matrices (2-D tensors named *weight; never norms or biases)\n"
    "converted to TYPE, one of llama-quantize's file types, each tensor in the type\n"
    "llama.cpp's mix gives it (the output head in q6_k, some attn_v and ffn_down in more\n"
    "bits; docs/quantize.md):\n"
    "  q2_k  q3_k_s  q3_k_m (q3_k)  q3_k_l  q4_k_s  q4_k_m (q4_k)  q5_k_s  q5_k_m (q5_k)\n"
    "  q6_k  q8_0  q4_0  q4_1  q5_0  q5_1  iq4_nl  iq4_xs  f16  bf16  f32\n"
    "or one of edgelora's own types, written in every weight alike, which llama.cpp cannot\n"
    "read (docs/formats.md): w8 (w8a8), w4 (w4a8), w4g32, w4g64, w4g128, w8a16.\n"
    "  --pure   every weight in TYPE's base type (q4_k for q4_k_m), as llama-quantize --pure\n"
    "Rows whose length does not fit a type's blocks fall back as llama.cpp does. Prints, for\n"
    "each tensor, its type before and after and the relative RMS error ||W - Q(W)|| / ||W||\n"
    "of what was written. With --ppl-text, also the perplexity of IN and OUT over FILE\n"
    "(chunks of CTX tokens, default 512, as `edgelora perplexity` measures it). OUT is\n"
    "written only when complete; an interrupted run leaves no file.\n"
    "With --calibrate (w8, w4, w4g* only: the types that dot int8 activations), IN is first\n"
    "run over the first N tokens of TEXTFILE (default 8192) and each weight gets a static\n"
    "scale for its int8 activations, r / 127 where r is the P-th percentile (90 to 100,\n"
    "default 99.99; 100: the maximum) of |x| at its input; larger |x| are clipped. The scales\n"
    "are stored in OUT and used instead of per-token scales (docs/quantize.md); --ppl-text\n"
    "then reports OUT with static and with per-token scales.\n";

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) { interrupted = sig; }

typedef struct progress {
    bool tty;
    struct timespec start; /* of the run */
    struct timespec conv;  /* of the conversion (after any calibration): its MB/s and ETA */
    long long calib_tokens; /* tokens calibration ran over */
} progress;

static double since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

static bool on_calib(void *user, int64_t done, int64_t total) {
    progress *p = user;
    p->calib_tokens = (long long)done;
    if (done == total) clock_gettime(CLOCK_MONOTONIC, &p->conv);
    if (p->tty) {
        double secs = since(&p->start), frac = (double)done / (double)total;
        int fill = (int)(frac * 30);
        fprintf(stderr, "\r\033[Kcalibrating [%.*s%*s] %lld/%lld tokens  %.0f tok/s  ETA %.0f s",
                fill, "##############################", 30 - fill, "", (long long)done,
                (long long)total, (double)done / (secs > 0 ? secs : 1e-9),
                frac > 0 ? secs / frac - secs : 0.0);
    }
    return !interrupted;
}

static bool on_tensor(void *user, const el_quantize_tensor *t) {
    progress *p = user;
    if (p->tty) fputs("\r\033[K", stderr); /* the bar goes; the report line takes its place */
    if (t->quantized && t->act_scale > 0)
        printf("[%4d/%d] %-32s %-6s -> %-6s rel. RMS error %.5f  act. scale %.6g%s\n",
               t->index + 1, t->n_tensors, t->name, t->from_type, t->to_type, t->rel_rms_error,
               (double)t->act_scale,
               t->fallback ? "  (fallback: rows do not fit the type's blocks)" : "");
    else if (t->quantized)
        printf("[%4d/%d] %-32s %-6s -> %-6s rel. RMS error %.5f%s\n", t->index + 1, t->n_tensors,
               t->name, t->from_type, t->to_type, t->rel_rms_error,
               t->fallback ? "  (fallback: rows do not fit the type's blocks)" : "");
    else
        printf("[%4d/%d] %-32s %-6s    (copied)\n", t->index + 1, t->n_tensors, t->name,
               t->from_type);
    fflush(stdout);
    if (p->tty) {
        double secs = since(&p->conv), frac = (double)t->bytes_done / (double)t->bytes_total;
        double mb_s = (double)t->bytes_done / 1e6 / (secs > 0 ? secs : 1e-9);
        int fill = (int)(frac * 30);
        fprintf(stderr, "[%.*s%*s] tensor %d/%d  %.0f MB/s  ETA %.0f s", fill,
                "##############################", 30 - fill, "", t->index + 1, t->n_tensors, mb_s,
                frac > 0 ? secs / frac - secs : 0.0);
    }
    return !interrupted;
}

/* Perplexity of the model at path over text, as `edgelora perplexity` measures it (with
 * per-token activation scales where the file has static ones if dynamic). Returns an exit code,
 * after printing any error. */
static int perplexity(const char *path, bool dynamic, const char *text, size_t len,
                      int32_t n_ctx, int32_t n_threads, double *ppl) {
    el_model *m = NULL;
    int32_t *tokens = NULL;
    size_t n_tokens = 0;
    cli_ppl r = {0};
    el_model_params mp = el_model_default_params();
    mp.ignore_act_scales = dynamic;
    el_status st = el_model_load(path, &mp, &m);
    if (st == EL_OK) st = cli_tokenize(m, text, len, true, false, &tokens, &n_tokens);
    cli_ppl_params pp = {.n_ctx = n_ctx, .n_threads = n_threads, .kv_type = EL_KV_F16};
    if (st == EL_OK) st = cli_perplexity(m, tokens, n_tokens, &pp, &r);
    free(tokens);
    el_model_free(m);
    if (st != EL_OK) return cli_fail("quantize", st);
    if (r.n_chunks == 0) {
        cli_error("quantize", "the perplexity text has %zu tokens, fewer than one chunk of %d",
                  n_tokens, n_ctx);
        return CLI_FAIL;
    }
    *ppl = cli_ppl_value(&r);
    return CLI_OK;
}

int cmd_quantize(int argc, char **argv) {
    const char *paths[2] = {NULL, NULL}, *type = NULL, *ppl_file = NULL, *calib_file = NULL;
    long threads = 0, n_ctx = 512, calib_tokens = 8192;
    double calib_percentile = 99.99;
    int n_paths = 0;
    bool pure = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return CLI_OK;
        } else if (!strcmp(a, "--type")) {
            if (!(type = cli_value("quantize", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--pure")) {
            pure = true;
        } else if (!strcmp(a, "--ppl-text")) {
            if (!(ppl_file = cli_value("quantize", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--calibrate")) {
            if (!(calib_file = cli_value("quantize", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--calib-tokens")) {
            if (!(v = cli_value("quantize", argc, argv, &i)) ||
                !cli_int("quantize", a, v, 1, 1L << 30, &calib_tokens))
                return CLI_USAGE;
        } else if (!strcmp(a, "--calib-percentile")) {
            if (!(v = cli_value("quantize", argc, argv, &i)) ||
                !cli_float("quantize", a, v, 90.0, 100.0, &calib_percentile))
                return CLI_USAGE;
        } else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) {
            if (!(v = cli_value("quantize", argc, argv, &i)) ||
                !cli_int("quantize", a, v, 4, 1 << 20, &n_ctx))
                return CLI_USAGE;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!(v = cli_value("quantize", argc, argv, &i)) ||
                !cli_int("quantize", a, v, 0, 1024, &threads))
                return CLI_USAGE;
        } else if (a[0] == '-' && a[1]) {
            cli_error("quantize", "unknown option '%s'", a);
            return CLI_USAGE;
        } else if (n_paths < 2) {
            paths[n_paths++] = a;
        } else {
            cli_error("quantize", "unexpected argument '%s'", a);
            return CLI_USAGE;
        }
    }
    if (n_paths < 2 || !type) {
        cli_error("quantize", "need IN.gguf, OUT.gguf and --type (see --help)");
        return CLI_USAGE;
    }
    bool ggml_type;
    el_status st = el_quantize_type_check(type, &ggml_type);
    if (st) {
        cli_fail("quantize", st);
        return CLI_USAGE;
    }
    if (!ggml_type)
        fprintf(stderr, "edgelora quantize: warning: %s is an edgelora type; llama.cpp cannot "
                        "read %s\n", type, paths[1]);
    char *text = NULL;
    size_t len = 0;
    if (ppl_file && !(text = cli_read_file("quantize", ppl_file, &len))) return CLI_FAIL;

    progress p = {.tty = isatty(STDERR_FILENO)};
    clock_gettime(CLOCK_MONOTONIC, &p.start);
    p.conv = p.start;
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    el_quantize_params qp = el_quantize_default_params();
    qp.type = type;
    qp.pure = pure;
    qp.n_threads = (int32_t)threads;
    qp.progress = on_tensor;
    qp.user = &p;
    qp.calib_path = calib_file;
    qp.calib_tokens = calib_tokens;
    qp.calib_percentile = calib_percentile;
    qp.calib_progress = on_calib;
    st = el_quantize(paths[0], paths[1], &qp);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (p.tty) fputs("\r\033[K", stderr);
    if (st) {
        free(text);
        return cli_fail("quantize", st);
    }
    if (calib_file && calib_percentile < 100)
        printf("static activation scales: the %gth percentile of |x| over %lld tokens of %s\n",
               calib_percentile, p.calib_tokens, calib_file);
    else if (calib_file)
        printf("static activation scales: the maximum of |x| over %lld tokens of %s\n",
               p.calib_tokens, calib_file);
    printf("wrote %s (%s%s) in %.1f s\n", paths[1], type, pure ? ", pure" : "",
           since(&p.start));
    int rc = CLI_OK;
    if (text) {
        double before, after, dynamic = 0;
        rc = perplexity(paths[0], false, text, len, (int32_t)n_ctx, (int32_t)threads, &before);
        if (rc == CLI_OK)
            rc = perplexity(paths[1], false, text, len, (int32_t)n_ctx, (int32_t)threads, &after);
        if (rc == CLI_OK && calib_file)
            rc = perplexity(paths[1], true, text, len, (int32_t)n_ctx, (int32_t)threads, &dynamic);
        if (rc == CLI_OK)
            printf("perplexity over %s (ctx %ld): %.4f -> %.4f (%+.2f%%)%s\n", ppl_file, n_ctx,
                   before, after, 100.0 * (after / before - 1.0),
                   calib_file ? " with static activation scales" : "");
        if (rc == CLI_OK && calib_file)
            printf("perplexity over %s (ctx %ld): %.4f -> %.4f (%+.2f%%) with per-token "
                   "activation scales\n", ppl_file, n_ctx, before, dynamic,
                   100.0 * (dynamic / before - 1.0));
    }
    free(text);
    return rc;
}
