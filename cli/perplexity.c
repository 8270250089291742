/* perplexity.c - `edgelora perplexity`: perplexity of a model over a text file, measured as
 * llama.cpp's perplexity tool measures it so that the figures compare: the text is tokenized
 * with its special tokens (BOS first, where the vocabulary adds one), the tokens are cut into
 * windows of exactly the context size, each window's first token is overwritten by BOS (where
 * the vocabulary adds one), and only the second half of each window is scored (every scored
 * token has at least half a context before it). `edgelora quantize --ppl-text` uses the same. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora perplexity -m MODEL -f TEXTFILE [-c CTX] [-t THREADS] [--kv-type f16|f32]\n"
    "                           [--lora FILE] [--lora-scaled FILE S]\n"
    "                           [--prune RATE | --mem-budget BYTES|auto] [--keep-page-cache]\n"
    "                           [--profile FILE]\n"
    "Prints the perplexity of MODEL (with the adapters given, their terms added up) over\n"
    "TEXTFILE (chunks of CTX tokens, default 512; the second half of each chunk is scored)\n"
    "with a KV cache of fp16 (default) or float32 elements. Progress goes to stderr.\n";

/* -log softmax(logits)[target] in double precision. */
static double token_nll(const float *logits, int32_t n_vocab, int32_t target) {
    float max = logits[0];
    for (int32_t i = 1; i < n_vocab; i++)
        if (logits[i] > max) max = logits[i];
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; i++) sum += exp((double)logits[i] - max);
    return log(sum) - ((double)logits[target] - max);
}

/* Scores one window of n_ctx tokens; adds the NLL of its second half to r. */
static el_status score_chunk(el_context *ctx, const int32_t *chunk, int32_t n_ctx,
                             int32_t n_vocab, int32_t n_batch, int32_t *pos, int32_t *seq,
                             int8_t *want, cli_ppl *r) {
    el_status st = EL_OK;
    el_kv_clear(ctx);
    for (int32_t done = 0; st == EL_OK && done < n_ctx; done += n_batch) {
        int32_t rows = n_ctx - done < n_batch ? n_ctx - done : n_batch;
        for (int32_t i = 0; i < rows; i++) {
            pos[i] = done + i;
            want[i] = (int8_t)(done + i >= n_ctx / 2 && done + i + 1 < n_ctx);
        }
        el_batch b = {.n_rows = rows, .token = chunk + done, .pos = pos, .seq_id = seq,
                      .logits = want};
        if ((st = el_decode(ctx, &b)) != EL_OK) break;
        for (int32_t i = 0; i < rows; i++) {
            if (!want[i]) continue;
            double nll = token_nll(el_get_logits(ctx, i), n_vocab, chunk[done + i + 1]);
            r->sum += nll;
            r->sum_sq += nll * nll;
            r->count++;
        }
    }
    return st;
}

double cli_ppl_value(const cli_ppl *r) { return exp(r->sum / (double)r->count); }

double cli_ppl_error(const cli_ppl *r) {
    double mean = r->sum / (double)r->count, var = r->sum_sq / (double)r->count - mean * mean;
    double err = r->count > 1 ? sqrt((var > 0 ? var : 0) / (double)(r->count - 1)) : 0;
    return exp(mean) * err;
}

el_status cli_perplexity(el_model *m, const int32_t *tokens, size_t n_tokens,
                         const cli_ppl_params *p, cli_ppl *r) {
    memset(r, 0, sizeof *r);
    el_model_info info;
    el_status st = el_model_get_info(m, &info);
    /* each window's first token becomes BOS where the vocabulary adds one (llama.cpp's
     * add_bos): the window starts as a text would, and no token is scored twice */
    int32_t bos = el_token_adds_bos(m) ? el_token_bos(m) : -1, n_ctx = p->n_ctx;
    r->n_chunks = n_tokens / (size_t)n_ctx;
    if (st != EL_OK || r->n_chunks == 0) return st;
    el_context_params cp = el_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = n_ctx < 512 ? n_ctx : 512;
    cp.n_seq_max = 1;
    cp.n_threads = p->n_threads;
    cp.kv_type = p->kv_type;
    el_context *ctx = NULL;
    int32_t *chunk = malloc((size_t)n_ctx * sizeof *chunk);
    int32_t *pos = malloc((size_t)cp.n_batch * sizeof *pos);
    int32_t *seq = calloc((size_t)cp.n_batch, sizeof *seq);
    int8_t *want = malloc((size_t)cp.n_batch);
    st = chunk && pos && seq && want ? el_context_create(m, &cp, &ctx) : EL_ERR_NOMEM;
    if (st == EL_OK && p->n_bind > 0) st = el_context_bind(ctx, 0, p->bind, p->n_bind);
    for (size_t c = 0; st == EL_OK && c < r->n_chunks; c++) {
        memcpy(chunk, tokens + c * (size_t)n_ctx, (size_t)n_ctx * sizeof *chunk);
        if (bos >= 0) chunk[0] = bos;
        st = score_chunk(ctx, chunk, n_ctx, info.n_vocab, cp.n_batch, pos, seq, want, r);
        if (st == EL_OK && p->progress) p->progress(p->user, c + 1, r->n_chunks, cli_ppl_value(r));
    }
    free(chunk);
    free(pos);
    free(seq);
    free(want);
    el_context_free(ctx);
    return st;
}

/* Progress on stderr: chunks done, perplexity so far, ETA; rewritten in place on a terminal,
 * a line at every tenth of the chunks in a log. */
static void show_progress(void *user, size_t done, size_t total, double ppl) {
    double secs = (cli_now_ms() - *(const double *)user) / 1e3;
    bool tty = isatty(STDERR_FILENO);
    size_t tenth = total / 10 > 0 ? total / 10 : 1;
    if (!tty && done % tenth != 0 && done != total) return;
    fprintf(stderr, "%schunk %zu/%zu  ppl %.4f  eta %.0f s%s", tty ? "\r" : "", done, total, ppl,
            secs / (double)done * (double)(total - done), tty ? "   " : "\n");
    if (tty && done == total) fputc('\n', stderr);
}

int cmd_perplexity(int argc, char **argv) {
    cli_model_opts mo = {0};
    cli_lora_opts lora = {0};
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_model_opt("perplexity", &mo, argc, argv, &i);
        if (r == 0) r = cli_kv_opt("perplexity", &mo, argc, argv, &i);
        if (r == 0) r = cli_lora_opt("perplexity", &lora, argc, argv, &i);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return CLI_OK;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            if (!(file = cli_value("perplexity", argc, argv, &i))) return CLI_USAGE;
        } else {
            cli_error("perplexity", "unknown option '%s'", a);
            return CLI_USAGE;
        }
    }
    if (!file) {
        cli_error("perplexity", "no text file given (-f FILE)");
        return CLI_USAGE;
    }
    if (mo.ctx && mo.ctx < 4) {
        cli_error("perplexity", "-c must be at least 4");
        return CLI_USAGE;
    }
    size_t len;
    char *text = cli_read_file("perplexity", file, &len);
    if (!text) return CLI_FAIL;
    el_model *m;
    int rc = cli_load_model("perplexity", &mo, false, &m);
    if (rc) {
        free(text);
        return rc;
    }
    /* windows of the model's own context (at most 512, as llama-perplexity's usual -c), so a
     * model is not scored past what it was trained on unless -c asks */
    el_model_info info;
    el_model_get_info(m, &info);
    long n_ctx = mo.ctx ? mo.ctx : info.n_ctx_train > 0 && info.n_ctx_train < 512 ? info.n_ctx_train : 512;
    cli_warn_context("perplexity", &info, n_ctx);
    int32_t *tokens = NULL;
    size_t n_tokens = 0;
    cli_ppl r = {0};
    el_binding bind[CLI_MAX_LORA];
    int n_bind = 0;
    double t0 = cli_now_ms();
    el_status st = cli_lora_load(&lora, m, bind, &n_bind);
    if (st == EL_OK) st = cli_tokenize(m, text, len, true, false, &tokens, &n_tokens);
    free(text);
    cli_ppl_params pp = {.n_ctx = (int32_t)n_ctx, .n_threads = (int32_t)mo.threads,
                         .kv_type = mo.kv_type, .bind = bind, .n_bind = n_bind,
                         .progress = show_progress, .user = &t0};
    if (st == EL_OK) st = cli_perplexity(m, tokens, n_tokens, &pp, &r);
    if (st != EL_OK) {
        rc = cli_fail("perplexity", st);
    } else if (r.n_chunks == 0) {
        cli_error("perplexity", "%s has %zu tokens, fewer than one chunk of %ld (try a smaller -c)",
                  file, n_tokens, n_ctx);
        rc = CLI_FAIL;
    } else {
        printf("perplexity: %.4f +/- %.4f over %ld tokens (%zu chunks of %ld)\n", cli_ppl_value(&r),
               cli_ppl_error(&r), r.count, r.n_chunks, n_ctx);
    }
    free(tokens);
    for (int i = 0; i < n_bind; i++) el_adapter_free(bind[i].adapter);
    el_model_free(m);
    return rc;
}
