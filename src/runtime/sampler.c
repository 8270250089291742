/* sampler.c - picking the next token from logits.
 *
 * Greedy when temperature <= 0 (after the repetition penalty). Otherwise the chain is
 * repetition penalty -> top-k -> top-p -> min-p -> temperature -> softmax -> draw, the order
 * llama.cpp's default sampler uses, so the same settings mean the same thing. The draw uses our
 * own seeded PRNG (splitmix64 to seed xorshift64*), so a seed gives the same tokens everywhere. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "edgelora.h"
#include "runtime/sampler.h"

typedef struct el_candidate {
    int32_t id;
    float logit;
    float p;
} el_candidate;

struct el_sampler {
    el_sampler_params params;
    int32_t n_vocab;
    uint64_t rng;
    int32_t *history;        /* ring of the last repeat_last_n accepted tokens */
    int32_t n_history;       /* valid entries */
    int32_t history_next;    /* where the next token goes */
    el_candidate *cand;      /* [n_vocab] */
    uint8_t *seen;           /* [n_vocab]: the penalty applies once per distinct token */
};

el_sampler_params el_sampler_default_params(void) {
    return (el_sampler_params){
        .temperature = 0.8f,
        .top_k = 40,
        .top_p = 0.95f,
        .min_p = 0.05f,
        .repeat_penalty = 1.0f,
        .repeat_last_n = 64,
        .seed = 0,
    };
}

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t xorshift64s(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* A uniform double in [0, 1) from the top 53 bits. */
static double rng_uniform(uint64_t *s) { return (double)(xorshift64s(s) >> 11) * 0x1.0p-53; }

/* Every field's meaning is defined for any finite value (see el_sampler_params) but these. */
static el_status check_params(const el_sampler_params *p) {
    if (!isfinite(p->temperature) || !isfinite(p->top_p) || !isfinite(p->min_p))
        return el_error(EL_ERR_INVALID_ARG, "sampler: temperature, top_p and min_p must be "
                        "finite numbers");
    if (!(p->repeat_penalty > 0.0f) || !isfinite(p->repeat_penalty))
        return el_error(EL_ERR_INVALID_ARG, "sampler: repeat_penalty must be greater than 0 (1: "
                        "no penalty), not %g", (double)p->repeat_penalty);
    if (p->repeat_last_n < 0)
        return el_error(EL_ERR_INVALID_ARG, "sampler: repeat_last_n must be 0 or more, not %d",
                        p->repeat_last_n);
    return EL_OK;
}

el_status el_sampler_create(const el_sampler_params *params, int32_t n_vocab, el_sampler **out) {
    *out = NULL;
    if (!params || n_vocab <= 0)
        return el_error(EL_ERR_INVALID_ARG, "sampler: n_vocab must be positive (got %d)", n_vocab);
    el_status st = check_params(params);
    if (st != EL_OK) return st;
    el_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return el_error(EL_ERR_NOMEM, "sampler: out of memory");
    s->params = *params;
    s->n_vocab = n_vocab;
    uint64_t seed = params->seed;
    s->rng = splitmix64(&seed);
    if (s->rng == 0) /* xorshift's one fixed point */
        s->rng = 1;
    s->cand = malloc((size_t)n_vocab * sizeof *s->cand);
    s->seen = calloc((size_t)n_vocab, 1);
    s->history = malloc((size_t)(params->repeat_last_n > 0 ? params->repeat_last_n : 1) *
                        sizeof *s->history);
    if (!s->cand || !s->seen || !s->history) {
        el_sampler_free(s);
        return el_error(EL_ERR_NOMEM, "sampler: out of memory");
    }
    *out = s;
    return EL_OK;
}

void el_sampler_free(el_sampler *s) {
    if (!s)
        return;
    free(s->cand);
    free(s->seen);
    free(s->history);
    free(s);
}

void el_sampler_accept(el_sampler *s, int32_t token) {
    if (!s || s->params.repeat_last_n <= 0)
        return;
    s->history[s->history_next] = token;
    s->history_next = (s->history_next + 1) % s->params.repeat_last_n;
    if (s->n_history < s->params.repeat_last_n)
        s->n_history++;
}

el_status el_token_logprobs(const float *logits, int32_t n_vocab, int32_t token, int32_t n_top,
                            el_token_logprob *out) {
    if (!logits || !out || n_vocab < 1 || token < 0 || token >= n_vocab || n_top < 0 ||
        n_top > EL_MAX_TOP_LOGPROBS || n_top > n_vocab)
        return el_error(EL_ERR_INVALID_ARG, "logprobs: need logits, token 0..%d (got %d) and "
                        "0..%d alternatives (got %d)", n_vocab - 1, token,
                        n_vocab < EL_MAX_TOP_LOGPROBS ? n_vocab : EL_MAX_TOP_LOGPROBS, n_top);
    /* log-sum-exp around the largest logit, summed in double: no overflow, and the sum of a
     * large vocabulary keeps its small terms */
    float mx = logits[0];
    for (int32_t v = 1; v < n_vocab; v++)
        mx = logits[v] > mx ? logits[v] : mx;
    double sum = 0;
    for (int32_t v = 0; v < n_vocab; v++)
        sum += exp((double)logits[v] - mx);
    double lse = mx + log(sum);
    out->token = token;
    out->logprob = (float)(logits[token] - lse);
    out->n_top = n_top;
    /* the best n_top kept sorted as they come: a later token takes a place only with a larger
     * logit, so equal logits keep the lower id first */
    int32_t n = 0;
    for (int32_t v = 0; v < n_vocab && n_top > 0; v++) {
        if (n == n_top && !(logits[v] > logits[out->top_token[n - 1]]))
            continue;
        int32_t at = n < n_top ? n++ : n - 1;
        while (at > 0 && logits[v] > logits[out->top_token[at - 1]]) {
            out->top_token[at] = out->top_token[at - 1];
            at--;
        }
        out->top_token[at] = v;
    }
    for (int32_t r = 0; r < n_top; r++)
        out->top_logprob[r] = (float)(logits[out->top_token[r]] - lse);
    return EL_OK;
}

/* llama.cpp's rule: a token seen in the window has a positive logit divided by the penalty and a
 * non-positive one multiplied, once however often it was seen. */
static float penalized(float logit, float penalty) {
    return logit <= 0.0f ? logit * penalty : logit / penalty;
}

/* Sets (on) or clears the seen mark of each token in the window; false if the penalty does
 * nothing. */
static bool mark_history(el_sampler *s, uint8_t on) {
    if (s->params.repeat_penalty == 1.0f || s->n_history == 0)
        return false;
    for (int32_t i = 0; i < s->n_history; i++) {
        int32_t t = s->history[i];
        if (t >= 0 && t < s->n_vocab)
            s->seen[t] = on;
    }
    return true;
}

/* The penalty on cand, still indexed by id. */
static void apply_repeat_penalty(el_sampler *s) {
    if (!mark_history(s, 1))
        return;
    for (int32_t i = 0; i < s->n_history; i++) {
        int32_t t = s->history[i];
        if (t >= 0 && t < s->n_vocab && s->seen[t]) {
            s->cand[t].logit = penalized(s->cand[t].logit, s->params.repeat_penalty);
            s->seen[t] = 0; /* once per distinct token */
        }
    }
}

/* Greedy: the highest penalized logit, the lowest id among equals, read straight from the
 * logits: copying the vocabulary into candidates would cost a pass over it every token. */
static int32_t greedy_pick(el_sampler *s, const float *logits) {
    bool marked = mark_history(s, 1);
    float pen = s->params.repeat_penalty;
    int32_t best = 0;
    float best_logit = marked && s->seen[0] ? penalized(logits[0], pen) : logits[0];
    for (int32_t i = 1; i < s->n_vocab; i++) {
        float l = logits[i];
        if (marked && s->seen[i])
            l = penalized(l, pen);
        if (l > best_logit) {
            best = i;
            best_logit = l;
        }
    }
    if (marked)
        mark_history(s, 0);
    return best;
}

/* Highest logit first; ties by the lower id, so the order is fully determined. */
static int cand_cmp(const void *a, const void *b) {
    const el_candidate *x = a, *y = b;
    if (x->logit != y->logit)
        return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static bool cand_before(const el_candidate *x, const el_candidate *y) {
    return cand_cmp(x, y) < 0;
}

/* Restores the heap below slot i of a heap of n whose root is the candidate that comes last. */
static void sift_down(el_candidate *h, int32_t n, int32_t i) {
    for (;;) {
        int32_t last = i, l = 2 * i + 1, r = l + 1;
        if (l < n && cand_before(&h[last], &h[l]))
            last = l;
        if (r < n && cand_before(&h[last], &h[r]))
            last = r;
        if (last == i)
            return;
        el_candidate t = h[i];
        h[i] = h[last];
        h[last] = t;
        i = last;
    }
}

/* Puts the k first candidates of c[0..n) in cand_cmp order at the front, sorted (the rest in
 * any order): a heap of the k best seen so far, so a top-k of a 128K vocabulary costs one pass
 * instead of a full sort per token. */
static void sort_first(el_candidate *c, int32_t n, int32_t k) {
    if (k >= n) {
        qsort(c, (size_t)n, sizeof *c, cand_cmp);
        return;
    }
    for (int32_t i = k / 2 - 1; i >= 0; i--)
        sift_down(c, k, i);
    for (int32_t i = k; i < n; i++) {
        if (cand_before(&c[i], &c[0])) {
            el_candidate t = c[0];
            c[0] = c[i];
            c[i] = t;
            sift_down(c, k, 0);
        }
    }
    qsort(c, (size_t)k, sizeof *c, cand_cmp);
}

/* p of each of the first n (sorted) candidates: softmax of logit/temp. */
static void softmax(el_candidate *c, int32_t n, float temp) {
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++) {
        double e = exp(((double)c[i].logit - (double)c[0].logit) / temp);
        c[i].p = (float)e;
        sum += e;
    }
    for (int32_t i = 0; i < n; i++)
        c[i].p = (float)(c[i].p / sum);
}

/* Loads logits into cand and applies the penalty, then (unless greedy) sorts and applies top-k,
 * top-p and min-p: the survivors are cand[0..return value), most likely first. Greedy keeps cand
 * indexed by id and returns n_vocab. */
static int32_t filter(el_sampler *s, const float *logits) {
    const el_sampler_params *p = &s->params;
    int32_t n = s->n_vocab;
    for (int32_t i = 0; i < n; i++)
        s->cand[i] = (el_candidate){.id = i, .logit = logits[i]};
    apply_repeat_penalty(s);
    if (p->temperature <= 0.0f)
        return n;

    if (p->top_k > 0 && p->top_k < n) {
        sort_first(s->cand, n, p->top_k);
        n = p->top_k;
    } else {
        qsort(s->cand, (size_t)n, sizeof *s->cand, cand_cmp);
    }
    if (p->top_p < 1.0f) {
        /* keep the smallest prefix whose probability (at temperature 1) reaches top_p */
        softmax(s->cand, n, 1.0f);
        double cum = 0.0;
        for (int32_t i = 0; i < n; i++) {
            cum += s->cand[i].p;
            if (cum >= p->top_p) {
                n = i + 1;
                break;
            }
        }
    }
    if (p->min_p > 0.0f) {
        /* keep tokens whose probability is at least min_p times the largest one's */
        float cut = s->cand[0].logit + logf(p->min_p);
        int32_t keep = 1;
        while (keep < n && s->cand[keep].logit >= cut)
            keep++;
        n = keep;
    }
    return n;
}

el_status el_sampler_sample(el_sampler *s, const float *logits, int32_t *token) {
    if (!s || !logits || !token)
        return el_error(EL_ERR_INVALID_ARG, "sampler: NULL argument");
    if (s->params.temperature <= 0.0f) {
        *token = greedy_pick(s, logits);
        return EL_OK;
    }
    int32_t n = filter(s, logits);
    softmax(s->cand, n, s->params.temperature);
    double r = rng_uniform(&s->rng), cum = 0.0;
    for (int32_t i = 0; i < n; i++) {
        cum += s->cand[i].p;
        if (r < cum) {
            *token = s->cand[i].id;
            return EL_OK;
        }
    }
    *token = s->cand[n - 1].id; /* r landed in the rounding gap at the top */
    return EL_OK;
}

el_status el_sampler_candidates(el_sampler *s, const float *logits, int32_t *ids, int32_t cap,
                                int32_t *n_out) {
    if (!s || !logits || !n_out || (!ids && cap > 0))
        return el_error(EL_ERR_INVALID_ARG, "sampler: NULL argument");
    int32_t n = filter(s, logits);
    if (s->params.temperature <= 0.0f) /* greedy ranks every token; only cap are asked for */
        sort_first(s->cand, n, cap < n ? cap : n);
    for (int32_t i = 0; i < n && i < cap; i++)
        ids[i] = s->cand[i].id;
    *n_out = n;
    return EL_OK;
}
