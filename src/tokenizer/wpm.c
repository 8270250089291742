/* wpm.c - BERT WordPiece. */
#include "core/error.h"
#include "tokenizer/vocab.h"

el_status el_wpm_tokenize(const el_vocab *v, const char *text, size_t len, el_tokens *out) {
    return el_error(EL_ERR_UNSUPPORTED, "WordPiece: not implemented yet");
}
