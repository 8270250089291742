/* test_vocab.c - the string map and index, and llama.cpp's published tokenizer test vectors
 * (tests/test-tokenizer-0 in llama.cpp: ggml-vocab-*.gguf.inp/.out) for the SPM and WordPiece
 * vocabularies, id for id. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "testutil.h"
#include "tokenizer/vocab.h"

/* The owner of an index's keys: fixed-width slots of a buffer, key i of length lens[i]. */
typedef struct key_table {
    const char *text;
    const size_t *lens;
} key_table;

static const char *table_key(const void *owner, int32_t id, size_t *len) {
    const key_table *t = owner;
    *len = t->lens[id];
    return t->text + 8 * (size_t)id;
}

static int test_str_index(void) {
    el_str_index empty = {0};
    CHECK(el_str_index_get(&empty, "a", 1) == -1); /* an unused index is empty */
    enum { N = 5000 };
    char *text = calloc(N + 3, 8);
    size_t *lens = malloc((N + 3) * sizeof *lens);
    CHECK(text && lens);
    for (int i = 0; i < N; i++) lens[i] = (size_t)snprintf(text + 8 * i, 8, "k%d", i);
    memcpy(text + 8 * N, "k7", 2), lens[N] = 2;                 /* a duplicate of key 7 */
    lens[N + 1] = 0;                                              /* the empty key */
    memcpy(text + 8 * (N + 2), "a\0b", 3), lens[N + 2] = 3;       /* bytes, not C strings */
    key_table kt = {text, lens};
    el_str_index ix;
    CHECK(el_str_index_init(&ix, N + 3, table_key, &kt) == EL_OK);
    CHECK(ix.cap >= 2 * (N + 3) && (ix.cap & (ix.cap - 1)) == 0);
    for (int i = 0; i < N; i++) CHECK(el_str_index_put(&ix, i) == EL_OK);
    CHECK(ix.n == N);
    for (int i = 0; i < N; i++) CHECK(el_str_index_get(&ix, text + 8 * i, lens[i]) == i);
    CHECK(el_str_index_get(&ix, "k5000", 5) == -1);
    CHECK(el_str_index_get(&ix, "k1", 1) == -1); /* a prefix is another key */
    CHECK(el_str_index_put(&ix, N) == EL_OK);    /* the same key: replaces id 7 */
    CHECK(el_str_index_get(&ix, "k7", 2) == N && ix.n == N);
    CHECK(el_str_index_get(&ix, "", 0) == -1);
    CHECK(el_str_index_put(&ix, N + 1) == EL_OK && el_str_index_get(&ix, "", 0) == N + 1);
    CHECK(el_str_index_put(&ix, N + 2) == EL_OK);
    CHECK(el_str_index_get(&ix, "a\0b", 3) == N + 2 && el_str_index_get(&ix, "a", 1) == -1);
    CHECK(el_str_index_put(&ix, -1) == EL_ERR_INVALID_ARG);
    el_str_index_free(&ix);
    CHECK(ix.slots == NULL && ix.cap == 0);
    /* sized once: room for 3 ids is 16 slots, at most half of them used */
    CHECK(el_str_index_init(&ix, 3, table_key, &kt) == EL_OK && ix.cap == 16);
    for (int i = 0; i < 8; i++) CHECK(el_str_index_put(&ix, i) == EL_OK);
    CHECK(el_str_index_put(&ix, 8) == EL_ERR_INVALID_ARG && ix.n == 8);
    for (int i = 0; i < 8; i++) CHECK(el_str_index_get(&ix, text + 8 * i, lens[i]) == i);
    el_str_index_free(&ix);

    /* put_first: a new key goes in, a key already in keeps its first id */
    bool inserted = false;
    CHECK(el_str_index_init(&ix, 3, table_key, &kt) == EL_OK);
    CHECK(el_str_index_put_first(&ix, 7, &inserted) == EL_OK && inserted && ix.n == 1);
    CHECK(el_str_index_put_first(&ix, N, &inserted) == EL_OK && !inserted && ix.n == 1);
    CHECK(el_str_index_get(&ix, "k7", 2) == 7);
    CHECK(el_str_index_put_first(&ix, 3, &inserted) == EL_OK && inserted && ix.n == 2);
    CHECK(el_str_index_get(&ix, "k3", 2) == 3 && el_str_index_get(&ix, "k7", 2) == 7);
    CHECK(el_str_index_put_first(&ix, -1, &inserted) == EL_ERR_INVALID_ARG && ix.n == 2);
    el_str_index_free(&ix);
    free(text);
    free(lens);
    return TEST_PASS;
}

static int test_strmap(void) {
    el_strmap m = {0};
    CHECK(el_strmap_get(&m, "a", 1) == -1); /* an unused map is empty */
    CHECK(el_strmap_init(&m, 4) == EL_OK);
    /* enough keys to grow the table several times; keys live in one buffer */
    enum { N = 5000 };
    char *keys = malloc(N * 8);
    CHECK(keys != NULL);
    for (int i = 0; i < N; i++) {
        snprintf(keys + 8 * i, 8, "k%d", i);
        CHECK(el_strmap_put(&m, keys + 8 * i, strlen(keys + 8 * i), i) == EL_OK);
    }
    CHECK(m.n == N);
    for (int i = 0; i < N; i++) CHECK(el_strmap_get(&m, keys + 8 * i, strlen(keys + 8 * i)) == i);
    CHECK(el_strmap_get(&m, "k5000", 5) == -1);
    CHECK(el_strmap_get(&m, "k1", 1) == -1); /* a prefix is another key */
    CHECK(el_strmap_put(&m, "k7", 2, -7) == EL_OK); /* replaces */
    CHECK(el_strmap_get(&m, "k7", 2) == -7 && m.n == N);
    CHECK(el_strmap_put(&m, "", 0, 42) == EL_OK); /* the empty key is a key */
    CHECK(el_strmap_get(&m, "", 0) == 42);
    CHECK(el_strmap_put(&m, "a\0b", 3, 9) == EL_OK); /* bytes, not C strings */
    CHECK(el_strmap_get(&m, "a\0b", 3) == 9 && el_strmap_get(&m, "a", 1) == -1);
    el_strmap_free(&m);
    free(keys);

    el_tokens t = {0};
    for (int i = 0; i < 1000; i++) CHECK(el_tokens_push(&t, i) == EL_OK);
    CHECK(t.n == 1000 && t.ids[999] == 999);
    el_tokens_free(&t);
    CHECK(t.ids == NULL && t.n == 0);
    return TEST_PASS;
}


/* Runs every case of tokenizers/<name>.inp through the vocabulary and compares with .out.
 * With roundtrip, also checks detokenize(tokenize(x)) == x with the leading space dropped. */
static int check_vectors(const char *name, bool roundtrip) {
    char rel[256];
    snprintf(rel, sizeof rel, "tokenizers/%s", name);
    test_vectors tv;
    if (!test_vectors_open(name, &tv)) return test_skip("tokenizer test vectors absent");
    const char *p = test_data_path(rel); /* after: it reuses static storage */
    CHECK(p != NULL);
    gguf_file *f;
    CHECK(gguf_open(p, &f) == EL_OK);
    el_vocab *v;
    el_status st = el_vocab_load_gguf(f, &v);
    if (st != EL_OK) test_note("%s", el_last_error());
    CHECK(st == EL_OK);
    gguf_close(f); /* the vocabulary keeps no pointer into the file */

    int cases = 0, failed = 0;
    const char *cur;
    size_t len;
    while (test_vectors_next(&tv, &cur, &len)) {
        el_tokens toks = {0};
        CHECK(el_vocab_tokenize(v, cur, len, false, false, &toks) == EL_OK);
        bool same = toks.n == tv.n_ids;
        for (size_t k = 0; same && k < toks.n; k++) same = toks.ids[k] == tv.ids[k];
        if (!same) {
            test_note("%s case %d \"%.*s\": expected %zu tokens, got %zu:", name, cases,
                      (int)len, cur, tv.n_ids, toks.n);
            for (size_t j = 0; j < toks.n; j++) test_note("  %d", (int)toks.ids[j]);
            failed++;
        }
        if (roundtrip) {
            char *text = malloc(len + 64);
            size_t n = 0;
            CHECK(text != NULL);
            for (size_t j = 0; j < toks.n; j++) {
                size_t pl;
                CHECK(el_vocab_token_to_piece(v, toks.ids[j], false, text + n, len + 64 - n,
                                              &pl) == EL_OK);
                n += pl;
            }
            size_t skip = n > 0 && text[0] == ' ' ? 1 : 0;
            if (n - skip != len || memcmp(text + skip, cur, len) != 0) {
                test_note("%s case %d: detokenized \"%.*s\"", name, cases, (int)n, text);
                failed++;
            }
            free(text);
        }
        el_tokens_free(&toks);
        cases++;
    }
    CHECK(tv.cur == NULL); /* .inp and .out ended together */
    test_note("%s: %d cases", name, cases);
    CHECK(cases >= 40);
    test_vectors_close(&tv);
    el_vocab_free(v);
    CHECK(failed == 0);
    return TEST_PASS;
}

static int test_vectors_llama_spm(void) { return check_vectors("ggml-vocab-llama-spm.gguf", true); }
static int test_vectors_bert_bge(void) { return check_vectors("ggml-vocab-bert-bge.gguf", false); }

/* What the loader reads from the metadata (values as listed by the data README / the files). */
static int test_load_settings(void) {
    const char *p = test_data_path("tokenizers/ggml-vocab-llama-spm.gguf");
    if (!p) return test_skip("tokenizer vocabularies absent");
    gguf_file *f;
    el_vocab *v;
    CHECK(gguf_open(p, &f) == EL_OK);
    CHECK(el_vocab_load_gguf(f, &v) == EL_OK);
    gguf_close(f);
    CHECK(v->kind == EL_VOCAB_SPM && v->n_tokens == 32000);
    CHECK(v->bos == 1 && v->eos == 2 && v->unk == 0 && v->add_bos && !v->add_eos);
    CHECK(v->add_space_prefix && v->escape_spaces);
    CHECK(v->nl == 13); /* <0x0A> = 3 + 10 */
    CHECK(v->n_special == 3); /* <unk>, <s>, </s> */
    CHECK(v->special_ids[0] == 0 && v->special_ids[1] == 2); /* longest first: <unk>, </s> */
    el_tokens t = {0};
    /* add_special puts BOS first; parse_special turns "</s>" into EOS, and the text after a
     * special token gets its own space prefix: "▁Hello" is 15043 */
    CHECK(el_vocab_tokenize(v, "</s>Hello", 9, true, true, &t) == EL_OK);
    CHECK(t.n == 3 && t.ids[0] == 1 && t.ids[1] == 2 && t.ids[2] == 15043);
    char buf[16];
    size_t n;
    CHECK(el_vocab_token_to_piece(v, 2, false, buf, sizeof buf, &n) == EL_OK && n == 0);
    CHECK(el_vocab_token_to_piece(v, 2, true, buf, sizeof buf, &n) == EL_OK && n == 4);
    CHECK(el_vocab_token_to_piece(v, 13, false, buf, sizeof buf, &n) == EL_OK && n == 1 &&
          buf[0] == '\n');
    CHECK(el_vocab_token_to_piece(v, 15043, false, buf, 3, &n) == EL_ERR_INVALID_ARG && n == 6);
    CHECK(el_vocab_token_to_piece(v, 15043, false, buf, 6, &n) == EL_OK &&
          memcmp(buf, " Hello", 6) == 0);
    CHECK(el_vocab_token_to_piece(v, 32000, false, buf, 6, &n) == EL_ERR_INVALID_ARG);
    el_tokens_free(&t);
    el_vocab_free(v);

    return TEST_PASS;
}

/* A small vocabulary written with the GGUF writer, then changed by `spoil` (one defect each). */
typedef enum {
    SPOIL_NONE, SPOIL_MODEL, SPOIL_SCORES, SPOIL_BOS, SPOIL_TYPE, SPOIL_NO_TOKENS, SPOIL_NAN_SCORE,
    SPOIL_PAD_MINUS_ONE, SPOIL_MASK_SIGNED, SPOIL_NO_SCORES_TYPES
} spoil;

static el_status load_tiny(spoil what, el_vocab **v) {
    static const char *const toks[] = {"<unk>", "<s>", "</s>", "\xE2\x96\x81" "a", "b",
                                      "\xE2\x96\x81" "ab", "xy", "yzw"};
    float scores[] = {0, 0, 0, -1, -2, -0.5f, 0, 0, -9};
    if (what == SPOIL_NAN_SCORE) scores[4] = NAN;
    const int32_t types[] = {2, 3, 3, 1, 1, 1, 4, 4, 99}; /* 4: user-defined */
    char path[512];
    snprintf(path, sizeof path, "%s/tiny%d.gguf", test_tmp_dir(), (int)what);
    gguf_writer *w = gguf_writer_create();
    if (!w) return EL_ERR_NOMEM;
    gguf_writer_set_str(w, "tokenizer.ggml.model", what == SPOIL_MODEL ? "t5" : "llama");
    if (what != SPOIL_NO_TOKENS) gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 8);
    if (what != SPOIL_NO_SCORES_TYPES) {
        gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores,
                            what == SPOIL_SCORES ? 9 : 8);
        gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32,
                            what == SPOIL_TYPE ? types + 1 : types, 8);
    }
    gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", what == SPOIL_BOS ? 8 : 1);
    /* llama.cpp's llama2.c converter marks an absent token so */
    if (what == SPOIL_PAD_MINUS_ONE)
        gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", UINT32_MAX);
    if (what == SPOIL_MASK_SIGNED) gguf_writer_set_i32(w, "tokenizer.ggml.mask_token_id", -1);
    gguf_writer_set_bool(w, "tokenizer.ggml.add_space_prefix", false);
    el_status st = gguf_writer_write(w, path);
    gguf_writer_free(w);
    if (st != EL_OK) return st;
    gguf_file *f;
    if ((st = gguf_open(path, &f)) != EL_OK) return st;
    st = el_vocab_load_gguf(f, v);
    gguf_close(f);
    return st;
}

static int test_load_validation(void) {
    el_vocab *v;
    CHECK(load_tiny(SPOIL_NONE, &v) == EL_OK);
    CHECK(v->n_tokens == 8 && v->bos == 1 && v->eos == -1 && !v->add_space_prefix);
    CHECK(v->unk == 0); /* no unknown_token_id: the token of type UNKNOWN */
    /* " ab b" is "▁ab▁b": "▁a" (-1) merges, then "▁ab" (-0.5); the lone "▁" is no token and,
     * with no byte tokens, each of its 3 bytes is UNK; "b" is 4 */
    el_tokens t = {0};
    el_status st = el_vocab_tokenize(v, " ab b", 5, false, false, &t);
    if (st != EL_OK) test_note("%s", el_last_error());
    CHECK(st == EL_OK);
    const int32_t want[] = {5, 0, 0, 0, 4};
    CHECK(t.n == 5 && memcmp(t.ids, want, sizeof want) == 0);
    /* user-defined tokens are cut out even without parse_special, longest first over the whole
     * text (llama.cpp's order): in "xyzw", "yzw" (7) wins over the earlier "xy" (6), and the
     * "x" left is UNK */
    t.n = 0;
    CHECK(el_vocab_tokenize(v, "xyzw", 4, false, false, &t) == EL_OK);
    CHECK(t.n == 2 && t.ids[0] == 0 && t.ids[1] == 7);
    /* control tokens only with parse_special: "<s>" is 1 */
    t.n = 0;
    CHECK(el_vocab_tokenize(v, "<s>xy", 5, false, true, &t) == EL_OK);
    CHECK(t.n == 2 && t.ids[0] == 1 && t.ids[1] == 6);
    el_tokens_free(&t);
    el_vocab_free(v);

    CHECK(load_tiny(SPOIL_MODEL, &v) == EL_ERR_UNSUPPORTED && v == NULL);
    CHECK(strstr(el_last_error(), "'t5'") != NULL);
    CHECK(load_tiny(SPOIL_SCORES, &v) == EL_ERR_FORMAT && v == NULL);
    CHECK(strstr(el_last_error(), "9 scores") != NULL);
    CHECK(load_tiny(SPOIL_NAN_SCORE, &v) == EL_ERR_FORMAT && v == NULL);
    CHECK(strstr(el_last_error(), "token 4 has score nan") != NULL);
    CHECK(load_tiny(SPOIL_TYPE, &v) == EL_ERR_FORMAT && v == NULL);
    CHECK(strstr(el_last_error(), "unknown type 99") != NULL);
    CHECK(load_tiny(SPOIL_NO_TOKENS, &v) == EL_ERR_FORMAT && v == NULL);
    CHECK(strstr(el_last_error(), "tokenizer.ggml.tokens") != NULL);
    CHECK(strstr(el_last_error(), "tiny") != NULL); /* the file is named */
    return TEST_PASS;
}

/* Without tokenizer.ggml.scores and token_type every token scores 0 and is normal, as in
 * llama.cpp: the file loads, and its special ids still work. */
static int test_load_without_scores_and_types(void) {
    el_vocab *v = NULL;
    CHECK(load_tiny(SPOIL_NO_SCORES_TYPES, &v) == EL_OK);
    CHECK(v->n_tokens == 8 && v->bos == 1 && v->add_bos);
    for (int32_t i = 0; i < v->n_tokens; i++)
        CHECK(v->tokens[i].score == 0.0f && v->tokens[i].type == EL_TOKEN_NORMAL);
    el_tokens t = {0};
    CHECK(el_vocab_tokenize(v, "b", 1, true, false, &t) == EL_OK);
    CHECK(t.n == 2 && t.ids[0] == 1 && t.ids[1] == 4);
    el_tokens_free(&t);
    el_vocab_free(v);
    return TEST_PASS;
}

/* What the log callback received. */
typedef struct { int n; char last[512]; } warnings;

static void keep_warning(void *user, el_log_level level, const char *message) {
    warnings *w = user;
    if (level == EL_LOG_WARNING) w->n++;
    snprintf(w->last, sizeof w->last, "%s", message);
}

/* A special id past the vocabulary, or -1, is no token, as in llama.cpp: one warning each. */
static int test_load_bad_special_ids(void) {
    warnings w = {0};
    el_log_set(keep_warning, &w);
    el_vocab *v = NULL;
    el_status st = load_tiny(SPOIL_BOS, &v);
    el_log_set(NULL, NULL);
    CHECK(st == EL_OK && v->bos == -1 && v->add_bos);
    CHECK(w.n == 1 && strstr(w.last, "tiny") && strstr(w.last, "tokenizer.ggml.bos_token_id = 8"));
    el_tokens t = {0};
    CHECK(el_vocab_tokenize(v, "b", 1, true, false, &t) == EL_OK && t.n == 1 && t.ids[0] == 4);
    el_tokens_free(&t);
    el_vocab_free(v);

    w.n = 0;
    el_log_set(keep_warning, &w);
    st = load_tiny(SPOIL_PAD_MINUS_ONE, &v);
    el_log_set(NULL, NULL);
    CHECK(st == EL_OK && v->pad == -1 && v->bos == 1);
    CHECK(w.n == 1 && strstr(w.last, "tokenizer.ggml.padding_token_id = -1"));
    el_vocab_free(v);

    w.n = 0;
    el_log_set(keep_warning, &w);
    st = load_tiny(SPOIL_MASK_SIGNED, &v);
    el_log_set(NULL, NULL);
    CHECK(st == EL_OK && v->mask == -1);
    CHECK(w.n == 1 && strstr(w.last, "tokenizer.ggml.mask_token_id = -1"));
    el_vocab_free(v);

    /* without a callback the warning is dropped and the file still loads */
    CHECK(load_tiny(SPOIL_PAD_MINUS_ONE, &v) == EL_OK);
    el_vocab_free(v);
    return TEST_PASS;
}

/* A three-token byte-level BPE vocabulary, written as <name>.gguf, with tokenizer.ggml.pre = pre
 * (absent if NULL), if add_bos_key tokenizer.ggml.add_bos_token = false, and n_merges merges
 * (no key if n_merges < 0). */
static el_status load_bpe(const char *name, const char *pre, bool add_bos_key,
                          const char *const *merges, int n_merges, el_vocab **v) {
    static const char *const toks[] = {"a", "b", "ab"};
    char path[512];
    snprintf(path, sizeof path, "%s/%s.gguf", test_tmp_dir(), name);
    gguf_writer *w = gguf_writer_create();
    if (!w) return EL_ERR_NOMEM;
    gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    if (pre) gguf_writer_set_str(w, "tokenizer.ggml.pre", pre);
    gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 3);
    if (n_merges >= 0) gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", merges, n_merges);
    gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 2);
    if (add_bos_key) gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", false);
    el_status st = gguf_writer_write(w, path);
    gguf_writer_free(w);
    if (st != EL_OK) return st;
    gguf_file *f;
    if ((st = gguf_open(path, &f)) != EL_OK) return st;
    st = el_vocab_load_gguf(f, v);
    gguf_close(f);
    return st;
}

/* load_bpe with the one merge "a b", named after its settings. */
static el_status load_tiny_bpe(const char *pre, bool add_bos_key, el_vocab **v) {
    static const char *const merges[] = {"a b"};
    char name[64];
    snprintf(name, sizeof name, "tiny_bpe_%s%d", pre ? pre : "none", (int)add_bos_key);
    return load_bpe(name, pre, add_bos_key, merges, 1, v);
}

/* The merges are indexed on a thread of their own (vocab.c): a repeated merge keeps its first
 * rank, as in llama.cpp, and the thread's failure reaches the caller with its message. */
static int test_load_bpe_merges(void) {
    static const char *const merges[] = {"a b", "b a", "a b", "ab"};
    el_vocab *v = NULL;
    CHECK(load_bpe("merges_repeated", "gpt-2", false, merges, 4, &v) == EL_OK);
    CHECK(el_str_index_get(&v->merge_rank, "a b", 3) == 0);
    CHECK(el_str_index_get(&v->merge_rank, "b a", 3) == 1);
    CHECK(v->merge_rank.n == 2); /* "ab" has no space: no pair */
    el_tokens t = {0};
    CHECK(el_vocab_tokenize(v, "ab", 2, false, false, &t) == EL_OK && t.n == 1 && t.ids[0] == 2);
    el_tokens_free(&t);
    el_vocab_free(v);

    el_error(EL_ERR_IO, "an older message"); /* which the thread's must replace */
    CHECK(load_bpe("merges_absent", "gpt-2", false, NULL, -1, &v) == EL_ERR_FORMAT && v == NULL);
    CHECK(strstr(el_last_error(), "merges_absent.gguf: BPE vocabulary without "
                                  "tokenizer.ggml.merges") != NULL);
    return TEST_PASS;
}

/* What llama.cpp assumes when a BPE vocabulary leaves something out: the 'default'
 * pre-tokenizer (with a warning) and, for the Llama 3 family, BOS first. */
static int test_load_bpe_defaults(void) {
    warnings w = {0};
    el_log_set(keep_warning, &w);
    el_vocab *v = NULL;
    el_status st = load_tiny_bpe(NULL, false, &v);
    el_log_set(NULL, NULL);
    CHECK(st == EL_OK && strcmp(v->pre, "default") == 0 && !v->add_bos);
    CHECK(w.n == 1 && strstr(w.last, "tiny_bpe_none0.gguf: tokenizer.ggml.pre is absent"));
    el_vocab_free(v);

    w.n = 0;
    el_log_set(keep_warning, &w);
    CHECK(load_tiny_bpe("llama-bpe", false, &v) == EL_OK);
    el_log_set(NULL, NULL);
    CHECK(v->add_bos && w.n == 0);
    el_tokens t = {0};
    CHECK(el_vocab_tokenize(v, "ab", 2, true, false, &t) == EL_OK);
    CHECK(t.n == 2 && t.ids[0] == 2 && t.ids[1] == 2);
    el_tokens_free(&t);
    el_vocab_free(v);
    /* the file's own flag wins */
    CHECK(load_tiny_bpe("llama-bpe", true, &v) == EL_OK && !v->add_bos);
    el_vocab_free(v);
    CHECK(load_tiny_bpe("gpt-2", false, &v) == EL_OK && !v->add_bos);
    el_vocab_free(v);
    return TEST_PASS;
}

int main(void) {
    run_test("load_bpe_defaults", test_load_bpe_defaults);
    run_test("load_bpe_merges", test_load_bpe_merges);
    run_test("load_without_scores_and_types", test_load_without_scores_and_types);
    run_test("load_bad_special_ids", test_load_bad_special_ids);
    run_test("load_validation", test_load_validation);
    run_test("strmap", test_strmap);
    run_test("str_index", test_str_index);
    run_test("load_settings", test_load_settings);
    run_test("vectors_llama_spm", test_vectors_llama_spm);
    run_test("vectors_bert_bge", test_vectors_bert_bge);
    return tests_exit_code();
}
