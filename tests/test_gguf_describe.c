/* test_gguf_describe.c - el_file_describe on the shared files: the text must carry the facts the
 * data READMEs state (versions, shapes, counts), and an unknown file is a format error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgelora-tools.h"
#include "testutil.h"

/* Describes rel and checks that every one of the NULL-terminated substrings is in the text. */
static int describe_has(const char *rel, const char *const *want) {
    const char *path = test_data_path(rel);
    if (!path) return test_skip(rel);
    char *text = NULL;
    el_status st = el_file_describe(path, &text);
    if (st) test_note("%s", el_last_error());
    CHECK(st == EL_OK && text);
    for (int i = 0; want[i]; i++) {
        if (!strstr(text, want[i])) test_note("missing \"%s\" in:\n%.2000s", want[i], text);
        CHECK(strstr(text, want[i]) != NULL);
    }
    CHECK(strstr(text, path) != NULL);
    free(text);
    return TEST_PASS;
}

static int test_describe_tiny_llama(void) {
    static const char *const want[] = {
        "GGUF version 3, 18 keys, 12 tensors",
        "general.architecture: string = \"llama\"",
        "llama.embedding_length: u32 = 8",
        "tokenizer.ggml.tokens: array of string [32000] = [\"<unk>\", \"<s>\", \"</s>\"",
        "token_embd.weight: f16 [8, 32000] 512000 bytes",
        "blk.0.attn_norm.weight: f32 [8] 32 bytes",
        "total: 12 tensors",
        NULL};
    return describe_has("models/llama-2-tiny-random.gguf", want);
}

static int test_describe_vocab(void) {
    static const char *const want[] = {"GGUF version 3", "0 tensors",
                                       "tokenizer.ggml.model: string = \"gpt2\"",
                                       "tokenizer.ggml.merges: array of string [50000]", NULL};
    return describe_has("tokenizers/ggml-vocab-gpt-2.gguf", want);
}

static int test_describe_llama2c(void) {
    static const char *const want[] = {"llama2.c checkpoint", "dim: 64",
                                       "hidden_dim: 172",     "n_layers: 5",
                                       "n_heads: 8",          "n_kv_heads: 4",
                                       "vocab_size: 512",     "seq_len: 512",
                                       "260032 parameters",   NULL};
    return describe_has("models/stories260K.bin", want);
}

static int test_describe_tokenizer(void) {
    static const char *const want[] = {"llama2.c tokenizer", "tokens: 512", "max_token_length: 7",
                                       "\"<unk>\" (0), \"\\n<s>\\n\" (0)", NULL};
    return describe_has("models/tok512.bin", want);
}

static int test_describe_bad(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/notes.txt", test_tmp_dir());
    FILE *fp = fopen(path, "w");
    CHECK(fp);
    fputs("just some text, not a model\n", fp);
    fclose(fp);
    char *text = (char *)1;
    CHECK(el_file_describe(path, &text) == EL_ERR_FORMAT && text == NULL);
    CHECK(strstr(el_last_error(), path) != NULL);
    CHECK(el_file_describe("/nonexistent.gguf", &text) == EL_ERR_IO);
    /* a broken GGUF gives the reader's own message */
    static const char bad[] = "tests/data/bad/tensor_overlap.gguf";
    if (access(bad, R_OK) == 0)
        CHECK(el_file_describe(bad, &text) == EL_ERR_FORMAT && strstr(el_last_error(), "overlap"));
    return TEST_PASS;
}

int main(void) {
    run_test("describe_tiny_llama", test_describe_tiny_llama);
    run_test("describe_vocab", test_describe_vocab);
    run_test("describe_llama2c", test_describe_llama2c);
    run_test("describe_tokenizer", test_describe_tokenizer);
    run_test("describe_bad", test_describe_bad);
    return tests_exit_code();
}
