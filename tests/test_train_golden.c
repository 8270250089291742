/* test_train_golden.c - the training model and optimizer against golden files written by PyTorch
 * (tests/golden/make_train_golden.py: autograd + torch.optim.AdamW + clip_grad_norm_): the first
 * loss, every gradient, the losses of 5 steps (warmup + cosine, accumulation 2, clipping, decay on
 * matrices only) and the parameters after them; untied, tied, and LoRA with the base frozen.
 * Quantization-aware (version 2 files): the first loss and gradients with int4 weights and int8
 * inputs (torch's fake_quantize_per_channel_affine and _per_tensor_affine, whose gradients are
 * the straight-through ones), with int8 inputs under a LoRA adapter, and with a LoRA adapter's
 * terms on a profile's int8 grids (x, A, A x, B). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "train/trainer.h"

typedef struct golden {
    int32_t dim, n_layer, n_head, n_head_kv, n_ff, n_vocab, tied, B, T, rank;
    float alpha;
    int32_t int4, n_sites, n_lora;
    float *scales, *lora_scales;
    int32_t n_steps, accum, warmup;
    float lr, min_ratio, weight_decay, beta1, beta2, eps, clip;
    int32_t *tokens, *targets;
    float *mask, *base, *lora, loss0, *grad, *losses, *final;
} golden;

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Reads the header; the arrays point into buf. Sizes come from the C table. */
static int parse(char *buf, size_t len, golden *g, el_tmodel *m) {
    CHECK(len > 8 && !memcmp(buf, "ELTG", 4));
    uint32_t version;
    memcpy(&version, buf + 4, 4);
    CHECK(version == 1 || version == 2);
    char *p = buf + 8;
    memcpy(&g->dim, p, 10 * 4), p += 40;
    memcpy(&g->alpha, p, 4), p += 4;
    g->int4 = g->n_sites = 0;
    if (version == 2) {
        memcpy(&g->int4, p, 8), p += 8;
        g->scales = (float *)p, p += (size_t)g->n_sites * 4;
        memcpy(&g->n_lora, p, 4), p += 4;
        g->lora_scales = (float *)p, p += (size_t)g->n_lora * 4;
    }
    memcpy(&g->n_steps, p, 12), p += 12;
    memcpy(&g->lr, p, 28), p += 28;
    el_tconfig c = {.dim = g->dim, .n_layer = g->n_layer, .n_head = g->n_head,
                    .n_head_kv = g->n_head_kv, .n_ff = g->n_ff, .n_ctx = g->T,
                    .n_vocab = g->n_vocab, .tied = g->tied, .rms_eps = 1e-5f,
                    .rope_base = 10000.0f};
    CHECK(el_tmodel_init(m, &c) == EL_OK);
    if (g->rank) {
        CHECK(el_tmodel_add_lora(m, g->rank, g->alpha, 0x7f, 0) == EL_OK);
    }
    if (version == 2) {
        CHECK(el_tmodel_set_qat(m, g->int4, 0.0f) == EL_OK);
        CHECK(g->n_sites == g->n_layer * EL_TN_LINEAR + 1);
        memcpy(m->qat.x_scale, g->scales, (size_t)g->n_sites * 4);
        if (g->n_lora) {
            CHECK(g->n_lora == g->n_layer * EL_TN_LINEAR * 4 && el_tmodel_set_qat_lora(m) == EL_OK);
            memcpy(m->qat.lora_scale, g->lora_scales, (size_t)g->n_lora * 4);
        }
    }
    size_t nb = (size_t)(g->n_steps ? g->n_steps * g->accum : 1) * g->B * g->T;
    size_t n_train = g->rank ? m->lora.n_floats : m->base.n_floats;
    g->tokens = (int32_t *)p, p += nb * 4;
    g->targets = (int32_t *)p, p += nb * 4;
    g->mask = (float *)p, p += nb * 4;
    g->base = (float *)p, p += m->base.n_floats * 4;
    g->lora = (float *)p, p += m->lora.n_floats * 4;
    memcpy(&g->loss0, p, 4), p += 4;
    g->grad = (float *)p, p += n_train * 4;
    g->losses = (float *)p, p += (size_t)g->n_steps * 4;
    g->final = (float *)p, p += g->n_steps ? n_train * 4 : 0;
    CHECK((size_t)(p - buf) == len);
    memcpy(m->w, g->base, m->base.n_floats * 4);
    if (g->rank)
        memcpy(m->lw, g->lora, m->lora.n_floats * 4);
    return TEST_PASS;
}

static int run_case(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "tests/golden/train_%s.bin", name);
    size_t len;
    char *buf = slurp(path, &len);
    CHECK(buf != NULL);
    golden g;
    el_tmodel m;
    if (parse(buf, len, &g, &m) != TEST_PASS) {
        free(buf);
        return TEST_FAIL;
    }
    el_threadpool *tp;
    CHECK(el_threadpool_create(2, &tp) == EL_OK);
    el_trainer_hp hp = {.B = g.B, .T = g.T, .accum = g.accum, .n_steps = g.n_steps ? g.n_steps : 1,
                        .warmup = g.warmup, .lr = g.lr, .min_ratio = g.min_ratio, .clip = g.clip,
                        .adamw = {g.beta1, g.beta2, g.eps, g.weight_decay}};
    el_trainer t;
    CHECK(el_trainer_init(&t, &m, g.rank > 0 ? EL_TRAIN_LORA : EL_TRAIN_BASE, &hp, tp) == EL_OK);
    int res = TEST_PASS;

    /* loss and gradients of the first micro-batch */
    float loss0 = el_tmodel_forward(&m, t.acts, tp, g.tokens, g.targets, g.mask, NULL);
    el_tmodel_backward(&m, t.acts, tp, g.rank ? NULL : t.g, g.rank ? t.g : NULL, NULL, 1.0f);
    if (fabsf(loss0 - g.loss0) > 1e-5f * fmaxf(1.0f, fabsf(g.loss0))) {
        test_note("%s: loss %.7f, torch %.7f", name, loss0, g.loss0);
        res = TEST_FAIL;
    }
    for (int32_t i = 0; i < t.tb->n && res == TEST_PASS; i++) {
        const el_ttensor *tt = &t.tb->t[i];
        size_t n = (size_t)(tt->n_out * tt->n_in);
        double err = test_max_rel_err(t.g + tt->offset, g.grad + tt->offset, n);
        if (err > 1e-4) {
            test_note("%s: gradient of %s differs from torch by %.3g", name, tt->name, err);
            res = TEST_FAIL;
        }
    }
    /* the optimizer steps */
    size_t mb = (size_t)g.accum * g.B * g.T;
    for (int32_t s = 0; s < g.n_steps && res == TEST_PASS; s++) {
        float loss = el_trainer_step(&t, g.tokens + s * mb, g.targets + s * mb, g.mask + s * mb);
        if (fabsf(loss - g.losses[s]) > 1e-4f * fmaxf(1.0f, fabsf(g.losses[s]))) {
            test_note("%s: step %d loss %.7f, torch %.7f", name, s, loss, g.losses[s]);
            res = TEST_FAIL;
        }
    }
    if (res == TEST_PASS && g.n_steps) {
        double err = test_max_rel_err(t.p, g.final, t.n);
        if (err > 1e-4) {
            test_note("%s: parameters after %d steps differ from torch by %.3g", name, g.n_steps,
                      err);
            res = TEST_FAIL;
        }
    }
    /* LoRA training leaves the base untouched */
    if (res == TEST_PASS && g.rank && memcmp(m.w, g.base, m.base.n_floats * 4) != 0) {
        test_note("LoRA training changed the base");
        res = TEST_FAIL;
    }
    el_trainer_free(&t);
    el_threadpool_free(tp);
    el_tmodel_free(&m);
    free(buf);
    return res;
}

static int test_untied(void) { return run_case("untied"); }
static int test_tied(void) { return run_case("tied"); }
static int test_lora(void) { return run_case("lora"); }
static int test_qat(void) { return run_case("qat"); }
static int test_qat_lora(void) { return run_case("qat_lora"); }
static int test_qat_profile(void) { return run_case("qat_profile"); }

int main(void) {
    run_test("torch_untied", test_untied);
    run_test("torch_tied", test_tied);
    run_test("torch_lora", test_lora);
    run_test("torch_qat_w4a8", test_qat);
    run_test("torch_qat_lora_a8", test_qat_lora);
    run_test("torch_qat_lora_under_profile", test_qat_profile);
    return tests_exit_code();
}
