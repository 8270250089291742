/* test_generate.c - el_generate, the one-call helper: its greedy text equals the one the
 * step-by-step API gives (tokenize, decode, sample, decode each token) with and without an
 * adapter bound; n_predict 0 gives nothing; bad arguments are refused with a message. */
#include <stdlib.h>
#include <string.h>

#include "edgelora.h"
#include "testutil.h"

/* Greedy tokens after prompt, the long way round, as text after the prompt's own. */
static char *by_steps(el_model *m, const char *prompt, int n_predict, const el_binding *b) {
    int32_t tok[512];
    size_t n = 0;
    if (el_tokenize(m, prompt, strlen(prompt), true, true, tok, 512, &n) != EL_OK) return NULL;
    el_context_params cp = el_context_default_params();
    cp.n_ctx = (int32_t)n + n_predict;
    cp.n_threads = 1;
    el_context *ctx;
    if (el_context_create(m, &cp, &ctx) != EL_OK) return NULL;
    if (b) el_context_bind(ctx, 0, b, 1);
    el_model_info info;
    el_model_get_info(m, &info);
    size_t n_prompt = n;
    for (int i = 0; i < n_predict; i++) {
        int32_t pos[512] = {0}, seq[512] = {0};
        size_t from = i == 0 ? 0 : n - 1;
        for (size_t k = from; k < n; k++) pos[k - from] = (int32_t)k;
        el_batch bt = {.n_rows = (int32_t)(n - from), .token = tok + from, .pos = pos, .seq_id = seq};
        if (el_decode(ctx, &bt) != EL_OK) return NULL;
        const float *l = el_get_logits(ctx, bt.n_rows - 1);
        int32_t best = 0;
        for (int32_t v = 1; v < info.n_vocab; v++)
            if (l[v] > l[best]) best = v;
        if (el_token_is_eog(m, best)) break;
        tok[n++] = best;
    }
    el_context_free(ctx);
    char *all, *pre;
    el_detokenize(m, tok, n, false, true, &all);
    el_detokenize(m, tok, n_prompt, false, true, &pre);
    char *out = strdup(all + strlen(pre));
    free(all), free(pre);
    return out;
}

static int test_same_as_steps(void) {
    el_model *m;
    CHECK(el_model_load("models/base.gguf", NULL, &m) == EL_OK);
    el_adapter *ad;
    CHECK(el_adapter_load(m, "models/translate-de.gguf", &ad) == EL_OK);
    el_binding b = {.adapter = ad, .scale = 1.0f};
    static const char *prompts[] = {"Once upon a time", "German: The file could not be saved.\n"};
    for (int k = 0; k < 2; k++) {
        el_generate_params p = el_generate_default_params();
        p.n_predict = 24;
        p.n_threads = 1;
        p.sampler.temperature = 0;
        if (k == 1) p.bindings = &b, p.n_bindings = 1;
        char *got = NULL, *want = by_steps(m, prompts[k], 24, k == 1 ? &b : NULL);
        CHECK(el_generate(m, prompts[k], &p, &got) == EL_OK && want);
        if (strcmp(got, want) != 0) test_note("[%s]: got [%s], want [%s]", prompts[k], got, want);
        CHECK(strcmp(got, want) == 0 && strlen(got) > 0);
        free(got), free(want);
    }
    el_generate_params p = el_generate_default_params();
    p.n_predict = 0;
    char *got = NULL;
    CHECK(el_generate(m, "Hello", &p, &got) == EL_OK && strcmp(got, "") == 0);
    free(got);
    /* errors: NULLs, a negative count, a context the prompt does not fit */
    CHECK(el_generate(m, NULL, NULL, &got) == EL_ERR_INVALID_ARG);
    p.n_predict = -1;
    CHECK(el_generate(m, "Hello", &p, &got) == EL_ERR_INVALID_ARG && got == NULL);
    p = el_generate_default_params();
    p.n_ctx = 2;
    CHECK(el_generate(m, "Once upon a time there was", &p, &got) == EL_ERR_INVALID_ARG);
    CHECK(strstr(el_last_error(), "no room in a context of 2") != NULL);
    el_adapter_free(ad);
    el_model_free(m);
    return TEST_PASS;
}

int main(void) {
    run_test("same_as_steps", test_same_as_steps);
    return tests_exit_code();
}
