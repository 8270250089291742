/* serve_request.c - an OpenAI completions or chat request body, read with the library's strict
 * JSON reader and checked field by field. Unknown fields are refused (a misspelt "temprature"
 * must not quietly sample at temperature 1), and fields OpenAI defines but this server does not
 * implement are refused by name rather than ignored. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_request.h"
#include "spec_tree.h"

bool serve_error_set(serve_error *e, int status, const char *type, const char *code,
                     const char *fmt, ...) {
    e->status = status;
    e->type = type;
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return false;
}

static bool bad(serve_error *e, const char *fmt, const char *key) {
    return serve_error_set(e, 400, "invalid_request_error", "invalid_value", fmt, key);
}

static bool dup_string(const el_json_value *v, char **out, size_t *len) {
    size_t n;
    const char *s = el_json_str(v, &n);
    if (!(*out = malloc(n + 1))) return false;
    memcpy(*out, s, n + 1);
    if (len) *len = n;
    return true;
}

static bool oom(serve_error *e) {
    return serve_error_set(e, 500, "server_error", "out_of_memory", "out of memory");
}

/* A number field within [lo, hi], absent (unchanged) or null (unchanged). */
static bool get_num(const el_json_value *root, const char *key, double lo, double hi,
                    double *out, serve_error *e) {
    const el_json_value *v = el_json_get(root, key);
    if (el_json_type(v) == EL_JSON_NONE || el_json_type(v) == EL_JSON_NULL) return true;
    double d;
    if (!el_json_num(v, &d) || !isfinite(d) || d < lo || d > hi)
        return serve_error_set(e, 400, "invalid_request_error", "invalid_value",
                               "'%s' must be a number from %g to %g", key, lo, hi);
    *out = d;
    return true;
}

static bool get_int(const el_json_value *root, const char *key, long lo, long hi, long *out,
                    serve_error *e) {
    const el_json_value *v = el_json_get(root, key);
    if (el_json_type(v) == EL_JSON_NONE || el_json_type(v) == EL_JSON_NULL) return true;
    int64_t i;
    if (!el_json_int(v, &i) || i < lo || i > hi)
        return serve_error_set(e, 400, "invalid_request_error", "invalid_value",
                               "'%s' must be a whole number from %ld to %ld", key, lo, hi);
    *out = (long)i;
    return true;
}

static bool get_bool(const el_json_value *root, const char *key, bool *out, serve_error *e) {
    const el_json_value *v = el_json_get(root, key);
    if (el_json_type(v) == EL_JSON_NONE || el_json_type(v) == EL_JSON_NULL) return true;
    if (!el_json_bool(v, out)) return bad(e, "'%s' must be true or false", key);
    return true;
}

/* "stop": a string or a list of up to SERVE_MAX_STOPS non-empty strings. */
static bool get_stops(serve_params *p, const el_json_value *root, serve_error *e) {
    const el_json_value *v = el_json_get(root, "stop");
    el_json_kind t = el_json_type(v);
    if (t == EL_JSON_NONE || t == EL_JSON_NULL) return true;
    bool one = t == EL_JSON_STRING;
    size_t n = one ? 1 : el_json_len(v);
    if ((!one && t != EL_JSON_ARRAY) || n > SERVE_MAX_STOPS)
        return serve_error_set(e, 400, "invalid_request_error", "invalid_value",
                               "'stop' must be a string or a list of at most %d strings",
                               SERVE_MAX_STOPS);
    for (size_t i = 0; i < n; i++) {
        const el_json_value *s = one ? v : el_json_at(v, i);
        if (el_json_type(s) != EL_JSON_STRING || !*el_json_str(s, NULL))
            return bad(e, "'%s' must hold non-empty strings", "stop");
        if (!dup_string(s, &p->stops[p->n_stops], NULL)) return oom(e);
        p->n_stops++;
    }
    return true;
}

/* "adapters": [{"name": NAME, "scale": X}, ...] (scale 1 when absent). */
static bool get_adapters(serve_params *p, const el_json_value *root, serve_error *e) {
    const el_json_value *v = el_json_get(root, "adapters");
    el_json_kind t = el_json_type(v);
    if (t == EL_JSON_NONE || t == EL_JSON_NULL) return true;
    if (t != EL_JSON_ARRAY || el_json_len(v) > SERVE_MAX_ADAPTERS)
        return serve_error_set(e, 400, "invalid_request_error", "invalid_value",
                               "'adapters' must be a list of at most %d {\"name\", \"scale\"}",
                               SERVE_MAX_ADAPTERS);
    for (size_t i = 0; i < el_json_len(v); i++) {
        const el_json_value *a = el_json_at(v, i);
        const el_json_value *name = el_json_get(a, "name");
        if (el_json_type(a) != EL_JSON_OBJECT || el_json_type(name) != EL_JSON_STRING)
            return bad(e, "each of '%s' must be an object with a \"name\" (a string)",
                       "adapters");
        for (size_t k = 0; k < el_json_len(a); k++) {
            const char *key = el_json_key_at(a, k, NULL);
            if (strcmp(key, "name") && strcmp(key, "scale"))
                return serve_error_set(e, 400, "invalid_request_error", "unknown_parameter",
                                       "'adapters': unknown field '%s'", key);
        }
        double scale = 1.0;
        if (!get_num(a, "scale", -1e6, 1e6, &scale, e)) return false;
        if (!dup_string(name, &p->adapters[p->n_adapters].name, NULL)) return oom(e);
        p->adapters[p->n_adapters++].scale = (float)scale;
    }
    return true;
}

/* A message's "content": a string, or a list of {"type": "text", "text": ...} parts, joined. */
static bool get_content(const el_json_value *c, char **out, serve_error *e) {
    if (el_json_type(c) == EL_JSON_STRING) return dup_string(c, out, NULL) || oom(e);
    if (el_json_type(c) != EL_JSON_ARRAY)
        return bad(e, "a message's '%s' must be a string or a list of text parts", "content");
    size_t total = 0;
    for (size_t i = 0; i < el_json_len(c); i++) {
        const el_json_value *part = el_json_at(c, i);
        const char *type = el_json_str(el_json_get(part, "type"), NULL);
        if (!type || strcmp(type, "text") ||
            el_json_type(el_json_get(part, "text")) != EL_JSON_STRING)
            return bad(e, "a message's '%s' parts must be {\"type\": \"text\", \"text\": ...}",
                       "content");
        size_t n;
        el_json_str(el_json_get(part, "text"), &n);
        total += n;
    }
    if (!(*out = malloc(total + 1))) return oom(e);
    size_t at = 0;
    for (size_t i = 0; i < el_json_len(c); i++) {
        size_t n;
        const char *s = el_json_str(el_json_get(el_json_at(c, i), "text"), &n);
        memcpy(*out + at, s, n);
        at += n;
    }
    (*out)[at] = '\0';
    return true;
}

static bool get_messages(serve_params *p, const el_json_value *root, serve_error *e) {
    const el_json_value *v = el_json_get(root, "messages");
    if (el_json_type(v) != EL_JSON_ARRAY || el_json_len(v) == 0)
        return serve_error_set(e, 400, "invalid_request_error", "missing_required_parameter",
                               "'messages' (a non-empty list) is required");
    size_t n = el_json_len(v);
    if (!(p->messages = calloc(n, sizeof *p->messages))) return oom(e);
    for (size_t i = 0; i < n; i++) {
        const el_json_value *m = el_json_at(v, i);
        const el_json_value *role = el_json_get(m, "role");
        if (el_json_type(m) != EL_JSON_OBJECT || el_json_type(role) != EL_JSON_STRING)
            return bad(e, "each of '%s' must be an object with a \"role\" (a string)",
                       "messages");
        char *r, *c = NULL;
        if (!dup_string(role, &r, NULL)) return oom(e);
        p->messages[i].role = r;
        p->n_messages = i + 1;
        if (!get_content(el_json_get(m, "content"), &c, e)) return false;
        p->messages[i].content = c;
    }
    return true;
}

/* Fields OpenAI defines that change nothing here at their neutral values, and are refused
 * otherwise (a penalty asked for and silently not applied would be a wrong answer). */
static bool get_neutral(const el_json_value *root, serve_error *e) {
    static const char *const zero[] = {"presence_penalty", "frequency_penalty"};
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++) {
        double d = 0;
        if (!get_num(root, zero[i], -2, 2, &d, e)) return false;
        if (d != 0)
            return serve_error_set(e, 400, "invalid_request_error", "unsupported_parameter",
                                   "'%s' is not supported (only 0)", zero[i]);
    }
    bool echo = false;
    if (!get_bool(root, "echo", &echo, e)) return false;
    if (echo)
        return serve_error_set(e, 400, "invalid_request_error", "unsupported_parameter",
                               "'echo' is not supported");
    return true;
}

static const char *const common_fields[] = {
    "model", "max_tokens", "temperature", "top_p", "n", "stream", "stream_options", "stop",
    "seed", "user", "presence_penalty", "frequency_penalty", "logprobs", "adapters",
    "speculative", "tree",
};
static const char *const completion_fields[] = {"prompt", "echo"};
static const char *const chat_fields[] = {"messages", "top_logprobs", "max_completion_tokens"};

static bool known(const char *key, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(key, list[i])) return true;
    return false;
}

static bool check_fields(serve_kind kind, const el_json_value *root, serve_error *e) {
    for (size_t i = 0; i < el_json_len(root); i++) {
        const char *key = el_json_key_at(root, i, NULL);
        bool ok = known(key, common_fields, sizeof common_fields / sizeof common_fields[0]) ||
                  (kind == SERVE_COMPLETION
                       ? known(key, completion_fields, 2)
                       : known(key, chat_fields, sizeof chat_fields / sizeof chat_fields[0]));
        if (!ok)
            return serve_error_set(e, 400, "invalid_request_error", "unknown_parameter",
                                   "unknown parameter '%s'", key);
    }
    return true;
}

/* "prompt": a string, or a list holding one string (what clients send for one prompt). */
static bool get_prompt(serve_params *p, const el_json_value *root, serve_error *e) {
    const el_json_value *v = el_json_get(root, "prompt");
    if (el_json_type(v) == EL_JSON_ARRAY && el_json_len(v) == 1) v = el_json_at(v, 0);
    if (el_json_type(v) != EL_JSON_STRING)
        return serve_error_set(e, 400, "invalid_request_error", "missing_required_parameter",
                               "'prompt' (a string) is required");
    return dup_string(v, &p->prompt, &p->prompt_len) || oom(e);
}

/* "logprobs": completions give a count (0..5); chat gives true and "top_logprobs". */
static bool get_logprobs(serve_params *p, const el_json_value *root, serve_error *e) {
    long k = -1;
    if (p->kind == SERVE_COMPLETION) {
        if (!get_int(root, "logprobs", 0, SERVE_MAX_LOGPROBS, &k, e)) return false;
    } else {
        bool on = false;
        if (!get_bool(root, "logprobs", &on, e)) return false;
        long top = 0;
        if (!get_int(root, "top_logprobs", 0, SERVE_MAX_LOGPROBS, &top, e)) return false;
        if (el_json_get(root, "top_logprobs") && !on)
            return bad(e, "'%s' needs \"logprobs\": true", "top_logprobs");
        if (on) k = top;
    }
    p->logprobs = (int)k;
    return true;
}

/* "speculative": true or false; "tree": "auto" or a list of widths [W1, W2, ...] (1..8 each,
 * at most EL_SPEC_MAX_DEPTH), as `--tree` gives them. Whether the server's forecast set can
 * serve them is the server's to say (serve_http.c): parsing knows no model. */
static bool get_speculative(serve_params *p, const el_json_value *root, serve_error *e) {
    const el_json_value *v = el_json_get(root, "speculative");
    if (el_json_type(v) != EL_JSON_NONE && el_json_type(v) != EL_JSON_NULL) {
        bool on;
        if (!get_bool(root, "speculative", &on, e)) return false;
        p->speculative = on;
    }
    const el_json_value *t = el_json_get(root, "tree");
    el_json_kind k = el_json_type(t);
    if (k == EL_JSON_NONE || k == EL_JSON_NULL) return true;
    if (!cli_spec_tree_json(t, &p->tree))
        return serve_error_set(e, 400, "invalid_request_error", "invalid_value",
                               "'tree' must be \"auto\" or a list of 1 to %d widths (whole "
                               "numbers 1..8: the candidates at each depth)", EL_SPEC_MAX_DEPTH);
    p->tree_given = true;
    if (p->speculative == 0)
        return bad(e, "'%s' asks for speculative decoding, which \"speculative\": false turns off",
                   "tree");
    return true;
}

static bool parse_root(serve_params *p, const el_json_value *root, serve_error *e) {
    if (el_json_type(root) != EL_JSON_OBJECT)
        return serve_error_set(e, 400, "invalid_request_error", "invalid_json",
                               "the body must be a JSON object, not %s",
                               el_json_kind_name(el_json_type(root)));
    if (!check_fields(p->kind, root, e) || !get_neutral(root, e)) return false;
    const el_json_value *model = el_json_get(root, "model");
    if (model && el_json_type(model) != EL_JSON_STRING) return bad(e, "'%s' must be a string", "model");
    if (model && !dup_string(model, &p->model, NULL)) return oom(e);
    if (p->kind == SERVE_COMPLETION ? !get_prompt(p, root, e) : !get_messages(p, root, e))
        return false;
    if (el_json_get(root, "max_tokens") && el_json_get(root, "max_completion_tokens"))
        return bad(e, "give '%s' or 'max_completion_tokens', not both", "max_tokens");
    double temp = p->sp.temperature, top_p = p->sp.top_p;
    long n = 1, seed = -1;
    const el_json_value *so = el_json_get(root, "stream_options");
    if (so && el_json_type(so) != EL_JSON_NULL) {
        if (el_json_type(so) != EL_JSON_OBJECT)
            return bad(e, "'%s' must be an object", "stream_options");
        for (size_t i = 0; i < el_json_len(so); i++)
            if (strcmp(el_json_key_at(so, i, NULL), "include_usage"))
                return serve_error_set(e, 400, "invalid_request_error", "unknown_parameter",
                                       "'stream_options': unknown field '%s'",
                                       el_json_key_at(so, i, NULL));
        if (!get_bool(so, "include_usage", &p->include_usage, e)) return false;
    }
    if (!get_int(root, "max_tokens", 0, 1L << 24, &p->max_tokens, e) ||
        !get_int(root, "max_completion_tokens", 0, 1L << 24, &p->max_tokens, e) ||
        !get_num(root, "temperature", 0, 2, &temp, e) ||
        !get_num(root, "top_p", 0, 1, &top_p, e) ||
        !get_int(root, "n", 1, SERVE_MAX_N, &n, e) ||
        !get_int(root, "seed", 0, INT64_MAX, &seed, e) ||
        !get_bool(root, "stream", &p->stream, e) || !get_stops(p, root, e) ||
        !get_adapters(p, root, e) || !get_logprobs(p, root, e) ||
        !get_speculative(p, root, e))
        return false;
    if (p->include_usage && !p->stream)
        return bad(e, "'%s' needs \"stream\": true", "stream_options");
    const el_json_value *user = el_json_get(root, "user");
    if (user && el_json_type(user) != EL_JSON_STRING) return bad(e, "'%s' must be a string", "user");
    p->sp.temperature = (float)temp;
    p->sp.top_p = (float)top_p;
    p->n = (int)n;
    p->seed_given = seed >= 0;
    if (p->seed_given) p->sp.seed = (uint64_t)seed;
    return true;
}

bool serve_params_parse(serve_params *p, serve_kind kind, const char *body, size_t len,
                        serve_error *e) {
    *p = (serve_params){.kind = kind, .max_tokens = -1, .n = 1, .logprobs = -1,
                        .speculative = -1};
    /* OpenAI's defaults: plain sampling at temperature 1, no filter, no penalty */
    p->sp = (el_sampler_params){.temperature = 1.0f, .top_p = 1.0f, .repeat_penalty = 1.0f,
                                .repeat_last_n = 64};
    el_json_doc *doc;
    if (el_json_parse(body, len, "the request body", &doc) != EL_OK)
        return serve_error_set(e, 400, "invalid_request_error", "invalid_json", "%s",
                               el_last_error());
    bool ok = parse_root(p, el_json_root(doc), e);
    el_json_free(doc);
    if (!ok) serve_params_free(p);
    return ok;
}

void serve_params_free(serve_params *p) {
    free(p->model);
    free(p->prompt);
    for (size_t i = 0; i < p->n_messages; i++) {
        free((char *)p->messages[i].role);
        free((char *)p->messages[i].content);
    }
    free(p->messages);
    for (int i = 0; i < p->n_adapters; i++) free(p->adapters[i].name);
    for (int i = 0; i < p->n_stops; i++) free(p->stops[i]);
    *p = (serve_params){0};
}
