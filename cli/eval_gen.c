/* eval_gen.c - greedy generation of many prompts at once (see eval_gen.h): continuous batching
 * over the sequences of one context, each sequence with its own adapters. */
#include "eval_gen.h"

#include <stdlib.h>
#include <string.h>

typedef struct gen_slot {
    eval_job *job;   /* NULL: free */
    int32_t fed;     /* prompt tokens already in the cache */
    int32_t *tokens; /* generated so far ([max_tokens]) */
    int32_t row;     /* row of this step whose logits give the next token, or -1 */
} gen_slot;

typedef struct gen_state {
    el_model *model;
    el_context *ctx;
    gen_slot *slots;
    int32_t n_slots, n_batch, n_vocab;
    int32_t *tok, *pos, *seq; /* [n_batch] the rows of one step */
    int8_t *want;
} gen_state;

static int32_t argmax(const float *logits, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

static bool token_has_newline(const el_model *m, int32_t token) {
    char buf[256];
    size_t len = 0;
    if (el_token_to_piece(m, token, false, buf, sizeof buf, &len) != EL_OK) {
        if (len <= sizeof buf) return false;
        char *big = malloc(len);
        bool nl = big && el_token_to_piece(m, token, false, big, len, &len) == EL_OK &&
                  memchr(big, '\n', len);
        free(big);
        return nl;
    }
    return memchr(buf, '\n', len) != NULL;
}

/* Ends the job of slot s: its text, then its cells and adapters released. */
static el_status slot_finish(gen_state *g, gen_slot *s) {
    eval_job *j = s->job;
    int32_t seq = (int32_t)(s - g->slots);
    el_status st = el_detokenize(g->model, s->tokens, (size_t)j->n_generated, false, false,
                                 &j->text);
    if (st == EL_OK && j->stop_at_newline) {
        char *nl = strchr(j->text, '\n');
        if (nl) *nl = '\0';
    }
    if (st == EL_OK) st = el_kv_seq_remove(g->ctx, seq, 0, -1);
    if (st == EL_OK) st = el_context_bind(g->ctx, seq, NULL, 0);
    s->job = NULL;
    return st;
}

/* Takes the token chosen from the logits of s's row; true if the job is finished. */
static bool slot_accept(gen_state *g, gen_slot *s) {
    eval_job *j = s->job;
    int32_t t = argmax(el_get_logits(g->ctx, s->row), g->n_vocab);
    if (el_token_is_eog(g->model, t)) return true;
    s->tokens[j->n_generated++] = t;
    return j->n_generated == j->max_tokens ||
           (j->stop_at_newline && token_has_newline(g->model, t));
}

/* Writes the rows of one step: the last token of each generating job, then prompt tokens of
 * the others while the batch has room. Returns the number of rows. */
static int32_t step_rows(gen_state *g) {
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_slots; i++) {
        gen_slot *s = &g->slots[i];
        s->row = -1;
        if (!s->job || s->fed < s->job->n_prompt) continue;
        g->tok[n] = s->tokens[s->job->n_generated - 1];
        g->pos[n] = s->job->n_prompt + s->job->n_generated - 1;
        g->seq[n] = i;
        g->want[n] = 1;
        s->row = n++;
    }
    for (int32_t i = 0; i < g->n_slots && n < g->n_batch; i++) {
        gen_slot *s = &g->slots[i];
        if (!s->job || s->fed == s->job->n_prompt) continue;
        for (; s->fed < s->job->n_prompt && n < g->n_batch; s->fed++, n++) {
            g->tok[n] = s->job->prompt[s->fed];
            g->pos[n] = s->fed;
            g->seq[n] = i;
            g->want[n] = 0;
        }
        if (s->fed == s->job->n_prompt) {
            g->want[n - 1] = 1;
            s->row = n - 1;
        }
    }
    return n;
}

static el_status generate(gen_state *g, eval_job *jobs, size_t n_jobs,
                          eval_gen_progress_fn progress, void *user) {
    size_t next = 0, done = 0;
    long n_tokens = 0;
    el_status st = EL_OK;
    while (st == EL_OK && done < n_jobs) {
        for (int32_t i = 0; i < g->n_slots && next < n_jobs && st == EL_OK; i++) {
            gen_slot *s = &g->slots[i];
            if (s->job) continue;
            eval_job *j = &jobs[next++];
            j->n_generated = 0;
            j->text = NULL;
            s->job = j;
            s->fed = 0;
            st = el_context_bind(g->ctx, i, j->bind, j->n_bind);
        }
        int32_t n = st == EL_OK ? step_rows(g) : 0;
        if (n == 0) break;
        el_batch b = {.n_rows = n, .token = g->tok, .pos = g->pos, .seq_id = g->seq,
                      .logits = g->want};
        if ((st = el_decode(g->ctx, &b)) != EL_OK) break;
        for (int32_t i = 0; i < g->n_slots && st == EL_OK; i++) {
            gen_slot *s = &g->slots[i];
            if (!s->job || s->row < 0 || !slot_accept(g, s)) continue;
            n_tokens += s->job->n_generated;
            st = slot_finish(g, s);
            done++;
            if (progress) progress(user, done, n_jobs, n_tokens);
        }
    }
    return st;
}

el_status eval_generate(el_model *model, eval_job *jobs, size_t n_jobs, int32_t n_parallel,
                        int32_t cells_per_seq, int32_t n_threads, el_kv_type kv_type,
                        eval_gen_progress_fn progress, void *user) {
    if (n_jobs == 0) return EL_OK;
    if ((size_t)n_parallel > n_jobs) n_parallel = (int32_t)n_jobs;
    int32_t max_gen = 1, max_cells = 1; /* cells: the last token generated is never decoded */
    for (size_t i = 0; i < n_jobs; i++) {
        if (jobs[i].max_tokens > max_gen) max_gen = jobs[i].max_tokens;
        if (jobs[i].n_prompt + jobs[i].max_tokens - 1 > max_cells)
            max_cells = jobs[i].n_prompt + jobs[i].max_tokens - 1;
    }
    if (max_cells < cells_per_seq) cells_per_seq = max_cells; /* no memory for cells never used */
    el_model_info info;
    el_status st = el_model_get_info(model, &info);
    if (st != EL_OK) return st;
    el_context_params cp = el_context_default_params();
    cp.n_ctx = n_parallel * cells_per_seq;
    cp.n_batch = 512;
    cp.n_seq_max = n_parallel;
    cp.n_threads = n_threads;
    cp.kv_type = kv_type;
    gen_state g = {.model = model, .n_slots = n_parallel, .n_vocab = info.n_vocab,
                   .n_batch = cp.n_batch < cp.n_ctx ? cp.n_batch : cp.n_ctx};
    g.slots = calloc((size_t)n_parallel, sizeof *g.slots);
    int32_t *gen_tokens = malloc((size_t)n_parallel * (size_t)max_gen * sizeof *gen_tokens);
    g.tok = malloc((size_t)g.n_batch * sizeof *g.tok);
    g.pos = malloc((size_t)g.n_batch * sizeof *g.pos);
    g.seq = malloc((size_t)g.n_batch * sizeof *g.seq);
    g.want = malloc((size_t)g.n_batch);
    if (!g.slots || !gen_tokens || !g.tok || !g.pos || !g.seq || !g.want)
        st = EL_ERR_NOMEM;
    else
        st = el_context_create(model, &cp, &g.ctx);
    if (st == EL_OK) {
        for (int32_t i = 0; i < n_parallel; i++)
            g.slots[i] = (gen_slot){.tokens = gen_tokens + (size_t)i * (size_t)max_gen, .row = -1};
        st = generate(&g, jobs, n_jobs, progress, user);
    }
    el_context_free(g.ctx);
    free(g.slots);
    free(gen_tokens);
    free(g.tok);
    free(g.pos);
    free(g.seq);
    free(g.want);
    return st;
}
