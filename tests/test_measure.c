/* test_measure.c - the read-bandwidth kernel (it really reads every word), the bandwidth figure,
 * peak RSS and a model's per-token weight bytes against sums computed here from the file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "runtime/measure.h"
#include "testutil.h"

/* Odd sizes and thread counts: shares of unequal lengths, tails shorter than a vector. */
static int test_read_sum(void) {
    const size_t sizes[] = {1, 7, 16, 17, 1000, 4099, 100003};
    for (int nth = 1; nth <= 3; nth++) {
        el_threadpool *tp;
        CHECK(el_threadpool_create(nth, &tp) == EL_OK);
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t n = sizes[k];
            uint64_t *buf = aligned_alloc(64, (n * 8 + 63) / 64 * 64);
            CHECK(buf != NULL);
            test_rng r = {n};
            uint64_t want = 0;
            for (size_t i = 0; i < n; i++) {
                buf[i] = (uint64_t)test_rand_u32(&r) << 32 | test_rand_u32(&r);
                want += buf[i];
            }
            uint64_t got1 = el_read_sum(tp, buf, n, 1), got3 = el_read_sum(tp, buf, n, 3);
            free(buf);
            if (got1 != want || got3 != 3 * want) test_note("n %zu threads %d", n, nth);
            CHECK(got1 == want);
            CHECK(got3 == 3 * want);
        }
        el_threadpool_free(tp);
    }
    return TEST_PASS;
}

static int test_bandwidth(void) {
    double gb_s = 0;
    CHECK(el_measure_read_bandwidth(1 << 20, 1, &gb_s) == EL_OK);
    CHECK(isfinite(gb_s) && gb_s > 0.1 && gb_s < 10000);
    CHECK(el_measure_read_bandwidth(3 << 20, 2, &gb_s) == EL_OK);
    CHECK(isfinite(gb_s) && gb_s > 0.1 && gb_s < 10000);
    CHECK(el_measure_read_bandwidth(16, 1, &gb_s) == EL_ERR_INVALID_ARG);
    return TEST_PASS;
}

static int test_peak_rss(void) {
    uint64_t before = el_peak_rss_bytes();
    CHECK(before > 0);
    size_t n = 64u << 20;
    char *p = malloc(n);
    CHECK(p != NULL);
    for (size_t i = 0; i < n; i += 4096) p[i] = (char)i; /* every page resident now */
    uint64_t after = el_peak_rss_bytes();
    int ok = 1;
    for (size_t i = 0; i < n; i += 4096) ok &= p[i] == (char)i;
    free(p);
    CHECK(ok);
    if (after < before + n / 2)
        test_note("peak rss %llu -> %llu", (unsigned long long)before, (unsigned long long)after);
    CHECK(after >= before + n / 2);
    return TEST_PASS;
}

/* The golden model's layer weights and output head, summed from the GGUF's tensor table. */
static int test_decode_cost(const char *file, const char *type, int tied) {
    char path[512];
    snprintf(path, sizeof path, "tests/golden/%s", file);
    gguf_file *g;
    CHECK(gguf_open(path, &g) == EL_OK);
    uint64_t want = 0, want_macs = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        int is_2d = t->n_dims == 2 && t->ne[1] > 1;
        int is_embd = gguf_str_eq(t->name, "token_embd.weight");
        if (is_2d && (!is_embd || tied)) {
            want += t->nbytes;
            want_macs += t->ne[0] * t->ne[1];
        }
    }
    gguf_close(g);
    el_model *m;
    CHECK(el_model_load(path, NULL, &m) == EL_OK);
    el_decode_cost c;
    el_status st = el_model_decode_cost(m, &c);
    el_model_free(m);
    CHECK(st == EL_OK);
    if (c.weight_bytes_per_token != want)
        test_note("%s: %llu bytes, want %llu", file, (unsigned long long)c.weight_bytes_per_token,
                  (unsigned long long)want);
    CHECK(c.weight_bytes_per_token == want);
    CHECK(c.multiply_adds_per_token == want_macs);
    CHECK(strcmp(c.weight_type, type) == 0);
    return TEST_PASS;
}

static int test_decode_cost_untied(void) {
    return test_decode_cost("llama_f32_gqa.gguf", "f32", 0);
}
static int test_decode_cost_tied(void) { return test_decode_cost("llama_f16_tied.gguf", "f16", 1); }

/* The bandwidth of reading a model's weights: a finite positive figure for a real model (its sum
 * checked inside against its first sweep), a clear refusal of vocabulary-only files and of too
 * many threads. */
static int test_model_bandwidth(void) {
    el_model *m;
    CHECK(el_model_load("tests/golden/llama_f32_gqa.gguf", NULL, &m) == EL_OK);
    double one = 0, two = 0, gb_s = 0;
    el_status st1 = el_model_read_bandwidth(m, 1, &one);
    el_status st2 = el_model_read_bandwidth(m, 2, &two);
    el_status st3 = el_model_read_bandwidth(m, 1000, &gb_s);
    el_model_free(m);
    CHECK(st1 == EL_OK && isfinite(one) && one > 0.1 && one < 10000);
    CHECK(st2 == EL_OK && isfinite(two) && two > 0.1 && two < 10000);
    CHECK(st3 == EL_ERR_INVALID_ARG && strstr(el_last_error(), "threads"));
    el_model_params p = el_model_default_params();
    p.vocab_only = true;
    CHECK(el_model_load("models/tokenizer.gguf", &p, &m) == EL_OK);
    st1 = el_model_read_bandwidth(m, 1, &gb_s);
    el_model_free(m);
    CHECK(st1 == EL_ERR_INVALID_ARG && strstr(el_last_error(), "no weights"));
    CHECK(el_model_read_bandwidth(NULL, 1, &gb_s) == EL_ERR_INVALID_ARG);
    return TEST_PASS;
}

/* The measured peak against the hand count of docs/bench.md: no core issues more than two of
 * these instructions a cycle, so more than that per measured cycle is a miscounted probe or a
 * wrong clock; and one takes at most a few cycles, so far less is a probe whose chains
 * serialize (or a clock chain that does not take a cycle an addition). */
static int test_int8_peak(void) {
    el_int8_peak p;
    CHECK(el_measure_int8_peak(1, &p) == EL_OK);
    CHECK(p.isa != NULL);
    if (!p.instruction) {
        test_note("no probe for the %s kernels", p.isa);
        CHECK(p.gmacs_per_s == 0);
        return TEST_SKIP;
    }
    CHECK(p.threads == 1 && isfinite(p.gmacs_per_s) && p.gmacs_per_s > 0);
    test_note("%s: %.1f G multiply-adds/s, clock %.2f GHz, %.1f a cycle (%d an instruction)",
              p.instruction, p.gmacs_per_s, p.ghz, p.macs_per_cycle, p.macs_per_instr);
    if (p.ghz == 0) return TEST_PASS; /* no clock probe on this ISA */
    CHECK(p.ghz > 0.2 && p.ghz < 8);
    CHECK(p.macs_per_cycle <= 2.0 * p.macs_per_instr * 1.15);
#if defined(__SANITIZE_ADDRESS__)
    /* instrumented at -O1, the probe keeps its chains in memory: no lower bound to check */
    test_note("a sanitized build: the probe's lower bound is not checked");
#else
    CHECK(p.macs_per_cycle >= 0.2 * p.macs_per_instr);
#endif
    CHECK(el_measure_int8_peak(1000, &p) == EL_ERR_INVALID_ARG);
    CHECK(el_measure_int8_peak(1, NULL) == EL_ERR_INVALID_ARG);
    return TEST_PASS;
}

int main(void) {
    run_test("read_sum", test_read_sum);
    run_test("bandwidth", test_bandwidth);
    run_test("peak_rss", test_peak_rss);
    run_test("decode_cost_untied", test_decode_cost_untied);
    run_test("decode_cost_tied", test_decode_cost_tied);
    run_test("model_bandwidth", test_model_bandwidth);
    run_test("int8_peak", test_int8_peak);
    return tests_exit_code();
}
