/* bpe.c - byte-level BPE (GPT-2 style): merges, pre-tokenization, byte-to-unicode mapping.
 * Stub for now so that the rest of the tokenizer links; the real implementation follows. */
#include "core/error.h"
#include "tokenizer/vocab.h"

el_status el_bpe_load(el_vocab *v, const gguf_file *f)
{
    (void)v;
    return el_error(EL_ERR_UNSUPPORTED, "%s: BPE tokenizer not implemented yet", f->path);
}

el_status el_bpe_tokenize(const el_vocab *v, const char *text, size_t len, el_tokens *out)
{
    (void)v, (void)text, (void)len, (void)out;
    return el_error(EL_ERR_UNSUPPORTED, "BPE tokenizer not implemented yet");
}

el_status el_bpe_token_to_piece(const el_vocab *v, int32_t id, char *buf, size_t cap, size_t *len)
{
    (void)v, (void)id, (void)buf, (void)cap, (void)len;
    return el_error(EL_ERR_UNSUPPORTED, "BPE tokenizer not implemented yet");
}
