/* fuzz_serve_request.c - libFuzzer entry point: the request parser of `edgelora serve`
 * (cli/serve_request.c) on arbitrary bodies, as completions and as chat requests. A body is
 * accepted with every field within its documented range, or refused with an HTTP status and a
 * message; either way nothing leaks (the sanitizers check) and a second parse agrees. */
#include <stdint.h>
#include <string.h>

#include "../../cli/serve_request.h"

static void check_params(const serve_params *p) {
    if (p->n < 1 || p->n > SERVE_MAX_N || p->n_stops > SERVE_MAX_STOPS ||
        p->n_adapters > SERVE_MAX_ADAPTERS || p->logprobs < -1 ||
        p->logprobs > SERVE_MAX_LOGPROBS || p->sp.temperature < 0 || p->sp.temperature > 2 ||
        p->sp.top_p < 0 || p->sp.top_p > 1 || p->max_tokens < -1)
        __builtin_trap();
    if (p->kind == SERVE_COMPLETION ? !p->prompt : p->n_messages == 0) __builtin_trap();
    for (size_t i = 0; i < p->n_messages; i++)
        if (!p->messages[i].role || !p->messages[i].content) __builtin_trap();
    for (int i = 0; i < p->n_stops; i++)
        if (!p->stops[i][0]) __builtin_trap();
    /* a tree is "auto" or 1..EL_SPEC_MAX_DEPTH widths of 1..8, and never with speculation off */
    if (p->speculative < -1 || p->speculative > 1 || (p->tree_given && p->speculative == 0))
        __builtin_trap();
    if (p->tree_given && !p->tree.tree_auto &&
        (p->tree.n_depth < 1 || p->tree.n_depth > EL_SPEC_MAX_DEPTH))
        __builtin_trap();
    for (int32_t d = 0; p->tree_given && !p->tree.tree_auto && d < p->tree.n_depth; d++)
        if (p->tree.width[d] < 1 || p->tree.width[d] > 8) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (int k = 0; k < 2; k++) {
        serve_kind kind = k ? SERVE_CHAT : SERVE_COMPLETION;
        serve_params p, q;
        serve_error e, f;
        bool ok = serve_params_parse(&p, kind, (const char *)data, size, &e);
        bool again = serve_params_parse(&q, kind, (const char *)data, size, &f);
        if (ok != again) __builtin_trap();
        if (ok) {
            check_params(&p);
            serve_params_free(&p);
            serve_params_free(&q);
        } else if (e.status < 400 || e.status > 599 || !e.message[0] || !e.type ||
                   strcmp(e.message, f.message)) {
            __builtin_trap();
        }
    }
    return 0;
}
