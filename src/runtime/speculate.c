/* speculate.c - self-speculative decoding (DS2D) of one sequence: a tree of candidates drafted by
 * forecast slots, verified in one el_decode, its rejected rows freed (docs/architecture.md).
 *
 * A step's batch: row 0 is the pending token (sampled, not yet decoded); then the candidates,
 * depth by depth, those of depth d below the first (most likely) candidate of depth d-1; then,
 * after every one of those rows ("nodes"), a chain of forecast slots. Walking the tree samples
 * each token from the logits of the node before it, so the output is plain decoding's; where
 * the walk stops, that node's slots are the draft of the next step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "runtime/adapter.h"
#include "runtime/context.h"
#include "runtime/forecast.h"

enum {
    MAX_WIDTH = 8,       /* candidates per depth (and ranks of the acceptance statistics) */
    AUTO_WIDTH = 4,      /* widths tree_auto tries */
    PROBE_EVERY = 16,    /* plain steps between two that draft again to see if a tree pays */
    TIME_BUCKETS = EL_SPEC_TIME_BUCKETS,
};

struct el_spec {
    el_context *ctx;
    const el_forecast *f;
    el_sampler *sampler;
    el_spec_params p;
    int32_t seq, n_embd, n_vocab, max_rows;
    int32_t pending, pos;             /* the next token to decode and its position */
    bool started;
    /* the draft: ranked candidates per depth from the slots of the last accepted node */
    int32_t n_draft;                  /* depths drafted (0: none) */
    int32_t draft[EL_SPEC_MAX_DEPTH][MAX_WIDTH];
    /* batch rows */
    int32_t *token, *rpos, *rseq, *parent, *depth;
    int8_t *want;
    float *embd;
    int32_t *drop;
    /* tree_auto: hits[d][k] of tries[d]: how often the token at depth d+1 was rank k of the draft,
     * counted when the walk reached depth d along the first candidates; and step times (the
     * context's spec_seconds) */
    double hits[EL_SPEC_MAX_DEPTH][MAX_WIDTH], tries[EL_SPEC_MAX_DEPTH];
    double *seconds;                  /* [TIME_BUCKETS], 0: not measured */
    double last_seconds;              /* of the last decode */
    int32_t n_rows;                   /* rows of the step planned (0: none) */
    int32_t cur_depth, cur_width[EL_SPEC_MAX_DEPTH];
    bool cur_slots;
    int32_t plain_run;                /* plain steps since the last probe */
    el_spec_stats stats;
    el_spec_step_info last;
};

static int32_t candidates(const el_spec_params *p) {
    int32_t n = 0;
    for (int32_t d = 0; d < p->n_depth; d++) n += p->width[d];
    return n;
}

int32_t el_spec_max_rows(const el_forecast *f, const el_spec_params *p) {
    if (!f || !p) return 0;
    int32_t slots = f->n_slots;
    if (p->tree_auto) {
        int32_t n = 1 + slots * AUTO_WIDTH;
        return n * (1 + slots);
    }
    return (1 + candidates(p)) * (p->n_depth > 0 ? 1 + slots : 1);
}

static el_status check_params(const el_context *ctx, const el_forecast *f,
                              const el_spec_params *p) {
    if (p->seq_id < 0 || p->seq_id >= ctx->params.n_seq_max)
        return el_error(EL_ERR_INVALID_ARG, "speculation: seq_id %d out of range (n_seq_max %d)",
                        p->seq_id, ctx->params.n_seq_max);
    if (!p->tree_auto) {
        if (p->n_depth < 0 || p->n_depth > f->n_slots)
            return el_error(EL_ERR_INVALID_ARG, "speculation: a tree of depth %d, but the forecast "
                            "set has %d slots (depth 0..%d)", p->n_depth, f->n_slots, f->n_slots);
        for (int32_t d = 0; d < p->n_depth; d++)
            if (p->width[d] < 1 || p->width[d] > MAX_WIDTH)
                return el_error(EL_ERR_INVALID_ARG, "speculation: width %d at depth %d must be "
                                "1..%d", p->width[d], d + 1, MAX_WIDTH);
    }
    int32_t rows = el_spec_max_rows(f, p);
    if (rows > ctx->params.n_batch)
        return el_error(EL_ERR_INVALID_ARG, "speculation: a step needs %d rows, the context's "
                        "n_batch is %d", rows, ctx->params.n_batch);
    if (f->model != ctx->model)
        return el_error(EL_ERR_MISMATCH, "speculation: the forecast set was loaded for another "
                        "model than the context's");
    return EL_OK;
}

/* A set trained with an adapter serves only a sequence bound to exactly that adapter; a set
 * trained on the bare base serves any (its guesses are only guesses). */
static el_status check_binding(const el_context *ctx, const el_forecast *f, int32_t seq) {
    if (!f->for_adapter)
        return EL_OK;
    const struct el_seq_binding *b = &ctx->bind[seq];
    if (b->n == 1 && el_adapter_fingerprint(b->items[0].adapter) == f->adapter_fingerprint)
        return EL_OK;
    return el_error(EL_ERR_MISMATCH, "speculation: the forecast set was trained with adapter '%s'; "
                    "sequence %d is not bound to it (alone)", f->adapter_name, seq);
}

void el_spec_free(el_spec *s) {
    if (!s) return;
    free(s->token);
    free(s->rpos);
    free(s->rseq);
    free(s->parent);
    free(s->depth);
    free(s->want);
    free(s->embd);
    free(s->drop);
    free(s);
}

el_status el_spec_create(el_context *ctx, const el_forecast *f, el_sampler *sampler,
                         const el_spec_params *p, el_spec **out) {
    if (out) *out = NULL;
    if (!ctx || !f || !sampler || !p || !out)
        return el_error(EL_ERR_INVALID_ARG, "el_spec_create: NULL argument");
    el_status st = check_params(ctx, f, p);
    if (!st) st = check_binding(ctx, f, p->seq_id);
    if (st) return st;
    el_spec *s = calloc(1, sizeof *s);
    if (!s) return el_error(EL_ERR_NOMEM, "speculation: out of memory");
    s->ctx = ctx, s->f = f, s->sampler = sampler, s->p = *p, s->seq = p->seq_id;
    s->seconds = ctx->spec_seconds;
    s->n_embd = ctx->model->hp.n_embd, s->n_vocab = ctx->model->hp.n_vocab;
    s->max_rows = ctx->params.n_batch;
    size_t n = (size_t)s->max_rows;
    s->token = malloc(n * sizeof *s->token), s->rpos = malloc(n * sizeof *s->rpos);
    s->rseq = malloc(n * sizeof *s->rseq), s->parent = malloc(n * sizeof *s->parent);
    s->depth = malloc(n * sizeof *s->depth), s->want = malloc(n);
    s->drop = malloc(n * sizeof *s->drop);
    s->embd = malloc(n * (size_t)s->n_embd * sizeof(float));
    if (!s->token || !s->rpos || !s->rseq || !s->parent || !s->depth || !s->want || !s->drop ||
        !s->embd) {
        el_spec_free(s);
        return el_error(EL_ERR_NOMEM, "speculation: out of memory for %zu rows", n);
    }
    *out = s;
    return EL_OK;
}

/* Appends one row; returns its index. */
static int32_t add_row(el_spec *s, int32_t *n, int32_t token, const float *vec, int32_t pos,
                       int32_t parent, int32_t depth) {
    int32_t r = (*n)++;
    s->token[r] = vec ? -1 : token;
    if (vec) memcpy(s->embd + (size_t)r * s->n_embd, vec, (size_t)s->n_embd * sizeof(float));
    s->rpos[r] = pos, s->rseq[r] = s->seq, s->parent[r] = parent, s->depth[r] = depth;
    s->want[r] = 1;
    return r;
}

/* The chain of forecast slots after row r; depth -(j) marks slot j. */
static void add_slots(el_spec *s, int32_t *n, int32_t r, int32_t n_slots) {
    int32_t prev = r;
    for (int32_t j = 1; j <= n_slots; j++)
        prev = add_row(s, n, -1, s->f->vectors + (size_t)(j - 1) * s->n_embd, s->rpos[r] + j,
                       prev, -j);
}

static el_status decode(el_spec *s, int32_t n) {
    el_batch b = {.n_rows = n, .token = s->token, .embd = s->embd, .pos = s->rpos,
                  .seq_id = s->rseq, .parent = s->parent, .logits = s->want};
    double t0 = el_now_seconds();
    el_status st = el_decode(s->ctx, &b);
    double dt = el_now_seconds() - t0;
    if (st) return st;
    s->last_seconds = dt;
    if (n < TIME_BUCKETS) /* a running mean that follows the machine's speed changes */
        s->seconds[n] = s->seconds[n] > 0 ? 0.75 * s->seconds[n] + 0.25 * dt : dt;
    return EL_OK;
}

/* The MAX_WIDTH most likely tokens, best first (the lower id first among equals, as argmax). */
static void top_tokens(const float *lg, int32_t n_vocab, int32_t *top) {
    int32_t k = 0;
    for (int32_t i = 0; i < MAX_WIDTH; i++) top[i] = -1;
    for (int32_t t = 0; t < n_vocab; t++) {
        if (k == MAX_WIDTH && !(lg[t] > lg[top[k - 1]])) continue;
        int32_t i = k < MAX_WIDTH ? k++ : MAX_WIDTH - 1;
        while (i > 0 && lg[t] > lg[top[i - 1]]) {
            top[i] = top[i - 1];
            i--;
        }
        top[i] = t;
    }
}

/* The draft of the next step: the most likely tokens of each slot in the chain after row r (of
 * rows laid out from batch row `first` on). */
static void take_draft(el_spec *s, int32_t first, int32_t r, int32_t n_rows) {
    s->n_draft = 0;
    int32_t row = -1;
    for (int32_t i = r + 1; i < n_rows && row < 0; i++)
        if (s->depth[i] == -1 && s->parent[i] == r) row = i;
    for (; row >= 0 && row < n_rows && s->depth[row] == -(s->n_draft + 1); row++)
        top_tokens(el_get_logits(s->ctx, first + row), s->n_vocab, s->draft[s->n_draft++]);
}

static el_status calibrate(el_spec *s);
static bool tree_could_pay(const el_spec *s);

el_status el_spec_start(el_spec *s, const int32_t *prompt, int32_t n, int32_t *first) {
    if (!s || !prompt || !first || n < 1)
        return el_error(EL_ERR_INVALID_ARG, "el_spec_start: NULL argument or empty prompt");
    if (s->started)
        return el_error(EL_ERR_INVALID_ARG, "el_spec_start: already started");
    /* a prefix the cache holds already (a conversation's earlier turns) is not decoded again */
    int32_t cached = el_kv_seq_pos_max(s->ctx, s->seq) + 1;
    if (cached >= n)
        return el_error(EL_ERR_INVALID_ARG, "el_spec_start: sequence %d holds %d tokens, the "
                        "prompt %d: at least its last token must be left to decode", s->seq,
                        cached, n);
    int32_t slots = s->p.tree_auto || s->p.n_depth > 0 ? s->f->n_slots : 0;
    if (n - cached + slots > s->ctx->kv.n_ctx - s->ctx->kv.n_used) slots = 0; /* no room to draft */
    /* where the context's step times say no tree can pay (a compute-bound model), the first
     * step decodes plainly: drafting for it would cost rows for nothing */
    if (s->p.tree_auto && s->seconds[1] > 0 && !tree_could_pay(s)) slots = 0;
    int32_t chunk = s->max_rows - slots, done = cached;
    el_status st = EL_OK;
    while (!st && done < n) {
        int32_t m = n - done < chunk ? n - done : chunk, rows = 0;
        for (int32_t i = 0; i < m; i++)
            add_row(s, &rows, prompt[done + i], NULL, done + i, i > 0 ? rows - 1 : -1, 0);
        memset(s->want, 0, (size_t)rows);
        bool last = done + m == n;
        if (last) {
            s->want[rows - 1] = 1;
            add_slots(s, &rows, rows - 1, slots);
        }
        st = decode(s, rows);
        if (!st && last) {
            int32_t r = m - 1;
            if (!(st = el_sampler_sample(s->sampler, el_get_logits(s->ctx, r), first))) {
                el_sampler_accept(s->sampler, *first);
                take_draft(s, 0, r, rows);
                if (slots > 0) {
                    for (int32_t j = 0; j < slots; j++) s->drop[j] = m + j;
                    st = el_kv_remove_rows(s->ctx, s->drop, slots);
                }
            }
        }
        done += m;
    }
    if (st) {
        el_kv_seq_remove(s->ctx, s->seq, cached, -1);
        return st;
    }
    s->pending = *first, s->pos = n, s->started = true;
    /* a decoder on this context timed its steps before: its times (running means) serve */
    return s->p.tree_auto && !(s->seconds[1] > 0) ? calibrate(s) : EL_OK;
}

/* ------------------------------------------------------------- tree_auto */

/* The chance that the token at depth d+1 is rank k of its draft, given the walk reached depth d
 * along first candidates; before any evidence, a low prior: a tree is tried where steps of more
 * rows cost little (memory-bound decoding), not where they cost rows (then evidence comes from
 * the occasional drafting step first). */
static double accept_rate(const el_spec *s, int32_t d, int32_t k) {
    return (s->hits[d][k] + 0.1 / (k + 1)) / (s->tries[d] + 1.0);
}

/* Seconds a step of n rows takes: measured, else scaled from the nearest measured size below (a
 * step is never cheaper than a smaller one) or, with none, n times the nearest above. */
static double step_seconds(const el_spec *s, int32_t n) {
    if (n < TIME_BUCKETS && s->seconds[n] > 0) return s->seconds[n];
    for (int32_t m = n - 1; m >= 1; m--)
        if (m < TIME_BUCKETS && s->seconds[m] > 0) {
            for (int32_t k = n + 1; k < TIME_BUCKETS; k++)
                if (s->seconds[k] > 0)  /* interpolate between the two */
                    return s->seconds[m] + (s->seconds[k] - s->seconds[m]) * (n - m) / (k - m);
            return s->seconds[m] * n / m;
        }
    for (int32_t k = n + 1; k < TIME_BUCKETS; k++)
        if (s->seconds[k] > 0) return s->seconds[k];
    return 0;
}

/* Expected tokens of a step with this tree (the bonus token included). */
static double expected_tokens(const el_spec *s, const int32_t *width, int32_t depth) {
    double e = 1.0, reach = 1.0;
    for (int32_t d = 0; d < depth; d++) {
        double hit = 0;
        for (int32_t k = 0; k < width[d]; k++) hit += accept_rate(s, d, k);
        e += reach * hit;
        reach *= accept_rate(s, d, 0);
    }
    return e;
}

/* Chooses depth and widths (non-increasing, 1..AUTO_WIDTH) that maximize expected tokens per
 * second; depth 0 when plain decoding is faster. */
static void choose_tree(el_spec *s, int32_t *width, int32_t *depth) {
    int32_t slots = s->f->n_slots, max_depth = s->n_draft < slots ? s->n_draft : slots;
    double plain = step_seconds(s, 1);
    double best = plain > 0 ? 1.0 / plain : 0;
    *depth = 0;
    int32_t w[EL_SPEC_MAX_DEPTH];
    for (int32_t dep = 1; dep <= max_depth; dep++) {
        /* every non-increasing width vector of this depth, as an odometer */
        for (int32_t d = 0; d < dep; d++) w[d] = 1;
        for (;;) {
            int32_t n = 1;
            for (int32_t d = 0; d < dep; d++) n += w[d];
            int32_t rows = n * (1 + slots);
            double t = rows <= s->max_rows ? step_seconds(s, rows) : 0;
            if (t > 0 && expected_tokens(s, w, dep) / t > best) {
                best = expected_tokens(s, w, dep) / t;
                *depth = dep;
                memcpy(width, w, sizeof w);
            }
            int32_t d = dep - 1;
            while (d >= 0 && (w[d] == AUTO_WIDTH || (d > 0 && w[d] == w[d - 1]))) d--;
            if (d < 0) break;
            w[d]++;
            for (int32_t e = d + 1; e < dep; e++) w[e] = 1;
        }
    }
}

/* Times steps of a few sizes once per context, on scratch positions past the prompt, so that the
 * first choices compare measured costs. Leaves the cache as it was. */
static el_status calibrate(el_spec *s) {
    int32_t sizes[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
    int32_t most = el_spec_max_rows(s->f, &s->p), free_cells = s->ctx->kv.n_ctx - s->ctx->kv.n_used;
    if (most > s->max_rows) most = s->max_rows;
    if (most > free_cells) most = free_cells;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && sizes[i] <= most; i++) {
        int32_t rows = 0, n = sizes[i];
        for (int32_t r = 0; r < n; r++)
            add_row(s, &rows, s->pending, NULL, s->pos + r, r > 0 ? r - 1 : -1, 0);
        double best = 0;
        for (int rep = 0; rep < 2; rep++) { /* the faster of two: the first may pay for caches */
            el_status st = decode(s, rows);
            if (!st) {
                for (int32_t r = 0; r < rows; r++) s->drop[r] = r;
                st = el_kv_remove_rows(s->ctx, s->drop, rows);
            }
            if (st) return st;
            if (rep == 0 || s->last_seconds < best) best = s->last_seconds;
        }
        s->seconds[n] = best;
        /* a step this long loses even if every candidate is accepted: larger ones too */
        if (best > (2.0 + s->f->n_slots) * s->seconds[1]) break;
    }
    return EL_OK;
}

/* Whether some tree would beat plain decoding if all its candidates were accepted: if not (a
 * compute-bound model), drafting again is not worth its rows. */
static bool tree_could_pay(const el_spec *s) {
    double plain = step_seconds(s, 1);
    for (int32_t dep = 1; dep <= s->f->n_slots; dep++) {
        int32_t rows = (1 + dep) * (1 + s->f->n_slots);
        double t = rows <= s->max_rows ? step_seconds(s, rows) : 0;
        if (t > 0 && (1.0 + dep) / t > 1.0 / plain) return true;
    }
    return false;
}

/* ------------------------------------------------------------- one step */

/* The rows of a step: the pending token, the tree, the slots. Returns the row count. */
static int32_t build(el_spec *s, const int32_t *width, int32_t depth, bool slots) {
    int32_t n = 0;
    add_row(s, &n, s->pending, NULL, s->pos, -1, 0);
    int32_t spine = 0;
    for (int32_t d = 0; d < depth; d++) {
        int32_t first = n;
        for (int32_t k = 0; k < width[d]; k++)
            add_row(s, &n, s->draft[d][k], NULL, s->pos + d + 1, spine, d + 1);
        spine = first;
    }
    if (slots) {
        int32_t nodes = n;
        for (int32_t r = 0; r < nodes; r++) add_slots(s, &n, r, s->f->n_slots);
    }
    return n;
}

/* The candidate of depth d+1 below row `at` holding token t, or -1. */
static int32_t find_child(const el_spec *s, int32_t n, int32_t at, int32_t t) {
    for (int32_t r = at + 1; r < n; r++)
        if (s->depth[r] > 0 && s->parent[r] == at && s->token[r] == t) return r;
    return -1;
}

static void count_acceptance(el_spec *s, int32_t d, int32_t t) {
    if (d >= s->n_draft) return;
    s->tries[d] += 1;
    for (int32_t k = 0; k < MAX_WIDTH; k++)
        if (s->draft[d][k] == t) {
            s->hits[d][k] += 1;
            break;
        }
}

/* Chooses the next step's tree and lays out its rows in s's buffers (s->n_rows of them). */
static void plan(el_spec *s) {
    int32_t depth = 0;
    bool slots = s->p.n_depth > 0;
    memset(s->cur_width, 0, sizeof s->cur_width);
    if (s->p.tree_auto) {
        choose_tree(s, s->cur_width, &depth);
        /* plain steps draft nothing; now and then one drafts again, to see if a tree pays */
        slots = depth > 0 || (++s->plain_run >= PROBE_EVERY && tree_could_pay(s));
        if (slots) s->plain_run = 0;
    } else {
        depth = s->p.n_depth < s->n_draft ? s->p.n_depth : s->n_draft;
        memcpy(s->cur_width, s->p.width, sizeof s->cur_width);
    }
    /* near the end of the cache a tree's rows may not fit where one plain row still does: the
     * tokens are the same, only fewer a step */
    int32_t free_cells = s->ctx->kv.n_ctx - s->ctx->kv.n_used;
    if (depth > 0 || slots) {
        int32_t rows = build(s, s->cur_width, depth, slots);
        if (rows > free_cells) depth = 0, slots = false;
    }
    s->cur_depth = depth, s->cur_slots = slots;
    s->n_rows = build(s, s->cur_width, depth, slots);
}

/* After the step's rows were decoded from batch row `first` on: the walk (sample at the current
 * node, move to the candidate that holds the sample), the path's rows kept and the rest freed,
 * the next draft taken. */
static el_status walk(el_spec *s, int32_t first, int32_t *tokens, int32_t cap, int32_t *n_out) {
    int32_t n = s->n_rows, at = 0, emitted = 0, t = -1;
    bool on_spine = true;
    el_status st;
    for (;;) {
        if ((st = el_sampler_sample(s->sampler, el_get_logits(s->ctx, first + at), &t)))
            return st;
        el_sampler_accept(s->sampler, t);
        if (on_spine) count_acceptance(s, s->depth[at], t);
        tokens[emitted++] = t;
        if (emitted == cap || el_token_is_eog(s->ctx->model, t)) break;
        int32_t next = find_child(s, n, at, t);
        if (next < 0) break;
        on_spine = on_spine && s->token[next] == s->draft[s->depth[next] - 1][0];
        at = next;
    }
    int32_t n_drop = 0;
    for (int32_t r = 0; r < n; r++) {
        bool keep = false;
        for (int32_t a = at; a >= 0 && !keep; a = s->parent[a]) keep = a == r;
        if (!keep) s->drop[n_drop++] = first + r;
    }
    int32_t at_pos = s->rpos[at];
    if (s->cur_slots) take_draft(s, first, at, n);
    else s->n_draft = 0;
    if ((st = el_kv_remove_rows(s->ctx, s->drop, n_drop)))
        return st;
    s->pending = t, s->pos = at_pos + 1;
    s->last = (el_spec_step_info){.n_depth = s->cur_depth, .slots = s->cur_slots,
                                  .n_slots = s->f->n_slots, .n_rows = n, .tokens = emitted};
    memcpy(s->last.width, s->cur_width, sizeof s->last.width);
    s->stats.steps++;
    s->stats.rows += n;
    s->stats.tokens += emitted;
    if (s->cur_depth > 0) s->stats.tree_steps++;
    s->n_rows = 0;
    *n_out = emitted;
    return EL_OK;
}

static el_status check_step(const el_spec *s, const int32_t *tokens, const int32_t *n_out,
                            int32_t cap, const char *fn) {
    if (!s || !tokens || !n_out || cap < 1)
        return el_error(EL_ERR_INVALID_ARG, "%s: NULL argument or cap < 1", fn);
    if (!s->started)
        return el_error(EL_ERR_INVALID_ARG, "%s: el_spec_start first", fn);
    return EL_OK;
}

el_status el_spec_step(el_spec *s, int32_t *tokens, int32_t cap, int32_t *n_out) {
    el_status st = check_step(s, tokens, n_out, cap, "el_spec_step");
    if (st) return st;
    *n_out = 0;
    plan(s);
    if ((st = decode(s, s->n_rows))) return st;
    s->stats.decode_seconds += s->last_seconds;
    return walk(s, 0, tokens, cap, n_out);
}

int32_t el_spec_next_rows(el_spec *s, int32_t first, int32_t cap, int32_t *token, float *embd,
                          int32_t *pos, int32_t *seq_id, int32_t *parent, int8_t *logits) {
    if (!s || !s->started || first < 0 || !token || !embd || !pos || !seq_id || !parent ||
        !logits)
        return 0;
    if (s->n_rows == 0) plan(s);
    if (s->n_rows > cap - first) return 0;
    for (int32_t r = 0; r < s->n_rows; r++) {
        int32_t i = first + r;
        token[i] = s->token[r], pos[i] = s->rpos[r], seq_id[i] = s->seq;
        parent[i] = s->parent[r] < 0 ? -1 : first + s->parent[r];
        logits[i] = 1;
        if (s->token[r] < 0)
            memcpy(embd + (size_t)i * s->n_embd, s->embd + (size_t)r * s->n_embd,
                   (size_t)s->n_embd * sizeof(float));
    }
    return s->n_rows;
}

el_status el_spec_accept(el_spec *s, int32_t first, int32_t *tokens, int32_t cap,
                         int32_t *n_out) {
    el_status st = check_step(s, tokens, n_out, cap, "el_spec_accept");
    if (st) return st;
    *n_out = 0;
    if (s->n_rows == 0)
        return el_error(EL_ERR_INVALID_ARG, "el_spec_accept: no rows were given out "
                        "(el_spec_next_rows)");
    return walk(s, first, tokens, cap, n_out);
}

el_status el_spec_get_stats(const el_spec *s, el_spec_stats *out) {
    if (!s || !out) return el_error(EL_ERR_INVALID_ARG, "el_spec_get_stats: NULL argument");
    *out = s->stats;
    return EL_OK;
}

el_status el_spec_last_step(const el_spec *s, el_spec_step_info *out) {
    if (!s || !out) return el_error(EL_ERR_INVALID_ARG, "el_spec_last_step: NULL argument");
    *out = s->last;
    return EL_OK;
}
