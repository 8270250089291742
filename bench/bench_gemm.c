/* bench_gemm.c - multi-row matmul throughput (not a test): GMAC/s of el_matmul for a given
 * number of activation rows, per weight type, best of repeated runs.
 * Usage: bench_gemm [n_threads] [n_in] [n_out] [rows] [type,type,...]
 * EL_FORCE_REFERENCE=1 or EL_ISA_MAX=avx2 compare with other kernels, EL_NO_GEMM=1 the packed
 * products (gemm.h) with the tiles: e.g. EL_ISA_MAX=avx2 EL_NO_GEMM=1 for AVX2's tiles. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/threadpool.h"
#include "kernels/dispatch.h"
#include "kernels/matmul.h"

static double seconds(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now(void) { return seconds(CLOCK_MONOTONIC); }
/* CPU time of the process: on a shared machine, what the work cost whatever else runs */
static double cpu(void) { return seconds(CLOCK_PROCESS_CPUTIME_ID); }

int main(int argc, char **argv) {
    int n_threads = argc > 1 ? atoi(argv[1]) : 1;
    int64_t n_in = argc > 2 ? atoll(argv[2]) : 2048, n_out = argc > 3 ? atoll(argv[3]) : 2048;
    int64_t rows = argc > 4 ? atoll(argv[4]) : 512;
    const char *list = argc > 5 ? argv[5] : "q4_0,q8_0,w4,w8,w4g32,w4g128";
    el_threadpool *tp;
    if (el_threadpool_create(n_threads, &tp) != EL_OK) return 1;
    printf("kernels %s%s, %d threads, weight %lld x %lld, %lld rows\n", el_kernels_get()->isa,
           el_kernels_get()->gemm[EL_TYPE_Q4_0] ? "" : " (no gemm)", n_threads,
           (long long)n_out, (long long)n_in, (long long)rows);
    float *wf = malloc((size_t)n_in * sizeof *wf);
    float *x = malloc((size_t)(rows * n_in) * sizeof *x);
    float *y = malloc((size_t)(rows * n_out) * sizeof *y);
    void *wq = malloc(el_row_size(EL_TYPE_F32, n_in) * (size_t)n_out);
    void *scratch = malloc(el_row_size(EL_TYPE_F32, n_in) * (size_t)rows);
    if (!wf || !x || !y || !wq || !scratch) return 1;
    for (int64_t i = 0; i < rows * n_in; i++) x[i] = (float)((i * 104729) % 997) / 997.0f - 0.5f;
    char names[256];
    snprintf(names, sizeof names, "%s", list);
    for (char *name = strtok(names, ","); name; name = strtok(NULL, ",")) {
        el_type t;
        if (!el_type_from_name(name, &t)) return 1;
        const el_type_kernels *kernels = el_type_kernels_get(t);
        const el_type_layout *layout = el_type_layout_get(t);
        el_weight w = el_weight_view(t, wq, n_in, n_out);
        for (int64_t o = 0; o < n_out; o++) {
            for (int64_t i = 0; i < n_in; i++)
                wf[i] = (float)(((o * n_in + i) * 7919) % 1000) / 1000.0f - 0.5f;
            kernels->from_float(wf, (char *)wq + o * w.row_bytes, n_in);
        }
        double start = now(), s = 1e30, c = 1e30;
        for (int reps = 0; reps < 3 || now() - start < 1.0; reps++) {
            double t0 = now(), c0 = cpu();
            el_matmul(tp, &w, x, n_in, rows, y, n_out, scratch);
            double dt = now() - t0, dc = cpu() - c0;
            if (dt < s) s = dt;
            if (dc < c) c = dc;
        }
        double macs = (double)(n_in * n_out * rows);
        printf("%-7s %9.3f ms  %7.2f GMAC/s wall, %7.2f GMAC/s per CPU second\n", layout->ggml_name,
               s * 1e3, macs / s * 1e-9, macs / c * 1e-9);
    }
    el_threadpool_free(tp);
    free(wf), free(x), free(y), free(wq), free(scratch);
    return 0;
}
