/* bench_kernels.c - matmul throughput per weight type (not a test): weight bytes read per second
 * for one activation row (a decode step) and for a block of rows (a prompt chunk).
 * Usage: bench_kernels [n_threads] [n_in] [n_out] [type,type,...]. EL_FORCE_REFERENCE=1 times
 * the reference,
 * EL_ISA_MAX=avx2 (say) a lower ISA level. Times are the best of repeated runs. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/threadpool.h"
#include "kernels/dispatch.h"
#include "kernels/matmul.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Whether name is one of the comma-separated names in list (case-insensitive). */
static bool listed(const char *list, const char *name) {
    size_t len = strlen(name);
    for (const char *p = list; *p != '\0'; p++) {
        if ((p == list || p[-1] == ',') && strncasecmp(p, name, len) == 0 &&
            (p[len] == ',' || p[len] == '\0'))
            return true;
    }
    return false;
}

int main(int argc, char **argv) {
    int n_threads = argc > 1 ? atoi(argv[1]) : 1;
    int64_t n_in = argc > 2 ? atoll(argv[2]) : 4096, n_out = argc > 3 ? atoll(argv[3]) : 4096;
    static const el_type types[] = {EL_TYPE_F32,   EL_TYPE_F16,   EL_TYPE_BF16,  EL_TYPE_Q8_0,
                                    EL_TYPE_Q4_0,  EL_TYPE_Q4_K,  EL_TYPE_Q6_K,  EL_TYPE_W8,
                                    EL_TYPE_W4,    EL_TYPE_W4G32, EL_TYPE_W4G128};
    static const int64_t row_counts[] = {1, 32};
    el_threadpool *tp;
    if (el_threadpool_create(n_threads, &tp) != EL_OK) return 1;
    printf("kernels %s, %d threads, weight %lld x %lld\n", el_kernels_get()->isa, n_threads,
           (long long)n_out, (long long)n_in);
    float *wf = malloc((size_t)(n_in * n_out) * sizeof *wf);
    float *x = malloc((size_t)(32 * n_in) * sizeof *x);
    float *y = malloc((size_t)(32 * n_out) * sizeof *y);
    void *wq = malloc(el_row_size(EL_TYPE_F32, n_in) * (size_t)n_out);
    void *scratch = malloc(el_row_size(EL_TYPE_F32, n_in) * 32);
    if (!wf || !x || !y || !wq || !scratch) return 1;
    for (int64_t i = 0; i < n_in * n_out; i++) wf[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (int64_t i = 0; i < 32 * n_in; i++) x[i] = (float)((i * 104729) % 997) / 997.0f - 0.5f;
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const el_type_kernels *kernels = el_type_kernels_get(types[t]);
        const el_type_layout *layout = el_type_layout_get(types[t]);
        if (argc > 4 && !listed(argv[4], layout->ggml_name)) continue;
        el_weight w = el_weight_view(types[t], wq, n_in, n_out);
        for (int64_t o = 0; o < n_out; o++) /* row by row: per-row types have a header */
            kernels->from_float(wf + o * n_in, (char *)wq + o * w.row_bytes, n_in);
        for (size_t rc = 0; rc < sizeof row_counts / sizeof row_counts[0]; rc++) {
            int64_t rows = row_counts[rc];
            /* the fastest of the repetitions: the machine is shared, and other processes only
             * ever make a run slower */
            double start = now(), s = 1e30;
            for (int reps = 0; reps < 5 || now() - start < 1.0; reps++) {
                double t0 = now();
                el_matmul(tp, &w, x, n_in, rows, y, n_out, scratch);
                double dt = now() - t0;
                if (dt < s) s = dt;
            }
            printf("%-6s rows %3lld: %8.3f ms  %7.2f GB/s weights  %7.2f GMAC/s\n",
                   layout->ggml_name, (long long)rows, s * 1e3,
                   (double)(w.row_bytes * (size_t)n_out) / s * 1e-9,
                   (double)(n_in * n_out * rows) / s * 1e-9);
        }
    }
    el_threadpool_free(tp);
    free(wf), free(x), free(y), free(wq), free(scratch);
    return 0;
}
