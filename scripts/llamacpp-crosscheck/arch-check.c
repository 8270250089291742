/* arch-check.c - edgelora's side of arch-check: reads what arch-check-llama wrote (llama.cpp's
 * prompt ids, its greedy tokens and the logits of each step), tokenizes the same prompt and
 * feeds edgelora the same tokens, and checks: the prompt's ids are identical; at every step
 * edgelora's best token is llama.cpp's, unless llama.cpp's own two best logits are within TIE
 * (relative to its largest) of each other; no logit differs by more than TOL relative to the
 * largest. Fed the same tokens, the two runs cannot drift apart after a near tie.
 * With --lora ADAPTER SCALE (repeatable; a GGUF file or a PEFT folder, edgelora reads both) the
 * sequence is bound to the adapters, and the adapters must move the prompt's logits (the base's,
 * in a context of its own, against llama.cpp's adapted ones) by more than 10 TOL: an adapter that
 * changed nothing on both sides would otherwise pass.
 * Usage: arch-check MODEL.gguf PROMPT LLAMA_OUT N_CTX [TOL [TIE]] [--lora ADAPTER SCALE]...
 * Prints one line; exit status 1 if the models disagree. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelora.h"

enum { MAX_ADAPTERS = 8 };

static int32_t argmax(const float *x, int32_t n, float *margin) {
    int32_t best = 0, second = -1;
    for (int32_t i = 1; i < n; i++) {
        if (x[i] > x[best]) {
            second = best;
            best = i;
        } else if (second < 0 || x[i] > x[second]) {
            second = i;
        }
    }
    *margin = second >= 0 ? x[best] - x[second] : INFINITY;
    return best;
}

/* max |a - b| / max(1, max |b|) */
static double rel_diff(const float *a, const float *b, int32_t n) {
    double d = 0, s = 1;
    for (int32_t i = 0; i < n; i++) {
        if (fabs(a[i] - b[i]) > d) d = fabs(a[i] - b[i]);
        if (fabs(b[i]) > s) s = fabs(b[i]);
    }
    return d / s;
}

/* The base's logits after the prompt, in a context of its own without adapters. */
static int base_logits(el_model *em, const el_context_params *cp, el_batch *b, float *out,
                       int32_t n_vocab) {
    el_context *ec = NULL;
    int ok = el_context_create(em, cp, &ec) == EL_OK && el_decode(ec, b) == EL_OK;
    if (ok) memcpy(out, el_get_logits(ec, b->n_rows - 1), sizeof *out * (size_t)n_vocab);
    el_context_free(ec);
    return ok;
}

int main(int argc, char **argv) {
    int n_pos = 1;
    while (n_pos < argc && strcmp(argv[n_pos], "--lora") != 0) n_pos++;
    int n_adapters = (argc - n_pos) / 3;
    for (int i = 0; i < n_adapters; i++)
        if (strcmp(argv[n_pos + 3 * i], "--lora") != 0) n_adapters = MAX_ADAPTERS + 1;
    if (n_pos < 5 || n_pos > 7 || (argc - n_pos) % 3 != 0 || n_adapters > MAX_ADAPTERS) {
        fprintf(stderr, "usage: arch-check MODEL.gguf PROMPT LLAMA_OUT N_CTX [TOL [TIE]] "
                        "[--lora ADAPTER SCALE]... (at most %d adapters)\n", MAX_ADAPTERS);
        return 2;
    }
    const char *path = argv[1], *prompt = argv[2];
    int32_t n_ctx = atoi(argv[4]);
    double tol = n_pos > 5 ? atof(argv[5]) : 1e-2, tie = n_pos > 6 ? atof(argv[6]) : 0.05;
    FILE *f = fopen(argv[3], "rb");
    int32_t head[3];
    if (!f || fread(head, sizeof head, 1, f) != 1 || head[0] <= 0 || head[1] < 1 ||
        head[0] + head[1] > n_ctx || head[2] <= 0) {
        printf("%s: FAIL cannot read %s\n", path, argv[3]);
        return 1;
    }
    int32_t n_prompt = head[0], n_gen = head[1], n_vocab = head[2];
    int32_t *tok = malloc(sizeof *tok * (size_t)(n_prompt + n_gen));
    float *ll = malloc(sizeof *ll * (size_t)n_vocab * (size_t)n_gen);
    int32_t *et = malloc(sizeof *et * (size_t)n_ctx);
    int32_t *pos = malloc(sizeof *pos * (size_t)n_ctx), *seq = calloc((size_t)n_ctx, sizeof *seq);
    int8_t *want = calloc((size_t)n_ctx, 1);
    if (!tok || !ll || !et || !pos || !seq || !want ||
        fread(tok, sizeof *tok, (size_t)(n_prompt + n_gen), f) != (size_t)(n_prompt + n_gen) ||
        fread(ll, sizeof *ll * (size_t)n_vocab, (size_t)n_gen, f) != (size_t)n_gen) {
        printf("%s: FAIL cannot read %s\n", path, argv[3]);
        return 1;
    }
    fclose(f);

    el_model *em = NULL;
    el_context *ec = NULL;
    el_context_params cp = el_context_default_params();
    cp.n_ctx = cp.n_batch = n_ctx;
    cp.n_threads = 2;
    el_model_info info;
    if (el_model_load(path, NULL, &em) != EL_OK || el_context_create(em, &cp, &ec) != EL_OK ||
        el_model_get_info(em, &info) != EL_OK) {
        printf("%s: FAIL edgelora cannot load it: %s\n", path, el_last_error());
        return 1;
    }
    el_binding bind[MAX_ADAPTERS];
    for (int i = 0; i < n_adapters; i++) {
        const char *lora = argv[n_pos + 3 * i + 1];
        bind[i].scale = (float)atof(argv[n_pos + 3 * i + 2]);
        if (el_adapter_load(em, lora, &bind[i].adapter) != EL_OK) {
            printf("%s: FAIL edgelora cannot load the adapter %s: %s\n", path, lora,
                   el_last_error());
            return 1;
        }
    }
    if (n_adapters && el_context_bind(ec, 0, bind, n_adapters) != EL_OK) {
        printf("%s: FAIL edgelora cannot bind the adapters: %s\n", path, el_last_error());
        return 1;
    }
    size_t ne = 0;
    if (info.n_vocab != n_vocab ||
        el_tokenize(em, prompt, strlen(prompt), true, false, et, (size_t)n_ctx, &ne) != EL_OK ||
        ne != (size_t)n_prompt || memcmp(et, tok, ne * sizeof *et) != 0) {
        printf("%s: FAIL the prompt's ids differ (llama.cpp %d tokens, edgelora %zu) or the "
               "vocabulary sizes (%d, %d)\n", path, n_prompt, ne, n_vocab, info.n_vocab);
        return 1;
    }
    for (int32_t i = 0; i < n_ctx; i++) pos[i] = i;
    want[n_prompt - 1] = 1;
    int same = 0, ties = 0, ok = 1;
    double worst = 0, moved = 0;
    if (n_adapters) {
        float *base = malloc(sizeof *base * (size_t)n_vocab);
        el_batch b = {.n_rows = n_prompt, .token = tok, .pos = pos, .seq_id = seq, .logits = want};
        if (!base || !base_logits(em, &cp, &b, base, n_vocab)) {
            printf("%s: FAIL the base's prompt logits: %s\n", path, el_last_error());
            return 1;
        }
        moved = rel_diff(base, ll, n_vocab);
        free(base);
    }
    for (int32_t step = 0; step < n_gen && ok; step++) {
        int32_t first = step == 0 ? 0 : n_prompt + step - 1, count = step == 0 ? n_prompt : 1;
        el_batch b = {.n_rows = count, .token = tok + first, .pos = pos + first, .seq_id = seq,
                      .logits = step == 0 ? want : NULL};
        if (el_decode(ec, &b) != EL_OK) {
            printf("%s: FAIL decode at step %d: %s\n", path, step, el_last_error());
            return 1;
        }
        const float *want_l = ll + (size_t)step * n_vocab, *got = el_get_logits(ec, count - 1);
        float ml, me;
        int32_t a = argmax(want_l, n_vocab, &ml), e = argmax(got, n_vocab, &me);
        double d = rel_diff(got, want_l, n_vocab);
        if (d > worst) worst = d;
        if (a == e) {
            same++;
        } else if (ml <= tie * fmax(1.0, fabs(want_l[a]))) {
            ties++;
        } else {
            printf("%s: FAIL step %d: llama.cpp picks %d, edgelora %d (llama.cpp's margin %.3g)\n",
                   path, step, a, e, ml);
            ok = 0;
        }
    }
    if (ok && worst > tol) {
        printf("%s: FAIL logits differ by %.3g (relative) > %.3g\n", path, worst, tol);
        ok = 0;
    }
    if (ok && n_adapters && moved <= 10 * tol) {
        printf("%s: FAIL the adapters move the prompt's logits by %.3g only (relative), not more "
               "than 10 x %.3g\n", path, moved, tol);
        ok = 0;
    }
    if (ok) {
        printf("%s: OK %d prompt ids identical; %d/%d greedy tokens identical (%d near ties); "
               "logits within %.2e", path, n_prompt, same, n_gen, ties, worst);
        if (n_adapters) printf(" (the adapters move them by %.2e)", moved);
        printf("; tokens");
        for (int32_t i = 0; i < n_gen && i < 10; i++) printf(" %d", tok[n_prompt + i]);
        printf("%s\n", n_gen > 10 ? " ..." : "");
    }
    el_context_free(ec);
    for (int i = 0; i < n_adapters; i++) el_adapter_free(bind[i].adapter);
    el_model_free(em);
    free(tok);
    free(ll);
    free(et);
    free(pos);
    free(seq);
    free(want);
    return ok ? 0 : 1;
}
