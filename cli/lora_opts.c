/* lora_opts.c - the adapter flags `run`, `merge`, `eval`, `bench` and `perplexity` share:
 * --lora FILE and --lora-scaled FILE SCALE (llama.cpp's names), each repeatable; and loading
 * what they name. */
#include <string.h>

#include "cli.h"

int cli_lora_opt(const char *cmd, cli_lora_opts *o, int argc, char **argv, int *i) {
    const char *a = argv[*i], *path;
    bool scaled = !strcmp(a, "--lora-scaled");
    if (!scaled && strcmp(a, "--lora") != 0) return 0;
    if (scaled && *i + 2 >= argc) {
        cli_error(cmd, "option --lora-scaled needs two values: an adapter file and its scale "
                  "(--lora-scaled FILE SCALE)");
        return -1;
    }
    if (!(path = cli_value(cmd, argc, argv, i))) return -1;
    double scale = 1.0;
    if (scaled) {
        const char *v = cli_value(cmd, argc, argv, i);
        if (!v || !cli_float(cmd, a, v, -1e6, 1e6, &scale)) return -1;
    }
    if (o->n == CLI_MAX_LORA) {
        cli_error(cmd, "at most %d adapters", CLI_MAX_LORA);
        return -1;
    }
    o->paths[o->n] = path;
    o->scales[o->n++] = (float)scale;
    return 1;
}

el_status cli_lora_load(const cli_lora_opts *o, const el_model *m, el_binding *bind, int *n) {
    for (*n = 0; *n < o->n; ++*n) {
        el_status st = el_adapter_load(m, o->paths[*n], &bind[*n].adapter);
        if (st != EL_OK) return st;
        bind[*n].scale = o->scales[*n];
    }
    return EL_OK;
}
