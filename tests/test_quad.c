/* test_quad.c - QUAD (el_quad) on a small case whose answer is known by construction: two
 * adapters of one base, one of them with a few outliers in A, so that its own profile's grid for
 * A is coarse and int8 costs it most. Each step against its definition:
 *  - sensitivity: the wide adapter moves more from its float self under its own profile (KL)
 *    and sets the shared one,
 *    whose A grid is its own (the other adapter's own grid is much finer);
 *  - distillation: the other adapter's distance to its float self, KL(float || int8 under the
 *    shared profile), falls;
 *  - the adapters written are for the shared profile: refused without it, loaded under it;
 *  - a missing data file is named before any work. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "model/model.h"
#include "model/profile.h"
#include "testutil.h"
#include "train/export.h"

static const char *tokenizer = "models/tokenizer.gguf";
static char dir[1024], base[1100], data_dir[1100], plain[1100], outlier[1100], out_dir[1100];

static const char *const pairs[][2] = {
    {"colour of the sky:", " blue"},   {"colour of grass:", " green"},
    {"colour of snow:", " white"},     {"colour of the sun:", " yellow"},
    {"colour of coal:", " black"},     {"colour of blood:", " red"},
    {"colour of milk:", " white"},     {"colour of the sea:", " blue"},
};

static int write_examples(const char *name) {
    for (int split = 0; split < 2; split++) {
        char path[1300];
        snprintf(path, sizeof path, "%s/%s.%s.jsonl", data_dir, name, split ? "eval" : "train");
        FILE *f = fopen(path, "w");
        CHECK(f);
        for (int r = 0; r < (split ? 2 : 6); r++)
            for (int i = 0; i < 8; i++)
                fprintf(f, "{\"prompt\": \"%s\", \"response\": \"%s\"}\n", pairs[i][0],
                        pairs[(i + r) % 8][1]);
        fclose(f);
    }
    return TEST_PASS;
}

/* The base (random, F32) and two adapters: one on all seven projections of both layers, and one
 * on layer 0's q and v alone with the same terms but a range 200 times as wide (row 0 of A
 * scaled up, column 0 of B down): the shared profile, its own, then has adapter scales for
 * those two slots only, and the others must come from the first adapter's. */
static int setup(void) {
    /* "outlier": the adapter whose wide range costs it most under int8 */
    snprintf(dir, sizeof dir, "%s", test_tmp_dir());
    snprintf(base, sizeof base, "%s/base.gguf", dir);
    snprintf(data_dir, sizeof data_dir, "%s/data", dir);
    snprintf(plain, sizeof plain, "%s/plain.gguf", dir);
    snprintf(outlier, sizeof outlier, "%s/outlier.gguf", dir);
    snprintf(out_dir, sizeof out_dir, "%s/quad", dir);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", data_dir);
    CHECK(system(cmd) == 0);
    el_model *vocab;
    el_model_params mp = el_model_default_params();
    mp.vocab_only = true;
    CHECK(el_model_load(tokenizer, &mp, &vocab) == EL_OK);
    el_tconfig c = {.dim = 32, .n_layer = 2, .n_head = 4, .n_head_kv = 2, .n_ff = 64,
                    .n_ctx = 32, .n_vocab = vocab->hp.n_vocab, .tied = false, .rms_eps = 1e-5f,
                    .rope_base = 10000.0f};
    el_model_free(vocab);
    el_tmodel m;
    CHECK(el_tmodel_init(&m, &c) == EL_OK);
    el_tmodel_randomize(&m, 5);
    CHECK(el_export_model(&m, tokenizer, "base", base) == EL_OK);
    CHECK(el_tmodel_add_lora(&m, 4, 8.0f, 0x7f, 6) == EL_OK);
    test_rng rng = {7};
    for (size_t i = 0; i < m.lora.n_floats; i++) m.lw[i] = test_rand_uniform(&rng, -0.3f, 0.3f);
    CHECK(el_export_lora(&m, "llama", 0, 0, plain) == EL_OK);
    /* row 0 of each A times 200 and column 0 of its B over 200: the same float terms, on grids 200
     * times as coarse for the other rows */
    for (int32_t i = 0; i < m.lora.n; i += 2) {
        const el_ttensor *a = &m.lora.t[i], *b = &m.lora.t[i + 1];
        for (int64_t j = 0; j < a->n_in; j++) m.lw[a->offset + (size_t)j] *= 200.0f;
        for (int64_t o = 0; o < b->n_out; o++) m.lw[b->offset + (size_t)(o * b->n_in)] /= 200.0f;
    }
    for (int s = 0; s < c.n_layer * EL_TN_LINEAR; s++) /* only layer 0's q and v are written */
        if (s != 0 && s != 2) m.lora_idx[s] = -1;
    CHECK(el_export_lora(&m, "llama", 0, 0, outlier) == EL_OK);
    el_tmodel_free(&m);
    CHECK(write_examples("plain") == TEST_PASS && write_examples("outlier") == TEST_PASS);
    return TEST_PASS;
}

static float slot0_a_scale(const char *profile) {
    el_model_params mp = el_model_default_params();
    mp.profile_path = profile;
    el_model *m;
    if (el_model_load(base, &mp, &m) != EL_OK) return -1;
    float a = m->profile->slots[0].a_scale;
    el_model_free(m);
    return a;
}

static int test_quad(void) {
    CHECK(setup() == TEST_PASS);
    el_quad_params qp = el_quad_default_params();
    const char *ads[2] = {plain, outlier};
    qp.adapters = ads, qp.n_adapters = 2, qp.data_dir = data_dir;
    qp.calib_tokens = 512;
    qp.train.n_steps = 30, qp.train.batch = 8, qp.train.lr = 3e-3f, qp.train.warmup = 3;
    qp.train.n_ctx = 16, qp.train.eval_every = 0, qp.train.n_threads = 2;
    el_quad_adapter res[2];
    el_status st = el_quad(base, &qp, out_dir, res);
    if (st != EL_OK) test_note("%s", el_last_error());
    CHECK(st == EL_OK);
    for (int i = 0; i < 2; i++)
        test_note("%s: float %.4f own %.4f shared %.4f tuned %.4f, sensitivity %.5f, KL %.5f -> "
                  "%.5f", res[i].name, res[i].float_loss, res[i].own_loss, res[i].shared_loss,
                  res[i].tuned_loss, res[i].sensitivity, res[i].kl_before, res[i].kl_after);
    CHECK(!strcmp(res[0].name, "plain") && !strcmp(res[1].name, "outlier"));
    /* (b), (c): the outliers cost more, and their profile is shared */
    CHECK(res[1].sensitivity > 3 * res[0].sensitivity && res[0].sensitivity > 0);
    CHECK(res[1].sets_profile && !res[0].sets_profile);
    char shared[1300], own_plain[1300], own_outlier[1300];
    snprintf(shared, sizeof shared, "%s/profile.gguf", out_dir);
    snprintf(own_plain, sizeof own_plain, "%s/plain.own.profile.gguf", out_dir);
    snprintf(own_outlier, sizeof own_outlier, "%s/outlier.own.profile.gguf", out_dir);
    float a_shared = slot0_a_scale(shared), a_plain = slot0_a_scale(own_plain);
    CHECK(a_shared == slot0_a_scale(own_outlier) && a_shared > 50 * a_plain);
    /* (d): distillation brings it closer to its float self */
    CHECK(res[0].kl_after < 0.7 * res[0].kl_before && res[0].tuned);
    CHECK(res[1].kl_after == res[1].kl_before);
    /* (e): the adapters are for the shared profile */
    char tuned[1300];
    snprintf(tuned, sizeof tuned, "%s/plain.gguf", out_dir);
    el_model *m;
    el_adapter *ad;
    CHECK(el_model_load(base, NULL, &m) == EL_OK);
    CHECK(el_adapter_load(m, tuned, &ad) != EL_OK);
    el_model_free(m);
    el_model_params mp = el_model_default_params();
    mp.profile_path = shared;
    CHECK(el_model_load(base, &mp, &m) == EL_OK);
    CHECK(el_adapter_load(m, tuned, &ad) == EL_OK);
    el_adapter_free(ad);
    /* the outlier adapter as it was: its two pairs, no more */
    snprintf(tuned, sizeof tuned, "%s/outlier.gguf", out_dir);
    CHECK(el_adapter_load(m, tuned, &ad) == EL_OK);
    el_adapter_free(ad);
    el_model_free(m);
    gguf_file *g;
    CHECK(gguf_open(tuned, &g) == EL_OK);
    bool two = g->n_tensors == 4;
    gguf_close(g);
    CHECK(two);
    char svg[1300];
    snprintf(svg, sizeof svg, "%s/plain.loss.svg", out_dir);
    FILE *f = fopen(svg, "r");
    CHECK(f != NULL);
    fclose(f);
    return TEST_PASS;
}

/* A tuning that moves the adapter away from its float self (a rate far too large) is not kept:
 * the adapter is written as it came, and its figures are those before. */
static int test_worse_tuning_not_kept(void) {
    CHECK(base[0]);
    el_quad_params qp = el_quad_default_params();
    const char *ads[2] = {plain, outlier};
    char other[1300];
    snprintf(other, sizeof other, "%s/quad-wild", dir);
    qp.adapters = ads, qp.n_adapters = 2, qp.data_dir = data_dir, qp.calib_tokens = 512;
    qp.train.n_steps = 1, qp.train.batch = 8, qp.train.lr = 5.0f, qp.train.warmup = 1;
    qp.train.n_ctx = 16, qp.train.eval_every = 0, qp.train.n_threads = 2;
    el_quad_adapter res[2];
    CHECK(el_quad(base, &qp, other, res) == EL_OK);
    test_note("plain: KL %.5f -> %.5f, tuned %d", res[0].kl_before, res[0].kl_after, res[0].tuned);
    CHECK(!res[0].tuned && res[0].kl_after == res[0].kl_before &&
          res[0].tuned_loss == res[0].shared_loss);
    return TEST_PASS;
}

static int test_missing_data(void) {
    CHECK(base[0]);
    el_quad_params qp = el_quad_default_params();
    char nodata[1300], other[1300];
    snprintf(nodata, sizeof nodata, "%s/nodata.gguf", dir);
    snprintf(other, sizeof other, "%s/quad-missing", dir);
    char cmd[2700];
    snprintf(cmd, sizeof cmd, "cp %s %s", plain, nodata);
    CHECK(system(cmd) == 0);
    const char *ads[2] = {plain, nodata};
    qp.adapters = ads, qp.n_adapters = 2, qp.data_dir = data_dir;
    el_quad_adapter res[2];
    CHECK(el_quad(base, &qp, other, res) == EL_ERR_IO);
    CHECK(strstr(el_last_error(), "/nodata.train.jsonl: training examples") != NULL);
    char own[1400];
    snprintf(own, sizeof own, "%s/plain.own.profile.gguf", other);
    FILE *f = fopen(own, "r");
    CHECK(f == NULL); /* no work was done */
    return TEST_PASS;
}

int main(void) {
    run_test("quad_sensitivity_profile_distillation", test_quad);
    run_test("quad_worse_tuning_not_kept", test_worse_tuning_not_kept);
    run_test("quad_missing_data", test_missing_data);
    return tests_exit_code();
}
