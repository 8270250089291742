/* chat_session.h - the conversation of `edgelora chat`: its messages, and one context whose KV
 * cache holds the tokens of the conversation's templated text, kept in step turn by turn.
 *
 * Each turn renders the whole conversation with the chat template (el_chat_apply), tokenizes it
 * and compares the tokens with those in the cache: only what follows the first difference is
 * decoded (usually the new user message and the assistant prefix; more where the template
 * rewrites earlier text, or the reply's tokens are not those its text tokenizes to). So the
 * cache always holds exactly what a fresh run of the whole templated conversation would, and a
 * reply equals `edgelora run -p TEXT` on that text with the same settings. */
#ifndef EL_CLI_CHAT_SESSION_H
#define EL_CLI_CHAT_SESSION_H

#include <signal.h>

#include "cli.h"

typedef struct chat_settings {
    const char *tmpl;             /* --chat-template NAME, or NULL: the model's own */
    const char *system;           /* the system message, or NULL */
    el_sampler_params sp;         /* each reply samples with these and this seed, as a fresh
                                   * run of the conversation would */
    long n_predict;               /* most tokens a reply (-1: until EOG or the context's end) */
    const char *const *stops;     /* stop strings */
    int n_stops;
    bool ignore_eos;
    const el_forecast *forecast;  /* replies decode speculatively with it, or NULL: plainly */
    el_spec_params spec;          /* the tree (seq_id ignored) */
} chat_settings;

typedef struct chat_session chat_session;

/* Takes a context of n_ctx cells, for one sequence, empty, its adapters bound; n_batch is the
 * context's (at least el_spec_max_rows with a forecast set). With a forecast set the reply's
 * tokens are those of plain decoding (speculative decoding changes only how many come out of
 * one forward pass); a set made for other adapters than those bound is not used (said once on
 * stderr). */
el_status chat_session_create(el_model *m, el_context *ctx, int32_t n_ctx, int32_t n_batch,
                              const chat_settings *set, chat_session **out);
void chat_session_free(chat_session *s);

/* Called with each piece of the reply as soon as it is final (valid during the call). */
typedef void (*chat_text_fn)(void *user, const char *text, size_t len);

/* What one turn did. */
typedef struct chat_turn {
    int32_t n_total;    /* tokens of the templated conversation up to the assistant prefix */
    int32_t n_reused;   /* of them, already in the cache */
    int32_t n_dropped;  /* turns dropped (oldest first) so the conversation fits the context */
    int32_t n_gen;      /* tokens generated */
    int32_t n_steps;    /* speculative steps that generated them (0: decoded plainly) */
    const char *finish; /* "eos", "stop", "length" or "interrupted" */
} chat_turn;

typedef enum chat_result {
    CHAT_REPLIED, /* the message and its reply joined the conversation */
    CHAT_REFUSED, /* the message does not fit the context even alone: said so, nothing changed */
    CHAT_FAILED,  /* an error, printed; the message is not in the conversation, the cache empty */
} chat_result;

/* Adds the user's message, decodes what the cache lacks and generates the reply, streamed to
 * on_text; the reply (without the white space at its ends) joins the conversation, also when
 * *interrupted is set meanwhile (the reply ends there). If the conversation does not fit the
 * context, the oldest turns are dropped first (the system message stays), which is said in one
 * line on stderr. */
chat_result chat_session_turn(chat_session *s, const char *message, chat_text_fn on_text,
                              void *user, const volatile sig_atomic_t *interrupted,
                              chat_turn *out);

/* Forgets the conversation (the system message stays) and empties the cache. */
void chat_session_reset(chat_session *s);

/* Binds other adapters (n = 0: none). The cache was computed under the old ones, so it is
 * emptied: the next turn decodes the whole conversation under the new ones. */
el_status chat_session_bind(chat_session *s, const el_binding *bind, int32_t n);

/* Messages in the conversation (the system message counted) and tokens in the cache. */
size_t chat_session_messages(const chat_session *s);
int32_t chat_session_cached(const chat_session *s);

#endif
