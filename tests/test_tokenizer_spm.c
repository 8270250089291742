/* test_tokenizer_spm.c - the SentencePiece tokenizer beyond llama.cpp's vectors (those are in
 * test_vocab.c): llama2.c's tokenizer.bin with a hand-derived merge, round trips over real
 * multilingual text and over invalid UTF-8, and malformed tokenizer files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "testutil.h"
#include "tokenizer/vocab.h"

/* Concatenates the pieces of toks into a malloc'd buffer. */
static char *detokenize(const el_vocab *v, const el_tokens *toks, size_t *n_out) {
    size_t cap = 64 + toks->n * 16, n = 0;
    *n_out = 0;
    char *buf = malloc(cap);
    for (size_t i = 0; buf && i < toks->n; i++) {
        size_t len;
        while (el_vocab_token_to_piece(v, toks->ids[i], false, buf + n, cap - n, &len) != EL_OK) {
            cap = cap * 2 + len;
            char *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                return NULL;
            }
            buf = b;
        }
        n += len;
    }
    *n_out = n;
    return buf;
}

/* tokenize then detokenize gives the text back, after the one space put in front */
static bool roundtrips(const el_vocab *v, const char *text, size_t len) {
    el_tokens toks = {0};
    if (el_vocab_tokenize(v, text, len, false, false, &toks) != EL_OK) return false;
    size_t n = 0;
    char *back = detokenize(v, &toks, &n);
    bool ok = back && ((len == 0 && n == 0) ||
                       (n == len + 1 && back[0] == ' ' && memcmp(back + 1, text, len) == 0));
    if (!ok) test_note("round trip failed for \"%.*s\" -> \"%.*s\"", (int)len, text, (int)n, back);
    free(back);
    el_tokens_free(&toks);
    return ok;
}

static el_vocab *load_llama_spm(void) {
    const char *p = test_data_path("tokenizers/ggml-vocab-llama-spm.gguf");
    if (!p) return NULL;
    gguf_file *f;
    if (gguf_open(p, &f) != EL_OK) return NULL;
    el_vocab *v = NULL;
    el_vocab_load_gguf(f, &v);
    gguf_close(f);
    return v;
}

/* tok512.bin, scores and ids read off the file. Text " Once upon a time" (run.c puts a " " token
 * in front) starts as single characters; pairs that are tokens, with their scores:
 *   " O" -60, "ce" -72, " u" -59, "on" -30, " a" -2, " t" -0, "im" -29.
 * Merging the best pair each time (new pairs it makes in brackets):
 *   " t" -0 | " a" -2 | "im" -29 ["ime" -110] | "on" -30 | " u" -59 [" up" -91] |
 *   " O" -60 [" On" -62] | " On" -62 | "ce" -72 [" Once" -144] | " up" -91 [" upon" -148] |
 *   "ime" -110 [" time" -119] | " time" -119 | " Once" -144 | " upon" -148.
 * Result: " Once" 403, " upon" 407, " a" 261, " time" 378; BOS is 1. */
static int test_llama2c_once_upon_a_time(void) {
    const char *p = test_data_path("models/tok512.bin");
    if (!p) return test_skip("tok512.bin absent");
    el_vocab *v;
    CHECK(el_vocab_load_llama2c(p, 512, &v) == EL_OK);
    CHECK(v->kind == EL_VOCAB_SPM && !v->escape_spaces && v->bos == 1 && v->eos == 2);
    el_tokens t = {0};
    CHECK(el_vocab_tokenize(v, "Once upon a time", 16, true, false, &t) == EL_OK);
    const int32_t want[] = {1, 403, 407, 261, 378};
    CHECK(t.n == 5 && memcmp(t.ids, want, sizeof want) == 0);
    t.n = 0;
    /* "ж" is no token: after the " " (410) come its bytes 0xD0, 0xB6 as <0xD0> = 3 + 0xD0 and
     * <0xB6> = 3 + 0xB6 */
    CHECK(el_vocab_tokenize(v, "\xD0\xB6", 2, false, false, &t) == EL_OK);
    CHECK(t.n == 3 && t.ids[0] == 410 && t.ids[1] == 211 && t.ids[2] == 185);
    char buf[16];
    size_t n;
    CHECK(el_vocab_token_to_piece(v, 403, false, buf, sizeof buf, &n) == EL_OK && n == 5 &&
          memcmp(buf, " Once", 5) == 0);
    CHECK(el_vocab_token_to_piece(v, 198, false, buf, sizeof buf, &n) == EL_OK && n == 1 &&
          (unsigned char)buf[0] == 0xC3);
    CHECK(el_vocab_token_to_piece(v, 1, false, buf, sizeof buf, &n) == EL_OK && n == 0);
    CHECK(el_vocab_token_to_piece(v, 1, true, buf, sizeof buf, &n) == EL_OK && n == 5 &&
          memcmp(buf, "\n<s>\n", 5) == 0);
    const char *story = "Once upon a time, Lily saw a big red ball. \xE2\x82\xAC\xFF!";
    CHECK(roundtrips(v, story, strlen(story)));
    el_tokens_free(&t);
    el_vocab_free(v);
    return TEST_PASS;
}

static int test_llama2c_bad_files(void) {
    const char *p = test_data_path("models/tok512.bin");
    if (!p) return test_skip("tok512.bin absent");
    el_vocab *v;
    /* the file holds 512 entries, not 513 */
    CHECK(el_vocab_load_llama2c(p, 513, &v) == EL_ERR_MISMATCH && v == NULL);
    CHECK(strstr(el_last_error(), "tok512.bin") != NULL);
    CHECK(el_vocab_load_llama2c("/nonexistent/tok.bin", 512, &v) == EL_ERR_IO);

    char path[512];
    snprintf(path, sizeof path, "%s/bad.bin", test_tmp_dir());
    /* max_len 7, then an entry whose length runs past the end */
    const unsigned char bad[] = {7, 0, 0, 0, 0, 0, 0, 0, 100, 0, 0, 0, 'a', 'b'};
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    fwrite(bad, 1, sizeof bad, f);
    fclose(f);
    CHECK(el_vocab_load_llama2c(path, 1, &v) == EL_ERR_FORMAT && v == NULL);
    CHECK(strstr(el_last_error(), "bad.bin") != NULL);
    /* two whole entries are too few for run.c's fixed BOS and EOS ids */
    const unsigned char two[] = {7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 'a', 0, 0, 0, 0, 1, 0, 0, 0, 'b'};
    f = fopen(path, "wb");
    CHECK(f != NULL);
    fwrite(two, 1, sizeof two, f);
    fclose(f);
    CHECK(el_vocab_load_llama2c(path, 2, &v) == EL_ERR_FORMAT && v == NULL);
    return TEST_PASS;
}

/* Hand-picked edge cases on the llama vocabulary; ids read off its token list. */
static int test_spm_edges(void) {
    el_vocab *v = load_llama_spm();
    if (!v) return test_skip("llama-spm vocabulary absent");
    el_tokens t = {0};
    /* a lone invalid byte: "▁" is 29871, <0xFF> is 3 + 0xFF */
    CHECK(el_vocab_tokenize(v, "\xFF", 1, false, false, &t) == EL_OK);
    CHECK(t.n == 2 && t.ids[0] == 29871 && t.ids[1] == 258);
    t.n = 0;
    /* the empty text gives nothing, or only BOS */
    CHECK(el_vocab_tokenize(v, "", 0, false, false, &t) == EL_OK && t.n == 0);
    CHECK(el_vocab_tokenize(v, "", 0, true, false, &t) == EL_OK && t.n == 1 && t.ids[0] == 1);
    t.n = 0;
    /* without parse_special, "<s>" is text: not token 1 */
    CHECK(el_vocab_tokenize(v, "<s>", 3, false, false, &t) == EL_OK && t.n > 1);
    for (size_t i = 0; i < t.n; i++) CHECK(t.ids[i] != 1);
    el_tokens_free(&t);

    static const char *const cases[] = {
        "\xC3", "a\xE2\x82", "\xF0\x9F\x98", "\x80\x80 x", "\xED\xA0\x80", "\xC0\xAF",
        "\xF4\x90\x80\x80", "tab\tnl\ncr\r", "   ", "x\0y",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = i == 9 ? 3 : strlen(cases[i]);
        CHECK(roundtrips(v, cases[i], len));
    }
    el_vocab_free(v);
    return TEST_PASS;
}

/* Random byte strings, mostly not UTF-8: no crash, and the bytes come back. */
static int test_spm_random_bytes(void) {
    el_vocab *v = load_llama_spm();
    if (!v) return test_skip("llama-spm vocabulary absent");
    static const unsigned char alphabet[] = {'a', 'e', ' ', 'Z', '\n', 0x80, 0xBF, 0xC3, 0xA9, 0xE2,
                                             0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80, 0xFF, 0x00};
    test_rng rng = {12345};
    char buf[64];
    for (int iter = 0; iter < 2000; iter++) {
        size_t len = test_rand_u32(&rng) % sizeof buf;
        for (size_t i = 0; i < len; i++) {
            buf[i] = (char)alphabet[test_rand_u32(&rng) % sizeof alphabet];
        }
        /* the bytes of "▁" would come back as a space, as in SentencePiece */
        if (memmem(buf, len, "\xE2\x96\x81", 3)) continue;
        CHECK(roundtrips(v, buf, len));
    }
    el_vocab_free(v);
    return TEST_PASS;
}

/* Lines of real text in nine languages round-trip. */
static int test_spm_corpus(void) {
    el_vocab *v = load_llama_spm();
    if (!v) return test_skip("llama-spm vocabulary absent");
    static const char *const langs[] = {"en", "de", "fr", "es", "it", "pt", "pl", "ru", "nl"};
    int lines = 0;
    for (size_t l = 0; l < sizeof langs / sizeof langs[0]; l++) {
        char rel[64];
        snprintf(rel, sizeof rel, "corpus/%s.txt", langs[l]);
        const char *p = test_data_path(rel);
        if (!p) continue;
        FILE *f = fopen(p, "rb");
        CHECK(f != NULL);
        static char text[48 * 1024];
        size_t n = fread(text, 1, sizeof text, f);
        fclose(f);
        /* whole lines only (a cut line could end inside a character: fine, but not "real") */
        for (size_t start = 0, i = 0; i < n; i++) {
            if (text[i] != '\n') continue;
            CHECK(roundtrips(v, text + start, i - start));
            lines++;
            start = i + 1;
        }
    }
    el_vocab_free(v);
    if (lines == 0) return test_skip("corpus absent");
    test_note("%d lines", lines);
    return TEST_PASS;
}

int main(void) {
    run_test("llama2c_once_upon_a_time", test_llama2c_once_upon_a_time);
    run_test("llama2c_bad_files", test_llama2c_bad_files);
    run_test("spm_edges", test_spm_edges);
    run_test("spm_random_bytes", test_spm_random_bytes);
    run_test("spm_corpus", test_spm_corpus);
    return tests_exit_code();
}
