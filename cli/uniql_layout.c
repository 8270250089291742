/* uniql_layout.c - `edgelora uniql-layout`: a model in the UniQL layout with a uniform plan. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora uniql-layout MODEL -o OUT.gguf [--rates R0,R1,...]\n"
    "Writes MODEL (a llama-family GGUF) in the UniQL layout (docs/formats.md) with the uniform\n"
    "plan: at each rate every layer keeps the fraction 1 - rate of its MLP channels and Q/K, V/O\n"
    "head dims, rounded to the layout's granularity, with nothing sorted: the weights are kept\n"
    "as they are, so the file measures the speed and memory of pruning (run, bench ... --prune),\n"
    "not its quality (that is `edgelora compress`).\n"
    "  --rates LIST   ascending rates from 0, below 1\n"
    "                 (default 0,0.05,0.1,0.15,0.2,0.25,0.3,0.35)\n";

enum { MAX_RATES = 64 };

/* "0,0.1,..." into rates; false after an error. */
static bool parse_rates(const char *s, float *rates, int32_t *n) {
    *n = 0;
    while (*s) {
        char *end;
        double v = strtod(s, &end);
        if (end == s || (*end && *end != ',') || *n == MAX_RATES || !(v >= 0 && v < 1)) {
            cli_error("uniql-layout", "--rates: '%s' is not a list of up to %d rates from 0 to "
                      "below 1", s, MAX_RATES);
            return false;
        }
        rates[(*n)++] = (float)v;
        s = *end ? end + 1 : end;
    }
    return *n > 0;
}

int cmd_uniql_layout(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *list = "0,0.05,0.1,0.15,0.2,0.25,0.3,0.35";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return CLI_OK;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value("uniql-layout", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--rates")) {
            if (!(list = cli_value("uniql-layout", argc, argv, &i))) return CLI_USAGE;
        } else if (a[0] != '-' && !in) {
            in = a;
        } else {
            cli_error("uniql-layout", "unexpected argument '%s'", a);
            return CLI_USAGE;
        }
    }
    if (!in || !out) {
        cli_error("uniql-layout", "needs MODEL and -o OUT (see --help)");
        return CLI_USAGE;
    }
    float rates[MAX_RATES];
    int32_t n;
    if (!parse_rates(list, rates, &n)) return CLI_USAGE;
    double t0 = cli_now_ms();
    el_status st = el_uniql_write_uniform(in, rates, n, out);
    if (st) return cli_fail("uniql-layout", st);
    fprintf(stderr, "edgelora uniql-layout: wrote %s (%d rates) in %.1f s\n", out, n,
            (cli_now_ms() - t0) / 1e3);
    return CLI_OK;
}
