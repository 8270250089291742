/* test_train_tokenizer.c - the byte-level BPE trainer: a hand-derived tiny case, round trips of
 * held-out text through the runtime tokenizer, and fewer tokens as the vocabulary grows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "edgelora-tools.h"
#include "testutil.h"

static const char *write_tmp(const char *name, const char *text, size_t len) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", test_tmp_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    fwrite(text, 1, len, f);
    fclose(f);
    return path;
}

static el_model *load_vocab(const char *path) {
    el_model_params mp = el_model_default_params();
    mp.vocab_only = true;
    el_model *m = NULL;
    return el_model_load(path, &mp, &m) == EL_OK ? m : NULL;
}

/* The classic example. One word (the GPT-2 pre-tokenizer keeps a run of letters together):
 *   a a a b d a a a b a c   pairs: aa 4 (overlapping runs count each adjacent pair), ab 2,
 *                            bd 1, da 1, ba 1, ac 1          -> merge 0: "a a"   = 256 (Z)
 *   Z a b d Z a b a c        pairs: Za 2, ab 2, others 1; tie broken by the smaller (left,
 *                            right) ids: (97,98) < (256,97)  -> merge 1: "a b"   = 257 (Y)
 *   Z Y d Z Y a c            pairs: ZY 2                     -> merge 2: "aa ab" = 258 (X)
 *   X d X a c
 * With vocab 261 = 256 + 3 merges + <|bos|> (259) + <|eos|> (260), the runtime tokenizer, applying
 * the merges by rank, gives X d X a c = 258 100 258 97 99. */
static int test_classic(void) {
    const char *text = "aaabdaaabac";
    const char *in = write_tmp("classic.txt", text, strlen(text));
    CHECK(in != NULL);
    char out[1024];
    snprintf(out, sizeof out, "%s/classic.gguf", test_tmp_dir());
    CHECK(el_train_tokenizer(&in, 1, 261, out) == EL_OK);
    gguf_file *g;
    CHECK(gguf_open(out, &g) == EL_OK);
    const gguf_kv *merges;
    CHECK(gguf_get_arr(g, "tokenizer.ggml.merges", GGUF_TYPE_STRING, &merges) == EL_OK);
    CHECK(merges->arr_n == 3);
    CHECK(gguf_str_eq(merges->arr_str[0], "a a"));
    CHECK(gguf_str_eq(merges->arr_str[1], "a b"));
    CHECK(gguf_str_eq(merges->arr_str[2], "aa ab"));
    gguf_close(g);
    el_model *m = load_vocab(out);
    CHECK(m != NULL);
    int32_t ids[32];
    size_t n;
    CHECK(el_tokenize(m, text, strlen(text), false, false, ids, 32, &n) == EL_OK);
    int32_t want[] = {258, 100, 258, 97, 99};
    CHECK(n == 5 && !memcmp(ids, want, sizeof want));
    CHECK(el_token_bos(m) == 259 && el_token_eos(m) == 260);
    el_model_free(m);
    return TEST_PASS;
}

/* The first `bytes` bytes of a corpus file, cut at a line end; NULL if absent. */
static char *corpus_part(const char *name, size_t skip, size_t bytes, size_t *len) {
    char rel[256];
    snprintf(rel, sizeof rel, "corpus/%s", name);
    const char *path = test_data_path(rel);
    if (!path)
        return NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(bytes + 1);
    fseek(f, (long)skip, SEEK_SET);
    size_t n = fread(buf, 1, bytes, f);
    fclose(f);
    size_t s = 0;
    if (skip) /* start after a newline */
        while (s < n && buf[s++] != '\n')
            ;
    while (n > s && buf[n - 1] != '\n')
        n--;
    memmove(buf, buf + s, n - s);
    *len = n - s;
    buf[*len] = '\0';
    return buf;
}

static size_t count_tokens(el_model *m, const char *text, size_t len) {
    size_t n = 0;
    el_tokenize(m, text, len, false, false, NULL, 0, &n);
    return n;
}

static int test_corpus(void) {
    size_t le, lr, lhe, lhr;
    char *en = corpus_part("en.txt", 0, 60000, &le), *ru = corpus_part("ru.txt", 0, 60000, &lr);
    char *hen = corpus_part("en.txt", 2000000, 8000, &lhe);
    char *hru = corpus_part("ru.txt", 2000000, 8000, &lhr);
    if (!en || !ru || !hen || !hru) {
        free(en), free(ru), free(hen), free(hru);
        return test_skip("../shared/data/corpus is absent");
    }
    const char *files[2];
    char p0[1024], p1[1024];
    snprintf(p0, sizeof p0, "%s", write_tmp("en.txt", en, le));
    snprintf(p1, sizeof p1, "%s", write_tmp("ru.txt", ru, lr));
    files[0] = p0, files[1] = p1;
    size_t prev = (size_t)-1;
    const int sizes[] = {300, 600, 1200};
    for (int k = 0; k < 3; k++) {
        char out[1024];
        snprintf(out, sizeof out, "%s/v%d.gguf", test_tmp_dir(), sizes[k]);
        CHECK(el_train_tokenizer(files, 2, sizes[k], out) == EL_OK);
        el_model *m = load_vocab(out);
        CHECK(m != NULL);
        el_model_info info;
        CHECK(el_model_get_info(m, &info) == EL_OK && info.n_vocab == sizes[k]);
        size_t n = count_tokens(m, en, le) + count_tokens(m, ru, lr);
        test_note("vocab %d: %zu tokens for %zu bytes of training text", sizes[k], n, le + lr);
        CHECK(n < prev);
        prev = n;
        /* held-out text (other documents) round-trips byte for byte */
        const char *held[2] = {hen, hru};
        size_t hl[2] = {lhe, lhr};
        for (int h = 0; h < 2; h++) {
            int32_t *ids = malloc((hl[h] + 8) * sizeof *ids);
            size_t nt;
            CHECK(el_tokenize(m, held[h], hl[h], false, false, ids, hl[h] + 8, &nt) == EL_OK);
            char *back;
            CHECK(el_detokenize(m, ids, nt, false, false, &back) == EL_OK);
            CHECK(strlen(back) == hl[h] && !memcmp(back, held[h], hl[h]));
            free(back);
            free(ids);
        }
        el_model_free(m);
    }
    free(en), free(ru), free(hen), free(hru);
    return TEST_PASS;
}

int main(void) {
    run_test("bpe_classic_aaabdaaabac", test_classic);
    run_test("bpe_corpus_roundtrip_and_compression", test_corpus);
    return tests_exit_code();
}
