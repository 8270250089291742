/* bench_uniql.c - a UniQL compressed model's decode speed and resident memory against the
 * pruning rate, and how fast the resident size follows a rate change without a reload.
 *
 *   build/bench/bench_uniql MODEL [-t THREADS] [-n TOKENS] [-r ROUNDS] [--svg DIR]
 *
 * One model load and one context for everything. For each round, the rates of the file's table
 * in alternating order (up, then down), each as a new request: the sequence emptied,
 * el_context_set_prune, a 16-token prompt, then TOKENS single-token decode steps; prints tokens/s
 * and the resident size (/proc/self/statm) after the request. Median and range of the two
 * readings per round per rate (the machine is shared). Then the change test: a request at rate
 * 0, the rate set to the table's largest, and the resident size sampled every 10 ms for one
 * second, printing when it fell by half the bytes the rate drops. --svg DIR writes
 * uniql_tokens_per_s.svg and uniql_rss.svg there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "edgelora.h"
#include "edgelora-tools.h"
#include "train/svg.h"

enum { MAX_RATES = 64, MAX_ROUNDS = 16, PROMPT = 16 };

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double rss_mb(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        fclose(f);
    }
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / 1e6;
}

/* One request at `rate`: returns generation tokens/s. */
static double request(el_context *ctx, float rate, int n_tokens) {
    el_kv_seq_remove(ctx, 0, 0, -1); /* the last request ended: its rate is read no more */
    if (el_context_set_prune(ctx, rate)) {
        fprintf(stderr, "%s\n", el_last_error());
        exit(1);
    }
    int32_t tok[PROMPT], pos[PROMPT], seq[PROMPT] = {0};
    for (int i = 0; i < PROMPT; i++) {
        tok[i] = (i * 7919 + 13) % 1000;
        pos[i] = i;
    }
    el_batch b = {.n_rows = PROMPT, .token = tok, .pos = pos, .seq_id = seq};
    if (el_decode(ctx, &b)) exit(1);
    double t0 = now_s();
    for (int i = 0; i < n_tokens; i++) {
        tok[0] = (i * 31 + 5) % 1000;
        pos[0] = PROMPT + i;
        el_batch one = {.n_rows = 1, .token = tok, .pos = pos, .seq_id = seq};
        if (el_decode(ctx, &one)) exit(1);
    }
    return n_tokens / (now_s() - t0);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    const char *path = NULL, *svg_dir = NULL;
    int threads = 2, n_tokens = 32, rounds = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) n_tokens = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--svg") && i + 1 < argc) svg_dir = argv[++i];
        else path = argv[i];
    }
    if (!path || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: bench_uniql MODEL [-t THREADS] [-n TOKENS] [-r ROUNDS 1..%d] "
                        "[--svg DIR]\n", MAX_ROUNDS);
        return 2;
    }
    el_model *m;
    if (el_model_load(path, NULL, &m)) {
        fprintf(stderr, "%s\n", el_last_error());
        return 1;
    }
    const float *rates;
    int32_t n = el_model_prune_rates(m, &rates);
    if (n < 2 || n > MAX_RATES) {
        fprintf(stderr, "%s: not a UniQL compressed model with several rates\n", path);
        return 1;
    }
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 256;
    cp.n_threads = threads;
    el_context *ctx;
    if (el_context_create(m, &cp, &ctx)) {
        fprintf(stderr, "%s\n", el_last_error());
        return 1;
    }
    static double tps[MAX_RATES][2 * MAX_ROUNDS], rss[MAX_RATES][2 * MAX_ROUNDS];
    int n_read = 2 * rounds;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 2 * n; k++) {
            int i = k < n ? k : 2 * n - 1 - k; /* up then down: each rate after a lower and a
                                                  * higher one */
            int slot = 2 * r + (k >= n); /* each round reads every rate twice */
            tps[i][slot] = request(ctx, rates[i], n_tokens);
            rss[i][slot] = rss_mb();
            fprintf(stderr, "round %d/%d, rate %.2f: %.2f tokens/s, RSS %.0f MB\n", r + 1, rounds,
                    (double)rates[i], tps[i][slot], rss[i][slot]);
        }
    printf("rate  tokens/s median [min, max]   speed-up   RSS MB median [min, max]   weights MB\n");
    float med_tps[MAX_RATES], med_rss[MAX_RATES], x[MAX_RATES];
    for (int i = 0; i < n; i++) {
        double t[2 * MAX_ROUNDS], s[2 * MAX_ROUNDS];
        memcpy(t, tps[i], (size_t)n_read * sizeof *t);
        memcpy(s, rss[i], (size_t)n_read * sizeof *s);
        qsort(t, (size_t)n_read, sizeof *t, cmp_double);
        qsort(s, (size_t)n_read, sizeof *s, cmp_double);
        uint64_t wb = 0;
        el_model_prune_bytes(m, rates[i], &wb);
        med_tps[i] = (float)t[n_read / 2];
        med_rss[i] = (float)s[n_read / 2];
        x[i] = rates[i];
        printf("%.2f  %7.2f [%.2f, %.2f]   %5.2fx     %6.0f [%.0f, %.0f]   %6.0f\n",
               (double)rates[i], t[n_read / 2], t[0], t[n_read - 1], t[n_read / 2] / med_tps[0],
               s[n_read / 2], s[0], s[n_read - 1], (double)wb / 1e6);
    }
    /* the change: a request at rate 0, then the largest rate set and the RSS followed */
    request(ctx, 0.0f, 4);
    uint64_t b0, b1;
    el_model_prune_bytes(m, 0.0f, &b0);
    el_model_prune_bytes(m, rates[n - 1], &b1);
    double before = rss_mb(), target = before - (double)(b0 - b1) / 1e6 / 2, t0 = now_s();
    el_kv_seq_remove(ctx, 0, 0, -1);
    el_context_set_prune(ctx, rates[n - 1]);
    double fell = -1, after = before;
    while (now_s() - t0 < 1.0) {
        after = rss_mb();
        if (fell < 0 && after <= target) fell = now_s() - t0;
        usleep(10000);
    }
    printf("rate 0 -> %.2f: RSS %.0f MB -> %.0f MB one second later (the rate drops %.0f MB); "
           "half of that gone after %.3f s\n", (double)rates[n - 1], before, after,
           (double)(b0 - b1) / 1e6, fell);
    if (svg_dir) {
        char file[4096];
        el_series st = {.name = "tokens/s", .color = "#1f77b4", .x = x, .y = med_tps,
                        .n = (size_t)n};
        snprintf(file, sizeof file, "%s/uniql_tokens_per_s.svg", svg_dir);
        if (el_svg_plot(file, "Generation tokens/s against the pruning rate (median)", "rate",
                        "tokens/s", &st, 1))
            fprintf(stderr, "%s\n", el_last_error());
        el_series sr = {.name = "RSS MB", .color = "#d62728", .x = x, .y = med_rss,
                        .n = (size_t)n};
        snprintf(file, sizeof file, "%s/uniql_rss.svg", svg_dir);
        if (el_svg_plot(file, "Resident memory against the pruning rate (median)", "rate", "MB",
                        &sr, 1))
            fprintf(stderr, "%s\n", el_last_error());
    }
    el_context_free(ctx);
    el_model_free(m);
    return 0;
}
