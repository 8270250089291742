/* bench_spec.c - `bench --forecast`: speculative against plain greedy decoding on real prompts,
 * the same text checked, speeds alternated; `--record` writes each step's tree and tokens, and
 * `bench --replay` times those steps on another model (docs/speculative.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum { MAX_PROMPTS = 64, MAX_PROMPT_TOKENS = 256, MAX_STEPS = 1 << 16 };

typedef struct prompts {
    int32_t *tok[MAX_PROMPTS];
    int32_t n_tok[MAX_PROMPTS];
    int n;
    int32_t longest;
} prompts;

static void prompts_free(prompts *p) {
    for (int i = 0; i < p->n; i++) free(p->tok[i]);
}

/* One prompt per non-empty line of the file, tokenized (BOS as the model adds it). */
static int read_prompts(const char *path, el_model *m, prompts *p) {
    size_t len;
    char *text = cli_read_file("bench", path, &len);
    if (!text) return CLI_FAIL;
    memset(p, 0, sizeof *p);
    for (char *line = text, *next; line && *line && p->n < MAX_PROMPTS; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        if (!*line) continue;
        size_t n;
        int32_t *t;
        el_status st = cli_tokenize(m, line, strlen(line), true, true, &t, &n);
        if (st != EL_OK) {
            free(text);
            prompts_free(p);
            return cli_fail("bench", st);
        }
        if (n > MAX_PROMPT_TOKENS) n = MAX_PROMPT_TOKENS;
        p->tok[p->n] = t, p->n_tok[p->n++] = (int32_t)n;
        if ((int32_t)n > p->longest) p->longest = (int32_t)n;
    }
    free(text);
    if (p->n == 0) {
        cli_error("bench", "%s: no prompts (one per line)", path);
        return CLI_USAGE;
    }
    return CLI_OK;
}

static el_status decode_prompt(el_context *ctx, const int32_t *tok, int32_t n) {
    int32_t pos[MAX_PROMPT_TOKENS], seq[MAX_PROMPT_TOKENS] = {0};
    for (int32_t i = 0; i < n; i++) pos[i] = i;
    el_batch b = {.n_rows = n, .token = tok, .pos = pos, .seq_id = seq};
    return el_decode(ctx, &b);
}

/* Plain greedy decoding of n tokens after the prompt; seconds of the steps after the prompt,
 * and of the prompt's decode. */
static el_status plain_greedy(el_context *ctx, el_sampler *smp, const int32_t *prompt, int32_t np,
                              int32_t n, int32_t *out, double *seconds, double *prompt_seconds) {
    el_kv_clear(ctx);
    double tp = cli_now_ms();
    el_status st = decode_prompt(ctx, prompt, np);
    int32_t t = -1, seq = 0;
    double t0 = cli_now_ms();
    *prompt_seconds += (t0 - tp) / 1e3;
    if (!st) st = el_sampler_sample(smp, el_get_logits(ctx, np - 1), &t);
    for (int32_t i = 0; !st && i < n; i++) {
        out[i] = t;
        if (i + 1 == n) break;
        int32_t p = np + i;
        el_batch one = {.n_rows = 1, .token = &t, .pos = &p, .seq_id = &seq};
        if (!(st = el_decode(ctx, &one))) st = el_sampler_sample(smp, el_get_logits(ctx, 0), &t);
    }
    *seconds = (cli_now_ms() - t0) / 1e3;
    return st;
}

typedef struct spec_run {
    el_spec_stats stats;
    double seconds;             /* of the steps after el_spec_start */
    double start_seconds;       /* of el_spec_create and el_spec_start (the prompt, its slots,
                                 * and the first decoder on the context timing its steps) */
    int64_t hist[9];            /* steps by tokens produced (8: eight or more) */
} spec_run;

static el_status spec_greedy(el_context *ctx, el_sampler *smp, const el_forecast *f,
                             const el_spec_params *sp, const int32_t *prompt, int32_t np,
                             int32_t n, int32_t *out, spec_run *r, FILE *trace) {
    el_kv_clear(ctx);
    el_spec *s = NULL;
    int32_t got = 0;
    double ts = cli_now_ms();
    el_status st = el_spec_create(ctx, f, smp, sp, &s);
    if (!st) st = el_spec_start(s, prompt, np, &out[got++]);
    double t0 = cli_now_ms();
    r->start_seconds += (t0 - ts) / 1e3;
    while (!st && got < n) {
        int32_t k = 0;
        st = el_spec_step(s, out + got, n - got, &k);
        el_spec_step_info info;
        if (!st && (st = el_spec_last_step(s, &info)) == EL_OK) {
            r->hist[k < 8 ? k : 8]++;
            if (trace) {
                fprintf(trace, "%d %d %d", info.tokens, info.slots ? info.n_slots : 0,
                        info.n_depth);
                for (int32_t d = 0; d < info.n_depth; d++) fprintf(trace, " %d", info.width[d]);
                fputc('\n', trace);
            }
        }
        got += k;
    }
    r->seconds += (cli_now_ms() - t0) / 1e3;
    el_spec_stats ss;
    if (!st && (st = el_spec_get_stats(s, &ss)) == EL_OK) {
        r->stats.steps += ss.steps, r->stats.tokens += ss.tokens, r->stats.rows += ss.rows;
        r->stats.tree_steps += ss.tree_steps;
    }
    el_spec_free(s);
    return st;
}

int bench_spec(const bench_opts *o, el_model *m, int32_t threads) {
    if (!o->prompts_path) {
        cli_error("bench", "--forecast measures on real text: give --prompts FILE (one prompt a "
                  "line)");
        return CLI_USAGE;
    }
    prompts pr;
    int rc = read_prompts(o->prompts_path, m, &pr);
    if (rc) return rc;
    cli_spec_opts so = o->spec;
    el_forecast *f = NULL;
    if ((rc = cli_spec_load("bench", &so, m, o->mo.model, &f))) {
        prompts_free(&pr);
        return rc;
    }
    int32_t n = (int32_t)o->n_gen, rows = el_spec_max_rows(f, &so.params);
    el_model_info info;
    el_context_params cp = el_context_default_params();
    cp.n_ctx = pr.longest + n + rows + 1;
    cp.n_batch = pr.longest > rows ? pr.longest : rows;
    cp.n_seq_max = 1, cp.n_threads = threads, cp.kv_type = o->mo.kv_type;
    el_sampler_params gp = el_sampler_default_params();
    gp.temperature = 0;
    el_context *ctx = NULL;
    el_sampler *smp = NULL;
    el_status st = el_model_get_info(m, &info);
    if (!st) st = el_context_create(m, &cp, &ctx);
    if (!st) st = el_sampler_create(&gp, info.n_vocab, &smp);
    FILE *trace = NULL;
    if (!st && o->record_path && !(trace = fopen(o->record_path, "w"))) {
        cli_error("bench", "%s: cannot write the trace", o->record_path);
        rc = CLI_FAIL;
    }
    int32_t *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    if (!st && (!a || !b)) st = EL_ERR_NOMEM;
    double plain_tps[100], spec_tps[100], plain_all[100], spec_all[100], prompt_s = 0;
    spec_run total = {0};
    int differ = 0;
    for (long rep = 0; !st && !rc && rep < o->reps; rep++) {
        double tp = 0, ts = 0, tpp = 0;
        spec_run r = {0};
        for (int i = 0; !st && i < pr.n; i++) { /* alternated: plain, speculative, per prompt */
            double s1;
            st = plain_greedy(ctx, smp, pr.tok[i], pr.n_tok[i], n, a, &s1, &tpp);
            if (!st) st = spec_greedy(ctx, smp, f, &so.params, pr.tok[i], pr.n_tok[i], n, b, &r,
                                      rep == 0 ? trace : NULL);
            tp += s1;
            if (!st && memcmp(a, b, (size_t)n * sizeof *a) != 0) differ++;
        }
        ts = r.seconds;
        plain_tps[rep] = (double)pr.n * (n - 1) / tp;
        spec_tps[rep] = (double)pr.n * (n - 1) / ts;
        plain_all[rep] = (double)pr.n * n / (tp + tpp);
        spec_all[rep] = (double)pr.n * n / (ts + r.start_seconds);
        prompt_s += tpp;
        total.start_seconds += r.start_seconds;
        total.stats.steps += r.stats.steps, total.stats.tokens += r.stats.tokens;
        total.stats.rows += r.stats.rows, total.stats.tree_steps += r.stats.tree_steps;
        for (int k = 0; k < 9; k++) total.hist[k] += r.hist[k];
    }
    if (trace && fclose(trace) != 0 && !rc) {
        cli_error("bench", "%s: write failed", o->record_path);
        rc = CLI_FAIL;
    }
    if (!st && !rc) {
        bench_stat sp = bench_summarize(plain_tps, (int)o->reps);
        bench_stat ss = bench_summarize(spec_tps, (int)o->reps);
        bench_stat pa = bench_summarize(plain_all, (int)o->reps);
        bench_stat sa = bench_summarize(spec_all, (int)o->reps);
        double steps = (double)total.stats.steps, runs = (double)pr.n * (double)o->reps;
        if (o->json) {
            bench_json_begin(o, "speculative", threads);
            printf(", \"prompts\": %d", pr.n);
            bench_json_stat("plain_tokens_per_s", sp);
            bench_json_stat("spec_tokens_per_s", ss);
            printf(", \"speedup\": %.4f, \"speedup_with_prompt\": %.4f, \"plain_prompt_ms\": %.3f, "
                   "\"spec_start_ms\": %.3f, \"tokens_per_step\": %.4f, "
                   "\"tree_step_fraction\": %.4f, \"rows_per_step\": %.2f, \"identical\": %s}\n",
                   ss.med / sp.med, sa.med / pa.med, 1e3 * prompt_s / runs,
                   1e3 * total.start_seconds / runs, total.stats.tokens / steps,
                   total.stats.tree_steps / steps, total.stats.rows / steps,
                   differ ? "false" : "true");
        } else {
            printf("speculative decoding: %s, %d prompts x %d tokens, %ld repetitions, %d "
                   "threads\n", o->mo.model, pr.n, n, o->reps, threads);
            printf("  plain greedy      %8.1f tokens/s (%.1f - %.1f)\n", sp.med, sp.min, sp.max);
            printf("  speculative       %8.1f tokens/s (%.1f - %.1f)   speed-up %.2fx\n", ss.med,
                   ss.min, ss.max, ss.med / sp.med);
            printf("  with the prompts  plain %.1f, speculative %.1f tokens/s   speed-up %.2fx "
                   "(a prompt: %.2f ms plain, %.2f ms to start speculating)\n", pa.med, sa.med,
                   sa.med / pa.med, 1e3 * prompt_s / runs, 1e3 * total.start_seconds / runs);
            printf("  tokens a step     %8.2f (steps with a tree: %.0f%%; rows a step %.1f)\n",
                   total.stats.tokens / steps, 100.0 * total.stats.tree_steps / steps,
                   total.stats.rows / steps);
            printf("  steps by tokens  ");
            for (int k = 1; k < 9; k++) printf(" %d%s:%lld", k, k == 8 ? "+" : "",
                                               (long long)total.hist[k]);
            printf("\n  greedy text identical to plain decoding: %s\n",
                   differ ? "NO" : "yes, every prompt");
        }
    }
    if (!st && differ) {
        cli_error("bench", "%d runs gave a text that differs from plain decoding", differ);
        rc = CLI_FAIL;
    }
    free(a), free(b);
    el_sampler_free(smp);
    el_context_free(ctx);
    el_forecast_free(f);
    prompts_free(&pr);
    return st ? cli_fail("bench", st) : rc;
}

/* ------------------------------------------------------------- replay */

typedef struct trace_step {
    int32_t tokens, slots, depth, width[EL_SPEC_MAX_DEPTH];
} trace_step;

static int read_trace(const char *path, trace_step **out, int *n_out) {
    FILE *f = fopen(path, "r");
    if (!f) {
        cli_error("bench", "%s: cannot read the trace", path);
        return CLI_FAIL;
    }
    trace_step *s = malloc(MAX_STEPS * sizeof *s);
    int n = 0, line = 0;
    char buf[256];
    while (s && n < MAX_STEPS && fgets(buf, sizeof buf, f)) {
        line++;
        trace_step t = {0};
        int used = 0, u;
        bool ok = sscanf(buf, "%d %d %d%n", &t.tokens, &t.slots, &t.depth, &used) == 3 &&
                  t.tokens >= 1 && t.tokens <= t.depth + 1 && t.slots >= 0 && t.slots <= 8 &&
                  t.depth >= 0 && t.depth <= EL_SPEC_MAX_DEPTH;
        for (int32_t d = 0; ok && d < t.depth; d++) {
            ok = sscanf(buf + used, "%d%n", &t.width[d], &u) == 1 && t.width[d] >= 1 &&
                 t.width[d] <= 8;
            used += u;
        }
        if (!ok) {
            cli_error("bench", "%s:%d: not a trace line (tokens slots depth widths...)", path,
                      line);
            free(s);
            fclose(f);
            return CLI_USAGE;
        }
        s[n++] = t;
    }
    fclose(f);
    if (!s || n == 0) {
        cli_error("bench", "%s: %s", path, s ? "no steps" : "out of memory");
        free(s);
        return CLI_FAIL;
    }
    *out = s, *n_out = n;
    return CLI_OK;
}

/* The rows of one recorded step, as el_spec lays them out: the pending token, the candidates
 * depth by depth below the first of the depth before, then slots after every node. Then keeps
 * the first `tokens - 1` candidates of the spine, as an accepted path. */
static el_status replay_step(el_context *ctx, const trace_step *t, int32_t pos, const float *embd,
                             int32_t n_embd, int32_t *tok, int32_t *rpos, int32_t *seq,
                             int32_t *parent, float *rembd, int32_t *drop) {
    int32_t n = 0, spine = 0, keep[EL_SPEC_MAX_DEPTH + 1] = {0};
    tok[n] = 1, rpos[n] = pos, parent[n++] = -1;
    for (int32_t d = 0; d < t->depth; d++) {
        int32_t first = n;
        for (int32_t k = 0; k < t->width[d]; k++)
            tok[n] = 2 + k, rpos[n] = pos + d + 1, parent[n++] = spine;
        spine = first;
        keep[d + 1] = first;
    }
    int32_t nodes = n;
    for (int32_t r = 0; r < nodes && t->slots; r++)
        for (int32_t j = 1; j <= t->slots; j++) {
            tok[n] = -1, rpos[n] = rpos[r] + j, parent[n] = j == 1 ? r : n - 1;
            memcpy(rembd + (size_t)n * n_embd, embd, (size_t)n_embd * sizeof *embd);
            n++;
        }
    for (int32_t r = 0; r < n; r++) seq[r] = 0;
    el_batch b = {.n_rows = n, .token = tok, .embd = rembd, .pos = rpos, .seq_id = seq,
                  .parent = parent};
    int8_t want[512];
    for (int32_t r = 0; r < n; r++) want[r] = 1;
    b.logits = want;
    el_status st = el_decode(ctx, &b);
    if (st) return st;
    int32_t n_drop = 0;
    for (int32_t r = 0; r < n; r++) {
        bool kept = r == 0;
        for (int32_t d = 1; d < t->tokens && !kept; d++) kept = r == keep[d];
        if (!kept) drop[n_drop++] = r;
    }
    return el_kv_remove_rows(ctx, drop, n_drop);
}

int bench_replay(const bench_opts *o, el_model *m, int32_t threads) {
    trace_step *steps;
    int n_steps, rc = read_trace(o->replay_path, &steps, &n_steps);
    if (rc) return rc;
    int64_t tokens = 0;
    int32_t most = 1;
    for (int i = 0; i < n_steps; i++) {
        int32_t r = 1;
        for (int32_t d = 0; d < steps[i].depth; d++) r += steps[i].width[d];
        r *= 1 + steps[i].slots;
        if (r > most) most = r;
        tokens += steps[i].tokens;
    }
    el_model_info info;
    el_status st = el_model_get_info(m, &info);
    int32_t np = (int32_t)(o->n_prompt < MAX_PROMPT_TOKENS ? o->n_prompt : MAX_PROMPT_TOKENS);
    el_context_params cp = el_context_default_params();
    cp.n_ctx = np + (int32_t)tokens + most + 1;
    cp.n_batch = np > most ? np : most;
    cp.n_seq_max = 1, cp.n_threads = threads, cp.kv_type = o->mo.kv_type;
    el_context *ctx = NULL;
    if (most > 512) {
        cli_error("bench", "%s: a step of %d rows; at most 512", o->replay_path, most);
        free(steps);
        return CLI_USAGE;
    }
    if (!st) st = el_context_create(m, &cp, &ctx);
    size_t nb = (size_t)cp.n_batch;
    int32_t *tok = malloc(nb * sizeof *tok), *rpos = malloc(nb * sizeof *rpos);
    int32_t *seq = calloc(nb, sizeof *seq), *parent = malloc(nb * sizeof *parent);
    int32_t *drop = malloc(nb * sizeof *drop), *ptok = malloc((size_t)np * sizeof *ptok);
    float *rembd = calloc(nb * (size_t)info.n_embd, sizeof *rembd);
    float *embd = malloc((size_t)info.n_embd * sizeof *embd);
    if (!st && (!tok || !rpos || !seq || !parent || !drop || !ptok || !rembd || !embd))
        st = EL_ERR_NOMEM;
    if (!st) {
        bench_tokens(ptok, (size_t)np, info.n_vocab);
        for (int32_t i = 0; i < info.n_embd; i++) embd[i] = (float)((i * 37) % 17 - 8) / 64.0f;
    }
    double plain_tps[100], replay_tps[100];
    for (long rep = 0; !st && rep < o->reps; rep++) { /* alternated: plain, replay */
        el_kv_clear(ctx);
        st = decode_prompt(ctx, ptok, np);
        int32_t t = 3, s0 = 0;
        double t0 = cli_now_ms();
        for (int64_t i = 0; !st && i < tokens; i++) {
            int32_t p = np + (int32_t)i;
            el_batch one = {.n_rows = 1, .token = &t, .pos = &p, .seq_id = &s0};
            st = el_decode(ctx, &one);
        }
        plain_tps[rep] = tokens / ((cli_now_ms() - t0) / 1e3);
        if (!st) st = el_kv_seq_remove(ctx, 0, np, -1);
        int32_t pos = np;
        t0 = cli_now_ms();
        for (int i = 0; !st && i < n_steps; i++) {
            st = replay_step(ctx, &steps[i], pos, embd, info.n_embd, tok, rpos, seq, parent,
                             rembd, drop);
            pos += steps[i].tokens;
        }
        replay_tps[rep] = tokens / ((cli_now_ms() - t0) / 1e3);
    }
    if (!st) {
        bench_stat sp = bench_summarize(plain_tps, (int)o->reps);
        bench_stat sr = bench_summarize(replay_tps, (int)o->reps);
        if (o->json) {
            bench_json_begin(o, "replay", threads);
            printf(", \"steps\": %d, \"tokens\": %lld", n_steps, (long long)tokens);
            bench_json_stat("plain_tokens_per_s", sp);
            bench_json_stat("replay_tokens_per_s", sr);
            printf(", \"speedup\": %.4f}\n", sr.med / sp.med);
        } else {
            printf("replayed speculative steps: %s, %d steps, %lld tokens (%.2f a step), %ld "
                   "repetitions, %d threads\n", o->mo.model, n_steps, (long long)tokens,
                   (double)tokens / n_steps, o->reps, threads);
            printf("  plain decoding     %8.2f tokens/s (%.2f - %.2f)\n", sp.med, sp.min, sp.max);
            printf("  replayed steps     %8.2f tokens/s (%.2f - %.2f)   speed-up %.2fx\n", sr.med,
                   sr.min, sr.max, sr.med / sp.med);
        }
    }
    free(tok), free(rpos), free(seq), free(parent), free(drop), free(ptok), free(rembd);
    free(embd), free(steps);
    el_context_free(ctx);
    return st ? cli_fail("bench", st) : CLI_OK;
}
