/* variants.c - `edgelora run --variants K` (see variants.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "variants.h"

enum { MAX_VARIANTS = 64 };

const char cli_variants_help[] =
    "  --variants K           generate K continuations together (the prompt is decoded once;\n"
    "                         each starts with a different token: the K most likely ones unless\n"
    "                         --variant-first says); variant i samples with seed S + i; -n is\n"
    "                         per variant. Prints each continuation (without the prompt) under\n"
    "                         a line '--- variant i/K ... ---'\n"
    "  --variant-adapters L   comma-separated adapter files for variants 1, 2, ... ('-' or an\n"
    "                         empty entry: none; variants past the list: none); added to --lora\n"
    "  --variant-first L      '|'-separated first tokens for variants 1, 2, ..., each the exact\n"
    "                         text of one token (e.g. \" Hello|,\"); an empty entry: chosen\n"
    "                         With --json: one JSON object {\"variants\": [{\"text\",\n"
    "                         \"first_token\", \"first_token_id\", \"adapter\", \"tokens\",\n"
    "                         \"finish\"}, ...]}\n";

int cli_variants_opt(cli_variants_opts *o, int argc, char **argv, int *i) {
    const char *a = argv[*i], *v;
    if (!strcmp(a, "--variants")) {
        if (!(v = cli_value("run", argc, argv, i)) ||
            !cli_int("run", a, v, 1, MAX_VARIANTS, &o->k))
            return -1;
    } else if (!strcmp(a, "--variant-adapters")) {
        if (!(o->adapters = cli_value("run", argc, argv, i))) return -1;
    } else if (!strcmp(a, "--variant-first")) {
        if (!(o->first = cli_value("run", argc, argv, i))) return -1;
    } else {
        return 0;
    }
    return 1;
}

/* Splits s at sep into at most max entries (copies in *buf, which the caller frees); returns
 * the count, or -1 if there are more than max. */
static int split(const char *s, char sep, char **entries, int max, char **buf) {
    *buf = strdup(s);
    if (!*buf) return -1;
    int n = 0;
    for (char *p = *buf;; p++) {
        if (n == max) return -1;
        entries[n++] = p;
        p = strchr(p, sep);
        if (!p) return n;
        *p = '\0';
    }
}

/* The token whose text is exactly `text`: a token with that piece, or else the one token the
 * text tokenizes to. */
static int find_token(const el_model *m, int32_t n_vocab, const char *text, int32_t *out) {
    size_t len = strlen(text), plen;
    char piece[256];
    for (int32_t t = 0; t < n_vocab; t++)
        if (el_token_to_piece(m, t, false, piece, sizeof piece, &plen) == EL_OK && plen == len &&
            !memcmp(piece, text, len)) {
            *out = t;
            return CLI_OK;
        }
    int32_t *toks;
    size_t n = 0;
    if (cli_tokenize(m, text, len, false, false, &toks, &n) == EL_OK) {
        if (n == 1) *out = toks[0];
        free(toks);
        if (n == 1) return CLI_OK;
    }
    cli_error("run", "--variant-first: '%s' is not the text of one token (it tokenizes to %zu)",
              text, n);
    return CLI_USAGE;
}

/* Variant settings from the options: first tokens, adapters (loaded into adapters[i]). */
static int variant_params(const cli_variants_opts *o, const cli_variants_run_args *a,
                          el_model *m, long n_predict, el_variant_params *vp,
                          el_adapter **adapters, el_binding *bind) {
    el_model_info info;
    el_model_get_info(m, &info);
    int k = (int)o->k;
    for (int i = 0; i < k; i++) {
        vp[i] = el_variant_default_params();
        vp[i].sampler = a->sp;
        vp[i].sampler.seed = a->sp.seed + (uint64_t)i;
        vp[i].max_tokens = (int32_t)n_predict;
        vp[i].ignore_eos = a->ignore_eos;
    }
    char *entries[MAX_VARIANTS], *buf = NULL;
    int n, rc = CLI_OK;
    if (o->first) {
        if ((n = split(o->first, '|', entries, k, &buf)) < 0) {
            cli_error("run", "--variant-first lists more than %d tokens (--variants)", k);
            rc = CLI_USAGE;
        }
        for (int i = 0; rc == CLI_OK && i < n; i++)
            if (entries[i][0]) rc = find_token(m, info.n_vocab, entries[i], &vp[i].first_token);
        free(buf);
        buf = NULL;
    }
    if (rc == CLI_OK && o->adapters) {
        if ((n = split(o->adapters, ',', entries, k, &buf)) < 0) {
            cli_error("run", "--variant-adapters lists more than %d adapters (--variants)", k);
            rc = CLI_USAGE;
        }
        for (int i = 0; rc == CLI_OK && i < n; i++) {
            if (!entries[i][0] || !strcmp(entries[i], "-")) continue;
            el_status st = el_adapter_load(m, entries[i], &adapters[i]);
            if (st != EL_OK) rc = cli_fail("run", st);
        }
        free(buf);
    }
    /* each variant: the --lora adapters, then its own */
    for (int i = 0; rc == CLI_OK && i < k; i++) {
        el_binding *b = bind + (size_t)i * (CLI_MAX_LORA + 1);
        memcpy(b, a->lora, (size_t)a->n_lora * sizeof *b);
        vp[i].bindings = b;
        vp[i].n_bindings = a->n_lora;
        if (adapters[i]) b[vp[i].n_bindings++] = (el_binding){adapters[i], 1.0f};
    }
    return rc;
}

static const char *finish_name(el_finish f) {
    switch (f) {
    case EL_FINISH_EOS: return "eos";
    case EL_FINISH_STOP: return "stop";
    case EL_FINISH_LENGTH: return "length";
    default: return "running";
    }
}

static void print_piece(const el_model *m, int32_t t, bool json) {
    char piece[256];
    size_t len = 0;
    if (t < 0 || el_token_to_piece(m, t, true, piece, sizeof piece, &len) != EL_OK) len = 0;
    if (json) {
        el_json_write_string(stdout, piece, len);
    } else {
        putchar('"');
        fwrite(piece, 1, len, stdout);
        putchar('"');
    }
}

static void print_results(const cli_variants_opts *o, const el_model *m, const el_variants *g,
                          el_adapter *const *adapters) {
    int k = (int)o->k;
    if (o->json) fputs("{\"variants\": [", stdout);
    for (int i = 0; i < k; i++) {
        el_variant_result r;
        el_variants_result(g, i, &r);
        el_adapter_info ai = {.name = NULL};
        if (adapters[i]) el_adapter_get_info(adapters[i], &ai);
        if (o->json) {
            fputs(i ? ",\n  {\"text\": " : "\n  {\"text\": ", stdout);
            el_json_write_string(stdout, r.text, r.text_len);
            fputs(", \"first_token\": ", stdout);
            print_piece(m, r.first_token, true);
            printf(", \"first_token_id\": %d, \"adapter\": ", r.first_token);
            if (ai.name) el_json_write_string(stdout, ai.name, strlen(ai.name));
            else fputs("null", stdout);
            fputs(", \"tokens\": [", stdout);
            for (int32_t t = 0; t < r.n_tokens; t++) printf(t ? ", %d" : "%d", r.tokens[t]);
            printf("], \"finish\": \"%s\"}", finish_name(r.finish));
        } else {
            printf("--- variant %d/%d: first token ", i + 1, k);
            print_piece(m, r.first_token, false);
            printf(", adapter %s, %d tokens, %s ---\n", ai.name ? ai.name : "none", r.n_tokens,
                   finish_name(r.finish));
            fwrite(r.text, 1, r.text_len, stdout);
            putchar('\n');
        }
    }
    if (o->json) fputs("\n]}\n", stdout);
    fflush(stdout);
}

int cli_variants_run(const cli_variants_opts *o, const cli_variants_run_args *a, el_model *m,
                     const int32_t *prompt, size_t n_prompt) {
    el_model_info info;
    el_model_get_info(m, &info);
    long k = o->k, n_predict = a->n_predict;
    long n_ctx = a->ctx ? a->ctx : n_predict >= 0 ? (long)n_prompt + k * n_predict
                 : info.n_ctx_train > 0 && info.n_ctx_train < 4096 ? info.n_ctx_train : 4096;
    if (n_predict < 0 || (long)n_prompt + k * n_predict > n_ctx)
        n_predict = (n_ctx - (long)n_prompt) / k;
    if (n_predict < 1) {
        cli_error("run", "the prompt (%zu tokens) and %ld variants do not fit in a context of %ld "
                  "(-c)", n_prompt, k, n_ctx);
        return CLI_FAIL;
    }
    el_variant_params vp[MAX_VARIANTS];
    el_adapter *adapters[MAX_VARIANTS] = {NULL};
    el_binding *bind = malloc((size_t)k * (CLI_MAX_LORA + 1) * sizeof *bind);
    el_context_params cp = el_context_default_params();
    cp.n_ctx = (int32_t)n_ctx;
    cp.n_batch = (int32_t)(a->n_batch ? a->n_batch : 512);
    if (cp.n_batch < k) cp.n_batch = (int32_t)k;
    cp.n_seq_max = (int32_t)k;
    cp.n_threads = (int32_t)a->threads;
    cp.kv_type = a->kv_type;
    el_context *ctx = NULL;
    el_variants *g = NULL;
    int rc = bind ? variant_params(o, a, m, n_predict, vp, adapters, bind) : CLI_FAIL;
    el_status st;
    if (rc == CLI_OK && (st = el_context_create(m, &cp, &ctx)) != EL_OK) rc = cli_fail("run", st);
    double t0 = cli_now_ms();
    if (rc == CLI_OK) {
        el_variants_params gp = el_variants_default_params();
        gp.n_variants = (int32_t)k;
        gp.variants = vp;
        gp.prompt_bindings = a->lora;
        gp.n_prompt_bindings = a->n_lora;
        if ((st = el_variants_generate(ctx, &gp, prompt, (int32_t)n_prompt, &g)) != EL_OK)
            rc = cli_fail("run", st);
    }
    if (rc == CLI_OK) {
        double ms = cli_now_ms() - t0;
        long n_gen = 0;
        for (int i = 0; i < k; i++) {
            el_variant_result r;
            el_variants_result(g, i, &r);
            n_gen += r.n_tokens;
        }
        print_results(o, m, g, adapters);
        fprintf(stderr, "variants: %ld, prompt %zu tokens, generated %ld tokens in %.1f ms "
                "(%.1f tokens/s); KV cells in use %d of %ld\n", k, n_prompt, n_gen, ms,
                n_gen / (ms / 1e3 + 1e-9), el_kv_used_cells(ctx), n_ctx);
    }
    el_variants_free(g);
    el_context_free(ctx);
    for (int i = 0; i < k; i++) el_adapter_free(adapters[i]);
    free(bind);
    return rc;
}
