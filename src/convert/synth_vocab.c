/* synth_vocab.c - full-size tokenizers for synthesized models: valid (every merge joins two
 * tokens that exist before it, every text is unique and valid UTF-8, the special tokens are
 * those of the real model at their real ids) but made up, so no download is needed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/synth.h"
#include "core/error.h"
#include "tokenizer/vocab.h"

enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER_DEFINED = 4, TT_UNUSED = 5,
       TT_BYTE = 6 };
enum { MAX_PIECE = 16 }; /* bytes of a generated piece */

typedef struct vocab_build {
    int32_t n;
    char **text;   /* [n] */
    int32_t *type; /* [n] */
    float *score;  /* [n] */
    char **merges;
    int32_t n_merges;
    el_strmap ids;
} vocab_build;

static el_status put(vocab_build *v, int32_t id, const char *s, int32_t type) {
    if (!(v->text[id] = strdup(s))) return el_error(EL_ERR_NOMEM, "synth: out of memory");
    v->type[id] = type;
    return el_strmap_put(&v->ids, v->text[id], strlen(s), id);
}

/* GPT-2's printable stand-in for byte b, as UTF-8 (byte-level BPE vocabularies store these). */
static void byte_char(int b, char out[3]) {
    int cp;
    if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) {
        cp = b;
    } else { /* the others, in order, from U+0100 on */
        int k = 0;
        for (int i = 0; i < b; i++)
            k += !((i >= '!' && i <= '~') || (i >= 0xA1 && i <= 0xAC) || (i >= 0xAE && i <= 0xFF));
        cp = 256 + k;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        out[2] = 0;
    }
}

/* Fills ids [from, to) with new tokens, each two earlier tokens of [base, id) joined (recorded
 * as a merge "a b" if merges is set). Short tokens are picked more often, as in real vocabs. */
static el_status grow(vocab_build *v, int32_t base, int32_t from, int32_t to, bool merges,
                      uint64_t *rng) {
    char buf[2 * MAX_PIECE + 2];
    for (int32_t id = from; id < to; id++) {
        for (int tries = 0;; tries++) {
            uint64_t r = el_synth_next(rng);
            int32_t span = id - base;
            /* the left part from anywhere, the right part mostly from the first few thousand */
            int32_t a = base + (int32_t)((r & 0xFFFFFFFF) % (uint64_t)span);
            int32_t b = base + (int32_t)((r >> 32) % (uint64_t)(span < 3000 ? span : 3000));
            size_t la = strlen(v->text[a]), lb = strlen(v->text[b]);
            bool ok = la + lb <= MAX_PIECE;
            if (ok) {
                snprintf(buf, sizeof buf, "%s%s", v->text[a], v->text[b]);
                ok = el_strmap_get(&v->ids, buf, strlen(buf)) < 0;
            }
            if (!ok) {
                if (tries < 100000) continue;
                return el_error(EL_ERR_INVALID_ARG, "synth: cannot make %d distinct tokens", to);
            }
            el_status st = put(v, id, buf, TT_NORMAL);
            if (st) return st;
            if (merges) {
                snprintf(buf, sizeof buf, "%s %s", v->text[a], v->text[b]);
                if (!(v->merges[v->n_merges++] = strdup(buf)))
                    return el_error(EL_ERR_NOMEM, "synth: out of memory");
            }
            break;
        }
    }
    return EL_OK;
}

/* Ids [first, to): the 256 byte tokens, "▁", single characters, then pieces, scored in order
 * (the special tokens before `first` score 0, as the bytes do). */
static el_status spm_pieces(vocab_build *v, int32_t first, int32_t to, uint64_t *rng) {
    static const char alphabet[] = "etaoinshrdlcumwfgypbvkjxqzETAOINSHRDLCUMWFGYPBVKJXQZ"
                                   "0123456789.,!?'\"-:;()";
    el_status st = EL_OK;
    for (int b = 0; b < 256 && !st; b++) {
        char s[8];
        snprintf(s, sizeof s, "<0x%02X>", b);
        st = put(v, first + b, s, TT_BYTE);
    }
    int32_t base = first + 256, id = base;
    if (!st) st = put(v, id++, "\xe2\x96\x81", TT_NORMAL); /* "▁" */
    for (const char *c = alphabet; *c && !st; c++) {
        char s[2] = {*c, 0};
        st = put(v, id++, s, TT_NORMAL);
    }
    if (!st) st = grow(v, base, id, to, false, rng);
    for (int32_t i = 0; i < to; i++) v->score[i] = i < base ? 0.0f : -(float)(i - base);
    return st;
}

/* Llama-2's SentencePiece layout over ids [0, to). */
static el_status spm_ids(vocab_build *v, int32_t to, uint64_t *rng) {
    el_status st = put(v, 0, "<unk>", TT_UNKNOWN);
    if (!st) st = put(v, 1, "<s>", TT_CONTROL);
    if (!st) st = put(v, 2, "</s>", TT_CONTROL);
    return st ? st : spm_pieces(v, 3, to, rng);
}

static el_status spm(vocab_build *v, uint64_t *rng) { return spm_ids(v, v->n, rng); }

/* Phi-3's: Llama-2's 32000, its 11 added tokens (llama.cpp looks for <|endoftext|> in any model
 * named phi-3), then padding, scored as llama.cpp's converter scores them. */
static el_status phi3(vocab_build *v, uint64_t *rng) {
    static const char *const added[] = {
        "<|endoftext|>", "<|assistant|>", "<|placeholder1|>", "<|placeholder2|>",
        "<|placeholder3|>", "<|placeholder4|>", "<|system|>", "<|end|>", "<|placeholder5|>",
        "<|placeholder6|>", "<|user|>"};
    el_status st = spm_ids(v, 32000, rng);
    for (int k = 0; k < 11 && !st; k++) {
        st = put(v, 32000 + k, added[k], TT_CONTROL);
        v->score[32000 + k] = -1000.0f;
    }
    for (int32_t id = 32011; id < v->n && !st; id++) {
        char s[32];
        snprintf(s, sizeof s, "[PAD%d]", id);
        st = put(v, id, s, TT_UNUSED);
        v->score[id] = -10000.0f;
    }
    return st;
}

/* Gemma 3's special tokens at their ids (<pad> <eos> <bos> <unk> <mask>, the turn markers at
 * 105 and 106), placeholders between them, then SentencePiece pieces. */
static el_status gemma(vocab_build *v, uint64_t *rng) {
    static const char *const special[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>"};
    el_status st = EL_OK;
    for (int32_t i = 0; i < 5 && !st; i++)
        st = put(v, i, special[i], i == 3 ? TT_UNKNOWN : TT_CONTROL);
    for (int32_t i = 5; i < 105 && !st; i++) {
        char s[24];
        snprintf(s, sizeof s, "<unused%d>", i - 5);
        st = put(v, i, s, TT_CONTROL);
    }
    if (!st) st = put(v, 105, "<start_of_turn>", TT_CONTROL);
    if (!st) st = put(v, 106, "<end_of_turn>", TT_CONTROL);
    return st ? st : spm_pieces(v, 107, v->n, rng);
}

static el_status bytes_and_merges(vocab_build *v, int32_t from, int32_t to, uint64_t *rng) {
    el_status st = EL_OK;
    for (int b = 0; b < 256 && !st; b++) {
        char s[3];
        byte_char(b, s);
        st = put(v, from + b, s, TT_NORMAL);
    }
    return st ? st : grow(v, from, from + 256, to, true, rng);
}

static el_status llama3(vocab_build *v, uint64_t *rng) {
    static const char *const named[] = {"<|begin_of_text|>", "<|end_of_text|>", NULL, NULL,
                                        "<|finetune_right_pad_id|>", NULL, "<|start_header_id|>",
                                        "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>",
                                        "<|python_tag|>"};
    el_status st = bytes_and_merges(v, 0, 128000, rng);
    int reserved = 0;
    for (int32_t id = 128000; id < v->n && !st; id++) {
        int k = id - 128000;
        char s[48];
        if (k < 11 && named[k])
            snprintf(s, sizeof s, "%s", named[k]);
        else
            snprintf(s, sizeof s, "<|reserved_special_token_%d|>", reserved++);
        st = put(v, id, s, TT_CONTROL);
    }
    return st;
}

/* Qwen2's 151643 BPE tokens and 22 added ones, then `extra` more added tokens (Qwen3's), then
 * padding up to n. */
static el_status qwen(vocab_build *v, const char *const *extra, int n_extra, uint64_t *rng) {
    static const char *const added[] = {
        "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
        "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>",
        "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
        "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
        "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"};
    el_status st = bytes_and_merges(v, 0, 151643, rng);
    for (int k = 0; k < 22 && !st; k++) /* <tool_call> ... <|file_sep|> are not "special" */
        st = put(v, 151643 + k, added[k], k < 14 ? TT_CONTROL : TT_USER_DEFINED);
    for (int k = 0; k < n_extra && !st; k++) st = put(v, 151665 + k, extra[k], TT_USER_DEFINED);
    for (int32_t id = 151665 + n_extra; id < v->n && !st; id++) {
        char s[32];
        snprintf(s, sizeof s, "[PAD%d]", id);
        st = put(v, id, s, TT_UNUSED);
    }
    return st;
}

static el_status qwen2(vocab_build *v, uint64_t *rng) { return qwen(v, NULL, 0, rng); }

static el_status qwen3(vocab_build *v, uint64_t *rng) {
    static const char *const extra[] = {"<tool_response>", "</tool_response>", "<think>",
                                        "</think>"};
    return qwen(v, extra, 4, rng);
}

static el_status smollm(vocab_build *v, uint64_t *rng) {
    static const char *const special[] = {
        "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<reponame>",
        "<file_sep>", "<filename>", "<gh_stars>", "<issue_start>", "<issue_comment>",
        "<issue_closed>", "<jupyter_start>", "<jupyter_text>", "<jupyter_code>",
        "<jupyter_output>", "<jupyter_script>", "<empty_output>"};
    el_status st = EL_OK;
    for (int k = 0; k < 17 && !st; k++) st = put(v, k, special[k], TT_CONTROL);
    return st ? st : bytes_and_merges(v, 17, v->n, rng);
}

static el_status write_keys(const vocab_build *v, el_synth_vocab kind, gguf_writer *w) {
    static const struct {
        const char *model, *pre;
        int32_t bos, eos, eot, pad;
        bool add_bos;
    } k[] = {
        [EL_SYNTH_VOCAB_SPM] = {"llama", "default", 1, 2, -1, -1, true},
        [EL_SYNTH_VOCAB_LLAMA3] = {"gpt2", "llama-bpe", 128000, 128001, 128009, -1, true},
        [EL_SYNTH_VOCAB_QWEN2] = {"gpt2", "qwen2", 151643, 151643, 151645, 151643, false},
        [EL_SYNTH_VOCAB_SMOLLM] = {"gpt2", "smollm", 0, 0, -1, -1, false},
        [EL_SYNTH_VOCAB_GEMMA] = {"llama", "default", 2, 1, 106, 0, true},
        [EL_SYNTH_VOCAB_PHI3] = {"llama", "default", 1, 32000, 32007, 32000, false},
        [EL_SYNTH_VOCAB_QWEN3] = {"gpt2", "qwen2", 151643, 151645, 151645, 151643, false},
    };
    el_status st = gguf_writer_set_str(w, "tokenizer.ggml.model", k[kind].model);
    if (!st) st = gguf_writer_set_str(w, "tokenizer.ggml.pre", k[kind].pre);
    if (!st)
        st = gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->text,
                                     (uint64_t)v->n);
    if (!st) st = gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, v->type,
                                      (uint64_t)v->n);
    if (!st && (kind == EL_SYNTH_VOCAB_SPM || kind == EL_SYNTH_VOCAB_GEMMA ||
                kind == EL_SYNTH_VOCAB_PHI3)) {
        st = gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, v->score,
                                 (uint64_t)v->n);
        if (!st)
            st = gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id",
                                     kind == EL_SYNTH_VOCAB_GEMMA ? 3 : 0);
    }
    /* Gemma's SentencePiece model adds no dummy "▁" before the text */
    if (!st && kind == EL_SYNTH_VOCAB_GEMMA)
        st = gguf_writer_set_bool(w, "tokenizer.ggml.add_space_prefix", false);
    if (!st && v->n_merges)
        st = gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", (const char *const *)v->merges,
                                     (uint64_t)v->n_merges);
    if (!st) st = gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)k[kind].bos);
    if (!st) st = gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)k[kind].eos);
    if (!st && k[kind].eot >= 0)
        st = gguf_writer_set_u32(w, "tokenizer.ggml.eot_token_id", (uint32_t)k[kind].eot);
    if (!st && k[kind].pad >= 0)
        st = gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)k[kind].pad);
    if (!st) st = gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", k[kind].add_bos);
    return st;
}

el_status el_synth_vocab_write(el_synth_vocab kind, int32_t n_vocab, uint64_t seed,
                               gguf_writer *w) {
    static const int32_t min_vocab[] = {[EL_SYNTH_VOCAB_SPM] = 400,
                                        [EL_SYNTH_VOCAB_LLAMA3] = 128256,
                                        [EL_SYNTH_VOCAB_QWEN2] = 151665,
                                        [EL_SYNTH_VOCAB_SMOLLM] = 400,
                                        [EL_SYNTH_VOCAB_GEMMA] = 600,
                                        [EL_SYNTH_VOCAB_PHI3] = 32011,
                                        [EL_SYNTH_VOCAB_QWEN3] = 151669};
    if (n_vocab < min_vocab[kind])
        return el_error(EL_ERR_INVALID_ARG, "synth: vocabulary of %d tokens is too small",
                        n_vocab);
    vocab_build v = {.n = n_vocab};
    v.text = calloc((size_t)n_vocab, sizeof *v.text);
    v.type = calloc((size_t)n_vocab, sizeof *v.type);
    v.score = calloc((size_t)n_vocab, sizeof *v.score);
    v.merges = calloc((size_t)n_vocab, sizeof *v.merges);
    uint64_t rng = seed ^ 0x5EEDF00Dull;
    el_status st = v.text && v.type && v.score && v.merges
                       ? el_strmap_init(&v.ids, (size_t)n_vocab)
                       : el_error(EL_ERR_NOMEM, "synth: out of memory");
    if (!st) {
        switch (kind) {
        case EL_SYNTH_VOCAB_SPM: st = spm(&v, &rng); break;
        case EL_SYNTH_VOCAB_LLAMA3: st = llama3(&v, &rng); break;
        case EL_SYNTH_VOCAB_QWEN2: st = qwen2(&v, &rng); break;
        case EL_SYNTH_VOCAB_SMOLLM: st = smollm(&v, &rng); break;
        case EL_SYNTH_VOCAB_GEMMA: st = gemma(&v, &rng); break;
        case EL_SYNTH_VOCAB_PHI3: st = phi3(&v, &rng); break;
        case EL_SYNTH_VOCAB_QWEN3: st = qwen3(&v, &rng); break;
        }
    }
    if (!st) st = write_keys(&v, kind, w);
    for (int32_t i = 0; i < n_vocab; i++) {
        if (v.text) free(v.text[i]);
        if (v.merges) free(v.merges[i]);
    }
    free(v.text);
    free(v.type);
    free(v.score);
    free(v.merges);
    el_strmap_free(&v.ids);
    return st;
}
