/* serve_prune.c - GET and POST /v1/prune: the pruning rate of a UniQL compressed model read
 * and changed while serving (docs/serve.md). A new rate applies to the requests admitted after
 * it; the ones in flight finish at theirs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

/* {"object": "prune", "rate", "rates": [...], "weight_bytes"} for the rate new requests take. */
static char *state_json(serve_server *sv, float rate) {
    const float *rates = NULL;
    int32_t n = el_model_prune_rates(sv->model, &rates);
    uint64_t bytes = 0;
    el_model_prune_bytes(sv->model, rate, &bytes);
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    fprintf(f, "{\"object\":\"prune\",\"rate\":%g,\"rates\":[", (double)rate);
    for (int32_t i = 0; i < n; i++) fprintf(f, "%s%g", i ? "," : "", (double)rates[i]);
    fprintf(f, "],\"weight_bytes\":%llu}", (unsigned long long)bytes);
    return serve_memstream_close(f, &buf);
}

char *serve_prune_get(serve_server *sv) {
    serve_stats st;
    serve_sched_get_stats(sv->sched, &st);
    return state_json(sv, st.prune_rate);
}

/* The table rate `rate` rounds up to, or false with e set (the message names the range). */
static bool table_rate(serve_server *sv, float rate, float *out, serve_error *e) {
    const float *rates;
    int32_t n = el_model_prune_rates(sv->model, &rates);
    for (int32_t i = 0; i < n; i++)
        if (rates[i] >= rate) {
            *out = rates[i];
            return true;
        }
    return serve_error_set(e, 400, "invalid_request_error", "invalid_value",
                           "rate %g is outside the model's table (0 to %g)", (double)rate,
                           (double)rates[n - 1]);
}

char *serve_prune_post(serve_server *sv, const char *body, size_t len, serve_error *e) {
    if (el_model_prune_rates(sv->model, &(const float *){NULL}) == 0) {
        serve_error_set(e, 400, "invalid_request_error", "not_compressed",
                        "the model is not a UniQL compressed model (edgelora compress): it has "
                        "no pruning rates");
        return NULL;
    }
    el_json_doc *doc;
    if (el_json_parse(body ? body : "", len, "the request body", &doc) != EL_OK) {
        serve_error_set(e, 400, "invalid_request_error", "invalid_json", "%s", el_last_error());
        return NULL;
    }
    const el_json_value *root = el_json_root(doc);
    const el_json_value *r = el_json_get(root, "rate"), *b = el_json_get(root, "mem_budget");
    const char *word = el_json_str(b, NULL);
    double rate = 0, bytes = 0;
    bool ok = el_json_type(root) == EL_JSON_OBJECT && el_json_len(root) == 1 &&
              (r ? el_json_num(r, &rate) && rate >= 0 && rate < 1
                 : b && (word ? !strcmp(word, "auto")
                              : el_json_num(b, &bytes) && bytes >= 1 && bytes < 1.8e19 &&
                                    bytes == floor(bytes)));
    if (!ok)
        serve_error_set(e, 400, "invalid_request_error", "invalid_value",
                        "the body must be {\"rate\": R} (0 <= R < 1) or {\"mem_budget\": BYTES "
                        "or \"auto\"}");
    float chosen = 0;
    if (ok && b) {
        /* the smallest rate whose weights and this server's KV cache fit */
        uint64_t budget = (uint64_t)bytes;
        el_context_params cp = el_context_default_params();
        cp.n_ctx = sv->n_ctx;
        cp.kv_type = sv->kv_type;
        el_status st = word ? el_mem_available(&budget) : EL_OK;
        if (st == EL_OK) st = el_model_prune_fit(sv->model, &cp, budget, &chosen);
        if (st != EL_OK)
            ok = serve_error_set(e, 400, "invalid_request_error", "budget_too_small", "%s",
                                 el_last_error());
    } else if (ok) {
        ok = table_rate(sv, (float)rate, &chosen, e);
    }
    el_json_free(doc);
    if (!ok) return NULL;
    serve_sched_set_prune(sv->sched, chosen);
    char *json = state_json(sv, chosen);
    if (!json) serve_error_set(e, 500, "server_error", "out_of_memory", "out of memory");
    return json;
}
