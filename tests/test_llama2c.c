/* test_llama2c.c - the llama2.c checkpoint and tokenizer readers.
 *
 * References: the header values and array order published in ../shared/data/models/README.md
 * (the offsets below are written out from that list, not computed by the reader), the tokenizer
 * facts listed there, and hand-made bad variants. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/llama2c.h"
#include "testutil.h"


static float float_at(const uint8_t *file, size_t offset) {
    float v;
    memcpy(&v, file + offset, 4);
    return v;
}

static int test_stories260k(void) {
    const char *path = test_data_path("models/stories260K.bin");
    if (!path) return test_skip("models/stories260K.bin not found");
    size_t size;
    uint8_t *raw = (uint8_t *)test_read_file(path, &size);
    CHECK(raw && size == 1056540);
    llama2c_file *f;
    CHECK(llama2c_open(path, &f) == EL_OK);
    const llama2c_config *c = &f->cfg;
    CHECK(c->dim == 64 && c->hidden_dim == 172 && c->n_layers == 5 && c->n_heads == 8);
    CHECK(c->n_kv_heads == 4 && c->vocab_size == 512 && c->seq_len == 512);
    CHECK(c->shared_classifier && c->head_size == 8 && c->kv_dim == 32);
    CHECK(f->n_params == 260032);
    /* offsets (in floats after the 28-byte header) from the README's list of arrays */
    static const struct {
        int which;
        size_t offset;
    } at[] = {
        {0, 0},                                                         /* token_embedding */
        {1, 512 * 64},                                                  /* rms_att */
        {2, 512 * 64 + 5 * 64},                                         /* wq */
        {3, 512 * 64 + 5 * 64 + 5 * 64 * 64},                           /* wk */
        {4, 512 * 64 + 5 * 64 + 5 * 64 * 64 + 5 * 64 * 32},             /* wv */
        {5, 512 * 64 + 5 * 64 + 5 * 64 * 64 + 2 * 5 * 64 * 32},         /* wo */
        {6, 512 * 64 + 5 * 64 + 2 * 5 * 64 * 64 + 2 * 5 * 64 * 32},     /* rms_ffn */
        {7, 512 * 64 + 2 * 5 * 64 + 2 * 5 * 64 * 64 + 2 * 5 * 64 * 32}, /* w1 */
        {8, 512 * 64 + 2 * 5 * 64 + 2 * 5 * 64 * 64 + 2 * 5 * 64 * 32 + 5 * 172 * 64},
        {9, 512 * 64 + 2 * 5 * 64 + 2 * 5 * 64 * 64 + 2 * 5 * 64 * 32 + 2 * 5 * 172 * 64},
        {10, 512 * 64 + 2 * 5 * 64 + 2 * 5 * 64 * 64 + 2 * 5 * 64 * 32 + 3 * 5 * 172 * 64},
    };
    const float *ptrs[] = {
        f->w.token_embedding, f->w.rms_att, f->w.wq, f->w.wk, f->w.wv,       f->w.wo,
        f->w.rms_ffn,         f->w.w1,      f->w.w2, f->w.w3, f->w.rms_final};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        const uint8_t *want = f->map.data + 28 + 4 * at[i].offset;
        CHECK((const uint8_t *)ptrs[at[i].which] == want);
        CHECK(*ptrs[at[i].which] == float_at(raw, 28 + 4 * at[i].offset));
    }
    /* rms_final ends where the 2 * 512*4 RoPE floats begin, which end the file */
    CHECK(28 + 4 * (at[10].offset + 64 + 2 * 512 * 4) == size);
    CHECK(f->w.wcls == f->w.token_embedding);
    /* RMS norm weights of a trained model are positive and near 1; a shifted layout is not */
    for (int i = 0; i < 64; i++) CHECK(f->w.rms_final[i] > 0.0f && f->w.rms_att[i] > 0.0f);
    llama2c_close(f);
    free(raw);
    return TEST_PASS;
}

static el_status open_mem(const uint8_t *p, size_t n, llama2c_file **f) {
    return llama2c_open_memory(p, n, "bad.bin", f);
}

static int test_bad_checkpoints(void) {
    const char *path = test_data_path("models/stories260K.bin");
    if (!path) return test_skip("models/stories260K.bin not found");
    size_t size;
    uint8_t *raw = (uint8_t *)test_read_file(path, &size);
    CHECK(raw);
    uint8_t *buf = malloc(size + 64);
    llama2c_file *f;
    int32_t *hdr = (int32_t *)(void *)buf;
    /* truncated by one float, one byte, to the header, to nothing; one float too many */
    static const long deltas[] = {-4, -1, 4};
    for (size_t i = 0; i < 3; i++) {
        memcpy(buf, raw, size);
        CHECK(open_mem(buf, (size_t)((long)size + deltas[i]), &f) == EL_ERR_FORMAT);
        CHECK(strstr(el_last_error(), "bad.bin") != NULL);
    }
    CHECK(open_mem(buf, 28, &f) == EL_ERR_FORMAT);
    CHECK(open_mem(buf, 27, &f) == EL_ERR_FORMAT);
    CHECK(open_mem(buf, 0, &f) == EL_ERR_FORMAT);
    /* header fields out of range, each alone */
    static const struct {
        int field;
        int32_t value;
    } bad[] = {{0, 0},          {0, -64},       {1, 0},    {2, -5}, {3, 7},         {3, 0},
               {4, 3},          {4, 16},        {4, 0},    {5, 0},  {5, INT32_MIN}, {6, 0},
               {0, 60},         {3, 64},        {5, -512}, /* untied: then wcls is missing */
               {0, 0x7fffffff}, {2, 0x7fffffff}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memcpy(buf, raw, size);
        hdr[bad[i].field] = bad[i].value;
        el_status st = open_mem(buf, size, &f);
        if (st != EL_ERR_FORMAT)
            test_note("field %d = %d: %s", bad[i].field, bad[i].value, el_last_error());
        CHECK(st == EL_ERR_FORMAT && strstr(el_last_error(), "bad.bin"));
    }
    /* the versioned export: magic "ak42", version 1 */
    memcpy(buf, raw, size);
    hdr[0] = 0x616b3432;
    hdr[1] = 1;
    CHECK(open_mem(buf, size, &f) == EL_ERR_UNSUPPORTED && strstr(el_last_error(), "ak42"));
    /* an untied classifier: the same file with vocab_size negated plus 512*64 floats of wcls */
    uint8_t *big = malloc(size + 512 * 64 * 4);
    memcpy(big, raw, size);
    memset(big + size, 0, 512 * 64 * 4);
    ((int32_t *)(void *)big)[5] = -512;
    CHECK(open_mem(big, size + 512 * 64 * 4, &f) == EL_OK);
    CHECK(!f->cfg.shared_classifier && f->cfg.vocab_size == 512);
    CHECK((const uint8_t *)f->w.wcls == big + size);
    CHECK(f->n_params == 260032 + 512 * 64);
    llama2c_close(f);
    free(big);
    free(buf);
    free(raw);
    CHECK(llama2c_open("/nonexistent.bin", &f) == EL_ERR_IO);
    return TEST_PASS;
}

static int test_tok512(void) {
    const char *path = test_data_path("models/tok512.bin");
    if (!path) return test_skip("models/tok512.bin not found");
    llama2c_tokenizer *t;
    CHECK(llama2c_tokenizer_open(path, &t) == EL_OK);
    CHECK(t->n_tokens == 512 && t->max_token_length == 7);
    CHECK(t->tokens[0].len == 5 && memcmp(t->tokens[0].text, "<unk>", 5) == 0);
    CHECK(t->tokens[1].len == 5 && memcmp(t->tokens[1].text, "\n<s>\n", 5) == 0);
    CHECK(t->tokens[2].len == 6 && memcmp(t->tokens[2].text, "\n</s>\n", 6) == 0);
    for (int b = 0; b < 256; b++) {
        char want[8];
        snprintf(want, sizeof want, "<0x%02X>", b);
        CHECK(t->tokens[3 + b].len == 6 && memcmp(t->tokens[3 + b].text, want, 6) == 0);
    }
    CHECK(t->tokens[259].len == 2 && memcmp(t->tokens[259].text, " t", 2) == 0);
    CHECK(t->tokens[260].len == 2 && memcmp(t->tokens[260].text, "he", 2) == 0);
    CHECK(t->tokens[261].len == 2 && memcmp(t->tokens[261].text, " a", 2) == 0);
    for (int id = 259; id < 512; id++) CHECK(t->tokens[id].score == (float)-(id - 259));
    llama2c_tokenizer_close(t);
    return TEST_PASS;
}

static int test_bad_tokenizers(void) {
    /* max_len 3, tokens "ab" (score 1) and "c" (score -2) */
    uint8_t good[] = {3,   0,   0, 0, 0, 0,    0x80, 0x3f, 2, 0, 0,  0,
                      'a', 'b', 0, 0, 0, 0xc0, 1,    0,    0, 0, 'c'};
    llama2c_tokenizer *t;
    CHECK(llama2c_tokenizer_open_memory(good, sizeof good, "tok", &t) == EL_OK);
    CHECK(t->n_tokens == 2 && t->tokens[0].score == 1.0f && t->tokens[1].score == -2.0f);
    CHECK(t->tokens[1].len == 1 && t->tokens[1].text[0] == 'c');
    llama2c_tokenizer_close(t);
    /* every truncation fails, except the one that ends on the first record: one token */
    for (size_t n = 0; n < sizeof good; n++) {
        el_status st = llama2c_tokenizer_open_memory(good, n, "tok", &t);
        if (n == 14) {
            CHECK(st == EL_OK && t->n_tokens == 1);
            llama2c_tokenizer_close(t);
            continue;
        }
        CHECK(st == EL_ERR_FORMAT && strstr(el_last_error(), "tok"));
    }
    static const struct {
        size_t at;
        uint8_t value;
        const char *said;
    } flips[] = {{0, 0, "max_token_length 0"},    {3, 0x80, "max_token_length"},
                 {0, 1, "has length 2"},          {8, 4, "has length 4"},
                 {8, 0, "has length 0"},          {11, 0x80, "has length"},
                 {7, 0x7f, "non-finite score"},   {6, 0xc0, "non-finite score"}};
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
        uint8_t bad[sizeof good];
        memcpy(bad, good, sizeof good);
        bad[flips[i].at] = flips[i].value;
        if (flips[i].at == 7) bad[6] = 0x80; /* 0x7f800000: +inf */
        if (flips[i].at == 6) bad[7] = 0x7f; /* 0x7fc00000: NaN */
        el_status st = llama2c_tokenizer_open_memory(bad, sizeof bad, "tok", &t);
        if (st != EL_ERR_FORMAT || !strstr(el_last_error(), flips[i].said))
            test_note("byte %zu = %u: %s", flips[i].at, flips[i].value, el_last_error());
        CHECK(st == EL_ERR_FORMAT && strstr(el_last_error(), flips[i].said));
    }
    return TEST_PASS;
}

int main(void) {
    run_test("stories260k", test_stories260k);
    run_test("bad_checkpoints", test_bad_checkpoints);
    run_test("tok512", test_tok512);
    run_test("bad_tokenizers", test_bad_tokenizers);
    return tests_exit_code();
}
