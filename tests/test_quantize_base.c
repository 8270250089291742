/* test_quantize_base.c - models/base.gguf (a trained model, f16) quantized by el_quantize to
 * each ggml type we write, its logits over a prompt against the f16 model's: every type within
 * a bound, and the types ordered as their bits are (q6_k closer than q5_k, closer than q4_k,
 * closer than q3_k, closer than q2_k; each 5-bit type closer than its 4-bit one). A type whose
 * layout, quantizer or dot product is wrong lands far from the float logits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compress/quantize.h"
#include "testutil.h"

static const char base_model[] = "models/base.gguf";

enum { N_TOK = 12 };

/* The logits of a 12-token prompt run as one batch: [N_TOK][n_vocab] in out (malloc'd). */
static int prompt_logits(const char *path, float **out, size_t *n_vocab) {
    el_model *m;
    if (el_model_load(path, NULL, &m) != EL_OK) return 0;
    el_model_info info;
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 32;
    cp.n_batch = N_TOK;
    cp.n_threads = 2;
    el_context *ctx;
    if (el_model_get_info(m, &info) != EL_OK || el_context_create(m, &cp, &ctx) != EL_OK) {
        el_model_free(m);
        return 0;
    }
    *n_vocab = (size_t)info.n_vocab;
    int32_t tok[N_TOK] = {1, 450, 4996, 17354, 1701, 29916, 432, 17204, 975, 278, 17366, 11203};
    int32_t pos[N_TOK], seq[N_TOK] = {0};
    int8_t all[N_TOK];
    for (int i = 0; i < N_TOK; i++) {
        tok[i] %= info.n_vocab;
        pos[i] = i;
        all[i] = 1;
    }
    el_batch b = {.n_rows = N_TOK, .token = tok, .pos = pos, .seq_id = seq, .logits = all};
    *out = malloc(sizeof(float) * N_TOK * *n_vocab);
    int ok = *out && el_decode(ctx, &b) == EL_OK;
    for (int i = 0; ok && i < N_TOK; i++)
        memcpy(*out + *n_vocab * i, el_get_logits(ctx, i), sizeof(float) * *n_vocab);
    el_context_free(ctx);
    el_model_free(m);
    return ok;
}

/* ||a - b|| / ||b|| over n. */
static double rel_rms(const float *a, const float *b, size_t n) {
    double e = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        e += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        r += (double)b[i] * b[i];
    }
    return sqrt(e / r);
}

/* The bounds are 1.5 times what this model measured (a regression guard); the order is the
 * check that needs no measurement. */
static const struct {
    const char *name;
    double bound;
} types[] = {
    {"q8_0", 0.0102}, {"q6_k", 0.027}, {"q5_k", 0.059}, {"q5_1", 0.049}, {"q5_0", 0.059},
    {"q4_k", 0.113},  {"q4_1", 0.101}, {"q4_0", 0.117}, {"iq4_xs", 0.114}, {"iq4_nl", 0.118},
    {"q3_k", 0.207},  {"q2_k", 0.41},
};
enum { N_TYPES = sizeof types / sizeof types[0] };

static double error_of(const double *err, const char *name) {
    for (int k = 0; k < N_TYPES; k++)
        if (strcmp(types[k].name, name) == 0) return err[k];
    return NAN;
}

static int test_logits_by_type(void) {
    if (access(base_model, R_OK) != 0) return test_skip("models/base.gguf is absent");
    float *ref = NULL;
    size_t V = 0;
    CHECK(prompt_logits(base_model, &ref, &V));
    char out[512];
    snprintf(out, sizeof out, "%s/q.gguf", test_tmp_dir());
    double err[N_TYPES];
    int ok = 1;
    for (int k = 0; k < N_TYPES; k++) {
        el_quantize_params p = el_quantize_default_params();
        p.type = types[k].name;
        p.pure = true; /* each type alone, none of the mixes' q6_k head */
        p.n_threads = 2;
        CHECK(el_quantize(base_model, out, &p) == EL_OK);
        float *logits = NULL;
        size_t v = 0;
        CHECK(prompt_logits(out, &logits, &v) && v == V);
        err[k] = rel_rms(logits, ref, N_TOK * V);
        free(logits);
        test_note("%s: logits relative rms error %.5f (bound %.5f)", types[k].name, err[k],
                  types[k].bound);
        ok &= err[k] <= types[k].bound;
    }
    free(ref);
    static const char *closer[][2] = {
        {"q8_0", "q6_k"}, {"q6_k", "q5_k"}, {"q5_k", "q4_k"}, {"q4_k", "q3_k"}, {"q3_k", "q2_k"},
        {"q5_0", "q4_0"}, {"q5_1", "q4_1"}, {"q5_k", "iq4_xs"}, {"iq4_xs", "q3_k"},
        {"iq4_nl", "q3_k"},
    };
    for (size_t i = 0; i < sizeof closer / sizeof closer[0]; i++) {
        if (!(error_of(err, closer[i][0]) < error_of(err, closer[i][1]))) {
            test_note("%s is not closer than %s", closer[i][0], closer[i][1]);
            ok = 0;
        }
    }
    CHECK(ok);
    return TEST_PASS;
}

int main(void) {
    run_test("logits_by_type", test_logits_by_type);
    return tests_exit_code();
}
