/* measure.c - what `edgelora bench` measures besides the model itself: the memory read bandwidth
 * a decode step is bound by, peak resident memory, and the bytes of weights one token reads.
 *
 * Decoding one token reads every layer weight and the output head once, so its speed is bounded
 * by (read bandwidth) / (those bytes). el_model_read_bandwidth reads those very weights where
 * they are mapped, with the same number of threads: a model that fits in a cache is judged
 * against that cache's bandwidth rather than DRAM's, and weights mapped by 4 KB or 2 MB pages
 * against the bandwidth through those pages. el_measure_read_bandwidth reads a buffer of its
 * own. */
#include "runtime/measure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/pages.h"
#include "model/model.h"
#include "model/prune.h"

/* Two 64-bit lanes: the width of SSE2 and NEON registers, which every x86-64 and AArch64 CPU
 * has, so GCC and Clang keep these in registers without per-ISA code. */
typedef uint64_t u64x2 __attribute__((vector_size(16)));

enum { WORDS_PER_LINE = 8, /* 64-byte cache lines: shares start on a line */
       STREAMS = 4,         /* sequential streams each thread reads side by side */
       MAX_THREADS = 256 };

static u64x2 load2(const uint64_t *p) {
    u64x2 v;
    memcpy(&v, p, sizeof v); /* an unaligned-safe vector load */
    return v;
}

/* Sums words [0, n) of p with four independent accumulators (so the loads are not serialized
 * behind one chain of additions), a cache line per iteration. */
static uint64_t sum_words(const uint64_t *p, size_t n) {
    u64x2 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    size_t i = 0;
    for (; i + WORDS_PER_LINE <= n; i += WORDS_PER_LINE) {
        a0 += load2(p + i);
        a1 += load2(p + i + 2);
        a2 += load2(p + i + 4);
        a3 += load2(p + i + 6);
    }
    u64x2 a = a0 + a1 + a2 + a3;
    uint64_t s = a[0] + a[1];
    for (; i < n; i++) s += p[i];
    return s;
}

/* Sums words [0, n) of p as STREAMS contiguous parts read side by side, a cache line of each
 * per step (the rest, under a line per part, one by one). A core draws more from memory reading
 * a few sequential streams at once than one (docs/bench.md), and the decode kernels read several
 * rows side by side (kernels/gemv_drive.h), so a single stream would understate the bound. */
static uint64_t sum_streams(const uint64_t *p, size_t n) {
    size_t part = n / WORDS_PER_LINE / STREAMS * WORDS_PER_LINE;
    u64x2 acc[STREAMS] = {{0}};
    for (size_t i = 0; i < part; i += WORDS_PER_LINE) {
        #pragma GCC unroll 4
        for (int s = 0; s < STREAMS; s++) {
            const uint64_t *q = p + (size_t)s * part + i;
            acc[s] += (load2(q) + load2(q + 2)) + (load2(q + 4) + load2(q + 6));
        }
    }
    u64x2 a = {0};
    for (int s = 0; s < STREAMS; s++) a += acc[s];
    return a[0] + a[1] + sum_words(p + STREAMS * part, n - STREAMS * part);
}

/* A stretch of whole 64-bit words to read. */
typedef struct read_region {
    const uint64_t *p;
    size_t n;
} read_region;

typedef struct read_job {
    const read_region *reg; /* each thread reads its share of every region, in order */
    size_t n_reg;
    uint64_t *fill; /* non-NULL: write word i = i of fill's n words instead of reading */
    size_t n;
    int sweeps;
    uint64_t partial[MAX_THREADS]; /* each thread's sum */
} read_job;

/* Thread ith's share [*lo, *hi) of n words, cut on cache-line boundaries. */
static void share(size_t n, int ith, int nth, size_t *lo, size_t *hi) {
    size_t lines = (n + WORDS_PER_LINE - 1) / WORDS_PER_LINE;
    size_t a = lines * (size_t)ith / (size_t)nth * WORDS_PER_LINE;
    size_t b = lines * (size_t)(ith + 1) / (size_t)nth * WORDS_PER_LINE;
    *lo = a < n ? a : n;
    *hi = b < n ? b : n;
}

static void read_task(void *arg, int ith, int nth) {
    read_job *j = arg;
    size_t lo, hi;
    if (j->fill) {
        share(j->n, ith, nth, &lo, &hi);
        for (size_t i = lo; i < hi; i++) j->fill[i] = i;
        return;
    }
    uint64_t s = 0;
    for (int k = 0; k < j->sweeps; k++)
        for (size_t r = 0; r < j->n_reg; r++) {
            share(j->reg[r].n, ith, nth, &lo, &hi);
            s += sum_streams(j->reg[r].p + lo, hi - lo);
        }
    j->partial[ith] = s;
}

static uint64_t read_regions(el_threadpool *tp, const read_region *reg, size_t n_reg, int sweeps) {
    read_job j = {.reg = reg, .n_reg = n_reg, .sweeps = sweeps};
    el_threadpool_run(tp, read_task, &j);
    uint64_t s = 0;
    for (int t = 0; t < el_threadpool_size(tp); t++) s += j.partial[t];
    return s;
}

uint64_t el_read_sum(el_threadpool *tp, const uint64_t *buf, size_t n, int sweeps) {
    if (el_threadpool_size(tp) > MAX_THREADS) return 0;
    read_region r = {buf, n};
    return read_regions(tp, &r, 1, sweeps);
}

/* Each timing reads at least this much, so that a small (cache-sized) buffer is swept many times
 * and the timer and the pool's wake-up are a small part of it. */
static const size_t MIN_BYTES_PER_TIMING = (size_t)64 << 20;

static int32_t pool_too_large(el_threadpool *tp) {
    return el_threadpool_size(tp) > MAX_THREADS;
}

/* The best rate, in GB/s, at which the pool reads the regions (each sweep summing to one, mod
 * 2^64): after a warm-up sweep (caches, TLB, the pool's workers), at least 5 timings and 0.2 s,
 * each sweeping at least MIN_BYTES_PER_TIMING. A wrong sum is a bug, reported. */
static el_status time_reads(el_threadpool *tp, const read_region *reg, size_t n_reg, uint64_t one,
                            double *gb_s) {
    size_t bytes = 0;
    for (size_t r = 0; r < n_reg; r++) bytes += reg[r].n * sizeof(uint64_t);
    int sweeps = (int)((MIN_BYTES_PER_TIMING + bytes - 1) / bytes);
    uint64_t want = one * (uint64_t)sweeps;
    double best = 0, start = el_now_seconds();
    read_regions(tp, reg, n_reg, 1);
    for (int t = 0; t < 50 && (t < 5 || el_now_seconds() - start < 0.2); t++) {
        double t0 = el_now_seconds();
        uint64_t s = read_regions(tp, reg, n_reg, sweeps);
        double dt = el_now_seconds() - t0;
        if (s != want) return el_error(EL_ERR_INVALID_ARG, "read bandwidth: wrong sum (a bug)");
        double rate = (double)bytes * sweeps / dt / 1e9;
        if (dt > 0 && rate > best) best = rate;
    }
    *gb_s = best;
    return EL_OK;
}

el_status el_measure_read_bandwidth(size_t bytes, int32_t n_threads, double *gb_s) {
    *gb_s = 0;
    size_t n = bytes / sizeof(uint64_t);
    if (n < 64)
        return el_error(EL_ERR_INVALID_ARG, "read bandwidth: a buffer of %zu bytes is too small",
                        bytes);
    /* In 2 MB pages where the kernel gives them, as model weights are mapped (core/mapfile.c):
     * through 4 KB pages a core reads less, for their TLB misses (docs/bench.md). */
    uint64_t *buf = el_alloc_pages(n * sizeof(uint64_t));
    el_threadpool *tp = NULL;
    el_status st = buf ? el_threadpool_create(n_threads, &tp) : EL_ERR_NOMEM;
    if (st) {
        free(buf);
        return st == EL_ERR_NOMEM ? el_error(st, "read bandwidth: no memory for %zu bytes", bytes)
                                  : st;
    }
    if (pool_too_large(tp)) {
        el_threadpool_free(tp);
        free(buf);
        return el_error(EL_ERR_INVALID_ARG, "read bandwidth: at most %d threads, not %d",
                        MAX_THREADS, n_threads);
    }
    read_job fill = {.fill = buf, .n = n};
    el_threadpool_run(tp, read_task, &fill); /* each thread touches its own share first */

    read_region whole = {buf, n};
    /* word i holds i, so one sweep sums to n(n-1)/2 (mod 2^64) */
    uint64_t one = (n % 2 == 0) ? (uint64_t)(n / 2) * (uint64_t)(n - 1)
                                : (uint64_t)n * (uint64_t)((n - 1) / 2);
    double best = 0;
    st = time_reads(tp, &whole, 1, one, &best);
    el_threadpool_free(tp);
    free(buf);
    if (st == EL_OK) *gb_s = best;
    return st;
}

uint64_t el_huge_mapped_bytes(void) { return el_huge_file_bytes(NULL, SIZE_MAX); }

uint64_t el_peak_rss_bytes(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (uint64_t)ru.ru_maxrss * 1024; /* Linux reports kilobytes */
}

static uint64_t weight_bytes(const el_weight *w) {
    return (uint64_t)w->row_bytes * (uint64_t)w->n_out;
}

/* w's bytes as the whole 64-bit words they span from their first 8-byte boundary, into *r;
 * false if there are none. */
static bool word_region(const el_weight *w, read_region *r) {
    uintptr_t a = (uintptr_t)w->data, b = a + weight_bytes(w);
    uintptr_t first = (a + 7) / 8 * 8;
    if (b <= first) return false;
    *r = (read_region){(const uint64_t *)first, (b - first) / 8};
    return true;
}

/* The weights one decode step reads, into w[] (NULL: only counted); returns how many. A
 * compressed (UniQL) model's layers run as the pieces its rate keeps (model/forward_prune.c),
 * whose layer views have no data, so those pieces are what a step reads. */
static size_t decode_weights(const el_model *m, const el_weight **w) {
    const el_prune *p = m->prune;
    size_t n = 0;
    for (int il = 0; il < m->hp.n_layer; il++)
        for (el_linear k = EL_LINEAR_Q; k <= EL_LINEAR_DOWN; k++) {
            const el_prune_pieces *pc = p ? &p->pieces[el_linear_slot(il, k)] : NULL;
            if (!pc || pc->n == 0) {
                if (w) w[n] = el_layer_weight(&m->layers[il], k);
                n++;
                continue;
            }
            int64_t kept = el_prune_kept_count(&p->table, &m->hp, p->context_rate, il, k);
            for (int32_t j = 0; j < pc->n && pc->b[j] < kept; j++, n++)
                if (w) w[n] = &pc->w[j];
        }
    if (w) w[n] = &m->output;
    return n + 1;
}

el_status el_model_read_bandwidth(const el_model *m, int32_t n_threads, double *gb_s) {
    if (!m || !gb_s) return el_error(EL_ERR_INVALID_ARG, "el_model_read_bandwidth: NULL argument");
    *gb_s = 0;
    if (!m->has_weights)
        return el_error(EL_ERR_INVALID_ARG, "%s: a vocabulary-only model has no weights",
                        m->path);
    size_t n_w = decode_weights(m, NULL);
    const el_weight **w = malloc(n_w * sizeof *w);
    read_region *reg = malloc(n_w * sizeof *reg);
    el_threadpool *tp = NULL;
    el_status st = w && reg ? el_threadpool_create(n_threads, &tp) : EL_ERR_NOMEM;
    if (st == EL_ERR_NOMEM) st = el_error(st, "read bandwidth: no memory");
    if (st == EL_OK && pool_too_large(tp))
        st = el_error(EL_ERR_INVALID_ARG, "read bandwidth: at most %d threads, not %d",
                      MAX_THREADS, n_threads);
    if (st == EL_OK) {
        decode_weights(m, w);
        size_t n_reg = 0;
        for (size_t i = 0; i < n_w; i++) n_reg += word_region(w[i], &reg[n_reg]);
        /* the weights are what they are: one sweep's sum, and every later sweep must agree */
        uint64_t one = read_regions(tp, reg, n_reg, 1);
        st = n_reg > 0 ? time_reads(tp, reg, n_reg, one, gb_s)
                       : el_error(EL_ERR_INVALID_ARG, "%s: no weights to read", m->path);
    }
    el_threadpool_free(tp);
    free(reg);
    free(w);
    return st;
}

el_status el_model_decode_cost(const el_model *m, el_decode_cost *out) {
    if (!m || !out) return el_error(EL_ERR_INVALID_ARG, "el_model_decode_cost: NULL argument");
    if (!m->has_weights)
        return el_error(EL_ERR_INVALID_ARG, "%s: a vocabulary-only model has no weights",
                        m->path);
    size_t n_w = decode_weights(m, NULL);
    const el_weight **w = malloc(n_w * sizeof *w);
    if (!w) return el_error(EL_ERR_NOMEM, "el_model_decode_cost: no memory");
    decode_weights(m, w);
    uint64_t by_type[EL_TYPE_COUNT] = {0}, total = 0, macs = 0;
    for (size_t i = 0; i < n_w; i++) {
        by_type[w[i]->type] += weight_bytes(w[i]);
        macs += (uint64_t)w[i]->k_in * (uint64_t)w[i]->n_out;
    }
    free(w);
    int top = 0;
    for (int t = 0; t < EL_TYPE_COUNT; t++) {
        total += by_type[t];
        if (by_type[t] > by_type[top]) top = t;
    }
    const el_type_layout *layout = el_type_layout_get((uint32_t)top);
    *out = (el_decode_cost){
        .weight_bytes_per_token = total,
        .weight_type = by_type[top] * 2 > total && layout ? layout->ggml_name : "mixed",
        .multiply_adds_per_token = macs,
    };
    return EL_OK;
}
