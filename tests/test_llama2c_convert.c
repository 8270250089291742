/* test_llama2c_convert.c - el_convert_llama2c on stories260K: the GGUF read back must hold every
 * array of the .bin byte for byte (located from the README's array list, not by our reader),
 * llama.cpp's key names and shapes, and the tokenizer with llama.cpp's conventions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "edgelora-tools.h"
#include "testutil.h"


/* Checks one tensor's type, shape and bytes against `floats` floats at float offset `at`. */
static int check_tensor(const gguf_file *f, const char *name, int64_t ne0, int64_t ne1,
                        const uint8_t *bin, size_t at) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) test_note("missing %s", name);
    CHECK(t && t->type == 0);
    CHECK(t->n_dims == (ne1 == 1 ? 1u : 2u) && t->ne[0] == ne0 && t->ne[1] == ne1);
    CHECK(t->nbytes == (uint64_t)(ne0 * ne1) * 4);
    if (memcmp(t->data, bin + 28 + 4 * at, t->nbytes) != 0) test_note("%s differs", name);
    CHECK(memcmp(t->data, bin + 28 + 4 * at, t->nbytes) == 0);
    return TEST_PASS;
}

static int test_convert_stories260k(void) {
    const char *p = test_data_path("models/stories260K.bin");
    if (!p) return test_skip("models/stories260K.bin not found");
    char model[1024], tok[1024], out[1024];
    snprintf(model, sizeof model, "%s", p);
    snprintf(tok, sizeof tok, "%s", test_data_path("models/tok512.bin"));
    snprintf(out, sizeof out, "%s/stories260K.gguf", test_tmp_dir());
    CHECK(el_convert_llama2c(model, tok, out) == EL_OK);
    size_t size;
    uint8_t *bin = (uint8_t *)test_read_file(model, &size);
    CHECK(bin);
    gguf_file *f;
    CHECK(gguf_open(out, &f) == EL_OK);

    gguf_str s;
    uint32_t u;
    float x;
    CHECK(gguf_get_str(f, "general.architecture", &s) == EL_OK && gguf_str_eq(s, "llama"));
    static const struct {
        const char *key;
        uint32_t value;
    } u32s[] = {
        {"llama.context_length", 512},      {"llama.embedding_length", 64},
        {"llama.block_count", 5},           {"llama.feed_forward_length", 172},
        {"llama.attention.head_count", 8},  {"llama.attention.head_count_kv", 4},
        {"llama.rope.dimension_count", 8},  {"tokenizer.ggml.bos_token_id", 1},
        {"tokenizer.ggml.eos_token_id", 2}, {"tokenizer.ggml.unknown_token_id", 0},
    };
    for (size_t i = 0; i < sizeof u32s / sizeof u32s[0]; i++) {
        if (gguf_get_u32(f, u32s[i].key, &u) != EL_OK || u != u32s[i].value)
            test_note("%s", u32s[i].key);
        CHECK(gguf_get_u32(f, u32s[i].key, &u) == EL_OK && u == u32s[i].value);
    }
    CHECK(gguf_get_f32(f, "llama.attention.layer_norm_rms_epsilon", &x) == EL_OK && x == 1e-5f);
    CHECK(gguf_get_f32(f, "llama.rope.freq_base", &x) == EL_OK && x == 10000.0f);

    /* tensors: 1 + 5*9 + 1, no output.weight (the classifier is tied) */
    CHECK(f->n_tensors == 47 && gguf_find_tensor(f, "output.weight") == NULL);
    const size_t E = 512 * 64, L = 5, D = 64, H = 172, KV = 32;
    size_t rms_att = E, wq = rms_att + L * D, wk = wq + L * D * D, wv = wk + L * D * KV;
    size_t wo = wv + L * D * KV, rms_ffn = wo + L * D * D, w1 = rms_ffn + L * D;
    size_t w2 = w1 + L * H * D, w3 = w2 + L * D * H, rms_final = w3 + L * H * D;
    CHECK(28 + 4 * (rms_final + D + 2 * 512 * 4) == size);
    int r = check_tensor(f, "token_embd.weight", 64, 512, bin, 0);
    if (r == TEST_PASS) r = check_tensor(f, "output_norm.weight", 64, 1, bin, rms_final);
    for (size_t l = 0; l < L && r == TEST_PASS; l++) {
        const struct {
            const char *name;
            int64_t ne0, ne1;
            size_t at;
        } t[] = {
            {"attn_norm", 64, 1, rms_att + l * D},   {"attn_q", 64, 64, wq + l * D * D},
            {"attn_k", 64, 32, wk + l * D * KV},     {"attn_v", 64, 32, wv + l * D * KV},
            {"attn_output", 64, 64, wo + l * D * D}, {"ffn_norm", 64, 1, rms_ffn + l * D},
            {"ffn_gate", 64, 172, w1 + l * H * D},   {"ffn_down", 172, 64, w2 + l * D * H},
            {"ffn_up", 64, 172, w3 + l * H * D},
        };
        for (size_t i = 0; i < sizeof t / sizeof t[0] && r == TEST_PASS; i++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%zu.%s.weight", l, t[i].name);
            r = check_tensor(f, name, t[i].ne0, t[i].ne1, bin, t[i].at);
        }
    }
    CHECK(r == TEST_PASS);

    /* tokenizer */
    CHECK(gguf_get_str(f, "tokenizer.ggml.model", &s) == EL_OK && gguf_str_eq(s, "llama"));
    const gguf_kv *tokens, *scores, *types;
    CHECK(gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &tokens) == EL_OK);
    CHECK(gguf_get_arr(f, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, &scores) == EL_OK);
    CHECK(gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, &types) == EL_OK);
    CHECK(tokens->arr_n == 512 && scores->arr_n == 512 && types->arr_n == 512);
    CHECK(gguf_str_eq(tokens->arr_str[0], "<unk>"));
    CHECK(gguf_str_eq(tokens->arr_str[1], "<s>") && gguf_str_eq(tokens->arr_str[2], "</s>"));
    CHECK(gguf_str_eq(tokens->arr_str[3], "<0x00>") && gguf_str_eq(tokens->arr_str[258], "<0xFF>"));
    CHECK(gguf_str_eq(tokens->arr_str[259], "\xe2\x96\x81t")); /* "▁t" */
    CHECK(gguf_str_eq(tokens->arr_str[260], "he"));
    int32_t ty[512];
    float sc[512];
    memcpy(ty, types->arr_data, sizeof ty);
    memcpy(sc, scores->arr_data, sizeof sc);
    CHECK(ty[0] == 2 && ty[1] == 3 && ty[2] == 3 && ty[3] == 6 && ty[258] == 6);
    for (int i = 259; i < 512; i++) CHECK(ty[i] == 1 && sc[i] == (float)-(i - 259));
    for (int i = 259; i < 512; i++) /* no spaces left in any token */
        CHECK(memchr(tokens->arr_str[i].ptr, ' ', tokens->arr_str[i].len) == NULL);
    gguf_close(f);
    free(bin);
    return TEST_PASS;
}

/* Symbolic dimension: which hyper-parameter a size stands for in a file. */
static char dim_symbol(int64_t v, int64_t embd, int64_t ff, int64_t vocab) {
    return v == embd ? 'e' : v == ff ? 'f' : v == vocab ? 'v' : v == 1 ? '1' : '?';
}

/* llama.cpp's own converter made llama-2-tiny-random.gguf: our keys must have its value types,
 * and our tensors its names and dimension order (in units of embd/ff/vocab). */
static int test_convert_matches_llama_cpp_layout(void) {
    char ref_path[1024], model[1024], tok[1024], out[1024];
    const char *p = test_data_path("models/llama-2-tiny-random.gguf");
    if (!p) return test_skip("models/llama-2-tiny-random.gguf not found");
    snprintf(ref_path, sizeof ref_path, "%s", p);
    if (!test_data_path("models/stories260K.bin")) return test_skip("models/ not found");
    snprintf(model, sizeof model, "%s", test_data_path("models/stories260K.bin"));
    snprintf(tok, sizeof tok, "%s", test_data_path("models/tok512.bin"));
    snprintf(out, sizeof out, "%s/layout.gguf", test_tmp_dir());
    CHECK(el_convert_llama2c(model, tok, out) == EL_OK);
    gguf_file *ref, *f;
    CHECK(gguf_open(ref_path, &ref) == EL_OK);
    CHECK(gguf_open(out, &f) == EL_OK);
    int shared = 0;
    for (uint64_t i = 0; i < ref->n_kv; i++) {
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)ref->kv[i].key.len, ref->kv[i].key.ptr);
        const gguf_kv *ours = gguf_find(f, key);
        if (!ours) continue;
        shared++;
        if (ours->type != ref->kv[i].type || ours->arr_type != ref->kv[i].arr_type)
            test_note("%s: %s, llama.cpp has %s", key, gguf_type_name(ours->type),
                      gguf_type_name(ref->kv[i].type));
        CHECK(ours->type == ref->kv[i].type && ours->arr_type == ref->kv[i].arr_type);
    }
    CHECK(shared == 18); /* we write every key llama.cpp wrote there */
    for (uint64_t i = 0; i < ref->n_tensors; i++) {
        const gguf_tensor *rt = &ref->tensors[i];
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)rt->name.len, rt->name.ptr);
        const gguf_tensor *t = gguf_find_tensor(f, name);
        if (!t) { /* only the classifier may be absent: stories260K ties it */
            CHECK(strcmp(name, "output.weight") == 0);
            continue;
        }
        CHECK(t->n_dims == rt->n_dims);
        bool kv_proj = strstr(name, "attn_k.") || strstr(name, "attn_v.");
        for (uint32_t d = 0; d < t->n_dims; d++) {
            if (kv_proj && d == 1) continue; /* kv width: 8 there (no GQA), 32 here */
            char want = dim_symbol(rt->ne[d], 8, 32, 32000),
                 got = dim_symbol(t->ne[d], 64, 172, 512);
            if (want != got) test_note("%s dim %u: %c vs %c", name, d, got, want);
            CHECK(want == got && want != '?');
        }
    }
    CHECK(f->n_tensors == 47 && ref->n_tensors == 12);
    /* both vocabularies begin with <unk>, <s>, </s> and the 256 byte tokens: same text, same type */
    const gguf_kv *rtok, *otok, *rty, *oty;
    CHECK(gguf_get_arr(ref, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &rtok) == EL_OK);
    CHECK(gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &otok) == EL_OK);
    CHECK(gguf_get_arr(ref, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, &rty) == EL_OK);
    CHECK(gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, &oty) == EL_OK);
    for (int i = 0; i < 259; i++) {
        CHECK(rtok->arr_str[i].len == otok->arr_str[i].len);
        CHECK(memcmp(rtok->arr_str[i].ptr, otok->arr_str[i].ptr, otok->arr_str[i].len) == 0);
        CHECK(memcmp(rty->arr_data + 4 * i, oty->arr_data + 4 * i, 4) == 0);
    }
    gguf_close(ref);
    gguf_close(f);
    return TEST_PASS;
}

static int test_convert_errors(void) {
    const char *p = test_data_path("models/stories260K.bin");
    if (!p) return test_skip("models/stories260K.bin not found");
    char model[1024], out[1024];
    snprintf(model, sizeof model, "%s", p);
    snprintf(out, sizeof out, "%s/x.gguf", test_tmp_dir());
    /* the model is not a tokenizer of 512 tokens, nor the tokenizer a model */
    CHECK(el_convert_llama2c(model, model, out) != EL_OK);
    CHECK(el_convert_llama2c(test_data_path("models/tok512.bin"), model, out) == EL_ERR_FORMAT);
    CHECK(el_convert_llama2c(model, "/nonexistent/tok.bin", out) == EL_ERR_IO);
    CHECK(strstr(el_last_error(), "/nonexistent/tok.bin") != NULL);
    FILE *fp = fopen(out, "rb");
    CHECK(fp == NULL); /* nothing written on failure */
    snprintf(out, sizeof out, "/nonexistent/dir/x.gguf");
    CHECK(el_convert_llama2c(model, test_data_path("models/tok512.bin"), out) == EL_ERR_IO);
    return TEST_PASS;
}

int main(void) {
    run_test("convert_stories260k", test_convert_stories260k);
    run_test("convert_matches_llama_cpp_layout", test_convert_matches_llama_cpp_layout);
    run_test("convert_errors", test_convert_errors);
    return tests_exit_code();
}
