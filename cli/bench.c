/* bench.c - `edgelora bench`: load time, prompt and generation speed, time to first token and
 * peak memory of a model, and in the same run the memory read bandwidth that bounds generation
 * (each decoded token reads every layer weight and the output head once), measured on the
 * weights themselves before each generation. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static const char help[] =
    "usage: edgelora bench -m MODEL [-t THREADS] [-p 512] [-n 128] [-b BATCH] [-u UBATCH]\n"
    "                      [-r REPS] [--kv-type f16|f32] [--lora FILE] [--lora-scaled FILE S]\n"
    "                      [--variants K] [--rows R1,R2,...] [--json]\n"
    "                      [--forecast FILE [--tree auto|W1,W2,..] --prompts FILE [--record T]]\n"
    "                      [--replay T] [--prune RATE | --mem-budget BYTES|auto]\n"
    "                      [--keep-page-cache] [--profile FILE]\n"
    "Measures, REPS times (default 3), with THREADS threads (default: all cores) and a KV cache\n"
    "of fp16 (default) or float32 elements:\n"
    "  load   el_model_load of MODEL (mapped and its pages mapped in, not copied: milliseconds,\n"
    "         but once where it reads a file the page cache held in 4 KB pages again into\n"
    "         2 MB ones, which --keep-page-cache leaves as they are)\n"
    "  pp     prompt processing: -p tokens decoded in batches of -b (default min(p, 512)), which\n"
    "         the forward runs in chunks of -u rows (default: the library's, 128)\n"
    "  bw     the read bandwidth of THREADS threads reading the weights one token reads, where\n"
    "         they are mapped (best of several sweeps), just before and just after each\n"
    "         generation; the higher of the two is that generation's\n"
    "  tg     generation: -n single-token decode steps after the prompt\n"
    "  ttft   time to first token: the prompt plus the first generated token\n"
    "then the decode bound it implies (bandwidth / those bytes), the fraction of the bound\n"
    "generation reached (the median over repetitions of each generation against its\n"
    "bandwidth; a line warns when the two reads around a generation differ by more than 25%:\n"
    "the memory changed speed during it), the pages mapping the weights, the peak resident\n"
    "memory (against the model file plus the KV cache of p + n cells), and the CPU share the\n"
    "timed runs got (below 1 when other processes took the cores). Prints medians with min\n"
    "and max; --json prints one JSON object instead.\n"
    "--lora FILE (GGUF or PEFT folder; repeatable) binds adapters to the measured sequence, as\n"
    "`run` does: the figures then include their cost, and the bound and the memory their bytes.\n"
    "With --variants, variant i binds the (i mod N)th of the N adapters (one alone: the first).\n"
    "--variants K measures concurrent variants instead (docs/ctg.md): each repetition runs K\n"
    "greedy variants of -n tokens (default 64) after one -p-token prompt (default 128), and one\n"
    "alone, and reports both wall times with the prompt, their ratio (K sequential runs: K),\n"
    "the time per step, and the KV cache bytes the prompt and each extra variant take.\n"
    "--rows 1,2,4,8 (up to 64 rows) measures decode steps of R rows instead, for each R: R\n"
    "sequences share a -p-token prompt (default 256) and each decodes its own token at the same\n"
    "position, -n steps (default 16) per repetition; each R's median step time is printed next\n"
    "to its memory floor (the weights and adapters a step reads over the bandwidth measured\n"
    "around it) and its compute floor (R x the multiply-adds of a row over the int8 peak of the\n"
    "kernels in use, probed on the same threads), and the fraction: the larger floor over the\n"
    "step's time. With adapters, sequence i binds the (i mod N)th.\n"
    "--forecast FILE measures self-speculative decoding (docs/speculative.md) against plain\n"
    "greedy decoding: for each line of --prompts FILE, -n tokens (default 64) both ways,\n"
    "alternated; prints both tokens/s, the speed-up, the mean tokens a step, the share of steps\n"
    "with a tree and the rows a step, and checks the texts are identical (exit 1 if not).\n"
    "--record T writes each step's tree and tokens (first repetition) to T; --replay T decodes\n"
    "those steps' rows (tree, slots, accepted path kept) on MODEL after a -p-token prompt, and\n"
    "as many plain steps, alternated: the speed-up the recorded acceptance gives this model.\n"
    "docs/bench.md says more.\n";

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

bench_stat bench_summarize(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return (bench_stat){med, v[0], v[n - 1]};
}

void bench_tokens(int32_t *toks, size_t n, int32_t n_vocab) {
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < n; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        toks[i] = (int32_t)((rng >> 33) % (uint64_t)n_vocab);
    }
}

double bench_cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

typedef struct bench_result {
    int32_t threads;
    uint64_t file_bytes, weight_bytes, bytes_per_token, kv_bytes, peak_rss, huge_bytes;
    uint64_t adapter_bytes; /* A and B of the bound adapters: each step reads them all too */
    const char *type;
    bench_stat load_ms, pp, tg, ttft_ms, bw;
    double bound, fraction;
    int moved; /* generations whose bandwidth before and after differ by more than MOVED */
    double *bw_before, *bw_after; /* per repetition (for the warning) */
    double cpu_share; /* CPU time of the timed runs / (wall time * threads): < 1 when other
                       * processes took the cores (the pool's workers spin, so an idle machine
                       * gives about 1) */
} bench_result;

/* Decodes tokens [0, n) of toks at positions p0.. in batches of n_batch; returns the status. */
static el_status decode_run(el_context *ctx, const int32_t *toks, int32_t n, int32_t p0,
                            int32_t n_batch, int32_t *pos, int32_t *seq) {
    for (int32_t done = 0; done < n; done += n_batch) {
        int32_t rows = n - done < n_batch ? n - done : n_batch;
        for (int32_t r = 0; r < rows; r++) pos[r] = p0 + done + r;
        el_batch b = {.n_rows = rows, .token = toks + done, .pos = pos, .seq_id = seq};
        el_status st = el_decode(ctx, &b);
        if (st) return st;
    }
    return EL_OK;
}

/* Bandwidths before and after a generation further apart than this ratio: the memory changed
 * speed during it (some VMs switch between two memory speeds far apart: docs/bench.md). */
static const double MOVED = 1.25;

/* Files from this size on stream from DRAM while decoding, so their page size shows in the
 * speed: below half of one in 2 MB pages, the table says what to do. */
static const uint64_t BENCH_PAGES_HINT_BYTES = 64ull << 20;

/* The timed repetitions, from an empty cache each time: the prompt, then the read bandwidth of
 * the weights (el_model_read_bandwidth), generation, and the bandwidth again. The memory's
 * speed can change within a run, so each generation is judged against the bandwidth of its own
 * moment: the higher of the reads around it (the stricter bound, where they differ). */
static el_status run_reps(el_context *ctx, const el_model *m, const bench_opts *o,
                          const int32_t *toks, bench_result *res) {
    int32_t p = (int32_t)o->n_prompt, n = (int32_t)o->n_gen, nb = (int32_t)o->n_batch;
    int reps = (int)o->reps;
    int32_t *pos = malloc((size_t)nb * sizeof *pos), *seq = calloc((size_t)nb, sizeof *seq);
    double *pp = malloc((size_t)reps * sizeof *pp), *tg = malloc((size_t)reps * sizeof *tg);
    double *ttft = malloc((size_t)reps * sizeof *ttft), *bw = malloc((size_t)reps * sizeof *bw);
    double *frac = malloc((size_t)reps * sizeof *frac);
    res->bw_before = malloc((size_t)reps * sizeof *res->bw_before);
    res->bw_after = malloc((size_t)reps * sizeof *res->bw_after);
    el_status st = pos && seq && pp && tg && ttft && bw && frac && res->bw_before && res->bw_after
                       ? EL_OK
                       : EL_ERR_NOMEM;
    /* warm-up: every weight page mapped and touched, the pool's threads started */
    if (st == EL_OK) st = decode_run(ctx, toks, p < 16 ? p : 16, 0, nb, pos, seq);
    /* CPU and wall time of the prompts and generations only (the bandwidth reads run a pool of
     * their own while the context's workers wait) */
    double cpu = 0, wall = 0;
    /* bytes one step reads: the weights, and the bound adapters' A and B */
    double step_bytes = (double)(res->bytes_per_token + res->adapter_bytes);
    for (int r = 0; st == EL_OK && r < reps; r++) {
        el_kv_clear(ctx);
        double t0 = cli_now_ms() / 1e3, c0 = bench_cpu_seconds();
        st = decode_run(ctx, toks, p, 0, nb, pos, seq);
        double t1 = cli_now_ms() / 1e3, c1 = bench_cpu_seconds(), first = 0;
        if (st == EL_OK) st = el_model_read_bandwidth(m, res->threads, &res->bw_before[r]);
        double t1b = cli_now_ms() / 1e3, c1b = bench_cpu_seconds();
        for (int32_t i = 0; st == EL_OK && i < n; i++) {
            st = decode_run(ctx, toks + p + i, 1, p + i, 1, pos, seq);
            if (i == 0) first = cli_now_ms() / 1e3 - t1b;
        }
        double t2 = cli_now_ms() / 1e3;
        cpu += c1 - c0 + bench_cpu_seconds() - c1b;
        wall += t1 - t0 + t2 - t1b;
        if (st == EL_OK) st = el_model_read_bandwidth(m, res->threads, &res->bw_after[r]);
        if (st != EL_OK) break;
        double lo = res->bw_before[r], hi = res->bw_after[r];
        if (lo > hi) lo = hi, hi = res->bw_before[r];
        bw[r] = hi;
        res->moved += hi > lo * MOVED;
        pp[r] = p / (t1 - t0);
        tg[r] = n / (t2 - t1b);
        ttft[r] = (t1 - t0 + first) * 1e3;
        frac[r] = tg[r] / (bw[r] * 1e9 / step_bytes);
    }
    res->cpu_share = wall > 0 ? cpu / (wall * res->threads) : 0;
    if (st == EL_OK) {
        res->pp = bench_summarize(pp, reps);
        res->tg = bench_summarize(tg, reps);
        res->ttft_ms = bench_summarize(ttft, reps);
        res->bw = bench_summarize(bw, reps);
        res->bound = res->bw.med * 1e9 / step_bytes;
        res->fraction = bench_summarize(frac, reps).med;
    }
    free(pos);
    free(seq);
    free(pp);
    free(tg);
    free(ttft);
    free(bw);
    free(frac);
    return st; /* the caller frees bw_before and bw_after */
}

/* Loads the model reps times (timing each), keeping the last one loaded in *out. */
static int load_timed(const bench_opts *o, bench_result *res, el_model **out) {
    double ms[100];
    for (int r = 0; r < o->reps; r++) {
        double t0 = cli_now_ms() / 1e3;
        int rc = cli_load_model("bench", &o->mo, false, out);
        ms[r] = (cli_now_ms() / 1e3 - t0) * 1e3;
        if (rc) return rc;
        if (r + 1 < o->reps) el_model_free(*out);
    }
    res->load_ms = bench_summarize(ms, (int)o->reps);
    return CLI_OK;
}

/* s as a JSON string literal on stdout. */
static void bench_json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

void bench_json_stat(const char *name, bench_stat s) {
    printf(", \"%s\": %.6g, \"%s_min\": %.6g, \"%s_max\": %.6g", name, s.med, name, s.min, name,
           s.max);
}

void bench_json_begin(const bench_opts *o, const char *type, int32_t threads) {
    printf("{\"model\": ");
    bench_json_string(o->mo.model);
    printf(", \"type\": ");
    bench_json_string(type);
    printf(", \"threads\": %d, \"n_prompt\": %ld, \"n_gen\": %ld, \"reps\": %ld"
           ", \"kv_type\": \"%s\", \"adapters\": %d", threads, o->n_prompt, o->n_gen, o->reps,
           cli_kv_type_name(o->mo.kv_type), o->lora.n);
}

static void print_json(const bench_opts *o, const bench_result *r) {
    bench_json_begin(o, r->type, r->threads);
    printf(", \"n_batch\": %ld, \"n_ubatch\": %ld", o->n_batch, o->n_ubatch);
    printf(", \"file_bytes\": %llu, \"weight_bytes\": %llu, \"bytes_per_token\": %llu"
           ", \"adapter_bytes_per_token\": %llu, \"kv_bytes\": %llu, \"peak_rss_bytes\": %llu"
           ", \"huge_mapped_bytes\": %llu",
           (unsigned long long)r->file_bytes, (unsigned long long)r->weight_bytes,
           (unsigned long long)r->bytes_per_token, (unsigned long long)r->adapter_bytes,
           (unsigned long long)r->kv_bytes, (unsigned long long)r->peak_rss,
           (unsigned long long)r->huge_bytes);
    bench_json_stat("load_ms", r->load_ms);
    bench_json_stat("pp_tokens_per_s", r->pp);
    bench_json_stat("tg_tokens_per_s", r->tg);
    bench_json_stat("ttft_ms", r->ttft_ms);
    bench_json_stat("bandwidth_gb_s", r->bw);
    printf(", \"bound_tokens_per_s\": %.6g, \"fraction_of_bound\": %.6g"
           ", \"bandwidth_moved_reps\": %d, \"cpu_share\": %.3f}\n",
           r->bound, r->fraction, r->moved, r->cpu_share);
}

static void print_table(const bench_opts *o, const bench_result *r) {
    const double mb = 1e6;
    printf("model      %s (%s), file %.1f MB, weights read per token %.1f MB", o->mo.model,
           r->type, (double)r->file_bytes / mb, (double)r->bytes_per_token / mb);
    if (r->adapter_bytes) printf(" + adapters %.1f MB", (double)r->adapter_bytes / mb);
    printf("\n");
    printf("threads    %d, %ld repetitions: median (min - max)\n", r->threads, o->reps);
    for (int i = 0; i < o->lora.n; i++)
        printf("adapter    %s, scale %g\n", o->lora.paths[i], (double)o->lora.scales[i]);
    printf("load       %10.2f ms      (%.2f - %.2f)\n", r->load_ms.med, r->load_ms.min,
           r->load_ms.max);
    printf("pp %-6ld  %10.2f tok/s   (%.2f - %.2f)\n", o->n_prompt, r->pp.med, r->pp.min,
           r->pp.max);
    printf("tg %-6ld  %10.2f tok/s   (%.2f - %.2f)\n", o->n_gen, r->tg.med, r->tg.min,
           r->tg.max);
    printf("ttft       %10.2f ms      (%.2f - %.2f)\n", r->ttft_ms.med, r->ttft_ms.min,
           r->ttft_ms.max);
    printf("bandwidth  %10.2f GB/s    (%.2f - %.2f), reading %.1f MB with %d threads\n",
           r->bw.med, r->bw.min, r->bw.max, (double)r->bytes_per_token / mb, r->threads);
    printf("bound      %10.2f tok/s   (bandwidth / weights%s read per token)\n", r->bound,
           r->adapter_bytes ? " and adapters" : "");
    printf("fraction   %10.3g of the bound reached by generation\n", r->fraction);
    if (r->moved) {
        printf("memory     changed speed during %d of %ld generations (GB/s before -> after:",
               r->moved, o->reps);
        for (long i = 0; i < o->reps; i++)
            printf(" %.1f -> %.1f", r->bw_before[i], r->bw_after[i]);
        printf("): their fractions are uncertain\n");
    }
    printf("cpu share  %10.2f of %d threads x wall time during pp and tg%s\n", r->cpu_share,
           r->threads, r->cpu_share < 0.9 ? " (other processes took cores: figures are low)" : "");
    printf("2 MB pages %10.1f MB      of the %.1f MB file\n", (double)r->huge_bytes / mb,
           (double)r->file_bytes / mb);
    if (r->file_bytes >= BENCH_PAGES_HINT_BYTES && r->huge_bytes < r->file_bytes / 2) {
        printf("pages      most of the file is in 4 KB pages, which decoding reads 15-30%% slower\n");
        if (o->mo.keep_page_cache)
            printf("           than 2 MB ones (the page cache holds it so, and --keep-page-cache\n"
                   "           kept them); without it, or once `dd if=%s\n"
                   "           iflag=nocache count=0` drops it from the cache, the next load reads it\n"
                   "           into 2 MB pages where the kernel can (docs/bench.md)\n",
                   o->mo.model);
        else
            printf("           than 2 MB ones, though the load read it again: another process maps\n"
                   "           those pages, or the kernel gives this file none (docs/bench.md)\n");
    }
    printf("peak RSS   %10.1f MB      (file %.1f MB + KV cache %.1f MB of %s", (double)r->peak_rss / mb,
           (double)r->file_bytes / mb, (double)r->kv_bytes / mb, cli_kv_type_name(o->mo.kv_type));
    if (r->adapter_bytes) printf(" + adapters %.1f MB", (double)r->adapter_bytes / mb);
    printf("; ratio %.3f)\n",
           (double)r->peak_rss / (double)(r->file_bytes + r->kv_bytes + r->adapter_bytes));
}

/* "1,2,4,8" into o->rows; false (with a message) unless every item is a count of 1 to
 * BENCH_MAX_ROWS. */
static bool parse_rows(const char *list, bench_opts *o) {
    o->n_rows = 0;
    for (const char *s = list;;) {
        char *end;
        long r = strtol(s, &end, 10);
        if (end == s || r < 1 || r > BENCH_MAX_ROWS || (*end != ',' && *end != '\0') ||
            o->n_rows == BENCH_MAX_ROW_COUNTS) {
            cli_error("bench", "--rows takes up to %d comma-separated counts of 1 to %d rows, "
                               "not '%s'", BENCH_MAX_ROW_COUNTS, BENCH_MAX_ROWS, list);
            return false;
        }
        o->rows[o->n_rows++] = (int32_t)r;
        if (*end == '\0') return true;
        s = end + 1;
    }
}

static int parse(int argc, char **argv, bench_opts *o) {
    *o = (bench_opts){.reps = 3}; /* -p and -n: 0 until given, then the mode's default */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int r = cli_model_opt("bench", &o->mo, argc, argv, &i);
        if (r == 0) r = cli_kv_opt("bench", &o->mo, argc, argv, &i);
        if (r == 0) r = cli_lora_opt("bench", &o->lora, argc, argv, &i);
        if (r == 0) r = cli_spec_opt("bench", &o->spec, argc, argv, &i);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        long *num = NULL, lo = 1, hi = 1 << 20;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return -1;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) {
            num = &o->n_prompt;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen")) {
            num = &o->n_gen;
        } else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
            num = &o->n_batch;
        } else if (!strcmp(a, "-u") || !strcmp(a, "--ubatch-size")) {
            num = &o->n_ubatch;
        } else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions")) {
            num = &o->reps;
            hi = 100;
        } else if (!strcmp(a, "--rows")) {
            if (!(v = cli_value("bench", argc, argv, &i)) || !parse_rows(v, o)) return CLI_USAGE;
        } else if (!strcmp(a, "--variants")) {
            num = &o->variants;
            hi = 256;
        } else if (!strcmp(a, "--prompts")) {
            if (!(o->prompts_path = cli_value("bench", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--record")) {
            if (!(o->record_path = cli_value("bench", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--replay")) {
            if (!(o->replay_path = cli_value("bench", argc, argv, &i))) return CLI_USAGE;
        } else {
            cli_error("bench", "unknown option '%s'", a);
            return CLI_USAGE;
        }
        if (num && (!(v = cli_value("bench", argc, argv, &i)) ||
                    !cli_int("bench", a, v, lo, hi, num)))
            return CLI_USAGE;
    }
    if (!(o->mo.model = cli_model_path("bench", o->mo.model))) return CLI_USAGE;
    if (o->mo.ctx) {
        cli_error("bench", "-c is not an option of bench: the context is -p + -n tokens");
        return CLI_USAGE;
    }
    bool spec = o->spec.forecast || o->spec.on;
    if ((o->n_rows > 0) + (o->variants > 0) + spec + (o->replay_path != NULL) > 1) {
        cli_error("bench", "--rows, --variants, --forecast and --replay are different "
                  "measurements: give one");
        return CLI_USAGE;
    }
    if ((o->prompts_path || o->record_path) && !spec) {
        cli_error("bench", "--prompts and --record go with --forecast");
        return CLI_USAGE;
    }
    if (!o->n_prompt) o->n_prompt = o->n_rows ? 256 : o->variants ? 128 : 512;
    if (!o->n_gen) o->n_gen = o->n_rows ? 16 : o->variants || spec ? 64 : 128;
    if (o->variants && o->n_gen < 2) {
        cli_error("bench", "--variants needs -n 2 or more: each variant's first token comes "
                           "from the prompt, the decode steps measured come after it");
        return CLI_USAGE;
    }
    if (!o->n_batch) o->n_batch = o->n_prompt < 512 ? o->n_prompt : 512;
    return CLI_OK;
}

int cmd_bench(int argc, char **argv) {
    bench_opts o;
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? CLI_OK : rc;
    bench_result res = {0};
    res.threads = o.mo.threads > 0 ? (int32_t)o.mo.threads : (int32_t)sysconf(_SC_NPROCESSORS_ONLN);
    struct stat sb;
    if (stat(o.mo.model, &sb) == 0) res.file_bytes = (uint64_t)sb.st_size;
    el_model *m = NULL;
    if ((rc = load_timed(&o, &res, &m))) return rc;
    if (o.variants || o.n_rows || o.spec.forecast || o.spec.on || o.replay_path) {
        rc = o.n_rows                       ? bench_rows(&o, m, res.threads)
             : o.replay_path                ? bench_replay(&o, m, res.threads)
             : o.spec.forecast || o.spec.on ? bench_spec(&o, m, res.threads)
                      : bench_variants(&o, m, res.threads, res.file_bytes, res.load_ms);
        el_model_free(m);
        return rc;
    }
    el_model_info info;
    el_decode_cost cost;
    el_status st = el_model_get_info(m, &info);
    if (st == EL_OK) st = el_model_decode_cost(m, &cost);
    el_context *ctx = NULL;
    el_context_params cp = el_context_default_params();
    cp.n_ctx = (int32_t)(o.n_prompt + o.n_gen);
    cp.n_batch = (int32_t)o.n_batch;
    cp.n_ubatch = (int32_t)o.n_ubatch;
    cp.n_seq_max = 1;
    cp.n_threads = res.threads;
    cp.kv_type = o.mo.kv_type;
    if (st == EL_OK) st = el_context_create(m, &cp, &ctx);
    el_binding bind[CLI_MAX_LORA];
    int n_loaded = 0;
    if (st == EL_OK) st = cli_lora_load(&o.lora, m, bind, &n_loaded);
    if (st == EL_OK && n_loaded > 0) st = el_context_bind(ctx, 0, bind, n_loaded);
    for (int i = 0; st == EL_OK && i < n_loaded; i++) {
        el_adapter_info ai;
        st = el_adapter_get_info(bind[i].adapter, &ai);
        if (st == EL_OK) res.adapter_bytes += ai.bytes;
    }
    size_t n_tok = (size_t)(o.n_prompt + o.n_gen);
    int32_t *toks = malloc(n_tok * sizeof *toks);
    if (st == EL_OK && !toks) st = EL_ERR_NOMEM;
    if (st == EL_OK) bench_tokens(toks, n_tok, info.n_vocab);
    if (st == EL_OK) {
        res.type = cost.weight_type;
        res.weight_bytes = info.weight_bytes;
        res.bytes_per_token = cost.weight_bytes_per_token;
        res.kv_bytes = (uint64_t)el_kv_cell_bytes(ctx) * (uint64_t)cp.n_ctx;
        st = run_reps(ctx, m, &o, toks, &res);
    }
    res.peak_rss = el_peak_rss_bytes();
    res.huge_bytes = el_huge_mapped_bytes(); /* the model is still mapped */
    if (st == EL_OK) {
        if (o.json)
            print_json(&o, &res);
        else
            print_table(&o, &res);
    }
    free(toks);
    free(res.bw_before);
    free(res.bw_after);
    el_context_free(ctx);
    for (int i = 0; i < n_loaded; i++) el_adapter_free(bind[i].adapter);
    el_model_free(m);
    return st ? cli_fail("bench", st) : CLI_OK;
}
