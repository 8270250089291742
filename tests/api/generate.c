/* generate.c - an application of the inference library alone: it includes only edgelora.h and
 * is linked against libedgelora.a, libm and pthreads (tests/cli/test_public_api.sh builds it so).
 * Usage: generate MODEL ADAPTER PROMPT N. Binds ADAPTER to sequence 0 and prints the prompt and
 * up to N greedily chosen tokens as text, then a newline: what `edgelora run --lora ADAPTER -p
 * PROMPT -n N --temp 0` prints on stdout. */
#include <edgelora.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what) {
    fprintf(stderr, "generate: %s: %s\n", what, el_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: generate MODEL ADAPTER PROMPT N\n");
        return 2;
    }
    int n_predict = atoi(argv[4]);
    el_model_params mp = el_model_default_params();
    el_model *m = NULL;
    if (el_model_load(argv[1], &mp, &m) != EL_OK) return fail("loading the model");
    el_adapter *ad = NULL;
    if (el_adapter_load(m, argv[2], &ad) != EL_OK) return fail("loading the adapter");

    size_t cap = strlen(argv[3]) + 16 + (size_t)n_predict, n = 0;
    int32_t *tokens = malloc(cap * sizeof *tokens);
    if (!tokens || el_tokenize(m, argv[3], strlen(argv[3]), true, true, tokens, cap, &n) != EL_OK)
        return fail("tokenizing");
    el_model_info info;
    el_model_get_info(m, &info);

    el_context_params cp = el_context_default_params();
    cp.n_ctx = (int32_t)(n + (size_t)n_predict);
    cp.n_batch = cp.n_ctx;
    cp.n_seq_max = 1;
    el_context *ctx = NULL;
    el_binding bind = {.adapter = ad, .scale = 1.0f};
    el_sampler_params sp = el_sampler_default_params();
    sp.temperature = 0; /* greedy */
    el_sampler *smp = NULL;
    if (el_context_create(m, &cp, &ctx) != EL_OK) return fail("creating the context");
    if (el_context_bind(ctx, 0, &bind, 1) != EL_OK) return fail("binding the adapter");
    if (el_sampler_create(&sp, info.n_vocab, &smp) != EL_OK) return fail("creating the sampler");

    int32_t *pos = malloc(cap * sizeof *pos), *seq = calloc(cap, sizeof *seq);
    if (!pos || !seq) return fail("allocating");
    for (size_t i = 0; i < n; i++) pos[i] = (int32_t)i;
    el_batch b = {.n_rows = (int32_t)n, .token = tokens, .pos = pos, .seq_id = seq};
    if (el_decode(ctx, &b) != EL_OK) return fail("decoding the prompt");
    int32_t row = (int32_t)n - 1;
    for (int i = 0; i < n_predict; i++) {
        int32_t tok;
        if (el_sampler_sample(smp, el_get_logits(ctx, row), &tok) != EL_OK) return fail("sampling");
        if (el_token_is_eog(m, tok)) break;
        el_sampler_accept(smp, tok);
        tokens[n] = tok;
        int32_t p = (int32_t)n++;
        el_batch one = {.n_rows = 1, .token = &tok, .pos = &p, .seq_id = seq};
        if (i + 1 < n_predict && el_decode(ctx, &one) != EL_OK) return fail("decoding");
        row = 0;
    }
    char *text = NULL;
    if (el_detokenize(m, tokens, n, false, true, &text) != EL_OK) return fail("detokenizing");
    printf("%s\n", text);
    free(text);
    free(pos);
    free(seq);
    free(tokens);
    el_sampler_free(smp);
    el_context_free(ctx);
    el_adapter_free(ad);
    el_model_free(m);
    return 0;
}
