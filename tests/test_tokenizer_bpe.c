/* test_tokenizer_bpe.c - the pre-tokenizers against splits derived by hand from the published
 * regexes (each one also checked with Python's `regex` module applying the same expressions
 * stage by stage, as llama.cpp does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "testutil.h"
#include "tokenizer/pretokenize.h"

/* Splits text with the named pre-tokenizer and compares with the NULL-terminated word list. */
static int check_split(const char *pre, const char *text, size_t len, const char *const *want) {
    const el_pretok *p;
    if (el_pretok_find(pre, &p) != EL_OK) {
        test_note("%s", el_last_error());
        return TEST_FAIL;
    }
    el_words w = {0};
    CHECK(el_pretok_split(p, text, len, &w) == EL_OK);
    size_t n = 0, start = 0;
    int rc = TEST_PASS;
    for (; want[n]; n++) {
        size_t wl = strlen(want[n]);
        if (n >= w.n || w.ends[n] - start != wl || memcmp(text + start, want[n], wl) != 0) {
            test_note("%s: word %zu of \"%s\" differs from \"%s\"", pre, n, text, want[n]);
            rc = TEST_FAIL;
            break;
        }
        start = w.ends[n];
    }
    if (rc == TEST_PASS && n != w.n) {
        test_note("%s: \"%s\" gives %zu words, expected %zu", pre, text, w.n, n);
        rc = TEST_FAIL;
    }
    el_words_free(&w);
    return rc;
}

/* A macro only to return from the calling test on failure, as CHECK does. */
#define SPLIT(pre, text, ...)                                                              \
    do {                                                                                   \
        static const char *const want_[] = {__VA_ARGS__, NULL};                            \
        if (check_split(pre, text, sizeof(text) - 1, want_) != TEST_PASS) {                \
            return TEST_FAIL;                                                              \
        }                                                                                  \
    } while (0)

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static int test_split_gpt2(void) {
    SPLIT("gpt-2", "Hello world", "Hello", " world");   /* a space joins the next word */
    SPLIT("gpt-2", "   ab", "  ", " ab");               /* \s+(?!\S) gives back the last space */
    SPLIT("gpt-2", "I'm fine", "I", "'m", " fine");     /* contraction */
    SPLIT("gpt-2", "I'M", "I", "'", "M");               /* contractions are case-sensitive */
    SPLIT("gpt-2", "abc123 4", "abc", "123", " 4");     /* letters, numbers apart */
    SPLIT("gpt-2", "a  \n b", "a", "  \n", " b");       /* any \s run, minus the last */
    SPLIT("gpt-2", "x!!  ", "x", "!!", "  ");           /* spaces at the end stay together */
    SPLIT("gpt-2", "\tabc", "\t", "abc");               /* only ' ' may lead a word */
    SPLIT("gpt-2", "日本語 テキスト", "日本語", " テキスト"); /* CJK and kana are \p{L} */
    SPLIT("gpt-2", "Привет, мир", "Привет", ",", " мир");
    SPLIT("gpt-2", "a\xFF" "b", "a", "\xFF", "b");       /* an invalid byte is U+FFFD: \p{S} */
    SPLIT("gpt-2", " \xFF\xFE!", " \xFF\xFE!");          /* ...so it joins a punctuation run */
    SPLIT("mpt", "Hello world", "Hello", " world");     /* mpt, olmo, ... are GPT-2's regex */
    const el_pretok *p;
    el_words w = {0};
    CHECK(el_pretok_find("gpt-2", &p) == EL_OK);
    CHECK(el_pretok_split(p, "", 0, &w) == EL_OK && w.n == 0);
    el_words_free(&w);
    return TEST_PASS;
}

/* llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *         ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+   (qwen2: \p{N} instead of {1,3}) */
static int test_split_llama3_qwen2(void) {
    SPLIT("llama-bpe", "Hello world", "Hello", " world");
    SPLIT("llama-bpe", "I'M here", "I", "'M", " here");   /* case-insensitive contraction */
    SPLIT("llama-bpe", "12345", "123", "45");             /* digits in threes */
    SPLIT("llama-bpe", "(hello", "(hello");               /* one non-letter may lead letters */
    SPLIT("llama-bpe", "a\n\nb", "a", "\n\n", "b");       /* ...but not CR or LF */
    SPLIT("llama-bpe", "x ...\n\ny", "x", " ...\n\n", "y"); /* punctuation takes the newlines */
    /* \s*[\r\n]+ ends at the last newline; then \s+(?!\S) leaves one space for " x" */
    SPLIT("llama-bpe", "  \n  x", "  \n", " ", " x");
    SPLIT("qwen2", "12345", "1", "2", "3", "4", "5");       /* single digits */
    SPLIT("qwen2", "I'M", "I", "'M");
    return TEST_PASS;
}

static int test_split_falcon_default_starcoder(void) {
    /* starcoder: \p{N} first, then GPT-2 in each piece */
    SPLIT("starcoder", "abc123 456", "abc", "1", "2", "3", " ", "4", "5", "6");
    /* falcon: [\p{P}\$\+<=>\^~\|`]+ first (so "'" stands alone), GPT-2, then [0-9]{3} */
    SPLIT("falcon", "don't stop", "don", "'", "t", " stop");
    SPLIT("falcon", "12345", "123", "45");
    SPLIT("falcon", "a=b", "a", "=", "b");
    SPLIT("falcon", "x `y`", "x", " ", "`", "y", "`");
    SPLIT("falcon", " `x", " ", "`", "x");
    /* default: like falcon but without '`', and \p{N}+ before [0-9]{3} */
    SPLIT("default", " `x", " `", "x");
    SPLIT("default", "x 1234567", "x", " ", "123", "456", "7");
    return TEST_PASS;
}

static int test_split_deepseek(void) {
    /* deepseek-llm: [\r\n], \s?[letters]+, \s?[punct]+, \s+$, [CJK]+, \p{N}+ */
    SPLIT("deepseek-llm", "Hello 世界 123\n", "Hello", " ", "世界", " ", "123", "\n");
    /* deepseek-coder: [\r\n], \s?\p{L}+, \s?\p{P}+, [CJK]+, \p{N} */
    SPLIT("deepseek-coder", "foo(1)", "foo", "(", "1", ")");
    SPLIT("deepseek-coder", "a  b", "a", " ", " b");
    return TEST_PASS;
}

static int test_unknown_pre(void) {
    const el_pretok *p;
    CHECK(el_pretok_find("no-such-pre", &p) == EL_ERR_UNSUPPORTED);
    CHECK(strstr(el_last_error(), "no-such-pre") != NULL);
    return TEST_PASS;
}

/* Every pre-tokenizer on random bytes and on long runs: the words must tile the input, and the
 * long runs must not take quadratic time. */
static int test_split_any_bytes(void) {
    static const char *const pres[] = {"default", "gpt-2", "llama3", "qwen2", "starcoder",
                                       "falcon", "deepseek-llm", "deepseek-coder"};
    enum { LEN = 200000 };
    char *buf = malloc(LEN);
    CHECK(buf != NULL);
    test_rng rng = {42};
    el_words w = {0};
    for (int kind = 0; kind < 6; kind++) {
        for (size_t i = 0; i < LEN; i++) {
            static const char pattern[] = " \n 1a'\xC3";
            buf[i] = kind == 0 ? (char)test_rand_u32(&rng)
                   : kind == 1 ? ' '
                   : kind == 2 ? '7'
                   : kind == 3 ? 'a'
                   : kind == 4 ? (i + 1 < LEN ? ' ' : 'x')
                               : pattern[test_rand_u32(&rng) % (sizeof pattern - 1)];
        }
        for (size_t k = 0; k < sizeof pres / sizeof pres[0]; k++) {
            const el_pretok *p;
            CHECK(el_pretok_find(pres[k], &p) == EL_OK);
            CHECK(el_pretok_split(p, buf, LEN, &w) == EL_OK);
            CHECK(w.n > 0 && w.ends[w.n - 1] == LEN);
            for (size_t i = 1; i < w.n; i++) {
                CHECK(w.ends[i] > w.ends[i - 1]);
            }
        }
    }
    el_words_free(&w);
    free(buf);
    return TEST_PASS;
}

int main(void) {
    run_test("split_gpt2", test_split_gpt2);
    run_test("split_llama3_qwen2", test_split_llama3_qwen2);
    run_test("split_falcon_default_starcoder", test_split_falcon_default_starcoder);
    run_test("split_deepseek", test_split_deepseek);
    run_test("unknown_pre", test_unknown_pre);
    run_test("split_any_bytes", test_split_any_bytes);
    return tests_exit_code();
}
