/* vocab.h - a tokenizer vocabulary, built from GGUF metadata (tokenizer.ggml.*) or from a
 * llama2.c tokenizer.bin, and the one tokenize/detokenize entry point over all its kinds.
 *
 * Ownership: vocab.c loads the common parts (tokens, scores, types, special ids, the text->id
 * map) and splits input text around special tokens; spm.c, bpe.c and wpm.c tokenize the plain
 * fragments in between. */
#ifndef EL_TOKENIZER_VOCAB_H
#define EL_TOKENIZER_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgelora.h"
#include "formats/gguf.h"

typedef enum el_vocab_kind {
    EL_VOCAB_SPM, /* SentencePiece-style: scores, byte fallback (tokenizer.ggml.model = llama) */
    EL_VOCAB_BPE, /* byte-level BPE with merges (gpt2) */
    EL_VOCAB_WPM, /* WordPiece (bert) */
} el_vocab_kind;

/* Token types as GGUF stores them (tokenizer.ggml.token_type). */
typedef enum el_token_type {
    EL_TOKEN_UNDEFINED = 0,
    EL_TOKEN_NORMAL = 1,
    EL_TOKEN_UNKNOWN = 2,
    EL_TOKEN_CONTROL = 3,
    EL_TOKEN_USER_DEFINED = 4,
    EL_TOKEN_UNUSED = 5,
    EL_TOKEN_BYTE = 6,
} el_token_type;

typedef struct el_token_data {
    char *text;  /* NUL-terminated copy */
    uint32_t len;
    float score;
    el_token_type type;
} el_token_data;

/* An open-addressing map from byte strings to int32 values (token ids, merge ranks). */
typedef struct el_strmap {
    uint64_t *hashes;
    const char **keys;
    uint32_t *key_lens;
    int32_t *values;
    size_t cap; /* power of two */
    size_t n;
} el_strmap;

/* FNV-1a, 64 bits, never 0. */
uint64_t el_str_hash(const char *key, size_t len);

el_status el_strmap_init(el_strmap *m, size_t expected);
void el_strmap_free(el_strmap *m);
/* Inserts or replaces; the key is referenced, not copied. */
el_status el_strmap_put(el_strmap *m, const char *key, size_t len, int32_t value);
/* Returns the value, or -1 if absent. */
int32_t el_strmap_get(const el_strmap *m, const char *key, size_t len);

/* The key (bytes and length) of an id of a table its owner keeps. */
typedef const char *(*el_str_key_fn)(const void *owner, int32_t id, size_t *len);

/* An open-addressing index from byte strings to the ids of a table its owner keeps: a slot is
 * an id (4 bytes; el_strmap's slots, which hold the key and its hash, take 24), the key of an id
 * comes from key(owner, id), so the owner must stay where it is. Sized once for its ids, at most
 * half full. The big vocabulary tables use it (a 128k-token vocabulary with as many merges: 2 MB
 * instead of 12). */
typedef struct el_str_index {
    int32_t *slots; /* [cap] an id, or -1 */
    size_t cap;     /* power of two */
    size_t n;
    el_str_key_fn key;
    const void *owner;
} el_str_index;

/* Room for n ids. */
el_status el_str_index_init(el_str_index *ix, size_t n, el_str_key_fn key, const void *owner);
void el_str_index_free(el_str_index *ix);
/* Adds id, replacing an id with the same key; EL_ERR_INVALID_ARG past the n of init. */
el_status el_str_index_put(el_str_index *ix, int32_t id);
/* Adds id unless an id with the same key is in (that one stays), in one probe; *inserted says
 * which. EL_ERR_INVALID_ARG past the n of init, even for a key already in. */
el_status el_str_index_put_first(el_str_index *ix, int32_t id, bool *inserted);
/* The id whose key is (key, len), or -1. */
int32_t el_str_index_get(const el_str_index *ix, const char *key, size_t len);

typedef struct el_vocab {
    el_vocab_kind kind;
    int32_t n_tokens;
    el_token_data *tokens;
    char *token_text;       /* storage of every tokens[i].text */
    uint32_t max_token_len; /* longest token text in bytes */
    el_str_index token_to_id;

    int32_t bos, eos, eot, unk, pad, sep, cls, mask, nl; /* -1 if absent */
    bool add_bos, add_eos;
    bool add_space_prefix;  /* SPM: a space before the text (on by default for llama) */
    bool remove_extra_whitespaces;
    /* SPM: spaces are stored as U+2581 (GGUF); false for llama2.c's tokenizer.bin, whose pieces
     * hold real spaces */
    bool escape_spaces;

    /* special tokens (control, user-defined and unknown types, and the special ids), longest
     * first, for splitting input text */
    int32_t *special_ids;
    int32_t n_special;

    /* BPE only */
    char pre[64];           /* tokenizer.ggml.pre ("gpt-2", "llama-bpe", "qwen2", ...) */
    el_str_index merge_rank; /* "left right" -> rank */
    char *merge_text;        /* the merge keys, each followed by a NUL */
    uint32_t *merge_off;     /* [n_merges + 1] where each key starts in merge_text */
} el_vocab;

el_status el_vocab_load_gguf(const gguf_file *f, el_vocab **out);
/* A llama2.c tokenizer.bin with n_vocab entries (the checkpoint's vocab_size). */
el_status el_vocab_load_llama2c(const char *path, int32_t n_vocab, el_vocab **out);
void el_vocab_free(el_vocab *v);
/* Whether a and b are one vocabulary: the same kind and the same text and type for every id
 * (so that one's token ids mean the other's, as distillation between two models needs). */
bool el_vocab_same(const el_vocab *a, const el_vocab *b);

/* A growable list of token ids. */
typedef struct el_tokens {
    int32_t *ids;
    size_t n, cap;
} el_tokens;

el_status el_tokens_push(el_tokens *t, int32_t id);
void el_tokens_free(el_tokens *t);

/* Tokenizes text (any bytes) and appends to out. See el_tokenize in edgelora.h. */
el_status el_vocab_tokenize(const el_vocab *v, const char *text, size_t len, bool add_special,
                            bool parse_special, el_tokens *out);
/* The bytes one token stands for in output text (SPM's U+2581 becomes a space, byte tokens
 * become their byte, BPE's byte-to-unicode mapping is undone). See el_token_to_piece. */
el_status el_vocab_token_to_piece(const el_vocab *v, int32_t id, bool render_special, char *buf,
                                  size_t cap, size_t *len);

/* Per-kind tokenizers for one fragment of plain text (no special tokens in it). */
el_status el_spm_tokenize(const el_vocab *v, const char *text, size_t len, el_tokens *out);
el_status el_bpe_tokenize(const el_vocab *v, const char *text, size_t len, el_tokens *out);
el_status el_wpm_tokenize(const el_vocab *v, const char *text, size_t len, el_tokens *out);
/* BPE-specific loading, called by el_vocab_load_gguf: the pre-tokenizer and its BOS default
 * (after the common settings), and the merge table, which touches only v's merge_* fields (so
 * it may run beside el_vocab_index on another thread). */
el_status el_bpe_load_settings(el_vocab *v, const gguf_file *f);
el_status el_bpe_load_merges(el_vocab *v, const gguf_file *f);
/* The bytes of BPE token id with the byte-to-unicode mapping undone (no special-token logic;
 * el_vocab_token_to_piece handles that). Writes at most cap bytes, sets *len to the full length;
 * EL_ERR_INVALID_ARG if cap is too small. */
el_status el_bpe_token_to_piece(const el_vocab *v, int32_t id, char *buf, size_t cap, size_t *len);

#endif
