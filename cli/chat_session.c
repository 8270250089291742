/* chat_session.c - the conversation of `edgelora chat` and the KV cache kept in step with it
 * (see chat_session.h). */
#include <stdlib.h>
#include <string.h>

#include "chat_session.h"

struct chat_session {
    el_model *model;
    el_context *ctx;
    int32_t n_ctx, n_batch, n_vocab;
    chat_settings set;
    el_chat_message *msgs; /* roles are static strings, contents malloc'd */
    size_t n_msgs, cap_msgs;
    int32_t *cached;       /* [n_ctx]: the tokens in the cache, at positions 0 .. n_cached-1 */
    int32_t n_cached;
    bool spec_refused;     /* the forecast set does not serve the bound adapters (said once) */
};

static bool push(chat_session *s, const char *role, const char *content, size_t len) {
    if (s->n_msgs == s->cap_msgs) {
        size_t cap = s->cap_msgs ? 2 * s->cap_msgs : 8;
        el_chat_message *p = realloc(s->msgs, cap * sizeof *p);
        if (!p) return false;
        s->msgs = p, s->cap_msgs = cap;
    }
    char *c = strndup(content, len);
    if (!c) return false;
    s->msgs[s->n_msgs++] = (el_chat_message){role, c};
    return true;
}

/* Removes messages [from, to). */
static void remove_msgs(chat_session *s, size_t from, size_t to) {
    if (from == to) return;
    for (size_t i = from; i < to; i++) free((char *)s->msgs[i].content);
    memmove(s->msgs + from, s->msgs + to, (s->n_msgs - to) * sizeof *s->msgs);
    s->n_msgs -= to - from;
}

static size_t first_turn(const chat_session *s) { return s->set.system ? 1 : 0; }

/* Drops the oldest turn before the last message: a user's message and what follows it up to
 * the next user's message. false if there is none. */
static bool drop_oldest_turn(chat_session *s) {
    size_t from = first_turn(s), to = from + 1;
    if (s->n_msgs < from + 2) return false;
    while (to < s->n_msgs - 1 && strcmp(s->msgs[to].role, "user") != 0) to++;
    remove_msgs(s, from, to);
    return true;
}

el_status chat_session_create(el_model *m, el_context *ctx, int32_t n_ctx, int32_t n_batch,
                              const chat_settings *set, chat_session **out) {
    el_model_info info;
    el_status st = el_model_get_info(m, &info);
    if (st != EL_OK) return st;
    chat_session *s = calloc(1, sizeof *s);
    if (!s || !(s->cached = malloc((size_t)n_ctx * sizeof *s->cached))) {
        free(s);
        return EL_ERR_NOMEM;
    }
    *s = (chat_session){.model = m, .ctx = ctx, .n_ctx = n_ctx, .n_batch = n_batch,
                        .n_vocab = info.n_vocab, .set = *set, .cached = s->cached};
    if (set->system && !push(s, "system", set->system, strlen(set->system))) {
        chat_session_free(s);
        return EL_ERR_NOMEM;
    }
    *out = s;
    return EL_OK;
}

void chat_session_free(chat_session *s) {
    if (!s) return;
    remove_msgs(s, 0, s->n_msgs);
    free(s->msgs);
    free(s->cached);
    free(s);
}

size_t chat_session_messages(const chat_session *s) { return s->n_msgs; }
int32_t chat_session_cached(const chat_session *s) { return s->n_cached; }

static void forget_cache(chat_session *s) {
    el_kv_clear(s->ctx);
    s->n_cached = 0;
}

void chat_session_reset(chat_session *s) {
    remove_msgs(s, first_turn(s), s->n_msgs);
    forget_cache(s);
}

el_status chat_session_bind(chat_session *s, const el_binding *bind, int32_t n) {
    el_status st = el_context_bind(s->ctx, 0, bind, n);
    if (st == EL_OK) forget_cache(s), s->spec_refused = false;
    return st;
}

/* The tokens of msgs[0..n) as the template writes them, up to the assistant's prefix. */
static el_status conversation_tokens(const chat_session *s, const el_chat_message *msgs,
                                     size_t n, int32_t **tokens, size_t *n_tokens) {
    char *text;
    el_status st = el_chat_apply(s->model, s->set.tmpl, msgs, n, true, &text);
    if (st != EL_OK) return st;
    st = cli_tokenize(s->model, text, strlen(text), true, true, tokens, n_tokens);
    free(text);
    return st;
}

/* The conversation with the new message last, as tokens that leave room for a reply: the
 * oldest turns dropped while it does not (*dropped counts them). CHAT_REFUSED if the system
 * message and the new one alone leave none (nothing is dropped then). */
static chat_result fit_conversation(chat_session *s, int32_t **tokens, size_t *n_tokens,
                                    int32_t *dropped) {
    /* room for the reply: n_predict tokens, but at most half the context, so that a long -n
     * does not cost the whole history every turn (the reply may still run on to the end) */
    long room = s->set.n_predict < 0 || s->set.n_predict > s->n_ctx / 2 ? s->n_ctx / 2
                                                                         : s->set.n_predict;
    if (room < 1) room = 1;
    el_chat_message minimal[2];
    size_t n_min = 0;
    if (s->set.system) minimal[n_min++] = s->msgs[0];
    minimal[n_min++] = s->msgs[s->n_msgs - 1];
    el_status st = conversation_tokens(s, minimal, n_min, tokens, n_tokens);
    if (st != EL_OK) {
        cli_fail("chat", st);
        return CHAT_FAILED;
    }
    free(*tokens);
    if ((long)*n_tokens + 1 > s->n_ctx) {
        cli_error("chat", "the message needs %zu tokens with the template's text%s, more than "
                  "the context of %d leaves for a reply (-c): not sent", *n_tokens,
                  s->set.system ? " and the system message" : "", s->n_ctx);
        return CHAT_REFUSED;
    }
    for (*dropped = 0;; ++*dropped) {
        st = conversation_tokens(s, s->msgs, s->n_msgs, tokens, n_tokens);
        if (st != EL_OK) {
            cli_fail("chat", st);
            return CHAT_FAILED;
        }
        if ((long)*n_tokens + room <= s->n_ctx || !drop_oldest_turn(s)) return CHAT_REPLIED;
        free(*tokens);
    }
}

/* Makes the cache hold target[0..n): keeps the longest common prefix with what it holds and
 * decodes the rest (at least the last token, whose logits the reply starts from), or leaves the
 * rest to speculative decoding (el_spec_start decodes it) when `decode` is false. Returns the
 * row of the last token's logits, or -1 after printing an error (the cache is then empty). */
static int32_t sync_cache(chat_session *s, const int32_t *target, int32_t n, bool decode,
                          int32_t *reused) {
    int32_t p = 0;
    while (p < s->n_cached && p < n && s->cached[p] == target[p]) p++;
    if (p == n) p--;
    el_status st = p < s->n_cached ? el_kv_seq_remove(s->ctx, 0, p, -1) : EL_OK;
    s->n_cached = p;
    if (st == EL_OK && decode) st = cli_decode_tokens(s->ctx, target + p, n - p, p, s->n_batch);
    if (st != EL_OK) {
        forget_cache(s);
        cli_fail("chat", st);
        return -1;
    }
    memcpy(s->cached + p, target + p, (size_t)(n - p) * sizeof *target);
    s->n_cached = n;
    *reused = p;
    return (n - p - 1) % s->n_batch;
}

/* The reply so far: its tokens, their text as last detokenized, what of it is shown. */
typedef struct reply {
    int32_t *tokens;
    int32_t n;
    char *text;
    cli_stream shown;
} reply;

/* Passes on what of the reply's text is new and final (all of it if final). */
static el_status show_new_text(const chat_session *s, reply *r, bool final, chat_text_fn on_text,
                               void *user) {
    char *text;
    el_status st = el_detokenize(s->model, r->tokens, (size_t)r->n, false, false, &text);
    if (st != EL_OK) return st;
    free(r->text);
    r->text = text;
    size_t end = cli_stream_update(&r->shown, text, strlen(text), s->set.stops, s->set.n_stops,
                                   final);
    if (end > r->shown.shown) on_text(user, text + r->shown.shown, end - r->shown.shown);
    r->shown.shown = end;
    return EL_OK;
}

/* The speculation of this turn's reply, or NULL: decode plainly (no forecast set, or one made
 * for other adapters than those bound, which is said once). */
static el_spec *start_speculation(chat_session *s, el_sampler *smp) {
    if (!s->set.forecast || s->spec_refused) return NULL;
    el_spec_params p = s->set.spec;
    p.seq_id = 0;
    el_spec *spec;
    if (el_spec_create(s->ctx, s->set.forecast, smp, &p, &spec) == EL_OK) return spec;
    fprintf(stderr, "edgelora chat: %s; replies decode plainly\n", el_last_error());
    s->spec_refused = true;
    return NULL;
}

/* Samples the reply: plainly from the logits of row `row` on, feeding each token back, or in
 * speculative steps (several tokens a forward pass, the same tokens), which decode the prompt's
 * rest first. The reply's tokens are kept in r->tokens; a step may give more than the reply
 * takes (after a stop string), and those are in the cache too. false after printing an error. */
static bool generate(chat_session *s, el_sampler *smp, el_spec *spec, int32_t row,
                     const int32_t *prompt, int32_t n_prompt, reply *r, chat_text_fn on_text,
                     void *user, const volatile sig_atomic_t *interrupted, chat_turn *out) {
    int32_t limit = s->n_ctx - n_prompt;
    if (s->set.n_predict >= 0 && s->set.n_predict < limit) limit = (int32_t)s->set.n_predict;
    if (!(r->tokens = malloc((size_t)(limit > 0 ? limit : 1) * sizeof *r->tokens))) {
        cli_error("chat", "out of memory");
        return false;
    }
    el_status st = EL_OK;
    int32_t produced = 0; /* speculation: tokens its steps gave, r->n of them taken */
    out->finish = "length";
    while (r->n < limit) {
        if (*interrupted) {
            out->finish = "interrupted";
            break;
        }
        int32_t tok;
        if (spec && r->n == produced) {
            int32_t k = 1;
            st = produced == 0 ? el_spec_start(spec, prompt, n_prompt, r->tokens)
                               : el_spec_step(spec, r->tokens + produced, limit - produced, &k);
            if (st != EL_OK) break;
            produced += k;
            out->n_steps++;
        }
        if (spec) {
            tok = r->tokens[r->n];
        } else if ((st = el_sampler_sample(smp, el_get_logits(s->ctx, row), &tok)) != EL_OK) {
            break;
        }
        if (!s->set.ignore_eos && el_token_is_eog(s->model, tok)) {
            out->finish = "eos";
            break;
        }
        if (!spec) el_sampler_accept(smp, tok);
        r->tokens[r->n++] = tok;
        if ((st = show_new_text(s, r, false, on_text, user)) != EL_OK) break;
        if (r->shown.stopped) {
            out->finish = "stop";
            break;
        }
        if (r->n == limit || spec) continue;
        int32_t pos = n_prompt + r->n - 1;
        if ((st = cli_decode_tokens(s->ctx, &tok, 1, pos, 1)) != EL_OK) break;
        s->cached[s->n_cached++] = tok;
        row = 0;
    }
    if (spec && produced > 1) { /* the cache holds what the steps gave but the pending last */
        memcpy(s->cached + s->n_cached, r->tokens, (size_t)(produced - 1) * sizeof *r->tokens);
        s->n_cached += produced - 1;
    }
    if (st == EL_OK && !r->shown.stopped) st = show_new_text(s, r, true, on_text, user);
    if (st != EL_OK) cli_fail("chat", st);
    return st == EL_OK;
}

static bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

chat_result chat_session_turn(chat_session *s, const char *message, chat_text_fn on_text,
                              void *user, const volatile sig_atomic_t *interrupted,
                              chat_turn *out) {
    *out = (chat_turn){.finish = "length"};
    if (!push(s, "user", message, strlen(message))) {
        cli_error("chat", "out of memory");
        return CHAT_FAILED;
    }
    int32_t *target;
    size_t n_target;
    chat_result res = fit_conversation(s, &target, &n_target, &out->n_dropped);
    if (res != CHAT_REPLIED) {
        remove_msgs(s, s->n_msgs - 1, s->n_msgs);
        return res;
    }
    out->n_total = (int32_t)n_target;
    if (out->n_dropped)
        fprintf(stderr, "edgelora chat: the conversation passed the context of %d tokens: "
                        "dropped the oldest %d turn%s and decode what remains again\n",
                s->n_ctx, out->n_dropped, out->n_dropped > 1 ? "s" : "");
    el_sampler *smp;
    el_status st = el_sampler_create(&s->set.sp, s->n_vocab, &smp);
    if (st != EL_OK) {
        free(target);
        remove_msgs(s, s->n_msgs - 1, s->n_msgs);
        cli_fail("chat", st);
        return CHAT_FAILED;
    }
    for (size_t i = 0; i < n_target; i++) el_sampler_accept(smp, target[i]);
    el_spec *spec = start_speculation(s, smp);
    int32_t row = sync_cache(s, target, (int32_t)n_target, !spec, &out->n_reused);
    reply r = {0};
    bool ok = row >= 0 && generate(s, smp, spec, row, target, (int32_t)n_target, &r, on_text,
                                   user, interrupted, out);
    el_spec_free(spec);
    el_sampler_free(smp);
    free(target);
    out->n_gen = r.n;
    if (!ok) {
        forget_cache(s);
        remove_msgs(s, s->n_msgs - 1, s->n_msgs);
        free(r.tokens), free(r.text);
        return CHAT_FAILED;
    }
    /* the reply's ends trimmed: the template puts its own separators around the content, and
     * the space a reply starts with would otherwise be doubled ("Assistant:  Hi"), which moves
     * the next turn's first difference back to the reply's start */
    const char *text = r.text ? r.text : "";
    size_t a = 0, b = r.shown.shown;
    while (a < b && is_space(text[a])) a++;
    while (b > a && is_space(text[b - 1])) b--;
    ok = push(s, "assistant", text + a, b - a);
    free(r.tokens), free(r.text);
    if (!ok) {
        cli_error("chat", "out of memory");
        return CHAT_FAILED;
    }
    return CHAT_REPLIED;
}
