/* bench_hot.c - kernel throughput with the data in cache (not a test): for each weight type and
 * each ISA level this build and CPU have, a dot product of one row, a 4x4 tile of four
 * weight rows by four activation rows and a gemv of four weight rows by one activation row
 * (four times, for as many products as the others), timed in thread CPU time, so other processes on a
 * shared machine do not count (cache sharing still can). What the kernels can do when memory
 * is not the limit; bench_kernels measures whole matmuls.
 * Usage: bench_hot [n]   (row length, default 4096) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/dispatch.h"

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best seconds per call of f over a few runs of reps calls. */
static double best_time(void (*f)(const el_kernels *, el_type, int64_t, const char *, size_t,
                                  const char *, size_t, float *),
                        const el_kernels *k, el_type t, int64_t n, const char *w, size_t ws,
                        const char *a, size_t as, float *y, int reps) {
    double best = 1e30;
    for (int run = 0; run < 7; run++) {
        double t0 = cpu_now();
        for (int i = 0; i < reps; i++) f(k, t, n, w, ws, a, as, y);
        double dt = (cpu_now() - t0) / reps;
        if (dt < best) best = dt;
    }
    return best;
}

static void run_dots(const el_kernels *k, el_type t, int64_t n, const char *w, size_t ws,
                     const char *a, size_t as, float *y) {
    for (int r = 0; r < EL_TILE; r++)
        for (int o = 0; o < EL_TILE; o++) k->vec_dot[t](n, &y[r * EL_TILE + o], w + o * ws, a + r * as);
}

static void run_gemv(const el_kernels *k, el_type t, int64_t n, const char *w, size_t ws,
                     const char *a, size_t as, float *y) {
    for (int r = 0; r < EL_TILE; r++) k->gemv[t](n, &y[r * EL_TILE], EL_TILE, w, ws, a + r * as);
}

static void run_tile(const el_kernels *k, el_type t, int64_t n, const char *w, size_t ws,
                     const char *a, size_t as, float *y) {
    k->tile[t](n, y, EL_TILE, w, ws, a, as);
}

int main(int argc, char **argv) {
    int64_t n = argc > 1 ? atoll(argv[1]) : 4096;
    static const el_type types[] = {EL_TYPE_F32, EL_TYPE_F16, EL_TYPE_Q8_0, EL_TYPE_Q4_0,
                                    EL_TYPE_Q4_K, EL_TYPE_Q6_K, EL_TYPE_W8,   EL_TYPE_W4,
                                    EL_TYPE_W4G32};
    if (n <= 0 || n % 256 != 0) {
        fprintf(stderr, "n must be a positive multiple of 256\n");
        return 1;
    }
    float *x = malloc((size_t)(EL_TILE * n) * sizeof *x);
    char *w = malloc(el_row_size(EL_TYPE_F32, n) * EL_TILE);
    char *a = malloc(el_row_size(EL_TYPE_F32, n) * EL_TILE);
    if (!x || !w || !a) return 1;
    for (int64_t i = 0; i < EL_TILE * n; i++) x[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    printf("GMAC/s with the data in cache, row length %lld, thread CPU time\n", (long long)n);
    printf("%-13s %-7s %9s %9s %9s\n", "isa", "type", "vec_dot", "4x4 tile", "gemv");
    /* the reference (l = 0), then each ISA level's composed table */
    for (size_t l = 0; l == 0 || el_kernels_level_name(l - 1) != NULL; l++) {
        el_kernels k;
        if (l == 0) el_kernels_reference(&k);
        else if (!el_kernels_level(el_kernels_level_name(l - 1), &k)) continue; /* not built or no CPU */
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            el_type t = types[ti];
            const el_type_kernels *kernels = el_type_kernels_get(t);
            const el_type_layout *layout = el_type_layout_get(t);
            el_type vt = kernels->vec_dot_type;
            size_t ws = el_row_size(t, n), as = el_row_size(vt, n);
            for (int r = 0; r < EL_TILE; r++) {
                kernels->from_float(x + r * n, w + r * ws, n);
                k.quantize[vt](x + ((r + 1) % EL_TILE) * n, a + r * as, n);
            }
            float y[EL_TILE * EL_TILE];
            double macs = (double)(EL_TILE * EL_TILE) * (double)n;
            int reps = l == 0 ? 2 : 40;
            double td = best_time(run_dots, &k, t, n, w, ws, a, as, y, reps);
            printf("%-13s %-7s %9.2f", k.isa, layout->ggml_name, macs / td * 1e-9);
            if (k.tile[t] != NULL)
                printf(" %9.2f", macs / best_time(run_tile, &k, t, n, w, ws, a, as, y, reps) * 1e-9);
            else if (k.gemv[t] != NULL)
                printf(" %9s", "");
            if (k.gemv[t] != NULL)
                printf(" %9.2f", macs / best_time(run_gemv, &k, t, n, w, ws, a, as, y, reps) * 1e-9);
            printf("\n");
        }
    }
    free(x), free(w), free(a);
    return 0;
}
