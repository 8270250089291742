/* spec_opts.c - the self-speculative decoding options (--forecast, --tree) of run and bench. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char cli_spec_help[] =
    "  --forecast FILE        decode speculatively with this forecast set (train-forecast):\n"
    "                         the same tokens, more of them per step\n"
    "  --tree auto|W1,W2,...  the candidate tree: auto (default) chooses it each step from the\n"
    "                         acceptance seen and the measured step costs; W1,W2,... gives W1\n"
    "                         candidates at depth 1, W2 at depth 2, ... (each 1..8). Without\n"
    "                         --forecast, the set beside the model (MODEL less .gguf, plus\n"
    "                         .forecast.gguf)\n";

int cli_spec_opt(const char *cmd, cli_spec_opts *o, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    if (!strcmp(a, "--forecast")) {
        return (o->forecast = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    } else if (!strcmp(a, "--tree")) {
        const char *v = cli_value(cmd, argc, argv, i);
        if (!v) return -1;
        o->on = true;
        o->params.tree_auto = !strcmp(v, "auto");
        if (o->params.tree_auto) return 1;
        o->params.n_depth = 0;
        for (const char *p = v; *p;) {
            char *end;
            long w = strtol(p, &end, 10);
            if (end == p || w < 1 || w > 8 || o->params.n_depth == EL_SPEC_MAX_DEPTH ||
                (*end && *end != ',')) {
                cli_error(cmd, "--tree '%s': give auto, or widths 1..8 separated by commas (at "
                          "most %d)", v, EL_SPEC_MAX_DEPTH);
                return -1;
            }
            o->params.width[o->params.n_depth++] = (int32_t)w;
            p = *end ? end + 1 : end;
        }
        return 1;
    }
    return 0;
}

int cli_spec_load(const char *cmd, cli_spec_opts *o, const el_model *m, const char *model_path,
                  el_forecast **out) {
    *out = NULL;
    if (!o->forecast && !o->on) return CLI_OK;
    if (o->forecast && !o->on) o->params.tree_auto = true, o->on = true;
    char beside[4096];
    const char *path = o->forecast;
    if (!path) {
        size_t n = strlen(model_path);
        if (n > 5 && !strcmp(model_path + n - 5, ".gguf")) n -= 5;
        snprintf(beside, sizeof beside, "%.*s.forecast.gguf", (int)n, model_path);
        path = beside;
    }
    el_status st = el_forecast_load(m, path, out);
    if (st != EL_OK) return cli_fail(cmd, st);
    if (!o->params.tree_auto && o->params.n_depth > el_forecast_n_slots(*out)) {
        cli_error(cmd, "--tree has %d depths; %s has %d slots", o->params.n_depth, path,
                  el_forecast_n_slots(*out));
        el_forecast_free(*out);
        *out = NULL;
        return CLI_USAGE;
    }
    return CLI_OK;
}
