/* test_tokenizer_wpm.c - WordPiece normalization cases beyond llama.cpp's vectors (those are in
 * test_vocab.c). Expected ids are read off the bert-bge GGUF's token list: "▁unicode" 27260,
 * "▁cafe" 7668, "▁中" 1746, "▁文" 1861, "▁«" 1077, "▁hi" 7632, "▁»" 1090, "▁hello" 7592,
 * "▁world" 2088, "▁naive" 15743, "▁istanbul" 9960; [UNK] is 100. */
#include <stdio.h>
#include <string.h>

#include "formats/gguf.h"
#include "testutil.h"
#include "tokenizer/vocab.h"

static bool same(const el_tokens *t, const int32_t *want, size_t n) {
    bool ok = t->n == n && memcmp(t->ids, want, n * sizeof *want) == 0;
    if (!ok) {
        test_note("got %zu tokens:", t->n);
        for (size_t i = 0; i < t->n; i++) test_note("  %d", (int)t->ids[i]);
    }
    return ok;
}

static int test_wpm_normalization(void) {
    const char *p = test_data_path("tokenizers/ggml-vocab-bert-bge.gguf");
    if (!p) return test_skip("bert-bge vocabulary absent");
    gguf_file *f;
    el_vocab *v;
    CHECK(gguf_open(p, &f) == EL_OK);
    CHECK(el_vocab_load_gguf(f, &v) == EL_OK);
    gguf_close(f);
    static const struct {
        const char *text;
        int32_t want[4];
        size_t n;
    } cases[] = {
        {"\xC3\x9Cn\xC3\xAF" "c\xC3\xB6" "d\xC3\xA9", {27260}, 1}, /* Ünïcödé: case, accents */
        {"Cafe\xCC\x81", {7668}, 1},                  /* e + combining acute: the mark goes */
        {"\xE4\xB8\xAD\xE6\x96\x87", {1746, 1861}, 2}, /* 中文: one word per ideograph */
        {"\xC2\xABhi\xC2\xBB", {1077, 7632, 1090}, 3}, /* «hi»: non-ASCII punctuation splits */
        {"hel\x01lo", {7592}, 1},                      /* a control character is dropped */
        {"hel\xE2\x80\x8Blo", {7592}, 1},              /* so is U+200B (a format character) */
        {"hel\xFFlo", {7592}, 1},                      /* and an invalid byte */
        {"hello\xC2\xA0world", {7592, 2088}, 2},       /* no-break space separates */
        {"hello\xE3\x80\x80world", {7592, 2088}, 2},   /* so does the ideographic space */
        {"NA\xC3\x8FVE", {15743}, 1},                  /* NAÏVE */
        {"\xC4\xB0stanbul", {9960}, 1},                /* İ decomposes to I + dot above */
        {"\xF0\x9F\xA6\x99", {100}, 1},                /* an emoji: no piece, so [UNK] */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        el_tokens t = {0};
        CHECK(el_vocab_tokenize(v, cases[i].text, strlen(cases[i].text), false, false, &t) == EL_OK);
        if (!same(&t, cases[i].want, cases[i].n)) {
            test_note("case %zu", i);
            return TEST_FAIL;
        }
        el_tokens_free(&t);
    }
    /* any bytes: no crash, at most one token per byte */
    test_rng rng = {7};
    char buf[48];
    for (int iter = 0; iter < 2000; iter++) {
        size_t len = test_rand_u32(&rng) % sizeof buf;
        for (size_t i = 0; i < len; i++) buf[i] = (char)test_rand_u32(&rng);
        el_tokens t = {0};
        CHECK(el_vocab_tokenize(v, buf, len, false, false, &t) == EL_OK);
        CHECK(t.n <= len);
        el_tokens_free(&t);
    }
    el_vocab_free(v);
    return TEST_PASS;
}

int main(void) {
    run_test("wpm_normalization", test_wpm_normalization);
    return tests_exit_code();
}
