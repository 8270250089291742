/* generate.c - el_generate: the simple case in one call (a prompt in, its continuation out),
 * over the same context, sampler and adapter calls an application would make itself. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "edgelora.h"

el_generate_params el_generate_default_params(void) {
    return (el_generate_params){.n_predict = 128, .sampler = el_sampler_default_params()};
}

/* The text tokens[n_prompt..n) add after the prompt's own text, as `run` shows it (detokenizing
 * the continuation alone could differ: a SentencePiece vocabulary's leading space). */
static el_status continuation(const el_model *m, const int32_t *tokens, size_t n_prompt,
                              size_t n, char **text) {
    char *all = NULL, *prompt = NULL;
    el_status st = el_detokenize(m, tokens, n, false, true, &all);
    if (st == EL_OK) st = el_detokenize(m, tokens, n_prompt, false, true, &prompt);
    if (st == EL_OK) {
        size_t k = strlen(prompt);
        if (strncmp(all, prompt, k) == 0) {
            memmove(all, all + k, strlen(all + k) + 1);
            *text = all;
            all = NULL;
        } else {
            st = el_detokenize(m, tokens + n_prompt, n - n_prompt, false, false, text);
        }
    }
    free(all);
    free(prompt);
    return st;
}

el_status el_generate(el_model *model, const char *prompt, const el_generate_params *params,
                      char **text) {
    if (!model || !prompt || !text) return el_error(EL_ERR_INVALID_ARG, "el_generate: NULL argument");
    *text = NULL;
    el_generate_params p = params ? *params : el_generate_default_params();
    if (p.n_predict < 0 || p.n_ctx < 0)
        return el_error(EL_ERR_INVALID_ARG, "el_generate: n_predict and n_ctx must not be negative");
    size_t len = strlen(prompt), n = 0, cap = len + 8;
    int32_t *tokens = malloc(cap * sizeof *tokens);
    if (!tokens) return el_error(EL_ERR_NOMEM, "el_generate: out of memory");
    el_status st = el_tokenize(model, prompt, len, true, true, tokens, cap, &n);
    if (st == EL_OK && n == 0)
        st = el_error(EL_ERR_INVALID_ARG, "el_generate: the prompt is empty and the vocabulary "
                                          "has no BOS token to start from");
    int32_t n_ctx = p.n_ctx ? p.n_ctx : (int32_t)n + (p.n_predict > 0 ? p.n_predict : 1);
    if (st == EL_OK && (int64_t)n >= n_ctx)
        st = el_error(EL_ERR_INVALID_ARG, "el_generate: the prompt has %zu tokens, no room in a "
                                          "context of %d", n, n_ctx);
    int32_t n_gen_max = st == EL_OK ? n_ctx - (int32_t)n : 0;
    if (n_gen_max > p.n_predict) n_gen_max = p.n_predict;
    int32_t *grown = st == EL_OK ? realloc(tokens, (n + (size_t)n_gen_max) * sizeof *tokens) : NULL;
    if (st == EL_OK && !grown) st = el_error(EL_ERR_NOMEM, "el_generate: out of memory");
    if (grown) tokens = grown;
    int32_t *pos = st == EL_OK ? malloc(n * sizeof *pos) : NULL;
    int32_t *seq = st == EL_OK ? calloc(n, sizeof *seq) : NULL;
    if (st == EL_OK && (!pos || !seq)) st = el_error(EL_ERR_NOMEM, "el_generate: out of memory");

    el_context *ctx = NULL;
    el_sampler *smp = NULL;
    el_model_info info;
    if (st == EL_OK) st = el_model_get_info(model, &info);
    el_context_params cp = el_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = (int32_t)n;
    cp.n_seq_max = 1;
    cp.n_threads = p.n_threads;
    if (st == EL_OK) st = el_context_create(model, &cp, &ctx);
    if (st == EL_OK && p.n_bindings > 0) st = el_context_bind(ctx, 0, p.bindings, p.n_bindings);
    if (st == EL_OK) st = el_sampler_create(&p.sampler, info.n_vocab, &smp);
    for (size_t i = 0; st == EL_OK && i < n; i++) {
        el_sampler_accept(smp, tokens[i]);
        pos[i] = (int32_t)i;
    }
    el_batch b = {.n_rows = (int32_t)n, .token = tokens, .pos = pos, .seq_id = seq};
    if (st == EL_OK) st = el_decode(ctx, &b);
    size_t n_prompt = n;
    int32_t row = (int32_t)n - 1, zero = 0;
    for (int32_t i = 0; st == EL_OK && i < n_gen_max; i++) {
        int32_t tok, at = (int32_t)n;
        if ((st = el_sampler_sample(smp, el_get_logits(ctx, row), &tok)) != EL_OK) break;
        if (!p.ignore_eos && el_token_is_eog(model, tok)) break;
        el_sampler_accept(smp, tok);
        tokens[n++] = tok;
        if (i + 1 == n_gen_max) break;
        el_batch step = {.n_rows = 1, .token = &tok, .pos = &at, .seq_id = &zero};
        st = el_decode(ctx, &step);
        row = 0;
    }
    if (st == EL_OK) st = continuation(model, tokens, n_prompt, n, text);
    el_sampler_free(smp);
    el_context_free(ctx);
    free(tokens), free(pos), free(seq);
    return st;
}
