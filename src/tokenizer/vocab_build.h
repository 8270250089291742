/* vocab_build.h - internal to the tokenizer: the steps every vocabulary loader shares (GGUF in
 * vocab.c, llama2.c's tokenizer.bin in llama2c_vocab.c) and a lookup the tokenizers share. */
#ifndef EL_TOKENIZER_VOCAB_BUILD_H
#define EL_TOKENIZER_VOCAB_BUILD_H

#include "tokenizer/vocab.h"

/* A vocabulary of n_tokens empty NORMAL tokens (score 0) with text_bytes of storage for their
 * texts, every special id -1. The loader fills the tokens with el_vocab_set_text. */
el_status el_vocab_new(el_vocab_kind kind, int32_t n_tokens, size_t text_bytes, el_vocab **out);
/* Copies text into the storage as token id's text; the storage must have len + 1 bytes left
 * at *used, which advances. */
void el_vocab_set_text(el_vocab *v, int32_t id, const char *text, size_t len, size_t *used);
/* Once tokens, types and special ids (each absent or in range) are set: builds the
 * text->id map, the list of special tokens and the newline token. */
el_status el_vocab_index(el_vocab *v);

/* The token that stands for byte b: "<0xNN>" if the vocabulary has it, else the one-byte text,
 * else -1. Needs the text->id map. */
int32_t el_vocab_byte_token(const el_vocab *v, unsigned char b);

#endif
