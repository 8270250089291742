/* bpe.c - byte-level BPE (GPT-2 style): merges, pre-tokenization, byte-to-unicode mapping.
 *
 * Text is split into words by the pre-tokenizer of tokenizer.ggml.pre. Every byte of a word
 * becomes one visible character (GPT-2's bytes_to_unicode), each character a symbol, and the
 * adjacent pair with the lowest merge rank (leftmost among equals) is merged until no pair has
 * a rank. Each final symbol is a token of the vocabulary.
 *
 * Invalid UTF-8 is tokenized byte for byte (the pre-tokenizer classes an invalid byte as U+FFFD
 * but keeps the byte), so decoding gives the input back. llama.cpp instead puts the three bytes
 * of U+FFFD in its place; valid text gets the same tokens either way. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/log.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

/* ---------------------------------------------------------------- byte <-> character */

/* GPT-2's bytes_to_unicode: the printable Latin-1 bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF)
 * stand for themselves; the other 68 (0x00..0x20, 0x7F..0xA0, 0xAD), in byte order, become
 * U+0100..U+0143. So a space is 'Ġ' (U+0120) and a newline 'Ċ' (U+010A). */
static uint32_t bpe_byte_to_cp(unsigned char b) {
    if (b <= 0x20) return 0x100 + b;
    if (b >= 0x7F && b <= 0xA0) return 0x100 + 33 + (b - 0x7F);
    if (b == 0xAD) return 0x100 + 33 + 34;
    return b;
}

/* The inverse; -1 for a code point no byte maps to. */
static int bpe_cp_to_byte(uint32_t cp) {
    if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF)) {
        return (int)cp;
    }
    if (cp >= 0x100 && cp <= 0x120) return (int)(cp - 0x100);
    if (cp >= 0x121 && cp <= 0x142) return (int)(cp - 0x121 + 0x7F);
    if (cp == 0x143) return 0xAD;
    return -1;
}

/* ---------------------------------------------------------------- loading */

/* The key of merge `rank`: its "left right" text. */
static const char *merge_key(const void *vocab, int32_t rank, size_t *len) {
    const el_vocab *v = vocab;
    *len = v->merge_off[rank + 1] - v->merge_off[rank] - 1;
    return v->merge_text + v->merge_off[rank];
}

el_status el_bpe_load_settings(el_vocab *v, const gguf_file *f) {
    gguf_str pre = {"default", 7}; /* llama.cpp's choice when the key is absent */
    el_status st = gguf_get_str(f, "tokenizer.ggml.pre", &pre);
    if (st != EL_OK && st != EL_ERR_NOT_FOUND) return st;
    if (st == EL_ERR_NOT_FOUND) {
        el_warn("%s: tokenizer.ggml.pre is absent: words are split the 'default' way, which may "
                "not be this model's", f->path);
    }
    if (pre.len >= sizeof v->pre) {
        return el_error(EL_ERR_UNSUPPORTED, "%s: tokenizer.ggml.pre '%.*s' is not supported",
                        f->path, (int)(sizeof v->pre), pre.ptr);
    }
    memcpy(v->pre, pre.ptr, pre.len);
    v->pre[pre.len] = '\0';
    const el_pretok *p;
    if ((st = el_pretok_find(v->pre, &p)) != EL_OK) {
        el_error_prefix("%s", f->path);
        return st;
    }
    if (el_pretok_bos_by_default(p) && !gguf_find(f, "tokenizer.ggml.add_bos_token")) {
        v->add_bos = true;
    }
    return EL_OK;
}

el_status el_bpe_load_merges(el_vocab *v, const gguf_file *f) {
    const gguf_kv *merges;
    el_status st = gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_TYPE_STRING, &merges);
    if (st == EL_ERR_NOT_FOUND) {
        return el_error(EL_ERR_FORMAT, "%s: BPE vocabulary without tokenizer.ggml.merges", f->path);
    }
    if (st != EL_OK) return st;
    if (merges->arr_n > INT32_MAX) {
        return el_error(EL_ERR_FORMAT, "%s: %llu merges", f->path,
                        (unsigned long long)merges->arr_n);
    }
    /* the keys are copied: the vocabulary may outlive the file */
    size_t bytes = 0, n = (size_t)merges->arr_n;
    for (size_t i = 0; i < n; i++) {
        bytes += merges->arr_str[i].len + 1;
    }
    if (bytes > UINT32_MAX) {
        return el_error(EL_ERR_FORMAT, "%s: %zu bytes of merges", f->path, bytes);
    }
    v->merge_text = malloc(bytes ? bytes : 1);
    v->merge_off = malloc((n + 1) * sizeof *v->merge_off);
    if (!v->merge_text || !v->merge_off) {
        return el_error(EL_ERR_NOMEM, "%s: out of memory for %zu bytes of merges", f->path, bytes);
    }
    if ((st = el_str_index_init(&v->merge_rank, n, merge_key, v)) != EL_OK) return st;
    uint32_t off = 0;
    for (size_t i = 0; i < n; i++) {
        gguf_str m = merges->arr_str[i];
        char *text = v->merge_text + off;
        memcpy(text, m.ptr, m.len);
        text[m.len] = '\0';
        v->merge_off[i] = off;
        off += (uint32_t)m.len + 1;
        v->merge_off[i + 1] = off;
        /* "left right": the first space after the first byte separates the two tokens, as in
         * llama.cpp; byte-level tokens hold no spaces (a space is 'Ġ'). An entry without one
         * can never match a pair and is left out, and a repeated pair keeps its first rank. */
        const char *sp = m.len > 1 ? memchr(text + 1, ' ', m.len - 1) : NULL;
        bool inserted;
        if (sp && (st = el_str_index_put_first(&v->merge_rank, (int32_t)i, &inserted)) != EL_OK)
            return st;
    }
    return EL_OK;
}

/* ---------------------------------------------------------------- merging */

/* A symbol is a run of the encoded word; merged-away symbols have len 0. */
typedef struct bpe_symbol {
    uint32_t start, len;
    int32_t prev, next; /* -1 at the ends */
} bpe_symbol;

/* A candidate merge of left with its next symbol, valid while both still have the lengths
 * (summing to size) they had when it was made. */
typedef struct bpe_pair {
    int32_t rank;
    int32_t left, right;
    uint32_t size;
} bpe_pair;

/* Scratch for one call, sized for the longest word. */
typedef struct bpe_work {
    char *enc;           /* the word's bytes as characters: at most 2 bytes each */
    bpe_symbol *sym;
    bpe_pair *heap;      /* a binary min-heap by (rank, left) */
    size_t heap_n;
    char *key;           /* "left right" for rank lookups */
} bpe_work;

static bool pair_before(const bpe_pair *a, const bpe_pair *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void heap_push(bpe_work *w, bpe_pair p) {
    size_t i = w->heap_n++;
    while (i > 0 && pair_before(&p, &w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = p;
}

static bpe_pair heap_pop(bpe_work *w) {
    bpe_pair top = w->heap[0], last = w->heap[--w->heap_n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= w->heap_n) break;
        if (c + 1 < w->heap_n && pair_before(&w->heap[c + 1], &w->heap[c])) c++;
        if (!pair_before(&w->heap[c], &last)) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    w->heap[i] = last;
    return top;
}

/* Queues the merge of symbol left with its next one, if the pair has a rank. Every merge adds
 * at most two pairs and a word of n symbols starts with n - 1, so the heap's 3n slots hold
 * them all. */
static void bpe_try_pair(const el_vocab *v, bpe_work *w, int32_t left) {
    if (left < 0 || w->sym[left].next < 0) return;
    const bpe_symbol *l = &w->sym[left], *r = &w->sym[l->next];
    memcpy(w->key, w->enc + l->start, l->len);
    w->key[l->len] = ' ';
    memcpy(w->key + l->len + 1, w->enc + r->start, r->len);
    int32_t rank = el_str_index_get(&v->merge_rank, w->key, l->len + 1 + r->len);
    if (rank >= 0) {
        heap_push(w, (bpe_pair){rank, left, l->next, l->len + r->len});
    }
}

/* Tokens of one encoded word of n_sym one-character symbols. */
static el_status bpe_merge_word(const el_vocab *v, bpe_work *w, int32_t n_sym, el_tokens *out) {
    w->heap_n = 0;
    for (int32_t i = 0; i + 1 < n_sym; i++) {
        bpe_try_pair(v, w, i);
    }
    while (w->heap_n > 0) {
        bpe_pair p = heap_pop(w);
        bpe_symbol *l = &w->sym[p.left], *r = &w->sym[p.right];
        if (l->len == 0 || r->len == 0 || l->next != p.right || l->len + r->len != p.size) {
            continue; /* one side merged since */
        }
        l->len += r->len;
        r->len = 0;
        l->next = r->next;
        if (r->next >= 0) w->sym[r->next].prev = p.left;
        bpe_try_pair(v, w, l->prev);
        bpe_try_pair(v, w, p.left);
    }
    for (int32_t i = 0; i >= 0; i = w->sym[i].next) {
        const bpe_symbol *s = &w->sym[i];
        int32_t id = el_str_index_get(&v->token_to_id, w->enc + s->start, s->len);
        el_status st = EL_OK;
        if (id >= 0) {
            st = el_tokens_push(out, id);
        } else {
            /* Not a token (a vocabulary whose merges make pieces it lacks): its characters,
             * one per byte, each as a token where the vocabulary has one. llama.cpp goes by
             * byte here, which only differs for characters outside ASCII. */
            for (uint32_t k = s->start; k < s->start + s->len && st == EL_OK;) {
                size_t n = el_utf8_seq_len((unsigned char)w->enc[k]);
                id = el_str_index_get(&v->token_to_id, w->enc + k, n);
                if (id >= 0) st = el_tokens_push(out, id);
                k += (uint32_t)n;
            }
        }
        if (st != EL_OK) return st;
    }
    return EL_OK;
}

static void bpe_work_free(bpe_work *w) {
    free(w->enc);
    free(w->sym);
    free(w->heap);
    free(w->key);
}

static el_status bpe_work_alloc(bpe_work *w, size_t max_word) {
    if (max_word > INT32_MAX / 4) {
        return el_error(EL_ERR_INVALID_ARG, "BPE: a word of %zu bytes is too long", max_word);
    }
    w->enc = malloc(2 * max_word);
    w->sym = malloc(max_word * sizeof *w->sym);
    w->heap = malloc(3 * max_word * sizeof *w->heap); /* see bpe_try_pair */
    w->key = malloc(2 * max_word + 1);
    if (!w->enc || !w->sym || !w->heap || !w->key) {
        bpe_work_free(w);
        return el_error(EL_ERR_NOMEM, "BPE: out of memory for a word of %zu bytes", max_word);
    }
    return EL_OK;
}

el_status el_bpe_tokenize(const el_vocab *v, const char *text, size_t len, el_tokens *out) {
    const el_pretok *p;
    el_status st = el_pretok_find(v->pre, &p);
    if (st != EL_OK) return st;
    el_words words = {0};
    if ((st = el_pretok_split(p, text, len, &words)) != EL_OK) return st;
    size_t max_word = 1;
    for (size_t i = 0, start = 0; i < words.n; start = words.ends[i++]) {
        if (words.ends[i] - start > max_word) max_word = words.ends[i] - start;
    }
    bpe_work w = {0};
    if ((st = bpe_work_alloc(&w, max_word)) != EL_OK) {
        el_words_free(&words);
        return st;
    }
    for (size_t i = 0, start = 0; i < words.n && st == EL_OK; start = words.ends[i++]) {
        size_t enc_len = 0;
        int32_t n = 0;
        for (size_t b = start; b < words.ends[i]; b++, n++) {
            w.sym[n] = (bpe_symbol){(uint32_t)enc_len, 0, n - 1, n + 1};
            w.sym[n].len = (uint32_t)el_utf8_encode(bpe_byte_to_cp((unsigned char)text[b]),
                                                    w.enc + enc_len);
            enc_len += w.sym[n].len;
        }
        w.sym[n - 1].next = -1;
        int32_t whole = el_pretok_ignore_merges(p)
                            ? el_str_index_get(&v->token_to_id, w.enc, enc_len) : -1;
        st = whole >= 0 ? el_tokens_push(out, whole) : bpe_merge_word(v, &w, n, out);
    }
    bpe_work_free(&w);
    el_words_free(&words);
    return st;
}

/* ---------------------------------------------------------------- decoding */

el_status el_bpe_token_to_piece(const el_vocab *v, int32_t id, char *buf, size_t cap, size_t *len) {
    const el_token_data *t = &v->tokens[id];
    /* Characters no byte maps to (possible in added tokens) are kept as they are. */
    size_t n = 0;
    for (uint32_t i = 0; i < t->len;) {
        uint32_t cp;
        size_t k = el_utf8_decode(t->text + i, t->len - i, &cp);
        int b = bpe_cp_to_byte(cp);
        if (b >= 0) {
            if (n < cap) buf[n] = (char)b;
            n++;
        } else {
            for (size_t j = 0; j < k; j++, n++) {
                if (n < cap) buf[n] = t->text[i + j];
            }
        }
        i += (uint32_t)k;
    }
    *len = n;
    if (n > cap) {
        return el_error(EL_ERR_INVALID_ARG, "token to piece: needs %zu bytes, have %zu", n, cap);
    }
    return EL_OK;
}
