/* pretokenize.h - splitting text into words before byte-level BPE merges them, as selected by
 * GGUF's tokenizer.ggml.pre.
 *
 * Each pre-tokenizer is the list of regular expressions its model's tokenizer.json defines (as
 * llama.cpp applies them: each expression splits every piece left by the previous one into its
 * matches and the unmatched text between them). We implement every expression by a hand-written
 * matcher instead of a regex engine: the set is small and fixed, the matchers run in linear
 * time on any input, and each one says exactly which regex it stands for. */
#ifndef EL_TOKENIZER_PRETOKENIZE_H
#define EL_TOKENIZER_PRETOKENIZE_H

#include <stdbool.h>
#include <stddef.h>

#include "edgelora.h"

typedef struct el_pretok el_pretok;

/* The pre-tokenizer for a tokenizer.ggml.pre name; EL_ERR_UNSUPPORTED (naming it) if unknown. */
el_status el_pretok_find(const char *name, const el_pretok **out);
/* Whether a word that is itself a token skips the merges (llama3's tokenizer.json sets
 * "ignore_merges"; with merges it could come out as several tokens). */
bool el_pretok_ignore_merges(const el_pretok *p);
/* Whether the models of this family start every text with BOS when the file does not say
 * (llama.cpp's rule for Llama 3, whose converted files often lack tokenizer.ggml.add_bos_token:
 * its tokenizer.json adds BOS in a post-processor, not with a flag). */
bool el_pretok_bos_by_default(const el_pretok *p);

/* The words of a text, as the byte offset where each one ends (words are contiguous, non-empty
 * and cover the text). */
typedef struct el_words {
    size_t *ends;
    size_t n, cap;
} el_words;

/* Splits text (any bytes: an invalid UTF-8 byte counts as one U+FFFD, and its byte is kept) into
 * words, replacing the contents of out. */
el_status el_pretok_split(const el_pretok *p, const char *text, size_t len, el_words *out);
void el_words_free(el_words *w);

#endif
