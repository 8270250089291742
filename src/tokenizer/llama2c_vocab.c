/* llama2c_vocab.c - the vocabulary of a llama2.c tokenizer.bin (read by formats/llama2c.c).
 *
 * Its pieces hold real spaces (no U+2581). run.c's conventions are fixed, not stored: 0 is
 * <unk>, 1 is BOS ("\n<s>\n"), 2 is EOS ("\n</s>\n"), and the byte tokens are "<0xNN>" (3 + NN).
 * run.c's encoder is SentencePiece BPE with a space before the text and byte fallback, which is
 * what el_spm_tokenize does with escape_spaces off. */
#include <string.h>

#include "core/error.h"
#include "formats/llama2c.h"
#include "tokenizer/vocab.h"
#include "tokenizer/vocab_build.h"

static bool is_byte_piece(const el_token_data *t) {
    return t->len == 6 && memcmp(t->text, "<0x", 3) == 0 && t->text[5] == '>';
}

static el_status llama2c_build(const llama2c_tokenizer *tk, el_vocab **out) {
    size_t text_bytes = 0;
    for (int32_t i = 0; i < tk->n_tokens; i++) text_bytes += tk->tokens[i].len + 1;
    el_vocab *v = NULL;
    el_status st = el_vocab_new(EL_VOCAB_SPM, tk->n_tokens, text_bytes, &v);
    if (st != EL_OK) return st;
    size_t used = 0;
    for (int32_t i = 0; i < tk->n_tokens; i++) {
        el_token_data *t = &v->tokens[i];
        el_vocab_set_text(v, i, tk->tokens[i].text, tk->tokens[i].len, &used);
        t->score = tk->tokens[i].score;
        if (i == 0) t->type = EL_TOKEN_UNKNOWN;
        else if (i <= 2) t->type = EL_TOKEN_CONTROL;
        else if (is_byte_piece(t)) t->type = EL_TOKEN_BYTE;
    }
    v->unk = 0;
    v->bos = 1;
    v->eos = 2;
    v->add_bos = true;
    v->add_eos = false;
    v->add_space_prefix = true;
    v->escape_spaces = false;
    st = el_vocab_index(v);
    if (st != EL_OK) {
        el_vocab_free(v);
        return st;
    }
    *out = v;
    return EL_OK;
}

el_status el_vocab_load_llama2c(const char *path, int32_t n_vocab, el_vocab **out) {
    *out = NULL;
    llama2c_tokenizer *tk;
    el_status st = llama2c_tokenizer_open(path, &tk);
    if (st != EL_OK) return st;
    if (tk->n_tokens != n_vocab) {
        st = el_error(EL_ERR_MISMATCH, "%s: the tokenizer has %d tokens, the checkpoint %d", path,
                      (int)tk->n_tokens, (int)n_vocab);
    } else if (n_vocab < 3) {
        st = el_error(EL_ERR_FORMAT, "%s: %d tokens are too few (BOS and EOS are 1 and 2)", path,
                      (int)n_vocab);
    } else {
        st = llama2c_build(tk, out);
    }
    llama2c_tokenizer_close(tk);
    return st;
}
