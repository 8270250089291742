/* test_tokenizer_bpe.c - byte-level BPE against llama.cpp's published test vectors (gpt-2,
 * falcon, mpt: every case id for id), decode(encode(x)) == x on those, on corpus text in nine
 * languages and on random bytes; and the pre-tokenizers against splits derived by hand from the
 * published regexes (each one also checked with Python's `regex` module applying the same
 * expressions stage by stage, as llama.cpp does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "testutil.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/vocab.h"

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
    /* deepseek-v3: \p{N}{1,3}, [kanji kana]+, then [ascii punct][A-Za-z]+|
     * [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
    SPLIT("deepseek-v3", "Hello, 世界12345", "Hello", ",", " ", "世界", "123", "45");
    /* the space takes the period first (leftmost match), so ".NET" does not form */
    SPLIT("deepseek-v3", "use .NET now", "use", " .", "NET", " now");
    SPLIT("deepseek-v3", "x = 1;\n\n", "x", " =", " ", "1", ";\n\n");
    return TEST_PASS;
}

/* gpt-4o (o200k): [^\r\n\p{L}\p{N}]?U*W+C?|[^\r\n\p{L}\p{N}]?U+W*C?|\p{N}{1,3}|
 *  ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+  with U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}],
 * W = [\p{Ll}\p{Lm}\p{Lo}\p{M}], C the contractions; tekken: no C, \p{N} alone. */
static int test_split_gpt4o_tekken(void) {
    /* U* takes HELLO, W+ world; the space leads " isn", which takes the contraction */
    SPLIT("gpt-4o", "HELLOworld isn't", "HELLOworld", " isn't");
    SPLIT("gpt-4o", "helloWorld", "hello", "World"); /* W+ stops at an uppercase letter */
    SPLIT("gpt-4o", "HELLO", "HELLO");               /* no W: the second alternative, U+ */
    SPLIT("gpt-4o", "привЕТ", "прив", "ЕТ");         /* Cyrillic case counts as well */
    /* "/" leads "b"; LF may not lead, so it is \s*[\r\n]+ */
    SPLIT("gpt-4o", "a/b\n/c", "a", "/b", "\n", "/c");
    SPLIT("gpt-4o", "1234567", "123", "456", "7");
    SPLIT("tekken", "I'm 12", "I", "'m", " ", "1", "2"); /* "'" leads "m" */
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
    static const char *const pres[] = {"default",      "gpt-2",          "llama3", "qwen2",
                                       "starcoder",    "falcon",         "gpt-4o", "tekken",
                                       "deepseek-llm", "deepseek-coder", "deepseek-v3"};
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

/* ---------------------------------------------------------------- with vocabularies */

/* The whole file (NUL-terminated) or NULL. */

/* The vocabulary of tokenizers/ggml-vocab-<name>.gguf, or NULL if the file is absent. */
static el_vocab *load_vocab(const char *name, el_status *st) {
    char rel[128];
    snprintf(rel, sizeof rel, "tokenizers/ggml-vocab-%s.gguf", name);
    const char *path = test_data_path(rel);
    *st = EL_OK;
    if (!path) return NULL;
    gguf_file *f = NULL;
    el_vocab *v = NULL;
    if ((*st = gguf_open(path, &f)) != EL_OK) return NULL;
    *st = el_vocab_load_gguf(f, &v);
    gguf_close(f); /* the vocabulary keeps no pointer into the file */
    return v;
}

/* Appends the pieces of the tokens to a malloc'ed text. */
static int detokenize(const el_vocab *v, const el_tokens *t, char **text, size_t *len) {
    size_t cap = 64, n = 0;
    char *buf = malloc(cap);
    CHECK(buf != NULL);
    for (size_t i = 0; i < t->n; i++) {
        size_t k = 0;
        el_status st = el_vocab_token_to_piece(v, t->ids[i], false, buf + n, cap - n, &k);
        if (st == EL_ERR_INVALID_ARG && k > cap - n) {
            cap = (n + k) * 2;
            char *nb = realloc(buf, cap);
            CHECK(nb != NULL);
            buf = nb;
            st = el_vocab_token_to_piece(v, t->ids[i], false, buf + n, cap - n, &k);
        }
        if (st != EL_OK) {
            free(buf);
            test_note("token_to_piece(%d): %s", (int)t->ids[i], el_last_error());
            return TEST_FAIL;
        }
        n += k;
    }
    *text = buf;
    *len = n;
    return TEST_PASS;
}

/* Tokenizes text, compares with want (if not NULL) and checks that the pieces give back the
 * text. */
static int check_text(const el_vocab *v, const char *text, size_t len, const el_tokens *want) {
    el_tokens got = {0};
    char *back = NULL;
    size_t back_len = 0;
    int rc = TEST_FAIL;
    if (el_vocab_tokenize(v, text, len, false, false, &got) != EL_OK) {
        test_note("tokenize: %s", el_last_error());
    } else if (want && (got.n != want->n ||
                        (got.n && memcmp(got.ids, want->ids, got.n * sizeof *got.ids)))) {
        test_note("\"%.*s\": %zu tokens, expected %zu", (int)len, text, got.n, want->n);
        for (size_t i = 0; i < got.n || i < want->n; i++) {
            test_note("  %zu: got %d, want %d", i, i < got.n ? (int)got.ids[i] : -1,
                      i < want->n ? (int)want->ids[i] : -1);
        }
    } else if (detokenize(v, &got, &back, &back_len) == TEST_PASS) {
        if (back_len == len && memcmp(back, text, len) == 0) {
            rc = TEST_PASS;
        } else {
            test_note("\"%.*s\" decodes as \"%.*s\"", (int)len, text, (int)back_len, back);
        }
    }
    free(back);
    el_tokens_free(&got);
    return rc;
}

/* llama.cpp's test-tokenizer-0 vectors, every case id for id. */
static int check_vectors(const char *name) {
    el_status st;
    el_vocab *v = load_vocab(name, &st);
    if (!v && st == EL_OK) return test_skip("tokenizer vectors not found");
    if (!v) {
        test_note("%s", el_last_error());
        return TEST_FAIL;
    }
    char file[128];
    snprintf(file, sizeof file, "ggml-vocab-%s.gguf", name);
    test_vectors tv;
    int rc = test_vectors_open(file, &tv) ? TEST_PASS : TEST_FAIL;
    size_t cases = 0, len;
    const char *text;
    el_tokens want = {0};
    while (rc == TEST_PASS && test_vectors_next(&tv, &text, &len)) {
        want.n = 0;
        for (size_t i = 0; i < tv.n_ids; i++)
            if (el_tokens_push(&want, tv.ids[i]) != EL_OK) rc = TEST_FAIL;
        if (rc == TEST_PASS) rc = check_text(v, text, len, &want);
        if (rc != TEST_PASS) test_note("%s: case %zu", name, cases);
        cases++;
    }
    if (rc == TEST_PASS && tv.cur != NULL) {
        test_note("%s: .inp and .out disagree after %zu cases", name, cases);
        rc = TEST_FAIL;
    }
    if (rc == TEST_PASS && cases != 46) {
        test_note("%s: %zu cases, expected 46", name, cases);
        rc = TEST_FAIL;
    }
    el_tokens_free(&want);
    test_vectors_close(&tv);
    el_vocab_free(v);
    return rc;
}

static int test_vectors_gpt2(void) { return check_vectors("gpt-2"); }
static int test_vectors_falcon(void) { return check_vectors("falcon"); }
static int test_vectors_mpt(void) { return check_vectors("mpt"); }

/* decode(encode(line)) == line on the first lines of every language's corpus file. */
static int check_corpus_roundtrip(const char *name) {
    static const char *const langs[] = {"en", "de", "fr", "es", "it", "pt", "pl", "ru", "nl"};
    el_status st;
    el_vocab *v = load_vocab(name, &st);
    if (!v && st == EL_OK) return test_skip("tokenizer vocabulary not found");
    CHECK(v != NULL);
    int rc = TEST_PASS;
    size_t found = 0;
    for (size_t l = 0; l < sizeof langs / sizeof langs[0] && rc == TEST_PASS; l++) {
        char rel[64];
        snprintf(rel, sizeof rel, "corpus/%s.txt", langs[l]);
        size_t n = 0;
        char *text = test_read_file(test_data_path(rel), &n);
        if (!text) continue;
        found++;
        char *p = text;
        for (int lines = 0; lines < 150 && p < text + n && rc == TEST_PASS; lines++) {
            char *eol = strchr(p, '\n');
            size_t len = eol ? (size_t)(eol - p) + 1 : strlen(p); /* with its newline */
            rc = check_text(v, p, len, NULL);
            p += len;
        }
        free(text);
    }
    el_vocab_free(v);
    if (rc == TEST_PASS && found == 0) return test_skip("corpus not found");
    return rc;
}

static int test_corpus_roundtrip_gpt2(void) { return check_corpus_roundtrip("gpt-2"); }
static int test_corpus_roundtrip_falcon(void) { return check_corpus_roundtrip("falcon"); }

/* Invalid UTF-8 and arbitrary bytes: every byte has a token in a byte-level vocabulary, and
 * the pre-tokenizer keeps each invalid byte, so decoding gives back the very bytes. */
static int test_random_bytes_roundtrip(void) {
    el_status st;
    el_vocab *v = load_vocab("gpt-2", &st);
    if (!v && st == EL_OK) return test_skip("tokenizer vocabulary not found");
    CHECK(v != NULL);
    test_rng rng = {7};
    char buf[300];
    int rc = TEST_PASS;
    for (int iter = 0; iter < 300 && rc == TEST_PASS; iter++) {
        size_t len = test_rand_u32(&rng) % sizeof buf;
        for (size_t i = 0; i < len; i++) {
            uint32_t r = test_rand_u32(&rng);
            /* mostly ASCII and UTF-8 lead/continuation bytes, so sequences are near-valid */
            buf[i] = (char)(r % 4 == 0 ? 0x80 + r / 4 % 0x80 : r % 4 == 1 ? 0xC0 + r / 4 % 0x40
                                                               : r / 4 % 0x80);
        }
        rc = check_text(v, buf, len, NULL);
    }
    el_vocab_free(v);
    return rc;
}

/* ---------------------------------------------------------------- a vocabulary by hand */

/* Writes a small byte-level vocabulary ('Ġ' is the space) with the given pre-tokenizer (NULL:
 * no key) and merges (NULL: no key), and loads it. */
static el_status load_tiny(const char *pre, const char *const *merges, size_t n_merges,
                           el_vocab **v) {
    static const char *const toks[] = {"a", "b", "c", "\xC4\xA0", "ab", "bc", "abc", "\xC4\xA0" "a",
                                       "aa", "ca"};
    char path[512];
    snprintf(path, sizeof path, "%s/tiny.gguf", test_tmp_dir());
    gguf_writer *w = gguf_writer_create();
    if (!w) return EL_ERR_NOMEM;
    gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    if (pre) gguf_writer_set_str(w, "tokenizer.ggml.pre", pre);
    gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, sizeof toks / sizeof toks[0]);
    if (merges) gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", merges, n_merges);
    el_status st = gguf_writer_write(w, path);
    gguf_writer_free(w);
    gguf_file *f = NULL;
    if (st == EL_OK) st = gguf_open(path, &f);
    if (st == EL_OK) st = el_vocab_load_gguf(f, v);
    gguf_close(f);
    return st;
}

static const char *const tiny_merges[] = {
    "a b",        /* 0: ab */
    "b c",        /* 1: bc */
    "ab c",       /* 2: abc */
    "\xC4\xA0 a", /* 3: Ġa */
    "a a",        /* 4: aa */
    "c c",        /* 5: a merge whose result is no token */
    "a b",        /* 6: a repeat, which keeps rank 0 */
    "xy",         /* 7: no separating space: never matches */
};

/* Tokenizes text and compares with the -1-terminated ids. */
static int check_ids(const el_vocab *v, const char *text, const int32_t *want) {
    el_tokens got = {0};
    CHECK(el_vocab_tokenize(v, text, strlen(text), false, false, &got) == EL_OK);
    size_t n = 0;
    while (want[n] >= 0) n++;
    int rc = got.n == n && (n == 0 || memcmp(got.ids, want, n * sizeof *want) == 0);
    if (!rc) {
        test_note("\"%s\": got %zu tokens, expected %zu", text, got.n, n);
        for (size_t i = 0; i < got.n; i++) test_note("  got %d", (int)got.ids[i]);
    }
    el_tokens_free(&got);
    return rc ? TEST_PASS : TEST_FAIL;
}

/* A macro only to return from the calling test on failure, as CHECK does. */
#define IDS(v, text, ...)                                                                  \
    do {                                                                                   \
        static const int32_t want_[] = {__VA_ARGS__};                                      \
        if (check_ids(v, text, want_) != TEST_PASS) return TEST_FAIL;                      \
    } while (0)

static int test_merges_by_hand(void) {
    el_vocab *v = NULL;
    CHECK(load_tiny("gpt-2", tiny_merges, sizeof tiny_merges / sizeof tiny_merges[0], &v) ==
          EL_OK);
    /* a b c: "a b" (0) first, then "ab c" (2) */
    IDS(v, "abc", 6, -1);
    /* b c a b: "a b" (0) before "b c" (1) though it is further right */
    IDS(v, "bcab", 5, 4, -1);
    /* a a a: two "a a" (4) candidates; the leftmost merges, and "aa a" is no merge */
    IDS(v, "aaa", 8, 0, -1);
    /* " ab" is one word: "a b" (0) beats "Ġ a" (3), and "Ġ ab" is no merge */
    IDS(v, " ab", 3, 4, -1);
    /* " a" -> "Ġa" */
    IDS(v, " a", 7, -1);
    /* "c c" merges into "cc", which is no token: its characters are emitted instead */
    IDS(v, "cc", 2, 2, -1);
    /* "ca" is a token but no merge makes it */
    IDS(v, "ca", 2, 0, -1);
    /* a byte without a token is dropped, as llama.cpp does */
    IDS(v, "d", -1);
    IDS(v, "", -1);
    /* pieces: 'Ġ' back to a space */
    char buf[8];
    size_t len = 0;
    CHECK(el_vocab_token_to_piece(v, 7, false, buf, sizeof buf, &len) == EL_OK);
    CHECK(len == 2 && memcmp(buf, " a", 2) == 0);
    CHECK(strcmp(v->pre, "gpt-2") == 0);
    el_vocab_free(v);

    /* llama3 sets ignore_merges: a word that is a token is taken whole */
    CHECK(load_tiny("llama-bpe", tiny_merges, sizeof tiny_merges / sizeof tiny_merges[0], &v) ==
          EL_OK);
    IDS(v, "ca", 9, -1);
    IDS(v, "bcab", 5, 4, -1); /* not a token: merged as before */
    el_vocab_free(v);
    return TEST_PASS;
}

static int test_load_errors(void) {
    el_vocab *v = NULL;
    /* no tokenizer.ggml.pre: llama.cpp's "default" */
    CHECK(load_tiny(NULL, tiny_merges, 2, &v) == EL_OK);
    CHECK(strcmp(v->pre, "default") == 0);
    el_vocab_free(v);
    v = NULL;
    CHECK(load_tiny("no-such-pre", tiny_merges, 2, &v) == EL_ERR_UNSUPPORTED);
    CHECK(strstr(el_last_error(), "no-such-pre") != NULL && strstr(el_last_error(), "tiny.gguf"));
    CHECK(v == NULL);
    CHECK(load_tiny("gpt-2", NULL, 0, &v) == EL_ERR_FORMAT);
    CHECK(strstr(el_last_error(), "tokenizer.ggml.merges") != NULL);
    CHECK(load_tiny("an-overly-long-pre-tokenizer-name-that-does-not-fit-in-the-field-at-all",
                    tiny_merges, 2, &v) == EL_ERR_UNSUPPORTED);
    return TEST_PASS;
}

/* Pieces by hand: GPT-2 stores a space as 'Ġ' (U+0120) and a newline as 'Ċ' (U+010A). */
static int test_token_to_piece(void) {
    el_status st;
    el_vocab *v = load_vocab("gpt-2", &st);
    if (!v && st == EL_OK) return test_skip("tokenizer vocabulary not found");
    CHECK(v != NULL);
    int32_t id = el_str_index_get(&v->token_to_id, "\xC4\xA0world", 7); /* "Ġworld" */
    CHECK(id >= 0);
    char buf[16];
    size_t len = 0;
    CHECK(el_vocab_token_to_piece(v, id, false, buf, sizeof buf, &len) == EL_OK);
    CHECK(len == 6 && memcmp(buf, " world", 6) == 0);
    CHECK(el_vocab_token_to_piece(v, id, false, buf, 3, &len) == EL_ERR_INVALID_ARG && len == 6);
    id = el_str_index_get(&v->token_to_id, "\xC4\x8A", 2); /* "Ċ" */
    CHECK(id >= 0);
    CHECK(el_vocab_token_to_piece(v, id, false, buf, sizeof buf, &len) == EL_OK);
    CHECK(len == 1 && buf[0] == '\n');
    el_vocab_free(v);
    return TEST_PASS;
}

int main(void) {
    run_test("split_gpt2", test_split_gpt2);
    run_test("split_llama3_qwen2", test_split_llama3_qwen2);
    run_test("split_falcon_default_starcoder", test_split_falcon_default_starcoder);
    run_test("split_deepseek", test_split_deepseek);
    run_test("split_gpt4o_tekken", test_split_gpt4o_tekken);
    run_test("unknown_pre", test_unknown_pre);
    run_test("split_any_bytes", test_split_any_bytes);
    run_test("vectors_gpt2", test_vectors_gpt2);
    run_test("vectors_falcon", test_vectors_falcon);
    run_test("vectors_mpt", test_vectors_mpt);
    run_test("corpus_roundtrip_gpt2", test_corpus_roundtrip_gpt2);
    run_test("corpus_roundtrip_falcon", test_corpus_roundtrip_falcon);
    run_test("random_bytes_roundtrip", test_random_bytes_roundtrip);
    run_test("token_to_piece", test_token_to_piece);
    run_test("merges_by_hand", test_merges_by_hand);
    run_test("load_errors", test_load_errors);
    return tests_exit_code();
}
