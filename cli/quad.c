/* quad.c - `edgelora quad`: one quantization profile for every adapter of a base (el_quad). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora quad -m BASE --lora A.gguf --lora B.gguf ... --data DIR -o OUTDIR [options]\n"
    "QUAD: one quantization profile that every adapter runs under in int8, each adapter tuned\n"
    "to it. (a) each adapter's own profile from its training examples; (b) its sensitivity,\n"
    "KL(float || int8 under that profile) on its held-out examples; (c) the most sensitive one's\n"
    "profile is shared; (d) every other adapter is tuned by distillation into it (teacher: the\n"
    "float base with the float adapter; student: the base under the shared profile with the\n"
    "adapter on its int8 grids; loss KL(teacher || student) on the response tokens); (e) writes\n"
    "OUTDIR/profile.gguf and OUTDIR/<name>.gguf for every adapter (for that profile only: run\n"
    "them with --profile OUTDIR/profile.gguf), <name>.own.profile.gguf and <name>.loss.svg.\n"
    "DIR holds <name>.train.jsonl and <name>.eval.jsonl per adapter ({\"prompt\", \"response\"}\n"
    "lines; <name>: the adapter's file name without .gguf).\n"
    "  -m, --model FILE      the base model (default: the default model)\n"
    "  --lora FILE           an adapter (repeatable)\n"
    "  --data DIR            the adapters' examples\n"
    "  --tokens N            calibration tokens per adapter (default 4096)\n"
    "  --percentile P        of |x| and |A x| that maps to 127 (90..100, default 99.99)\n"
    "  -c, --ctx N           tokens per example (default 128)\n"
    "  -o, --output DIR      where to write\n"
    "The distillation's options. Its own defaults are 100 steps, lr 1e-4 and no weight decay;\n"
    "the defaults printed below are those of `edgelora train`:\n";

typedef struct stage_state {
    cli_train_opts *o;
    const char *const *names;
    double start;
} stage_state;

static bool on_stage(void *user, const char *stage, int32_t i, int32_t n) {
    stage_state *s = user;
    s->o->last_eval = NAN; /* each tuning's curve is its own */
    if (!s->o->quiet)
        fprintf(stderr, "quad: %s of %s (%d/%d), %.0f s in\n", stage, s->names[i], i + 1, n,
                (cli_now_ms() - s->start) / 1000.0);
    return true;
}

static void print_results(const el_quad_adapter *r, int32_t n, const char *out) {
    printf("| adapter | float | int8 own profile | int8 shared | QUAD tuned | sensitivity | "
           "KL shared | KL tuned |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (int32_t i = 0; i < n; i++)
        printf("| %s%s | %.4f | %.4f | %.4f | %.4f | %.5f | %.5f | %.5f |\n", r[i].name,
               r[i].sets_profile ? " (sets the profile)"
               : r[i].tuned      ? ""
                                 : " (tuning not kept: no closer)",
               r[i].float_loss, r[i].own_loss, r[i].shared_loss, r[i].tuned_loss,
               r[i].sensitivity, r[i].kl_before, r[i].kl_after);
    printf("held-out cross-entropy of the response tokens (nats); sensitivity: KL(float || int8 "
           "under its own profile); KL(float || int8 under the shared profile) as it came and "
           "tuned. Wrote %s/profile.gguf and the adapters for it.\n", out);
}

int cmd_quad(int argc, char **argv) {
    cli_train_opts o = {.p = el_train_default_params()};
    el_quad_params qp = el_quad_default_params();
    o.p = qp.train;
    const char *model = NULL, *out = NULL;
    cli_lora_opts lo = {.n = 0};
    int rc = CLI_USAGE;
    long n;
    double x;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int r = cli_train_opt("quad", &o, argc, argv, &i);
        if (r == 0) r = cli_lora_opt("quad", &lo, argc, argv, &i);
        if (r < 0) goto done;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            fputs(cli_train_opts_help, stdout);
            rc = CLI_OK;
            goto done;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(model = cli_value("quad", argc, argv, &i))) goto done;
        } else if (!strcmp(a, "--data")) {
            if (!(qp.data_dir = cli_value("quad", argc, argv, &i))) goto done;
        } else if (!strcmp(a, "--tokens")) {
            if (!(v = cli_value("quad", argc, argv, &i)) || !cli_int("quad", a, v, 1, 1L << 30, &n))
                goto done;
            qp.calib_tokens = n;
        } else if (!strcmp(a, "--percentile")) {
            if (!(v = cli_value("quad", argc, argv, &i)) || !cli_float("quad", a, v, 90, 100, &x))
                goto done;
            qp.percentile = x;
        } else if (!strcmp(a, "-c") || !strcmp(a, "--ctx")) {
            if (!(v = cli_value("quad", argc, argv, &i)) || !cli_int("quad", a, v, 2, 1 << 16, &n))
                goto done;
            o.p.n_ctx = (int32_t)n;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value("quad", argc, argv, &i))) goto done;
        } else {
            cli_error("quad", "unknown option '%s'", a);
            goto done;
        }
    }
    if (lo.n == 0 || !qp.data_dir || !out) {
        cli_error("quad", "needs --lora (at least one), --data and -o (see --help)");
        goto done;
    }
    if (o.p.n_train_files || o.p.n_eval_files || o.p.checkpoint_path || o.p.resume) {
        cli_error("quad", "-f, --eval, --checkpoint and --resume do not apply: the examples come "
                  "from --data, and a run starts over");
        goto done;
    }
    for (int i = 0; i < lo.n; i++)
        if (lo.scales[i] != 1.0f) {
            cli_error("quad", "--lora-scaled: QUAD tunes adapters at scale 1");
            goto done;
        }
    if (!(model = cli_model_path("quad", model))) goto done;
    el_quad_adapter *results = calloc((size_t)lo.n, sizeof *results);
    if (!results) {
        cli_error("quad", "out of memory");
        goto done;
    }
    o.no_plot = true; /* el_quad writes one per adapter */
    char unused[8];
    cli_train_begin(&o, out, unused, sizeof unused);
    stage_state ss = {&o, lo.paths, cli_now_ms()};
    qp.train = o.p;
    qp.adapters = lo.paths;
    qp.n_adapters = lo.n;
    qp.stage = on_stage;
    qp.user = &ss;
    el_status st = el_quad(model, &qp, out, results);
    if (o.tty && !o.quiet) fputc('\n', stderr);
    if (st == EL_OK) {
        print_results(results, lo.n, out);
        rc = CLI_OK;
    } else {
        rc = cli_fail("quad", st);
    }
    free(results);
done:
    free((void *)o.p.train_files);
    free((void *)o.p.eval_files);
    return rc;
}
