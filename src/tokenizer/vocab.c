/* vocab.c - loading a vocabulary from GGUF metadata, splitting text around special tokens and
 * dispatching the plain fragments to the per-kind tokenizers, and turning tokens into text. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/log.h"
#include "tokenizer/vocab.h"
#include "tokenizer/vocab_build.h"

/* ------------------------------------------------------------------ building */

el_status el_vocab_new(el_vocab_kind kind, int32_t n_tokens, size_t text_bytes, el_vocab **out) {
    *out = NULL;
    el_vocab *v = calloc(1, sizeof *v);
    if (!v) return el_error(EL_ERR_NOMEM, "vocabulary: out of memory");
    v->kind = kind;
    v->n_tokens = n_tokens;
    v->tokens = calloc((size_t)n_tokens, sizeof *v->tokens);
    v->token_text = malloc(text_bytes ? text_bytes : 1);
    if (!v->tokens || !v->token_text) {
        el_vocab_free(v);
        return el_error(EL_ERR_NOMEM, "vocabulary: out of memory for %d tokens", (int)n_tokens);
    }
    for (int32_t i = 0; i < n_tokens; i++) v->tokens[i].type = EL_TOKEN_NORMAL;
    v->bos = v->eos = v->eot = v->unk = v->pad = v->sep = v->cls = v->mask = v->nl = -1;
    v->escape_spaces = true;
    *out = v;
    return EL_OK;
}

void el_vocab_set_text(el_vocab *v, int32_t id, const char *text, size_t len, size_t *used) {
    char *dst = v->token_text + *used;
    if (len) memcpy(dst, text, len);
    dst[len] = '\0';
    v->tokens[id].text = dst;
    v->tokens[id].len = (uint32_t)len;
    *used += len + 1;
}

static bool vocab_is_special_type(el_token_type t) {
    return t == EL_TOKEN_CONTROL || t == EL_TOKEN_USER_DEFINED || t == EL_TOKEN_UNKNOWN;
}

/* Orders special tokens longest first (ties by id): a key whose ascending order is that. */
static int special_key_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static el_status vocab_build_specials(el_vocab *v) {
    bool *is_special = calloc((size_t)v->n_tokens, sizeof *is_special);
    if (!is_special) return el_error(EL_ERR_NOMEM, "vocabulary: out of memory");
    const int32_t ids[] = {v->bos, v->eos, v->eot, v->unk, v->pad, v->sep, v->cls, v->mask};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        if (ids[i] >= 0) is_special[ids[i]] = true;
    }
    int32_t n = 0;
    for (int32_t i = 0; i < v->n_tokens; i++) {
        if (vocab_is_special_type(v->tokens[i].type)) is_special[i] = true;
        if (v->tokens[i].len == 0) is_special[i] = false; /* an empty text matches nothing */
        n += is_special[i];
    }
    v->special_ids = malloc((size_t)(n ? n : 1) * sizeof *v->special_ids);
    uint64_t *keys = malloc((size_t)(n ? n : 1) * sizeof *keys);
    if (!v->special_ids || !keys) {
        free(is_special);
        free(keys);
        return el_error(EL_ERR_NOMEM, "vocabulary: out of memory");
    }
    int32_t k = 0;
    for (int32_t i = 0; i < v->n_tokens; i++) {
        if (is_special[i]) keys[k++] = (uint64_t)(UINT32_MAX - v->tokens[i].len) << 32 | (uint32_t)i;
    }
    qsort(keys, (size_t)n, sizeof *keys, special_key_cmp);
    for (int32_t i = 0; i < n; i++) v->special_ids[i] = (int32_t)(keys[i] & UINT32_MAX);
    v->n_special = n;
    free(is_special);
    free(keys);
    return EL_OK;
}

int32_t el_vocab_byte_token(const el_vocab *v, unsigned char b) {
    static const char hex[] = "0123456789ABCDEF";
    const char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
    int32_t id = el_str_index_get(&v->token_to_id, name, sizeof name);
    if (id >= 0) return id;
    return el_str_index_get(&v->token_to_id, (const char *)&b, 1);
}

static const char *token_key(const void *vocab, int32_t id, size_t *len) {
    const el_token_data *t = &((const el_vocab *)vocab)->tokens[id];
    *len = t->len;
    return t->text;
}

el_status el_vocab_index(el_vocab *v) {
    el_status st = el_str_index_init(&v->token_to_id, (size_t)v->n_tokens, token_key, v);
    if (st != EL_OK) return st;
    v->max_token_len = 0;
    for (int32_t i = 0; i < v->n_tokens; i++) {
        const el_token_data *t = &v->tokens[i];
        /* a later duplicate wins, as in llama.cpp */
        st = el_str_index_put(&v->token_to_id, i);
        if (st != EL_OK) return st;
        if (t->len > v->max_token_len) v->max_token_len = t->len;
    }
    for (int32_t i = 0; v->unk < 0 && i < v->n_tokens; i++) {
        if (v->tokens[i].type == EL_TOKEN_UNKNOWN) v->unk = i; /* no id given: the typed one */
    }
    st = vocab_build_specials(v);
    if (st != EL_OK) return st;
    switch (v->kind) {
    case EL_VOCAB_SPM: v->nl = el_vocab_byte_token(v, '\n'); break;
    case EL_VOCAB_BPE: v->nl = el_str_index_get(&v->token_to_id, "\xC4\x8A", 2); break; /* "Ċ" */
    case EL_VOCAB_WPM: v->nl = -1; break;
    }
    return EL_OK;
}

void el_vocab_free(el_vocab *v) {
    if (!v) return;
    free(v->tokens);
    free(v->token_text);
    el_str_index_free(&v->token_to_id);
    free(v->special_ids);
    el_str_index_free(&v->merge_rank);
    free(v->merge_text);
    free(v->merge_off);
    free(v);
}

bool el_vocab_same(const el_vocab *a, const el_vocab *b) {
    if (a->kind != b->kind || a->n_tokens != b->n_tokens) return false;
    for (int32_t i = 0; i < a->n_tokens; i++) {
        const el_token_data *x = &a->tokens[i], *y = &b->tokens[i];
        if (x->len != y->len || x->type != y->type || memcmp(x->text, y->text, x->len)) return false;
    }
    return true;
}

/* ------------------------------------------------------------------ GGUF */

/* An optional special id: -1 if the key is absent or names no token. llama.cpp's llama2.c
 * converter writes -1 (as u32) for a token the model lacks, other writers store -1 as a signed
 * integer, and llama.cpp keeps its default for any id past the vocabulary: such a file is
 * accepted, with a warning. */
static el_status gguf_special_id(const gguf_file *f, const char *key, int32_t n_tokens,
                                 int32_t *id) {
    int64_t value;
    el_status st = gguf_get_i64(f, key, &value);
    if (st == EL_ERR_NOT_FOUND) return EL_OK;
    if (st != EL_OK) return st;
    if (value < 0 || value >= n_tokens) {
        el_warn("%s: %s = %lld is not a token id (%d tokens): taken as no such token", f->path,
                key, value == UINT32_MAX ? -1LL : (long long)value, (int)n_tokens);
        return EL_OK;
    }
    *id = (int32_t)value;
    return EL_OK;
}

static el_status gguf_optional_bool(const gguf_file *f, const char *key, bool *b) {
    el_status st = gguf_get_bool(f, key, b);
    return st == EL_ERR_NOT_FOUND ? EL_OK : st;
}

static el_status gguf_kind(const gguf_file *f, el_vocab_kind *kind) {
    gguf_str model;
    el_status st = gguf_get_str(f, "tokenizer.ggml.model", &model);
    if (st == EL_ERR_NOT_FOUND) {
        return el_error(EL_ERR_FORMAT, "%s: no tokenizer (tokenizer.ggml.model is missing)", f->path);
    }
    if (st != EL_OK) return st;
    if (gguf_str_eq(model, "llama")) *kind = EL_VOCAB_SPM;
    else if (gguf_str_eq(model, "gpt2")) *kind = EL_VOCAB_BPE;
    else if (gguf_str_eq(model, "bert")) *kind = EL_VOCAB_WPM;
    else {
        int n = model.len > 64 ? 64 : (int)model.len;
        return el_error(EL_ERR_UNSUPPORTED, "%s: tokenizer model '%.*s' is not supported", f->path,
                        n, model.ptr);
    }
    return EL_OK;
}

/* Tokens, scores and types. */
static el_status gguf_load_tokens(const gguf_file *f, el_vocab_kind kind, el_vocab **out) {
    const gguf_kv *toks, *scores = NULL, *types = NULL;
    el_status st = gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &toks);
    if (st == EL_ERR_NOT_FOUND) {
        return el_error(EL_ERR_FORMAT, "%s: tokenizer.ggml.tokens is missing", f->path);
    }
    if (st != EL_OK) return st;
    if (toks->arr_n == 0 || toks->arr_n > INT32_MAX) {
        return el_error(EL_ERR_FORMAT, "%s: tokenizer.ggml.tokens has %llu entries", f->path,
                        (unsigned long long)toks->arr_n);
    }
    st = gguf_get_arr(f, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, &scores);
    if (st != EL_OK && st != EL_ERR_NOT_FOUND) return st;
    st = gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, &types);
    if (st != EL_OK && st != EL_ERR_NOT_FOUND) return st;
    if ((scores && scores->arr_n != toks->arr_n) || (types && types->arr_n != toks->arr_n)) {
        return el_error(EL_ERR_FORMAT, "%s: %llu tokens but %llu scores and %llu token types",
                        f->path, (unsigned long long)toks->arr_n,
                        (unsigned long long)(scores ? scores->arr_n : 0),
                        (unsigned long long)(types ? types->arr_n : 0));
    }
    int32_t n = (int32_t)toks->arr_n;
    size_t text_bytes = 0;
    for (int32_t i = 0; i < n; i++) {
        if (toks->arr_str[i].len > UINT32_MAX / 2) {
            return el_error(EL_ERR_FORMAT, "%s: token %d is too long", f->path, (int)i);
        }
        text_bytes += toks->arr_str[i].len + 1;
    }
    el_vocab *v = NULL;
    st = el_vocab_new(kind, n, text_bytes, &v);
    if (st != EL_OK) return st;
    size_t used = 0;
    for (int32_t i = 0; i < n; i++) {
        el_vocab_set_text(v, i, toks->arr_str[i].ptr, toks->arr_str[i].len, &used);
        float score = 0.0f;
        if (scores) memcpy(&score, scores->arr_data + 4 * (size_t)i, 4);
        if (!isfinite(score)) {
            el_vocab_free(v);
            return el_error(EL_ERR_FORMAT, "%s: tokenizer.ggml.scores: token %d has score %g",
                            f->path, (int)i, (double)score);
        }
        v->tokens[i].score = score;
        if (types) {
            int32_t t;
            memcpy(&t, types->arr_data + 4 * (size_t)i, 4);
            if (t < EL_TOKEN_UNDEFINED || t > EL_TOKEN_BYTE) {
                el_vocab_free(v);
                return el_error(EL_ERR_FORMAT, "%s: token %d has an unknown type %d", f->path,
                                (int)i, (int)t);
            }
            v->tokens[i].type = (el_token_type)t;
        }
    }
    *out = v;
    return EL_OK;
}

static el_status gguf_load_settings(el_vocab *v, const gguf_file *f) {
    /* llama.cpp's defaults when a key is absent (and Llama 3's BOS: el_bpe_load_settings) */
    v->add_bos = v->kind != EL_VOCAB_BPE;
    v->add_eos = v->kind == EL_VOCAB_WPM; /* BERT: [CLS] text [SEP] */
    v->add_space_prefix = v->kind == EL_VOCAB_SPM;
    v->remove_extra_whitespaces = false;
    const struct { const char *key; int32_t *id; } ids[] = {
        {"tokenizer.ggml.bos_token_id", &v->bos},
        {"tokenizer.ggml.eos_token_id", &v->eos},
        {"tokenizer.ggml.eot_token_id", &v->eot},
        {"tokenizer.ggml.unknown_token_id", &v->unk},
        {"tokenizer.ggml.padding_token_id", &v->pad},
        {"tokenizer.ggml.seperator_token_id", &v->sep}, /* sic: GGUF spells it so */
        {"tokenizer.ggml.cls_token_id", &v->cls},
        {"tokenizer.ggml.mask_token_id", &v->mask},
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        el_status st = gguf_special_id(f, ids[i].key, v->n_tokens, ids[i].id);
        if (st != EL_OK) return st;
    }
    const struct { const char *key; bool *b; } flags[] = {
        {"tokenizer.ggml.add_bos_token", &v->add_bos},
        {"tokenizer.ggml.add_eos_token", &v->add_eos},
        {"tokenizer.ggml.add_space_prefix", &v->add_space_prefix},
        {"tokenizer.ggml.remove_extra_whitespaces", &v->remove_extra_whitespaces},
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        el_status st = gguf_optional_bool(f, flags[i].key, flags[i].b);
        if (st != EL_OK) return st;
    }
    return EL_OK;
}

/* A BPE merge table being indexed on a thread of its own. Messages are per thread (error.c),
 * so the thread's comes back in the job. */
typedef struct vocab_merges_job {
    el_vocab *v;
    const gguf_file *f;
    el_status st;
    char message[1024]; /* as long as error.c's */
} vocab_merges_job;

static void *vocab_merges_run(void *arg) {
    vocab_merges_job *job = arg;
    job->st = el_bpe_load_merges(job->v, job->f);
    if (job->st != EL_OK) snprintf(job->message, sizeof job->message, "%s", el_last_error());
    return NULL;
}

/* el_vocab_index, and for BPE the merge table: the two take most of a large vocabulary's load
 * (Llama 3: 128k tokens, 280k merges) and share nothing, so the merges are indexed on a second
 * thread meanwhile, or on this one if no thread can be had. */
static el_status vocab_index_gguf(el_vocab *v, const gguf_file *f) {
    if (v->kind != EL_VOCAB_BPE) return el_vocab_index(v);
    vocab_merges_job job = {.v = v, .f = f};
    pthread_t thread;
    if (pthread_create(&thread, NULL, vocab_merges_run, &job) != 0) {
        el_status st = el_vocab_index(v);
        return st == EL_OK ? el_bpe_load_merges(v, f) : st;
    }
    el_status st = el_vocab_index(v);
    pthread_join(thread, NULL);
    if (st != EL_OK) return st;
    if (job.st != EL_OK) return el_error(job.st, "%s", job.message);
    return EL_OK;
}

el_status el_vocab_load_gguf(const gguf_file *f, el_vocab **out) {
    *out = NULL;
    el_vocab_kind kind = EL_VOCAB_SPM;
    el_status st = gguf_kind(f, &kind);
    if (st != EL_OK) return st;
    el_vocab *v = NULL;
    st = gguf_load_tokens(f, kind, &v);
    if (st != EL_OK) return st;
    st = gguf_load_settings(v, f);
    if (st == EL_OK && kind == EL_VOCAB_BPE) st = el_bpe_load_settings(v, f);
    if (st == EL_OK) st = vocab_index_gguf(v, f);
    if (st != EL_OK) {
        el_vocab_free(v);
        return st;
    }
    *out = v;
    return EL_OK;
}

/* ------------------------------------------------------------------ tokenizing */

/* A piece of the input: plain text [start, start + len), or one special token if id >= 0. */
typedef struct vocab_fragment {
    size_t start, len;
    int32_t id;
} vocab_fragment;

typedef struct vocab_fragments {
    vocab_fragment *items;
    size_t n, cap;
} vocab_fragments;

static el_status fragments_push(vocab_fragments *f, size_t start, size_t len, int32_t id) {
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        vocab_fragment *items = realloc(f->items, cap * sizeof *items);
        if (!items) return el_error(EL_ERR_NOMEM, "tokenize: out of memory");
        f->items = items;
        f->cap = cap;
    }
    f->items[f->n++] = (vocab_fragment){start, len, id};
    return EL_OK;
}

/* Cuts special token id out of every text fragment of `in`, into `out`. */
static el_status vocab_cut(const el_vocab *v, const char *text, int32_t id,
                           const vocab_fragments *in, vocab_fragments *out) {
    const el_token_data *t = &v->tokens[id];
    out->n = 0;
    for (size_t i = 0; i < in->n; i++) {
        vocab_fragment f = in->items[i];
        el_status st;
        if (f.id >= 0) {
            if ((st = fragments_push(out, f.start, f.len, f.id)) != EL_OK) return st;
            continue;
        }
        size_t pos = f.start, end = f.start + f.len;
        const char *hit;
        while ((hit = memmem(text + pos, end - pos, t->text, t->len)) != NULL) {
            size_t at = (size_t)(hit - text);
            if (at > pos && (st = fragments_push(out, pos, at - pos, -1)) != EL_OK) return st;
            if ((st = fragments_push(out, at, t->len, id)) != EL_OK) return st;
            pos = at + t->len;
        }
        if (end > pos && (st = fragments_push(out, pos, end - pos, -1)) != EL_OK) return st;
    }
    return EL_OK;
}

/* Splits text into plain fragments and special tokens the way llama.cpp does: each special
 * token in turn, longest first, is cut out of the text fragments left by the ones before.
 * Without parse_special only user-defined tokens are cut, as in llama.cpp: they are words the
 * vocabulary added, not control tokens. *out is malloc'd. */
static el_status vocab_partition(const el_vocab *v, const char *text, size_t len,
                                 bool parse_special, vocab_fragments *out) {
    vocab_fragments a = {0}, b = {0};
    el_status st = len ? fragments_push(&a, 0, len, -1) : EL_OK;
    for (int32_t i = 0; st == EL_OK && i < v->n_special; i++) {
        int32_t id = v->special_ids[i];
        if (!parse_special && v->tokens[id].type != EL_TOKEN_USER_DEFINED) continue;
        st = vocab_cut(v, text, id, &a, &b);
        vocab_fragments tmp = a;
        a = b;
        b = tmp;
    }
    free(b.items);
    if (st != EL_OK) {
        free(a.items);
        return st;
    }
    *out = a;
    return EL_OK;
}

/* One fragment of plain text. SPM puts a space before a fragment that starts the text or
 * follows a special token (llama.cpp's rule), when the vocabulary asks for it. */
static el_status vocab_tokenize_fragment(const el_vocab *v, const char *text, size_t len,
                                         bool after_special, el_tokens *out) {
    switch (v->kind) {
    case EL_VOCAB_SPM:
        if (v->add_space_prefix && after_special) {
            char *buf = malloc(len + 1);
            if (!buf) return el_error(EL_ERR_NOMEM, "tokenize: out of memory");
            buf[0] = ' ';
            memcpy(buf + 1, text, len);
            el_status st = el_spm_tokenize(v, buf, len + 1, out);
            free(buf);
            return st;
        }
        return el_spm_tokenize(v, text, len, out);
    case EL_VOCAB_BPE: return el_bpe_tokenize(v, text, len, out);
    case EL_VOCAB_WPM: return el_wpm_tokenize(v, text, len, out);
    }
    return el_error(EL_ERR_INVALID_ARG, "tokenize: unknown vocabulary kind");
}

static el_status vocab_tokenize_all(const el_vocab *v, const char *text, size_t len,
                                    bool add_special, bool parse_special, el_tokens *out) {
    el_status st;
    /* BERT frames the text with [CLS] ... [SEP] */
    int32_t first = v->kind == EL_VOCAB_WPM && v->cls >= 0 ? v->cls : v->bos;
    int32_t last = v->kind == EL_VOCAB_WPM && v->sep >= 0 ? v->sep : v->eos;
    if (add_special && v->add_bos && first >= 0 && (st = el_tokens_push(out, first)) != EL_OK) {
        return st;
    }
    vocab_fragments frags;
    if ((st = vocab_partition(v, text, len, parse_special, &frags)) != EL_OK) return st;
    bool after_special = true;
    for (size_t i = 0; st == EL_OK && i < frags.n; i++) {
        const vocab_fragment *f = &frags.items[i];
        if (f->id >= 0) {
            st = el_tokens_push(out, f->id);
            after_special = true;
        } else {
            st = vocab_tokenize_fragment(v, text + f->start, f->len, after_special, out);
            after_special = false;
        }
    }
    free(frags.items);
    if (st != EL_OK) return st;
    if (add_special && v->add_eos && last >= 0 && (st = el_tokens_push(out, last)) != EL_OK) {
        return st;
    }
    return EL_OK;
}

el_status el_vocab_tokenize(const el_vocab *v, const char *text, size_t len, bool add_special,
                            bool parse_special, el_tokens *out) {
    if (!text && len) return el_error(EL_ERR_INVALID_ARG, "tokenize: text is NULL");
    size_t n0 = out->n;
    el_status st = vocab_tokenize_all(v, text, len, add_special, parse_special, out);
    if (st != EL_OK) out->n = n0; /* nothing half-done is left behind */
    return st;
}

/* ------------------------------------------------------------------ pieces */

static el_status piece_copy(const char *src, size_t n, char *buf, size_t cap, size_t *len) {
    *len = n;
    if (n > cap) return el_error(EL_ERR_INVALID_ARG, "token to piece: needs %zu bytes, have %zu", n, cap);
    if (n) memcpy(buf, src, n);
    return EL_OK;
}

/* The text with every U+2581 turned back into a space. */
static el_status piece_unescape(const el_token_data *t, char *buf, size_t cap, size_t *len) {
    size_t n = 0;
    for (uint32_t i = 0; i < t->len; n++) {
        i += (t->len - i >= 3 && memcmp(t->text + i, "\xE2\x96\x81", 3) == 0) ? 3 : 1;
    }
    *len = n;
    if (n > cap) return el_error(EL_ERR_INVALID_ARG, "token to piece: needs %zu bytes, have %zu", n, cap);
    n = 0;
    for (uint32_t i = 0; i < t->len;) {
        if (t->len - i >= 3 && memcmp(t->text + i, "\xE2\x96\x81", 3) == 0) {
            buf[n++] = ' ';
            i += 3;
        } else {
            buf[n++] = t->text[i++];
        }
    }
    return EL_OK;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

el_status el_vocab_token_to_piece(const el_vocab *v, int32_t id, bool render_special, char *buf,
                                  size_t cap, size_t *len) {
    *len = 0;
    if (id < 0 || id >= v->n_tokens) {
        return el_error(EL_ERR_INVALID_ARG, "token to piece: token id %d is out of range (%d tokens)",
                        (int)id, (int)v->n_tokens);
    }
    const el_token_data *t = &v->tokens[id];
    switch (t->type) {
    case EL_TOKEN_CONTROL:
    case EL_TOKEN_UNKNOWN:
        return render_special ? piece_copy(t->text, t->len, buf, cap, len) : EL_OK;
    case EL_TOKEN_USER_DEFINED:
        return piece_copy(t->text, t->len, buf, cap, len);
    case EL_TOKEN_UNUSED:
        return EL_OK;
    case EL_TOKEN_BYTE:
        if (t->len == 6 && memcmp(t->text, "<0x", 3) == 0 && t->text[5] == '>' &&
            hex_digit(t->text[3]) >= 0 && hex_digit(t->text[4]) >= 0) {
            char b = (char)(hex_digit(t->text[3]) * 16 + hex_digit(t->text[4]));
            return piece_copy(&b, 1, buf, cap, len);
        }
        return piece_copy(t->text, t->len, buf, cap, len);
    case EL_TOKEN_UNDEFINED:
    case EL_TOKEN_NORMAL:
        break;
    }
    if (v->kind == EL_VOCAB_BPE) return el_bpe_token_to_piece(v, id, buf, cap, len);
    if (v->escape_spaces) return piece_unescape(t, buf, cap, len);
    return piece_copy(t->text, t->len, buf, cap, len);
}
