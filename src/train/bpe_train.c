/* bpe_train.c - training a byte-level BPE vocabulary (el_train_tokenizer).
 *
 * The text is split into words by the GPT-2 pre-tokenizer (the one the written vocabulary names,
 * so that tokenizing later splits the same way); equal words are counted once with their
 * frequency. Every word starts as its bytes. Then, until the vocabulary is full, the most
 * frequent adjacent pair of symbols (counted over word frequencies; ties: the pair with the
 * smallest (left id, right id)) becomes a new symbol, merged left to right in every word that
 * holds it.
 *
 * Counting stays incremental: a merge subtracts the pair counts of each word it touches, merges,
 * and adds them back; pairs record the words they occur in; a max-heap with lazy deletion finds
 * the next pair (a popped entry whose count is stale is pushed again with the current count).
 *
 * Ids: 0..255 are the bytes (as GPT-2's bytes_to_unicode characters), then the merges in order,
 * then the special tokens <|bos|> and <|eos|> (control tokens) as the last two ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "runtime/chat.h"
#include "tokenizer/pretokenize.h"

/* ------------------------------------------------------------- small hash maps */

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return mix64(h);
}

typedef struct word {
    int32_t *sym;
    int32_t len;
    int64_t freq;
    int64_t stamp; /* last merge that visited it */
} word;

typedef struct pair_info {
    uint64_t key;   /* left << 32 | right; 0 = empty slot (pair (0,0) is stored as key ~0) */
    int64_t count;
    int32_t *words; /* words it occurred in (may repeat or be stale) */
    int32_t n_words, cap_words;
    int64_t listed;  /* the merge that last listed it in newkeys */
} pair_info;

typedef struct bpe {
    word *words;
    int32_t n_words, cap_words;
    /* word text -> index, during counting */
    int32_t *wslot;     /* [wcap] word index + 1, 0 empty */
    uint64_t *whash;
    size_t wcap;
    char **wtext;
    size_t *wlen;
    /* pairs */
    pair_info *pairs;
    size_t pcap, pn;
    /* heap of (count, key) */
    struct heap_e {
        int64_t count;
        uint64_t key;
    } *heap;
    size_t hn, hcap;
    /* pairs created by the current merge */
    uint64_t *newkeys;
    size_t nnew, capnew;
    int64_t stamp;
} bpe;

static uint64_t pair_key(int32_t a, int32_t b) {
    uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    return k ? k : ~0ull;
}

static el_status pairs_grow(bpe *t);

/* The slot of a pair, created (count 0) if absent; NULL when out of memory. */
static pair_info *pair_get(bpe *t, uint64_t key) {
    if ((t->pn + 1) * 2 > t->pcap && pairs_grow(t))
        return NULL;
    size_t i = mix64(key) & (t->pcap - 1);
    while (t->pairs[i].key && t->pairs[i].key != key)
        i = (i + 1) & (t->pcap - 1);
    if (!t->pairs[i].key) {
        t->pairs[i].key = key;
        t->pn++;
    }
    return &t->pairs[i];
}

static el_status pairs_grow(bpe *t) {
    size_t ncap = t->pcap ? 2 * t->pcap : 1 << 16;
    pair_info *old = t->pairs;
    size_t ocap = t->pcap;
    t->pairs = calloc(ncap, sizeof *t->pairs);
    if (!t->pairs) {
        t->pairs = old;
        return EL_ERR_NOMEM;
    }
    t->pcap = ncap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].key) {
            size_t j = mix64(old[i].key) & (ncap - 1);
            while (t->pairs[j].key)
                j = (j + 1) & (ncap - 1);
            t->pairs[j] = old[i];
        }
    free(old);
    return EL_OK;
}

static bool heap_before(const struct heap_e *a, const struct heap_e *b) {
    return a->count > b->count || (a->count == b->count && a->key < b->key);
}

static el_status heap_push(bpe *t, int64_t count, uint64_t key) {
    if (t->hn == t->hcap) {
        size_t nc = t->hcap ? 2 * t->hcap : 1 << 16;
        struct heap_e *h = realloc(t->heap, nc * sizeof *h);
        if (!h)
            return EL_ERR_NOMEM;
        t->heap = h;
        t->hcap = nc;
    }
    size_t i = t->hn++;
    t->heap[i] = (struct heap_e){count, key};
    while (i > 0 && heap_before(&t->heap[i], &t->heap[(i - 1) / 2])) {
        struct heap_e tmp = t->heap[i];
        t->heap[i] = t->heap[(i - 1) / 2];
        t->heap[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
    return EL_OK;
}

static struct heap_e heap_pop(bpe *t) {
    struct heap_e top = t->heap[0];
    t->heap[0] = t->heap[--t->hn];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < t->hn && heap_before(&t->heap[l], &t->heap[m]))
            m = l;
        if (r < t->hn && heap_before(&t->heap[r], &t->heap[m]))
            m = r;
        if (m == i)
            break;
        struct heap_e tmp = t->heap[i];
        t->heap[i] = t->heap[m];
        t->heap[m] = tmp;
        i = m;
    }
    return top;
}

/* ------------------------------------------------------------- counting words */

static el_status word_add(bpe *t, const char *s, size_t n) {
    if ((size_t)(t->n_words + 1) * 2 > t->wcap) {
        size_t ncap = t->wcap ? 2 * t->wcap : 1 << 16;
        int32_t *slot = calloc(ncap, sizeof *slot);
        uint64_t *hh = malloc(ncap * sizeof *hh);
        if (!slot || !hh) {
            free(slot);
            free(hh);
            return EL_ERR_NOMEM;
        }
        for (size_t i = 0; i < t->wcap; i++)
            if (t->wslot[i]) {
                size_t j = t->whash[i] & (ncap - 1);
                while (slot[j])
                    j = (j + 1) & (ncap - 1);
                slot[j] = t->wslot[i];
                hh[j] = t->whash[i];
            }
        free(t->wslot);
        free(t->whash);
        t->wslot = slot;
        t->whash = hh;
        t->wcap = ncap;
    }
    uint64_t h = hash_bytes(s, n);
    size_t i = h & (t->wcap - 1);
    for (; t->wslot[i]; i = (i + 1) & (t->wcap - 1)) {
        int32_t w = t->wslot[i] - 1;
        if (t->whash[i] == h && t->wlen[w] == n && !memcmp(t->wtext[w], s, n)) {
            t->words[w].freq++;
            return EL_OK;
        }
    }
    if (t->n_words == t->cap_words) {
        int32_t nc = t->cap_words ? 2 * t->cap_words : 1 << 14;
        word *nw = realloc(t->words, (size_t)nc * sizeof *nw);
        char **nt = realloc(t->wtext, (size_t)nc * sizeof *nt);
        if (nt)
            t->wtext = nt;
        if (nw)
            t->words = nw;
        size_t *nl = realloc(t->wlen, (size_t)nc * sizeof *nl);
        if (nl)
            t->wlen = nl;
        if (!nw || !nt || !nl)
            return EL_ERR_NOMEM;
        t->cap_words = nc;
    }
    int32_t w = t->n_words++;
    word *wd = &t->words[w];
    wd->sym = malloc(n * sizeof *wd->sym);
    t->wtext[w] = malloc(n);
    if (!wd->sym || !t->wtext[w])
        return EL_ERR_NOMEM;
    memcpy(t->wtext[w], s, n);
    t->wlen[w] = n;
    for (size_t k = 0; k < n; k++)
        wd->sym[k] = (unsigned char)s[k];
    wd->len = (int32_t)n;
    wd->freq = 1;
    wd->stamp = -1;
    t->wslot[i] = w + 1;
    t->whash[i] = h;
    return EL_OK;
}

/* Adds (sign +1) or removes (-1) the pair counts of word w; with `record`, the word is recorded
 * under the pairs that contain symbol z (new pairs after a merge), or every pair if z < 0. */
static el_status word_pairs(bpe *t, int32_t w, int sign, bool record, int32_t z) {
    const word *wd = &t->words[w];
    for (int32_t i = 0; i + 1 < wd->len; i++) {
        pair_info *p = pair_get(t, pair_key(wd->sym[i], wd->sym[i + 1]));
        if (!p)
            return EL_ERR_NOMEM;
        p->count += sign * wd->freq;
        if (record && (z < 0 || wd->sym[i] == z || wd->sym[i + 1] == z)) {
            if (p->n_words == p->cap_words) {
                int32_t nc = p->cap_words ? 2 * p->cap_words : 4;
                int32_t *nw = realloc(p->words, (size_t)nc * sizeof *nw);
                if (!nw)
                    return EL_ERR_NOMEM;
                p->words = nw;
                p->cap_words = nc;
            }
            if (p->n_words == 0 || p->words[p->n_words - 1] != w)
                p->words[p->n_words++] = w;
            if (z >= 0 && p->listed != t->stamp) {
                if (t->nnew == t->capnew) {
                    size_t nc = t->capnew ? 2 * t->capnew : 1024;
                    uint64_t *nk = realloc(t->newkeys, nc * sizeof *nk);
                    if (!nk)
                        return EL_ERR_NOMEM;
                    t->newkeys = nk;
                    t->capnew = nc;
                }
                p->listed = t->stamp;
                t->newkeys[t->nnew++] = p->key;
            }
        }
    }
    return EL_OK;
}

/* Merges (a, b) into z in every word recorded under the pair. */
static el_status apply_merge(bpe *t, int32_t a, int32_t b, int32_t z, int64_t stamp) {
    t->stamp = stamp;
    pair_info *p = pair_get(t, pair_key(a, b));
    if (!p)
        return EL_ERR_NOMEM;
    /* the list may grow while we go (pairs with z), so take it out first */
    int32_t *list = p->words, n = p->n_words;
    p->words = NULL;
    p->n_words = p->cap_words = 0;
    el_status st = EL_OK;
    for (int32_t k = 0; k < n && st == EL_OK; k++) {
        int32_t w = list[k];
        word *wd = &t->words[w];
        if (wd->stamp == stamp)
            continue;
        wd->stamp = stamp;
        bool has = false;
        for (int32_t i = 0; i + 1 < wd->len && !has; i++)
            has = wd->sym[i] == a && wd->sym[i + 1] == b;
        if (!has)
            continue;
        if ((st = word_pairs(t, w, -1, false, 0)))
            break;
        int32_t o = 0;
        for (int32_t i = 0; i < wd->len; i++) {
            if (i + 1 < wd->len && wd->sym[i] == a && wd->sym[i + 1] == b) {
                wd->sym[o++] = z;
                i++;
            } else {
                wd->sym[o++] = wd->sym[i];
            }
        }
        wd->len = o;
        st = word_pairs(t, w, +1, true, z);
    }
    free(list);
    return st;
}

/* ------------------------------------------------------------- output */

/* GPT-2's bytes_to_unicode: printable bytes map to themselves, the others to U+0100 upwards in
 * byte order. Writes the UTF-8 of byte b's character into out; returns its length. */
static int byte_char(unsigned char b, char *out) {
    uint32_t cp;
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    if (printable) {
        cp = b;
    } else {
        uint32_t k = 0; /* rank of b among the non-printable bytes */
        for (unsigned c = 0; c < b; c++)
            k += !((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE);
        cp = 0x100 + k;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

static el_status write_vocab(const char *path, int32_t n_merges, const int32_t *left,
                             const int32_t *right) {
    int32_t n = 256 + n_merges + 2;
    char **tok = calloc((size_t)n, sizeof *tok);
    char **mer = calloc((size_t)(n_merges ? n_merges : 1), sizeof *mer);
    int32_t *types = malloc((size_t)n * sizeof *types);
    el_status st = EL_OK;
    if (!tok || !mer || !types)
        st = el_error(EL_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < 256 && st == EL_OK; i++) {
        char buf[3];
        int len = byte_char((unsigned char)i, buf);
        if (!(tok[i] = strndup(buf, (size_t)len)))
            st = el_error(EL_ERR_NOMEM, "out of memory");
    }
    for (int32_t m = 0; m < n_merges && st == EL_OK; m++) {
        const char *l = tok[left[m]], *r = tok[right[m]];
        size_t ll = strlen(l), rl = strlen(r);
        tok[256 + m] = malloc(ll + rl + 1);
        mer[m] = malloc(ll + rl + 2);
        if (!tok[256 + m] || !mer[m]) {
            st = el_error(EL_ERR_NOMEM, "out of memory");
            break;
        }
        snprintf(tok[256 + m], ll + rl + 1, "%s%s", l, r);
        snprintf(mer[m], ll + rl + 2, "%s %s", l, r);
    }
    if (st == EL_OK) {
        tok[n - 2] = strdup("<|bos|>");
        tok[n - 1] = strdup("<|eos|>");
        if (!tok[n - 2] || !tok[n - 1])
            st = el_error(EL_ERR_NOMEM, "out of memory");
        for (int32_t i = 0; i < n; i++)
            types[i] = i >= n - 2 ? 3 : 1; /* control : normal */
    }
    gguf_writer *w = st == EL_OK ? gguf_writer_create() : NULL;
    if (st == EL_OK && !w)
        st = el_error(EL_ERR_NOMEM, "out of memory");
    if (st == EL_OK &&
        (st = gguf_writer_set_str(w, "general.architecture", "llama")) == EL_OK &&
        (st = gguf_writer_set_str(w, "general.name", "edgelora byte-level BPE")) == EL_OK &&
        (st = gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2")) == EL_OK &&
        (st = gguf_writer_set_str(w, "tokenizer.ggml.pre", "gpt-2")) == EL_OK &&
        (st = gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)tok,
                                      (uint64_t)n)) == EL_OK &&
        (st = gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types,
                                  (uint64_t)n)) == EL_OK &&
        (st = gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", (const char *const *)mer,
                                      (uint64_t)n_merges)) == EL_OK &&
        (st = gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)(n - 2))) ==
            EL_OK &&
        (st = gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)(n - 1))) ==
            EL_OK &&
        (st = gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true)) == EL_OK &&
        (st = gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", false)) == EL_OK &&
        (st = gguf_writer_set_str(w, "tokenizer.chat_template", el_chat_edgelora_jinja)) == EL_OK)
        st = gguf_writer_write(w, path);
    gguf_writer_free(w);
    for (int32_t i = 0; tok && i < n; i++)
        free(tok[i]);
    for (int32_t i = 0; mer && i < n_merges; i++)
        free(mer[i]);
    free(tok);
    free(mer);
    free(types);
    return st;
}

/* ------------------------------------------------------------- the trainer */

static void bpe_free(bpe *t) {
    for (int32_t i = 0; i < t->n_words; i++) {
        free(t->words[i].sym);
        free(t->wtext[i]);
    }
    free(t->words);
    free(t->wtext);
    free(t->wlen);
    free(t->wslot);
    free(t->whash);
    for (size_t i = 0; i < t->pcap; i++)
        free(t->pairs[i].words);
    free(t->pairs);
    free(t->heap);
    free(t->newkeys);
}

static el_status count_file(bpe *t, const el_pretok *pre, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return el_error(EL_ERR_IO, "%s: cannot open", path);
    /* line by line: the corpus is one paragraph per line, and no GPT-2 word spans a newline
     * except runs of whitespace, whose split differs only in where the newline run ends */
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    el_words ws = {0};
    el_status st = EL_OK;
    while (st == EL_OK && (len = getline(&line, &cap, f)) > 0) {
        if ((st = el_pretok_split(pre, line, (size_t)len, &ws)))
            break;
        size_t start = 0;
        for (size_t i = 0; i < ws.n && st == EL_OK; i++) {
            if (word_add(t, line + start, ws.ends[i] - start))
                st = el_error(EL_ERR_NOMEM, "%s: out of memory counting words", path);
            start = ws.ends[i];
        }
    }
    if (st == EL_OK && ferror(f))
        st = el_error(EL_ERR_IO, "%s: read error", path);
    free(line);
    el_words_free(&ws);
    fclose(f);
    return st;
}

el_status el_train_tokenizer(const char *const *files, int32_t n_files, int32_t vocab_size,
                             const char *out_path) {
    if (n_files <= 0 || !files)
        return el_error(EL_ERR_INVALID_ARG, "no text files to train the tokenizer on");
    if (vocab_size < 258)
        return el_error(EL_ERR_INVALID_ARG, "vocabulary size %d is below 258 (256 bytes and 2 "
                        "special tokens)", vocab_size);
    const el_pretok *pre;
    el_status st = el_pretok_find("gpt-2", &pre);
    if (st)
        return st;
    bpe t = {0};
    for (int32_t f = 0; f < n_files && st == EL_OK; f++)
        st = count_file(&t, pre, files[f]);
    if (st == EL_OK && t.n_words == 0)
        st = el_error(EL_ERR_INVALID_ARG, "%s%s: no text to learn from (the input is empty)",
                      files[0], n_files > 1 ? " and the other files" : "");
    free(t.wslot), t.wslot = NULL;
    free(t.whash), t.whash = NULL;
    t.wcap = 0;
    for (int32_t w = 0; w < t.n_words && st == EL_OK; w++)
        if (word_pairs(&t, w, +1, true, -1))
            st = el_error(EL_ERR_NOMEM, "out of memory counting pairs");
    for (size_t i = 0; i < t.pcap && st == EL_OK; i++)
        if (t.pairs[i].key && heap_push(&t, t.pairs[i].count, t.pairs[i].key))
            st = el_error(EL_ERR_NOMEM, "out of memory");
    int32_t want = vocab_size - 258, n_merges = 0;
    int32_t *left = malloc((size_t)(want ? want : 1) * sizeof *left);
    int32_t *right = malloc((size_t)(want ? want : 1) * sizeof *right);
    if (st == EL_OK && (!left || !right))
        st = el_error(EL_ERR_NOMEM, "out of memory");
    while (st == EL_OK && n_merges < want && t.hn > 0) {
        struct heap_e e = heap_pop(&t);
        pair_info *p = pair_get(&t, e.key);
        if (!p) {
            st = el_error(EL_ERR_NOMEM, "out of memory");
            break;
        }
        if (p->count != e.count) { /* stale: requeue with the current count */
            if (p->count > 0 && heap_push(&t, p->count, e.key))
                st = el_error(EL_ERR_NOMEM, "out of memory");
            continue;
        }
        if (e.count <= 0)
            break;
        uint64_t key = e.key == ~0ull ? 0 : e.key;
        int32_t a = (int32_t)(key >> 32), b = (int32_t)(key & 0xffffffffu), z = 256 + n_merges;
        left[n_merges] = a;
        right[n_merges] = b;
        n_merges++;
        if (apply_merge(&t, a, b, z, n_merges)) {
            st = el_error(EL_ERR_NOMEM, "out of memory merging");
            break;
        }
        /* new pairs (containing z) enter the heap with their final counts */
        for (size_t i = 0; i < t.nnew && st == EL_OK; i++) {
            pair_info *q = pair_get(&t, t.newkeys[i]);
            if (!q || (q->count > 0 && heap_push(&t, q->count, t.newkeys[i])))
                st = el_error(EL_ERR_NOMEM, "out of memory");
        }
        t.nnew = 0;
    }
    if (st == EL_OK)
        st = write_vocab(out_path, n_merges, left, right);
    free(left);
    free(right);
    bpe_free(&t);
    return st;
}
