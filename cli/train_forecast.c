/* train_forecast.c - `edgelora train-forecast`: forecast vectors for self-speculative decoding. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char train_forecast_help[] =
    "usage: edgelora train-forecast -m BASE.gguf [--lora ADAPTER] --slots M -f TEXT... "
    "-o FORECAST.gguf [options]\n"
    "Trains M forecast vectors for self-speculative decoding (`run --forecast`): appended after\n"
    "a token, slot j guesses the token j+1 positions after it. The base model (and the adapter)\n"
    "stay frozen; only the vectors learn. By default the slots learn the model's own greedy\n"
    "continuation of each text prefix (what decoding can accept). The file names the base (and\n"
    "adapter) it was trained for and is refused for another. Writes the loss curves as an SVG.\n"
    "  -m, --model FILE      the base model (llama architecture; quantized weights are fine)\n"
    "  --lora FILE           train for the base with this adapter bound\n"
    "  --slots M             forecast vectors, 1..8 (default 3)\n"
    "  --prefix N            most text tokens before the slots (default: context - M, <= 64)\n"
    "  --text-targets        learn the text's next tokens, not the model's greedy ones\n"
    "  -o FILE               the forecast set to write\n";

int cmd_train_forecast(int argc, char **argv) {
    cli_train_opts o = {.p = el_train_default_params()};
    el_forecast_train_params fp = el_forecast_train_default_params();
    const char *out = NULL;
    long n;
    int rc = CLI_USAGE;
    o.p.lr = 3e-3f;
    o.p.weight_decay = 0.0f;
    o.p.n_steps = 200;
    o.p.batch = 16;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int r = cli_train_opt("train-forecast", &o, argc, argv, &i);
        if (r < 0) goto done;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(train_forecast_help, stdout);
            fputs(cli_train_opts_help, stdout);
            rc = CLI_OK;
            goto done;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(fp.base_path = cli_value("train-forecast", argc, argv, &i))) goto done;
        } else if (!strcmp(a, "--lora")) {
            if (!(fp.adapter_path = cli_value("train-forecast", argc, argv, &i))) goto done;
        } else if (!strcmp(a, "--slots")) {
            if (!(v = cli_value("train-forecast", argc, argv, &i)) ||
                !cli_int("train-forecast", a, v, 1, 8, &n))
                goto done;
            fp.n_slots = (int32_t)n;
        } else if (!strcmp(a, "--prefix")) {
            if (!(v = cli_value("train-forecast", argc, argv, &i)) ||
                !cli_int("train-forecast", a, v, 2, 1 << 16, &n))
                goto done;
            fp.prefix = (int32_t)n;
        } else if (!strcmp(a, "--text-targets")) {
            fp.text_targets = true;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value("train-forecast", argc, argv, &i))) goto done;
        } else {
            cli_error("train-forecast", "unknown option '%s'", a);
            goto done;
        }
    }
    if (!out || o.p.n_train_files == 0) {
        cli_error("train-forecast", "needs -f and -o (see --help)");
        goto done;
    }
    if (!(fp.base_path = cli_model_path("train-forecast", fp.base_path))) goto done;
    char plot[4096];
    cli_train_begin(&o, out, plot, sizeof plot);
    el_status st = el_train_forecast(&o.p, &fp, out);
    return cli_train_end("train-forecast", &o, st, out);
done:
    free((void *)o.p.train_files);
    free((void *)o.p.eval_files);
    return rc;
}
