/* bench_rows.c - `edgelora bench --rows 1,2,4,8`: the time of one decode step of R rows (R
 * sequences sharing one prompt in the cache, each decoding its own token at the same position,
 * every row asking for its logits) for each R, next to the two floors measured in the same run:
 * the memory floor (the weights and adapters a step reads, over the bandwidth of reading them
 * where they are mapped) and the compute floor (the step's multiply-adds over the int8 peak of
 * the kernels in use, el_measure_int8_peak). Concurrent variants, speculative trees and served
 * batches all run such steps (docs/bench.md). */
#include <stdlib.h>

#include "bench.h"

typedef struct rows_point {
    int32_t rows;
    bench_stat step_ms;
    double bw;              /* GB/s: the higher of the reads before and after the series */
    double memory_floor_ms; /* step bytes / bw */
    double compute_floor_ms;
    double fraction;        /* the larger floor / the median step */
} rows_point;

typedef struct rows_report {
    int32_t threads;
    const char *type;
    uint64_t step_bytes, macs_per_row;
    el_int8_peak peak;
    rows_point *points;
} rows_report;

/* The timed steps of R rows after the shared prompt: reps series of n steps, the cells of each
 * series removed after it, so every series starts at the same cache position. */
static el_status time_steps(el_context *ctx, const bench_opts *o, int32_t r, const int32_t *toks,
                            double *ms) {
    int32_t p = (int32_t)o->n_prompt, n = (int32_t)o->n_gen;
    int32_t tok[BENCH_MAX_ROWS], pos[BENCH_MAX_ROWS], seq[BENCH_MAX_ROWS];
    int8_t logits[BENCH_MAX_ROWS];
    el_status st = EL_OK;
    for (int rep = -1; st == EL_OK && rep < (int)o->reps; rep++) { /* -1: the warm-up */
        for (int32_t s = 0; st == EL_OK && s < n; s++) {
            for (int32_t i = 0; i < r; i++) {
                tok[i] = toks[p + (i * 131 + s) % (r * n + 1)]; /* distinct rows */
                pos[i] = p + s;
                seq[i] = i;
                logits[i] = 1;
            }
            el_batch b = {.n_rows = r, .token = tok, .pos = pos, .seq_id = seq, .logits = logits};
            double t0 = cli_now_ms();
            st = el_decode(ctx, &b);
            if (rep >= 0) ms[rep * n + s] = cli_now_ms() - t0;
        }
        for (int32_t i = 0; st == EL_OK && i < r; i++) st = el_kv_seq_remove(ctx, i, p, -1);
    }
    return st;
}

static void print_table(const bench_opts *o, const rows_report *r) {
    const el_int8_peak *pk = &r->peak;
    printf("model      %s (%s), weights read per step %.1f MB, %.3f G multiply-adds a row\n",
           o->mo.model, r->type, (double)r->step_bytes / 1e6, (double)r->macs_per_row / 1e9);
    printf("threads    %d; steps at cache position %ld, %ld repetitions of %ld steps: median "
           "(min - max)\n", r->threads, o->n_prompt, o->reps, o->n_gen);
    if (pk->instruction)
        printf("int8 peak  %10.1f G multiply-adds/s with %d threads (%s, %d a instruction; "
               "clock %.2f GHz, %.1f a cycle a thread)\n", pk->gmacs_per_s, pk->threads,
               pk->instruction, pk->macs_per_instr, pk->ghz, pk->macs_per_cycle);
    else
        printf("int8 peak  none: the %s kernels have no probe, so no compute floor\n", pk->isa);
    printf("%6s %12s %18s %11s %12s %9s\n", "rows", "step ms", "(min - max)", "memory ms",
           "compute ms", "fraction");
    for (int i = 0; i < o->n_rows; i++) {
        const rows_point *p = &r->points[i];
        char range[40];
        snprintf(range, sizeof range, "(%.2f - %.2f)", p->step_ms.min, p->step_ms.max);
        printf("%6d %12.2f %18s %11.2f %12.2f %9.3f\n", p->rows, p->step_ms.med, range,
               p->memory_floor_ms, p->compute_floor_ms, p->fraction);
    }
    printf("fraction   the larger floor over the step's median time (1: at the floor)\n");
}

static void print_json(const bench_opts *o, const rows_report *r) {
    const el_int8_peak *pk = &r->peak;
    bench_json_begin(o, r->type, r->threads);
    printf(", \"step_bytes\": %llu, \"multiply_adds_per_row\": %llu, \"isa\": \"%s\"",
           (unsigned long long)r->step_bytes, (unsigned long long)r->macs_per_row, pk->isa);
    if (pk->instruction)
        printf(", \"instruction\": \"%s\", \"macs_per_instruction\": %d", pk->instruction,
               pk->macs_per_instr);
    printf(", \"int8_peak_gmacs_per_s\": %.6g, \"clock_ghz\": %.6g, \"macs_per_cycle\": %.6g"
           ", \"rows\": [", pk->gmacs_per_s, pk->ghz, pk->macs_per_cycle);
    for (int i = 0; i < o->n_rows; i++) {
        const rows_point *p = &r->points[i];
        printf("%s{\"rows\": %d", i ? ", " : "", p->rows);
        bench_json_stat("step_ms", p->step_ms);
        printf(", \"bandwidth_gb_s\": %.6g, \"memory_floor_ms\": %.6g, \"compute_floor_ms\": "
               "%.6g, \"fraction\": %.6g}", p->bw, p->memory_floor_ms, p->compute_floor_ms,
               p->fraction);
    }
    printf("]}\n");
}

/* The stricter of two peaks (the higher: the lower compute floor). */
static void keep_higher(el_int8_peak *best, const el_int8_peak *p) {
    if (p->gmacs_per_s > best->gmacs_per_s) *best = *p;
}

int bench_rows(const bench_opts *o, el_model *m, int32_t threads) {
    el_model_info info;
    el_decode_cost cost;
    el_status st = el_model_get_info(m, &info);
    if (st == EL_OK) st = el_model_decode_cost(m, &cost);
    int32_t rmax = 0;
    for (int i = 0; i < o->n_rows; i++) rmax = o->rows[i] > rmax ? o->rows[i] : rmax;
    int32_t p = (int32_t)o->n_prompt, n = (int32_t)o->n_gen;
    el_context_params cp = el_context_default_params();
    cp.n_ctx = p + rmax * n;
    cp.n_batch = p > rmax ? p : rmax;
    cp.n_ubatch = (int32_t)o->n_ubatch;
    cp.n_seq_max = rmax;
    cp.n_threads = threads;
    cp.kv_type = o->mo.kv_type;
    el_context *ctx = NULL;
    if (st == EL_OK) st = el_context_create(m, &cp, &ctx);
    /* with adapters, sequence i binds the (i mod N)th: rows of one step use different ones */
    el_binding bind[CLI_MAX_LORA];
    int n_bind = 0;
    uint64_t adapter_bytes = 0;
    if (st == EL_OK) st = cli_lora_load(&o->lora, m, bind, &n_bind);
    for (int32_t i = 0; st == EL_OK && n_bind > 0 && i < rmax; i++) {
        el_adapter_info ai;
        st = el_context_bind(ctx, i, &bind[i % n_bind], 1);
        if (st == EL_OK && i < n_bind) st = el_adapter_get_info(bind[i].adapter, &ai);
        if (st == EL_OK && i < n_bind) adapter_bytes += ai.bytes;
    }
    size_t n_tok = (size_t)p + (size_t)rmax * (size_t)n + 1;
    int32_t *toks = malloc(n_tok * sizeof *toks), *pos = malloc((size_t)p * sizeof *pos),
            *seq = calloc((size_t)p, sizeof *seq);
    double *ms = malloc((size_t)o->reps * (size_t)n * sizeof *ms);
    rows_point *points = calloc((size_t)o->n_rows, sizeof *points);
    if (st == EL_OK && !(toks && pos && seq && ms && points)) st = EL_ERR_NOMEM;
    if (st == EL_OK) { /* the prompt once, then shared by every sequence */
        bench_tokens(toks, n_tok, info.n_vocab);
        for (int32_t i = 0; i < p; i++) pos[i] = i;
        el_batch b = {.n_rows = p, .token = toks, .pos = pos, .seq_id = seq};
        st = el_decode(ctx, &b);
        for (int32_t i = 1; st == EL_OK && i < rmax; i++) st = el_kv_seq_share(ctx, 0, i, 0, p);
    }
    rows_report rep = {.threads = threads, .points = points};
    el_int8_peak after;
    if (st == EL_OK) st = el_measure_int8_peak(threads, &rep.peak);
    rep.type = cost.weight_type;
    rep.step_bytes = cost.weight_bytes_per_token + adapter_bytes;
    rep.macs_per_row = cost.multiply_adds_per_token;
    for (int i = 0; st == EL_OK && i < o->n_rows; i++) {
        double before = 0, bw_after = 0;
        st = el_model_read_bandwidth(m, threads, &before);
        if (st == EL_OK) st = time_steps(ctx, o, o->rows[i], toks, ms);
        if (st == EL_OK) st = el_model_read_bandwidth(m, threads, &bw_after);
        if (st != EL_OK) break;
        rows_point *pt = &points[i];
        pt->rows = o->rows[i];
        pt->step_ms = bench_summarize(ms, (int)o->reps * n);
        pt->bw = before > bw_after ? before : bw_after;
        pt->memory_floor_ms = (double)rep.step_bytes / (pt->bw * 1e9) * 1e3;
    }
    if (st == EL_OK) st = el_measure_int8_peak(threads, &after);
    if (st == EL_OK) {
        keep_higher(&rep.peak, &after);
        for (int i = 0; i < o->n_rows; i++) {
            rows_point *pt = &points[i];
            double macs = (double)rep.macs_per_row * pt->rows;
            pt->compute_floor_ms = rep.peak.gmacs_per_s > 0 ? macs / (rep.peak.gmacs_per_s * 1e9) * 1e3 : 0;
            double floor = pt->memory_floor_ms > pt->compute_floor_ms ? pt->memory_floor_ms
                                                                      : pt->compute_floor_ms;
            pt->fraction = floor / pt->step_ms.med;
        }
        if (o->json)
            print_json(o, &rep);
        else
            print_table(o, &rep);
    }
    free(toks), free(pos), free(seq), free(ms), free(points);
    el_context_free(ctx);
    for (int i = 0; i < n_bind; i++) el_adapter_free(bind[i].adapter);
    return st ? cli_fail("bench", st) : CLI_OK;
}
