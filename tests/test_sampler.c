/* test_sampler.c - the sampler against hand-computed expectations: argmax, softmax frequencies,
 * which tokens top-p/min-p leave, and llama.cpp's repetition-penalty rule. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelora.h"
#include "runtime/sampler.h"
#include "testutil.h"

static el_sampler_params plain_params(float temp) {
    el_sampler_params p = el_sampler_default_params();
    p.temperature = temp;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.repeat_penalty = 1.0f;
    p.seed = 1234;
    return p;
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

static int test_greedy_is_argmax(void) {
    enum { N = 300 };
    float logits[N];
    test_rng rng = {42};
    el_sampler_params p = plain_params(0.0f);
    el_sampler *s;
    CHECK(el_sampler_create(&p, N, &s) == EL_OK);
    el_sampler_params pk = plain_params(1.0f);
    pk.top_k = 1;
    el_sampler *sk;
    CHECK(el_sampler_create(&pk, N, &sk) == EL_OK);
    for (int trial = 0; trial < 50; trial++) {
        for (int i = 0; i < N; i++)
            logits[i] = test_rand_uniform(&rng, -5.0f, 5.0f);
        int32_t t, tk;
        CHECK(el_sampler_sample(s, logits, &t) == EL_OK);
        CHECK(el_sampler_sample(sk, logits, &tk) == EL_OK);
        CHECK(t == argmax(logits, N));
        CHECK(tk == t); /* top-k = 1 leaves only the argmax */
    }
    el_sampler_free(s);
    el_sampler_free(sk);
    return TEST_PASS;
}

static int test_seed_reproducible(void) {
    enum { N = 50 };
    float logits[N];
    for (int i = 0; i < N; i++)
        logits[i] = (float)(i % 7) * 0.3f;
    el_sampler_params p = plain_params(1.0f);
    el_sampler *a, *b, *c;
    CHECK(el_sampler_create(&p, N, &a) == EL_OK);
    CHECK(el_sampler_create(&p, N, &b) == EL_OK);
    p.seed = 99;
    CHECK(el_sampler_create(&p, N, &c) == EL_OK);
    int differ = 0;
    for (int i = 0; i < 200; i++) {
        int32_t ta, tb, tc;
        CHECK(el_sampler_sample(a, logits, &ta) == EL_OK);
        CHECK(el_sampler_sample(b, logits, &tb) == EL_OK);
        CHECK(el_sampler_sample(c, logits, &tc) == EL_OK);
        CHECK(ta == tb);
        differ += ta != tc;
    }
    CHECK(differ > 50); /* another seed gives another sequence */
    el_sampler_free(a);
    el_sampler_free(b);
    el_sampler_free(c);
    return TEST_PASS;
}

/* Frequencies of 40000 draws against softmax(logits / T) computed here in double: Pearson's
 * chi-square with 4 degrees of freedom stays under 18.5 (p = 0.001). Seeded, so not flaky. */
static int test_distribution(void) {
    enum { N = 5, DRAWS = 40000 };
    const float logits[N] = {1.0f, 2.0f, 3.0f, 0.5f, -1.0f};
    const float temps[] = {1.0f, 0.7f};
    for (int ti = 0; ti < 2; ti++) {
        el_sampler_params p = plain_params(temps[ti]);
        el_sampler *s;
        CHECK(el_sampler_create(&p, N, &s) == EL_OK);
        double expect[N], z = 0.0;
        for (int i = 0; i < N; i++)
            z += expect[i] = exp(logits[i] / temps[ti]);
        int count[N] = {0};
        for (int d = 0; d < DRAWS; d++) {
            int32_t t;
            CHECK(el_sampler_sample(s, logits, &t) == EL_OK);
            CHECK(t >= 0 && t < N);
            count[t]++;
        }
        double chi2 = 0.0;
        for (int i = 0; i < N; i++) {
            double e = expect[i] / z * DRAWS;
            chi2 += (count[i] - e) * (count[i] - e) / e;
        }
        test_note("T=%.1f chi2 = %.2f", temps[ti], chi2);
        CHECK(chi2 < 18.5);
        el_sampler_free(s);
    }
    return TEST_PASS;
}

/* Draws many times and returns a bitmask of the tokens seen. */
static unsigned seen_tokens(el_sampler *s, const float *logits, int draws) {
    unsigned mask = 0;
    for (int d = 0; d < draws; d++) {
        int32_t t = -1;
        if (el_sampler_sample(s, logits, &t) != EL_OK)
            return 0;
        mask |= 1u << t;
    }
    return mask;
}

static int test_top_p_min_p(void) {
    /* probabilities 0.5, 0.3, 0.15, 0.05 (token order shuffled to test the sort) */
    const float logits[4] = {logf(0.15f), logf(0.5f), logf(0.05f), logf(0.3f)};
    el_sampler_params p = plain_params(1.0f);
    el_sampler *s;
    /* top-p 0.75: 0.5 < 0.75, 0.5 + 0.3 >= 0.75, so tokens 1 and 3 remain */
    p.top_p = 0.75f;
    CHECK(el_sampler_create(&p, 4, &s) == EL_OK);
    CHECK(seen_tokens(s, logits, 2000) == ((1u << 1) | (1u << 3)));
    el_sampler_free(s);
    /* top-p 0.85: needs 0.5 + 0.3 + 0.15 */
    p.top_p = 0.85f;
    CHECK(el_sampler_create(&p, 4, &s) == EL_OK);
    CHECK(seen_tokens(s, logits, 2000) == ((1u << 0) | (1u << 1) | (1u << 3)));
    el_sampler_free(s);
    /* min-p 0.2: keep p >= 0.1, so everything but token 2 (0.05) */
    p.top_p = 1.0f;
    p.min_p = 0.2f;
    CHECK(el_sampler_create(&p, 4, &s) == EL_OK);
    CHECK(seen_tokens(s, logits, 2000) == ((1u << 0) | (1u << 1) | (1u << 3)));
    el_sampler_free(s);
    /* min-p 0.7: keep p >= 0.35, only token 1 */
    p.min_p = 0.7f;
    CHECK(el_sampler_create(&p, 4, &s) == EL_OK);
    CHECK(seen_tokens(s, logits, 500) == (1u << 1));
    el_sampler_free(s);
    /* top-k 2 */
    p.min_p = 0.0f;
    p.top_k = 2;
    CHECK(el_sampler_create(&p, 4, &s) == EL_OK);
    CHECK(seen_tokens(s, logits, 2000) == ((1u << 1) | (1u << 3)));
    el_sampler_free(s);
    return TEST_PASS;
}

/* Greedy pick after accepting hist[] into a sampler with penalty pen and window last_n. */
static int32_t penalized_pick(const float *logits, int n, float pen, int last_n,
                              const int32_t *hist, int n_hist) {
    el_sampler_params p = plain_params(0.0f);
    p.repeat_penalty = pen;
    p.repeat_last_n = last_n;
    el_sampler *s;
    if (el_sampler_create(&p, n, &s) != EL_OK)
        return -2;
    for (int i = 0; i < n_hist; i++)
        el_sampler_accept(s, hist[i]);
    int32_t t = -1;
    el_sampler_sample(s, logits, &t);
    el_sampler_free(s);
    return t;
}

static int test_repeat_penalty(void) {
    /* positive logits are divided: 2.0/1.5 = 1.33 < 1.5, 2.0/1.2 = 1.67 > 1.5 */
    const float pos[2] = {2.0f, 1.5f};
    const int32_t h0[] = {0, 0, 0};
    CHECK(penalized_pick(pos, 2, 1.0f, 64, h0, 3) == 0);
    CHECK(penalized_pick(pos, 2, 1.5f, 64, h0, 3) == 1);
    CHECK(penalized_pick(pos, 2, 1.2f, 64, h0, 3) == 0); /* once per token, not per occurrence */
    /* negative logits are multiplied: -1.0*1.5 = -1.5 < -1.4, -1.0*1.3 = -1.3 > -1.4 */
    const float neg[2] = {-1.0f, -1.4f};
    CHECK(penalized_pick(neg, 2, 1.5f, 64, h0, 1) == 1);
    CHECK(penalized_pick(neg, 2, 1.3f, 64, h0, 1) == 0);
    /* only the last n tokens count: with a window of 1, token 0 fell out */
    const int32_t h1[] = {0, 1};
    CHECK(penalized_pick(pos, 2, 1.5f, 1, h1, 2) == 0);
    CHECK(penalized_pick(pos, 2, 1.5f, 2, h1, 2) == 0); /* both penalized: 1.33 vs 1.0 */
    const int32_t h2[] = {1, 0};
    CHECK(penalized_pick(pos, 2, 1.5f, 1, h2, 2) == 1);
    return TEST_PASS;
}

/* The ranked candidates (top-k, and greedy with fewer asked for than there are tokens) against
 * an independent ranking: every token compared with every other, highest logit first and ties
 * by the lower id. Logits take few distinct values, so there are many ties. */
static int test_ranking_top_k(void) {
    enum { N = 2000 };
    static float logits[N];
    static int32_t rank[N], ids[N];
    uint32_t x = 99;
    for (int i = 0; i < N; i++) {
        x = x * 1664525u + 1013904223u;
        logits[i] = (float)((x >> 8) % 50) * 0.25f - 3.0f;
    }
    for (int i = 0; i < N; i++) { /* the position of token i: how many come before it */
        int before = 0;
        for (int j = 0; j < N; j++)
            before += logits[j] > logits[i] || (logits[j] == logits[i] && j < i);
        rank[before] = i;
    }
    static const int32_t ks[] = {1, 2, 7, 40, 1999, 2000, 5000};
    for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++) {
        /* top-k at temperature 1 (the survivors), and greedy asked for k ids */
        for (int greedy = 0; greedy < 2; greedy++) {
            el_sampler_params p = plain_params(greedy ? 0.0f : 1.0f);
            int32_t cap = N;
            if (greedy)
                cap = ks[t] < N ? ks[t] : N;
            else
                p.top_k = ks[t];
            el_sampler *s;
            CHECK(el_sampler_create(&p, N, &s) == EL_OK);
            int32_t n;
            CHECK(el_sampler_candidates(s, logits, ids, cap, &n) == EL_OK);
            CHECK(n == (greedy || ks[t] >= N ? N : ks[t]));
            for (int32_t i = 0; i < (n < cap ? n : cap); i++) {
                if (ids[i] != rank[i]) {
                    test_note("%s k %d: candidate %d is %d, want %d", greedy ? "greedy" : "top-k",
                              ks[t], i, ids[i], rank[i]);
                    return TEST_FAIL;
                }
            }
            el_sampler_free(s);
        }
    }
    return TEST_PASS;
}

/* Probabilities 1, 2, 2, 3, 2 (of 10) as logits, shifted by 1000 (a naive exp overflows):
 * log-probabilities log(p), the best three 3, then the tied 1 and 2 by id (4 ties too, later). */
static int test_logprobs_by_hand(void) {
    const double p[5] = {0.1, 0.2, 0.2, 0.3, 0.2};
    float logits[5];
    for (int shift = 0; shift <= 1000; shift += 1000) {
        for (int i = 0; i < 5; i++) logits[i] = (float)(log(p[i] * 10) + shift);
        el_token_logprob e;
        CHECK(el_token_logprobs(logits, 5, 0, 3, &e) == EL_OK);
        CHECK(e.token == 0 && e.n_top == 3);
        /* a 1000-shifted float logit keeps 6e-5 of its log */
        double tol = shift ? 1e-4 : 1e-6;
        CHECK(fabs(e.logprob - log(0.1)) < tol);
        CHECK(e.top_token[0] == 3 && e.top_token[1] == 1 && e.top_token[2] == 2);
        CHECK(fabs(e.top_logprob[0] - log(0.3)) < tol && fabs(e.top_logprob[1] - log(0.2)) < tol &&
              fabs(e.top_logprob[2] - log(0.2)) < tol);
        CHECK(el_token_logprobs(logits, 5, 4, 0, &e) == EL_OK && e.n_top == 0);
        CHECK(fabs(e.logprob - log(0.2)) < tol);
    }
    el_token_logprob e;
    CHECK(el_token_logprobs(logits, 5, 5, 1, &e) == EL_ERR_INVALID_ARG);
    CHECK(el_token_logprobs(logits, 5, 0, 6, &e) == EL_ERR_INVALID_ARG);
    CHECK(el_token_logprobs(logits, 5, 0, -1, &e) == EL_ERR_INVALID_ARG);
    CHECK(el_token_logprobs(NULL, 5, 0, 1, &e) == EL_ERR_INVALID_ARG);
    return TEST_PASS;
}

/* A vocabulary of 50000 with many repeated logits, against a long-double log-sum-exp and a
 * ranking by sorting (larger logit first, then the lower id). */
static const float *rank_logits;
static int by_logit_then_id(const void *a, const void *b) {
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (rank_logits[i] != rank_logits[j]) return rank_logits[i] > rank_logits[j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

static int test_logprobs_large_vocab(void) {
    enum { N = 50000 };
    static float logits[N];
    static int32_t order[N];
    uint64_t x = 99;
    for (int32_t i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        logits[i] = (float)((x >> 40) % 4000) / 100.0f - 20.0f; /* 4000 values: many ties */
        order[i] = i;
    }
    long double sum = 0;
    for (int32_t i = 0; i < N; i++) sum += expl((long double)logits[i]);
    double lse = (double)logl(sum);
    rank_logits = logits;
    qsort(order, N, sizeof *order, by_logit_then_id);
    for (int32_t tok = 0; tok < N; tok += 4999) {
        el_token_logprob e;
        CHECK(el_token_logprobs(logits, N, tok, EL_MAX_TOP_LOGPROBS, &e) == EL_OK);
        CHECK(fabs(e.logprob - (logits[tok] - lse)) < 1e-5);
        for (int r = 0; r < EL_MAX_TOP_LOGPROBS; r++) {
            CHECK(e.top_token[r] == order[r]);
            CHECK(fabs(e.top_logprob[r] - (logits[order[r]] - lse)) < 1e-5);
        }
    }
    return TEST_PASS;
}

static int test_bad_params(void) {
    el_sampler_params p = plain_params(1.0f);
    el_sampler *s;
    CHECK(el_sampler_create(&p, 0, &s) == EL_ERR_INVALID_ARG);
    CHECK(strstr(el_last_error(), "n_vocab") != NULL);
    p.repeat_penalty = 0.0f;
    CHECK(el_sampler_create(&p, 10, &s) == EL_ERR_INVALID_ARG);
    return TEST_PASS;
}

int main(void) {
    run_test("greedy_is_argmax", test_greedy_is_argmax);
    run_test("seed_reproducible", test_seed_reproducible);
    run_test("distribution", test_distribution);
    run_test("top_p_min_p", test_top_p_min_p);
    run_test("repeat_penalty", test_repeat_penalty);
    run_test("ranking_top_k", test_ranking_top_k);
    run_test("logprobs_by_hand", test_logprobs_by_hand);
    run_test("logprobs_large_vocab", test_logprobs_large_vocab);
    run_test("bad_params", test_bad_params);
    return tests_exit_code();
}
