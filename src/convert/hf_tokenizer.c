/* hf_tokenizer.c - tokenizer.json to tokenizer.ggml.* keys.
 *
 * Token types follow llama.cpp's converter: added tokens marked special are CONTROL, other added
 * tokens USER_DEFINED, "<0xNN>" pieces of a byte-fallback vocabulary BYTE, its unk_token
 * UNKNOWN, ids without a token UNUSED. For the "llama" (SentencePiece-style) model llama.cpp's
 * tokenizer merges the adjacent pair whose joined piece has the highest score; tokenizer.json
 * gives no scores, only a ranked merge list (which HF derives from SentencePiece's scores), so a
 * piece's score is minus the rank of the first merge that makes it: the same order. (llama.cpp's
 * own tokenizer.json path writes -1000 for every piece, which loses that order.) Pieces no merge
 * makes rank after all of them. */
#include "convert/hf_tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/log.h"
#include "core/mapfile.h"
#include "formats/json.h"
#include "tokenizer/vocab.h"

enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER_DEFINED = 4, TT_UNUSED = 5,
       TT_BYTE = 6 };

typedef struct json_file {
    el_mapped_file map;
    el_json_doc *doc;
} json_file;

/* Parses path; a missing file is EL_ERR_NOT_FOUND when optional. */
static el_status json_open(const char *path, bool optional, json_file *f) {
    memset(f, 0, sizeof *f);
    FILE *probe = fopen(path, "rb");
    if (!probe && optional) return EL_ERR_NOT_FOUND;
    if (probe) fclose(probe);
    el_status st = el_map_file(path, &f->map);
    if (!st) st = el_json_parse((const char *)f->map.data, f->map.size, path, &f->doc);
    if (!st && el_json_type(el_json_root(f->doc)) != EL_JSON_OBJECT)
        st = el_error(EL_ERR_FORMAT, "%s: not a JSON object", path);
    return st;
}

static void json_close(json_file *f) {
    el_json_free(f->doc);
    el_unmap_file(&f->map);
}

typedef struct tok_state {
    const char *path; /* tokenizer.json, for messages */
    int32_t n;        /* tokens: the model's vocab_size */
    char **text;      /* [n]; NULL until set */
    int32_t *type;    /* [n] */
    el_strmap ids;    /* text -> id */
} tok_state;

static el_status set_token(tok_state *t, int64_t id, const char *s, size_t len, int32_t type) {
    if (id < 0 || id >= t->n)
        return el_error(EL_ERR_MISMATCH, "%s: token id %lld of \"%.40s\" is outside the model's "
                        "vocab_size %d (config.json): embed_tokens has no row for it", t->path,
                        (long long)id, s, t->n);
    if (memchr(s, 0, len))
        return el_error(EL_ERR_UNSUPPORTED, "%s: token %lld contains a NUL byte", t->path,
                        (long long)id);
    char *copy = strndup(s, len);
    if (!copy) return el_error(EL_ERR_NOMEM, "%s: out of memory", t->path);
    free(t->text[id]);
    t->text[id] = copy;
    t->type[id] = type;
    return EL_OK;
}

/* Added tokens past config.json's vocab_size (the rows of embed_tokens) are left out with one
 * warning, as llama.cpp's converter leaves them out: the model has no row to run them with, and
 * text can only name them as markup, which then stays text (Gemma 3 1B lists <image_soft_token>
 * at id 262144 beside its 262144 rows). A model.vocab id past it stays set_token's error: BPE
 * merges into those pieces, so ordinary text would tokenize to ids the model cannot run. Ids
 * below it that no token has become read_vocab's [PAD<id>] tokens, as in llama.cpp's converter
 * (Qwen2.5's 151936 rows for 151665 tokens, Gemma 3 4B's 262208 for 262145): every row stays
 * runnable, as in Hugging Face. */
static void warn_added_past(const tok_state *t, const el_json_value *added) {
    int32_t n_past = 0;
    int64_t first = -1, id;
    const char *text = "";
    for (size_t i = 0; i < el_json_len(added); i++) {
        const el_json_value *a = el_json_at(added, i);
        const char *s = el_json_str(el_json_get(a, "content"), NULL);
        bool past = s && el_json_int(el_json_get(a, "id"), &id) && id >= t->n;
        if (past && (!n_past++ || id < first)) {
            first = id;
            text = s;
        }
    }
    if (n_past == 1)
        el_warn("%s: added token %lld (\"%.40s\") is past config.json's vocab_size %d: the model "
                "has no embedding row for it, so it is left out (as llama.cpp's converter does)",
                t->path, (long long)first, text, t->n);
    else if (n_past > 1)
        el_warn("%s: %d added tokens from id %lld (\"%.40s\") are past config.json's vocab_size "
                "%d: the model has no embedding rows for them, so they are left out (as "
                "llama.cpp's converter does)", t->path, n_past, (long long)first, text, t->n);
}

static el_status read_vocab(tok_state *t, const el_json_value *model, const el_json_value *added) {
    const el_json_value *vocab = el_json_get(model, "vocab");
    if (el_json_type(vocab) != EL_JSON_OBJECT)
        return el_error(EL_ERR_FORMAT, "%s: model.vocab is not an object", t->path);
    /* the padding below would fill the model with unused tokens that no text ever matches */
    if (el_json_len(vocab) == 0)
        return el_error(EL_ERR_FORMAT, "%s: model.vocab is empty: no text could be tokenized",
                        t->path);
    el_status st = EL_OK;
    for (size_t i = 0; i < el_json_len(vocab) && !st; i++) {
        size_t len;
        const char *s = el_json_key_at(vocab, i, &len);
        int64_t id;
        if (!el_json_int(el_json_at(vocab, i), &id))
            return el_error(EL_ERR_FORMAT, "%s: vocab entry \"%.40s\" has no integer id", t->path,
                            s);
        st = set_token(t, id, s, len, TT_NORMAL);
    }
    for (size_t i = 0; i < el_json_len(added) && !st; i++) {
        const el_json_value *a = el_json_at(added, i);
        size_t len;
        const char *s = el_json_str(el_json_get(a, "content"), &len);
        int64_t id;
        bool special = false;
        el_json_bool(el_json_get(a, "special"), &special);
        if (!s || !el_json_int(el_json_get(a, "id"), &id))
            return el_error(EL_ERR_FORMAT, "%s: added_tokens[%zu] lacks id or content", t->path, i);
        if (id < t->n) st = set_token(t, id, s, len, special ? TT_CONTROL : TT_USER_DEFINED);
    }
    if (!st) warn_added_past(t, added);
    for (int32_t i = 0; i < t->n && !st; i++) {
        if (!t->text[i]) {
            char pad[32];
            int len = snprintf(pad, sizeof pad, "[PAD%d]", i);
            st = set_token(t, i, pad, (size_t)len, TT_UNUSED);
        }
    }
    if (!st) st = el_strmap_init(&t->ids, (size_t)t->n);
    for (int32_t i = 0; i < t->n && !st; i++)
        st = el_strmap_put(&t->ids, t->text[i], strlen(t->text[i]), i);
    return st;
}

/* The merges as "left right" strings (either spelling tokenizer.json uses) and, in cut (if not
 * NULL), where each one's separating space is (a part of the [a, b] spelling may hold a space
 * itself); *out and *cut malloc'd, each string too. */
static el_status read_merges(const tok_state *t, const el_json_value *model, char ***out,
                             size_t **cut, size_t *n) {
    const el_json_value *m = el_json_get(model, "merges");
    size_t k = el_json_len(m);
    if (el_json_type(m) != EL_JSON_ARRAY)
        return el_error(EL_ERR_FORMAT, "%s: model.merges is not an array", t->path);
    char **s = calloc(k ? k : 1, sizeof *s);
    size_t *c = cut ? calloc(k ? k : 1, sizeof *c) : NULL;
    *out = s;
    *n = k;
    if (cut) *cut = c;
    if (!s || (cut && !c)) return el_error(EL_ERR_NOMEM, "%s: out of memory", t->path);
    for (size_t i = 0; i < k; i++) {
        const el_json_value *e = el_json_at(m, i);
        size_t la, lb;
        const char *a, *b;
        if (el_json_type(e) == EL_JSON_STRING) {
            a = el_json_str(e, &la);
            s[i] = strdup(a);
            if (s[i] && !strchr(a, ' '))
                return el_error(EL_ERR_FORMAT, "%s: merge %zu \"%.40s\" has no space", t->path,
                                i, a);
            if (c) c[i] = (size_t)(strchr(a, ' ') - a);
        } else if ((a = el_json_str(el_json_at(e, 0), &la)) &&
                   (b = el_json_str(el_json_at(e, 1), &lb)) && el_json_len(e) == 2) {
            if (c) c[i] = la;
            if ((s[i] = malloc(la + lb + 2))) {
                memcpy(s[i], a, la);
                s[i][la] = ' ';
                memcpy(s[i] + la + 1, b, lb + 1);
            }
        } else {
            return el_error(EL_ERR_FORMAT, "%s: merge %zu is neither \"a b\" nor [a, b]", t->path,
                            i);
        }
        if (!s[i]) return el_error(EL_ERR_NOMEM, "%s: out of memory", t->path);
    }
    return EL_OK;
}

static void free_strs(char **s, size_t n) {
    for (size_t i = 0; s && i < n; i++) free(s[i]);
    free(s);
}

/* ---------------------------------------------------------------- pre-tokenizer */

static const struct {
    const char *regex, *tag;
} known_regex[] = {
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
     "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", "llama3"},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
     "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", "qwen2"},
    {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+", "gpt2"},
    {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
     "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
     "[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", "gpt4o"},
};

/* A pre_tokenizer pipeline, written as its steps' tags joined by '+', to tokenizer.ggml.pre. */
static const struct {
    const char *steps, *pre;
} known_pipeline[] = {
    {"bytelevel-regex", "gpt-2"},
    {"split:gpt2+bytelevel", "gpt-2"},
    {"split:llama3+bytelevel", "llama-bpe"},
    {"split:qwen2+bytelevel", "qwen2"},
    {"split:gpt4o+bytelevel", "gpt-4o"},
    {"digits1+bytelevel-regex", "smollm"},
};

/* Appends the tag of one pre-tokenizer step to buf; false if the step is not one we know. */
static bool step_tag(const el_json_value *p, char *buf, size_t cap, char *why, size_t why_cap) {
    const char *type = el_json_str(el_json_get(p, "type"), NULL);
    const char *tag = NULL;
    bool flag;
    if (!type) {
        snprintf(why, why_cap, "a step without a type");
        return false;
    }
    if (!strcmp(type, "ByteLevel")) {
        bool use_regex = true, prefix = false;
        el_json_bool(el_json_get(p, "use_regex"), &use_regex);
        el_json_bool(el_json_get(p, "add_prefix_space"), &prefix);
        if (prefix) {
            snprintf(why, why_cap, "ByteLevel with add_prefix_space");
            return false;
        }
        tag = use_regex ? "bytelevel-regex" : "bytelevel";
    } else if (!strcmp(type, "Digits") && el_json_bool(el_json_get(p, "individual_digits"), &flag)
               && flag) {
        tag = "digits1";
    } else if (!strcmp(type, "Split")) {
        const char *re = el_json_str(el_json_get(el_json_get(p, "pattern"), "Regex"), NULL);
        const char *behavior = el_json_str(el_json_get(p, "behavior"), NULL);
        bool invert = false;
        el_json_bool(el_json_get(p, "invert"), &invert);
        for (size_t i = 0; re && i < sizeof known_regex / sizeof known_regex[0] && !tag; i++)
            if (!strcmp(re, known_regex[i].regex)) tag = known_regex[i].tag;
        if (!tag || invert || !behavior || strcmp(behavior, "Isolated")) {
            snprintf(why, why_cap, "a Split with the unknown regex %.200s", re ? re : "(none)");
            return false;
        }
        size_t used = strlen(buf);
        snprintf(buf + used, cap - used, "%ssplit:%s", used ? "+" : "", tag);
        return true;
    } else {
        snprintf(why, why_cap, "a %s step", type);
        return false;
    }
    size_t used = strlen(buf);
    snprintf(buf + used, cap - used, "%s%s", used ? "+" : "", tag);
    return true;
}

static el_status pick_pre(const char *path, const el_json_value *pre, const char **out) {
    char steps[256] = "", why[300] = "no pre_tokenizer";
    bool ok = pre != NULL && el_json_type(pre) == EL_JSON_OBJECT;
    const char *type = el_json_str(el_json_get(pre, "type"), NULL);
    if (ok && type && !strcmp(type, "Sequence")) {
        const el_json_value *list = el_json_get(pre, "pretokenizers");
        ok = el_json_len(list) > 0;
        for (size_t i = 0; ok && i < el_json_len(list); i++)
            ok = step_tag(el_json_at(list, i), steps, sizeof steps, why, sizeof why);
    } else if (ok) {
        ok = step_tag(pre, steps, sizeof steps, why, sizeof why);
    }
    for (size_t i = 0; ok && i < sizeof known_pipeline / sizeof known_pipeline[0]; i++) {
        if (!strcmp(steps, known_pipeline[i].steps)) {
            *out = known_pipeline[i].pre;
            return EL_OK;
        }
    }
    if (ok) snprintf(why, sizeof why, "the steps %s", steps);
    return el_error(EL_ERR_UNSUPPORTED, "%s: pre_tokenizer not recognized (%s): its splitting "
                    "would be guessed, so the tokenizer is not converted", path, why);
}

/* ---------------------------------------------------------------- the two models */

static el_status set_gpt2(gguf_writer *w, const tok_state *t, const el_json_value *root) {
    const char *pre = NULL;
    el_status st = pick_pre(t->path, el_json_get(root, "pre_tokenizer"), &pre);
    char **merges = NULL;
    size_t n_merges = 0;
    if (!st) st = read_merges(t, el_json_get(root, "model"), &merges, NULL, &n_merges);
    if (!st) st = gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    if (!st) st = gguf_writer_set_str(w, "tokenizer.ggml.pre", pre);
    if (!st)
        st = gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", (const char *const *)merges,
                                     n_merges);
    free_strs(merges, n_merges);
    return st;
}

static bool is_byte_piece(const char *s) {
    static const char hex[] = "0123456789ABCDEFabcdef";
    return strlen(s) == 6 && !memcmp(s, "<0x", 3) && s[5] == '>' && strchr(hex, s[3]) &&
           strchr(hex, s[4]);
}

/* Whether the normalizer or pre-tokenizer puts "▁" before the text (SentencePiece's
 * add_dummy_prefix): a Prepend normalizer, or a Metaspace that prepends. */
static bool adds_space_prefix(const el_json_value *root) {
    const el_json_value *lists[2] = {el_json_get(root, "normalizer"),
                                     el_json_get(root, "pre_tokenizer")};
    for (int k = 0; k < 2; k++) {
        const el_json_value *v = lists[k];
        const el_json_value *seq = el_json_get(v, k ? "pretokenizers" : "normalizers");
        size_t n = seq ? el_json_len(seq) : 1;
        for (size_t i = 0; i < n; i++) {
            const el_json_value *s = seq ? el_json_at(seq, i) : v;
            const char *type = el_json_str(el_json_get(s, "type"), NULL);
            const char *scheme = el_json_str(el_json_get(s, "prepend_scheme"), NULL);
            bool prefix = false;
            if (type && !strcmp(type, "Prepend")) return true;
            if (type && !strcmp(type, "Metaspace") &&
                ((scheme && strcmp(scheme, "never")) ||
                 (el_json_bool(el_json_get(s, "add_prefix_space"), &prefix) && prefix)))
                return true;
        }
    }
    return false;
}

static el_status set_llama(gguf_writer *w, tok_state *t, const el_json_value *root) {
    const el_json_value *model = el_json_get(root, "model");
    char **merges = NULL;
    size_t n_merges = 0, *cut = NULL;
    float *scores = malloc((size_t)t->n * sizeof *scores);
    el_status st = scores ? EL_OK : el_error(EL_ERR_NOMEM, "%s: out of memory", t->path);
    if (!st) st = read_merges(t, model, &merges, &cut, &n_merges);
    for (int32_t i = 0; !st && i < t->n; i++) scores[i] = 1.0f; /* "not made by a merge yet" */
    for (size_t r = 0; !st && r < n_merges; r++) {
        char *sp = merges[r] + cut[r];
        memmove(sp, sp + 1, strlen(sp)); /* "a b" -> "ab": the piece the merge makes */
        int32_t id = el_strmap_get(&t->ids, merges[r], strlen(merges[r]));
        if (id >= 0 && scores[id] > 0.0f) scores[id] = -(float)r;
    }
    const char *unk = el_json_str(el_json_get(model, "unk_token"), NULL);
    int32_t unk_id = unk ? el_strmap_get(&t->ids, unk, strlen(unk)) : -1;
    for (int32_t i = 0; !st && i < t->n; i++) {
        if (scores[i] > 0.0f) scores[i] = -(float)n_merges - (float)i;
        if (t->type[i] == TT_NORMAL && is_byte_piece(t->text[i])) t->type[i] = TT_BYTE;
        if (i == unk_id) t->type[i] = TT_UNKNOWN;
    }
    if (!st) st = gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
    if (!st) st = gguf_writer_set_str(w, "tokenizer.ggml.pre", "default");
    if (!st) st = gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores, t->n);
    if (!st) st = gguf_writer_set_bool(w, "tokenizer.ggml.add_space_prefix",
                                       adds_space_prefix(root));
    if (!st && unk_id >= 0) st = gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id",
                                                     (uint32_t)unk_id);
    free_strs(merges, n_merges);
    free(cut);
    free(scores);
    return st;
}

/* ---------------------------------------------------------------- special tokens */

/* The id of a tokenizer_config.json token entry (a string or {"content": ...}), or -1. */
static int32_t config_token(const tok_state *t, const el_json_value *cfg, const char *key) {
    const el_json_value *v = el_json_get(cfg, key);
    if (el_json_type(v) == EL_JSON_OBJECT) v = el_json_get(v, "content");
    size_t len;
    const char *s = el_json_str(v, &len);
    return s ? el_strmap_get(&t->ids, s, len) : -1;
}

/* add_bos / add_eos from a TemplateProcessing post-processor (llama3 has no add_bos_token in
 * tokenizer_config.json: its BOS comes from here). -1: not said. */
static void template_adds(const el_json_value *post, int *bos, int *eos) {
    const char *type = el_json_str(el_json_get(post, "type"), NULL);
    if (type && !strcmp(type, "Sequence")) {
        const el_json_value *list = el_json_get(post, "processors");
        for (size_t i = 0; i < el_json_len(list); i++) template_adds(el_json_at(list, i), bos, eos);
        return;
    }
    if (!type || strcmp(type, "TemplateProcessing")) return;
    const el_json_value *single = el_json_get(post, "single");
    size_t n = el_json_len(single);
    if (n == 0) return;
    *bos = el_json_get(el_json_at(single, 0), "SpecialToken") != NULL;
    *eos = el_json_get(el_json_at(single, n - 1), "SpecialToken") != NULL;
}

static el_status set_specials(gguf_writer *w, const tok_state *t, const el_json_value *root,
                              const el_json_value *cfg, const el_hf_config *c) {
    el_status st = EL_OK;
    int32_t bos = config_token(t, cfg, "bos_token"), eos = config_token(t, cfg, "eos_token");
    int32_t pad = config_token(t, cfg, "pad_token");
    if (bos < 0 && c->bos >= 0 && c->bos < t->n) bos = c->bos;
    if (eos < 0 && c->eos >= 0 && c->eos < t->n) eos = c->eos;
    if (bos >= 0) st = gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bos);
    if (!st && eos >= 0) st = gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)eos);
    if (!st && pad >= 0)
        st = gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)pad);
    int add_bos = -1, add_eos = -1;
    template_adds(el_json_get(root, "post_processor"), &add_bos, &add_eos);
    bool b;
    if (el_json_bool(el_json_get(cfg, "add_bos_token"), &b)) add_bos = b;
    if (el_json_bool(el_json_get(cfg, "add_eos_token"), &b)) add_eos = b;
    if (!st && add_bos >= 0) st = gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", add_bos);
    if (!st && add_eos >= 0) st = gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", add_eos);
    const char *tmpl = el_json_str(el_json_get(cfg, "chat_template"), NULL);
    if (!st && tmpl) st = gguf_writer_set_str(w, "tokenizer.chat_template", tmpl);
    return st;
}

el_status el_hf_tokenizer_convert(const char *dir, const el_hf_config *c, gguf_writer *w) {
    char path[4096], cfg_path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    snprintf(cfg_path, sizeof cfg_path, "%s/tokenizer_config.json", dir);
    json_file tj, cj = {0};
    tok_state t = {.path = path, .n = c->n_vocab};
    el_status st = json_open(path, false, &tj);
    el_status cst = st ? EL_OK : json_open(cfg_path, true, &cj);
    if (cst && cst != EL_ERR_NOT_FOUND) st = cst;
    const el_json_value *root = st ? NULL : el_json_root(tj.doc);
    const el_json_value *model = el_json_get(root, "model");
    const char *mtype = el_json_str(el_json_get(model, "type"), NULL);
    if (!st && (!mtype || strcmp(mtype, "BPE")))
        st = el_error(EL_ERR_UNSUPPORTED, "%s: tokenizer model %s is not supported (BPE only)",
                      path, mtype ? mtype : "(none)");
    if (!st) {
        t.text = calloc((size_t)t.n, sizeof *t.text);
        t.type = calloc((size_t)t.n, sizeof *t.type);
        if (!t.text || !t.type) st = el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    }
    if (!st) st = read_vocab(&t, model, el_json_get(root, "added_tokens"));
    bool byte_fallback = false;
    el_json_bool(el_json_get(model, "byte_fallback"), &byte_fallback);
    if (!st) st = byte_fallback ? set_llama(w, &t, root) : set_gpt2(w, &t, root);
    if (!st)
        st = gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)t.text,
                                     (uint64_t)t.n);
    if (!st)
        st = gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, t.type, t.n);
    if (!st) st = set_specials(w, &t, root, cj.doc ? el_json_root(cj.doc) : NULL, c);
    for (int32_t i = 0; t.text && i < t.n; i++) free(t.text[i]);
    free(t.text);
    free(t.type);
    el_strmap_free(&t.ids);
    json_close(&tj);
    json_close(&cj);
    return st;
}
