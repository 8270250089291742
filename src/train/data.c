/* data.c - token streams, JSONL examples and the shuffling loader (see data.h). */
#include "train/data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/json.h"
#include "train/rng.h"

void el_tdata_free(el_tdata *t) {
    free(t->ids);
    free(t->mask);
    free(t->starts);
    memset(t, 0, sizeof *t);
}

static el_status read_file(const char *path, char **buf, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return el_error(EL_ERR_IO, "%s: cannot open", path);
    char *b = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 65536 > cap) {
            cap = cap ? 2 * cap : 1 << 20;
            char *nb = realloc(b, cap + 1);
            if (!nb) {
                free(b);
                fclose(f);
                return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
            }
            b = nb;
        }
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    bool err = ferror(f);
    fclose(f);
    if (err) {
        free(b);
        return el_error(EL_ERR_IO, "%s: read error", path);
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return EL_OK;
}

static el_status reserve(el_tdata *t, size_t extra, bool with_mask) {
    if (t->n + extra <= t->cap)
        return EL_OK;
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->n + extra)
        cap *= 2;
    int32_t *ids = realloc(t->ids, cap * sizeof *ids);
    if (ids)
        t->ids = ids;
    float *mask = with_mask ? realloc(t->mask, cap * sizeof *mask) : NULL;
    if (mask)
        t->mask = mask;
    if (!ids || (with_mask && !mask))
        return el_error(EL_ERR_NOMEM, "out of memory for %zu tokens", cap);
    t->cap = cap;
    return EL_OK;
}

static bool has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* Appends the tokens of text (tokenized whole, so that BPE sees the text as it is). */
static el_status append_text(el_tdata *t, const el_model *vocab, const char *text, size_t len,
                             bool add_special, float mask, const char *path) {
    size_t need = 0;
    el_status st = el_tokenize(vocab, text, len, add_special, false, NULL, 0, &need);
    if (st != EL_OK && st != EL_ERR_INVALID_ARG)
        return st;
    if ((st = reserve(t, need, t->mask != NULL || mask >= 0)))
        return st;
    if ((st = el_tokenize(vocab, text, len, add_special, false, t->ids + t->n, need, &need))) {
        el_error_prefix("%s", path);
        return st;
    }
    if (mask >= 0)
        for (size_t i = 0; i < need; i++)
            t->mask[t->n + i] = mask;
    t->n += need;
    return EL_OK;
}

el_status el_tdata_load_stream(el_tdata *t, const char *const *files, int32_t n_files,
                         const el_model *vocab, int32_t n_vocab) {
    for (int32_t f = 0; f < n_files; f++) {
        char *buf;
        size_t len;
        el_status st = read_file(files[f], &buf, &len);
        if (st)
            return st;
        bool u16 = has_suffix(files[f], ".u16"), u32 = has_suffix(files[f], ".u32");
        if (u16 || u32) {
            size_t w = u16 ? 2 : 4, n = len / w;
            if (len % w) {
                free(buf);
                return el_error(EL_ERR_FORMAT, "%s: size %zu is not a multiple of %zu", files[f],
                                len, w);
            }
            if ((st = reserve(t, n, false)) == EL_OK)
                for (size_t i = 0; i < n; i++) {
                    const uint8_t *p = (const uint8_t *)buf + i * w;
                    uint32_t v = u16 ? (uint32_t)(p[0] | p[1] << 8)
                                     : (uint32_t)p[0] | (uint32_t)p[1] << 8 |
                                           (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
                    t->ids[t->n++] = (int32_t)v;
                }
        } else {
            st = append_text(t, vocab, buf, len, true, -1.0f, files[f]);
        }
        free(buf);
        if (st)
            return st;
    }
    for (size_t i = 0; i < t->n; i++)
        if (t->ids[i] < 0 || t->ids[i] >= n_vocab)
            return el_error(EL_ERR_FORMAT, "token %zu of the data is %d, outside the vocabulary "
                            "(%d tokens)", i, t->ids[i], n_vocab);
    return EL_OK;
}

static el_status add_example(el_tdata *t, const el_model *vocab, const el_json_value *line,
                             const char *where) {
    size_t pl, rl;
    const char *prompt = el_json_str(el_json_get(line, "prompt"), &pl);
    const char *response = el_json_str(el_json_get(line, "response"), &rl);
    if (!prompt || !response)
        return el_error(EL_ERR_FORMAT, "%s: expected an object with string members \"prompt\" "
                        "and \"response\"", where);
    if (t->n_items % 1024 == 0) {
        int64_t *s = realloc(t->starts, (size_t)(t->n_items + 1025) * sizeof *s);
        if (!s)
            return el_error(EL_ERR_NOMEM, "out of memory for examples");
        t->starts = s;
    }
    t->starts[t->n_items] = (int64_t)t->n;
    el_status st;
    if ((st = append_text(t, vocab, prompt, pl, true, 0.0f, where)) ||
        (st = append_text(t, vocab, response, rl, false, 1.0f, where)))
        return st;
    int32_t eos = el_token_eos(vocab);
    if (eos >= 0) {
        if ((st = reserve(t, 1, true)))
            return st;
        t->ids[t->n] = eos;
        t->mask[t->n++] = 1.0f;
    }
    t->n_items++;
    t->starts[t->n_items] = (int64_t)t->n;
    return EL_OK;
}

el_status el_examples_load(el_tdata *t, const char *const *files, int32_t n_files,
                           const el_model *vocab) {
    el_status st = reserve(t, 1, true);
    if (st)
        return st;
    for (int32_t f = 0; f < n_files; f++) {
        char *buf;
        size_t len;
        if ((st = read_file(files[f], &buf, &len)))
            return st;
        size_t pos = 0;
        for (int lineno = 1; pos < len && st == EL_OK; lineno++) {
            size_t end = pos;
            while (end < len && buf[end] != '\n')
                end++;
            size_t s = pos;
            while (s < end && (buf[s] == ' ' || buf[s] == '\t' || buf[s] == '\r'))
                s++;
            if (s < end) { /* blank lines are allowed */
                char where[600];
                snprintf(where, sizeof where, "%s:%d", files[f], lineno);
                el_json_doc *doc;
                if ((st = el_json_parse_line(buf + pos, end - pos, files[f], (size_t)lineno,
                                             &doc)) == EL_OK) {
                    st = add_example(t, vocab, el_json_root(doc), where);
                    el_json_free(doc);
                }
            }
            pos = end + 1;
        }
        free(buf);
        if (st)
            return st;
    }
    return EL_OK;
}

/* ------------------------------------------------------------- loader */

el_status el_loader_init(el_loader *l, const el_tdata *data, int32_t T, uint64_t seed,
                         bool shuffle, const char *what) {
    memset(l, 0, sizeof *l);
    l->data = data;
    l->T = T;
    l->seed = seed;
    l->shuffle = shuffle;
    l->n_items = data->starts ? data->n_items : data->n > 0 ? (int64_t)(data->n - 1) / T : 0;
    if (l->n_items <= 0)
        return el_error(EL_ERR_INVALID_ARG, "%s: %zu tokens are not enough for one sequence of "
                        "%d + 1 tokens", what, data->n, T);
    l->perm = malloc((size_t)l->n_items * sizeof *l->perm);
    if (!l->perm)
        return el_error(EL_ERR_NOMEM, "out of memory for the data order");
    el_loader_seek(l, 0, 0);
    return EL_OK;
}

void el_loader_free(el_loader *l) {
    free(l->perm);
    memset(l, 0, sizeof *l);
}

/* The order of an epoch: Fisher-Yates with an RNG seeded by (seed, epoch). */
void el_loader_seek(el_loader *l, int64_t epoch, int64_t index) {
    l->epoch = epoch;
    l->index = index;
    for (int64_t i = 0; i < l->n_items; i++)
        l->perm[i] = i;
    if (!l->shuffle)
        return;
    el_rng rng;
    el_rng_seed(&rng, l->seed * 0x100000001b3ull + (uint64_t)epoch);
    for (int64_t i = l->n_items - 1; i > 0; i--) {
        int64_t j = (int64_t)(el_rng_u64(&rng) % (uint64_t)(i + 1));
        int64_t tmp = l->perm[i];
        l->perm[i] = l->perm[j];
        l->perm[j] = tmp;
    }
}

static void fill_item(const el_loader *l, int64_t item, int32_t *tok, int32_t *tgt, float *mask) {
    const el_tdata *d = l->data;
    int32_t T = l->T;
    if (!d->starts) {
        const int32_t *p = d->ids + item * T;
        for (int32_t j = 0; j < T; j++) {
            tok[j] = p[j];
            tgt[j] = p[j + 1];
            mask[j] = 1.0f;
        }
        return;
    }
    int64_t s = d->starts[item], len = d->starts[item + 1] - s - 1; /* input positions */
    for (int32_t j = 0; j < T; j++) {
        bool in = j < len;
        tok[j] = in ? d->ids[s + j] : 0;
        tgt[j] = in ? d->ids[s + j + 1] : 0;
        mask[j] = in ? d->mask[s + j + 1] : 0.0f;
    }
}

void el_loader_next(el_loader *l, int32_t B, int32_t *tokens, int32_t *targets, float *mask) {
    for (int32_t b = 0; b < B; b++) {
        if (l->index >= l->n_items)
            el_loader_seek(l, l->epoch + 1, 0);
        int64_t item = l->perm[l->index++];
        size_t off = (size_t)b * l->T;
        fill_item(l, item, tokens + off, targets + off, mask + off);
    }
}
