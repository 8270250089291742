/* serve_reply.c - the JSON bodies `edgelora serve` answers with, in OpenAI's shapes: errors,
 * completions and chat completions whole or as stream chunks, usage and logprobs. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve.h"

static void put_str(FILE *f, const char *s, size_t n) { el_json_write_string(f, s, n); }
static void put_cstr(FILE *f, const char *s) { el_json_write_string(f, s, strlen(s)); }

char *serve_memstream_close(FILE *f, char **buf) {
    if (fclose(f)) {
        free(*buf);
        return NULL;
    }
    return *buf;
}

char *serve_reply_error(const serve_error *e) {
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    fputs("{\"error\":{\"message\":", f);
    put_cstr(f, e->message);
    fputs(",\"type\":", f);
    put_cstr(f, e->type);
    fputs(",\"param\":null,\"code\":", f);
    if (e->code) put_cstr(f, e->code);
    else fputs("null", f);
    fputs("}}", f);
    return serve_memstream_close(f, &buf);
}

static void put_piece(FILE *f, const serve_server *sv, int32_t tok, bool bytes) {
    char piece[256];
    size_t n = 0;
    if (el_token_to_piece(sv->model, tok, false, piece, sizeof piece, &n) != EL_OK) n = 0;
    put_str(f, piece, n);
    if (!bytes) return;
    fputs(",\"bytes\":[", f);
    for (size_t i = 0; i < n; i++) fprintf(f, "%s%u", i ? "," : "", (unsigned char)piece[i]);
    fputc(']', f);
}

/* Completions: {"tokens", "token_logprobs", "top_logprobs", "text_offset"}. */
static void put_logprobs_completion(FILE *f, const serve_server *sv, const serve_choice *c,
                                    int32_t from, int32_t to, int k) {
    fputs("{\"tokens\":[", f);
    for (int32_t i = from; i < to; i++) {
        if (i > from) fputc(',', f);
        put_piece(f, sv, c->lp[i].token, false);
    }
    fputs("],\"token_logprobs\":[", f);
    for (int32_t i = from; i < to; i++) fprintf(f, "%s%.6g", i > from ? "," : "", c->lp[i].logprob);
    fputs("],\"top_logprobs\":[", f);
    for (int32_t i = from; i < to; i++) {
        fputs(i > from ? ",{" : "{", f);
        for (int r = 0; r < k; r++) {
            if (r) fputc(',', f);
            put_piece(f, sv, c->lp[i].top_token[r], false);
            fprintf(f, ":%.6g", c->lp[i].top_logprob[r]);
        }
        fputc('}', f);
    }
    fputs("]}", f);
}

/* Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}. */
static void put_logprobs_chat(FILE *f, const serve_server *sv, const serve_choice *c,
                              int32_t from, int32_t to, int k) {
    fputs("{\"content\":[", f);
    for (int32_t i = from; i < to; i++) {
        fputs(i > from ? ",{\"token\":" : "{\"token\":", f);
        put_piece(f, sv, c->lp[i].token, true);
        fprintf(f, ",\"logprob\":%.6g,\"top_logprobs\":[", c->lp[i].logprob);
        for (int r = 0; r < k; r++) {
            fputs(r ? ",{\"token\":" : "{\"token\":", f);
            put_piece(f, sv, c->lp[i].top_token[r], true);
            fprintf(f, ",\"logprob\":%.6g}", c->lp[i].top_logprob[r]);
        }
        fputs("]}", f);
    }
    fputs("]}", f);
}

static void put_logprobs(FILE *f, const serve_server *sv, serve_kind kind, const serve_job *j,
                         const serve_choice *c, int32_t from, int32_t to) {
    fputs(",\"logprobs\":", f);
    if (j->logprobs < 0) fputs("null", f);
    else if (kind == SERVE_COMPLETION) put_logprobs_completion(f, sv, c, from, to, j->logprobs);
    else put_logprobs_chat(f, sv, c, from, to, j->logprobs);
}

static void put_head(FILE *f, const serve_server *sv, serve_kind kind, const char *id,
                     const char *model, bool chunk) {
    fputs("{\"id\":", f);
    put_cstr(f, id);
    fprintf(f, ",\"object\":\"%s\",\"created\":%ld,\"model\":",
            kind == SERVE_COMPLETION ? "text_completion"
            : chunk                  ? "chat.completion.chunk"
                                     : "chat.completion",
            (long)time(NULL));
    put_cstr(f, model);
    fputs(",\"system_fingerprint\":\"edgelora-" EL_VERSION_STRING "\",\"choices\":[", f);
}

static void put_usage(FILE *f, const serve_job *j) {
    int32_t gen = 0;
    for (int32_t c = 0; c < j->n_choices; c++) gen += j->choices[c].n_tokens;
    fprintf(f, "\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d",
            j->n_prompt, gen, j->n_prompt + gen);
    /* OpenAI's name for prompt tokens served from the cache */
    fprintf(f, ",\"prompt_tokens_details\":{\"cached_tokens\":%d}", j->cached_tokens);
    if (j->spec_ran) /* edgelora's own: how the tokens came */
        fprintf(f, ",\"speculative\":{\"steps\":%lld,\"accepted_tokens\":%lld}",
                (long long)j->spec_steps, (long long)j->spec_accepted);
    fputc('}', f);
}

static void put_finish(FILE *f, const char *finish) {
    fputs(",\"finish_reason\":", f);
    if (finish) put_cstr(f, finish);
    else fputs("null", f);
}

char *serve_reply_completion(const serve_server *sv, serve_kind kind, const char *id,
                             const char *model, const serve_job *j) {
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    put_head(f, sv, kind, id, model, false);
    for (int32_t i = 0; i < j->n_choices; i++) {
        const serve_choice *c = &j->choices[i];
        fprintf(f, "%s{\"index\":%d,", i ? "," : "", i);
        if (kind == SERVE_COMPLETION) {
            fputs("\"text\":", f);
            put_str(f, c->text ? c->text : "", c->len);
        } else {
            fputs("\"message\":{\"role\":\"assistant\",\"content\":", f);
            put_str(f, c->text ? c->text : "", c->len);
            fputc('}', f);
        }
        put_logprobs(f, sv, kind, j, c, 0, c->n_lp);
        put_finish(f, c->finish);
        fputc('}', f);
    }
    fputs("],", f);
    put_usage(f, j);
    fputc('}', f);
    return serve_memstream_close(f, &buf);
}

char *serve_reply_chunk(const serve_server *sv, serve_kind kind, const char *id,
                        const char *model, const serve_job *j, int32_t c, size_t from,
                        size_t to, int32_t lp_from, int32_t lp_to, bool final, bool role) {
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    const serve_choice *ch = &j->choices[c];
    put_head(f, sv, kind, id, model, true);
    fprintf(f, "{\"index\":%d,", c);
    if (kind == SERVE_COMPLETION) {
        fputs("\"text\":", f);
        put_str(f, ch->text ? ch->text + from : "", to - from);
    } else if (role) {
        fputs("\"delta\":{\"role\":\"assistant\",\"content\":\"\"}", f);
    } else if (to > from) {
        fputs("\"delta\":{\"content\":", f);
        put_str(f, ch->text + from, to - from);
        fputc('}', f);
    } else {
        fputs("\"delta\":{}", f);
    }
    if (role || (lp_to == lp_from && j->logprobs >= 0 && kind == SERVE_CHAT))
        fputs(",\"logprobs\":null", f);
    else
        put_logprobs(f, sv, kind, j, ch, lp_from, lp_to);
    put_finish(f, final ? ch->finish : NULL);
    fputs("}]}", f);
    return serve_memstream_close(f, &buf);
}

char *serve_reply_usage_chunk(const serve_server *sv, serve_kind kind, const char *id,
                              const char *model, const serve_job *j) {
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    put_head(f, sv, kind, id, model, true);
    fputs("],", f);
    put_usage(f, j);
    fputc('}', f);
    return serve_memstream_close(f, &buf);
}
