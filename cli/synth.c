/* synth.c - `edgelora synth`: a model of a real architecture's shape with random weights. */
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora synth --shape SHAPE [--type T] -o OUT.gguf [--seed S]\n"
    "Writes a model with the exact shape of a real one (hyper-parameters, tensor shapes, a\n"
    "full-size tokenizer with the real special token ids) and RANDOM weights: for measuring\n"
    "speed and memory at real sizes without a download, never for quality.\n"
    "  --shape SHAPE  llama-3.2-1b, stories110m, stories15m, qwen3-0.6b, phi-3.5-mini,\n"
    "                 qwen2.5-0.5b, smollm-135m, tinyllama-1.1b, gemma-3-1b\n"
    "  --type T       type of the weight matrices: q4_0 (default), q8_0, q4_k, q6_k, f16, bf16,\n"
    "                 f32, or edgelora's own w8 (w8a8), w4 (w4a8), w4g32, w4g64, w4g128, w8a16\n"
    "                 (which llama.cpp cannot read)\n"
    "  --seed S       seed of the weights and vocabulary (default 1)\n"
    "  --list         print the known shapes\n";

/* The known shapes, ", "-separated, for a message. */
static void print_shapes(FILE *f) {
    for (const char *const *s = el_synth_shapes(); *s; s++)
        fprintf(f, "%s%s", s == el_synth_shapes() ? "" : ", ", *s);
}

static bool is_known_shape(const char *name) {
    for (const char *const *s = el_synth_shapes(); *s; s++)
        if (!strcmp(*s, name)) return true;
    return false;
}

int cmd_synth(int argc, char **argv) {
    const char *shape = NULL, *type = NULL, *out = NULL;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return CLI_OK;
        } else if (!strcmp(a, "--list")) {
            for (const char *const *s = el_synth_shapes(); *s; s++) printf("%s\n", *s);
            return CLI_OK;
        } else if (!strcmp(a, "--shape")) {
            if (!(shape = cli_value("synth", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--type")) {
            if (!(type = cli_value("synth", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value("synth", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--seed")) {
            if (!(v = cli_value("synth", argc, argv, &i)) || !cli_u64("synth", a, v, &seed))
                return CLI_USAGE;
        } else {
            cli_error("synth", "unexpected argument '%s'", a);
            return CLI_USAGE;
        }
    }
    if (!shape || !out) {
        cli_error("synth", "needs --shape and -o (see --help)");
        return CLI_USAGE;
    }
    /* what is wrong is said before what will be written is warned of */
    if (!is_known_shape(shape)) {
        fprintf(stderr, "edgelora synth: unknown shape '%s' (known: ", shape);
        print_shapes(stderr);
        fputs(")\n", stderr);
        return CLI_FAIL;
    }
    bool readable = true;
    if (type && el_quantize_type_check(type, &readable) != EL_OK) {
        cli_error("synth", "%s", el_last_error());
        return CLI_FAIL;
    }
    fprintf(stderr, "edgelora synth: warning: the weights are random; use this model for speed "
            "and memory measurements only\n");
    if (!readable)
        fprintf(stderr, "edgelora synth: warning: %s is an edgelora type; llama.cpp cannot read "
                "%s\n", type, out);
    cli_progress pr;
    cli_progress_start(&pr);
    el_status st = el_synth(shape, type, out, seed, cli_progress_update, &pr);
    double t = cli_progress_end(&pr);
    if (st != EL_OK) return cli_fail("synth", st);
    fprintf(stderr, "edgelora synth: wrote %s (%s, %.1f MB in %.2f s)\n", out, shape,
            (double)pr.bytes / 1e6, t);
    return CLI_OK;
}
