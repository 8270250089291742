/* test_train_run.c - whole training runs through the public API (el_train_tokenizer, el_train):
 *  - a run stopped halfway and resumed from its checkpoint writes the same bytes as a run that
 *    never stopped;
 *  - a checkpoint of another shape is refused, and so is a damaged one (a byte changed anywhere,
 *    a truncated end), with a message naming it;
 *  - a run whose output or checkpoint cannot be written fails before its first step;
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

/* qat: quantization-aware (w4a8), whose tracked scales the checkpoint must carry too */
static int resume_identical(const char *qat) {
    CHECK(setup() == TEST_PASS);
    char straight[1024], resumed[1024], ckpt[1024];
    /* same file name (it becomes general.name) in two folders */
    snprintf(straight, sizeof straight, "%s/a%s", test_tmp_dir(), qat ? qat : "");
    snprintf(resumed, sizeof resumed, "%s/b%s", test_tmp_dir(), qat ? qat : "");
    CHECK(mkdir(straight, 0755) == 0 && mkdir(resumed, 0755) == 0);
    strcat(straight, "/m.gguf");
    strcat(resumed, "/m.gguf");
    snprintf(ckpt, sizeof ckpt, "%s/run%s.ckpt", test_tmp_dir(), qat ? qat : "");
    el_train_params p = small_params();
    p.qat = qat;
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

    /* a checkpoint of another shape is refused, and one of other QAT settings */
    p.qat = qat ? NULL : "w4a8";
    CHECK(el_train(&p, resumed) == EL_ERR_MISMATCH);
    CHECK(strstr(el_last_error(), "quantization-aware training settings (--qat)") != NULL);
    p.qat = qat;
    p.dim = 64;
    CHECK(el_train(&p, resumed) == EL_ERR_MISMATCH);
    return TEST_PASS;
}

static int test_resume_identical(void) { return resume_identical(NULL); }
static int test_resume_identical_qat(void) { return resume_identical("w4a8"); }

static long read_whole(const char *path, unsigned char **data) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    *data = malloc((size_t)n);
    bool ok = *data && fread(*data, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    return ok ? n : -1;
}

static bool write_whole(const char *path, const unsigned char *data, long n) {
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, (size_t)n, f) == (size_t)n;
    return f && fclose(f) == 0 && ok;
}

/* Resuming from ckpt holding data[0..n) with the byte at flip (if not negative) changed must
 * fail, naming the file. */
static bool damaged_refused(el_train_params *p, const char *ckpt, const char *out,
                            unsigned char *data, long n, long flip) {
    if (flip >= 0) data[flip] ^= 0x10;
    bool written = write_whole(ckpt, data, n);
    if (flip >= 0) data[flip] ^= 0x10;
    el_status st = el_train(p, out);
    if (!written || st != EL_ERR_FORMAT || !strstr(el_last_error(), ckpt)) {
        test_note("flip %ld of %ld: status %d: %s", flip, n, st, el_last_error());
        return false;
    }
    return true;
}

static int test_damaged_checkpoint_refused(void) {
    CHECK(setup() == TEST_PASS);
    char out[1024], ckpt[1024];
    snprintf(out, sizeof out, "%s/damaged.gguf", test_tmp_dir());
    snprintf(ckpt, sizeof ckpt, "%s/damaged.ckpt", test_tmp_dir());
    el_train_params p = small_params();
    int64_t at = 3;
    p.checkpoint_path = ckpt;
    p.resume = true;
    p.progress = stop_at;
    p.user = &at;
    CHECK(el_train(&p, out) == EL_ERR_CANCELLED);
    unsigned char *data = NULL;
    long n = read_whole(ckpt, &data);
    CHECK(n > 64);
    at = -1;
    const long flips[] = {0, 9, 60, n / 2, n - 9, n - 1};
    bool ok = true;
    for (size_t i = 0; i < sizeof flips / sizeof *flips; i++)
        ok = damaged_refused(&p, ckpt, out, data, n, flips[i]) && ok;
    ok = damaged_refused(&p, ckpt, out, data, n - 1, -1) && ok;
    ok = damaged_refused(&p, ckpt, out, data, n / 2, -1) && ok;
    ok = damaged_refused(&p, ckpt, out, data, 6, -1) && ok;
    /* and the undamaged one still resumes */
    ok = write_whole(ckpt, data, n) && el_train(&p, out) == EL_OK && ok;
    free(data);
    CHECK(ok);
    return TEST_PASS;
}

static bool count_steps(void *user, const el_train_progress *pr) {
    ++*(int *)user;
    return true;
}

/* root writes through permission bits, so the unwritable places are ones nobody can write:
 * a folder that is a file, a folder that does not exist, /proc */
static int test_unwritable_output_fails_first(void) {
    CHECK(setup() == TEST_PASS);
    char file_as_folder[1100], missing[1024], good[1024];
    snprintf(file_as_folder, sizeof file_as_folder, "%s/m.gguf", train_path);
    snprintf(missing, sizeof missing, "%s/no/such/folder/m.gguf", test_tmp_dir());
    snprintf(good, sizeof good, "%s/unwritten.gguf", test_tmp_dir());
    int steps = 0;
    el_train_params p = small_params();
    p.progress = count_steps;
    p.user = &steps;
    CHECK(el_train(&p, file_as_folder) == EL_ERR_IO);
    CHECK(strstr(el_last_error(), file_as_folder) != NULL);
    CHECK(el_train(&p, missing) == EL_ERR_IO);
    p.checkpoint_path = "/proc/edgelora.ckpt";
    CHECK(el_train(&p, good) == EL_ERR_IO);
    CHECK(strstr(el_last_error(), "/proc/edgelora.ckpt") != NULL);
    p.checkpoint_path = NULL;
    p.plot_path = missing;
    CHECK(el_train(&p, good) == EL_ERR_IO);
    CHECK(steps == 0);
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
    run_test("resume_after_stop_is_bit_identical_qat", test_resume_identical_qat);
    run_test("damaged_checkpoint_refused", test_damaged_checkpoint_refused);
    run_test("unwritable_output_fails_before_training", test_unwritable_output_fails_first);
    run_test("loss_falls_and_engine_agrees", test_loss_falls_and_engine_agrees);
    return tests_exit_code();
}
