/* batch_request.c - one line of `edgelora batch`'s requests file in, one line of output out.
 *
 * Requests are read with the library's strict JSON parser (edgelora.h, section "json"), so a
 * request file means the same thing here as in any other JSON reader; every field is checked
 * for its type and range, and an unknown field is an error rather than silently ignored (a typo
 * such as "temprature" must not quietly give greedy output). */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "spec_tree.h"

bool batch_request_fail(batch_request *r, const char *path, const char *fmt, ...) {
    if (r->error) return false;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t n = strlen(path) + strlen(msg) + 32;
    if ((r->error = malloc(n))) snprintf(r->error, n, "%s:%d: %s", path, r->line, msg);
    return false;
}

/* The id as JSON text: a string re-escaped, a number as its value. */
static char *id_to_json(const el_json_value *v) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    int64_t i;
    double d;
    size_t n;
    if (el_json_type(v) == EL_JSON_STRING) {
        const char *s = el_json_str(v, &n);
        el_json_write_string(f, s, n);
    } else if (el_json_int(v, &i)) {
        fprintf(f, "%lld", (long long)i);
    } else if (el_json_num(v, &d)) {
        int prec = 1; /* the shortest form that reads back as the same number */
        char tmp[32];
        do snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        while (strtod(tmp, NULL) != d && ++prec < 17);
        fputs(tmp, f);
    } else {
        fputs("null", f);
    }
    if (fclose(f)) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Typed field readers: true if the value is of the kind and in range (or absent: unchanged). */
static bool get_num(batch_request *r, const char *path, const el_json_value *obj,
                    const char *key, double lo, double hi, double *out) {
    const el_json_value *v = el_json_get(obj, key);
    if (!v) return true;
    double d;
    if (!el_json_num(v, &d) || !isfinite(d) || d < lo || d > hi)
        return batch_request_fail(r, path, "\"%s\" must be a number from %g to %g", key, lo, hi);
    *out = d;
    return true;
}

/* A sampler field: any number its C type holds; what the sampler accepts is the sampler's to
 * say (batch.c asks it, as for any other failure of a request). */
static bool get_float(batch_request *r, const char *path, const el_json_value *obj,
                      const char *key, double *out) {
    return get_num(r, path, obj, key, -FLT_MAX, FLT_MAX, out);
}

static bool get_int(batch_request *r, const char *path, const el_json_value *obj,
                    const char *key, int64_t lo, int64_t hi, int64_t *out) {
    const el_json_value *v = el_json_get(obj, key);
    if (!v) return true;
    int64_t i;
    if (!el_json_int(v, &i) || i < lo || i > hi)
        return batch_request_fail(r, path, "\"%s\" must be a whole number from %lld to %lld", key,
                    (long long)lo, (long long)hi);
    *out = i;
    return true;
}

static bool add_binding(batch_request *r, const char *path, cli_lora_dir *dir, const char *name,
                        double scale) {
    if (!dir)
        return batch_request_fail(r, path, "adapter '%s' asked for, but no adapter folder "
                                           "was given (--lora-dir)", name);
    cli_lora_entry *e = cli_lora_dir_find(dir, name);
    if (!e) return batch_request_fail(r, path, "unknown adapter '%s' (not in %s)", name, dir->dir);
    el_adapter *a = cli_lora_dir_load(dir, e);
    if (!a) return batch_request_fail(r, path, "adapter '%s' cannot be used: %s", name, e->error);
    el_binding *more = realloc(r->bind, (size_t)(r->n_bind + 1) * sizeof *more);
    if (!more) return batch_request_fail(r, path, "out of memory");
    r->bind = more;
    r->bind[r->n_bind++] = (el_binding){.adapter = a, .scale = (float)scale};
    return true;
}

/* "adapter": null, "name", or [{"name": "a", "scale": 0.5}, ...] */
static bool get_adapters(batch_request *r, const char *path, const el_json_value *obj,
                         cli_lora_dir *dir) {
    const el_json_value *v = el_json_get(obj, "adapter");
    switch (el_json_type(v)) {
    case EL_JSON_NONE:
    case EL_JSON_NULL:
        return true;
    case EL_JSON_STRING:
        return add_binding(r, path, dir, el_json_str(v, NULL), 1.0);
    case EL_JSON_ARRAY:
        break;
    default:
        return batch_request_fail(r, path, "\"adapter\" must be a name or a list of "
                                           "{\"name\", \"scale\"}");
    }
    for (size_t i = 0; i < el_json_len(v); i++) {
        const el_json_value *a = el_json_at(v, i);
        if (el_json_type(a) != EL_JSON_OBJECT)
            return batch_request_fail(r, path, "\"adapter\"[%zu] must be an object "
                                               "{\"name\", \"scale\"}", i);
        for (size_t k = 0; k < el_json_len(a); k++) {
            const char *key = el_json_key_at(a, k, NULL);
            if (strcmp(key, "name") && strcmp(key, "scale"))
                return batch_request_fail(r, path, "\"adapter\"[%zu]: unknown field \"%s\"", i,
                                          key);
        }
        const char *name = el_json_str(el_json_get(a, "name"), NULL);
        if (!name)
            return batch_request_fail(r, path, "\"adapter\"[%zu] needs a \"name\" (a string)",
                                      i);
        double scale = 1.0;
        if (!get_num(r, path, a, "scale", -1e6, 1e6, &scale) ||
            !add_binding(r, path, dir, name, scale))
            return false;
    }
    return true;
}

static const char *const known_fields[] = {
    "id",    "prompt", "n_predict",      "temperature",   "top_k",      "top_p", "min_p",
    "seed",  "repeat_penalty", "repeat_last_n", "ignore_eos", "adapter", "n",
    "max_tokens", "stop", "speculative", "tree",
};

/* "stop": a string or a list of up to CLI_MAX_STOPS non-empty strings (OpenAI's form). */
static bool get_stops(batch_request *r, const char *path, const el_json_value *root) {
    const el_json_value *v = el_json_get(root, "stop");
    if (!v) return true;
    bool one = el_json_type(v) == EL_JSON_STRING;
    size_t n = one ? 1 : el_json_len(v);
    if ((!one && el_json_type(v) != EL_JSON_ARRAY) || n > CLI_MAX_STOPS)
        return batch_request_fail(r, path, "\"stop\" must be a string or a list of at most %d "
                                  "strings", CLI_MAX_STOPS);
    for (size_t i = 0; i < n; i++) {
        const el_json_value *e = one ? v : el_json_at(v, i);
        const char *s = el_json_type(e) == EL_JSON_STRING ? el_json_str(e, NULL) : NULL;
        if (!s || !*s)
            return batch_request_fail(r, path, "\"stop\" must be a string or a list of at most "
                                      "%d strings, none empty", CLI_MAX_STOPS);
        if (!(r->stops[r->n_stops] = strdup(s))) return batch_request_fail(r, path, "out of memory");
        r->n_stops++;
    }
    return true;
}

/* "speculative": true or false; "tree": "auto" or a list of widths [W1, W2, ...] (1..8 each, at
 * most EL_SPEC_MAX_DEPTH), as --tree gives them (the names and forms `serve` reads). */
static bool get_speculative(batch_request *r, const char *path, const el_json_value *root) {
    const el_json_value *v = el_json_get(root, "speculative");
    bool on;
    if (v && !el_json_bool(v, &on))
        return batch_request_fail(r, path, "\"speculative\" must be true or false");
    if (v) r->speculative = on;
    const el_json_value *t = el_json_get(root, "tree");
    if (!t) return true;
    if (!cli_spec_tree_json(t, &r->tree))
        return batch_request_fail(r, path, "\"tree\" must be \"auto\" or a list of 1 to %d "
                                  "widths (whole numbers 1..8)", EL_SPEC_MAX_DEPTH);
    r->tree_given = true;
    if (r->speculative == 0)
        return batch_request_fail(r, path, "\"tree\" asks for speculative decoding, which "
                                  "\"speculative\": false turns off");
    return true;
}

static bool parse_fields(batch_request *r, const char *path, const el_json_value *root,
                         cli_lora_dir *dir) {
    if (el_json_type(root) != EL_JSON_OBJECT)
        return batch_request_fail(r, path, "a request must be a JSON object, not %s",
                    el_json_kind_name(el_json_type(root)));
    const el_json_value *id = el_json_get(root, "id");
    if (id) {
        free(r->id_json);
        if (!(r->id_json = id_to_json(id))) return batch_request_fail(r, path, "out of memory");
    }
    for (size_t i = 0; i < el_json_len(root); i++) {
        const char *key = el_json_key_at(root, i, NULL);
        size_t k = 0, n = sizeof known_fields / sizeof known_fields[0];
        while (k < n && strcmp(key, known_fields[k])) k++;
        if (k == n) return batch_request_fail(r, path, "unknown field \"%s\"", key);
    }
    if (el_json_type(id) != EL_JSON_STRING && el_json_type(id) != EL_JSON_NUMBER)
        return batch_request_fail(r, path, "\"id\" (a string or a number) is missing");
    const el_json_value *p = el_json_get(root, "prompt");
    if (el_json_type(p) != EL_JSON_STRING)
        return batch_request_fail(r, path, "\"prompt\" (a string) is missing");
    const char *prompt = el_json_str(p, &r->prompt_len);
    if (!(r->prompt = malloc(r->prompt_len + 1)))
        return batch_request_fail(r, path, "out of memory");
    memcpy(r->prompt, prompt, r->prompt_len + 1);

    int64_t n_predict = r->n_predict, top_k = r->sp.top_k, last_n = r->sp.repeat_last_n,
            seed = (int64_t)(r->sp.seed & INT64_MAX), n_choices = 0;
    double temp = r->sp.temperature, top_p = r->sp.top_p, min_p = r->sp.min_p,
           penalty = r->sp.repeat_penalty;
    const el_json_value *ie = el_json_get(root, "ignore_eos");
    if (ie && !el_json_bool(ie, &r->ignore_eos))
        return batch_request_fail(r, path, "\"ignore_eos\" must be true or false");
    if (el_json_get(root, "n_predict") && el_json_get(root, "max_tokens"))
        return batch_request_fail(r, path, "give \"n_predict\" or \"max_tokens\", not both");
    if (!get_int(r, path, root, "n_predict", -1, 1 << 24, &n_predict) ||
        !get_int(r, path, root, "max_tokens", -1, 1 << 24, &n_predict) ||
        !get_stops(r, path, root) ||
        !get_float(r, path, root, "temperature", &temp) ||
        !get_int(r, path, root, "top_k", INT32_MIN, INT32_MAX, &top_k) ||
        !get_float(r, path, root, "top_p", &top_p) ||
        !get_float(r, path, root, "min_p", &min_p) ||
        !get_float(r, path, root, "repeat_penalty", &penalty) ||
        !get_int(r, path, root, "repeat_last_n", INT32_MIN, INT32_MAX, &last_n) ||
        !get_int(r, path, root, "seed", 0, INT64_MAX, &seed) ||
        !get_int(r, path, root, "n", 1, 64, &n_choices) ||
        !get_adapters(r, path, root, dir) || !get_speculative(r, path, root))
        return false;
    r->n_predict = (long)n_predict;
    r->n_choices = (int32_t)n_choices;
    if (r->n_choices > 0 && r->n_stops > 0)
        return batch_request_fail(r, path, "\"stop\" does not yet work with \"n\"");
    r->sp.temperature = (float)temp;
    r->sp.top_k = (int32_t)top_k;
    r->sp.top_p = (float)top_p;
    r->sp.min_p = (float)min_p;
    r->sp.repeat_penalty = (float)penalty;
    r->sp.repeat_last_n = (int32_t)last_n;
    if (el_json_get(root, "seed")) r->sp.seed = (uint64_t)seed;
    return true;
}

bool batch_request_parse(batch_request *r, const char *path, int line, const char *text,
                         size_t len, const el_sampler_params *sp, cli_lora_dir *dir) {
    *r = (batch_request){.line = line, .n_predict = 128, .sp = *sp, .speculative = -1};
    if (!(r->id_json = strdup("null"))) return false;
    el_json_doc *doc;
    if (el_json_parse_line(text, len, path, (size_t)line, &doc) != EL_OK) {
        r->error = strdup(el_last_error()); /* it is "path:LINE:COL: what" already */
    } else {
        parse_fields(r, path, el_json_root(doc), dir);
        el_json_free(doc);
    }
    return r->error || r->prompt;
}

static void write_key(FILE *out, const char *key) { fprintf(out, ",\"%s\":", key); }

void batch_request_write(FILE *out, const batch_request *r) {
    fprintf(out, "{\"id\":%s", r->id_json);
    if (r->error) {
        write_key(out, "error");
        el_json_write_string(out, r->error, strlen(r->error));
    } else if (r->n_choices > 0) {
        fputs(",\"choices\":[", out);
        for (int32_t i = 0; i < r->n_choices; i++) {
            const batch_choice *c = &r->choices[i];
            fprintf(out, "%s{\"index\":%d,\"text\":", i ? "," : "", i);
            el_json_write_string(out, c->text, strlen(c->text));
            fprintf(out, ",\"first_token_id\":%d,\"tokens_generated\":%d,\"finish_reason\":"
                         "\"%s\"}", c->first_token, c->n_tokens, c->finish);
        }
        fprintf(out, "],\"tokens_prompt\":%d,\"time_ms\":%.3f", r->n_prompt, r->time_ms);
    } else {
        write_key(out, "text");
        el_json_write_string(out, r->text, strlen(r->text));
        fprintf(out, ",\"tokens_prompt\":%d,\"tokens_generated\":%d,\"time_ms\":%.3f,"
                     "\"finish_reason\":\"%s\"",
                r->n_prompt, r->n_tokens - r->n_prompt, r->time_ms, r->finish);
    }
    fputs("}\n", out);
}

void batch_request_free(batch_request *r) {
    free(r->id_json);
    free(r->error);
    free(r->prompt);
    free(r->bind);
    free(r->tokens);
    free(r->text);
    for (int i = 0; i < r->n_stops; i++) free(r->stops[i]);
    for (int32_t i = 0; r->choices && i < r->n_choices; i++) free(r->choices[i].text);
    free(r->choices);
    *r = (batch_request){0};
}
