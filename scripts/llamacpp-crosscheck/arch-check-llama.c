/* arch-check-llama.c - llama.cpp's side of arch-check: tokenizes PROMPT, decodes it and then
 * N_GEN greedy tokens with libllama, and writes what edgelora's side compares with to OUT:
 * i32 n_prompt, n_gen, n_vocab; i32 tokens[n_prompt + n_gen] (the prompt, then the greedy
 * tokens); f32 logits[n_gen][n_vocab] (step i's: after the prompt and i greedy tokens).
 * Each LORA SCALE pair is a GGUF adapter libllama loads and applies at SCALE (all of them at
 * once, their terms added, as --lora-scaled does).
 * A program of its own because edgelora's GGUF reader and ggml's export the same names.
 * Usage: arch-check-llama MODEL.gguf PROMPT N_GEN N_CTX OUT [LORA SCALE]... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

enum { MAX_ADAPTERS = 8 };

int main(int argc, char **argv) {
    if (argc < 6 || (argc - 6) % 2 != 0 || argc - 6 > 2 * MAX_ADAPTERS) {
        fprintf(stderr, "usage: arch-check-llama MODEL.gguf PROMPT N_GEN N_CTX OUT "
                        "[LORA SCALE]... (at most %d adapters)\n", MAX_ADAPTERS);
        return 2;
    }
    int n_gen = atoi(argv[3]), n_ctx = atoi(argv[4]);
    llama_backend_init();
    struct llama_model *lm = llama_model_load_from_file(argv[1], llama_model_default_params());
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = cp.n_batch = (uint32_t)n_ctx;
    cp.n_threads = cp.n_threads_batch = 2;
    struct llama_context *lc = lm ? llama_init_from_model(lm, cp) : NULL;
    if (!lc) {
        fprintf(stderr, "%s: llama.cpp cannot load it\n", argv[1]);
        return 1;
    }
    struct llama_adapter_lora *adapters[MAX_ADAPTERS];
    float scales[MAX_ADAPTERS];
    int n_adapters = (argc - 6) / 2;
    for (int i = 0; i < n_adapters; i++) {
        adapters[i] = llama_adapter_lora_init(lm, argv[6 + 2 * i]);
        scales[i] = (float)atof(argv[7 + 2 * i]);
        if (!adapters[i]) {
            fprintf(stderr, "%s: llama.cpp cannot load the adapter %s\n", argv[1],
                    argv[6 + 2 * i]);
            return 1;
        }
    }
    if (n_adapters && llama_set_adapters_lora(lc, adapters, (size_t)n_adapters, scales) != 0) {
        fprintf(stderr, "%s: llama_set_adapters_lora failed\n", argv[1]);
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(lm);
    int32_t n_vocab = llama_vocab_n_tokens(vocab);
    int32_t *tok = malloc(sizeof *tok * (size_t)n_ctx);
    float *logits = malloc(sizeof *logits * (size_t)n_vocab * (size_t)(n_gen > 0 ? n_gen : 1));
    int32_t n_prompt = llama_tokenize(vocab, argv[2], (int32_t)strlen(argv[2]), tok, n_ctx, true,
                                      false);
    if (!tok || !logits || n_prompt <= 0 || n_prompt + n_gen > n_ctx) {
        fprintf(stderr, "%s: the prompt does not fit\n", argv[1]);
        return 1;
    }
    int32_t n = n_prompt;
    for (int step = 0; step < n_gen; step++) {
        int32_t first = step == 0 ? 0 : n - 1;
        if (llama_decode(lc, llama_batch_get_one(tok + first, n - first)) != 0) {
            fprintf(stderr, "%s: llama_decode failed\n", argv[1]);
            return 1;
        }
        const float *l = llama_get_logits_ith(lc, -1);
        memcpy(logits + (size_t)step * n_vocab, l, sizeof *l * (size_t)n_vocab);
        int32_t best = 0;
        for (int32_t i = 1; i < n_vocab; i++)
            if (l[i] > l[best]) best = i;
        tok[n++] = best;
    }
    FILE *f = fopen(argv[5], "wb");
    int32_t head[3] = {n_prompt, n_gen, n_vocab};
    int ok = f && fwrite(head, sizeof head, 1, f) == 1 &&
             fwrite(tok, sizeof *tok, (size_t)n, f) == (size_t)n &&
             fwrite(logits, sizeof *logits * (size_t)n_vocab, (size_t)n_gen, f) == (size_t)n_gen;
    if (f) fclose(f);
    llama_free(lc);
    llama_model_free(lm);
    free(tok);
    free(logits);
    return ok ? 0 : 1;
}
