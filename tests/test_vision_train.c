/* test_vision_train.c - el_train_diffusion on a tiny shape: the loss falls, a run stopped by its
 * progress callback and resumed from its checkpoint writes the same model bytes as a run that
 * never stopped, and a damaged checkpoint is refused. Needs the MNIST files beside the project
 * (../shared/data/images). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "edgelora-tools.h"

static char images[4096], labels[4096];

static el_diffusion_train_params tiny(void) {
    el_diffusion_train_params p = el_diffusion_train_default_params();
    p.images_path = images, p.labels_path = labels;
    p.n_heldout = 64, p.ch = 4, p.temb = 16, p.groups = 2, p.n_timesteps = 100;
    p.n_steps = 6, p.batch = 4, p.warmup = 2, p.eval_every = 3, p.eval_batches = 1;
    p.n_threads = 1;
    return p;
}

typedef struct watch {
    int64_t stop_at, first_step;
    float first, last;
} watch;

static bool on_step(void *user, const el_train_progress *pr) {
    watch *w = user;
    if (w->first_step < 0) w->first_step = pr->step;
    if (pr->step == 1) w->first = pr->loss;
    w->last = pr->loss;
    return pr->step != w->stop_at;
}

static int test_resume_same_bytes(void) {
    char a[4200], b[4200], ck[4200];
    snprintf(a, sizeof a, "%s/straight.gguf", test_tmp_dir());
    snprintf(b, sizeof b, "%s/resumed.gguf", test_tmp_dir());
    snprintf(ck, sizeof ck, "%s/run.ckpt", test_tmp_dir());
    el_diffusion_train_params p = tiny();
    CHECK(el_train_diffusion(&p, a) == EL_OK);
    watch w = {.stop_at = 3, .first_step = -1};
    p.checkpoint_path = ck, p.progress = on_step, p.user = &w;
    CHECK(el_train_diffusion(&p, b) == EL_ERR_CANCELLED);
    FILE *f = fopen(b, "rb");
    CHECK(!f); /* nothing written for a stopped run */
    w.stop_at = -1, w.first_step = -1;
    p.resume = true;
    CHECK(el_train_diffusion(&p, b) == EL_OK);
    CHECK(w.first_step == 4); /* it did continue from the checkpoint */
    size_t na, nb;
    char *da = test_read_file(a, &na), *db = test_read_file(b, &nb);
    CHECK(da && db);
    int same = na == nb && !memcmp(da, db, na);
    free(da), free(db);
    CHECK(same);
    /* a byte changed in the checkpoint: refused, naming it */
    size_t nc;
    char *dc = test_read_file(ck, &nc);
    CHECK(dc && nc > 100);
    dc[nc / 2] ^= 1;
    f = fopen(ck, "wb");
    CHECK(f && fwrite(dc, 1, nc, f) == nc);
    fclose(f);
    free(dc);
    CHECK(el_train_diffusion(&p, b) == EL_ERR_FORMAT);
    CHECK(strstr(el_last_error(), "run.ckpt") && strstr(el_last_error(), "damaged"));
    return TEST_PASS;
}

static int test_loss_falls(void) {
    char out[4200];
    snprintf(out, sizeof out, "%s/falls.gguf", test_tmp_dir());
    el_diffusion_train_params p = tiny();
    p.n_steps = 40, p.batch = 8, p.lr = 5e-3f;
    watch w = {.stop_at = -1, .first_step = -1};
    p.progress = on_step, p.user = &w;
    CHECK(el_train_diffusion(&p, out) == EL_OK);
    test_note("loss %.4f at step 1, %.4f at step 40", w.first, w.last);
    /* the first prediction is zero noise (conv_out starts at 0): a loss near 1 */
    CHECK(fabsf(w.first - 1.0f) < 0.2f);
    CHECK(w.last < 0.5f * w.first);
    return TEST_PASS;
}

static int test_bad_inputs(void) {
    char out[4200];
    snprintf(out, sizeof out, "%s/bad.gguf", test_tmp_dir());
    el_diffusion_train_params p = tiny();
    p.labels_path = images; /* an images file where the labels should be */
    CHECK(el_train_diffusion(&p, out) == EL_ERR_FORMAT);
    CHECK(strstr(el_last_error(), "not an IDX labels file"));
    p = tiny();
    p.n_heldout = 10000;
    CHECK(el_train_diffusion(&p, out) == EL_ERR_INVALID_ARG);
    CHECK(strstr(el_last_error(), "held out"));
    el_image_model *m;
    CHECK(el_image_model_load("tests/golden/llama_f32_gqa.gguf", &m) == EL_ERR_MISMATCH);
    CHECK(strstr(el_last_error(), "not an image model"));
    return TEST_PASS;
}

/* The guide adapter's target is the base's guided prediction for the batch's classes: its B
 * starts at zero, so the first step's loss is the base against itself guided, (g - 1)^2 times
 * the squared difference of its class and no-class predictions: zero at g = 1 (but for the
 * rounding of eps_none + (eps_class - eps_none)), and at
 * g = 3 four times what it is at g = 2. A distilled adapter starts as its teacher: under a
 * profile its first loss is what the integer form moves the prediction, small against the
 * guide's. */
static int test_guide_and_distill_targets(void) {
    char base[4200], out[4200], ad[4200], distilled[4200];
    snprintf(base, sizeof base, "%s/guide_base.gguf", test_tmp_dir());
    snprintf(out, sizeof out, "%s/guide.gguf", test_tmp_dir());
    el_diffusion_train_params p = tiny();
    p.n_steps = 30;
    CHECK(el_train_diffusion(&p, base) == EL_OK);
    el_diffusion_lora_params lp = el_diffusion_lora_default_params();
    lp.base_path = base, lp.task = "guide", lp.rank = 2;
    float first[3];
    for (int k = 0; k < 3; k++) {
        watch w = {.stop_at = -1, .first_step = -1};
        p = tiny();
        p.n_steps = 1, p.progress = on_step, p.user = &w;
        lp.guidance = (float)(k + 1);
        CHECK(el_finetune_diffusion(&p, &lp, out) == EL_OK);
        first[k] = w.first;
    }
    test_note("first losses at guidance 1, 2, 3: %g %g %g", first[0], first[1], first[2]);
    CHECK(first[0] < 1e-9f * first[1] && first[1] > 0.0f);
    CHECK(fabsf(first[2] - 4.0f * first[1]) < 1e-3f * first[2]);
    /* distillation: the adapter as its own teacher under a W8A8 profile of the base */
    el_image_model *m;
    CHECK(el_image_model_load(base, &m) == EL_OK);
    el_image_params ip = el_image_default_params();
    ip.n_steps = 4, ip.n_threads = 1;
    el_image_profile *pr;
    CHECK(el_image_profile_calibrate(m, &ip, 4, EL_IMAGE_W8A8, &pr) == EL_OK);
    snprintf(ad, sizeof ad, "%s/guide.profile.gguf", test_tmp_dir());
    CHECK(el_image_profile_save(pr, ad) == EL_OK);
    el_image_profile_free(pr);
    el_image_model_free(m);
    watch w = {.stop_at = -1, .first_step = -1};
    p = tiny();
    p.n_steps = 1, p.progress = on_step, p.user = &w;
    lp.teacher_path = out, lp.profile_path = ad;
    snprintf(distilled, sizeof distilled, "%s/guide.q.gguf", test_tmp_dir());
    CHECK(el_finetune_diffusion(&p, &lp, distilled) == EL_OK);
    test_note("first distillation loss under W8A8: %g", w.first);
    CHECK(w.first > 0.0f && w.first < 0.1f * first[2]);
    return TEST_PASS;
}

int main(void) {
    const char *pi = test_data_path("images/t10k-images-idx3-ubyte.gz");
    if (pi) snprintf(images, sizeof images, "%s", pi);
    const char *pl = test_data_path("images/t10k-labels-idx1-ubyte.gz");
    if (pl) snprintf(labels, sizeof labels, "%s", pl);
    if (!pi || !pl) {
        printf("SKIP vision_train: the MNIST files are not in ../shared/data/images\n");
        return 0;
    }
    run_test("diffusion_resume_same_bytes", test_resume_same_bytes);
    run_test("diffusion_loss_falls", test_loss_falls);
    run_test("diffusion_bad_inputs", test_bad_inputs);
    run_test("guide_and_distill_targets", test_guide_and_distill_targets);
    return tests_exit_code();
}
