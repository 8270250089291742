/* serve_http.c - the HTTP side of `edgelora serve`, on libmicrohttpd: routing, the API key,
 * body limits, and the answers, whole or streamed as server-sent events.
 *
 * libmicrohttpd runs a thread per connection, so a handler may block: a non-streamed
 * completion waits for its job in the handler (watching the socket, so that a client that hangs
 * up cancels it), and a streamed one waits in the content reader for the next publication. A
 * stream idle for a second sends an SSE comment, which clients ignore; writing it is how a
 * client that went away is noticed while its request still waits in the queue. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "serve.h"

typedef struct conn {
    char *body;
    size_t len;
    bool too_big;
    bool in_flight; /* counted in sv->in_flight until the answer is done */
} conn;

static enum MHD_Result send_body(serve_server *sv, struct MHD_Connection *c, int status,
                                 char *body, const char *type, int retry_after) {
    if (!body) {
        status = 500;
        static const char nomem[] = "{\"error\":{\"message\":\"out of memory\",\"type\":"
                                    "\"server_error\",\"param\":null,\"code\":null}}";
        body = strdup(nomem);
        if (!body) return MHD_NO;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    if (retry_after > 0) {
        char s[16];
        snprintf(s, sizeof s, "%d", retry_after);
        MHD_add_response_header(r, "Retry-After", s);
    }
    atomic_fetch_add(&sv->n_http[status / 100 % 6], 1);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_error(serve_server *sv, struct MHD_Connection *c,
                                  const serve_error *e, int retry_after) {
    return send_body(sv, c, e->status, serve_reply_error(e), "application/json", retry_after);
}

static enum MHD_Result fail(serve_server *sv, struct MHD_Connection *c, int status,
                            const char *type, const char *code, const char *msg) {
    serve_error e;
    serve_error_set(&e, status, type, code, "%s", msg);
    return send_error(sv, c, &e, 0);
}

/* The API key, compared in time that depends on the key's length alone. */
static bool key_matches(const char *given, const char *key) {
    size_t n = strlen(key), m = given ? strlen(given) : 0;
    unsigned char d = n != m;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)key[i] ^ (unsigned char)(i < m ? given[i] : 0);
    return d == 0;
}

static bool authorized(const serve_server *sv, struct MHD_Connection *c) {
    if (!sv->api_key) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncmp(h, "Bearer ", 7)) return false;
    return key_matches(h + 7, sv->api_key);
}

/* ------------------------------------------------------------ a completion request */

typedef struct request {
    serve_server *sv;
    serve_kind kind;
    serve_params p;
    serve_job *j;
    serve_adapter *held[SERVE_MAX_ADAPTERS + 1];
    int n_held;
    char id[48];
    const char *model; /* echoed: the request's "model", or the base's name */
    /* streaming */
    size_t sent[SERVE_MAX_N];
    int32_t lp_sent[SERVE_MAX_N];
    bool fin_sent[SERVE_MAX_N], role_sent, done_sent;
    uint64_t seen;
    char *out;
    size_t out_len, out_at;
} request;

static void request_free(request *r) {
    if (r->j) {
        serve_job_cancel(r->sv->sched, r->j); /* a no-op once it is done */
        serve_job_release(r->sv->sched, r->j);
    }
    for (int i = 0; i < r->n_held; i++) serve_adapters_release(r->sv->adapters, r->held[i]);
    serve_params_free(&r->p);
    free(r->out);
    free(r);
}

static bool bind_adapter(request *r, const char *name, float scale, serve_error *e,
                         bool as_model) {
    el_adapter *a = serve_adapters_acquire(r->sv->adapters, name, &r->held[r->n_held]);
    if (!a) {
        if (as_model)
            return serve_error_set(e, 404, "invalid_request_error", "model_not_found",
                                   "The model '%s' does not exist (GET /v1/models lists them)",
                                   name);
        return serve_error_set(e, 400, "invalid_request_error", "adapter_not_found",
                               "unknown adapter '%s' (GET /v1/models lists them)", name);
    }
    r->n_held++;
    r->j->bind[r->j->n_bind++] = (el_binding){.adapter = a, .scale = scale};
    return true;
}

/* Tokens of the prompt: the text of a completion, or the chat template over the messages. */
static bool request_prompt(request *r, serve_error *e) {
    const serve_server *sv = r->sv;
    char *chat = NULL;
    const char *text = r->p.prompt;
    size_t len = r->p.prompt_len;
    if (r->kind == SERVE_CHAT) {
        if (el_chat_apply(sv->model, sv->chat_template, r->p.messages, r->p.n_messages, true,
                          &chat) != EL_OK)
            return serve_error_set(e, 400, "invalid_request_error", "invalid_messages", "%s",
                                   el_last_error());
        text = chat;
        len = strlen(chat);
    }
    size_t n = 0;
    el_status st = cli_tokenize(sv->model, text, len, true, true, &r->j->prompt, &n);
    free(chat);
    if (st != EL_OK)
        return serve_error_set(e, 500, "server_error", NULL, "%s", el_last_error());
    if (n == 0)
        return serve_error_set(e, 400, "invalid_request_error", "invalid_value",
                               "the prompt is empty and the vocabulary has no BOS token");
    if (n > (size_t)sv->max_prompt)
        return serve_error_set(e, 400, "invalid_request_error", "context_length_exceeded",
                               "the prompt has %zu tokens, more than the limit of %d", n,
                               sv->max_prompt);
    r->j->n_prompt = (int32_t)n;
    return true;
}

/* Whether the job decodes speculatively, and its tree: with a forecast set, every request
 * unless "speculative": false, with --tree's tree unless it gives its own. logprobs (the
 * log-softmax of the row a token is sampled at) and n > 1 (variants) decode plainly: the
 * tokens are the same either way. */
static bool request_spec(request *r, serve_error *e) {
    const serve_server *sv = r->sv;
    const serve_params *p = &r->p;
    if (!sv->forecast) {
        if (p->speculative == 1 || p->tree_given)
            return serve_error_set(e, 400, "invalid_request_error", "unsupported_parameter",
                                   "'%s': this server decodes plainly (it was started without "
                                   "--forecast)", p->tree_given ? "tree" : "speculative");
        return true;
    }
    if (p->speculative == 0) return true;
    el_spec_params t = p->tree_given ? p->tree : sv->spec;
    int32_t slots = el_forecast_n_slots(sv->forecast), rows = el_spec_max_rows(sv->forecast, &t);
    if (!t.tree_auto && t.n_depth > slots)
        return serve_error_set(e, 400, "invalid_request_error", "invalid_value",
                               "'tree' has %d depths; the server's forecast set has %d slots",
                               t.n_depth, slots);
    if (rows > sv->spec_rows)
        return serve_error_set(e, 400, "invalid_request_error", "invalid_value",
                               "'tree' takes %d rows a step; this server's steps hold %d a "
                               "request (its --tree)", rows, sv->spec_rows);
    if (p->logprobs >= 0 || p->n > 1) return true;
    r->j->speculative = true;
    r->j->spec = t;
    return true;
}

static bool request_prepare(request *r, serve_error *e) {
    serve_server *sv = r->sv;
    serve_params *p = &r->p;
    if (!(r->j = serve_job_new(p->n))) return serve_error_set(e, 500, "server_error", NULL, "out of memory");
    serve_job *j = r->j;
    r->model = p->model ? p->model : sv->model_id;
    if (p->model && strcmp(p->model, sv->model_id) && !bind_adapter(r, p->model, 1, e, true))
        return false;
    for (int i = 0; i < p->n_adapters; i++)
        if (!bind_adapter(r, p->adapters[i].name, p->adapters[i].scale, e, false)) return false;
    if (!request_prompt(r, e) || !request_spec(r, e)) return false;
    if (p->max_tokens > sv->max_tokens)
        return serve_error_set(e, 400, "invalid_request_error", "invalid_value",
                               "'max_tokens' is %ld, more than the server's limit of %d",
                               p->max_tokens, sv->max_tokens);
    if (p->max_tokens == 0)
        return serve_error_set(e, 400, "invalid_request_error", "invalid_value",
                               "'max_tokens' must be at least 1");
    if (p->max_tokens < 0) { /* OpenAI's defaults: 16 for completions, the rest for chat */
        serve_stats st;
        serve_sched_get_stats(sv->sched, &st);
        long room = (st.kv_cells - j->n_prompt) / p->n;
        long want = r->kind == SERVE_COMPLETION ? 16 : sv->max_tokens;
        p->max_tokens = want < room ? want : room > 0 ? room : 1;
    }
    j->max_tokens = (int32_t)p->max_tokens;
    j->sp = p->sp;
    if (!p->seed_given)
        j->sp.seed = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull +
                     (uint64_t)atomic_fetch_add(&sv->seq, 1);
    j->stops = (const char *const *)p->stops;
    j->n_stops = p->n_stops;
    j->logprobs = p->logprobs;
    snprintf(r->id, sizeof r->id, "%s-%ld", r->kind == SERVE_CHAT ? "chatcmpl" : "cmpl",
             atomic_fetch_add(&sv->seq, 1));
    return true;
}

/* Whether the client of c has hung up (a non-streamed request waits without writing). */
static bool client_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return false;
    struct pollfd pf = {.fd = ci->connect_fd, .events = POLLRDHUP};
    return poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static enum MHD_Result answer_whole(request *r, struct MHD_Connection *c) {
    serve_sched *s = r->sv->sched;
    serve_job_lock(s);
    while (!r->j->done) {
        uint64_t seen = r->j->version;
        if (!serve_job_wait(s, r->j, seen, 200) && client_gone(c)) {
            serve_job_unlock(s);
            serve_job_cancel(s, r->j);
            request_free(r);
            return MHD_NO; /* nobody to answer */
        }
    }
    char *body = NULL;
    serve_error e = {0};
    if (r->j->error[0]) serve_error_set(&e, 500, "server_error", NULL, "%s", r->j->error);
    else body = serve_reply_completion(r->sv, r->kind, r->id, r->model, r->j);
    serve_job_unlock(s);
    enum MHD_Result ok = e.status ? send_error(r->sv, c, &e, 0)
                                  : send_body(r->sv, c, 200, body, "application/json", 0);
    request_free(r);
    return ok;
}

static bool add_event(request *r, char *json) {
    if (!json) return false;
    size_t n = strlen(json);
    char *more = realloc(r->out, r->out_len + n + 9);
    if (!more) {
        free(json);
        return false;
    }
    r->out = more;
    r->out_len += (size_t)sprintf(r->out + r->out_len, "data: %s\n\n", json);
    free(json);
    return true;
}

static bool add_text(request *r, const char *text) {
    size_t n = strlen(text);
    char *more = realloc(r->out, r->out_len + n + 1);
    if (!more) return false;
    r->out = more;
    memcpy(r->out + r->out_len, text, n + 1);
    r->out_len += n;
    return true;
}

/* Fills r->out with what the job has published since the last call (under the job lock);
 * false when the stream has ended. */
static bool stream_fill(request *r) {
    serve_job *j = r->j;
    serve_server *sv = r->sv;
    bool ok = true;
    if (r->kind == SERVE_CHAT && !r->role_sent) {
        for (int32_t c = 0; c < j->n_choices && ok; c++)
            ok = add_event(r, serve_reply_chunk(sv, r->kind, r->id, r->model, j, c, 0, 0, 0, 0,
                                                false, true));
        r->role_sent = true;
        return ok;
    }
    for (int32_t c = 0; c < j->n_choices && ok; c++) {
        serve_choice *ch = &j->choices[c];
        if (ch->len > r->sent[c] || ch->n_lp > r->lp_sent[c])
            ok = add_event(r, serve_reply_chunk(sv, r->kind, r->id, r->model, j, c, r->sent[c],
                                                ch->len, r->lp_sent[c], ch->n_lp, false, false));
        r->sent[c] = ch->len;
        r->lp_sent[c] = ch->n_lp;
        if (ok && ch->finish && !r->fin_sent[c]) {
            ok = add_event(r, serve_reply_chunk(sv, r->kind, r->id, r->model, j, c, ch->len,
                                                ch->len, ch->n_lp, ch->n_lp, true, false));
            r->fin_sent[c] = true;
        }
    }
    if (r->out_len > 0 || !ok) return ok;
    if (!j->done) return true;
    if (r->done_sent) return false;
    if (j->error[0]) {
        serve_error e;
        serve_error_set(&e, 500, "server_error", NULL, "%s", j->error);
        ok = add_event(r, serve_reply_error(&e));
    }
    if (ok && r->p.include_usage)
        ok = add_event(r, serve_reply_usage_chunk(sv, r->kind, r->id, r->model, j));
    r->done_sent = true;
    return ok && add_text(r, "data: [DONE]\n\n");
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    request *r = cls;
    if (r->out_at == r->out_len) {
        r->out_at = r->out_len = 0;
        serve_sched *s = r->sv->sched;
        serve_job_lock(s);
        bool more = true;
        while (r->out_len == 0 && (more = stream_fill(r)) && r->out_len == 0) {
            uint64_t seen = r->j->version;
            if (r->j->done) continue;
            if (!serve_job_wait(s, r->j, seen, 1000)) more = add_text(r, ": waiting\n\n");
        }
        serve_job_unlock(s);
        if (!more && r->out_len == 0) return MHD_CONTENT_READER_END_OF_STREAM;
    }
    size_t n = r->out_len - r->out_at < max ? r->out_len - r->out_at : max;
    memcpy(buf, r->out + r->out_at, n);
    r->out_at += n;
    return (ssize_t)n;
}

static void stream_free(void *cls) { request_free(cls); }

static enum MHD_Result answer_stream(request *r, struct MHD_Connection *c) {
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, r, stream_free);
    if (!resp) {
        request_free(r);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    atomic_fetch_add(&r->sv->n_http[2], 1);
    enum MHD_Result ok = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result completion(serve_server *sv, struct MHD_Connection *c, conn *cn,
                                  serve_kind kind) {
    request *r = calloc(1, sizeof *r);
    if (!r) return send_body(sv, c, 500, NULL, "application/json", 0);
    r->sv = sv;
    r->kind = kind;
    serve_error e;
    if (!serve_params_parse(&r->p, kind, cn->body ? cn->body : "", cn->len, &e) ||
        !request_prepare(r, &e)) {
        request_free(r);
        return send_error(sv, c, &e, 0);
    }
    bool too_big;
    if (!serve_sched_submit(sv->sched, r->j, &too_big)) {
        int retry = too_big ? 0 : serve_sched_retry_after(sv->sched);
        if (too_big)
            serve_error_set(&e, 400, "invalid_request_error", "context_length_exceeded",
                            "the prompt's %d tokens and %d * %d to generate do not fit in the "
                            "server's context (--ctx-size, --parallel)", r->j->n_prompt,
                            r->j->n_choices, r->j->max_tokens);
        else
            serve_error_set(&e, 429, "rate_limit_exceeded", "queue_full",
                            "the server is busy (its queue is full): retry after %d s", retry);
        request_free(r);
        return send_error(sv, c, &e, retry);
    }
    cn->in_flight = true;
    atomic_fetch_add(&sv->in_flight, 1);
    return r->p.stream ? answer_stream(r, c) : answer_whole(r, c);
}

/* ------------------------------------------------------------ the other endpoints */

static enum MHD_Result models(serve_server *sv, struct MHD_Connection *c) {
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return send_body(sv, c, 500, NULL, "application/json", 0);
    fputs("{\"object\":\"list\",\"data\":[{\"id\":", f);
    el_json_write_string(f, sv->model_id, strlen(sv->model_id));
    fprintf(f, ",\"object\":\"model\",\"created\":%ld,\"owned_by\":\"edgelora\",\"kind\":"
               "\"base\"}", sv->started);
    serve_adapters_write_models(sv->adapters, f, sv->started);
    fputs("]}", f);
    return send_body(sv, c, 200, serve_memstream_close(f, &buf), "application/json", 0);
}

static enum MHD_Result health(serve_server *sv, struct MHD_Connection *c) {
    serve_stats st;
    serve_sched_get_stats(sv->sched, &st);
    char *body = NULL;
    if (asprintf(&body, "{\"status\":\"%s\",\"running\":%d,\"queued\":%d,\"kv_used\":%d,"
                        "\"kv_cached\":%d,\"kv_cells\":%d,\"cache_entries\":%d}",
                 atomic_load(&sv->draining) ? "draining" : "ok", st.running, st.queued,
                 st.kv_used, st.kv_cached, st.kv_cells, st.cache_entries) < 0)
        body = NULL;
    return send_body(sv, c, 200, body, "application/json", 0);
}

static enum MHD_Result metrics(serve_server *sv, struct MHD_Connection *c) {
    serve_stats st;
    serve_sched_get_stats(sv->sched, &st);
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return send_body(sv, c, 500, NULL, "application/json", 0);
    fprintf(f, "# HELP edgelora_requests_total Completion requests accepted into the queue.\n"
               "# TYPE edgelora_requests_total counter\nedgelora_requests_total %lld\n",
            (long long)st.requests);
    static const char *const classes[] = {[2] = "2xx", [4] = "4xx", [5] = "5xx"};
    fputs("# HELP edgelora_http_responses_total HTTP answers by status class.\n"
          "# TYPE edgelora_http_responses_total counter\n", f);
    for (int k = 2; k <= 5; k++)
        if (classes[k])
            fprintf(f, "edgelora_http_responses_total{code=\"%s\"} %ld\n", classes[k],
                    atomic_load(&sv->n_http[k]));
    fprintf(f, "# HELP edgelora_prompt_tokens_total Prompt tokens of admitted requests.\n"
               "# TYPE edgelora_prompt_tokens_total counter\nedgelora_prompt_tokens_total %lld\n"
               "# HELP edgelora_prompt_tokens_reused_total Prompt tokens shared from the cache.\n"
               "# TYPE edgelora_prompt_tokens_reused_total counter\n"
               "edgelora_prompt_tokens_reused_total %lld\n"
               "# HELP edgelora_generated_tokens_total Tokens generated by finished requests.\n"
               "# TYPE edgelora_generated_tokens_total counter\n"
               "edgelora_generated_tokens_total %lld\n"
               "# HELP edgelora_steps_total Decode steps (the shared ones, and the start of each "
               "speculative request).\n# TYPE edgelora_steps_total counter\n"
               "edgelora_steps_total %lld\n"
               "# HELP edgelora_step_seconds_total Time in decode steps.\n"
               "# TYPE edgelora_step_seconds_total counter\nedgelora_step_seconds_total %.6f\n"
               "# HELP edgelora_scheduler_seconds_total Time the scheduler spent between decode "
               "steps (admission, prefix-cache lookups, building steps, sampling, counting "
               "cells).\n# TYPE edgelora_scheduler_seconds_total counter\n"
               "edgelora_scheduler_seconds_total %.6f\n"
               "# HELP edgelora_requests_running Requests being decoded.\n"
               "# TYPE edgelora_requests_running gauge\nedgelora_requests_running %d\n"
               "# HELP edgelora_requests_queued Requests waiting.\n"
               "# TYPE edgelora_requests_queued gauge\nedgelora_requests_queued %d\n"
               "# HELP edgelora_kv_cells_used KV cells running requests use.\n"
               "# TYPE edgelora_kv_cells_used gauge\nedgelora_kv_cells_used %d\n"
               "# HELP edgelora_kv_cells_cached KV cells only finished requests' kept entries "
               "hold.\n# TYPE edgelora_kv_cells_cached gauge\nedgelora_kv_cells_cached %d\n"
               "# HELP edgelora_prefix_cache_entries Finished requests whose cells are kept.\n"
               "# TYPE edgelora_prefix_cache_entries gauge\nedgelora_prefix_cache_entries %d\n"
               "# HELP edgelora_prefix_cache_evictions_total Kept entries evicted for room.\n"
               "# TYPE edgelora_prefix_cache_evictions_total counter\n"
               "edgelora_prefix_cache_evictions_total %lld\n"
               "# HELP edgelora_kv_cells KV cells of the context.\n"
               "# TYPE edgelora_kv_cells gauge\nedgelora_kv_cells %d\n"
               "# HELP edgelora_adapters Adapters loaded.\n# TYPE edgelora_adapters gauge\n"
               "edgelora_adapters %d\n"
               "# HELP edgelora_speculative_requests_total Requests decoded speculatively.\n"
               "# TYPE edgelora_speculative_requests_total counter\n"
               "edgelora_speculative_requests_total %lld\n"
               "# HELP edgelora_speculative_steps_total Speculative steps of requests (one a "
               "request a step).\n"
               "# TYPE edgelora_speculative_steps_total counter\n"
               "edgelora_speculative_steps_total %lld\n"
               "# HELP edgelora_speculative_accepted_tokens_total Drafted tokens accepted (a "
               "step's tokens beyond its first).\n"
               "# TYPE edgelora_speculative_accepted_tokens_total counter\n"
               "edgelora_speculative_accepted_tokens_total %lld\n"
               "# HELP edgelora_prune_rate The pruning rate new requests take (a UniQL compressed "
               "model; 0 otherwise).\n# TYPE edgelora_prune_rate gauge\nedgelora_prune_rate %g\n",
            (long long)st.prompt_tokens, (long long)st.reused_tokens, (long long)st.gen_tokens,
            (long long)st.steps, st.step_seconds, st.sched_seconds, st.running, st.queued, st.kv_used,
            st.kv_cached, st.cache_entries, (long long)st.cache_evicted, st.kv_cells, serve_adapters_count(sv->adapters), (long long)st.spec_requests,
            (long long)st.spec_steps, (long long)st.spec_accepted, (double)st.prune_rate);
    return send_body(sv, c, 200, serve_memstream_close(f, &buf), "text/plain; version=0.0.4", 0);
}

/* {"id": name, "object": "model", rest} (NULL: out of memory). */
static char *adapter_json(const char *name, const char *rest) {
    char *body = NULL;
    FILE *f = open_memstream(&body, &(size_t){0});
    if (!f) return NULL;
    fputs("{\"id\":", f);
    el_json_write_string(f, name, strlen(name));
    fprintf(f, ",\"object\":\"model\",%s}", rest);
    return serve_memstream_close(f, &body);
}

/* POST /v1/adapters {"name": NAME}: loads NAME from the adapter folder. */
static enum MHD_Result adapter_add(serve_server *sv, struct MHD_Connection *c, conn *cn) {
    serve_error e;
    el_json_doc *doc;
    if (el_json_parse(cn->body ? cn->body : "", cn->len, "the request body", &doc) != EL_OK)
        return fail(sv, c, 400, "invalid_request_error", "invalid_json", el_last_error());
    const el_json_value *root = el_json_root(doc);
    const char *name = el_json_str(el_json_get(root, "name"), NULL);
    bool ok = el_json_type(root) == EL_JSON_OBJECT && el_json_len(root) == 1 && name;
    if (!ok)
        serve_error_set(&e, 400, "invalid_request_error", "invalid_value",
                        "the body must be {\"name\": NAME} (a file of the adapter folder)");
    else
        ok = serve_adapters_add(sv->adapters, name, &e);
    char *body = ok ? adapter_json(name, "\"kind\":\"adapter\"") : NULL;
    el_json_free(doc);
    return ok ? send_body(sv, c, 200, body, "application/json", 0) : send_error(sv, c, &e, 0);
}

static enum MHD_Result adapter_remove(serve_server *sv, struct MHD_Connection *c,
                                      const char *name) {
    /* held across the removal, so that the adapter the scheduler forgets is this one */
    serve_adapter *held;
    el_adapter *a = serve_adapters_acquire(sv->adapters, name, &held);
    bool removed = a && serve_adapters_remove(sv->adapters, name);
    if (removed) serve_sched_forget_adapter(sv->sched, a);
    if (a) serve_adapters_release(sv->adapters, held);
    if (!removed) {
        serve_error e;
        serve_error_set(&e, 404, "invalid_request_error", "adapter_not_found",
                        "no adapter '%s' is loaded", name);
        return send_error(sv, c, &e, 0);
    }
    return send_body(sv, c, 200, adapter_json(name, "\"deleted\":true"), "application/json", 0);
}

/* POST /v1/prune: the rate requests admitted from now on take (serve_prune.c). */
static enum MHD_Result prune_set(serve_server *sv, struct MHD_Connection *c, conn *cn) {
    serve_error e;
    char *body = serve_prune_post(sv, cn->body, cn->len, &e);
    return body ? send_body(sv, c, 200, body, "application/json", 0) : send_error(sv, c, &e, 0);
}

static enum MHD_Result route(serve_server *sv, struct MHD_Connection *c, conn *cn,
                             const char *url, const char *method) {
    bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    if (!strcmp(url, "/health") && get) return health(sv, c);
    if (!authorized(sv, c))
        return fail(sv, c, 401, "invalid_request_error", "invalid_api_key",
                    "a valid API key is needed (Authorization: Bearer KEY)");
    if (cn->too_big) {
        char msg[128];
        snprintf(msg, sizeof msg, "the request body is larger than %zu bytes", sv->max_body);
        return fail(sv, c, 413, "invalid_request_error", "request_too_large", msg);
    }
    if (!strcmp(url, "/metrics") && get) return metrics(sv, c);
    if (!strcmp(url, "/v1/models") && get) return models(sv, c);
    if (!strcmp(url, "/v1/completions") && post) return completion(sv, c, cn, SERVE_COMPLETION);
    if (!strcmp(url, "/v1/chat/completions") && post) return completion(sv, c, cn, SERVE_CHAT);
    if (!strcmp(url, "/v1/adapters") && post) return adapter_add(sv, c, cn);
    if (!strcmp(url, "/v1/prune") && get)
        return send_body(sv, c, 200, serve_prune_get(sv), "application/json", 0);
    if (!strcmp(url, "/v1/prune") && post) return prune_set(sv, c, cn);
    if (!strncmp(url, "/v1/adapters/", 13) && !strcmp(method, "DELETE") && url[13])
        return adapter_remove(sv, c, url + 13);
    static const char *const known[] = {"/health", "/metrics", "/v1/models", "/v1/completions",
                                        "/v1/chat/completions", "/v1/adapters", "/v1/prune"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(url, known[i]) || (i == 5 && !strncmp(url, "/v1/adapters/", 13)))
            return fail(sv, c, 405, "invalid_request_error", "method_not_allowed",
                        "this method is not allowed here");
    char msg[160];
    snprintf(msg, sizeof msg, "no such endpoint: %.100s", url);
    return fail(sv, c, 404, "invalid_request_error", "not_found", msg);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
    serve_server *sv = cls;
    conn *cn = *con_cls;
    if (!cn) {
        if (!(cn = calloc(1, sizeof *cn))) return MHD_NO;
        *con_cls = cn;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        if (!cn->too_big && cn->len + *upload_size <= sv->max_body) {
            char *more = realloc(cn->body, cn->len + *upload_size + 1);
            if (!more) return MHD_NO;
            cn->body = more;
            memcpy(cn->body + cn->len, upload, *upload_size);
            cn->len += *upload_size;
            cn->body[cn->len] = '\0';
        } else {
            cn->too_big = true; /* the rest is read and dropped; the answer is 413 */
        }
        *upload_size = 0;
        return MHD_YES;
    }
    return route(sv, c, cn, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why) {
    serve_server *sv = cls;
    conn *cn = *con_cls;
    if (!cn) return;
    if (cn->in_flight) atomic_fetch_sub(&sv->in_flight, 1);
    free(cn->body);
    free(cn);
    *con_cls = NULL;
}

int serve_http_start(serve_server *sv, const char *host, int port) {
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    const struct sockaddr *addr;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_ITC;
    if (inet_pton(AF_INET, host, &a4.sin_addr) == 1) {
        addr = (const struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1) {
        addr = (const struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        cli_error("serve", "--host '%s' is not an IPv4 or IPv6 address", host);
        return CLI_USAGE;
    }
    sv->daemon = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, sv,
                                  MHD_OPTION_SOCK_ADDR, addr,
                                  MHD_OPTION_CONNECTION_TIMEOUT, sv->timeout_s,
                                  MHD_OPTION_NOTIFY_COMPLETED, on_completed, sv,
                                  MHD_OPTION_CONNECTION_LIMIT, (unsigned)sv->max_connections,
                                  MHD_OPTION_END);
    if (!sv->daemon) {
        cli_error("serve", "cannot listen on %s:%d (in use, or not allowed)", host, port);
        return CLI_FAIL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(sv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    sv->port = di ? di->port : port;
    return CLI_OK;
}

void serve_http_quiesce(serve_server *sv) { MHD_quiesce_daemon(sv->daemon); }

void serve_http_stop(serve_server *sv) {
    if (sv->daemon) MHD_stop_daemon(sv->daemon);
    sv->daemon = NULL;
}
