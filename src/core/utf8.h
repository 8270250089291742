/* utf8.h - strict UTF-8 decoding and encoding, shared by the JSON parser and the tokenizers. */
#ifndef EL_CORE_UTF8_H
#define EL_CORE_UTF8_H

#include <stddef.h>
#include <stdint.h>

#define EL_UNICODE_MAX 0x10FFFFu
#define EL_UNICODE_REPLACEMENT 0xFFFDu

/* Decodes the code point at the start of s (len > 0) and returns the number of bytes it takes.
 * Input is checked strictly (no overlong forms, surrogates or values above U+10FFFF, no
 * truncated sequences): an invalid byte decodes on its own, as U+FFFD with length 1, so that
 * every byte of any input belongs to exactly one code point. (A real U+FFFD has length 3.) */
size_t el_utf8_decode(const char *s, size_t len, uint32_t *cp);

/* Writes the UTF-8 form of cp to out and returns its length (1-4), or 0 if cp is a surrogate
 * or above U+10FFFF. */
size_t el_utf8_encode(uint32_t cp, char out[4]);

/* The length a UTF-8 sequence announces by its first byte (1 for a continuation or invalid
 * byte): how a tokenizer steps over text that is already known to be valid. */
size_t el_utf8_seq_len(unsigned char first);

/* The length of the valid UTF-8 sequence at the start of s (len > 0), or 0 if it is not one. */
size_t el_utf8_valid_len(const char *s, size_t len);

#endif
