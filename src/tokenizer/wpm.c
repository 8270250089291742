/* wpm.c - BERT WordPiece, as llama.cpp runs it on GGUF BERT vocabularies.
 *
 * Normalization (BERT's "uncased" basic tokenizer): whitespace ends a word; NUL, U+FFFD (and so
 * every invalid byte) and control/format characters are dropped; every character is decomposed
 * (NFD), its combining marks (Mn) dropped, and lowercased; punctuation, ASCII symbols and CJK
 * ideographs are words of their own.
 *
 * llama.cpp's converter stores a word-initial piece "x" as "▁x" and a continuation "##x" as
 * "x", so each word is matched as "▁" + word: greedy longest match first from left to right;
 * a word with any part that matches nothing becomes one UNK. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

#define WPM_WORD_START "\xE2\x96\x81" /* U+2581 */

/* The CJK ideograph blocks of BERT's _is_chinese_char. */
static bool wpm_is_cjk(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* A code point that is a word by itself. */
static bool wpm_is_split(uint32_t cp) {
    unsigned c = el_unicode_class(cp);
    return (c & EL_UC_PUNCT) || (cp < 0x7F && (c & EL_UC_SYMBOL)) || wpm_is_cjk(cp);
}

static bool wpm_is_dropped(uint32_t cp) {
    if (cp == 0 || cp == EL_UNICODE_REPLACEMENT) return true;
    el_ugc g = el_unicode_category(cp);
    return g == EL_UGC_CC || g == EL_UGC_CF || g == EL_UGC_CO || g == EL_UGC_CS;
}

/* The word being collected: "▁" then its normalized UTF-8. */
typedef struct wpm_word {
    char *buf;
    size_t n, cap;
} wpm_word;

static el_status word_append(wpm_word *w, uint32_t cp) {
    if (w->n + 4 > w->cap) {
        size_t cap = w->cap * 2 + 64;
        char *b = realloc(w->buf, cap);
        if (!b) return el_error(EL_ERR_NOMEM, "tokenize: out of memory");
        w->buf = b;
        w->cap = cap;
    }
    w->n += el_utf8_encode(cp, w->buf + w->n);
    return EL_OK;
}

static const size_t word_start_len = sizeof WPM_WORD_START - 1;

/* Tokenizes the collected word (if any) and starts a new one. */
static el_status wpm_flush(const el_vocab *v, wpm_word *w, el_tokens *out) {
    size_t n = w->n;
    w->n = word_start_len;
    if (n == word_start_len) return EL_OK;
    size_t n0 = out->n;
    el_status st;
    for (size_t i = 0; i < n;) {
        size_t j = n - i > v->max_token_len ? i + v->max_token_len : n;
        int32_t id = -1;
        for (; j > i; j--) {
            id = el_str_index_get(&v->token_to_id, w->buf + i, j - i);
            if (id >= 0) break;
        }
        if (id < 0) {
            out->n = n0; /* the whole word is unknown */
            break;
        }
        if ((st = el_tokens_push(out, id)) != EL_OK) return st;
        i = j;
    }
    if (out->n == n0) {
        if (v->unk < 0) {
            return el_error(EL_ERR_UNSUPPORTED,
                            "tokenize: a word has no tokens and the vocabulary no unknown token");
        }
        return el_tokens_push(out, v->unk);
    }
    return EL_OK;
}

/* Adds one normalized code point: a split character is flushed as a word of its own. */
static el_status wpm_add(const el_vocab *v, wpm_word *w, uint32_t cp, el_tokens *out) {
    el_status st;
    if (wpm_is_split(cp)) {
        if ((st = wpm_flush(v, w, out)) != EL_OK) return st;
        if ((st = word_append(w, cp)) != EL_OK) return st;
        return wpm_flush(v, w, out);
    }
    return word_append(w, cp);
}

el_status el_wpm_tokenize(const el_vocab *v, const char *text, size_t len, el_tokens *out) {
    wpm_word w = {.buf = malloc(64), .cap = 64};
    if (!w.buf) return el_error(EL_ERR_NOMEM, "tokenize: out of memory");
    el_status st = EL_OK;
    memcpy(w.buf, WPM_WORD_START, word_start_len);
    w.n = word_start_len;
    for (size_t i = 0; st == EL_OK && i < len;) {
        uint32_t cp;
        i += el_utf8_decode(text + i, len - i, &cp);
        if (el_unicode_is_space(cp)) {
            st = wpm_flush(v, &w, out);
            continue;
        }
        if (wpm_is_dropped(cp)) continue;
        uint32_t parts[EL_UNICODE_MAX_DECOMP];
        size_t n = el_unicode_decompose(cp, parts);
        for (size_t k = 0; st == EL_OK && k < n; k++) {
            if (el_unicode_category(parts[k]) == EL_UGC_MN) continue; /* accents */
            st = wpm_add(v, &w, el_unicode_tolower(parts[k]), out);
        }
    }
    if (st == EL_OK) st = wpm_flush(v, &w, out);
    free(w.buf);
    return st;
}
