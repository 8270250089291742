/* spm.c - SentencePiece-style BPE over scores, as llama.cpp and llama2.c's run.c do it.
 *
 * The text (spaces escaped as U+2581 unless the vocabulary stores real spaces) is split into
 * UTF-8 characters; then, again and again, the adjacent pair whose concatenation is a token with
 * the highest score is merged (ties: the leftmost pair). Every final symbol is its token, or,
 * if the vocabulary has no such token, one byte token per byte (or UNK). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/vocab.h"
#include "tokenizer/vocab_build.h"

typedef struct spm_symbol {
    int32_t prev, next; /* neighbours in the list of live symbols; -1 at the ends */
    uint32_t start, n;  /* bytes of the text; n == 0 once merged into its left neighbour */
} spm_symbol;

typedef struct spm_bigram {
    int32_t left, right;
    float score;
    uint32_t size; /* bytes of the pair when it was queued: a changed size means it is stale */
} spm_bigram;

/* A max-heap of candidate merges. */
typedef struct spm_queue {
    spm_bigram *items;
    size_t n, cap;
} spm_queue;

static bool bigram_before(const spm_bigram *a, const spm_bigram *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static el_status queue_push(spm_queue *q, spm_bigram b) {
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 64;
        spm_bigram *items = realloc(q->items, cap * sizeof *items);
        if (!items) return el_error(EL_ERR_NOMEM, "tokenize: out of memory");
        q->items = items;
        q->cap = cap;
    }
    size_t i = q->n++;
    while (i > 0 && bigram_before(&b, &q->items[(i - 1) / 2])) {
        q->items[i] = q->items[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    q->items[i] = b;
    return EL_OK;
}

static spm_bigram queue_pop(spm_queue *q) {
    spm_bigram top = q->items[0];
    spm_bigram last = q->items[--q->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->n) break;
        if (c + 1 < q->n && bigram_before(&q->items[c + 1], &q->items[c])) c++;
        if (!bigram_before(&q->items[c], &last)) break;
        q->items[i] = q->items[c];
        i = c;
    }
    if (q->n > 0) q->items[i] = last;
    return top;
}

/* Length of the UTF-8 character at s, or 1 for a byte that does not start a valid one. */
static uint32_t utf8_char_len(const unsigned char *s, size_t avail) {
    uint32_t n = s[0] < 0x80 ? 1 : s[0] < 0xC2 ? 0 : s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : s[0] < 0xF5 ? 4 : 0;
    if (n == 0 || n > avail) return 1;
    for (uint32_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 1;
    }
    return n;
}

typedef struct spm_state {
    const el_vocab *v;
    const char *text;
    spm_symbol *sym;
    spm_queue queue;
} spm_state;

/* Queues the merge of symbols left and right if their concatenation is a token. */
static el_status spm_try_pair(spm_state *s, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return EL_OK;
    uint32_t size = s->sym[left].n + s->sym[right].n;
    int32_t id = el_str_index_get(&s->v->token_to_id, s->text + s->sym[left].start, size);
    if (id < 0) return EL_OK;
    spm_bigram b = {left, right, s->v->tokens[id].score, size};
    return queue_push(&s->queue, b);
}

static el_status spm_merge(spm_state *s) {
    while (s->queue.n > 0) {
        spm_bigram b = queue_pop(&s->queue);
        spm_symbol *l = &s->sym[b.left], *r = &s->sym[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size) continue; /* stale */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) s->sym[r->next].prev = b.left;
        el_status st = spm_try_pair(s, l->prev, b.left);
        if (st == EL_OK) st = spm_try_pair(s, b.left, l->next);
        if (st != EL_OK) return st;
    }
    return EL_OK;
}

static el_status spm_emit(const spm_state *s, el_tokens *out) {
    const el_vocab *v = s->v;
    for (int32_t i = 0; i >= 0; i = s->sym[i].next) {
        const spm_symbol *y = &s->sym[i];
        int32_t id = el_str_index_get(&v->token_to_id, s->text + y->start, y->n);
        el_status st;
        if (id >= 0) {
            if ((st = el_tokens_push(out, id)) != EL_OK) return st;
            continue;
        }
        for (uint32_t k = 0; k < y->n; k++) {
            id = el_vocab_byte_token(v, (unsigned char)s->text[y->start + k]);
            if (id < 0) id = v->unk;
            if (id < 0) {
                return el_error(EL_ERR_UNSUPPORTED,
                                "tokenize: the vocabulary has neither byte tokens nor an unknown token");
            }
            if ((st = el_tokens_push(out, id)) != EL_OK) return st;
        }
    }
    return EL_OK;
}

/* text with every space written as U+2581 (malloc'd; *n_out its length) */
static char *spm_escape(const char *text, size_t len, size_t *n_out) {
    size_t spaces = 0;
    for (size_t i = 0; i < len; i++) spaces += text[i] == ' ';
    char *buf = malloc(len + 2 * spaces + 1);
    if (!buf) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(buf + n, "\xE2\x96\x81", 3);
            n += 3;
        } else {
            buf[n++] = text[i];
        }
    }
    *n_out = n;
    return buf;
}

el_status el_spm_tokenize(const el_vocab *v, const char *text, size_t len, el_tokens *out) {
    if (len == 0) return EL_OK;
    if (len > INT32_MAX / 3) return el_error(EL_ERR_INVALID_ARG, "tokenize: text too long");
    char *escaped = NULL;
    if (v->escape_spaces) {
        escaped = spm_escape(text, len, &len);
        if (!escaped) return el_error(EL_ERR_NOMEM, "tokenize: out of memory");
        text = escaped;
    }
    spm_state s = {.v = v, .text = text};
    s.sym = malloc(len * sizeof *s.sym);
    el_status st = s.sym ? EL_OK : el_error(EL_ERR_NOMEM, "tokenize: out of memory");
    int32_t n = 0;
    for (size_t i = 0; st == EL_OK && i < len; n++) {
        uint32_t c = utf8_char_len((const unsigned char *)text + i, len - i);
        s.sym[n] = (spm_symbol){.prev = n - 1, .next = -1, .start = (uint32_t)i, .n = c};
        if (n > 0) s.sym[n - 1].next = n;
        i += c;
    }
    for (int32_t i = 0; st == EL_OK && i + 1 < n; i++) st = spm_try_pair(&s, i, i + 1);
    if (st == EL_OK) st = spm_merge(&s);
    if (st == EL_OK) st = spm_emit(&s, out);
    free(s.queue.items);
    free(s.sym);
    free(escaped);
    return st;
}
