/* test_model.c - the public API end to end.
 *  - stories260K (the llama2.c checkpoint, and the GGUF el_convert_llama2c makes of it): greedy
 *    generation reproduces llama2.c run.c's output byte for byte (reference files in
 *    ../shared/data/models, made by the upstream run.c).
 *  - Rows of several sequences in one batch, a prompt shared through el_kv_seq_share, and a tree
 *    batch each give what separate linear runs give.
 *    (The run.c reproduction uses a float32 KV cache, as run.c does; the rest the default fp16.)
 *  - Errors: a full context, bad batch fields, a vocabulary-only model, broken model files, a bad
 *    KV cache type.
 *  - An embedding with more rows than the vocabulary has tokens runs as the first rows alone
 *    (against the same file with every row named a token); fewer rows are refused. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelora-tools.h"
#include "formats/gguf.h"
#include "testutil.h"

enum { MAX_TOK = 512 };

/* A context with a KV cache of kv_type: float32 where a float reference is reproduced to the
 * last token, else the default fp16 (runs compared with runs of the same cache type). */
static el_context *new_context_kv(el_model *m, int32_t n_ctx, int32_t n_batch, int32_t n_seq,
                                  el_kv_type kv_type) {
    el_context_params cp = el_context_default_params();
    cp.kv_type = kv_type;
    cp.n_ctx = n_ctx;
    cp.n_batch = n_batch;
    cp.n_seq_max = n_seq;
    cp.n_threads = 2;
    el_context *ctx = NULL;
    if (el_context_create(m, &cp, &ctx) != EL_OK)
        fprintf(stderr, "context: %s\n", el_last_error());
    return ctx;
}

static el_context *new_context(el_model *m, int32_t n_ctx, int32_t n_batch, int32_t n_seq) {
    return new_context_kv(m, n_ctx, n_batch, n_seq, EL_KV_F16);
}

static int32_t argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

static size_t tokenize(el_model *m, const char *text, int32_t *toks) {
    size_t n = 0;
    if (el_tokenize(m, text, strlen(text), true, false, toks, MAX_TOK, &n) != EL_OK)
        return 0;
    return n;
}

/* Decodes one row of sequence `seq` and returns its logits (NULL on failure). */
static const float *decode_one(el_context *ctx, int32_t token, int32_t pos, int32_t seq) {
    el_batch b = {.n_rows = 1, .token = &token, .pos = &pos, .seq_id = &seq};
    if (el_decode(ctx, &b) != EL_OK) {
        fprintf(stderr, "decode: %s\n", el_last_error());
        return NULL;
    }
    return el_get_logits(ctx, 0);
}

/* ------------------------------------------------------------ run.c reproduction */

/* What run.c does: forward one position at a time, force the prompt, then argmax; stop at BOS;
 * print each piece (no leading space right after BOS, skip unprintable single bytes); "\n". */
static char *generate_like_runc(el_model *m, const char *prompt, int steps) {
    int32_t toks[MAX_TOK];
    size_t n_prompt = tokenize(m, prompt, toks);
    el_context *ctx = new_context_kv(m, 512, 32, 1, EL_KV_F32); /* run.c keeps K and V in float */
    size_t cap = 1 << 16, used = 0;
    char *out = calloc(cap, 1);
    if (!n_prompt || !ctx || !out) {
        el_context_free(ctx);
        free(out);
        return NULL;
    }
    int32_t bos = el_token_bos(m), token = toks[0];
    int32_t n_vocab = 0;
    el_model_info info;
    el_model_get_info(m, &info);
    n_vocab = info.n_vocab;
    for (int pos = 0; pos < steps; pos++) {
        const float *logits = decode_one(ctx, token, pos, 0);
        if (!logits)
            break;
        int32_t next = (size_t)pos < n_prompt - 1 ? toks[pos + 1] : argmax(logits, n_vocab);
        if (next == bos)
            break;
        char piece[64];
        size_t len = 0;
        if (el_token_to_piece(m, next, true, piece, sizeof piece, &len) != EL_OK)
            break;
        const char *p = piece;
        if (token == bos && len > 0 && p[0] == ' ') {
            p++;
            len--;
        }
        unsigned char c0 = (unsigned char)p[0];
        int unprintable = len == 1 && !(isprint(c0) || isspace(c0));
        if (len > 0 && !unprintable && used + len + 2 < cap) {
            memcpy(out + used, p, len);
            used += len;
        }
        token = next;
    }
    out[used++] = '\n';
    el_context_free(ctx);
    return out;
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = calloc(1 << 16, 1);
    if (buf)
        fread(buf, 1, (1 << 16) - 1, f);
    fclose(f);
    return buf;
}

/* stories260K converted to GGUF by el_convert_llama2c, loaded (NULL if data is absent). */
static el_model *load_stories_gguf(void) {
    const char *bin = test_data_path("models/stories260K.bin");
    if (!bin)
        return NULL;
    char bin_path[1024], out[1024];
    snprintf(bin_path, sizeof bin_path, "%s", bin);
    snprintf(out, sizeof out, "%s/stories260K.gguf", test_tmp_dir());
    const char *tok = test_data_path("models/tok512.bin");
    el_model *m = NULL;
    if (!tok || el_convert_llama2c(bin_path, tok, out) != EL_OK ||
        el_model_load(out, NULL, &m) != EL_OK)
        fprintf(stderr, "stories260K.gguf: %s\n", el_last_error());
    return m;
}

static int check_runc(const char *prompt, int steps, const char *ref_name, int gguf) {
    el_model *m = gguf ? load_stories_gguf() : test_load_stories();
    if (!m)
        return test_skip("../shared/data/models/stories260K.bin or tok512.bin is absent");
    const char *ref_path = test_data_path(ref_name);
    CHECK(ref_path);
    char *ref = read_text(ref_path);
    char *got = generate_like_runc(m, prompt, steps);
    CHECK(ref && got);
    if (strcmp(ref, got) != 0)
        test_note("expected:\n%s\ngot:\n%s", ref, got);
    CHECK(strcmp(ref, got) == 0);
    free(ref);
    free(got);
    el_model_free(m);
    return TEST_PASS;
}

static int test_stories_greedy_n256(void) {
    return check_runc("", 256, "models/stories260K.greedy.n256.txt", 0);
}

static int test_stories_greedy_once(void) {
    return check_runc("Once upon a time", 64, "models/stories260K.greedy.n64.once_upon_a_time.txt",
                      0);
}

static int test_stories_gguf_greedy_n256(void) {
    return check_runc("", 256, "models/stories260K.greedy.n256.txt", 1);
}

static int test_stories_gguf_greedy_once(void) {
    return check_runc("Once upon a time", 64, "models/stories260K.greedy.n64.once_upon_a_time.txt",
                      1);
}

/* ------------------------------------------------------------ batches of many sequences */

/* Greedy continuation of a prompt, alone in a fresh context: the n_gen generated tokens. */
static int greedy_alone(el_model *m, const int32_t *prompt, int32_t n_prompt, int n_gen,
                        int32_t *gen) {
    el_context *ctx = new_context(m, 256, 64, 1);
    if (!ctx)
        return 0;
    int32_t pos[MAX_TOK], seq[MAX_TOK] = {0};
    for (int32_t i = 0; i < n_prompt; i++)
        pos[i] = i;
    el_batch b = {.n_rows = n_prompt, .token = prompt, .pos = pos, .seq_id = seq};
    int ok = el_decode(ctx, &b) == EL_OK;
    const float *l = el_get_logits(ctx, n_prompt - 1);
    for (int g = 0; ok && g < n_gen; g++) {
        gen[g] = argmax(l, 512);
        ok = (l = decode_one(ctx, gen[g], n_prompt + g, 0)) != NULL;
    }
    el_context_free(ctx);
    return ok;
}

static int test_three_sequences_in_one_batch(void) {
    el_model *m = test_load_stories();
    if (!m)
        return test_skip("stories260K is absent");
    const char *prompts[3] = {"Once upon a time", "The cat sat", "Lily and Tom went to the"};
    enum { N_GEN = 24 };
    int32_t toks[3][MAX_TOK], alone[3][N_GEN], n_p[3];
    for (int s = 0; s < 3; s++) {
        n_p[s] = (int32_t)tokenize(m, prompts[s], toks[s]);
        CHECK(n_p[s] > 1 && greedy_alone(m, toks[s], n_p[s], N_GEN, alone[s]));
    }
    /* all three prompts as one interleaved batch, then one row per sequence per step */
    el_context *ctx = new_context(m, 256, 64, 3);
    CHECK(ctx);
    int32_t bt[64], bp[64], bs[64], last[3], n = 0;
    int8_t want[64] = {0};
    for (int i = 0; i < 12; i++)
        for (int s = 0; s < 3; s++)
            if (i < n_p[s]) {
                bt[n] = toks[s][i], bp[n] = i, bs[n] = s;
                want[n] = i == n_p[s] - 1;
                last[s] = n++;
            }
    el_batch b = {.n_rows = n, .token = bt, .pos = bp, .seq_id = bs, .logits = want};
    CHECK(el_decode(ctx, &b) == EL_OK);
    int32_t cur[3];
    for (int s = 0; s < 3; s++)
        cur[s] = argmax(el_get_logits(ctx, last[s]), 512);
    for (int g = 0; g < N_GEN; g++) {
        int32_t pos[3], seq[3] = {0, 1, 2};
        for (int s = 0; s < 3; s++) {
            CHECK(cur[s] == alone[s][g]);
            pos[s] = n_p[s] + g;
        }
        int8_t all[3] = {1, 1, 1};
        el_batch step = {.n_rows = 3, .token = cur, .pos = pos, .seq_id = seq, .logits = all};
        CHECK(el_decode(ctx, &step) == EL_OK);
        for (int s = 0; s < 3; s++)
            cur[s] = argmax(el_get_logits(ctx, s), 512);
    }
    CHECK(el_kv_seq_pos_max(ctx, 1) == n_p[1] + N_GEN - 1);
    el_context_free(ctx);
    el_model_free(m);
    return TEST_PASS;
}

/* A prompt decoded once on seq 0 and shared with seq 1; the two continue differently in the
 * same batches and match two separate runs of prompt + continuation. */
static int test_shared_prompt(void) {
    el_model *m = test_load_stories();
    if (!m)
        return test_skip("stories260K is absent");
    int32_t prompt[MAX_TOK];
    int32_t n = (int32_t)tokenize(m, "Once upon a time, there was a", prompt);
    CHECK(n > 2);
    /* the continuations: greedy after the prompt, and greedy after a forced other token */
    enum { N_GEN = 16 };
    int32_t ref0[N_GEN], ref1[N_GEN + 1];
    CHECK(greedy_alone(m, prompt, n, N_GEN, ref0));
    int32_t forced[MAX_TOK];
    memcpy(forced, prompt, (size_t)n * sizeof *prompt);
    forced[n] = ref0[0] == 300 ? 301 : 300;
    ref1[0] = forced[n];
    CHECK(greedy_alone(m, forced, n + 1, N_GEN, ref1 + 1));

    el_context *ctx = new_context(m, 128, 32, 2);
    CHECK(ctx);
    int32_t pos[MAX_TOK], seq[MAX_TOK] = {0};
    for (int32_t i = 0; i < n; i++)
        pos[i] = i;
    el_batch b = {.n_rows = n, .token = prompt, .pos = pos, .seq_id = seq};
    CHECK(el_decode(ctx, &b) == EL_OK);
    CHECK(argmax(el_get_logits(ctx, n - 1), 512) == ref0[0]);
    CHECK(el_kv_seq_share(ctx, 0, 1, 0, -1) == EL_OK);
    CHECK(el_kv_used_cells(ctx) == n); /* shared, not copied */
    CHECK(el_kv_seq_pos_max(ctx, 1) == n - 1);
    int32_t cur[2] = {ref0[0], ref1[0]};
    for (int g = 0; g < N_GEN; g++) {
        int32_t p2[2] = {n + g, n + g}, s2[2] = {0, 1};
        int8_t all[2] = {1, 1};
        el_batch step = {.n_rows = 2, .token = cur, .pos = p2, .seq_id = s2, .logits = all};
        CHECK(el_decode(ctx, &step) == EL_OK);
        cur[0] = argmax(el_get_logits(ctx, 0), 512);
        cur[1] = argmax(el_get_logits(ctx, 1), 512);
        if (g + 1 < N_GEN)
            CHECK(cur[0] == ref0[g + 1]);
        CHECK(cur[1] == ref1[g + 1]);
    }
    /* removing seq 0 frees only its own cells; the shared prompt stays for seq 1 */
    CHECK(el_kv_seq_remove(ctx, 0, 0, -1) == EL_OK);
    CHECK(el_kv_used_cells(ctx) == n + N_GEN);
    CHECK(el_kv_seq_pos_max(ctx, 0) == -1);
    el_context_free(ctx);
    el_model_free(m);
    return TEST_PASS;
}

/* Rolling a sequence back (el_kv_seq_remove of its last positions) and decoding other tokens
 * there gives what a fresh run of those tokens gives, even when freed cells elsewhere are reused
 * out of position order. */
static int test_remove_and_redecode(void) {
    el_model *m = test_load_stories();
    if (!m)
        return test_skip("stories260K is absent");
    int32_t toks[MAX_TOK];
    int32_t n = (int32_t)tokenize(m, "Once upon a time, there was", toks);
    el_context *ctx = new_context(m, 64, 32, 2);
    CHECK(ctx);
    /* seq 1 takes a few low cells first, then is removed: its cells become holes */
    for (int32_t i = 0; i < 3; i++)
        CHECK(decode_one(ctx, 400 + i, i, 1));
    int32_t pos[MAX_TOK], seq[MAX_TOK] = {0};
    for (int32_t i = 0; i < n + 3; i++)
        pos[i] = i;
    el_batch b = {.n_rows = n, .token = toks, .pos = pos, .seq_id = seq};
    CHECK(el_decode(ctx, &b) == EL_OK);
    for (int32_t i = 0; i < 3; i++) /* a speculative continuation, then rejected */
        CHECK(decode_one(ctx, 300 + i, n + i, 0));
    CHECK(el_kv_seq_remove(ctx, 0, n, -1) == EL_OK);
    CHECK(el_kv_seq_remove(ctx, 1, 0, -1) == EL_OK);
    CHECK(el_kv_used_cells(ctx) == n && el_kv_seq_pos_max(ctx, 0) == n - 1);
    const int32_t other[3] = {350, 351, 352};
    float got[3][512];
    for (int32_t i = 0; i < 3; i++) {
        const float *l = decode_one(ctx, other[i], n + i, 0);
        CHECK(l);
        memcpy(got[i], l, sizeof got[i]);
    }
    el_context_free(ctx);
    el_context *fresh = new_context(m, 64, 32, 1);
    CHECK(fresh && el_decode(fresh, &b) == EL_OK);
    for (int32_t i = 0; i < 3; i++) {
        const float *l = decode_one(fresh, other[i], n + i, 0);
        /* bit-identical: attention sums cells in position order wherever they sit */
        CHECK(l && memcmp(got[i], l, sizeof got[i]) == 0);
    }
    el_context_free(fresh);
    el_model_free(m);
    return TEST_PASS;
}

/* Logits of each row of a linear run prompt + path, compared with the tree rows. */
static int test_tree_batch(void) {
    el_model *m = test_load_stories();
    if (!m)
        return test_skip("stories260K is absent");
    int32_t prompt[MAX_TOK];
    int32_t n = (int32_t)tokenize(m, "Once upon a time", prompt);
    /* tree below the prompt:  r0(a) -> r1(b);  r0 -> r2(c) -> r3(d);  r4(e) */
    const int32_t tok[5] = {300, 301, 302, 303, 304};
    const int32_t parent[5] = {-1, 0, 0, 2, -1};
    const int32_t depth[5] = {0, 1, 1, 2, 0};
    el_context *ctx = new_context(m, 64, 16, 1);
    CHECK(ctx);
    int32_t pos[MAX_TOK], seq[MAX_TOK] = {0};
    for (int32_t i = 0; i < n; i++)
        pos[i] = i;
    el_batch b = {.n_rows = n, .token = prompt, .pos = pos, .seq_id = seq};
    CHECK(el_decode(ctx, &b) == EL_OK);
    int32_t tpos[5];
    int8_t all[5] = {1, 1, 1, 1, 1};
    for (int i = 0; i < 5; i++)
        tpos[i] = n + depth[i];
    el_batch tree = {.n_rows = 5, .token = tok, .pos = tpos, .seq_id = seq, .parent = parent,
                     .logits = all};
    CHECK(el_decode(ctx, &tree) == EL_OK);
    float tree_logits[5][512];
    for (int i = 0; i < 5; i++)
        memcpy(tree_logits[i], el_get_logits(ctx, i), sizeof tree_logits[i]);
    el_context_free(ctx);

    for (int leaf = 0; leaf < 5; leaf++) {
        /* the path root..leaf, run linearly after the prompt in a fresh context */
        int32_t path[4], len = 0;
        for (int32_t r = leaf; r >= 0; r = parent[r])
            path[len++] = r;
        el_context *lin = new_context(m, 64, 16, 1);
        CHECK(lin);
        el_batch pb = {.n_rows = n, .token = prompt, .pos = pos, .seq_id = seq};
        CHECK(el_decode(lin, &pb) == EL_OK);
        const float *l = NULL;
        for (int32_t k = len - 1; k >= 0; k--)
            CHECK((l = decode_one(lin, tok[path[k]], n + depth[path[k]], 0)) != NULL);
        double err = test_max_rel_err(tree_logits[leaf], l, 512);
        if (err > 1e-5)
            test_note("row %d: rel err %.2e", leaf, err);
        CHECK(err <= 1e-5);
        el_context_free(lin);
    }
    el_model_free(m);
    return TEST_PASS;
}

/* ------------------------------------------------------------ errors */

static el_model *load_golden_f32(void) {
    el_model *m = NULL;
    if (el_model_load("tests/golden/llama_f32_gqa.gguf", NULL, &m) != EL_OK)
        fprintf(stderr, "%s\n", el_last_error());
    return m;
}

static int test_context_full(void) {
    el_model *m = load_golden_f32();
    CHECK(m);
    el_context *ctx = new_context(m, 8, 8, 1);
    CHECK(ctx);
    int32_t tok[9] = {5, 6, 7, 8, 9, 10, 11, 12, 13}, pos[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    int32_t seq[9] = {0};
    el_batch b = {.n_rows = 6, .token = tok, .pos = pos, .seq_id = seq};
    CHECK(el_decode(ctx, &b) == EL_OK);
    float before[300];
    memcpy(before, el_get_logits(ctx, 5), sizeof before);
    el_batch more = {.n_rows = 3, .token = tok + 6, .pos = pos + 6, .seq_id = seq};
    CHECK(el_decode(ctx, &more) == EL_ERR_CONTEXT_FULL);
    CHECK(strstr(el_last_error(), "free cells") != NULL);
    CHECK(el_kv_used_cells(ctx) == 6 && el_kv_seq_pos_max(ctx, 0) == 5);
    /* the failed call changed nothing: the last logits and the cache are as before */
    CHECK(memcmp(el_get_logits(ctx, 5), before, sizeof before) == 0);
    more.n_rows = 2;
    CHECK(el_decode(ctx, &more) == EL_OK);
    CHECK(el_kv_used_cells(ctx) == 8);
    float fits[300];
    memcpy(fits, el_get_logits(ctx, 1), sizeof fits);
    el_context *fresh = new_context(m, 8, 8, 1);
    el_batch all8 = {.n_rows = 8, .token = tok, .pos = pos, .seq_id = seq};
    CHECK(el_decode(fresh, &all8) == EL_OK);
    CHECK(test_max_rel_err(fits, el_get_logits(fresh, 7), 300) < 1e-6);
    el_context_free(fresh);
    el_context_free(ctx);
    el_model_free(m);
    return TEST_PASS;
}

static int expect_bad_batch(el_context *ctx, const el_batch *b, const char *words) {
    int32_t used = el_kv_used_cells(ctx);
    if (el_decode(ctx, b) != EL_ERR_INVALID_ARG || !strstr(el_last_error(), words) ||
        el_kv_used_cells(ctx) != used) {
        test_note("expected an error with '%s', got '%s'", words, el_last_error());
        return 0;
    }
    return 1;
}

static int test_bad_batches(void) {
    el_model *m = load_golden_f32();
    CHECK(m);
    el_context *ctx = new_context(m, 16, 4, 2);
    CHECK(ctx);
    int32_t tok[5] = {1, 2, 3, 4, 5}, pos[5] = {0, 1, 2, 3, 4}, seq[5] = {0};
    el_batch b = {.n_rows = 3, .token = tok, .pos = pos, .seq_id = seq};
    el_batch x = b;
    x.n_rows = 5;
    CHECK(expect_bad_batch(ctx, &x, "n_batch"));
    x.n_rows = 0;
    CHECK(expect_bad_batch(ctx, &x, "n_rows"));
    int32_t bad_pos[3] = {0, -1, 2};
    x = b;
    x.pos = bad_pos;
    CHECK(expect_bad_batch(ctx, &x, "row 1: negative position"));
    int32_t bad_seq[3] = {0, 0, 2};
    x = b;
    x.seq_id = bad_seq;
    CHECK(expect_bad_batch(ctx, &x, "row 2: seq_id 2 out of range"));
    int32_t bad_tok[3] = {1, 300, 2};
    x = b;
    x.token = bad_tok;
    CHECK(expect_bad_batch(ctx, &x, "row 1: token 300 out of range"));
    int32_t neg_tok[3] = {1, -1, 2};
    x.token = neg_tok; /* a vector row needs embd */
    CHECK(expect_bad_batch(ctx, &x, "no token"));
    int32_t bad_parent[3] = {-1, 1, 0};
    x = b;
    x.parent = bad_parent;
    CHECK(expect_bad_batch(ctx, &x, "row 1: parent 1"));
    int32_t same_pos[3] = {0, 0, 1}, par[3] = {-1, 0, 1};
    x.parent = par;
    x.pos = same_pos;
    CHECK(expect_bad_batch(ctx, &x, "earlier position"));
    x = b;
    x.seq_id = NULL;
    CHECK(expect_bad_batch(ctx, &x, "required"));
    CHECK(el_decode(ctx, &b) == EL_OK); /* and the good batch works */
    CHECK(el_get_logits(ctx, 0) == NULL && el_get_logits(ctx, 2) != NULL);
    CHECK(el_get_logits(ctx, 3) == NULL && el_get_logits(ctx, -1) == NULL);
    CHECK(el_kv_seq_share(ctx, 0, 2, 0, -1) == EL_ERR_INVALID_ARG);
    CHECK(el_kv_seq_remove(ctx, -1, 0, -1) == EL_ERR_INVALID_ARG);
    el_context_free(ctx);
    el_model_free(m);
    return TEST_PASS;
}

/* A row given as a vector: the embedding row of a token gives that token's logits. */
static int test_vector_rows(void) {
    el_model *m = load_golden_f32();
    CHECK(m);
    el_context *ctx = new_context(m, 16, 4, 1);
    CHECK(ctx);
    /* the golden model's embedding is f32: read row 7 straight from the file */
    gguf_file *f;
    CHECK(gguf_open("tests/golden/llama_f32_gqa.gguf", &f) == EL_OK);
    const gguf_tensor *te = gguf_find_tensor(f, "token_embd.weight");
    CHECK(te && te->type == 0 && te->ne[0] == 64);
    float embd[2 * 64];
    memcpy(embd + 64, (const float *)te->data + 7 * 64, 64 * sizeof(float));
    int32_t tok[2] = {3, -1}, pos[2] = {0, 1}, seq[2] = {0, 0};
    el_batch b = {.n_rows = 2, .token = tok, .embd = embd, .pos = pos, .seq_id = seq};
    CHECK(el_decode(ctx, &b) == EL_OK);
    float via_vec[300];
    memcpy(via_vec, el_get_logits(ctx, 1), sizeof via_vec);
    el_kv_clear(ctx);
    CHECK(el_kv_used_cells(ctx) == 0);
    tok[1] = 7;
    b.embd = NULL;
    CHECK(el_decode(ctx, &b) == EL_OK);
    CHECK(memcmp(via_vec, el_get_logits(ctx, 1), sizeof via_vec) == 0);
    gguf_close(f);
    el_context_free(ctx);
    el_model_free(m);
    return TEST_PASS;
}

static int test_vocab_only(void) {
    const char *path = test_data_path("tokenizers/ggml-vocab-llama-spm.gguf");
    if (!path)
        return test_skip("ggml-vocab-llama-spm.gguf is absent");
    el_model *m;
    CHECK(el_model_load(path, NULL, &m) == EL_OK);
    el_model_info info;
    CHECK(el_model_get_info(m, &info) == EL_OK);
    CHECK(!info.has_weights && info.n_vocab == 32000);
    int32_t toks[16];
    size_t n;
    CHECK(el_tokenize(m, "Hello", 5, true, false, toks, 16, &n) == EL_OK && n >= 2 && toks[0] == 1);
    /* too small a buffer: the size needed comes back */
    CHECK(el_tokenize(m, "Hello", 5, true, false, toks, 1, &n) == EL_ERR_INVALID_ARG && n >= 2);
    /* detokenize(tokenize(text)) == text, with BOS first and with leading spaces */
    const char *texts[] = {"Hello world", " Hello world", "  two spaces", "", "\xf0\x9f\xa6\x99 ok"};
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        for (int bos = 0; bos < 2; bos++) {
            CHECK(el_tokenize(m, texts[t], strlen(texts[t]), bos, false, toks, 16, &n) == EL_OK);
            char *back = NULL;
            CHECK(el_detokenize(m, toks, n, false, true, &back) == EL_OK);
            if (strcmp(back, texts[t]) != 0)
                test_note("'%s' came back as '%s'", texts[t], back);
            CHECK(strcmp(back, texts[t]) == 0);
            free(back);
        }
    }
    CHECK(el_token_bos(m) == 1 && el_token_eos(m) == 2 && el_token_is_eog(m, 2));
    CHECK(!el_token_is_eog(m, 1));
    char piece[8];
    size_t len;
    CHECK(el_token_to_piece(m, 32000, false, piece, sizeof piece, &len) == EL_ERR_INVALID_ARG);
    el_context *ctx;
    CHECK(el_context_create(m, NULL, &ctx) == EL_ERR_INVALID_ARG);
    CHECK(strstr(el_last_error(), "vocabulary only") != NULL);
    el_model_free(m);
    return TEST_PASS;
}

/* Every vocabulary-only GGUF of ../shared/data/tokenizers loads, whatever its architecture. */
static int test_vocab_only_all(void) {
    const char *names[] = {"llama-spm", "gpt-2", "falcon", "mpt", "bert-bge"};
    int found = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "tokenizers/ggml-vocab-%s.gguf", names[i]);
        const char *path = test_data_path(rel);
        if (!path)
            continue;
        found++;
        el_model *m;
        if (el_model_load(path, NULL, &m) != EL_OK)
            test_note("%s: %s", names[i], el_last_error());
        CHECK(m != NULL);
        el_model_info info;
        CHECK(el_model_get_info(m, &info) == EL_OK && !info.has_weights && info.n_vocab > 1000);
        el_model_free(m);
    }
    return found ? TEST_PASS : test_skip("no vocabulary files in ../shared/data/tokenizers");
}

/* llama-2-tiny-random.gguf (made by llama.cpp's tooling; f16 weights, a 32000-token vocabulary):
 * metadata as its README documents, and a prompt gives the same finite logits as one batch and
 * token by token. */
static int test_tiny_random_gguf(void) {
    const char *path = test_data_path("models/llama-2-tiny-random.gguf");
    if (!path)
        return test_skip("llama-2-tiny-random.gguf is absent");
    el_model *m;
    CHECK(el_model_load(path, NULL, &m) == EL_OK);
    el_model_info i;
    CHECK(el_model_get_info(m, &i) == EL_OK);
    CHECK(i.n_embd == 8 && i.n_ff == 32 && i.n_head == 2 && i.n_head_kv == 2 && i.n_layer == 1 &&
          i.n_vocab == 32000 && i.n_ctx_train == 4096 && i.has_weights);
    int32_t toks[16];
    size_t n;
    CHECK(el_tokenize(m, "Hello world, hi", 15, true, false, toks, 16, &n) == EL_OK && n >= 4);
    el_context *ctx = new_context(m, 32, 16, 1);
    CHECK(ctx);
    int32_t pos[16], seq[16] = {0};
    int8_t want[16];
    for (size_t k = 0; k < n; k++)
        pos[k] = (int32_t)k, want[k] = 1;
    el_batch b = {.n_rows = (int32_t)n, .token = toks, .pos = pos, .seq_id = seq, .logits = want};
    CHECK(el_decode(ctx, &b) == EL_OK);
    static float batch_logits[16][32000];
    for (size_t k = 0; k < n; k++) {
        const float *l = el_get_logits(ctx, (int32_t)k);
        CHECK(l);
        for (int v = 0; v < 32000; v++)
            CHECK(isfinite(l[v]));
        memcpy(batch_logits[k], l, sizeof batch_logits[k]);
    }
    el_kv_clear(ctx);
    for (size_t k = 0; k < n; k++) {
        const float *l = decode_one(ctx, toks[k], (int32_t)k, 0);
        CHECK(l && test_max_rel_err(l, batch_logits[k], 32000) < 1e-6);
    }
    el_context_free(ctx);
    el_model_free(m);
    return TEST_PASS;
}

/* A metadata value to put in place of the golden model's, or to leave out. */
typedef enum { EDIT_F32, EDIT_U32, EDIT_REMOVE } edit_kind;
typedef struct kv_edit {
    const char *key;
    edit_kind kind;
    double value;
} kv_edit;

static int apply_edit(gguf_writer *w, const kv_edit *e) {
    if (!e)
        return 1;
    switch (e->kind) {
    case EDIT_F32: return gguf_writer_set_f32(w, e->key, (float)e->value) == EL_OK;
    case EDIT_U32: return gguf_writer_set_u32(w, e->key, (uint32_t)e->value) == EL_OK;
    case EDIT_REMOVE: gguf_writer_remove(w, e->key); return 1;
    }
    return 0;
}

/* A copy of the golden f32 model with one tensor left out or replaced by a wrong shape, and
 * one metadata value changed by edit (if not NULL). */
static int write_broken(const char *out, const char *skip, const char *reshape,
                        const kv_edit *edit) {
    gguf_file *f;
    if (gguf_open("tests/golden/llama_f32_gqa.gguf", &f) != EL_OK)
        return 0;
    gguf_writer *w = gguf_writer_create();
    int ok = w && gguf_writer_copy_kv(w, f) == EL_OK && apply_edit(w, edit);
    for (uint64_t i = 0; ok && i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        if (gguf_str_eq(t->name, skip))
            continue;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        int64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        if (gguf_str_eq(t->name, reshape)) { /* same bytes, rows and columns swapped */
            ne[0] = t->ne[1];
            ne[1] = t->ne[0];
        }
        ok = gguf_writer_add_tensor(w, name, t->type, t->n_dims, ne, t->data, t->nbytes) == EL_OK;
    }
    ok = ok && gguf_writer_write(w, out) == EL_OK;
    gguf_writer_free(w);
    gguf_close(f);
    return ok;
}

static int test_broken_models(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/broken.gguf", test_tmp_dir());
    el_model *m;
    CHECK(write_broken(path, "blk.1.ffn_up.weight", "", NULL));
    CHECK(el_model_load(path, NULL, &m) == EL_ERR_FORMAT);
    CHECK(strstr(el_last_error(), path) && strstr(el_last_error(), "blk.1.ffn_up.weight") &&
          strstr(el_last_error(), "missing"));
    CHECK(write_broken(path, "", "blk.0.attn_k.weight", NULL));
    CHECK(el_model_load(path, NULL, &m) == EL_ERR_FORMAT);
    CHECK(strstr(el_last_error(), "blk.0.attn_k.weight") && strstr(el_last_error(), "shape"));
    /* without output.weight the model is tied: it loads */
    CHECK(write_broken(path, "output.weight", "", NULL));
    CHECK(el_model_load(path, NULL, &m) == EL_OK);
    el_model_free(m);
    /* not a model at all */
    snprintf(path, sizeof path, "%s/junk.bin", test_tmp_dir());
    FILE *f = fopen(path, "wb");
    CHECK(f);
    fputs("this is not a model file at all, just text", f);
    fclose(f);
    CHECK(el_model_load(path, NULL, &m) == EL_ERR_FORMAT);
    CHECK(strstr(el_last_error(), path) != NULL);
    CHECK(el_model_load("/nonexistent/model.gguf", NULL, &m) == EL_ERR_IO);
    return TEST_PASS;
}

/* Hyper-parameters that parse but cannot be right: each refused with its key and value. */
static int test_bad_hparams(void) {
    const struct {
        kv_edit edit;
        const char *said;
    } cases[] = {
        {{"llama.attention.layer_norm_rms_epsilon", EDIT_F32, NAN},
         "llama.attention.layer_norm_rms_epsilon = nan is out of range"},
        {{"llama.attention.layer_norm_rms_epsilon", EDIT_F32, INFINITY},
         "llama.attention.layer_norm_rms_epsilon = inf is out of range"},
        {{"llama.attention.layer_norm_rms_epsilon", EDIT_F32, -1e-5}, "= -1e-05 is out of range"},
        {{"llama.rope.freq_base", EDIT_F32, NAN}, "llama.rope.freq_base = nan is out of range"},
        {{"llama.rope.freq_base", EDIT_F32, INFINITY},
         "llama.rope.freq_base = inf is out of range"},
        {{"llama.rope.freq_base", EDIT_F32, 0}, "llama.rope.freq_base = 0 is out of range"},
        {{"llama.attention.head_count", EDIT_U32, 0}, "head_count 0 and head_count_kv"},
        {{"llama.attention.head_count_kv", EDIT_U32, 0}, "head_count_kv 0 must be positive"},
        {{"llama.attention.head_count_kv", EDIT_U32, 3}, "is not a multiple of head_count_kv 3"},
    };
    char path[512];
    snprintf(path, sizeof path, "%s/bad_hparams.gguf", test_tmp_dir());
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(write_broken(path, "", "", &cases[i].edit));
        el_model *m = NULL;
        el_status st = el_model_load(path, NULL, &m);
        if (st != EL_ERR_FORMAT || !strstr(el_last_error(), cases[i].said))
            test_note("%s: %s", cases[i].edit.key, el_last_error());
        CHECK(st == EL_ERR_FORMAT && m == NULL);
        CHECK(strstr(el_last_error(), cases[i].said) && strstr(el_last_error(), path));
    }
    return TEST_PASS;
}

/* tests/golden/llama3_q8_0_ropefreqs.gguf with rope_freqs.weight[1] = value. */
static int write_rope_freqs(const char *out, float value) {
    gguf_file *f;
    if (gguf_open("tests/golden/llama3_q8_0_ropefreqs.gguf", &f) != EL_OK)
        return 0;
    gguf_writer *w = gguf_writer_create();
    int ok = w && gguf_writer_copy_kv(w, f) == EL_OK;
    float *freqs = NULL;
    for (uint64_t i = 0; ok && i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        const void *data = t->data;
        if (strcmp(name, "rope_freqs.weight") == 0) {
            ok = (freqs = malloc(t->nbytes)) != NULL;
            if (!ok)
                break;
            memcpy(freqs, t->data, t->nbytes);
            freqs[1] = value;
            data = freqs;
        }
        int64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        ok = gguf_writer_add_tensor(w, name, t->type, t->n_dims, ne, data, t->nbytes) == EL_OK;
    }
    ok = ok && freqs && gguf_writer_write(w, out) == EL_OK;
    gguf_writer_free(w);
    free(freqs);
    gguf_close(f);
    return ok;
}

/* Llama 3 frequency factors divide the rope angles: each must be a positive number. */
static int test_bad_rope_freqs(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/bad_rope_freqs.gguf", test_tmp_dir());
    const float bad[] = {NAN, INFINITY, 0.0f, -2.0f};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(write_rope_freqs(path, bad[i]));
        el_model *m = NULL;
        CHECK(el_model_load(path, NULL, &m) == EL_ERR_FORMAT && m == NULL);
        CHECK(strstr(el_last_error(), "rope_freqs.weight[1] is not a positive number"));
    }
    CHECK(write_rope_freqs(path, 2.0f));
    el_model *m = NULL;
    CHECK(el_model_load(path, NULL, &m) == EL_OK);
    el_model_free(m);
    return TEST_PASS;
}

/* tests/golden/phi3_f16_longrope.gguf damaged one way into out: without `drop` (a tensor name,
 * or NULL), with rope_factors_short.weight[1] = short1, and with a rope_freqs.weight if asked. */
static int write_phi3(const char *out, const char *drop, float short1, int add_rope_freqs) {
    gguf_file *f;
    if (gguf_open("tests/golden/phi3_f16_longrope.gguf", &f) != EL_OK)
        return 0;
    gguf_writer *w = gguf_writer_create();
    int ok = w && gguf_writer_copy_kv(w, f) == EL_OK;
    float factors[64];
    for (uint64_t i = 0; ok && i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        const void *data = t->data;
        if (drop && !strcmp(name, drop))
            continue;
        if (!strcmp(name, "rope_factors_short.weight") && t->nbytes <= sizeof factors) {
            memcpy(factors, t->data, t->nbytes);
            factors[1] = short1;
            data = factors;
        }
        int64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        ok = gguf_writer_add_tensor(w, name, t->type, t->n_dims, ne, data, t->nbytes) == EL_OK;
        if (add_rope_freqs && !strcmp(name, "rope_factors_long.weight"))
            ok = ok && gguf_writer_add_tensor(w, "rope_freqs.weight", t->type, t->n_dims, ne,
                                              t->data, t->nbytes) == EL_OK;
    }
    ok = ok && gguf_writer_write(w, out) == EL_OK;
    gguf_writer_free(w);
    gguf_close(f);
    return ok;
}

/* phi3's longrope factors are positive numbers and come as a pair, never beside rope_freqs; its
 * fused tensors must be there. */
static int test_bad_phi3(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/bad_phi3.gguf", test_tmp_dir());
    const struct {
        const char *drop;
        float short1;
        int rope_freqs;
        const char *message;
    } cases[] = {
        {NULL, NAN, 0, "rope_factors_short.weight[1] is not a positive number"},
        {NULL, -1.0f, 0, "rope_factors_short.weight[1] is not a positive number"},
        {"rope_factors_long.weight", 1.0f, 0, "rope_factors_short.weight without its partner"},
        {NULL, 1.0f, 1, "both rope_freqs.weight and rope_factors_*.weight"},
        {"blk.1.attn_qkv.weight", 1.0f, 0, "tensor 'blk.1.attn_qkv.weight' is missing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(write_phi3(path, cases[i].drop, cases[i].short1, cases[i].rope_freqs));
        el_model *m = NULL;
        CHECK(el_model_load(path, NULL, &m) == EL_ERR_FORMAT && m == NULL);
        if (!strstr(el_last_error(), cases[i].message)) test_note("%s", el_last_error());
        CHECK(strstr(el_last_error(), cases[i].message));
    }
    CHECK(write_phi3(path, NULL, 1.5f, 0));
    el_model *m = NULL;
    CHECK(el_model_load(path, NULL, &m) == EL_OK);
    el_model_free(m);
    return TEST_PASS;
}

/* The Hugging Face gemma3 golden converted (300 tokens, 300 embedding rows) into out, with its
 * token lists cut to n_tokens and its embedding to n_rows (0: as they are). */
static int write_gemma3_vocab(const char *out, uint64_t n_tokens, int64_t n_rows) {
    const char *full = "gemma3_vocab_full.gguf";
    char path[512];
    snprintf(path, sizeof path, "%s/%s", test_tmp_dir(), full);
    if (el_convert_hf("tests/golden/hf/gemma3", path, "f32", NULL, NULL) != EL_OK) return 0;
    gguf_file *f;
    if (gguf_open(path, &f) != EL_OK) return 0;
    gguf_writer *w = gguf_writer_create();
    int ok = w && gguf_writer_copy_kv(w, f) == EL_OK;
    const gguf_kv *toks = gguf_find(f, "tokenizer.ggml.tokens");
    const char **strs = toks ? calloc(toks->arr_n, sizeof *strs) : NULL;
    ok = ok && strs && n_tokens <= toks->arr_n;
    for (uint64_t i = 0; ok && i < n_tokens; i++)
        ok = (strs[i] = strndup(toks->arr_str[i].ptr, toks->arr_str[i].len)) != NULL;
    ok = ok && gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", strs, n_tokens) == EL_OK;
    static const char *const arrays[] = {"tokenizer.ggml.scores", "tokenizer.ggml.token_type"};
    for (int k = 0; ok && k < 2; k++) {
        const gguf_kv *a = gguf_find(f, arrays[k]);
        ok = a && gguf_writer_set_arr(w, arrays[k], a->arr_type, a->arr_data, n_tokens) == EL_OK;
    }
    for (uint64_t i = 0; ok && i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        int64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        uint64_t nbytes = t->nbytes;
        if (n_rows && !strcmp(name, "token_embd.weight")) {
            nbytes = nbytes / (uint64_t)ne[1] * (uint64_t)n_rows;
            ne[1] = n_rows;
        }
        ok = gguf_writer_add_tensor(w, name, t->type, t->n_dims, ne, t->data, nbytes) == EL_OK;
    }
    ok = ok && gguf_writer_write(w, out) == EL_OK;
    for (uint64_t i = 0; strs && i < n_tokens; i++) free((char *)strs[i]);
    free(strs);
    gguf_writer_free(w);
    gguf_close(f);
    remove(path);
    return ok;
}

static char last_warning[1024];
static void keep_warning(void *user, el_log_level level, const char *message) {
    snprintf(last_warning, sizeof last_warning, "%s", message);
}

/* The logits of a prompt of ids below 290 at every position into out [5][n_vocab]. */
static int prompt_logits(el_model *m, int32_t n_vocab, float *out) {
    static const int32_t prompt[5] = {2, 70, 101, 256, 260};
    el_context *ctx = new_context(m, 16, 8, 1);
    const float *l = NULL;
    for (int32_t pos = 0; ctx && pos < 5; pos++) {
        if (!(l = decode_one(ctx, prompt[pos], pos, 0))) break;
        memcpy(out + (size_t)pos * n_vocab, l, sizeof(float) * n_vocab);
    }
    el_context_free(ctx);
    return l != NULL;
}

/* token_embd.weight with more rows than the vocabulary has tokens (converters that keep Hugging
 * Face's padding rows and cut the tokenizer to its own tokens): the model keeps one row per
 * token, says so in a warning, and its logits are the first n_tokens of those the file's model
 * with every row named gives, bit for bit; so sampling never picks an id without a token. Fewer
 * rows than tokens is refused, naming the file and both counts (llama.cpp refuses both). */
static int test_embedding_rows(void) {
    char full[512], cut[512], shrt[512];
    snprintf(full, sizeof full, "%s/rows_full.gguf", test_tmp_dir());
    snprintf(cut, sizeof cut, "%s/rows_cut.gguf", test_tmp_dir());
    snprintf(shrt, sizeof shrt, "%s/rows_short.gguf", test_tmp_dir());
    CHECK(write_gemma3_vocab(full, 300, 0) && write_gemma3_vocab(cut, 290, 0) &&
          write_gemma3_vocab(shrt, 300, 290));
    el_model *mf = NULL, *mc = NULL, *ms = NULL;
    CHECK(el_model_load(full, NULL, &mf) == EL_OK);
    last_warning[0] = '\0';
    el_log_set(keep_warning, NULL);
    el_status st = el_model_load(cut, NULL, &mc);
    el_log_set(NULL, NULL);
    test_note("%s", last_warning);
    CHECK(st == EL_OK);
    CHECK(strstr(last_warning, "rows_cut.gguf: token_embd.weight has 300 rows but the vocabulary "
                               "290 tokens: the 10 rows past them"));
    el_model_info info;
    CHECK(el_model_get_info(mc, &info) == EL_OK && info.n_vocab == 290);
    CHECK(el_model_get_info(mf, &info) == EL_OK && info.n_vocab == 300);
    static float lf[5 * 300], lc[5 * 290];
    CHECK(prompt_logits(mf, 300, lf) && prompt_logits(mc, 290, lc));
    for (int pos = 0; pos < 5; pos++)
        CHECK(!memcmp(lc + pos * 290, lf + pos * 300, sizeof(float) * 290));
    st = el_model_load(shrt, NULL, &ms);
    test_note("%s", el_last_error());
    CHECK(st == EL_ERR_FORMAT && !ms);
    CHECK(strstr(el_last_error(), "rows_short.gguf: the vocabulary has 300 tokens but "
                                  "token_embd.weight has only 290 rows"));
    el_model_free(mf);
    el_model_free(mc);
    return TEST_PASS;
}

/* The logits after tokens 1, 2, 3 in the model at path, into out[n_vocab] (past position 0,
 * where RoPE turns nothing, so the base counts). */
static int first_logits(const char *path, float *out, int32_t n_vocab) {
    el_model *m = NULL;
    if (el_model_load(path, NULL, &m) != EL_OK) {
        test_note("%s", el_last_error());
        return 0;
    }
    el_context *ctx = new_context(m, 8, 8, 1);
    const float *l = NULL;
    for (int32_t pos = 0; ctx && pos < 3; pos++)
        l = decode_one(ctx, pos + 1, pos, 0);
    if (l)
        memcpy(out, l, (size_t)n_vocab * sizeof *out);
    el_context_free(ctx);
    el_model_free(m);
    return l != NULL;
}

/* Hyper-parameters llama.cpp defaults when absent: a file without them loads and computes
 * what the golden model (which states the defaults) does. */
static int test_optional_hparams(void) {
    el_model *m = load_golden_f32();
    CHECK(m);
    el_model_info info;
    CHECK(el_model_get_info(m, &info) == EL_OK);
    el_model_free(m);
    float *want = malloc((size_t)info.n_vocab * sizeof *want);
    float *got = malloc((size_t)info.n_vocab * sizeof *got);
    CHECK(want && got && first_logits("tests/golden/llama_f32_gqa.gguf", want, info.n_vocab));
    static const char *const optional[] = {"llama.attention.layer_norm_rms_epsilon",
                                           "llama.rope.freq_base"};
    char path[512];
    snprintf(path, sizeof path, "%s/optional_hparams.gguf", test_tmp_dir());
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++) {
        kv_edit drop = {optional[i], EDIT_REMOVE, 0};
        CHECK(write_broken(path, "", "", &drop));
        CHECK(first_logits(path, got, info.n_vocab));
        CHECK(memcmp(got, want, (size_t)info.n_vocab * sizeof *got) == 0);
    }
    free(want);
    free(got);
    return TEST_PASS;
}

static int test_model_info(void) {
    el_model *m = test_load_stories();
    if (!m)
        return test_skip("stories260K is absent");
    el_model_info i;
    CHECK(el_model_get_info(m, &i) == EL_OK);
    /* the header documented in ../shared/data/models/README.md */
    CHECK(i.n_embd == 64 && i.n_ff == 172 && i.n_layer == 5 && i.n_head == 8 && i.n_head_kv == 4 &&
          i.n_vocab == 512 && i.n_ctx_train == 512 && i.has_weights);
    CHECK(i.n_params == 260032 && strcmp(i.arch, "llama") == 0);
    /* a cell: 5 layers x (K + V) x 4 kv heads x 8 dims, fp16 by default */
    el_context *ctx = new_context(m, 0, 512, 1);
    CHECK(ctx);
    CHECK(el_kv_cell_bytes(ctx) == 5 * 2 * 32 * 2);
    el_context_free(ctx);
    el_model_free(m);
    return TEST_PASS;
}

/* The KV cache's element type: fp16 by default, float32 on request (twice the bytes a cell
 * holds), anything else refused with a message naming the field. */
static int test_kv_type(void) {
    el_model *m = test_load_stories();
    if (!m)
        return test_skip("stories260K is absent");
    el_context_params cp = el_context_default_params();
    CHECK(cp.kv_type == EL_KV_F16);
    cp.n_ctx = 64;
    cp.n_threads = 1;
    el_context *ctx = NULL;
    cp.kv_type = EL_KV_F32;
    CHECK(el_context_create(m, &cp, &ctx) == EL_OK);
    CHECK(el_kv_cell_bytes(ctx) == 5 * 2 * 32 * sizeof(float));
    el_context_free(ctx);
    cp.kv_type = (el_kv_type)2;
    CHECK(el_context_create(m, &cp, &ctx) == EL_ERR_INVALID_ARG && ctx == NULL);
    CHECK(strstr(el_last_error(), "kv_type") != NULL);
    cp.kv_type = (el_kv_type)-1;
    CHECK(el_context_create(m, &cp, &ctx) == EL_ERR_INVALID_ARG && ctx == NULL);
    el_model_free(m);
    return TEST_PASS;
}

int main(void) {
    run_test("stories_greedy_n256", test_stories_greedy_n256);
    run_test("stories_greedy_once_upon_a_time", test_stories_greedy_once);
    run_test("stories_gguf_greedy_n256", test_stories_gguf_greedy_n256);
    run_test("stories_gguf_greedy_once_upon_a_time", test_stories_gguf_greedy_once);
    run_test("three_sequences_in_one_batch", test_three_sequences_in_one_batch);
    run_test("shared_prompt", test_shared_prompt);
    run_test("remove_and_redecode", test_remove_and_redecode);
    run_test("tree_batch", test_tree_batch);
    run_test("context_full", test_context_full);
    run_test("bad_batches", test_bad_batches);
    run_test("vector_rows", test_vector_rows);
    run_test("vocab_only", test_vocab_only);
    run_test("vocab_only_all", test_vocab_only_all);
    run_test("tiny_random_gguf", test_tiny_random_gguf);
    run_test("broken_models", test_broken_models);
    run_test("bad_hparams", test_bad_hparams);
    run_test("optional_hparams", test_optional_hparams);
    run_test("bad_rope_freqs", test_bad_rope_freqs);
    run_test("bad_phi3", test_bad_phi3);
    run_test("embedding_rows", test_embedding_rows);
    run_test("model_info", test_model_info);
    run_test("kv_type", test_kv_type);
    return tests_exit_code();
}
