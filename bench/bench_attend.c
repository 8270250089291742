/* bench_attend.c - the attention kernel of one decode step (not a test): one query row against a
 * KV cache of N cells of the Llama-3.2-1B shape (16 layers, 8 kv heads of 4 query heads each,
 * head size 64, fp16 cells laid out as the cache lays them out: each kv head's cells in a row).
 * Reports the time a token spends in attention, the bytes of K and V it reads per second, and
 * the time per cell and kv head. Usage: bench_attend [cells ...] (default 128 512 2048; 128
 * cells, 4 MB, stay in cache, 2048, 67 MB, do not). EL_FORCE_REFERENCE=1 times the reference,
 * EL_ISA_MAX=avx2 (say) a lower ISA level. Times are the median and best of 31 runs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/dispatch.h"

enum { LAYERS = 16, KV_HEADS = 8, GROUP = 4, HEAD_DIM = 64, RUNS = 31 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Times attention over n cells; returns nonzero if memory ran out. */
static int bench(int32_t n) {
    size_t slices = (size_t)LAYERS * KV_HEADS, slice = (size_t)n * HEAD_DIM;
    uint16_t *k = aligned_alloc(64, slices * slice * sizeof *k);
    uint16_t *v = aligned_alloc(64, slices * slice * sizeof *v);
    const void **kp = malloc(slices * (size_t)n * sizeof *kp);
    const void **vp = malloc(slices * (size_t)n * sizeof *vp);
    float *scores = malloc((size_t)GROUP * (size_t)n * sizeof *scores);
    if (!k || !v || !kp || !vp || !scores) {
        free(k), free(v), free(kp), free(vp), free(scores);
        fprintf(stderr, "bench_attend: out of memory for %d cells\n", (int)n);
        return 1;
    }
    srand(1);
    for (size_t i = 0; i < slices * slice; i++) { /* fp16 values in [0.125, 0.5) */
        k[i] = (uint16_t)(0x3000 + rand() % 0x800);
        v[i] = (uint16_t)(0x3000 + rand() % 0x800);
    }
    for (size_t s = 0; s < slices; s++)
        for (int32_t j = 0; j < n; j++) {
            kp[s * (size_t)n + (size_t)j] = k + s * slice + (size_t)j * HEAD_DIM;
            vp[s * (size_t)n + (size_t)j] = v + s * slice + (size_t)j * HEAD_DIM;
        }
    float q[GROUP * HEAD_DIM], out[GROUP * HEAD_DIM], sink = 0.0f;
    for (int i = 0; i < GROUP * HEAD_DIM; i++) q[i] = (float)(rand() % 1000) / 1000.0f - 0.5f;
    const el_kernels *kern = el_kernels_get();
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t0 = now();
        for (size_t s = 0; s < slices; s++) {
            kern->attend(EL_TYPE_F16, GROUP, HEAD_DIM, HEAD_DIM, n, q, kp + s * (size_t)n,
                         vp + s * (size_t)n, scores, (size_t)n, out);
            sink += out[0];
        }
        t[r] = now() - t0;
    }
    qsort(t, RUNS, sizeof t[0], by_value);
    double bytes = 2.0 * (double)(slices * slice * sizeof *k), med = t[RUNS / 2];
    printf("%6d cells  %8.3f ms a token (best %.3f)  %6.1f GB/s  %5.1f ns a cell and kv head%s\n",
           (int)n, med * 1e3, t[0] * 1e3, bytes / med * 1e-9, med * 1e9 / ((double)slices * n),
           sink == sink ? "" : " (NaN)");
    free(k), free(v), free(kp), free(vp), free(scores);
    return 0;
}

int main(int argc, char **argv) {
    static const int32_t defaults[] = {128, 512, 2048};
    int status = 0;
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            int32_t n = (int32_t)atoi(argv[i]);
            if (n < 1) {
                fprintf(stderr, "bench_attend: '%s' is not a cell count\n", argv[i]);
                return 2;
            }
            status |= bench(n);
        }
    } else {
        for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
            status |= bench(defaults[i]);
    }
    return status;
}
