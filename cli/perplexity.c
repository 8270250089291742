/* perplexity.c - `edgelora perplexity`: perplexity of a model over a text file, measured as
 * llama.cpp measures it so figures compare: the tokens are cut into chunks of the context size,
 * each chunk starts with BOS, and only the second half of each chunk is scored (every scored
 * token has at least half a context before it). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora perplexity -m MODEL -f TEXTFILE [-c CTX] [-t THREADS]\n"
    "Prints the perplexity of MODEL over TEXTFILE (chunks of CTX tokens, default 512; the\n"
    "second half of each chunk is scored). Progress goes to stderr.\n";

/* -log softmax(logits)[target] in double precision. */
static double token_nll(const float *logits, int32_t n_vocab, int32_t target) {
    float max = logits[0];
    for (int32_t i = 1; i < n_vocab; i++)
        if (logits[i] > max) max = logits[i];
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; i++) sum += exp((double)logits[i] - max);
    return log(sum) - ((double)logits[target] - max);
}

/* Scores one chunk of n_ctx tokens; adds the NLL of its second half to *sum and *sum_sq. */
static el_status score_chunk(el_context *ctx, int32_t *chunk, int32_t n_ctx, int32_t n_vocab,
                             int32_t n_batch, double *sum, double *sum_sq, long *count) {
    int32_t *pos = malloc((size_t)n_batch * sizeof *pos);
    int32_t *seq = calloc((size_t)n_batch, sizeof *seq);
    int8_t *want = malloc((size_t)n_batch);
    el_status st = pos && seq && want ? EL_OK : EL_ERR_NOMEM;
    el_kv_clear(ctx);
    int32_t first = n_ctx / 2;
    for (int32_t done = 0; st == EL_OK && done < n_ctx; done += n_batch) {
        int32_t rows = n_ctx - done < n_batch ? n_ctx - done : n_batch;
        for (int32_t r = 0; r < rows; r++) {
            pos[r] = done + r;
            want[r] = (int8_t)(done + r >= first && done + r + 1 < n_ctx);
        }
        el_batch b = {.n_rows = rows, .token = chunk + done, .pos = pos, .seq_id = seq,
                      .logits = want};
        if ((st = el_decode(ctx, &b)) != EL_OK) break;
        for (int32_t r = 0; r < rows; r++) {
            if (!want[r]) continue;
            double nll = token_nll(el_get_logits(ctx, r), n_vocab, chunk[done + r + 1]);
            *sum += nll;
            *sum_sq += nll * nll;
            (*count)++;
        }
    }
    free(pos);
    free(seq);
    free(want);
    return st;
}

int cmd_perplexity(int argc, char **argv) {
    cli_model_opts mo = {0};
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_model_opt("perplexity", &mo, argc, argv, &i);
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
    long n_ctx = mo.ctx ? mo.ctx : 512;
    if (n_ctx < 4) {
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
    int32_t *tokens = NULL;
    size_t n_tokens = 0;
    el_context *ctx = NULL;
    el_status st = cli_tokenize(m, text, len, false, false, &tokens, &n_tokens);
    free(text);
    el_model_info info;
    el_model_get_info(m, &info);
    int32_t bos = el_token_bos(m);
    /* a chunk starts with BOS, then n_ctx - 1 tokens of the text */
    size_t per_chunk = (size_t)n_ctx - (bos >= 0);
    size_t n_chunks = st == EL_OK ? n_tokens / per_chunk : 0;
    if (st == EL_OK && n_chunks == 0) {
        cli_error("perplexity", "%s has %zu tokens, fewer than one chunk of %ld (try a smaller -c)",
                  file, n_tokens, n_ctx);
        rc = CLI_FAIL;
    }
    el_context_params cp = el_context_default_params();
    cp.n_ctx = (int32_t)n_ctx;
    cp.n_batch = (int32_t)(n_ctx < 512 ? n_ctx : 512);
    cp.n_seq_max = 1;
    cp.n_threads = (int32_t)mo.threads;
    if (st == EL_OK && !rc) st = el_context_create(m, &cp, &ctx);
    int32_t *chunk = malloc((size_t)n_ctx * sizeof *chunk);
    if (!chunk) st = EL_ERR_NOMEM;
    double sum = 0, sum_sq = 0;
    long count = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t c = 0; st == EL_OK && !rc && c < n_chunks; c++) {
        size_t k = 0;
        if (bos >= 0) chunk[k++] = bos;
        memcpy(chunk + k, tokens + c * per_chunk, per_chunk * sizeof *chunk);
        st = score_chunk(ctx, chunk, (int32_t)n_ctx, info.n_vocab, cp.n_batch, &sum, &sum_sq,
                         &count);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
        fprintf(stderr, "\rchunk %zu/%zu  ppl %.4f  eta %.0f s   ", c + 1, n_chunks,
                exp(sum / (double)count), secs / (double)(c + 1) * (double)(n_chunks - c - 1));
    }
    if (n_chunks) fputc('\n', stderr);
    if (st == EL_OK && !rc) {
        double mean = sum / (double)count;
        double var = sum_sq / (double)count - mean * mean;
        double err = count > 1 ? sqrt((var > 0 ? var : 0) / (double)(count - 1)) : 0;
        printf("perplexity: %.4f +/- %.4f over %ld tokens (%zu chunks of %ld)\n", exp(mean),
               exp(mean) * err, count, n_chunks, n_ctx);
    }
    free(chunk);
    free(tokens);
    el_context_free(ctx);
    el_model_free(m);
    if (rc) return rc;
    return st == EL_OK ? CLI_OK : cli_fail("perplexity", st);
}
