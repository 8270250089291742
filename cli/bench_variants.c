/* bench_variants.c - `edgelora bench --variants K`: the wall time of K concurrent variants
 * (el_variants_*: one shared prompt, one forward step for all of them per token) against one
 * variant alone, and what each extra variant costs in KV cache. Every variant is greedy and
 * ignores end-of-generation, so each makes exactly -n tokens whatever the model. */
#include <stdlib.h>

#include "bench.h"

typedef struct variants_run {
    double prompt_ms, gen_ms, cpu_ms;
    int32_t cells;       /* KV cells used at the end: the prompt's plus every variant's own */
    int32_t extra_cells; /* those of one variant beyond the shared prompt */
    size_t cell_bytes;
} variants_run;

/* One timed run of the first k of the variants vp in a fresh context (its creation not timed). */
static el_status run_variants(el_model *m, const bench_opts *o, int32_t threads, int32_t k,
                              const el_variant_params *vp, const int32_t *prompt,
                              variants_run *out) {
    int32_t np = (int32_t)o->n_prompt, n = (int32_t)o->n_gen;
    el_context_params cp = el_context_default_params();
    cp.n_ctx = np + k * n;
    cp.n_batch = (int32_t)o->n_batch > k ? (int32_t)o->n_batch : k;
    cp.n_ubatch = (int32_t)o->n_ubatch;
    cp.n_seq_max = k;
    cp.n_threads = threads;
    cp.kv_type = o->mo.kv_type;
    el_variants_params gp = el_variants_default_params();
    gp.n_variants = k;
    gp.variants = vp;
    el_context *ctx = NULL;
    el_variants *g = NULL;
    el_status st = el_context_create(m, &cp, &ctx);
    double c0 = bench_cpu_seconds(), t0 = cli_now_ms();
    if (st == EL_OK) st = el_variants_start(ctx, &gp, prompt, np, &g);
    double t1 = cli_now_ms();
    while (st == EL_OK && el_variants_running(g) > 0) st = el_variants_step(g);
    double t2 = cli_now_ms();
    if (st == EL_OK) {
        *out = (variants_run){.prompt_ms = t1 - t0,
                              .gen_ms = t2 - t1,
                              .cpu_ms = (bench_cpu_seconds() - c0) * 1e3,
                              .cells = el_kv_used_cells(ctx),
                              .cell_bytes = el_kv_cell_bytes(ctx)};
        el_variant_result r;
        st = el_variants_result(g, k - 1, &r);
        out->extra_cells = r.n_cells;
    }
    el_variants_free(g);
    el_context_free(ctx);
    return st;
}

typedef struct variants_report {
    int32_t k, threads;
    const char *type;
    uint64_t file_bytes, peak_rss;
    bench_stat load_ms, one_ms, all_ms, one_prompt_ms, all_prompt_ms, one_step_ms, all_step_ms;
    bench_stat ratio, gen_ratio, cpu_ratio;
    variants_run last_all; /* the KV figures, the same in every repetition */
} variants_report;

static void print_table(const bench_opts *o, const variants_report *r) {
    printf("model      %s (%s), file %.1f MB\n", o->mo.model, r->type,
           (double)r->file_bytes / 1e6);
    printf("threads    %d, %ld repetitions: median (min - max); a %ld-token prompt, then greedy "
           "variants of %ld tokens\n", r->threads, o->reps, o->n_prompt, o->n_gen);
    for (int i = 0; i < o->lora.n; i++) { /* bound by the variants numbered i mod N */
        printf("adapter    %s, scale %g: variants", o->lora.paths[i], (double)o->lora.scales[i]);
        for (int v = i, shown = 0; v < r->k; v += o->lora.n, shown++)
            printf(shown == 8 ? " ..." : shown > 8 ? "" : " %d", v);
        printf("\n");
    }
    printf("load       %10.2f ms      (%.2f - %.2f)\n", r->load_ms.med, r->load_ms.min,
           r->load_ms.max);
    printf("K = 1      %10.1f ms      (%.1f - %.1f): prompt %.1f ms, then steps of %.2f ms\n",
           r->one_ms.med, r->one_ms.min, r->one_ms.max, r->one_prompt_ms.med,
           r->one_step_ms.med);
    printf("K = %-3d    %10.1f ms      (%.1f - %.1f): prompt %.1f ms, then steps of %.2f ms\n",
           r->k, r->all_ms.med, r->all_ms.min, r->all_ms.max, r->all_prompt_ms.med,
           r->all_step_ms.med);
    printf("ratio      %10.2f         (%.2f - %.2f) wall time of K = %d over K = 1 (sequential: "
           "%d); generation only %.2f, CPU time %.2f\n", r->ratio.med, r->ratio.min,
           r->ratio.max, r->k, r->k, r->gen_ratio.med, r->cpu_ratio.med);
    const variants_run *v = &r->last_all;
    printf("KV cache   %zu bytes a cell (%s); the prompt stored once: %ld cells = %zu bytes; each "
           "extra variant %d cells = %zu bytes (a copied prompt would add %zu more)\n",
           v->cell_bytes, cli_kv_type_name(o->mo.kv_type), o->n_prompt,
           (size_t)o->n_prompt * v->cell_bytes, v->extra_cells,
           (size_t)v->extra_cells * v->cell_bytes, (size_t)o->n_prompt * v->cell_bytes);
    printf("peak RSS   %10.1f MB\n", (double)r->peak_rss / 1e6);
}

static void print_json(const bench_opts *o, const variants_report *r) {
    const variants_run *v = &r->last_all;
    bench_json_begin(o, r->type, r->threads);
    printf(", \"variants\": %d, \"file_bytes\": %llu, \"peak_rss_bytes\": %llu", r->k,
           (unsigned long long)r->file_bytes, (unsigned long long)r->peak_rss);
    bench_json_stat("load_ms", r->load_ms);
    bench_json_stat("one_ms", r->one_ms);
    bench_json_stat("all_ms", r->all_ms);
    bench_json_stat("one_prompt_ms", r->one_prompt_ms);
    bench_json_stat("all_prompt_ms", r->all_prompt_ms);
    bench_json_stat("one_step_ms", r->one_step_ms);
    bench_json_stat("all_step_ms", r->all_step_ms);
    bench_json_stat("wall_ratio", r->ratio);
    bench_json_stat("generation_ratio", r->gen_ratio);
    bench_json_stat("cpu_ratio", r->cpu_ratio);
    printf(", \"kv_cell_bytes\": %zu, \"kv_cells_used\": %d, \"prompt_kv_bytes\": %zu"
           ", \"extra_variant_cells\": %d, \"extra_variant_bytes\": %zu}\n",
           v->cell_bytes, v->cells, (size_t)o->n_prompt * v->cell_bytes, v->extra_cells,
           (size_t)v->extra_cells * v->cell_bytes);
}

int bench_variants(const bench_opts *o, el_model *m, int32_t threads, uint64_t file_bytes,
                   bench_stat load_ms) {
    el_model_info info;
    el_decode_cost cost;
    el_status st = el_model_get_info(m, &info);
    if (st == EL_OK) st = el_model_decode_cost(m, &cost);
    int reps = (int)o->reps;
    int32_t k = (int32_t)o->variants, np = (int32_t)o->n_prompt, steps = (int32_t)o->n_gen - 1;
    int32_t *prompt = malloc((size_t)np * sizeof *prompt);
    enum { SERIES = 9 };
    double *v = malloc((size_t)reps * SERIES * sizeof *v); /* reps values of each series */
    el_variant_params *vp = malloc((size_t)k * sizeof *vp);
    if (!prompt || !v || !vp) {
        free(prompt), free(v), free(vp);
        cli_error("bench", "out of memory for %d variants of %ld tokens", k, o->n_gen);
        return CLI_FAIL;
    }
    for (int32_t i = 0; i < k; i++) { /* greedy, every one making -n tokens */
        vp[i] = el_variant_default_params();
        vp[i].sampler.temperature = 0.0f;
        vp[i].max_tokens = (int32_t)o->n_gen;
        vp[i].ignore_eos = true;
    }
    /* with adapters, variant i binds the (i mod N)th: rows of one step use different ones */
    el_binding bind[CLI_MAX_LORA];
    int n_bind = 0;
    if (st == EL_OK) st = cli_lora_load(&o->lora, m, bind, &n_bind);
    for (int32_t i = 0; st == EL_OK && n_bind > 0 && i < k; i++) {
        vp[i].bindings = &bind[i % n_bind];
        vp[i].n_bindings = 1;
    }
    if (st == EL_OK) bench_tokens(prompt, (size_t)np, info.n_vocab);
    variants_report r = {.k = k, .threads = threads, .file_bytes = file_bytes, .load_ms = load_ms};
    /* a warm-up run maps and touches every weight page and starts the pool's threads; then each
     * repetition runs one and K back to back, so both see the machine in the same state */
    variants_run one, all;
    if (st == EL_OK) st = run_variants(m, o, threads, 1, vp, prompt, &one);
    for (int i = 0; st == EL_OK && i < reps; i++) {
        st = run_variants(m, o, threads, 1, vp, prompt, &one);
        if (st == EL_OK) st = run_variants(m, o, threads, k, vp, prompt, &all);
        if (st != EL_OK) break;
        double t1 = one.prompt_ms + one.gen_ms, tk = all.prompt_ms + all.gen_ms;
        double row[SERIES] = {t1,         tk, one.prompt_ms, all.prompt_ms, one.gen_ms / steps,
                              all.gen_ms / steps,  tk / t1, all.gen_ms / one.gen_ms,
                              all.cpu_ms / one.cpu_ms};
        for (int j = 0; j < SERIES; j++) v[j * reps + i] = row[j];
        r.last_all = all;
    }
    if (st == EL_OK) {
        bench_stat *dst[SERIES] = {&r.one_ms,      &r.all_ms,      &r.one_prompt_ms,
                                   &r.all_prompt_ms, &r.one_step_ms, &r.all_step_ms,
                                   &r.ratio,       &r.gen_ratio,   &r.cpu_ratio};
        for (int j = 0; j < SERIES; j++) *dst[j] = bench_summarize(v + j * reps, reps);
        r.type = cost.weight_type;
        r.peak_rss = el_peak_rss_bytes();
        if (o->json)
            print_json(o, &r);
        else
            print_table(o, &r);
    }
    free(prompt);
    free(v);
    free(vp);
    for (int i = 0; i < n_bind; i++) el_adapter_free(bind[i].adapter);
    return st ? cli_fail("bench", st) : CLI_OK;
}
