/* merge.c - `edgelora merge`: base model + LoRA adapters written as one GGUF. */
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora merge -m BASE.gguf --lora A [--lora-scaled B SCALE] ... -o OUT.gguf\n"
    "Writes BASE with the adapters' terms added to its weights (W + scale * alpha/rank * B A for\n"
    "each adapter; changed weights are stored as F32, everything else is copied). The offline\n"
    "alternative to binding adapters at run time.\n"
    "  -m, --model FILE          the base model (GGUF)\n"
    "  --lora FILE               a GGUF LoRA adapter or a PEFT adapter folder (scale 1)\n"
    "  --lora-scaled FILE SCALE  the same with a scale\n"
    "  -o, --output FILE         the merged model (written to a temporary file, then renamed)\n";

int cmd_merge(int argc, char **argv) {
    const char *model = NULL, *out = NULL;
    cli_lora_opts lo = {.n = 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_lora_opt("merge", &lo, argc, argv, &i);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return CLI_OK;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(model = cli_value("merge", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value("merge", argc, argv, &i))) return CLI_USAGE;
        } else {
            cli_error("merge", "unknown option '%s'", a);
            return CLI_USAGE;
        }
    }
    if (!out || lo.n == 0) {
        cli_error("merge", "needs at least one --lora or --lora-scaled, and -o (see --help)");
        return CLI_USAGE;
    }
    if (!(model = cli_model_path("merge", model))) return CLI_USAGE;
    el_status st = el_merge_adapters(model, lo.paths, lo.scales, lo.n, out);
    if (st != EL_OK) return cli_fail("merge", st);
    fprintf(stderr, "edgelora merge: wrote %s\n", out);
    return CLI_OK;
}
