/* json.h - a strict RFC 8259 JSON parser into a read-only tree, and a string writer.
 *
 * Used at run time for safetensors headers, PEFT adapter_config.json and sharded-model indexes,
 * so it must be small, strict and safe on any input:
 *  - Grammar exactly as RFC 8259: no comments, trailing commas, single quotes, leading zeros,
 *    NaN/Infinity, unescaped control characters or bad escapes. Any value may be the root.
 *    A leading UTF-8 byte order mark is skipped; any other non-whitespace after the root is an
 *    error. Whitespace is space, tab, LF and CR.
 *  - Strings must be valid UTF-8 (no overlong forms, no encoded surrogates, nothing above
 *    U+10FFFF). Escapes are decoded to UTF-8; \uXXXX surrogate pairs combine into one code point.
 *    A lone surrogate escape (e.g. "\uD800" or "\uDC00") is an ERROR, not U+FFFD: a file that
 *    contains one was not written by a correct UTF-8 JSON writer. "\u0000" is allowed; such a
 *    string's length counts the NUL byte.
 *  - Numbers are kept as the nearest double. A literal without fraction or exponent whose value
 *    fits int64 is also kept exactly (safetensors offsets exceed 2^53). A literal whose
 *    magnitude overflows a double (e.g. 1e400) is an error.
 *  - Nesting deeper than EL_JSON_MAX_DEPTH arrays/objects is an error.
 *  - Duplicate object keys are accepted; el_json_get returns the LAST one (as JavaScript does).
 *    Formats where a duplicate matters (tensor names) check for them themselves.
 *  - Errors return EL_ERR_FORMAT with "name:line:column: what was expected, what was found"
 *    (line and column count from 1; the column counts bytes).
 *  - Memory: one allocation per document, sized before parsing: len+1 bytes for all strings and
 *    a 40-byte slot per possible value (one per '[', '{' and ',' outside strings, plus one), so
 *    at most ~41 x the input size however hostile the input. Inputs of 4 GiB or more are refused.
 * A parsed document is read-only and may be shared between threads. */
#ifndef EL_FORMATS_JSON_H
#define EL_FORMATS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "edgelora.h"

#define EL_JSON_MAX_DEPTH 64

typedef enum el_json_kind {
    EL_JSON_NONE = 0, /* what el_json_type(NULL) says: a missing key or index */
    EL_JSON_NULL,
    EL_JSON_BOOL,
    EL_JSON_NUMBER,
    EL_JSON_STRING,
    EL_JSON_ARRAY,
    EL_JSON_OBJECT,
} el_json_kind;

typedef struct el_json_doc el_json_doc;
typedef struct el_json_value el_json_value;

/* Parses text[0..len) (it need not be NUL-terminated). name (usually the file path) starts every
 * error message. On success *out owns the tree; free it with el_json_free. */
el_status el_json_parse(const char *text, size_t len, const char *name, el_json_doc **out);
void el_json_free(el_json_doc *doc);
const el_json_value *el_json_root(const el_json_doc *doc);

/* Every accessor accepts NULL (and values of the wrong type) and then returns NONE, NULL, 0 or
 * false, so that lookups chain: el_json_get(el_json_get(root, "a"), "b"). */
el_json_kind el_json_type(const el_json_value *v);
const char *el_json_kind_name(el_json_kind t); /* "string", "object", ... for messages */
/* Member of an object by key (the last one if the key is duplicated), or NULL. */
const el_json_value *el_json_get(const el_json_value *obj, const char *key);
/* Number of elements of an array or members of an object; 0 for anything else. */
size_t el_json_len(const el_json_value *v);
/* i-th element of an array, or the value of the i-th member of an object (in file order). */
const el_json_value *el_json_at(const el_json_value *v, size_t i);
/* Key of the i-th member of an object (NUL-terminated; *len, if given, is its byte length). */
const char *el_json_key_at(const el_json_value *obj, size_t i, size_t *len);
/* A string's unescaped UTF-8 bytes, NUL-terminated; *len, if given, is the byte length. */
const char *el_json_str(const el_json_value *v, size_t *len);
/* true and *out set if v is a number written as an integer literal that fits int64. */
bool el_json_int(const el_json_value *v, int64_t *out);
/* true and *out set if v is a number (the nearest double to the literal). */
bool el_json_num(const el_json_value *v, double *out);
/* true and *out set if v is true or false. */
bool el_json_bool(const el_json_value *v, bool *out);

/* Writes s[0..len) as a quoted JSON string: '"' and '\' escaped, control characters as \n, \t,
 * ... or \u00XX, valid UTF-8 copied as is, each byte of invalid UTF-8 as \ufffd. Returns EL_OK or
 * EL_ERR_IO if the stream reports an error. */
el_status el_json_write_string(FILE *f, const char *s, size_t len);

/* true if s[0..len) is valid UTF-8 (what a JSON string may hold once unescaped). */
bool el_json_valid_utf8(const char *s, size_t len);

#endif
