/* common.c - option parsing and reporting shared by the subcommands. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

void cli_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "edgelora %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_fail(const char *cmd, el_status st) {
    cli_error(cmd, "%s", *el_last_error() ? el_last_error() : el_status_name(st));
    return CLI_FAIL;
}

void cli_log(void *user, el_log_level level, const char *message) {
    (void)user;
    switch (level) {
    case EL_LOG_WARNING: fprintf(stderr, "edgelora: warning: %s\n", message); break;
    }
}

const char *cli_value(const char *cmd, int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        cli_error(cmd, "option %s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

bool cli_int(const char *cmd, const char *flag, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        cli_error(cmd, "%s: '%s' is not a whole number from %ld to %ld", flag, s, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

bool cli_float(const char *cmd, const char *flag, const char *s, double lo, double hi,
               double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
        cli_error(cmd, "%s: '%s' is not a number from %g to %g", flag, s, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

bool cli_u64(const char *cmd, const char *flag, const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') {
        cli_error(cmd, "%s: '%s' is not a non-negative whole number", flag, s);
        return false;
    }
    *out = v;
    return true;
}

char *cli_read_file(const char *cmd, const char *path, size_t *len) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        cli_error(cmd, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *bigger = realloc(buf, 2 * cap + 1);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    bool failed = ferror(f);
    if (f != stdin) fclose(f);
    if (!buf || failed) {
        cli_error(cmd, "%s: %s", path, buf ? "read error" : "out of memory");
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

double cli_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int cli_model_opt(const char *cmd, cli_model_opts *o, int argc, char **argv, int *i) {
    const char *a = argv[*i], *v;
    if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
        if (!(v = cli_value(cmd, argc, argv, i))) return -1;
        o->model = v;
    } else if (!strcmp(a, "--tokenizer")) {
        if (!(v = cli_value(cmd, argc, argv, i))) return -1;
        o->tokenizer = v;
    } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_int(cmd, a, v, 1, 1024, &o->threads))
            return -1;
    } else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_int(cmd, a, v, 1, 1 << 24, &o->ctx))
            return -1;
    } else {
        return 0;
    }
    return 1;
}

int cli_kv_opt(const char *cmd, cli_model_opts *o, int argc, char **argv, int *i) {
    bool prune = !strcmp(argv[*i], "--prune"), budget = !strcmp(argv[*i], "--mem-budget");
    if (prune || budget) {
        const char *v = cli_value(cmd, argc, argv, i);
        if (!v) return -1;
        double rate;
        uint64_t bytes;
        if (prune ? !cli_float(cmd, "--prune", v, 0, 1, &rate)
                  : strcmp(v, "auto") && !cli_u64(cmd, "--mem-budget", v, &bytes))
            return -1;
        *(prune ? &o->prune : &o->mem_budget) = v;
        if (o->prune && o->mem_budget) {
            cli_error(cmd, "--prune and --mem-budget both choose the pruning rate: give one");
            return -1;
        }
        return 1;
    }
    if (!strcmp(argv[*i], "--keep-page-cache")) {
        o->keep_page_cache = true;
        return 1;
    }
    if (!strcmp(argv[*i], "--profile")) return (o->profile = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (strcmp(argv[*i], "--kv-type") != 0) return 0;
    const char *v = cli_value(cmd, argc, argv, i);
    if (!v) return -1;
    if (!strcmp(v, "f16")) {
        o->kv_type = EL_KV_F16;
    } else if (!strcmp(v, "f32")) {
        o->kv_type = EL_KV_F32;
    } else {
        cli_error(cmd, "--kv-type: '%s' is not f16 or f32", v);
        return -1;
    }
    return 1;
}

const char *cli_kv_type_name(el_kv_type t) { return t == EL_KV_F32 ? "f32" : "f16"; }

const char *cli_model_path(const char *cmd, const char *given) {
    static char path[4096];
    if (given) return given;
    const char *env = getenv("EDGELORA_MODEL");
    if (env && *env) return env;
    /* beside the program: build/edgelora -> models/, PREFIX/bin -> PREFIX/share/edgelora/ */
    char exe[4000];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        static const char *const rel[] = {"/../models/base.gguf",
                                          "/../share/edgelora/models/base.gguf"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            snprintf(path, sizeof path, "%s%s", exe, rel[i]);
            if (access(path, R_OK) == 0) return path;
        }
    }
    cli_error(cmd, "no model given (-m MODEL), and no default model (models/base.gguf beside the "
                   "program, or $EDGELORA_MODEL)");
    return NULL;
}

int cli_load_model(const char *cmd, const cli_model_opts *o, bool vocab_only, el_model **out) {
    const char *path = cli_model_path(cmd, o->model);
    if (!path) return CLI_USAGE;
    el_model_params mp = el_model_default_params();
    mp.tokenizer_path = o->tokenizer;
    mp.vocab_only = vocab_only;
    mp.keep_page_cache = o->keep_page_cache;
    if (!vocab_only) mp.profile_path = o->profile;
    el_status st = el_model_load(path, &mp, out);
    if (st == EL_OK && !vocab_only && (o->prune || o->mem_budget))
        st = cli_apply_prune(cmd, o, *out);
    if (st != EL_OK) {
        el_model_free(*out);
        *out = NULL;
    }
    return st == EL_OK ? CLI_OK : cli_fail(cmd, st);
}

el_status cli_apply_prune(const char *cmd, const cli_model_opts *o, el_model *m) {
    float rate = o->prune ? strtof(o->prune, NULL) : 0.0f;
    if (o->mem_budget) {
        uint64_t budget;
        el_status st = strcmp(o->mem_budget, "auto") ? EL_OK : el_mem_available(&budget);
        if (st) return st;
        if (strcmp(o->mem_budget, "auto")) budget = strtoull(o->mem_budget, NULL, 10);
        el_context_params cp = el_context_default_params();
        cp.n_ctx = (int32_t)o->ctx;
        cp.kv_type = o->kv_type;
        if ((st = el_model_prune_fit(m, &cp, budget, &rate))) return st;
        fprintf(stderr, "edgelora %s: memory budget %llu bytes%s: pruning rate %g\n", cmd,
                (unsigned long long)budget, strcmp(o->mem_budget, "auto") ? "" : " (available now)",
                (double)rate);
    }
    return el_model_set_prune(m, rate);
}

el_status cli_tokenize(const el_model *m, const char *text, size_t len, bool add_special,
                       bool parse_special, int32_t **tokens, size_t *n) {
    size_t cap = len + 16;
    *tokens = NULL;
    for (;;) {
        int32_t *buf = realloc(*tokens, cap * sizeof *buf);
        if (!buf) {
            free(*tokens);
            *tokens = NULL;
            return EL_ERR_NOMEM;
        }
        *tokens = buf;
        el_status st = el_tokenize(m, text, len, add_special, parse_special, buf, cap, n);
        if (st == EL_OK) return EL_OK;
        if (st != EL_ERR_INVALID_ARG || *n <= cap) {
            free(*tokens);
            *tokens = NULL;
            return st;
        }
        cap = *n;
    }
}

el_status cli_decode_tokens(el_context *ctx, const int32_t *tokens, int32_t n, int32_t pos,
                            int32_t n_batch) {
    int32_t *p = malloc((size_t)n_batch * sizeof *p), *seq = calloc((size_t)n_batch, sizeof *seq);
    el_status st = p && seq ? EL_OK : EL_ERR_NOMEM;
    for (int32_t done = 0; st == EL_OK && done < n; done += n_batch) {
        int32_t rows = n - done < n_batch ? n - done : n_batch;
        for (int32_t r = 0; r < rows; r++) p[r] = pos + done + r;
        el_batch b = {.n_rows = rows, .token = tokens + done, .pos = p, .seq_id = seq};
        st = el_decode(ctx, &b);
    }
    free(p);
    free(seq);
    return st;
}

void cli_progress_start(cli_progress *p) {
    p->start = cli_now_ms() / 1e3;
    p->tty = isatty(STDERR_FILENO);
    p->bytes = 0;
}

void cli_progress_update(void *user, int32_t done, int32_t total, uint64_t bytes_done,
                         uint64_t bytes_total) {
    cli_progress *p = user;
    p->bytes = bytes_done;
    /* in a log, a line at each tenth of the tensors (and none for small files) */
    int32_t tenth = total / 10 > 0 ? total / 10 : 1;
    if (!p->tty && (bytes_total < (64u << 20) || (done % tenth != 0 && done != total))) return;
    double t = cli_now_ms() / 1e3 - p->start;
    double rate = t > 0 ? (double)bytes_done / t : 0;
    double eta = rate > 0 ? (double)(bytes_total - bytes_done) / rate : 0;
    fprintf(stderr, "%s  %d/%d tensors  %.0f/%.0f MB  %.1f MB/s  ETA %.0f s%s", p->tty ? "\r" : "",
            done, total, (double)bytes_done / 1e6, (double)bytes_total / 1e6, rate / 1e6, eta,
            p->tty ? "   " : "\n");
    fflush(stderr);
}

double cli_progress_end(cli_progress *p) {
    if (p->tty) fputc('\n', stderr);
    return cli_now_ms() / 1e3 - p->start;
}

static int hex_digit(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

size_t cli_unescape(char *s) {
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r != '\\' || !r[1]) {
            *w++ = *r;
            continue;
        }
        char c = *++r;
        switch (c) {
        case 'n': *w++ = '\n'; break;
        case 't': *w++ = '\t'; break;
        case 'r': *w++ = '\r'; break;
        case '\\': case '"': case '\'': *w++ = c; break;
        case 'x': /* two hex digits make a byte; otherwise the text stays as it was */
            if (hex_digit(r[1]) >= 0 && hex_digit(r[2]) >= 0) {
                *w++ = (char)(hex_digit(r[1]) * 16 + hex_digit(r[2]));
                r += 2;
                break;
            }
            *w++ = '\\', *w++ = c;
            break;
        default: *w++ = '\\', *w++ = c; break; /* unknown: kept as written */
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

void cli_warn_context(const char *cmd, const el_model_info *info, long n_ctx) {
    if (info->n_ctx_train > 0 && n_ctx > info->n_ctx_train)
        fprintf(stderr, "edgelora %s: warning: a context of %ld tokens passes the %d the model was "
                        "trained on: past them its output degrades\n", cmd, n_ctx,
                info->n_ctx_train);
}

el_status cli_continuation(const el_model *m, const int32_t *tokens, int32_t n_prompt,
                           int32_t n_tokens, char **text) {
    char *full = NULL, *prompt = NULL;
    el_status st = el_detokenize(m, tokens, (size_t)n_tokens, false, true, &full);
    if (st == EL_OK) st = el_detokenize(m, tokens, (size_t)n_prompt, false, true, &prompt);
    if (st == EL_OK) {
        /* detokenizing the whole text keeps a word's leading space that the generated tokens
         * alone would lose; where the prompt's text is not a prefix, the tokens alone */
        size_t n = strlen(prompt);
        if (!strncmp(full, prompt, n)) {
            memmove(full, full + n, strlen(full + n) + 1);
            *text = full;
            full = NULL;
        } else {
            st = el_detokenize(m, tokens + n_prompt, (size_t)(n_tokens - n_prompt), false, false,
                               text);
        }
    }
    free(full);
    free(prompt);
    return st;
}

bool cli_write_image_grid(const char *cmd, const char *path, const uint8_t *images, int32_t rows,
                          int32_t cols) {
    enum { SIDE = 28, GAP = 2 };
    int32_t w = cols * SIDE + (cols - 1) * GAP, h = rows * SIDE + (rows - 1) * GAP;
    uint8_t *grid = calloc((size_t)w * (size_t)h, 1);
    if (!grid) {
        cli_error(cmd, "%s: out of memory", path);
        return false;
    }
    for (int32_t k = 0; k < rows * cols; k++) {
        int32_t r = k / cols, c = k % cols;
        for (int y = 0; y < SIDE; y++)
            memcpy(grid + (size_t)(r * (SIDE + GAP) + y) * (size_t)w + c * (SIDE + GAP),
                   images + ((size_t)k * SIDE + y) * SIDE, SIDE);
    }
    el_status st = el_png_write_gray(path, grid, w, h);
    free(grid);
    if (st != EL_OK) cli_fail(cmd, st);
    return st == EL_OK;
}

bool cli_image_precision(const char *cmd, const char *name, el_image_precision *out) {
    *out = EL_IMAGE_FLOAT;
    if (!name || !strcmp(name, "float")) return true;
    if (!strcmp(name, "w8a16")) *out = EL_IMAGE_W8A16;
    else if (!strcmp(name, "w8a8")) *out = EL_IMAGE_W8A8;
    else cli_error(cmd, "--precision '%s': float, w8a16 or w8a8", name);
    return *out != EL_IMAGE_FLOAT;
}
