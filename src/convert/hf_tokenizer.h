/* hf_tokenizer.h - a Hugging Face tokenizer.json (+ tokenizer_config.json) as GGUF
 * tokenizer.ggml.* keys, as llama.cpp's converter writes them. */
#ifndef EL_CONVERT_HF_TOKENIZER_H
#define EL_CONVERT_HF_TOKENIZER_H

#include "convert/hf_model.h"
#include "formats/gguf.h"

/* Reads dir/tokenizer.json and, if present, dir/tokenizer_config.json, and sets the tokenizer
 * keys on w. Byte-level BPE becomes "gpt2" with merges and the pre-tokenizer named after the
 * pre_tokenizer's regex (an unknown one is an error, never a guess); BPE with byte_fallback
 * (Llama-2 / Mistral style, "▁" pieces) becomes "llama" with scores that rank pieces in merge
 * order. Ids missing from the vocabulary up to c->n_vocab become [PAD<id>] tokens (UNUSED).
 * c->bos / c->eos are used when tokenizer_config.json does not name those tokens. */
el_status el_hf_tokenizer_convert(const char *dir, const el_hf_config *c, gguf_writer *w);

#endif
