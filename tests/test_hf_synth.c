/* test_hf_synth.c - el_synth: models of real shapes with random weights.
 *
 * The figures el_model_get_info reports are checked against the published hyper-parameters
 * (llama2.c's stories15M: dim 288, 6 layers, 6 heads, hidden 768, vocab 32000, seq_len 256;
 * SmolLM-135M's config.json: hidden 576, 30 layers, 9 heads, 3 KV heads, intermediate 1536,
 * vocab 49152, 2048 positions; Qwen3-0.6B's: hidden 1024, 28 layers, 16 heads of 128, 8 KV
 * heads, intermediate 3072, vocab 151936, 40960 positions) and the parameter count worked out by
 * hand from them; the
 * special tokens against the real models' ids; a short greedy generation must run with finite
 * logits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/synth.h"
#include "edgelora.h"
#include "formats/gguf.h"
#include "testutil.h"

/* Greedy generation of n tokens after BOS; every logit must be finite. */
static int generate(el_model *m, int n) {
    el_context *ctx;
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 2;
    CHECK(el_context_create(m, &cp, &ctx) == EL_OK);
    el_model_info info;
    CHECK(el_model_get_info(m, &info) == EL_OK);
    int32_t tok = el_token_bos(m) >= 0 ? el_token_bos(m) : 0, seq = 0;
    int rc = TEST_PASS;
    for (int32_t pos = 0; pos < n && rc == TEST_PASS; pos++) {
        el_batch b = {.n_rows = 1, .token = &tok, .pos = &pos, .seq_id = &seq};
        CHECK(el_decode(ctx, &b) == EL_OK);
        const float *l = el_get_logits(ctx, 0);
        int32_t best = 0;
        for (int32_t i = 0; i < info.n_vocab; i++) {
            if (!isfinite(l[i])) {
                test_note("logit %d at position %d is not finite", i, pos);
                rc = TEST_FAIL;
                break;
            }
            if (l[i] > l[best]) best = i;
        }
        tok = best;
    }
    el_context_free(ctx);
    return rc;
}

static int check_stories15m(const char *type) {
    char path[512];
    snprintf(path, sizeof path, "%s/stories15m_%s.gguf", test_tmp_dir(), type);
    if (el_synth("stories15m", type, path, 7, NULL, NULL) != EL_OK) {
        test_note("%s", el_last_error());
        return TEST_FAIL;
    }
    el_model *m;
    el_model_params mp = el_model_default_params();
    CHECK(el_model_load(path, &mp, &m) == EL_OK);
    el_model_info i;
    CHECK(el_model_get_info(m, &i) == EL_OK);
    CHECK(!strcmp(i.arch, "llama") && i.has_weights);
    CHECK(i.n_vocab == 32000 && i.n_embd == 288 && i.n_layer == 6 && i.n_head == 6 &&
          i.n_head_kv == 6 && i.n_ff == 768 && i.n_ctx_train == 256);
    /* embedding 32000*288 (tied) + 6 * (4*288*288 + 3*288*768 + 2*288) + 288 */
    CHECK(i.n_params == 15191712);
    CHECK(el_token_bos(m) == 1 && el_token_eos(m) == 2);
    int rc = generate(m, 8);
    el_model_free(m);
    remove(path);
    return rc;
}

static int test_stories15m_q8_0(void) { return check_stories15m("q8_0"); }
static int test_stories15m_q4_0(void) { return check_stories15m("q4_0"); }
static int test_stories15m_f16(void) { return check_stories15m("f16"); }
static int test_stories15m_w4(void) { return check_stories15m("w4a8"); }
static int test_stories15m_w8a16(void) { return check_stories15m("w8a16"); }

static int test_smollm(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/smollm.gguf", test_tmp_dir());
    CHECK(el_synth("smollm-135m", "q8_0", path, 1, NULL, NULL) == EL_OK);
    el_model *m;
    el_model_params mp = el_model_default_params();
    CHECK(el_model_load(path, &mp, &m) == EL_OK);
    el_model_info i;
    CHECK(el_model_get_info(m, &i) == EL_OK);
    CHECK(i.n_vocab == 49152 && i.n_embd == 576 && i.n_layer == 30 && i.n_head == 9 &&
          i.n_head_kv == 3 && i.n_ff == 1536 && i.n_ctx_train == 2048);
    /* tied: 49152*576 + 30 * (576*576*2 + 576*192*2 + 3*576*1536 + 2*576) + 576 = 134,515,008,
     * SmolLM-135M's published count */
    CHECK(i.n_params == 134515008);
    char piece[64];
    size_t len;
    CHECK(el_token_to_piece(m, 2, true, piece, sizeof piece, &len) == EL_OK);
    CHECK(len == 10 && !memcmp(piece, "<|im_end|>", 10));
    int rc = generate(m, 3);
    el_model_free(m);
    remove(path);
    return rc;
}

static int test_qwen3(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/qwen3.gguf", test_tmp_dir());
    CHECK(el_synth("qwen3-0.6b", "q4_0", path, 1, NULL, NULL) == EL_OK);
    el_model *m;
    el_model_params mp = el_model_default_params();
    CHECK(el_model_load(path, &mp, &m) == EL_OK);
    el_model_info i;
    CHECK(el_model_get_info(m, &i) == EL_OK);
    CHECK(!strcmp(i.arch, "qwen3") && i.n_vocab == 151936 && i.n_embd == 1024 &&
          i.n_layer == 28 && i.n_head == 16 && i.n_head_kv == 8 && i.n_ff == 3072 &&
          i.n_ctx_train == 40960);
    /* tied: 151936*1024 + 28 * (1024*2048*2 + 1024*1024*2 + 3*1024*3072 + 2*1024 + 2*128)
     * + 1024: 0.44B without the embedding, as Qwen3-0.6B's card says */
    CHECK(i.n_params == 596049920);
    CHECK(el_token_eos(m) == 151645);
    int rc = generate(m, 2);
    el_model_free(m);
    remove(path);
    return rc;
}

/* The full-size vocabularies of the big shapes, without their weights: sizes, special tokens at
 * the real ids, and text that round-trips through the tokenizer. */
static int check_vocab(el_synth_vocab kind, int32_t n, int32_t special_id, const char *special) {
    char path[512];
    snprintf(path, sizeof path, "%s/vocab.gguf", test_tmp_dir());
    gguf_writer *w = gguf_writer_create();
    CHECK(w && gguf_writer_set_str(w, "general.architecture", "llama") == EL_OK);
    CHECK(el_synth_vocab_write(kind, n, 3, w) == EL_OK);
    CHECK(gguf_writer_write(w, path) == EL_OK);
    gguf_writer_free(w);
    el_model *m;
    el_model_params mp = el_model_default_params();
    mp.vocab_only = true;
    CHECK(el_model_load(path, &mp, &m) == EL_OK);
    el_model_info i;
    CHECK(el_model_get_info(m, &i) == EL_OK && i.n_vocab == n);
    char piece[64];
    size_t len;
    CHECK(el_token_to_piece(m, special_id, true, piece, sizeof piece, &len) == EL_OK);
    CHECK(len == strlen(special) && !memcmp(piece, special, len));
    static const char text[] = "Hello, world! 123 \xc3\xa9t\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac";
    int32_t toks[256];
    size_t nt;
    CHECK(el_tokenize(m, text, sizeof text - 1, false, false, toks, 256, &nt) == EL_OK);
    char *back;
    CHECK(el_detokenize(m, toks, nt, false, true, &back) == EL_OK);
    int rc = strcmp(back, text) == 0 ? TEST_PASS : TEST_FAIL;
    if (rc) test_note("\"%s\" came back as \"%s\"", text, back);
    free(back);
    el_model_free(m);
    return rc;
}

static int test_vocab_llama3(void) {
    return check_vocab(EL_SYNTH_VOCAB_LLAMA3, 128256, 128009, "<|eot_id|>");
}
static int test_vocab_qwen2(void) {
    return check_vocab(EL_SYNTH_VOCAB_QWEN2, 151936, 151645, "<|im_end|>");
}
static int test_vocab_spm(void) { return check_vocab(EL_SYNTH_VOCAB_SPM, 32000, 2, "</s>"); }
static int test_vocab_qwen3(void) {
    return check_vocab(EL_SYNTH_VOCAB_QWEN3, 151936, 151667, "<think>");
}
static int test_vocab_phi3(void) {
    return check_vocab(EL_SYNTH_VOCAB_PHI3, 32064, 32007, "<|end|>");
}

/* Gemma's: <end_of_turn> at 106, and no dummy "▁" before the text (add_space_prefix false, as
 * llama.cpp's converter writes for Gemma 3): "a" is the one token "a", not "▁a". */
static int test_vocab_gemma(void) {
    if (check_vocab(EL_SYNTH_VOCAB_GEMMA, 262144, 106, "<end_of_turn>") != TEST_PASS)
        return TEST_FAIL;
    el_model *m;
    el_model_params mp = el_model_default_params();
    mp.vocab_only = true;
    char path[512], piece[64];
    snprintf(path, sizeof path, "%s/vocab.gguf", test_tmp_dir());
    CHECK(el_model_load(path, &mp, &m) == EL_OK);
    int32_t toks[4];
    size_t nt, len;
    CHECK(el_tokenize(m, "a", 1, true, false, toks, 4, &nt) == EL_OK);
    CHECK(nt == 2 && toks[0] == 2);
    CHECK(el_token_to_piece(m, toks[1], true, piece, sizeof piece, &len) == EL_OK);
    CHECK(len == 1 && piece[0] == 'a');
    el_model_free(m);
    return TEST_PASS;
}

static int test_bad_args(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/bad.gguf", test_tmp_dir());
    CHECK(el_synth("llama-9b", "q4_0", path, 1, NULL, NULL) == EL_ERR_INVALID_ARG);
    CHECK(strstr(el_last_error(), "llama-9b"));
    CHECK(el_synth("stories15m", "q3_x", path, 1, NULL, NULL) == EL_ERR_INVALID_ARG);
    CHECK(el_synth("stories15m", "a16", path, 1, NULL, NULL) == EL_ERR_INVALID_ARG); /* activations */
    CHECK(el_synth("stories15m", "q4_0", "/nonexistent/dir/x.gguf", 1, NULL, NULL) == EL_ERR_IO);
    const char *const *s = el_synth_shapes();
    int n = 0;
    for (; s[n]; n++) {}
    CHECK(n == 9 && !strcmp(s[0], "llama-3.2-1b") && !strcmp(s[8], "gemma-3-1b"));
    return TEST_PASS;
}

int main(void) {
    run_test("stories15m_q8_0", test_stories15m_q8_0);
    run_test("stories15m_q4_0", test_stories15m_q4_0);
    run_test("stories15m_f16", test_stories15m_f16);
    run_test("stories15m_w4", test_stories15m_w4);
    run_test("stories15m_w8a16", test_stories15m_w8a16);
    run_test("smollm", test_smollm);
    run_test("qwen3", test_qwen3);
    run_test("vocab_llama3", test_vocab_llama3);
    run_test("vocab_qwen2", test_vocab_qwen2);
    run_test("vocab_spm", test_vocab_spm);
    run_test("vocab_gemma", test_vocab_gemma);
    run_test("vocab_qwen3", test_vocab_qwen3);
    run_test("vocab_phi3", test_vocab_phi3);
    run_test("bad_args", test_bad_args);
    return tests_exit_code();
}
