/* sampling_opts.c - the sampling flags `run` and `chat` share (llama.cpp's names): --temp,
 * --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n, -s/--seed; and the seed taken
 * from the clock when none is given. */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

const char cli_sampling_help[] =
    "  --temp T               temperature (default 0.8; 0: greedy)\n"
    "  --top-k K              keep the K most likely tokens (default 40; 0: off)\n"
    "  --top-p P              keep the smallest set with probability >= P (default 0.95)\n"
    "  --min-p P              drop tokens less likely than P times the best (default 0.05)\n"
    "  --repeat-penalty X     penalize recent tokens (default 1.0: off)\n"
    "  --repeat-last-n N      tokens the penalty looks back on (default 64)\n"
    "  -s, --seed S           random seed (default: from the clock; printed to stderr)\n";

int cli_sampling_opt(const char *cmd, cli_sampling_opts *o, int argc, char **argv, int *i) {
    const char *a = argv[*i], *v;
    double d;
    long l;
    if (!strcmp(a, "--temp")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_float(cmd, a, v, 0, 1e6, &d)) return -1;
        o->sp.temperature = (float)d;
    } else if (!strcmp(a, "--top-k")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_int(cmd, a, v, 0, INT32_MAX, &l))
            return -1;
        o->sp.top_k = (int32_t)l;
    } else if (!strcmp(a, "--top-p")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_float(cmd, a, v, 0, 1, &d)) return -1;
        o->sp.top_p = (float)d;
    } else if (!strcmp(a, "--min-p")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_float(cmd, a, v, 0, 1, &d)) return -1;
        o->sp.min_p = (float)d;
    } else if (!strcmp(a, "--repeat-penalty")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_float(cmd, a, v, 0, 1e6, &d)) return -1;
        o->sp.repeat_penalty = (float)d;
    } else if (!strcmp(a, "--repeat-last-n")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_int(cmd, a, v, 0, 1 << 20, &l))
            return -1;
        o->sp.repeat_last_n = (int32_t)l;
    } else if (!strcmp(a, "-s") || !strcmp(a, "--seed")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_u64(cmd, a, v, &o->sp.seed)) return -1;
        o->seed_given = true;
    } else {
        return 0;
    }
    return 1;
}

void cli_sampling_seed(cli_sampling_opts *o) {
    if (o->seed_given) return;
    o->sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    /* printed only where it matters: greedy decoding draws nothing */
    if (o->sp.temperature > 0) fprintf(stderr, "seed: %llu\n", (unsigned long long)o->sp.seed);
}
