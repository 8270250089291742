/* ctg_first.c - distinct first tokens for the variants of a group.
 *
 * Forced tokens first, then variants with a mask (they have fewer choices), then the rest, each in
 * index order; a variant takes the best token its policy offers that no variant took before. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "runtime/ctg.h"
#include "runtime/sampler.h"

/* May variant v start with token t (ignoring what others took)? */
static bool allowed(const el_variants *g, const ctg_variant *v, int32_t t) {
    if (v->p.first_allowed && !v->p.first_allowed[t])
        return false;
    return v->p.ignore_eos || !el_token_is_eog(g->model, t);
}

static el_status no_token_left(const el_variants *g, int32_t i, int32_t n_cand) {
    const el_sampler_params *sp = &g->v[i].p.sampler;
    return el_error(EL_ERR_INVALID_ARG,
                    "variants: variant %d of %d has no distinct first token left: its sampler "
                    "allows %d token(s) (%s; top-k %d, top-p %g, min-p %g)%s and the other "
                    "variants or end-of-generation took them; ask for fewer variants, widen the "
                    "filters (or sample greedily), or give forced first tokens",
                    i, g->n_variants, n_cand, sp->temperature <= 0 ? "greedy: every token" :
                    "sampling", sp->top_k, sp->top_p, sp->min_p,
                    g->v[i].p.first_allowed ? " within its first_allowed mask" : "");
}

/* The most likely free token among the sampler's candidates: the best few are ranked first (a
 * greedy sampler would otherwise sort the whole vocabulary), all of them only if none is free. */
static el_status choose_top(el_variants *g, int32_t i, const float *logits, int32_t *tok) {
    ctg_variant *v = &g->v[i];
    int32_t n, cap = 2 * g->n_variants + 64;
    for (;;) {
        if (cap > g->n_vocab)
            cap = g->n_vocab;
        el_status st = el_sampler_candidates(v->smp, logits, g->cand, cap, &n);
        if (st)
            return st;
        int32_t ranked = n < cap ? n : cap;
        for (int32_t c = 0; c < ranked; c++)
            if (!g->taken[g->cand[c]] && allowed(g, v, g->cand[c])) {
                *tok = g->cand[c];
                return EL_OK;
            }
        if (ranked == n)
            return no_token_left(g, i, n);
        cap = g->n_vocab;
    }
}

/* A draw from the sampler among its candidates that are still free (the others' logits at -inf,
 * so its filters then apply to what is left). */
static el_status choose_sample(el_variants *g, int32_t i, const float *logits, int32_t *tok) {
    ctg_variant *v = &g->v[i];
    int32_t n, best = -1;
    el_status st = el_sampler_candidates(v->smp, logits, g->cand, g->n_vocab, &n);
    if (st)
        return st;
    for (int32_t t = 0; t < g->n_vocab; t++)
        g->masked[t] = -INFINITY;
    for (int32_t c = 0; c < n; c++) {
        int32_t t = g->cand[c];
        if (!g->taken[t] && allowed(g, v, t) && isfinite(logits[t])) {
            g->masked[t] = logits[t];
            if (best < 0)
                best = t;
        }
    }
    if (best < 0)
        return no_token_left(g, i, n);
    if ((st = el_sampler_sample(v->smp, g->masked, tok)))
        return st;
    /* a draw in the rounding gap above the last candidate may land on an excluded token */
    if (g->masked[*tok] == -INFINITY)
        *tok = best;
    return EL_OK;
}

el_status ctg_choose_first(el_variants *g, const float *logits, int32_t *first) {
    memset(g->taken, 0, (size_t)g->n_vocab);
    for (int32_t i = 0; i < g->n_variants; i++) {
        first[i] = g->v[i].p.first_token;
        if (first[i] >= 0)
            g->taken[first[i]] = 1;
    }
    /* pass 0: the masked variants, pass 1: the free ones */
    for (int pass = 0; pass < 2; pass++)
        for (int32_t i = 0; i < g->n_variants; i++) {
            if (first[i] >= 0 || (g->v[i].p.first_allowed != NULL) != (pass == 0))
                continue;
            el_status st = g->first == EL_FIRST_SAMPLE ? choose_sample(g, i, logits, &first[i])
                                                       : choose_top(g, i, logits, &first[i]);
            if (st)
                return st;
            g->taken[first[i]] = 1;
        }
    return EL_OK;
}
