/* peak.c - the int8 multiply-add peak of the kernels in use, on a number of threads, and the
 * cores' clock: the compute floor `bench --rows` puts next to the memory floor.
 *
 * The level's probe (dispatch.h: the byte dot instruction its integer kernels accumulate with,
 * in enough independent chains to issue at the core's full rate) runs on every thread at once,
 * as a decode step's threads run, and the best of several timings counts. Its checksum is the
 * number of multiply-adds it did, so the rate cannot be overstated by a miscount. The clock is
 * a chain of dependent integer additions (one cycle each on every core we target): with it,
 * the rate per cycle can be set against a hand count of the instruction's throughput
 * (docs/bench.md). */
#include <stdlib.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/threadpool.h"
#include "edgelora-tools.h"
#include "kernels/dispatch.h"

enum { MAX_THREADS = 256, ADDS_PER_ITER = 32 };

/* iters x ADDS_PER_ITER dependent additions of `one`; returns the total so nothing is elided. */
static uint64_t add_chain(int64_t iters, uint64_t one) {
    uint64_t x = 0;
    for (int64_t i = 0; i < iters; i++) {
#if defined(__x86_64__)
        __asm__ volatile(".rept 32\n\tadd %1, %0\n\t.endr" : "+r"(x) : "r"(one));
#elif defined(__aarch64__)
        __asm__ volatile(".rept 32\n\tadd %0, %0, %1\n\t.endr" : "+r"(x) : "r"(one));
#else
        (void)one;
#endif
    }
    return x;
}

static bool have_clock_probe(void) {
#if defined(__x86_64__) || defined(__aarch64__)
    return true;
#else
    return false;
#endif
}

typedef struct peak_job {
    const el_int8_probe *probe; /* NULL: the clock's chain of additions */
    int64_t iters;
    double seconds[MAX_THREADS]; /* each thread's own time */
    bool wrong[MAX_THREADS];     /* its checksum disagreed with its count */
} peak_job;

static void peak_task(void *arg, int ith, int nth) {
    peak_job *j = arg;
    double t0 = el_now_seconds();
    bool wrong;
    if (j->probe) {
        uint32_t got = j->probe->run(j->iters, 1);
        wrong = got != (uint32_t)((uint64_t)j->iters * (uint64_t)j->probe->macs_per_iter);
    } else {
        wrong = add_chain(j->iters, 1) != (uint64_t)j->iters * ADDS_PER_ITER;
    }
    j->seconds[ith] = el_now_seconds() - t0;
    j->wrong[ith] = wrong;
}

/* The best over timings of the slowest thread's time for j (iters grown first until one run
 * takes a few milliseconds, so the timer and the wake-up are a small part of it): the time all
 * threads need together; and the best time of any thread (*fastest), a core's own time. */
static el_status time_job(el_threadpool *tp, peak_job *j, double *seconds, double *fastest) {
    int nth = el_threadpool_size(tp);
    double best = 0, quickest = 0, start = el_now_seconds();
    for (j->iters = 1 << 10;; j->iters *= 2) {
        el_threadpool_run(tp, peak_task, j);
        if (j->seconds[0] > 0.004 || j->iters > ((int64_t)1 << 40)) break;
    }
    for (int t = 0; t < 50 && (t < 5 || el_now_seconds() - start < 0.15); t++) {
        el_threadpool_run(tp, peak_task, j);
        double slowest = 0;
        for (int i = 0; i < nth; i++) {
            if (j->wrong[i]) return el_error(EL_ERR_INVALID_ARG, "int8 peak: wrong checksum (a bug)");
            if (j->seconds[i] > slowest) slowest = j->seconds[i];
            if (j->seconds[i] > 0 && (quickest == 0 || j->seconds[i] < quickest))
                quickest = j->seconds[i];
        }
        if (slowest > 0 && (best == 0 || slowest < best)) best = slowest;
    }
    *seconds = best;
    *fastest = quickest;
    return EL_OK;
}

el_status el_measure_int8_peak(int32_t n_threads, el_int8_peak *out) {
    if (!out) return el_error(EL_ERR_INVALID_ARG, "el_measure_int8_peak: NULL argument");
    const el_kernels *k = el_kernels_get();
    *out = (el_int8_peak){.isa = k->isa};
    if (n_threads > MAX_THREADS)
        return el_error(EL_ERR_INVALID_ARG, "int8 peak: at most %d threads, not %d", MAX_THREADS,
                        n_threads);
    if (!k->int8_probe.run) return EL_OK; /* the reference kernels: no probe */
    el_threadpool *tp = NULL;
    el_status st = el_threadpool_create(n_threads, &tp);
    if (st) return st;
    int nth = el_threadpool_size(tp);
    peak_job *j = calloc(1, sizeof *j);
    if (nth > MAX_THREADS || !j) {
        el_threadpool_free(tp);
        free(j);
        return j ? el_error(EL_ERR_INVALID_ARG, "int8 peak: at most %d threads, not %d",
                            MAX_THREADS, nth)
                 : el_error(EL_ERR_NOMEM, "int8 peak: no memory");
    }
    double s = 0, core_s = 0;
    j->probe = &k->int8_probe;
    st = time_job(tp, j, &s, &core_s);
    if (st == EL_OK) {
        out->gmacs_per_s = (double)j->iters * k->int8_probe.macs_per_iter * nth / s / 1e9;
        out->instruction = k->int8_probe.instruction;
        out->macs_per_instr = k->int8_probe.macs_per_instr;
        out->threads = nth;
    }
    if (st == EL_OK && have_clock_probe()) {
        j->probe = NULL;
        st = time_job(tp, j, &s, &core_s); /* a core's clock: its own best time */
        if (st == EL_OK) {
            out->ghz = (double)j->iters * ADDS_PER_ITER / core_s / 1e9;
            out->macs_per_cycle = out->gmacs_per_s / nth / out->ghz;
        }
    }
    el_threadpool_free(tp);
    free(j);
    return st;
}
