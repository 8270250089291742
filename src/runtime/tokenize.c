/* tokenize.c - the tokenizer calls of the public API, over the model's el_vocab. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"

static el_status need_vocab(const el_model *m, const char *fn) {
    if (!m)
        return el_error(EL_ERR_INVALID_ARG, "%s: NULL model", fn);
    if (!m->vocab)
        return el_error(EL_ERR_INVALID_ARG, "%s: %s has no vocabulary (for a llama2.c checkpoint, "
                        "give a tokenizer_path)", fn, m->path);
    return EL_OK;
}

el_status el_tokenize(const el_model *model, const char *text, size_t len, bool add_special,
                      bool parse_special, int32_t *tokens, size_t cap, size_t *n_tokens) {
    el_status st = need_vocab(model, "el_tokenize");
    if (st)
        return st;
    if ((!text && len) || !n_tokens || (!tokens && cap))
        return el_error(EL_ERR_INVALID_ARG, "el_tokenize: NULL argument");
    el_tokens out = {0};
    st = el_vocab_tokenize(model->vocab, text ? text : "", len, add_special, parse_special, &out);
    if (st) {
        el_tokens_free(&out);
        return st;
    }
    *n_tokens = out.n;
    if (out.n > cap) {
        el_tokens_free(&out);
        return el_error(EL_ERR_INVALID_ARG, "el_tokenize: %zu tokens do not fit in %zu", out.n,
                        cap);
    }
    if (out.n)
        memcpy(tokens, out.ids, out.n * sizeof *tokens);
    el_tokens_free(&out);
    return EL_OK;
}

el_status el_token_to_piece(const el_model *model, int32_t token, bool render_special, char *buf,
                            size_t cap, size_t *len) {
    el_status st = need_vocab(model, "el_token_to_piece");
    if (st)
        return st;
    if (!len || (!buf && cap))
        return el_error(EL_ERR_INVALID_ARG, "el_token_to_piece: NULL argument");
    if (token < 0 || token >= model->vocab->n_tokens)
        return el_error(EL_ERR_INVALID_ARG, "el_token_to_piece: token %d out of range (%d tokens)",
                        token, model->vocab->n_tokens);
    return el_vocab_token_to_piece(model->vocab, token, render_special, buf, cap, len);
}

el_status el_detokenize(const el_model *model, const int32_t *tokens, size_t n, bool render_special,
                        bool remove_leading_space, char **text) {
    el_status st = need_vocab(model, "el_detokenize");
    if (st)
        return st;
    if (!text || (!tokens && n))
        return el_error(EL_ERR_INVALID_ARG, "el_detokenize: NULL argument");
    *text = NULL;
    size_t cap = 64, used = 0;
    bool strip = remove_leading_space && model->vocab->kind == EL_VOCAB_SPM &&
                 model->vocab->add_space_prefix;
    char *out = malloc(cap);
    if (!out)
        return el_error(EL_ERR_NOMEM, "el_detokenize: out of memory");
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        st = el_token_to_piece(model, tokens[i], render_special, out + used, cap - used - 1, &len);
        if (st == EL_ERR_INVALID_ARG && len > cap - used - 1 && tokens[i] >= 0 &&
            tokens[i] < model->vocab->n_tokens) {
            while (cap - used - 1 < len)
                cap *= 2;
            char *p = realloc(out, cap);
            if (!p) {
                free(out);
                return el_error(EL_ERR_NOMEM, "el_detokenize: out of memory");
            }
            out = p;
            st = el_token_to_piece(model, tokens[i], render_special, out + used, cap - used - 1,
                                   &len);
        }
        if (st) {
            free(out);
            return st;
        }
        /* SentencePiece put a space before the text: drop it from the first token after any
         * leading control tokens (BOS), and from that token only, as the tokenizer added one */
        bool control = model->vocab->tokens[tokens[i]].type == EL_TOKEN_CONTROL;
        if (strip && !control) {
            strip = false;
            if (len > 0 && out[used] == ' ') {
                memmove(out + used, out + used + 1, len - 1);
                len--;
            }
        }
        used += len;
    }
    out[used] = '\0';
    *text = out;
    return EL_OK;
}

int32_t el_token_bos(const el_model *model) {
    return model && model->vocab ? model->vocab->bos : -1;
}

bool el_token_adds_bos(const el_model *model) {
    return model && model->vocab && model->vocab->bos >= 0 && model->vocab->add_bos;
}

int32_t el_token_eos(const el_model *model) {
    return model && model->vocab ? model->vocab->eos : -1;
}

bool el_token_is_eog(const el_model *model, int32_t token) {
    if (!model || !model->vocab || token < 0)
        return false;
    const el_vocab *v = model->vocab;
    return token == v->eos || token == v->eot;
}
