/* test_qat.c - quantization-aware training (train/fakequant.h, el_tmodel's qat):
 *  - the fake quantizers give the run-time quantizers' values bit for bit (W4 rows, static A8);
 *  - tracked scales follow their definition (the first training forward sets amax / 127, later
 *    ones move by the momentum; evaluations leave them);
 *  - the straight-through gradients are the exact gradients of the loss with each value's
 *    rounding held where it fell: directional central differences of the held loss, for the base
 *    (int4 weights, int8 inputs, some clipped) and for a LoRA adapter over int8 inputs;
 *  - the exported model is the model as trained: the run time's logits from the W4 file (and a
 *    LoRA adapter trained against it) equal the training forward's fake-quantized ones, where a
 *    float forward of the same weights is far off;
 *  - quantization-aware fine-tuning refuses bases without int8 inputs at static scales; a Q4_0
 *    base under a profile has them (its activation blocks at the profile's scales), and the
 *    training forward of an int8 adapter on it is the run time's;
 *  - a model read from a file with its FFN widened (where QAT of a float model starts) is the
 *    file's model: the run time's logits of the file equal the widened model's; the new
 *    channels' down columns get gradient from the first step, their gate and up rows none;
 *  - distillation's loss, KL(teacher || model), against its formula in double, its gradient
 *    against differences, 0 for a model that is its own teacher.
 * The gradients are also checked against PyTorch's fake quantizers in test_train_golden. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelora-tools.h"
#include "kernels/edge.h"
#include "model/model.h"
#include "model/profile.h"
#include "testutil.h"
#include "train/export.h"
#include "train/fakequant.h"
#include "train/layers.h"
#include "train/trainer.h"

/* ------------------------------------------------------------- the quantizers */

static int test_int4_rows_are_w4(void) {
    enum { N = 96, ROWS = 5 };
    float w[ROWS * N], fq[ROWS * N], back[N];
    uint8_t row[sizeof(float) + N / 2];
    test_rng rng = {3};
    for (int i = 0; i < ROWS * N; i++) w[i] = test_rand_uniform(&rng, -1.0f, 1.0f);
    memset(w + N, 0, N * sizeof *w);         /* a zero row */
    w[2 * N + 7] = 40.0f;                    /* an outlier: most of its row rounds to 0 */
    for (int i = 0; i < N; i++) w[3 * N + i] = (float)(i % 15 - 7) * 0.125f; /* on a grid */
    el_fq_int4_rows(fq, w, ROWS, N);
    for (int r = 0; r < ROWS; r++) {
        el_w4_from_float(w + r * N, row, N);
        el_w4_to_float(row, back, N);
        CHECK(memcmp(back, fq + r * N, sizeof back) == 0);
    }
    return TEST_PASS;
}

static int test_int8_is_static_a8(void) {
    enum { N = 300 };
    float x[N], fq[N], back[N];
    uint8_t row[sizeof(el_a8_header) + N];
    test_rng rng = {4};
    float d = 0.01f;
    int clipped = 0;
    for (int i = 0; i < N; i++) x[i] = test_rand_uniform(&rng, -1.6f, 1.6f);
    x[5] = 127.49f * d, x[6] = 127.51f * d, x[7] = -127.51f * d; /* either side of the clamp */
    el_fq_int8(fq, x, N, d);
    el_a8_from_float_static(x, row, N, d);
    el_a8_to_float(row, back, N);
    CHECK(memcmp(back, fq, sizeof back) == 0);
    for (int i = 0; i < N; i++) {
        bool want = fabs((double)x[i] / d) >= 127.5;
        CHECK(el_fq_int8_clipped(x[i], d) == want);
        clipped += want;
    }
    CHECK(!el_fq_int8_clipped(x[5], d) && el_fq_int8_clipped(x[6], d) && clipped > 50);
    float dx[N] = {0}, dy[N];
    for (int i = 0; i < N; i++) dy[i] = (float)i;
    el_fq_int8_backward(dx, dy, x, N, d);
    for (int i = 0; i < N; i++) CHECK(dx[i] == (el_fq_int8_clipped(x[i], d) ? 0.0f : dy[i]));
    return TEST_PASS;
}

/* ------------------------------------------------------------- a tiny model */

enum { B = 2, T = 6, VOCAB = 24 };

static el_tconfig tiny_config(int32_t n_vocab) {
    el_tconfig c = {.dim = 32, .n_layer = 2, .n_head = 4, .n_head_kv = 2, .n_ff = 64,
                    .n_ctx = 16, .n_vocab = n_vocab, .tied = false, .rms_eps = 1e-5f,
                    .rope_base = 10000.0f};
    return c;
}

/* Weights larger than an initialization's, so that every path carries gradient. */
static void fill_weights(el_tmodel *m, uint32_t seed) {
    test_rng rng = {seed};
    for (size_t i = 0; i < m->base.n_floats; i++) m->w[i] = test_rand_uniform(&rng, -0.4f, 0.4f);
    for (int32_t i = 0; i < m->base.n; i++)
        if (!m->base.t[i].decay)
            for (int64_t j = 0; j < m->base.t[i].n_in; j++)
                m->w[m->base.t[i].offset + (size_t)j] = test_rand_uniform(&rng, 0.5f, 1.5f);
    for (size_t i = 0; i < m->lora.n_floats; i++) m->lw[i] = test_rand_uniform(&rng, -0.3f, 0.3f);
}

static void fill_batch(int32_t *tok, int32_t *tgt, int n, int32_t n_vocab, uint32_t seed) {
    test_rng rng = {seed};
    for (int i = 0; i < n; i++) {
        tok[i] = (int32_t)(test_rand_u32(&rng) % (uint32_t)n_vocab);
        tgt[i] = (int32_t)(test_rand_u32(&rng) % (uint32_t)n_vocab);
    }
}

/* ------------------------------------------------------------- tracked scales */

/* The input of layer 0's q, k and v: the embedding rows through the attention norm, in double,
 * written here from the definition. */
static double layer0_amax(const el_tmodel *m, const int32_t *tok, int n) {
    int D = m->c.dim;
    const float *e = el_tm_embd(m, m->w), *g = el_tm_layer(m, m->w, 0, EL_TK_ATTN_NORM);
    double amax = 0;
    for (int r = 0; r < n; r++) {
        double ss = 0;
        for (int i = 0; i < D; i++) ss += (double)e[tok[r] * D + i] * e[tok[r] * D + i];
        double s = 1.0 / sqrt(ss / D + m->c.rms_eps);
        for (int i = 0; i < D; i++) amax = fmax(amax, fabs(g[i] * e[tok[r] * D + i] * s));
    }
    return amax;
}

static int test_tracked_scales(void) {
    el_tconfig c = tiny_config(VOCAB);
    el_tmodel m;
    CHECK(el_tmodel_init(&m, &c) == EL_OK);
    fill_weights(&m, 11);
    const float mu = 0.25f;
    CHECK(el_tmodel_set_qat(&m, true, mu) == EL_OK);
    el_threadpool *tp;
    CHECK(el_threadpool_create(2, &tp) == EL_OK);
    /* lr 0: the weights stay, so the inputs of the second batch are known too */
    el_trainer_hp hp = {.B = B, .T = T, .accum = 1, .n_steps = 2, .warmup = 0, .lr = 0.0f,
                        .min_ratio = 1.0f, .clip = 0.0f, .adamw = {0.9f, 0.95f, 1e-8f, 0.0f}};
    el_trainer t;
    CHECK(el_trainer_init(&t, &m, EL_TRAIN_BASE, &hp, tp) == EL_OK);
    int32_t tok[2][B * T], tgt[2][B * T];
    fill_batch(tok[0], tgt[0], B * T, VOCAB, 1);
    fill_batch(tok[1], tgt[1], B * T, VOCAB, 2);
    CHECK(m.qat.x_scale[0] == 0.0f);
    el_trainer_eval(&t, tok[0], tgt[0], NULL); /* an evaluation tracks nothing */
    CHECK(m.qat.x_scale[0] == 0.0f);
    el_trainer_step(&t, tok[0], tgt[0], NULL);
    double s1 = layer0_amax(&m, tok[0], B * T) / 127;
    CHECK(fabs(m.qat.x_scale[0] - s1) <= 1e-6 * s1);
    CHECK(m.qat.x_scale[1] == m.qat.x_scale[0] && m.qat.x_scale[2] == m.qat.x_scale[0]);
    for (int i = 0; i < c.n_layer * EL_TN_LINEAR; i++) CHECK(m.qat.x_scale[i] > 0.0f);
    CHECK(m.qat.x_scale[c.n_layer * EL_TN_LINEAR] == 0.0f); /* the head is never tracked */
    el_trainer_eval(&t, tok[1], tgt[1], NULL);
    CHECK(fabs(m.qat.x_scale[0] - s1) <= 1e-6 * s1);
    el_trainer_step(&t, tok[1], tgt[1], NULL);
    double t2 = layer0_amax(&m, tok[1], B * T) / 127, s2 = s1 + mu * (t2 - s1);
    CHECK(fabs(t2 - s1) > 1e-3 * s1); /* the second batch moves it */
    CHECK(fabs(m.qat.x_scale[0] - s2) <= 1e-6 * s2);
    el_trainer_free(&t);
    el_threadpool_free(tp);
    el_tmodel_free(&m);
    return TEST_PASS;
}

/* ------------------------------------------------------------- straight-through gradients */

/* What a directional check allows beside 2% of the derivative: abs_tol, and gnorm_tol times
 * h times the sum of |gradient| (the curvature's term); and what runs before each forward. */
typedef struct fd_check {
    uint32_t seed;
    double abs_tol, gnorm_tol;
    void (*before)(void *user);
    void *user;
} fd_check;

/* For each tensor of a table: the loss's central difference along a random +-1 direction
 * against the gradient's dot product with it. */
static int directional_fd(el_tmodel *m, el_tacts *a, el_threadpool *tp, const el_ttable *tb,
                          float *block, const float *grads, const int32_t *tok,
                          const int32_t *tgt, const fd_check *fc) {
    test_rng rng = {fc->seed};
    const float h = 2e-3f;
    for (int32_t i = 0; i < tb->n; i++) {
        const el_ttensor *t = &tb->t[i];
        size_t n = (size_t)(t->n_out * t->n_in);
        float *p = block + t->offset, *keep = malloc(n * sizeof *keep);
        int8_t *dir = malloc(n);
        CHECK(keep && dir);
        memcpy(keep, p, n * sizeof *p);
        double want = 0, gnorm = 0;
        for (size_t j = 0; j < n; j++) {
            dir[j] = (int8_t)(test_rand_u32(&rng) & 1 ? 1 : -1);
            want += dir[j] * (double)grads[t->offset + j];
            gnorm += fabs(grads[t->offset + j]);
        }
        for (size_t j = 0; j < n; j++) p[j] = keep[j] + h * dir[j];
        if (fc->before) fc->before(fc->user);
        double lp = el_tmodel_forward(m, a, tp, tok, tgt, NULL, NULL);
        for (size_t j = 0; j < n; j++) p[j] = keep[j] - h * dir[j];
        if (fc->before) fc->before(fc->user);
        double lm = el_tmodel_forward(m, a, tp, tok, tgt, NULL, NULL);
        memcpy(p, keep, n * sizeof *p);
        double fd = (lp - lm) / (2 * h);
        double tol = fc->abs_tol + 2e-2 * fabs(want) + fc->gnorm_tol * gnorm * h;
        if (!(fabs(fd - want) <= tol)) {
            test_note("%s: directional derivative %.6g, finite difference %.6g", t->name, want,
                      fd);
            free(keep);
            free(dir);
            return TEST_FAIL;
        }
        free(keep);
        free(dir);
    }
    return TEST_PASS;
}

/* A model with QAT as set by `set`, its scales from one tracking forward times 0.8 (so that the
 * largest inputs clip), rounding held: the gradients of the block trained against the held
 * loss's differences. */
static int held_gradients(bool lora, bool int4) {
    el_tconfig c = tiny_config(VOCAB);
    el_tmodel m;
    CHECK(el_tmodel_init(&m, &c) == EL_OK);
    if (lora) CHECK(el_tmodel_add_lora(&m, 4, 8.0f, 0x7f, 0) == EL_OK);
    fill_weights(&m, lora ? 21 : 22);
    CHECK(el_tmodel_set_qat(&m, int4, 1.0f) == EL_OK);
    el_threadpool *tp;
    el_tacts *a;
    CHECK(el_threadpool_create(2, &tp) == EL_OK && el_tacts_create(&m, B, T, &a) == EL_OK);
    int32_t tok[B * T], tgt[B * T];
    fill_batch(tok, tgt, B * T, VOCAB, 5);
    el_tacts_set_training(a, true);
    float plain = el_tmodel_forward(&m, a, tp, tok, tgt, NULL, NULL);
    el_tacts_set_training(a, false);
    int sites = c.n_layer * EL_TN_LINEAR + 1;
    m.qat.x_scale[sites - 1] = lora ? m.qat.x_scale[0] : 0.0f; /* the head's input int8 too */
    for (int i = 0; i < sites; i++) m.qat.x_scale[i] *= 0.8f;
    m.qat.momentum = 0.0f;
    float unheld = el_tmodel_forward(&m, a, tp, tok, tgt, NULL, NULL);
    CHECK(fabsf(unheld - plain) > 1e-4f); /* the new scales change the loss */
    CHECK(el_tacts_hold_rounding(a, &m) == EL_OK);
    float held = el_tmodel_forward(&m, a, tp, tok, tgt, NULL, NULL);
    CHECK(fabsf(held - unheld) <= 1e-6f * fabsf(unheld)); /* held where it was */
    const el_ttable *tb = lora ? &m.lora : &m.base;
    float *grads = calloc(tb->n_floats, sizeof *grads);
    CHECK(grads);
    el_tmodel_backward(&m, a, tp, lora ? NULL : grads, lora ? grads : NULL, NULL, 1.0f);
    /* the float32 loss's rounding (~1e-6) over 2h, and the curvature's h^2 term */
    fd_check fc = {.seed = 99, .abs_tol = 2e-6 / (2 * 2e-3), .gnorm_tol = 1e-3};
    int res = directional_fd(&m, a, tp, tb, lora ? m.lw : m.w, grads, tok, tgt, &fc);
    free(grads);
    el_tacts_free(a);
    el_threadpool_free(tp);
    el_tmodel_free(&m);
    return res;
}

static int test_held_gradients_w4a8(void) { return held_gradients(false, true); }
static int test_held_gradients_lora_a8(void) { return held_gradients(true, false); }

/* ------------------------------------------------------------- the exported model */

static const char *tokenizer = "models/tokenizer.gguf";
static char qat_model[1100], qat_adapter[1100];

/* Max error of the run time's logits (model_path; profile_path and adapter_path or NULL) over rows 0..n-1 of
 * tokens, relative to the largest logit of want. */
static double runtime_error(const char *model_path, const char *profile_path,
                            const char *adapter_path, const int32_t *ids, int n,
                            const float *want) {
    el_model *m;
    el_adapter *ad = NULL;
    el_model_params mp = el_model_default_params();
    mp.profile_path = profile_path;
    if (el_model_load(model_path, &mp, &m) != EL_OK) return INFINITY;
    if (adapter_path && el_adapter_load_exact(m, adapter_path, &ad) != EL_OK) {
        el_model_free(m);
        return INFINITY;
    }
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 32, cp.n_batch = 32, cp.n_threads = 1;
    cp.kv_type = EL_KV_F32; /* the training forward keeps K and V in float */
    el_context *ctx;
    double worst = INFINITY;
    el_binding bind = {ad, 1.0f};
    if (el_context_create(m, &cp, &ctx) == EL_OK) {
        int32_t pos[32], seq[32];
        int8_t lg[32];
        for (int i = 0; i < n; i++) pos[i] = i, seq[i] = 0, lg[i] = 1;
        el_batch b = {.n_rows = n, .token = ids, .pos = pos, .seq_id = seq, .logits = lg};
        if ((!ad || el_context_bind(ctx, 0, &bind, 1) == EL_OK) && el_decode(ctx, &b) == EL_OK) {
            worst = 0;
            for (int i = 0; i < n; i++)
                worst = fmax(worst, test_max_rel_err(el_get_logits(ctx, i),
                                                     want + (size_t)i * m->hp.n_vocab,
                                                     (size_t)m->hp.n_vocab));
        }
        el_context_free(ctx);
    }
    el_adapter_free(ad);
    el_model_free(m);
    return worst;
}

enum { SEQ = 16 };

/* The tiny shape over the tokenizer's vocabulary (exported models carry its keys), in *m. */
static int tokenizer_model(el_tconfig *c, el_tmodel *m) {
    el_model *vocab;
    el_model_params mp = el_model_default_params();
    mp.vocab_only = true;
    CHECK(el_model_load(tokenizer, &mp, &vocab) == EL_OK);
    *c = tiny_config(vocab->hp.n_vocab);
    el_model_free(vocab);
    CHECK(el_tmodel_init(m, c) == EL_OK);
    return TEST_PASS;
}

static float *forward_logits(el_tmodel *m, const int32_t *ids) {
    el_threadpool *tp;
    el_tacts *a;
    float *logits = malloc((size_t)SEQ * m->c.n_vocab * sizeof *logits);
    if (!logits || el_threadpool_create(1, &tp) != EL_OK) return NULL;
    if (el_tacts_create(m, 1, SEQ, &a) == EL_OK) {
        el_tmodel_forward(m, a, tp, ids, NULL, NULL, logits);
        el_tacts_free(a);
    }
    el_threadpool_free(tp);
    return logits;
}

/* Trains a few steps with int4 weights and tracked int8 scales, exports, and runs the file. */
static int test_export_is_the_trained_model(void) {
    snprintf(qat_model, sizeof qat_model, "%s/qat.gguf", test_tmp_dir());
    el_tconfig c;
    el_tmodel m;
    CHECK(tokenizer_model(&c, &m) == TEST_PASS);
    el_tmodel_randomize(&m, 3);
    CHECK(el_tmodel_set_qat(&m, true, 0.3f) == EL_OK);
    el_threadpool *tp;
    CHECK(el_threadpool_create(2, &tp) == EL_OK);
    el_trainer_hp hp = {.B = B, .T = SEQ, .accum = 1, .n_steps = 4, .warmup = 1, .lr = 3e-2f,
                        .min_ratio = 0.1f, .clip = 1.0f, .adamw = {0.9f, 0.95f, 1e-8f, 0.0f}};
    el_trainer t;
    CHECK(el_trainer_init(&t, &m, EL_TRAIN_BASE, &hp, tp) == EL_OK);
    int32_t tok[B * SEQ], tgt[B * SEQ];
    for (int s = 0; s < 4; s++) {
        fill_batch(tok, tgt, B * SEQ, 300, 10 + (uint32_t)s);
        el_trainer_step(&t, tok, tgt, NULL);
    }
    el_trainer_free(&t);
    el_threadpool_free(tp);
    int32_t ids[SEQ];
    fill_batch(ids, tgt, SEQ, 300, 77);
    float *want = forward_logits(&m, ids);
    CHECK(want && el_export_model(&m, tokenizer, "qat", qat_model) == EL_OK);

    /* the file: W4 weights with their inputs' scales */
    el_model *fm;
    CHECK(el_model_load(qat_model, NULL, &fm) == EL_OK);
    for (int il = 0; il < c.n_layer; il++)
        for (int i = 0; i < EL_TN_LINEAR; i++) {
            const el_weight *w = el_layer_weight(&fm->layers[il], (el_linear)i);
            CHECK(w->type == EL_TYPE_W4);
            CHECK(w->act_scale == m.qat.x_scale[il * EL_TN_LINEAR + i] && w->act_scale > 0);
        }
    CHECK(fm->output.type == EL_TYPE_F32);
    el_model_free(fm);

    double err = runtime_error(qat_model, NULL, NULL, ids, SEQ, want);
    /* the same weights in floats: what the test would see if the file were not the QAT model */
    float *scales = m.qat.x_scale, *wq = m.qat.wq;
    m.qat.x_scale = NULL, m.qat.int4_weights = false;
    float *plain = forward_logits(&m, ids);
    m.qat.x_scale = scales, m.qat.wq = wq, m.qat.int4_weights = true;
    CHECK(plain);
    double off = test_max_rel_err(plain, want, (size_t)SEQ * c.n_vocab);
    test_note("run time vs QAT training forward: max rel err %.2g (a float forward: %.2g)", err,
              off);
    CHECK(err < 2e-4 && off > 20 * err);
    free(want);
    free(plain);
    el_tmodel_free(&m);
    return TEST_PASS;
}

/* Widening the FFN of a model read from a file, as `train --init --ffn` does. */
static int test_widened_model_is_the_model(void) {
    char path[1100];
    snprintf(path, sizeof path, "%s/narrow.gguf", test_tmp_dir());
    el_tconfig c;
    el_tmodel narrow, m = {0};
    CHECK(tokenizer_model(&c, &narrow) == TEST_PASS);
    fill_weights(&narrow, 5);
    CHECK(el_export_model(&narrow, tokenizer, "narrow", path) == EL_OK);
    el_tmodel_free(&narrow);
    el_model *fm;
    CHECK(el_model_load(path, NULL, &fm) == EL_OK);
    CHECK(el_tmodel_widen_from_model(&m, fm, c.n_ff - 32, 9) == EL_ERR_INVALID_ARG);
    el_tmodel_free(&m);
    CHECK(el_tmodel_widen_from_model(&m, fm, c.n_ff + 32, 9) == EL_OK);
    el_model_free(fm);
    CHECK(m.c.n_ff == c.n_ff + 32 && m.c.n_ctx == c.n_ctx);

    int32_t ids[SEQ], tgt[SEQ];
    fill_batch(ids, tgt, SEQ, 300, 7);
    float *want = forward_logits(&m, ids);
    CHECK(want);
    double err = runtime_error(path, NULL, NULL, ids, SEQ, want);
    test_note("the file's logits at run time vs the widened model's: max rel err %.2g", err);
    CHECK(err < 1e-5);
    free(want);

    el_threadpool *tp;
    el_tacts *a;
    float *g = calloc(m.base.n_floats, sizeof *g);
    CHECK(g && el_threadpool_create(1, &tp) == EL_OK);
    CHECK(el_tacts_create(&m, 1, SEQ, &a) == EL_OK);
    el_tmodel_forward(&m, a, tp, ids, tgt, NULL, NULL);
    el_tmodel_backward(&m, a, tp, g, NULL, NULL, 1.0f);
    el_tacts_free(a);
    el_threadpool_free(tp);
    for (int il = 0; il < c.n_layer; il++) {
        const float *down = el_tm_layer(&m, g, il, EL_TK_DOWN);
        const float *gate = el_tm_layer(&m, g, il, EL_TK_GATE);
        const float *up = el_tm_layer(&m, g, il, EL_TK_UP);
        double new_down = 0, new_gate_up = 0;
        for (int64_t r = 0; r < c.dim; r++)
            for (int64_t j = c.n_ff; j < m.c.n_ff; j++) new_down += fabs(down[r * m.c.n_ff + j]);
        for (int64_t j = (int64_t)c.n_ff * c.dim; j < (int64_t)m.c.n_ff * c.dim; j++)
            new_gate_up += fabs(gate[j]) + fabs(up[j]);
        CHECK(new_down > 0 && new_gate_up == 0);
    }
    free(g);
    el_tmodel_free(&m);
    return TEST_PASS;
}

/* An adapter trained against the QAT model's integer form: the training forward (int8 inputs at
 * the file's scales, the adapter on the float input) against the run time with it bound. */
static int test_adapter_on_int8_base(void) {
    CHECK(qat_model[0]);
    snprintf(qat_adapter, sizeof qat_adapter, "%s/qat_adapter.gguf", test_tmp_dir());
    el_model *fm;
    CHECK(el_model_load(qat_model, NULL, &fm) == EL_OK);
    el_tmodel m;
    CHECK(el_tmodel_from_model(&m, fm, SEQ) == EL_OK);
    CHECK(el_tmodel_add_lora(&m, 4, 8.0f, 0x7f, 7) == EL_OK);
    test_rng rng = {8};
    for (size_t i = 0; i < m.lora.n_floats; i++) m.lw[i] = test_rand_uniform(&rng, -0.2f, 0.2f);
    CHECK(el_tmodel_qat_from_model(&m, fm) == EL_OK);
    CHECK(!m.qat.int4_weights && m.qat.x_scale[0] == fm->layers[0].wq.act_scale);
    el_model_free(fm);
    CHECK(el_export_lora(&m, "llama", 0, 0, qat_adapter) == EL_OK);
    int32_t ids[SEQ], tgt[SEQ];
    fill_batch(ids, tgt, SEQ, 300, 78);
    float *want = forward_logits(&m, ids);
    float *scales = m.qat.x_scale;
    m.qat.x_scale = NULL;
    float *plain = forward_logits(&m, ids); /* the adapter over a float base */
    m.qat.x_scale = scales;
    CHECK(want && plain);
    double err = runtime_error(qat_model, NULL, qat_adapter, ids, SEQ, want);
    double off = test_max_rel_err(plain, want, (size_t)SEQ * m.c.n_vocab);
    test_note("adapter: run time vs QAT training forward %.2g (float inputs: %.2g)", err, off);
    CHECK(err < 2e-4 && off > 20 * err);
    free(want);
    free(plain);
    el_tmodel_free(&m);
    return TEST_PASS;
}

static char plain[1100];

/* el_finetune_lora with qat on a model that runs in floats: refused before any data is read. */
static int test_float_base_refused(void) {
    char out[1100];
    snprintf(plain, sizeof plain, "%s/float.gguf", test_tmp_dir());
    snprintf(out, sizeof out, "%s/never.gguf", test_tmp_dir());
    el_tconfig c;
    el_tmodel m;
    CHECK(tokenizer_model(&c, &m) == TEST_PASS);
    el_tmodel_randomize(&m, 4);
    CHECK(el_export_model(&m, tokenizer, "float", plain) == EL_OK);
    el_tmodel_free(&m);
    el_train_params p = el_train_default_params();
    const char *files[1] = {"/nonexistent/data.jsonl"};
    p.train_files = files, p.n_train_files = 1;
    el_lora_train_params lp = el_lora_train_default_params();
    lp.base_path = plain, lp.qat = true;
    CHECK(el_finetune_lora(&p, &lp, out) == EL_ERR_INVALID_ARG);
    CHECK(strstr(el_last_error(), "float.gguf: no weight takes int8 inputs") != NULL);
    FILE *f = fopen(out, "rb");
    CHECK(f == NULL);
    return TEST_PASS;
}

/* An adapter on base (`plain` or a quantized copy) under a quantization profile (edgelora
 * profile's scales): the training forward with its terms on the profile's int8 grids (and the
 * base's inputs on them where its weights take int8) against the run time's int8 adapter; a
 * float forward is far off. */
static int adapter_under_profile(const char *base, const char *name) {
    char adapter[1100], text[1100], profile[1100];
    snprintf(adapter, sizeof adapter, "%s/%s_adapter.gguf", test_tmp_dir(), name);
    snprintf(text, sizeof text, "%s/calib.txt", test_tmp_dir());
    snprintf(profile, sizeof profile, "%s/%s.profile.gguf", test_tmp_dir(), name);
    FILE *f = fopen(text, "w");
    CHECK(f);
    for (int i = 0; i < 40; i++)
        fprintf(f, "the cat sat on the mat %d times, and the dog ran after ball %d. ", i, 3 * i);
    fclose(f);
    el_model *fm;
    CHECK(el_model_load(base, NULL, &fm) == EL_OK);
    el_tmodel m;
    CHECK(el_tmodel_from_model(&m, fm, SEQ) == EL_OK);
    el_model_free(fm);
    CHECK(el_tmodel_add_lora(&m, 4, 8.0f, 0x7f, 7) == EL_OK);
    test_rng rng = {9};
    for (size_t i = 0; i < m.lora.n_floats; i++) m.lw[i] = test_rand_uniform(&rng, -0.2f, 0.2f);
    CHECK(el_export_lora(&m, "llama", 0, 0, adapter) == EL_OK);
    el_profile_params pp = el_profile_default_params();
    const char *ads[1] = {adapter};
    pp.adapters = ads, pp.n_adapters = 1, pp.text_path = text, pp.n_threads = 1;
    CHECK(el_profile_make(base, &pp, profile) == EL_OK);
    int32_t ids[SEQ], tgt[SEQ];
    fill_batch(ids, tgt, SEQ, 300, 79);
    float *plain_logits = forward_logits(&m, ids);
    el_model_params mp = el_model_default_params();
    mp.profile_path = profile;
    CHECK(el_model_load(base, &mp, &fm) == EL_OK);
    CHECK(el_tmodel_qat_from_model(&m, fm) == EL_OK);
    CHECK(m.qat.lora_scale && m.qat.lora_scale[1] == fm->profile->slots[0].a_scale);
    el_model_free(fm);
    float *want = forward_logits(&m, ids);
    CHECK(want && plain_logits);
    double err = runtime_error(base, profile, adapter, ids, SEQ, want);
    double off = test_max_rel_err(plain_logits, want, (size_t)SEQ * m.c.n_vocab);
    test_note("int8 adapter under a profile, %s base: run time vs training forward %.2g (a "
              "float forward: %.2g)", name, err, off);
    CHECK(err < 2e-4 && off > 20 * err);
    free(want);
    free(plain_logits);
    el_tmodel_free(&m);
    return TEST_PASS;
}

static int test_adapter_under_profile(void) {
    CHECK(plain[0]);
    return adapter_under_profile(plain, "float");
}

/* A Q4_0 base: its q8_0 activation blocks all hold the profile's scale (f16), so quantization-
 * aware fine-tuning under the profile trains on the model the run time computes; without a
 * profile its per-block scales are refused. */
static int test_block_base_under_profile(void) {
    CHECK(plain[0]);
    char q4[1100], out[1100];
    snprintf(q4, sizeof q4, "%s/q4_0.gguf", test_tmp_dir());
    snprintf(out, sizeof out, "%s/never.gguf", test_tmp_dir());
    el_quantize_params qp = el_quantize_default_params();
    qp.type = "q4_0";
    CHECK(el_quantize(plain, q4, &qp) == EL_OK);
    el_model *fm;
    CHECK(el_model_load(q4, NULL, &fm) == EL_OK);
    CHECK(fm->layers[0].w_down.type == EL_TYPE_Q4_0);
    el_tmodel m;
    CHECK(el_tmodel_from_model(&m, fm, SEQ) == EL_OK);
    CHECK(el_tmodel_qat_from_model(&m, fm) == EL_ERR_UNSUPPORTED);
    CHECK(strstr(el_last_error(), "is q4_0, whose input is quantized at scales of its own"));
    el_model_free(fm);
    el_tmodel_free(&m);
    return adapter_under_profile(q4, "q4_0");
}

/* ------------------------------------------------------------- distillation */

static int test_kl_layer(void) {
    enum { N = 3, V = 7 };
    float logits[N * V], teacher[N * V], keep_t[N * V], probs[N * V], mask[N] = {1, 0, 0.5f};
    test_rng rng = {12};
    for (int i = 0; i < N * V; i++) {
        logits[i] = test_rand_uniform(&rng, -3, 3);
        keep_t[i] = test_rand_uniform(&rng, -3, 3);
    }
    double want = 0, w = 0;
    for (int r = 0; r < N; r++) {
        double zp = 0, zq = 0;
        for (int i = 0; i < V; i++) zp += exp(keep_t[r * V + i]), zq += exp(logits[r * V + i]);
        double kl = 0;
        for (int i = 0; i < V; i++) {
            double p = exp(keep_t[r * V + i]) / zp, q = exp(logits[r * V + i]) / zq;
            kl += p * log(p / q);
        }
        want += mask[r] * kl, w += mask[r];
    }
    memcpy(teacher, keep_t, sizeof teacher);
    double n_mask = 0;
    double got = el_kl_forward(probs, logits, teacher, mask, N, V, &n_mask);
    CHECK(fabs(got - want) < 1e-6 * fabs(want) && n_mask == w);
    float d[N * V];
    el_kl_backward(d, probs, teacher, mask, N, V, 1.0f);
    for (int i = 0; i < N * V; i++) { /* central differences in the logits */
        const float h = 1e-2f;
        float keep = logits[i];
        double n1 = 0, n2 = 0;
        memcpy(teacher, keep_t, sizeof teacher), logits[i] = keep + h;
        double lp = el_kl_forward(probs, logits, teacher, mask, N, V, &n1);
        memcpy(teacher, keep_t, sizeof teacher), logits[i] = keep - h;
        double lm = el_kl_forward(probs, logits, teacher, mask, N, V, &n2);
        logits[i] = keep;
        CHECK(fabs((lp - lm) / (2 * h) - d[i]) < 1e-3);
    }
    memcpy(teacher, logits, sizeof teacher); /* its own teacher */
    CHECK(fabs(el_kl_forward(probs, logits, teacher, NULL, N, V, &n_mask)) < 1e-9);
    return TEST_PASS;
}

/* A teacher's logits, which every forward turns into probabilities in place: put back each time. */
typedef struct teacher_logits {
    float *live;
    const float *kept;
    size_t n;
} teacher_logits;

static void restore_teacher(void *user) {
    teacher_logits *t = user;
    memcpy(t->live, t->kept, t->n * sizeof *t->live);
}

/* The model with a teacher: the LoRA gradients of KL(teacher || model) against directional
 * differences (float terms: no rounding to hold), and zero loss against itself. */
static int test_distill_gradients(void) {
    el_tconfig c = tiny_config(VOCAB);
    el_tmodel m, teacher;
    CHECK(el_tmodel_init(&m, &c) == EL_OK && el_tmodel_init(&teacher, &c) == EL_OK);
    CHECK(el_tmodel_add_lora(&m, 4, 8.0f, 0x7f, 0) == EL_OK);
    CHECK(el_tmodel_add_lora(&teacher, 4, 8.0f, 0x7f, 0) == EL_OK);
    fill_weights(&m, 31);
    memcpy(teacher.w, m.w, m.base.n_floats * sizeof *m.w);
    memcpy(teacher.lw, m.lw, m.lora.n_floats * sizeof *m.lw);
    el_threadpool *tp;
    el_tacts *a, *ta;
    CHECK(el_threadpool_create(2, &tp) == EL_OK && el_tacts_create(&m, B, T, &a) == EL_OK &&
          el_tacts_create(&teacher, B, T, &ta) == EL_OK);
    int32_t tok[B * T], tgt[B * T];
    float *tl = malloc((size_t)B * T * VOCAB * sizeof *tl);
    CHECK(tl);
    fill_batch(tok, tgt, B * T, VOCAB, 6);
    el_tmodel_forward(&teacher, ta, tp, tok, NULL, NULL, tl);
    el_tacts_set_teacher(a, tl);
    CHECK(fabsf(el_tmodel_forward(&m, a, tp, tok, tgt, NULL, NULL)) < 1e-6f);
    test_rng rng = {13};
    for (size_t i = 0; i < m.lora.n_floats; i++) m.lw[i] += test_rand_uniform(&rng, -0.1f, 0.1f);
    /* each forward turns the teacher's logits into probabilities in place: give them afresh */
    float *keep = malloc((size_t)B * T * VOCAB * sizeof *keep);
    CHECK(keep);
    el_tmodel_forward(&teacher, ta, tp, tok, NULL, NULL, keep);
    memcpy(tl, keep, (size_t)B * T * VOCAB * sizeof *tl);
    float loss = el_tmodel_forward(&m, a, tp, tok, tgt, NULL, NULL);
    CHECK(loss > 1e-3f);
    float *grads = calloc(m.lora.n_floats, sizeof *grads);
    CHECK(grads);
    el_tmodel_backward(&m, a, tp, NULL, grads, NULL, 1.0f);
    /* directional differences, the teacher's logits restored before every forward */
    teacher_logits tlg = {tl, keep, (size_t)B * T * VOCAB};
    fd_check fc = {.seed = 14, .abs_tol = 1e-3, .before = restore_teacher, .user = &tlg};
    CHECK(directional_fd(&m, a, tp, &m.lora, m.lw, grads, tok, tgt, &fc) == TEST_PASS);
    free(grads);
    free(keep);
    free(tl);
    el_tacts_free(a);
    el_tacts_free(ta);
    el_threadpool_free(tp);
    el_tmodel_free(&m);
    el_tmodel_free(&teacher);
    return TEST_PASS;
}

int main(void) {
    run_test("int4_rows_are_the_w4_grid", test_int4_rows_are_w4);
    run_test("int8_is_the_static_a8_grid", test_int8_is_static_a8);
    run_test("tracked_scales", test_tracked_scales);
    run_test("held_gradients_w4a8", test_held_gradients_w4a8);
    run_test("held_gradients_lora_a8", test_held_gradients_lora_a8);
    run_test("export_is_the_trained_model", test_export_is_the_trained_model);
    run_test("adapter_on_int8_base", test_adapter_on_int8_base);
    run_test("widened_model_is_the_model", test_widened_model_is_the_model);
    run_test("float_base_refused", test_float_base_refused);
    run_test("adapter_under_profile", test_adapter_under_profile);
    run_test("block_base_under_profile", test_block_base_under_profile);
    run_test("kl_layer", test_kl_layer);
    run_test("distill_gradients", test_distill_gradients);
    return tests_exit_code();
}
