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

#include "edgelora-tools.h"

#define EL_JSON_MAX_DEPTH 64

/* The parser's and writer's functions are declared in edgelora-tools.h (section "json"): the
 * tools' request-file reader, with which the CLI reads JSON and JSONL requests. */

/* true if s[0..len) is valid UTF-8 (what a JSON string may hold once unescaped). */
bool el_json_valid_utf8(const char *s, size_t len);

#endif
