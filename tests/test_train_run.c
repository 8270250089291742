/* test_train_run.c - whole training runs through the public API (el_train_tokenizer, el_train):
 *  - a run stopped halfway and resumed from its checkpoint writes the same bytes as a run that
 *    never stopped;
 *  - a checkpoint of another shape is refused;
 *  - the loss falls on repetitive text, and the held-out loss is reported;
 *  - the engine's logits for the written GGUF equal the training forward's (docs/architecture.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/model.h"
#include "testutil.h"
#include "train/export.h"

static char tok_path[1024], train_path[1024], eval_path[1024];

static const char *const sentences[] = {
    "the cat sat on the mat and looked at the dog. ",
    "a dog ran after the red ball in the garden. ",
    "the sun is warm and the sky is blue today. ",
    "she reads a book while he cooks the dinner. ",
    "birds sing in the tall trees every morning. ",
};

static int write_text(const char *path, int n, uint64_t seed) {
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    test_rng r = {seed};
    for (int i = 0; i < n; i++)
        fputs(sentences[test_rand_u32(&r) % 5], f);
    return fclose(f);
}

static int setup(void) {
    if (tok_path[0])
        return TEST_PASS;
    snprintf(train_path, sizeof train_path, "%s/train.txt", test_tmp_dir());
    snprintf(eval_path, sizeof eval_path, "%s/eval.txt", test_tmp_dir());
    snprintf(tok_path, sizeof tok_path, "%s/tok.gguf", test_tmp_dir());
    CHECK(write_text(train_path, 400, 1) == 0 && write_text(eval_path, 60, 2) == 0);
    const char *files[1] = {train_path};
    CHECK(el_train_tokenizer(files, 1, 320, tok_path) == EL_OK);
    return TEST_PASS;
}

static const char *train_files[1], *eval_files[1];

static el_train_params small_params(void) {
    el_train_params p = el_train_default_params();
    p.dim = 32, p.n_layer = 2, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 64, p.n_ctx = 16;
    p.tied_embeddings = false;
    p.tokenizer_path = tok_path;
    train_files[0] = train_path, eval_files[0] = eval_path;
    p.train_files = train_files, p.n_train_files = 1;
    p.eval_files = eval_files, p.n_eval_files = 1;
    p.n_steps = 10, p.batch = 4, p.grad_accum = 2, p.warmup = 2, p.lr = 3e-3f;
    p.eval_every = 5, p.eval_batches = 2, p.n_threads = 2, p.seed = 5;
    return p;
}

static bool stop_at(void *user, const el_train_progress *pr) {
    return pr->step != *(int64_t *)user;
}

static bool same_files(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        same = ca == cb;
        if (ca == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

static int test_resume_identical(void) {
    CHECK(setup() == TEST_PASS);
    char straight[1024], resumed[1024], ckpt[1024];
    /* same file name (it becomes general.name) in two folders */
    snprintf(straight, sizeof straight, "%s/a", test_tmp_dir());
    snprintf(resumed, sizeof resumed, "%s/b", test_tmp_dir());
    CHECK(mkdir(straight, 0755) == 0 && mkdir(resumed, 0755) == 0);
    strcat(straight, "/m.gguf");
    strcat(resumed, "/m.gguf");
    snprintf(ckpt, sizeof ckpt, "%s/run.ckpt", test_tmp_dir());
    el_train_params p = small_params();
    CHECK(el_train(&p, straight) == EL_OK);

    int64_t at = 4;
    p.checkpoint_path = ckpt;
    p.resume = true;
    p.progress = stop_at;
    p.user = &at;
    CHECK(el_train(&p, resumed) == EL_ERR_CANCELLED);
    CHECK(strstr(el_last_error(), "stopped") != NULL);
    FILE *f = fopen(resumed, "rb");
    CHECK(f == NULL); /* nothing written when stopped */
    f = fopen(ckpt, "rb");
    CHECK(f != NULL); /* but the checkpoint is */
    fclose(f);
    at = -1;
    CHECK(el_train(&p, resumed) == EL_OK);
    CHECK(same_files(straight, resumed));

    /* a checkpoint of another shape is refused */
    p.dim = 48;
    CHECK(el_train(&p, resumed) == EL_ERR_MISMATCH);
    return TEST_PASS;
}

typedef struct curve {
    float first, last, eval_first, eval_last;
    double tps;
} curve;

static bool record(void *user, const el_train_progress *pr) {
    curve *c = user;
    if (pr->step == 1)
        c->first = pr->loss;
    c->last = pr->loss;
    if (!isnan(pr->eval_loss)) {
        if (isnan(c->eval_first))
            c->eval_first = pr->eval_loss;
        c->eval_last = pr->eval_loss;
    }
    c->tps = pr->tokens_per_s;
    return true;
}

static int test_loss_falls_and_engine_agrees(void) {
    CHECK(setup() == TEST_PASS);
    char out[1024], plot[1024];
    snprintf(out, sizeof out, "%s/model.gguf", test_tmp_dir());
    snprintf(plot, sizeof plot, "%s/model.loss.svg", test_tmp_dir());
    el_train_params p = small_params();
    p.n_steps = 60;
    p.lr = 1e-2f;
    p.tied_embeddings = true;
    p.eval_every = 10;
    p.plot_path = plot;
    curve c = {.eval_first = NAN};
    p.progress = record;
    p.user = &c;
    CHECK(el_train(&p, out) == EL_OK);
    test_note("loss %.3f -> %.3f, held-out %.3f -> %.3f, %.0f tokens/s", c.first, c.last,
              c.eval_first, c.eval_last, c.tps);
    CHECK(c.last < 0.5f * c.first && c.eval_last < c.eval_first);
    FILE *f = fopen(plot, "r");
    CHECK(f != NULL);
    char head[5] = {0};
    CHECK(fread(head, 1, 4, f) == 4 && !strcmp(head, "<svg"));
    fclose(f);

    /* the engine on the written file vs the training forward */
    el_model *m;
    el_model_params mp = el_model_default_params();
    CHECK(el_model_load(out, &mp, &m) == EL_OK);
    el_tmodel tm;
    CHECK(el_tmodel_from_model(&tm, m, 64) == EL_OK);
    CHECK(tm.c.tied);
    const char *text = "the dog sat on the red mat in the sun.";
    int32_t ids[64];
    size_t n;
    CHECK(el_tokenize(m, text, strlen(text), true, false, ids, 64, &n) == EL_OK && n <= 64);
    el_threadpool *tp;
    CHECK(el_threadpool_create(1, &tp) == EL_OK);
    el_tacts *a;
    CHECK(el_tacts_create(&tm, 1, (int32_t)n, &a) == EL_OK);
    int32_t V = tm.c.n_vocab;
    float *want = malloc(n * V * sizeof *want);
    el_tmodel_forward(&tm, a, tp, ids, NULL, NULL, want);

    el_context_params cp = el_context_default_params();
    cp.n_ctx = 64, cp.n_batch = 64, cp.n_threads = 1;
    cp.kv_type = EL_KV_F32; /* the training forward keeps K and V in float */
    el_context *ctx;
    CHECK(el_context_create(m, &cp, &ctx) == EL_OK);
    int32_t pos[64], seq[64];
    int8_t want_logits[64];
    for (size_t i = 0; i < n; i++)
        pos[i] = (int32_t)i, seq[i] = 0, want_logits[i] = 1;
    el_batch b = {.n_rows = (int32_t)n, .token = ids, .pos = pos, .seq_id = seq,
                  .logits = want_logits};
    CHECK(el_decode(ctx, &b) == EL_OK);
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        const float *got = el_get_logits(ctx, (int32_t)i);
        CHECK(got != NULL);
        double e = test_max_rel_err(got, want + i * V, (size_t)V);
        worst = e > worst ? e : worst;
    }
    test_note("engine vs training forward: max rel err %.2g over %zu positions", worst, n);
    CHECK(worst < 1e-4);
    el_context_free(ctx);
    free(want);
    el_tacts_free(a);
    el_threadpool_free(tp);
    el_tmodel_free(&tm);
    el_model_free(m);
    return TEST_PASS;
}

int main(void) {
    run_test("resume_after_stop_is_bit_identical", test_resume_identical);
    run_test("loss_falls_and_engine_agrees", test_loss_falls_and_engine_agrees);
    return tests_exit_code();
}
