/* eval.c - `edgelora eval`: a held-out score of a model (usually base + a task adapter) on
 * prompt/response pairs, optionally against the bare base with a paired bootstrap interval.
 *
 * Each prompt is tokenized as `edgelora finetune` tokenizes it for training (the prompt alone
 * with the vocabulary's special tokens, i.e. BOS; the response follows as its own tokens), so
 * the model is asked exactly where training taught it to answer. The output is the greedy
 * continuation, scored against the response (cli/eval_metrics.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "eval_gen.h"
#include "eval_metrics.h"

static const char help[] =
    "usage: edgelora eval [-m BASE] [--lora FILE ...] -f TASK.jsonl [options]\n"
    "Generates greedily after each prompt of TASK.jsonl (one {\"prompt\": ..., \"response\":\n"
    "...} object a line; other members are ignored but \"lang\") and scores the outputs\n"
    "against the responses. The prompt is tokenized as `edgelora finetune` does for training\n"
    "(with BOS). Generation stops at the end-of-text token, after the first newline if the\n"
    "response has none (the text is cut there), or after MAX tokens.\n"
    "Metrics (all 0..100; exact and chrF are always printed, --metric picks the headline):\n"
    "  exact   percent of outputs equal to the response after trimming surrounding whitespace\n"
    "  chrf    chrF2 as sacreBLEU 2.x computes it by default (Popovic 2015): character\n"
    "          n-grams of orders 1..6 with all whitespace removed, case kept; n-gram counts\n"
    "          (hypothesis, reference, matched) summed over all examples per order; the\n"
    "          precisions and recalls of the orders with n-grams on both sides averaged; then\n"
    "          100 * 5PR / (4P + R)\n"
    "  lang    percent of outputs whose language (en de fr es it pt pl ru nl, told apart by a\n"
    "          built-in scorer of common function words and characteristic letters) is the\n"
    "          example's: its \"lang\" member, else a leading \"[xx]\" tag of its prompt\n"
    "  -m, --model FILE       the base model (default: the default model)\n"
    "  --lora FILE            an adapter to evaluate (repeatable: their terms add up)\n"
    "  --lora-scaled FILE S   the same with scale S\n"
    "  -f, --file FILE        the task's held-out examples (JSONL)\n"
    "  --metric M             exact, chrf (default) or lang: the headline metric\n"
    "  --limit N              only the first N examples\n"
    "  -n, --max-tokens N     most tokens generated per example (default: twice the longest\n"
    "                         response's tokens + 8)\n"
    "  --compare-base         also run the bare base (no adapter) on the same prompts; prints\n"
    "                         both and the difference adapter - base with a 95% paired\n"
    "                         bootstrap interval (1000 resamples of the examples)\n"
    "  --seed S               the bootstrap's seed (default 1)\n"
    "  --json                 print one JSON object instead of the table\n"
    "  -o, --output FILE      write every example (prompt, reference, outputs, scores) as\n"
    "                         JSONL (complete or not at all)\n"
    "  --parallel N           sequences generated together (default 16)\n"
    "  -c, --ctx-size N       KV cells per example (default: the model's training context)\n"
    "  -t, --threads N        threads (default: all cores)\n"
    "  --kv-type T            KV cache elements: f16 (default; half the memory) or f32\n"
    "  --keep-page-cache      a model the page cache holds in 4 KB pages is left so (default:\n"
    "                         its unmapped cached pages are dropped and read again into 2 MB\n"
    "                         pages, which decode faster: docs/bench.md)\n"
    "  --profile FILE         run under a quantization profile (`edgelora profile`): its int8\n"
    "                         activation scales, adapters quantized to int8 with its scales\n"
    "  --prune RATE           a UniQL compressed model's pruning rate (0: whole; rounded up to\n"
    "                         a rate of the file's table)\n"
    "  --mem-budget B|auto    the smallest rate whose weights and KV cache fit B bytes (auto: the\n"
    "                         memory available now, /proc/meminfo and the cgroup limit)\n"
    "Exit status 0 when the evaluation ran (whatever the scores), 1 on failure, 2 on bad usage.\n";

enum { BOOTSTRAP_ROUNDS = 1000 };
static const char *const metric_names[] = {[EVAL_EXACT] = "exact", [EVAL_CHRF] = "chrf",
                                           [EVAL_LANG] = "lang"};

typedef struct eval_opts {
    cli_model_opts mo;
    cli_lora_opts lora;
    const char *file, *output;
    eval_metric metric;
    long limit, max_tokens, parallel;
    uint64_t seed;
    bool compare_base, json;
} eval_opts;

static int parse_args(eval_opts *o, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int r = cli_model_opt("eval", &o->mo, argc, argv, &i);
        if (r == 0) r = cli_kv_opt("eval", &o->mo, argc, argv, &i);
        if (r == 0) r = cli_lora_opt("eval", &o->lora, argc, argv, &i);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return -1;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            if (!(o->file = cli_value("eval", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(o->output = cli_value("eval", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--metric")) {
            if (!(v = cli_value("eval", argc, argv, &i))) return CLI_USAGE;
            int m = -1;
            for (int k = 0; k < 3; k++)
                if (!strcmp(v, metric_names[k])) m = k;
            if (m < 0) {
                cli_error("eval", "--metric: '%s' is not one of exact, chrf, lang", v);
                return CLI_USAGE;
            }
            o->metric = (eval_metric)m;
        } else if (!strcmp(a, "--limit")) {
            if (!(v = cli_value("eval", argc, argv, &i)) ||
                !cli_int("eval", a, v, 1, 1L << 30, &o->limit))
                return CLI_USAGE;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--max-tokens")) {
            if (!(v = cli_value("eval", argc, argv, &i)) ||
                !cli_int("eval", a, v, 1, 1 << 20, &o->max_tokens))
                return CLI_USAGE;
        } else if (!strcmp(a, "--parallel")) {
            if (!(v = cli_value("eval", argc, argv, &i)) ||
                !cli_int("eval", a, v, 1, 256, &o->parallel))
                return CLI_USAGE;
        } else if (!strcmp(a, "--seed")) {
            if (!(v = cli_value("eval", argc, argv, &i)) || !cli_u64("eval", a, v, &o->seed))
                return CLI_USAGE;
        } else if (!strcmp(a, "--compare-base")) {
            o->compare_base = true;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else {
            cli_error("eval", "unknown option '%s'", a);
            return CLI_USAGE;
        }
    }
    if (!o->file) {
        cli_error("eval", "no examples given (-f TASK.jsonl)");
        return CLI_USAGE;
    }
    if (o->compare_base && o->lora.n == 0) {
        cli_error("eval", "--compare-base needs an adapter (--lora FILE) to compare the base with");
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* ------------------------------------------------------------ the examples */

typedef struct example {
    int line;
    char *prompt, *ref;
    size_t prompt_len, ref_len;
    char lang[3];       /* the expected language, "" if none */
    int32_t *tokens;    /* the prompt's */
    int32_t n_prompt;
} example;

typedef struct example_list {
    example *e;
    size_t n;
    bool all_have_lang;
} example_list;

static void examples_free(example_list *l) {
    for (size_t i = 0; i < l->n; i++) {
        free(l->e[i].prompt);
        free(l->e[i].ref);
        free(l->e[i].tokens);
    }
    free(l->e);
}

static bool known_lang(const char *s, size_t n) {
    for (const char *const *c = eval_lang_codes; *c; c++)
        if (strlen(*c) == n && !memcmp(*c, s, n)) return true;
    return false;
}

/* The expected language of an example: its "lang" member, else a "[xx]" tag opening the
 * prompt. Returns false after an error (a "lang" that is not a string or not a known code). */
static bool example_lang(const char *path, example *e, const el_json_value *root) {
    const el_json_value *v = el_json_get(root, "lang");
    size_t n;
    if (v) {
        const char *s = el_json_str(v, &n);
        if (!s || !known_lang(s, n)) {
            cli_error("eval", "%s:%d: \"lang\" must be one of en de fr es it pt pl ru nl", path,
                      e->line);
            return false;
        }
        memcpy(e->lang, s, n + 1);
    } else if (e->prompt_len >= 4 && e->prompt[0] == '[' && e->prompt[3] == ']' &&
               known_lang(e->prompt + 1, 2)) {
        memcpy(e->lang, e->prompt + 1, 2);
        e->lang[2] = '\0';
    }
    return true;
}

static char *dup_bytes(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* One example from a non-blank line. */
static int example_parse(const eval_opts *o, int line, const char *text, size_t len,
                         example *e) {
    char where[4200];
    snprintf(where, sizeof where, "%s:%d", o->file, line);
    el_json_doc *doc;
    el_status st = el_json_parse_line(text, len, o->file, (size_t)line, &doc);
    if (st != EL_OK) return cli_fail("eval", st);
    const el_json_value *root = el_json_root(doc);
    const char *p = el_json_str(el_json_get(root, "prompt"), &e->prompt_len);
    const char *r = el_json_str(el_json_get(root, "response"), &e->ref_len);
    int rc = CLI_OK;
    if (el_json_type(root) != EL_JSON_OBJECT || !p || !r) {
        cli_error("eval", "%s: expected an object with string members \"prompt\" and "
                  "\"response\"", where);
        rc = CLI_FAIL;
    } else if (!(e->prompt = dup_bytes(p, e->prompt_len)) || !(e->ref = dup_bytes(r, e->ref_len))) {
        cli_error("eval", "out of memory");
        rc = CLI_FAIL;
    } else if (!example_lang(o->file, e, root)) {
        rc = CLI_FAIL;
    }
    el_json_free(doc);
    return rc;
}

/* Reads the examples (the first --limit), one per non-blank line. */
static int examples_read(const eval_opts *o, example_list *l) {
    size_t len;
    char *text = cli_read_file("eval", o->file, &len);
    if (!text) return CLI_FAIL;
    size_t cap = 0;
    int line = 0, rc = CLI_OK;
    l->all_have_lang = true;
    for (size_t at = 0; at < len && rc == CLI_OK && (!o->limit || l->n < (size_t)o->limit);) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len, n = end - at, blank = 0;
        line++;
        while (blank < n && strchr(" \t\r", text[at + blank])) blank++;
        if (blank < n) {
            if (l->n == cap) {
                cap = cap ? 2 * cap : 64;
                example *more = realloc(l->e, cap * sizeof *more);
                if (!more) {
                    cli_error("eval", "out of memory");
                    rc = CLI_FAIL;
                    break;
                }
                l->e = more;
            }
            example *e = &l->e[l->n++];
            *e = (example){.line = line};
            rc = example_parse(o, line, text + at, n, e);
            if (!e->lang[0]) l->all_have_lang = false;
        }
        at = end + 1;
    }
    free(text);
    if (rc == CLI_OK && l->n == 0) {
        cli_error("eval", "%s: no examples (expected one JSON object a line)", o->file);
        rc = CLI_FAIL;
    }
    if (rc == CLI_OK && o->metric == EVAL_LANG && !l->all_have_lang) {
        for (size_t i = 0; i < l->n; i++)
            if (!l->e[i].lang[0]) {
                cli_error("eval", "%s:%d: --metric lang needs the expected language: a \"lang\" "
                          "member or a prompt starting with a tag such as \"[de]\"", o->file,
                          l->e[i].line);
                break;
            }
        rc = CLI_FAIL;
    }
    return rc;
}

/* Tokenizes the prompts; *max_ref gets the most tokens of any response. */
static int examples_tokenize(const eval_opts *o, el_model *m, example_list *l, long limit,
                             long *max_ref) {
    *max_ref = 0;
    for (size_t i = 0; i < l->n; i++) {
        example *e = &l->e[i];
        size_t n;
        el_status st = cli_tokenize(m, e->prompt, e->prompt_len, true, false, &e->tokens, &n);
        if (st != EL_OK) return cli_fail("eval", st);
        if (n == 0 || (long)n >= limit) {
            cli_error("eval", "%s:%d: the prompt has %zu tokens; it needs 1 to %ld to leave "
                      "room for an answer in the context (-c %ld)", o->file, e->line, n,
                      limit - 1, limit);
            return CLI_FAIL;
        }
        e->n_prompt = (int32_t)n;
        int32_t *ref_tokens;
        if ((st = cli_tokenize(m, e->ref, e->ref_len, false, false, &ref_tokens, &n)))
            return cli_fail("eval", st);
        free(ref_tokens);
        if ((long)n > *max_ref) *max_ref = (long)n;
    }
    return CLI_OK;
}

/* ------------------------------------------------------------ the scores */

typedef struct system_result {
    eval_job *jobs;         /* [n examples] */
    eval_score *scores;     /* [n examples] */
    const char **out_lang;  /* [n examples] the identified language of each output, or NULL */
    double corpus[3];       /* indexed by eval_metric */
} system_result;

static int score_system(const example_list *l, system_result *s) {
    for (size_t i = 0; i < l->n; i++) {
        const example *e = &l->e[i];
        const char *out = s->jobs[i].text;
        size_t n = strlen(out);
        eval_score *sc = &s->scores[i];
        sc->exact = eval_exact(out, n, e->ref, e->ref_len);
        if (!eval_chrf_add(&sc->chrf, out, n, e->ref, e->ref_len)) {
            cli_error("eval", "out of memory");
            return CLI_FAIL;
        }
        s->out_lang[i] = eval_lang_identify(out, n);
        sc->lang_ok = e->lang[0] && s->out_lang[i] && !strcmp(s->out_lang[i], e->lang);
    }
    for (int m = 0; m < 3; m++) s->corpus[m] = eval_corpus_score(s->scores, NULL, l->n, m);
    return CLI_OK;
}

static void system_free(system_result *s) {
    free(s->scores);
    free(s->out_lang);
}

/* ------------------------------------------------------------ the output */

/* The metrics to report, headline first (lang only if every example has its language). */
static int report_order(const eval_opts *o, const example_list *l, eval_metric *order) {
    int n = 0;
    order[n++] = o->metric;
    static const eval_metric all[] = {EVAL_CHRF, EVAL_EXACT, EVAL_LANG};
    for (int k = 0; k < 3; k++)
        if (all[k] != o->metric && (all[k] != EVAL_LANG || l->all_have_lang)) order[n++] = all[k];
    return n;
}

static const char *metric_label(eval_metric m) {
    return m == EVAL_CHRF ? "chrF" : m == EVAL_EXACT ? "exact" : "lang";
}

typedef struct comparison {
    double lo[3], hi[3];
} comparison;

static void print_table(const eval_opts *o, const char *model, const example_list *l,
                        long max_tokens, const system_result *sys, const system_result *base,
                        const comparison *c) {
    eval_metric order[3];
    int n = report_order(o, l, order);
    printf("file      %s\nexamples  %zu\nmodel     %s\n", o->file, l->n, model);
    for (int i = 0; i < o->lora.n; i++) printf("adapter   %s\n", o->lora.paths[i]);
    printf("tokens    at most %ld per output, greedy\n", max_tokens);
    printf("headline  %s\n\n", metric_names[o->metric]);
    if (!base) {
        for (int k = 0; k < n; k++)
            printf("%-8s %8.2f%s\n", metric_label(order[k]), sys->corpus[order[k]],
                   k == 0 ? "  (headline)" : "");
        return;
    }
    printf("%-8s %8s %8s %10s   %s\n", "metric", "base", "adapter", "difference",
           "95% interval (paired bootstrap)");
    for (int k = 0; k < n; k++) {
        eval_metric m = order[k];
        printf("%-8s %8.2f %8.2f %+10.2f   [%+.2f, %+.2f]%s\n", metric_label(m),
               base->corpus[m], sys->corpus[m], sys->corpus[m] - base->corpus[m], c->lo[m],
               c->hi[m], k == 0 ? "  (headline)" : "");
    }
    eval_metric h = o->metric;
    printf("\n%s: the adapter is %s the base (the interval %s 0)\n", metric_names[h],
           c->lo[h] > 0 ? "better than" : c->hi[h] < 0 ? "worse than" : "not clearly apart from",
           c->lo[h] > 0 || c->hi[h] < 0 ? "excludes" : "includes");
}

static void print_json_str(FILE *f, const char *s) { el_json_write_string(f, s, strlen(s)); }

static void print_scores_json(const example_list *l, const system_result *s) {
    printf("{\"chrf\": %.4f, \"exact\": %.4f", s->corpus[EVAL_CHRF], s->corpus[EVAL_EXACT]);
    if (l->all_have_lang) printf(", \"lang\": %.4f", s->corpus[EVAL_LANG]);
    printf("}");
}

static void print_json(const eval_opts *o, const char *model, const example_list *l,
                       long max_tokens, const system_result *sys, const system_result *base,
                       const comparison *c) {
    printf("{\"file\": ");
    print_json_str(stdout, o->file);
    printf(", \"n\": %zu, \"model\": ", l->n);
    print_json_str(stdout, model);
    printf(", \"adapters\": [");
    for (int i = 0; i < o->lora.n; i++) {
        printf("%s", i ? ", " : "");
        print_json_str(stdout, o->lora.paths[i]);
    }
    printf("], \"metric\": \"%s\", \"max_tokens\": %ld, \"scores\": ", metric_names[o->metric],
           max_tokens);
    print_scores_json(l, sys);
    if (base) {
        printf(", \"base\": ");
        print_scores_json(l, base);
        printf(", \"difference\": {");
        eval_metric order[3];
        int n = report_order(o, l, order);
        for (int k = 0; k < n; k++) {
            eval_metric m = order[k];
            printf("%s\"%s\": {\"value\": %.4f, \"ci95\": [%.4f, %.4f]}", k ? ", " : "",
                   metric_names[m], sys->corpus[m] - base->corpus[m], c->lo[m], c->hi[m]);
        }
        printf("}, \"bootstrap\": {\"resamples\": %d, \"seed\": %llu}", BOOTSTRAP_ROUNDS,
               (unsigned long long)o->seed);
    }
    printf("}\n");
}

static void write_output_fields(FILE *f, const char *prefix, size_t i, const system_result *s,
                                eval_metric headline) {
    const eval_score *sc = &s->scores[i];
    double score[3] = {[EVAL_EXACT] = sc->exact ? 100 : 0, [EVAL_CHRF] = eval_chrf_score(&sc->chrf),
                       [EVAL_LANG] = sc->lang_ok ? 100 : 0};
    fprintf(f, ", \"%soutput\": ", prefix);
    print_json_str(f, s->jobs[i].text);
    fprintf(f, ", \"%sscore\": %.4f, \"%sexact\": %d, \"%schrf\": %.4f, \"%soutput_lang\": ",
            prefix, score[headline], prefix, sc->exact, prefix, score[EVAL_CHRF], prefix);
    if (s->out_lang[i]) print_json_str(f, s->out_lang[i]);
    else fputs("null", f);
}

/* Writes every example to path through a temporary file renamed at the end. */
static int write_examples(const eval_opts *o, const example_list *l, const system_result *sys,
                          const system_result *base) {
    size_t n = strlen(o->output) + 16;
    char *tmp = malloc(n);
    if (!tmp) {
        cli_error("eval", "out of memory");
        return CLI_FAIL;
    }
    snprintf(tmp, n, "%s.tmp.XXXXXX", o->output);
    int fd = mkstemp(tmp);
    FILE *f = NULL;
    if (fd >= 0) { /* mkstemp makes it private; the result gets the usual permissions */
        mode_t mask = umask(0);
        umask(mask);
        fchmod(fd, 0666 & ~mask);
        if (!(f = fdopen(fd, "w"))) close(fd);
    }
    if (!f) {
        cli_error("eval", "%s: cannot create the output: %s", o->output, strerror(errno));
        if (fd >= 0) unlink(tmp);
        free(tmp);
        return CLI_FAIL;
    }
    for (size_t i = 0; i < l->n; i++) {
        const example *e = &l->e[i];
        fprintf(f, "{\"line\": %d, \"prompt\": ", e->line);
        el_json_write_string(f, e->prompt, e->prompt_len);
        fprintf(f, ", \"reference\": ");
        el_json_write_string(f, e->ref, e->ref_len);
        if (e->lang[0]) fprintf(f, ", \"lang\": \"%s\"", e->lang);
        write_output_fields(f, "", i, sys, o->metric);
        if (base) write_output_fields(f, "base_", i, base, o->metric);
        fprintf(f, "}\n");
    }
    bool ok = !ferror(f);
    ok = !fclose(f) && ok;
    if (!ok) cli_error("eval", "%s: writing the output failed", o->output);
    if (ok && rename(tmp, o->output)) {
        cli_error("eval", "%s: cannot replace it: %s", o->output, strerror(errno));
        ok = false;
    }
    if (!ok) unlink(tmp);
    free(tmp);
    return ok ? CLI_OK : CLI_FAIL;
}

/* ------------------------------------------------------------ the command */

typedef struct progress {
    bool tty;
    double t0;
} progress;

static void show_progress(void *user, size_t done, size_t total, long tokens) {
    progress *p = user;
    if (!p->tty) return;
    double s = (cli_now_ms() - p->t0) / 1e3;
    fprintf(stderr, "\r  eval: %zu/%zu outputs, %ld tokens, %.1f tokens/s   ", done, total,
            tokens, s > 0 ? (double)tokens / s : 0);
    fflush(stderr);
}

/* Generates and scores: sys with the adapters, base (if not NULL) without. */
static int evaluate(const eval_opts *o, el_model *m, const example_list *l, long max_tokens,
                    long limit, const el_binding *bind, system_result *sys,
                    system_result *base) {
    size_t n_sys = base ? 2 : 1, n_jobs = n_sys * l->n;
    eval_job *jobs = calloc(n_jobs, sizeof *jobs);
    system_result *all[2] = {sys, base};
    bool ok = jobs != NULL;
    for (size_t s = 0; s < n_sys; s++) { /* freed by the caller, as are the texts */
        all[s]->scores = calloc(l->n, sizeof *all[s]->scores);
        all[s]->out_lang = calloc(l->n, sizeof *all[s]->out_lang);
        ok = ok && all[s]->scores && all[s]->out_lang;
    }
    if (!ok) {
        free(jobs);
        cli_error("eval", "out of memory");
        return CLI_FAIL;
    }
    /* example-major order, so that both systems progress together */
    for (size_t i = 0; i < l->n; i++)
        for (size_t s = 0; s < n_sys; s++) {
            const example *e = &l->e[i];
            long room = limit - e->n_prompt;
            jobs[i * n_sys + s] = (eval_job){
                .prompt = e->tokens, .n_prompt = e->n_prompt,
                .bind = s == 0 ? bind : NULL, .n_bind = s == 0 ? o->lora.n : 0,
                .max_tokens = (int32_t)(max_tokens < room ? max_tokens : room),
                .stop_at_newline = !memchr(e->ref, '\n', e->ref_len)};
        }
    progress p = {.tty = isatty(STDERR_FILENO), .t0 = cli_now_ms()};
    el_status st = eval_generate(m, jobs, n_jobs, (int32_t)(o->parallel ? o->parallel : 16),
                                 (int32_t)limit, (int32_t)o->mo.threads, o->mo.kv_type,
                                 show_progress, &p);
    if (p.tty) fputc('\n', stderr);
    long tokens = 0;
    for (size_t j = 0; j < n_jobs; j++) tokens += jobs[j].n_generated;
    double secs = (cli_now_ms() - p.t0) / 1e3;
    int rc = st == EL_OK ? CLI_OK : cli_fail("eval", st);
    if (rc == CLI_OK)
        fprintf(stderr, "eval: %zu outputs, %ld tokens generated in %.1f s (%.1f tokens/s)\n",
                n_jobs, tokens, secs, secs > 0 ? (double)tokens / secs : 0);
    /* each system's jobs side by side, for scoring; the texts move there (the caller frees
     * them) or, on failure, are freed here */
    bool moved = rc == CLI_OK;
    for (size_t s = 0; s < n_sys && moved; s++)
        moved = (all[s]->jobs = calloc(l->n, sizeof *jobs)) != NULL;
    if (moved) {
        for (size_t i = 0; i < l->n; i++)
            for (size_t s = 0; s < n_sys; s++) all[s]->jobs[i] = jobs[i * n_sys + s];
    } else {
        for (size_t j = 0; j < n_jobs; j++) free(jobs[j].text);
        for (size_t s = 0; s < n_sys; s++) {
            free(all[s]->jobs);
            all[s]->jobs = NULL;
        }
        if (rc == CLI_OK) {
            cli_error("eval", "out of memory");
            rc = CLI_FAIL;
        }
    }
    free(jobs);
    for (size_t s = 0; s < n_sys && rc == CLI_OK; s++) rc = score_system(l, all[s]);
    return rc;
}

static void free_texts(const example_list *l, system_result *s) {
    if (!s->jobs) return;
    for (size_t i = 0; i < l->n; i++) free(s->jobs[i].text);
    free(s->jobs);
}

int cmd_eval(int argc, char **argv) {
    eval_opts o = {.metric = EVAL_CHRF, .seed = 1};
    int rc = parse_args(&o, argc, argv);
    if (rc) return rc < 0 ? CLI_OK : rc;
    example_list l = {0};
    el_model *m = NULL;
    el_binding bind[CLI_MAX_LORA];
    int n_bind = 0;
    el_status st;
    system_result sys = {0}, base = {0};
    const char *model_path = cli_model_path("eval", o.mo.model);
    if (!model_path) return CLI_USAGE;
    if ((rc = examples_read(&o, &l)) || (rc = cli_load_model("eval", &o.mo, false, &m)))
        goto done;
    if ((st = cli_lora_load(&o.lora, m, bind, &n_bind)) != EL_OK) {
        rc = cli_fail("eval", st);
        goto done;
    }
    el_model_info info;
    el_model_get_info(m, &info);
    long limit = o.mo.ctx ? o.mo.ctx
                 : info.n_ctx_train > 0 && info.n_ctx_train < 4096 ? info.n_ctx_train : 4096;
    long max_ref;
    if ((rc = examples_tokenize(&o, m, &l, limit, &max_ref))) goto done;
    long max_tokens = o.max_tokens ? o.max_tokens : 2 * max_ref + 8;
    if ((rc = evaluate(&o, m, &l, max_tokens, limit, bind, &sys, o.compare_base ? &base : NULL)))
        goto done;
    comparison c = {{0}, {0}};
    for (int k = 0; k < 3 && o.compare_base; k++)
        if (!eval_bootstrap(base.scores, sys.scores, l.n, k, BOOTSTRAP_ROUNDS, o.seed, &c.lo[k],
                            &c.hi[k])) {
            cli_error("eval", "out of memory");
            rc = CLI_FAIL;
            goto done;
        }
    if (o.output && (rc = write_examples(&o, &l, &sys, o.compare_base ? &base : NULL))) goto done;
    if (o.json)
        print_json(&o, model_path, &l, max_tokens, &sys, o.compare_base ? &base : NULL, &c);
    else
        print_table(&o, model_path, &l, max_tokens, &sys, o.compare_base ? &base : NULL, &c);
    if (fflush(stdout) || ferror(stdout)) {
        cli_error("eval", "writing the results failed");
        rc = CLI_FAIL;
    }
done:
    free_texts(&l, &sys);
    free_texts(&l, &base);
    system_free(&sys);
    system_free(&base);
    for (int i = 0; i < n_bind; i++) el_adapter_free(bind[i].adapter);
    el_model_free(m);
    examples_free(&l);
    return rc;
}
