/* ctg_text.c - a variant's text as it grows: stop strings and streaming.
 *
 * The text of a variant is the text of its whole sequence (prompt and continuation) minus the
 * prompt's text, so it reads exactly as it would after the prompt in a plain run (a detokenizer
 * joins pieces, so the prompt's text is a prefix of the whole). Streaming hands out text only once
 * it can no longer be cut by a stop string. A model without a vocabulary (a GGUF with no tokenizer)
 * gives tokens and no text. */
#include <string.h>
#include <stdlib.h>

#include "core/error.h"
#include "model/model.h"
#include "runtime/ctg.h"

static char *text_of(const el_variants *g, const ctg_variant *v) {
    return v->full + g->prompt_text_len;
}

/* Hands text[emitted .. upto) to the callback. */
static void emit(el_variants *g, int32_t i, size_t upto) {
    ctg_variant *v = &g->v[i];
    if (upto > v->emitted && g->on_text)
        g->on_text(g->user, i, text_of(g, v) + v->emitted, upto - v->emitted);
    if (upto > v->emitted)
        v->emitted = upto;
}

/* The earliest start of a stop string that ends after byte `from` of the text, or -1. */
static long find_stop(const el_variants *g, const ctg_variant *v, size_t from) {
    const char *text = text_of(g, v);
    long best = -1;
    for (int32_t s = 0; s < v->p.n_stop; s++) {
        size_t m = strlen(v->stop[s]);
        size_t start = from >= m ? from - m + 1 : 0;
        if (start + m > v->text_len)
            continue;
        const char *hit = memmem(text + start, v->text_len - start, v->stop[s], m);
        if (hit && (best < 0 || hit - text < best))
            best = hit - text;
    }
    return best;
}

/* Bytes at the end of the text that begin some stop string (they may still become one). */
static size_t held_back(const el_variants *g, const ctg_variant *v) {
    const char *text = text_of(g, v);
    size_t most = v->text_len - v->emitted;
    if (most > v->stop_max - 1)
        most = v->stop_max - 1;
    for (size_t k = most; k > 0; k--)
        for (int32_t s = 0; s < v->p.n_stop; s++)
            if (strlen(v->stop[s]) > k && !memcmp(text + v->text_len - k, v->stop[s], k))
                return k;
    return 0;
}

void ctg_finish(el_variants *g, int32_t i, el_finish reason) {
    g->v[i].finish = reason;
    emit(g, i, g->v[i].text_len);
}

el_status ctg_add_token(el_variants *g, int32_t i, int32_t token) {
    ctg_variant *v = &g->v[i];
    v->seq[g->n_prompt + v->n_tokens++] = token;
    el_sampler_accept(v->smp, token);
    if (!g->model->vocab) { /* a model without a vocabulary: tokens, no text */
        if (v->n_tokens >= v->p.max_tokens)
            ctg_finish(g, i, EL_FINISH_LENGTH);
        return EL_OK;
    }
    char *full;
    el_status st = el_detokenize(g->model, v->seq, (size_t)(g->n_prompt + v->n_tokens), false,
                                 true, &full);
    if (st)
        return st;
    size_t len = strlen(full), old = v->text_len;
    free(v->full);
    v->full = full;
    v->text_len = len > g->prompt_text_len ? len - g->prompt_text_len : 0;
    long stop = v->p.n_stop > 0 ? find_stop(g, v, old) : -1;
    if (stop >= 0) {
        v->text_len = (size_t)stop;
        text_of(g, v)[stop] = '\0';
        ctg_finish(g, i, EL_FINISH_STOP);
    } else if (v->n_tokens >= v->p.max_tokens) {
        ctg_finish(g, i, EL_FINISH_LENGTH);
    } else {
        emit(g, i, v->text_len - (v->p.n_stop > 0 ? held_back(g, v) : 0));
    }
    return EL_OK;
}
