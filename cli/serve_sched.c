/* serve_sched.c - continuous batching for `edgelora serve` (serve_sched.h says what it does).
 *
 * One mutex guards the queue, the jobs' published fields and the statistics. The scheduler
 * thread holds it except while el_decode runs, so a step's sampling and publication happen
 * together and an HTTP thread woken on a job's condition variable sees a whole step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "serve_cache.h"
#include "serve_sched.h"

/* Removed adapters remembered at once (more: no request with adapters is kept meanwhile). */
enum { FORGET_MAX = 32 };

typedef struct sched_slot {
    serve_job *job;        /* NULL: free */
    el_sampler *smp;
    int32_t *tokens;       /* prompt, then generated */
    int32_t n_tokens;
    int32_t fed;           /* prompt tokens in the cache (shared or decoded) */
    bool generating;       /* the prompt is in; each step feeds the last token */
    el_variants *group;    /* a job with n > 1: its choices, in this slot and the next n-1 */
    bool follower;         /* one of those next n-1 slots (the first does the work) */
    el_spec *spec;         /* a speculative job's decoder (NULL: plain rows); it starts once
                            * the cache holds all the prompt but its last token */
    int32_t spec_tok[EL_SPEC_MAX_DEPTH + 1], n_spec_tok; /* what this step's tree gave */
    int32_t row, first_row, n_rows; /* this step's rows; row: the one it samples from */
    char *text;            /* the text generated so far (published up to stream.shown) */
    size_t len, cap;
    cli_stream stream;
    int32_t reserved;      /* KV cells held for the job */
    float rate;            /* the pruning rate its sequences run at (the context's when it
                            * was admitted) */
    double t0;
} sched_slot;

struct serve_sched {
    el_model *model;
    el_context *ctx;
    int32_t n_vocab, n_batch, n_ctx, n_slots;
    int32_t n_prompt_rows; /* prompt rows a step takes at most while requests generate */
    sched_slot *slots;
    int32_t *tok, *pos, *seq, *parent;
    int8_t *logits;
    float *embd;           /* [n_batch][n_embd] forecast rows (with a forecast set) */
    int32_t n_embd;
    const el_forecast *forecast;
    bool tree_rows;        /* this step holds a speculative tree */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work;   /* a job was submitted or cancelled, or draining began */
    serve_job **queue;
    int32_t n_queue, queue_max;
    int32_t reserved;      /* KV cells the running jobs hold */
    serve_cache cache;     /* finished requests' cells, for prefix reuse (sequences after the
                            * slots'); they never take cells a running job reserved */
    /* adapters removed that running or queued jobs still bind: their requests' cells are not
     * kept (an entry would hold the adapter alive); while a job binds one, it is not freed,
     * so no new adapter has its address */
    const el_adapter *forget[FORGET_MAX];
    int32_t n_forget;
    bool forget_overflow;  /* more than FORGET_MAX: keep no request with adapters */
    bool stopping;
    /* a pruning rate asked for (serve_sched_set_prune), applied between steps; after a change
     * the parts only the old rate read are released once no request runs at it */
    float rate_want;
    bool rate_pending, rate_release;
    serve_stats stats;
    double job_seconds;    /* a running mean of how long a job takes (Retry-After) */
};

serve_job *serve_job_new(int32_t n_choices) {
    serve_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    if (!(j->choices = calloc((size_t)n_choices, sizeof *j->choices))) {
        free(j);
        return NULL;
    }
    j->n_choices = n_choices;
    j->refs = 1;
    j->logprobs = -1;
    pthread_cond_init(&j->cond, NULL);
    return j;
}

static void job_unref(serve_job *j) { /* under the lock */
    if (--j->refs > 0) return;
    for (int32_t i = 0; i < j->n_choices; i++) {
        free(j->choices[i].text);
        free(j->choices[i].lp);
    }
    free(j->choices);
    free(j->prompt);
    pthread_cond_destroy(&j->cond);
    free(j);
}

void serve_job_release(serve_sched *s, serve_job *j) {
    pthread_mutex_lock(&s->mu);
    job_unref(j);
    pthread_mutex_unlock(&s->mu);
}

void serve_job_lock(serve_sched *s) { pthread_mutex_lock(&s->mu); }
void serve_job_unlock(serve_sched *s) { pthread_mutex_unlock(&s->mu); }

bool serve_job_wait(serve_sched *s, serve_job *j, uint64_t seen, int timeout_ms) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    while (j->version == seen && !j->done)
        if (pthread_cond_timedwait(&j->cond, &s->mu, &until)) return false;
    return true;
}

void serve_job_cancel(serve_sched *s, serve_job *j) {
    pthread_mutex_lock(&s->mu);
    j->cancelled = true;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
}

/* The tokens a job holds at most: its prompt and what its choices generate. */
static int32_t job_tokens(const serve_job *j) {
    return j->n_prompt + j->n_choices * j->max_tokens;
}

/* The KV cells a job reserves: its tokens and, speculative, a step's tree on top (the rejected
 * rows are freed after the step), so the trees of one step never take another job's cells. A
 * reservation of the whole context runs alone, where el_spec itself falls back to plain rows
 * when a tree no longer fits. */
static int32_t job_cells(const serve_sched *s, const serve_job *j) {
    int32_t n = job_tokens(j) + (j->speculative ? el_spec_max_rows(s->forecast, &j->spec) : 0);
    return n < s->n_ctx ? n : s->n_ctx;
}

bool serve_sched_submit(serve_sched *s, serve_job *j, bool *too_big) {
    *too_big = job_tokens(j) > s->n_ctx || j->n_choices > s->n_slots;
    if (*too_big) return false;
    pthread_mutex_lock(&s->mu);
    bool ok = !s->stopping && s->n_queue < s->queue_max;
    if (ok) {
        j->refs++;
        s->queue[s->n_queue++] = j;
        s->stats.requests++;
        pthread_cond_signal(&s->work);
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

void serve_sched_forget_adapter(serve_sched *s, const el_adapter *a) {
    pthread_mutex_lock(&s->mu);
    if (s->n_forget < FORGET_MAX) s->forget[s->n_forget++] = a;
    else s->forget_overflow = true;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
}

void serve_sched_set_prune(serve_sched *s, float rate) {
    pthread_mutex_lock(&s->mu);
    s->rate_want = rate;
    s->rate_pending = true;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
}

void serve_sched_get_stats(serve_sched *s, serve_stats *out) {
    pthread_mutex_lock(&s->mu);
    *out = s->stats;
    out->prune_rate = s->rate_pending ? s->rate_want : el_context_get_prune(s->ctx);
    out->queued = s->n_queue;
    out->running = 0;
    for (int32_t i = 0; i < s->n_slots; i++)
        out->running += s->slots[i].job && !s->slots[i].follower;
    out->kv_cells = s->n_ctx;
    pthread_mutex_unlock(&s->mu);
}

int serve_sched_retry_after(serve_sched *s) {
    pthread_mutex_lock(&s->mu);
    double t = s->job_seconds * (s->n_queue + 1) / s->n_slots;
    pthread_mutex_unlock(&s->mu);
    return t < 1 ? 1 : t > 60 ? 60 : (int)ceil(t);
}

/* ------------------------------------------------------------ publication */

static void publish(serve_job *j) {
    j->version++;
    pthread_cond_broadcast(&j->cond);
}

static bool append_text(serve_choice *c, const char *text, size_t n) {
    char *more = realloc(c->text, c->len + n + 1);
    if (!more) return false;
    memcpy(more + c->len, text, n);
    c->len += n;
    more[c->len] = '\0';
    c->text = more;
    return true;
}

static void on_variant_text(void *user, int32_t variant, const char *text, size_t len) {
    serve_job *j = user;
    if (!append_text(&j->choices[variant], text, len))
        snprintf(j->error, sizeof j->error, "out of memory");
}

/* The length of text[0..n) without a trailing UTF-8 sequence still missing bytes, which the
 * next token completes (a client must never receive half a character). */
static size_t utf8_complete(const char *text, size_t n) {
    size_t i = n, back = 0;
    while (i > 0 && back < 4 && ((unsigned char)text[i - 1] & 0xC0) == 0x80) i--, back++;
    if (i == 0) return n;
    unsigned char lead = (unsigned char)text[i - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return need > back + 1 ? i - 1 : n;
}

/* ------------------------------------------------------------ slots */

static bool job_binds(const serve_job *j, const el_adapter *a) {
    for (int32_t b = 0; b < j->n_bind; b++)
        if (j->bind[b].adapter == a) return true;
    return false;
}

/* Whether j uses an adapter removed meanwhile (its cells are not to be kept). */
static bool binds_forgotten(const serve_sched *s, const serve_job *j) {
    if (s->forget_overflow && j->n_bind > 0) return true;
    for (int32_t k = 0; k < s->n_forget; k++)
        if (job_binds(j, s->forget[k])) return true;
    return false;
}

/* Drops the kept entries of removed adapters, and forgets those no running or queued job binds
 * any more (no new job can bind them: they are unlisted). */
static void forget_adapters(serve_sched *s) {
    if (s->n_forget == 0 && !s->forget_overflow) return;
    serve_cache_forget(&s->cache, s->forget, s->n_forget, s->forget_overflow);
    int32_t kept = 0;
    bool bound = false;
    for (int32_t k = 0; k < s->n_forget; k++) {
        bool used = false;
        for (int32_t i = 0; i < s->n_slots && !used; i++)
            used = s->slots[i].job && job_binds(s->slots[i].job, s->forget[k]);
        for (int32_t q = 0; q < s->n_queue && !used; q++) used = job_binds(s->queue[q], s->forget[k]);
        if (used) s->forget[kept++] = s->forget[k];
    }
    s->n_forget = kept;
    for (int32_t i = 0; i < s->n_slots; i++) bound |= s->slots[i].job && s->slots[i].job->n_bind;
    for (int32_t q = 0; q < s->n_queue; q++) bound |= s->queue[q]->n_bind > 0;
    if (!bound) s->forget_overflow = false;
}

static void job_end(serve_sched *s, serve_job *j, double t0) {
    j->done = true;
    publish(j);
    s->job_seconds += (cli_now_ms() / 1e3 - t0 - s->job_seconds) * 0.2;
    job_unref(j);
}

/* Frees slot i's sequence (and its group's), without publishing anything. */
static void slot_clear(serve_sched *s, int32_t i) {
    sched_slot *sl = &s->slots[i];
    int32_t k = sl->group ? sl->job->n_choices : 1;
    if (sl->group) {
        el_variants_free(sl->group); /* its cells and bindings */
    } else {
        el_spec_free(sl->spec);
        el_kv_seq_remove(s->ctx, i, 0, -1);
        el_context_bind(s->ctx, i, NULL, 0);
    }
    el_sampler_free(sl->smp);
    free(sl->tokens);
    free(sl->text);
    s->reserved -= sl->reserved;
    for (int32_t c = k - 1; c >= 0; c--) s->slots[i + c] = (sched_slot){.row = -1};
}

static void slot_fail(serve_sched *s, int32_t i, const char *why) {
    serve_job *j = s->slots[i].job;
    double t0 = s->slots[i].t0;
    if (!j->error[0]) snprintf(j->error, sizeof j->error, "%s", why);
    slot_clear(s, i);
    job_end(s, j, t0);
}

/* Appends the text of slot i's newest token to its text. The first is found as `run` finds
 * it (the whole text less the prompt's, which settles SentencePiece's leading space); after it,
 * detokenizing is the concatenation of the tokens' pieces, so each token adds its piece. */
static bool slot_add_token_text(serve_sched *s, sched_slot *sl) {
    const serve_job *j = sl->job;
    char *add = NULL;
    size_t n;
    el_status st;
    if (sl->n_tokens - j->n_prompt == 1) {
        st = cli_continuation(s->model, sl->tokens, j->n_prompt, sl->n_tokens, &add);
    } else {
        st = el_detokenize(s->model, sl->tokens + sl->n_tokens - 1, 1, false, false, &add);
    }
    if (st != EL_OK) return false;
    n = strlen(add);
    if (sl->len + n + 1 > sl->cap) {
        size_t cap = (sl->len + n + 1) * 2;
        char *more = realloc(sl->text, cap);
        if (!more) {
            free(add);
            return false;
        }
        sl->text = more;
        sl->cap = cap;
    }
    memcpy(sl->text + sl->len, add, n + 1);
    sl->len += n;
    free(add);
    return true;
}

/* Publishes slot i's text up to what is final (final: all of it, but a stop string); returns
 * whether a stop string ended it (or an error, in the job's error). Only the tail a stop
 * string could still begin in is scanned: the text before it had none. */
static bool slot_publish_text(serve_sched *s, int32_t i, bool final) {
    sched_slot *sl = &s->slots[i];
    serve_job *j = sl->job;
    if (!sl->text) return j->error[0]; /* no token yet */
    size_t shown = sl->stream.shown, longest = 0;
    for (int k = 0; k < j->n_stops; k++)
        if (strlen(j->stops[k]) > longest) longest = strlen(j->stops[k]);
    size_t from = shown > longest ? shown - longest : 0;
    cli_stream tail = {.shown = shown - from};
    size_t end = from + cli_stream_update(&tail, sl->text + from, sl->len - from, j->stops,
                                          j->n_stops, final);
    sl->stream.stopped = tail.stopped;
    if (!final && !tail.stopped) end = utf8_complete(sl->text, end);
    if (end < shown) end = shown;
    if (end > shown && !append_text(&j->choices[0], sl->text + shown, end - shown))
        snprintf(j->error, sizeof j->error, "out of memory");
    sl->stream.shown = end;
    return sl->stream.stopped || j->error[0];
}

static void slot_finish(serve_sched *s, int32_t i, const char *reason) {
    sched_slot *sl = &s->slots[i];
    serve_job *j = sl->job;
    slot_publish_text(s, i, true);
    j->choices[0].finish = sl->stream.stopped ? "stop" : reason;
    j->choices[0].n_tokens = sl->n_tokens - j->n_prompt;
    s->stats.gen_tokens += j->choices[0].n_tokens;
    /* the cells of all its tokens but the last, which no step has decoded (after a tree's walk
     * the sequence holds its path alone: plain cells too) */
    if (!binds_forgotten(s, j) && sl->rate == el_context_get_prune(s->ctx))
        serve_cache_put(&s->cache, i, sl->tokens, sl->n_tokens - 1, j->bind, j->n_bind);
    double t0 = sl->t0;
    slot_clear(s, i);
    job_end(s, j, t0);
}

/* The longest prefix of j's prompt (all but its last token, whose logits are needed) already
 * in the cache of another sequence with the same adapters: a running request's (a group's
 * prompt, in its first sequence) or a finished one's kept (serve_cache); *from is that
 * sequence. Only cells computed at the rate the job runs at count (the cache holds no others:
 * it is cleared when the rate changes). */
static int32_t shared_prefix(serve_sched *s, const serve_job *j, int32_t self, int32_t *from) {
    int32_t best = serve_cache_match(&s->cache, j->prompt, j->n_prompt - 1, j->bind, j->n_bind,
                                     from);
    for (int32_t i = 0; i < s->n_slots; i++) {
        const sched_slot *o = &s->slots[i];
        if (i == self || !o->job || o->follower || o->rate != s->slots[self].rate) continue;
        const serve_job *oj = o->job;
        if (!serve_same_bindings(oj->bind, oj->n_bind, j->bind, j->n_bind)) continue;
        /* a group decoded its whole prompt when it started */
        const int32_t *tokens = o->group ? oj->prompt : o->tokens;
        int32_t cached = o->group ? oj->n_prompt : o->generating ? o->n_tokens - 1 : o->fed, n = 0;
        int32_t lim = j->n_prompt - 1 < cached ? j->n_prompt - 1 : cached;
        while (n < lim && tokens[n] == j->prompt[n]) n++;
        if (n > best) best = n, *from = i;
    }
    return best;
}

static void admit_plain(serve_sched *s, int32_t i, serve_job *j) {
    sched_slot *sl = &s->slots[i];
    *sl = (sched_slot){.job = j, .row = -1, .reserved = job_cells(s, j),
                       .rate = el_context_get_prune(s->ctx), .t0 = cli_now_ms() / 1e3};
    s->reserved += sl->reserved;
    if (!(sl->tokens = malloc((size_t)job_tokens(j) * sizeof *sl->tokens))) {
        slot_fail(s, i, "out of memory");
        return;
    }
    memcpy(sl->tokens, j->prompt, (size_t)j->n_prompt * sizeof *sl->tokens);
    sl->n_tokens = j->n_prompt;
    if (el_context_bind(s->ctx, i, j->bind, j->n_bind) != EL_OK ||
        el_sampler_create(&j->sp, s->n_vocab, &sl->smp) != EL_OK) {
        slot_fail(s, i, el_last_error());
        return;
    }
    for (int32_t t = 0; t < j->n_prompt; t++) el_sampler_accept(sl->smp, j->prompt[t]);
    if (j->speculative) { /* after the binding, which a set trained for an adapter checks */
        j->spec.seq_id = i;
        el_status st = el_spec_create(s->ctx, s->forecast, sl->smp, &j->spec, &sl->spec);
        if (st != EL_OK && st != EL_ERR_MISMATCH) { /* mismatch: the set is not for these */
            slot_fail(s, i, el_last_error());
            return;
        }
        j->spec_ran = sl->spec != NULL;
        s->stats.spec_requests += j->spec_ran;
    }
    int32_t from = -1, n = shared_prefix(s, j, i, &from);
    if (n > 0 && el_kv_seq_share(s->ctx, from, i, 0, n) == EL_OK) {
        sl->fed = n;
        j->cached_tokens = n;
        s->stats.reused_tokens += n;
    }
    s->stats.prompt_tokens += j->n_prompt;
}

/* Choice c's log-probabilities: e (copied), after those it has; false if out of memory. */
static bool add_logprob(serve_choice *c, const el_token_logprob *e) {
    if (c->n_lp == c->cap_lp) {
        int32_t cap = c->cap_lp ? 2 * c->cap_lp : 16;
        el_token_logprob *more = realloc(c->lp, (size_t)cap * sizeof *more);
        if (!more) return false;
        c->lp = more;
        c->cap_lp = cap;
    }
    c->lp[c->n_lp++] = *e;
    return true;
}

/* The log-probabilities of the tokens slot i's group took since the last call, into its
 * choices; false after failing the slot (out of memory). */
static bool take_group_logprobs(serve_sched *s, int32_t i) {
    serve_job *j = s->slots[i].job;
    for (int32_t c = 0; j->logprobs >= 0 && c < j->n_choices; c++) {
        el_variant_result r;
        el_variants_result(s->slots[i].group, c, &r);
        serve_choice *ch = &j->choices[c];
        while (ch->n_lp < r.n_tokens)
            if (!add_logprob(ch, &r.logprobs[ch->n_lp])) {
                slot_fail(s, i, "out of memory");
                return false;
            }
    }
    return true;
}

/* A finished group's first sequence (its prompt and the cells of its first choice) kept as a
 * cache entry, as a plain request's is. */
static void keep_group(serve_sched *s, int32_t i) {
    const serve_job *j = s->slots[i].job;
    el_variant_result r;
    if (binds_forgotten(s, j) || s->slots[i].rate != el_context_get_prune(s->ctx) ||
        el_variants_result(s->slots[i].group, 0, &r) != EL_OK)
        return;
    int32_t n = j->n_prompt + r.n_cells, *tokens = malloc((size_t)n * sizeof *tokens);
    if (!tokens) return; /* nothing kept is no error */
    memcpy(tokens, j->prompt, (size_t)j->n_prompt * sizeof *tokens);
    memcpy(tokens + j->n_prompt, r.tokens, (size_t)r.n_cells * sizeof *tokens);
    serve_cache_put(&s->cache, i, tokens, n, j->bind, j->n_bind);
    free(tokens);
}

/* What slot i's group has taken since the last call, into its choices: their tokens, log-
 * probabilities and finish reasons; the job ends when every choice has (or on a failure). */
static void group_progress(serve_sched *s, int32_t i) {
    sched_slot *sl = &s->slots[i];
    serve_job *j = sl->job;
    if (!take_group_logprobs(s, i)) return;
    static const char *const reasons[] = {[EL_FINISH_EOS] = "stop", [EL_FINISH_STOP] = "stop",
                                          [EL_FINISH_LENGTH] = "length"};
    for (int32_t c = 0; c < j->n_choices; c++) {
        el_variant_result r;
        el_variants_result(sl->group, c, &r);
        j->choices[c].n_tokens = r.n_tokens;
        if (r.finish != EL_FINISH_NONE && !j->choices[c].finish) {
            j->choices[c].finish = reasons[r.finish];
            s->stats.gen_tokens += r.n_tokens;
        }
    }
    if (j->error[0]) {
        slot_fail(s, i, j->error);
    } else if (!el_variants_running(sl->group)) {
        keep_group(s, i);
        double t0 = sl->t0;
        slot_clear(s, i);
        job_end(s, j, t0);
    } else {
        publish(j);
    }
}

static void admit_group(serve_sched *s, int32_t i, serve_job *j) {
    int32_t k = j->n_choices;
    el_variant_params vp[SERVE_MAX_N];
    el_variants_params gp;
    cli_choices ch = {.n = k, .seq_id = i, .max_tokens = j->max_tokens, .sp = j->sp,
                      .bind = j->bind, .n_bind = j->n_bind, .stops = j->stops,
                      .n_stops = j->n_stops};
    cli_choices_params(&ch, vp, &gp);
    gp.on_text = on_variant_text;
    gp.user = j;
    gp.logprobs = j->logprobs >= 0;
    gp.top_logprobs = j->logprobs >= 0 ? j->logprobs : 0;
    sched_slot *sl = &s->slots[i];
    *sl = (sched_slot){.job = j, .row = -1, .reserved = job_cells(s, j),
                       .rate = el_context_get_prune(s->ctx), .t0 = cli_now_ms() / 1e3};
    s->reserved += sl->reserved;
    s->stats.prompt_tokens += j->n_prompt;
    int32_t from = -1, n = shared_prefix(s, j, i, &from);
    if (n > 0 && el_kv_seq_share(s->ctx, from, i, 0, n) == EL_OK) {
        gp.n_past = n;
        j->cached_tokens = n;
        s->stats.reused_tokens += n;
    }
    /* el_variants_start decodes the prompt at once and wants its cells free: the kept entries
     * give way now, after the prefix is shared (a shared cell is the job's then) */
    serve_cache_fit(&s->cache, s->n_ctx - s->reserved);
    if (el_variants_start(s->ctx, &gp, j->prompt, j->n_prompt, &sl->group) != EL_OK) {
        slot_fail(s, i, el_last_error());
        return;
    }
    for (int32_t c = 1; c < k; c++) s->slots[i + c] = (sched_slot){.job = j, .row = -1, .follower = true};
    sl->generating = true;
    group_progress(s, i); /* its first tokens may already end it (max_tokens 1, a stop string) */
}

/* Free slots i .. i+k-1? */
static bool slots_free(const serve_sched *s, int32_t i, int32_t k) {
    if (i + k > s->n_slots) return false;
    for (int32_t c = i; c < i + k; c++)
        if (s->slots[c].job) return false;
    return true;
}

/* Moves jobs from the head of the queue into free sequences while their cells fit (in order:
 * a large job at the head waits rather than be overtaken forever). */
static void admit(serve_sched *s) {
    while (s->n_queue > 0) {
        serve_job *j = s->queue[0];
        if (j->cancelled) {
            memmove(s->queue, s->queue + 1, (size_t)--s->n_queue * sizeof *s->queue);
            job_end(s, j, cli_now_ms() / 1e3);
            continue;
        }
        if (s->reserved + job_cells(s, j) > s->n_ctx) return;
        int32_t i = 0, k = j->n_choices;
        while (i < s->n_slots && !slots_free(s, i, k)) i++;
        if (i == s->n_slots) return;
        memmove(s->queue, s->queue + 1, (size_t)--s->n_queue * sizeof *s->queue);
        if (k > 1) admit_group(s, i, j);
        else admit_plain(s, i, j);
        /* after the prefix is shared (a shared cell is the job's then): what the job reserved
         * must be free for it whatever the kept entries hold */
        serve_cache_fit(&s->cache, s->n_ctx - s->reserved);
    }
}

static void drop_cancelled(serve_sched *s) {
    for (int32_t i = 0; i < s->n_slots; i++) {
        sched_slot *sl = &s->slots[i];
        if (!sl->job || sl->follower || !sl->job->cancelled) continue;
        serve_job *j = sl->job;
        double t0 = sl->t0;
        slot_clear(s, i);
        job_end(s, j, t0);
    }
}

/* ------------------------------------------------------------ a step */

/* The step's rows: those of every generating slot (one, a group's one a choice, or a
 * speculative tree), then prompt chunks. */
static int32_t build_step(serve_sched *s) {
    int32_t n = 0;
    s->tree_rows = false;
    for (int32_t i = 0; i < s->n_slots; i++) {
        sched_slot *sl = &s->slots[i];
        sl->row = -1;
        sl->n_rows = 0;
        if (!sl->job || !sl->generating) continue;
        sl->first_row = n;
        if (sl->spec) {
            /* n_batch holds every slot's largest tree (serve_sched_params), so this fits */
            int32_t k = el_spec_next_rows(sl->spec, n, s->n_batch, s->tok, s->embd, s->pos,
                                          s->seq, s->parent, s->logits);
            if (k == 0) continue;
            sl->row = n;
            sl->n_rows = k;
            n += k;
            s->tree_rows = true;
            continue;
        }
        if (sl->group) {
            int32_t k = el_variants_next_rows(sl->group, s->tok + n, s->pos + n, s->seq + n);
            memset(s->logits + n, 1, (size_t)k);
            for (int32_t r = n; r < n + k; r++) s->parent[r] = -1;
            sl->row = n;
            sl->n_rows = k;
            n += k;
            continue;
        }
        s->tok[n] = sl->tokens[sl->n_tokens - 1];
        s->pos[n] = sl->n_tokens - 1;
        s->seq[n] = i;
        s->logits[n] = 1;
        s->parent[n] = -1;
        sl->n_rows = 1;
        sl->row = n++;
    }
    /* prompts fill the step up to the batch size, but while requests generate only up to
     * n_prompt_rows of them, so that one admission does not stall every stream for long */
    int32_t cap = n > 0 && n + s->n_prompt_rows < s->n_batch ? n + s->n_prompt_rows : s->n_batch;
    for (int32_t i = 0; i < s->n_slots && n < cap; i++) {
        sched_slot *sl = &s->slots[i];
        if (!sl->job || sl->generating || sl->follower) continue;
        /* a speculative slot's last prompt token is el_spec_start's (start_spec) */
        int32_t k = sl->job->n_prompt - (sl->spec ? 1 : 0) - sl->fed;
        if (k > cap - n) k = cap - n;
        if (k == 0) continue;
        sl->first_row = n;
        sl->n_rows = k;
        for (int32_t t = 0; t < k; t++, n++) {
            s->tok[n] = sl->tokens[sl->fed + t];
            s->pos[n] = sl->fed + t;
            s->seq[n] = i;
            s->logits[n] = 0;
            s->parent[n] = t > 0 ? n - 1 : -1; /* a chunk's rows see each other in a tree step */
        }
        sl->fed += k;
        if (!sl->spec && sl->fed == sl->job->n_prompt) {
            s->logits[n - 1] = 1;
            sl->row = n - 1;
            sl->generating = true;
        }
    }
    return n;
}

/* The sampled token's log-probability under the model's distribution and the k best, into
 * choice c; NULL, or why not. */
static const char *record_logprob(serve_sched *s, serve_choice *c, const float *logits,
                                  int32_t tok, int k) {
    el_token_logprob e;
    if (el_token_logprobs(logits, s->n_vocab, tok, k, &e) != EL_OK) return el_last_error();
    return add_logprob(c, &e) ? NULL : "out of memory";
}

/* Appends sampled token tok to slot i's text, or ends the job (end of text, its length, a
 * stop string, a failure); logits: the row it was sampled from, for logprobs. Returns whether
 * the slot still runs (the caller publishes then). */
static bool take_token(serve_sched *s, int32_t i, int32_t tok, const float *logits) {
    sched_slot *sl = &s->slots[i];
    serve_job *j = sl->job;
    if (el_token_is_eog(s->model, tok)) {
        slot_finish(s, i, "stop");
        return false;
    }
    const char *why =
        j->logprobs >= 0 ? record_logprob(s, &j->choices[0], logits, tok, j->logprobs) : NULL;
    if (why) {
        slot_fail(s, i, why);
        return false;
    }
    sl->tokens[sl->n_tokens++] = tok;
    j->choices[0].n_tokens = sl->n_tokens - j->n_prompt;
    if (!slot_add_token_text(s, sl)) {
        slot_fail(s, i, el_last_error());
        return false;
    }
    if (sl->n_tokens - j->n_prompt == j->max_tokens) {
        slot_finish(s, i, "length");
        return false;
    }
    bool stopped = slot_publish_text(s, i, false);
    if (j->error[0]) slot_fail(s, i, j->error);
    else if (stopped) slot_finish(s, i, "stop");
    return !j->error[0] && !stopped;
}

static void sample_plain(serve_sched *s, int32_t i) {
    sched_slot *sl = &s->slots[i];
    const float *logits = el_get_logits(s->ctx, sl->row);
    int32_t tok;
    if (el_sampler_sample(sl->smp, logits, &tok) != EL_OK) {
        slot_fail(s, i, el_last_error());
        return;
    }
    el_sampler_accept(sl->smp, tok);
    if (take_token(s, i, tok, logits)) publish(sl->job);
}

/* Walks slot i's tree (el_spec_accept: sampling from the model's logits, as plain decoding
 * does) into sl->spec_tok, to be taken once every tree of the step is walked (take_spec). A
 * failure is kept in the job's error until then. */
static void walk_spec(serve_sched *s, int32_t i) {
    sched_slot *sl = &s->slots[i];
    serve_job *j = sl->job;
    int32_t left = j->max_tokens - (sl->n_tokens - j->n_prompt), cap = EL_SPEC_MAX_DEPTH + 1;
    if (el_spec_accept(sl->spec, sl->row, sl->spec_tok, left < cap ? left : cap,
                       &sl->n_spec_tok) != EL_OK) {
        snprintf(j->error, sizeof j->error, "%s", el_last_error());
        return;
    }
    /* a step's first token comes from the pending token's row; each one after it was a
     * candidate of the tree */
    j->spec_steps++;
    j->spec_accepted += sl->n_spec_tok - 1;
    s->stats.spec_steps++;
    s->stats.spec_accepted += sl->n_spec_tok - 1;
}

static void take_spec(serve_sched *s, int32_t i) {
    sched_slot *sl = &s->slots[i];
    serve_job *j = sl->job;
    if (j->error[0]) {
        slot_fail(s, i, j->error);
        return;
    }
    for (int32_t t = 0; t < sl->n_spec_tok; t++)
        if (!take_token(s, i, sl->spec_tok[t], NULL)) return;
    publish(j);
}

/* Once the cache holds all slot i's prompt but its last token (decoded in the shared steps,
 * or shared), el_spec_start decodes that token and the forecast slots after it (a small
 * decode of its own) and samples the first token. */
static void start_spec(serve_sched *s, int32_t i) {
    sched_slot *sl = &s->slots[i];
    serve_job *j = sl->job;
    int32_t first;
    pthread_mutex_unlock(&s->mu); /* as for every decode: the HTTP side reads meanwhile */
    double t0 = cli_now_ms();
    el_status st = el_spec_start(sl->spec, sl->tokens, j->n_prompt, &first);
    double dt = (cli_now_ms() - t0) / 1e3;
    pthread_mutex_lock(&s->mu);
    s->stats.steps++;
    s->stats.step_seconds += dt;
    if (st != EL_OK) {
        slot_fail(s, i, el_last_error());
        return;
    }
    sl->fed = j->n_prompt;
    sl->generating = true;
    if (take_token(s, i, first, NULL)) publish(j);
}

static void start_ready(serve_sched *s) {
    for (int32_t i = 0; i < s->n_slots; i++) {
        sched_slot *sl = &s->slots[i];
        if (sl->job && sl->spec && !sl->generating && sl->fed == sl->job->n_prompt - 1)
            start_spec(s, i);
    }
}

static void sample_group(serve_sched *s, int32_t i) {
    if (el_variants_accept(s->slots[i].group, s->slots[i].row) != EL_OK) {
        slot_fail(s, i, el_last_error());
        return;
    }
    group_progress(s, i);
}

/* Every tree is walked first: walking frees a tree's rejected rows (el_kv_remove_rows), which
 * is only possible until the cache changes otherwise, as a job that ends does. */
static void sample_step(serve_sched *s) {
    for (int32_t i = 0; i < s->n_slots; i++) {
        sched_slot *sl = &s->slots[i];
        if (sl->job && sl->spec && sl->row >= 0) walk_spec(s, i);
    }
    for (int32_t i = 0; i < s->n_slots; i++) {
        sched_slot *sl = &s->slots[i];
        if (!sl->job || sl->follower || sl->row < 0) continue;
        if (sl->spec) take_spec(s, i);
        else if (sl->group) sample_group(s, i);
        else sample_plain(s, i);
    }
}

/* The cells' statistics, taken by the scheduler while it holds the lock (the cache is not to
 * be read while a step writes it, as the HTTP threads would). */
static void note_cells(serve_sched *s) {
    s->stats.kv_cached = serve_cache_cells(&s->cache);
    s->stats.kv_used = el_kv_used_cells(s->ctx) - s->stats.kv_cached;
    s->stats.cache_entries = serve_cache_entries(&s->cache);
    s->stats.cache_evicted = s->cache.evicted;
}

/* A rate asked for takes effect for the jobs admitted from now on: the kept entries (cells of
 * the old rate) go, and once no job runs at another rate, the parts no sequence reads any more
 * are released (el_context_set_prune again). */
static void apply_rate(serve_sched *s) {
    if (s->rate_pending) {
        s->rate_pending = false;
        serve_cache_clear(&s->cache);
        if (el_context_set_prune(s->ctx, s->rate_want) == EL_OK) s->rate_release = true;
    }
    if (!s->rate_release) return;
    float now = el_context_get_prune(s->ctx);
    for (int32_t i = 0; i < s->n_slots; i++)
        if (s->slots[i].job && s->slots[i].rate != now) return;
    s->rate_release = false;
    el_context_set_prune(s->ctx, now);
}

static bool any_running(const serve_sched *s) {
    for (int32_t i = 0; i < s->n_slots; i++)
        if (s->slots[i].job) return true;
    return false;
}

static void *sched_main(void *arg) {
    serve_sched *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        /* what the loop does with the lock held, decodes and waits apart: admission, cache
         * lookups, building the step, sampling and the cells' counts (which scan the cache) */
        double busy = cli_now_ms();
        forget_adapters(s);
        drop_cancelled(s);
        apply_rate(s);
        admit(s);
        start_ready(s);
        note_cells(s);
        if (!any_running(s)) {
            s->stats.sched_seconds += (cli_now_ms() - busy) / 1e3;
            if (s->stopping && s->n_queue == 0) break;
            pthread_cond_wait(&s->work, &s->mu);
            continue;
        }
        int32_t n = build_step(s);
        s->stats.sched_seconds += (cli_now_ms() - busy) / 1e3;
        if (n == 0) continue;
        el_batch b = {.n_rows = n, .token = s->tok, .pos = s->pos, .seq_id = s->seq,
                      .logits = s->logits, .embd = s->tree_rows ? s->embd : NULL,
                      .parent = s->tree_rows ? s->parent : NULL};
        pthread_mutex_unlock(&s->mu);
        double t0 = cli_now_ms();
        el_status st = el_decode(s->ctx, &b);
        double dt = (cli_now_ms() - t0) / 1e3;
        pthread_mutex_lock(&s->mu);
        busy = cli_now_ms();
        s->stats.steps++;
        s->stats.step_seconds += dt;
        if (st == EL_OK) {
            sample_step(s);
            note_cells(s);
            s->stats.sched_seconds += (cli_now_ms() - busy) / 1e3;
            continue;
        }
        /* the cache is as before the step; every job in it fails with the reason */
        char why[256];
        snprintf(why, sizeof why, "%s", el_last_error());
        for (int32_t i = 0; i < s->n_slots; i++)
            if (s->slots[i].job && !s->slots[i].follower && s->slots[i].n_rows > 0)
                slot_fail(s, i, why);
        note_cells(s);
        s->stats.sched_seconds += (cli_now_ms() - busy) / 1e3;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

el_status serve_sched_create(const serve_sched_params *p, serve_sched **out) {
    el_model_info info;
    el_model_get_info(p->model, &info);
    serve_sched *s = calloc(1, sizeof *s);
    if (!s) return EL_ERR_NOMEM;
    int32_t n_batch = p->n_batch > p->n_parallel * SERVE_MAX_N ? p->n_batch
                                                               : p->n_parallel * SERVE_MAX_N;
    if (n_batch > p->n_ctx) n_batch = p->n_ctx;
    *s = (serve_sched){.model = p->model, .n_vocab = info.n_vocab, .n_batch = n_batch,
                       .n_ctx = p->n_ctx, .n_slots = p->n_parallel, .queue_max = p->queue_max,
                       .n_prompt_rows = p->n_prompt_rows > 0 ? p->n_prompt_rows : n_batch,
                       .n_embd = info.n_embd, .forecast = p->forecast};
    s->slots = calloc((size_t)s->n_slots, sizeof *s->slots);
    s->tok = malloc((size_t)n_batch * sizeof *s->tok);
    s->pos = malloc((size_t)n_batch * sizeof *s->pos);
    s->seq = malloc((size_t)n_batch * sizeof *s->seq);
    s->logits = malloc((size_t)n_batch);
    s->parent = malloc((size_t)n_batch * sizeof *s->parent);
    s->queue = malloc((size_t)(p->queue_max > 0 ? p->queue_max : 1) * sizeof *s->queue);
    if (p->forecast) s->embd = malloc((size_t)n_batch * (size_t)info.n_embd * sizeof *s->embd);
    el_status st = s->slots && s->tok && s->pos && s->seq && s->logits && s->parent &&
                   s->queue && (s->embd || !p->forecast) ? EL_OK : EL_ERR_NOMEM;
    el_context_params cp = el_context_default_params();
    cp.n_ctx = p->n_ctx;
    cp.n_batch = n_batch;
    cp.n_seq_max = p->n_parallel + p->n_cache;
    cp.n_threads = p->n_threads;
    cp.kv_type = p->kv_type;
    if (st == EL_OK) st = el_context_create(p->model, &cp, &s->ctx);
    if (st == EL_OK) st = serve_cache_init(&s->cache, s->ctx, p->n_parallel, p->n_cache);
    if (st == EL_OK) {
        pthread_mutex_init(&s->mu, NULL);
        pthread_cond_init(&s->work, NULL);
        if (pthread_create(&s->thread, NULL, sched_main, s)) st = EL_ERR_NOMEM;
    }
    if (st != EL_OK) {
        serve_cache_free(&s->cache);
        el_context_free(s->ctx);
        free(s->slots), free(s->tok), free(s->pos), free(s->seq), free(s->logits), free(s->queue);
        free(s->parent), free(s->embd);
        free(s);
        return st;
    }
    *out = s;
    return EL_OK;
}

void serve_sched_free(serve_sched *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    serve_cache_free(&s->cache);
    el_context_free(s->ctx);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work);
    free(s->slots), free(s->tok), free(s->pos), free(s->seq), free(s->logits), free(s->queue);
    free(s->parent), free(s->embd);
    free(s);
}
