/* convert_llama2c.c - el_convert_llama2c: a llama2.c checkpoint and tokenizer.bin as a GGUF file
 * with the `llama` architecture's names, so that llama.cpp can load it too.
 *
 * The weights are written as F32 without change: llama2.c stores matrices [out][in], which is
 * ggml's order with ne[0] = in, and its RoPE rotates interleaved pairs as llama.cpp's `llama`
 * does, so no permutation is needed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "formats/llama2c.h"

enum { TOKEN_NORMAL = 1, TOKEN_UNKNOWN = 2, TOKEN_CONTROL = 3, TOKEN_BYTE = 6 };

static bool is_byte_piece(const char *s, uint32_t len) {
    static const char hex[] = "0123456789ABCDEFabcdef";
    return len == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>' && s[3] && s[4] &&
           strchr(hex, s[3]) && strchr(hex, s[4]);
}

/* The GGUF text of token id: SentencePiece's "▁" back in place of spaces, and the special
 * tokens without the newlines llama2.c's export put around them. NULL when out of memory. */
static char *gguf_token_text(const llama2c_token *t, int32_t id) {
    if (id == 1 && t->len == 5 && memcmp(t->text, "\n<s>\n", 5) == 0) return strdup("<s>");
    if (id == 2 && t->len == 6 && memcmp(t->text, "\n</s>\n", 6) == 0) return strdup("</s>");
    size_t n = 0;
    for (uint32_t i = 0; i < t->len; i++) n += t->text[i] == ' ' ? 3 : 1;
    char *s = malloc(n + 1), *q = s;
    if (!s) return NULL;
    for (uint32_t i = 0; i < t->len; i++) {
        if (t->text[i] == ' ') {
            memcpy(q, "\xe2\x96\x81", 3); /* U+2581 */
            q += 3;
        } else {
            *q++ = t->text[i];
        }
    }
    *q = 0;
    return s;
}

static int32_t token_type(const llama2c_token *t, int32_t id) {
    if (id == 0) return TOKEN_UNKNOWN;
    if (id == 1 || id == 2) return TOKEN_CONTROL;
    return is_byte_piece(t->text, t->len) ? TOKEN_BYTE : TOKEN_NORMAL;
}

/* The tokenizer.ggml.* keys. texts must hold tok->n_tokens pointers (freed by the caller). */
static el_status set_vocab(gguf_writer *w, const llama2c_tokenizer *tok, char **texts) {
    int32_t n = tok->n_tokens;
    float *scores = malloc((size_t)n * sizeof *scores);
    int32_t *types = malloc((size_t)n * sizeof *types);
    el_status st = scores && types ? EL_OK : el_error(EL_ERR_NOMEM, "%s: out of memory", tok->path);
    for (int32_t i = 0; i < n && !st; i++) {
        const llama2c_token *t = &tok->tokens[i];
        if (memchr(t->text, 0, t->len))
            st = el_error(EL_ERR_UNSUPPORTED, "%s: token %d contains a NUL byte", tok->path, i);
        else if (!(texts[i] = gguf_token_text(t, i)))
            st = el_error(EL_ERR_NOMEM, "%s: out of memory", tok->path);
        scores[i] = t->score;
        types[i] = token_type(t, i);
    }
    if (!st) st = gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
    if (!st)
        st = gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)texts,
                                     (uint64_t)n);
    if (!st) st = gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores, n);
    if (!st) st = gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, n);
    if (!st) st = gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1);
    if (!st) st = gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
    if (!st) st = gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    free(scores);
    free(types);
    return st;
}

static el_status set_hparams(gguf_writer *w, const llama2c_file *m) {
    const llama2c_config *c = &m->cfg;
    const char *base = strrchr(m->path, '/');
    base = base ? base + 1 : m->path;
    el_status st = gguf_writer_set_str(w, "general.architecture", "llama");
    if (!st) st = gguf_writer_set_str(w, "general.name", base);
    if (!st) st = gguf_writer_set_u32(w, "general.file_type", 0); /* all F32 */
    if (!st) st = gguf_writer_set_u32(w, "llama.context_length", (uint32_t)c->seq_len);
    if (!st) st = gguf_writer_set_u32(w, "llama.embedding_length", (uint32_t)c->dim);
    if (!st) st = gguf_writer_set_u32(w, "llama.block_count", (uint32_t)c->n_layers);
    if (!st) st = gguf_writer_set_u32(w, "llama.feed_forward_length", (uint32_t)c->hidden_dim);
    if (!st) st = gguf_writer_set_u32(w, "llama.attention.head_count", (uint32_t)c->n_heads);
    if (!st) st = gguf_writer_set_u32(w, "llama.attention.head_count_kv", (uint32_t)c->n_kv_heads);
    if (!st) st = gguf_writer_set_u32(w, "llama.rope.dimension_count", (uint32_t)c->head_size);
    if (!st) st = gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    if (!st) st = gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f);
    return st;
}

/* One F32 tensor of shape [ne0, ne1] (ne1 == 1: a vector). */
static el_status add_f32(gguf_writer *w, const char *name, const float *data, int64_t ne0,
                         int64_t ne1) {
    int64_t ne[2] = {ne0, ne1};
    return gguf_writer_add_tensor(w, name, 0, ne1 == 1 ? 1 : 2, ne, data,
                                  (uint64_t)(ne0 * ne1) * sizeof(float));
}

static el_status add_tensors(gguf_writer *w, const llama2c_file *m) {
    const llama2c_config *c = &m->cfg;
    const llama2c_weights *W = &m->w;
    int64_t d = c->dim, h = c->hidden_dim, kv = c->kv_dim;
    el_status st = add_f32(w, "token_embd.weight", W->token_embedding, d, c->vocab_size);
    for (int32_t l = 0; l < c->n_layers && !st; l++) {
        const struct {
            const char *name;
            const float *base;
            int64_t ne0, ne1;
        } t[] = {
            {"attn_norm", W->rms_att, d, 1}, {"attn_q", W->wq, d, d},
            {"attn_k", W->wk, d, kv},        {"attn_v", W->wv, d, kv},
            {"attn_output", W->wo, d, d},    {"ffn_norm", W->rms_ffn, d, 1},
            {"ffn_gate", W->w1, d, h},       {"ffn_down", W->w2, h, d},
            {"ffn_up", W->w3, d, h},
        };
        for (size_t i = 0; i < sizeof t / sizeof t[0] && !st; i++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, t[i].name);
            st = add_f32(w, name, t[i].base + (size_t)l * (size_t)(t[i].ne0 * t[i].ne1), t[i].ne0,
                         t[i].ne1);
        }
    }
    if (!st) st = add_f32(w, "output_norm.weight", W->rms_final, d, 1);
    if (!st && !c->shared_classifier) st = add_f32(w, "output.weight", W->wcls, d, c->vocab_size);
    return st;
}

el_status el_convert_llama2c(const char *model_path, const char *tokenizer_path,
                             const char *out_path) {
    if (!model_path || !out_path)
        return el_error(EL_ERR_INVALID_ARG, "el_convert_llama2c: a path is NULL");
    if (gguf_is_gguf_file(model_path))
        return el_error(EL_ERR_FORMAT, "%s is a GGUF file already: there is nothing to "
                        "convert", model_path);
    llama2c_file *m = NULL;
    llama2c_tokenizer *tok = NULL;
    gguf_writer *w = NULL;
    char **texts = NULL;
    /* the checkpoint first: what it is wrong with says more than a missing tokenizer */
    el_status st = llama2c_open(model_path, &m);
    if (!st && !tokenizer_path)
        st = el_error(EL_ERR_INVALID_ARG, "%s is a llama2.c checkpoint: converting it needs its "
                      "tokenizer too (tokenizer.bin)", model_path);
    if (!st) st = llama2c_tokenizer_open(tokenizer_path, &tok);
    if (!st && tok->n_tokens != m->cfg.vocab_size)
        st = el_error(EL_ERR_MISMATCH, "%s: %d tokens, but the checkpoint %s has vocab_size %d",
                      tokenizer_path, tok->n_tokens, model_path, m->cfg.vocab_size);
    if (!st && !(w = gguf_writer_create()))
        st = el_error(EL_ERR_NOMEM, "%s: out of memory", out_path);
    if (!st && !(texts = calloc((size_t)tok->n_tokens, sizeof *texts)))
        st = el_error(EL_ERR_NOMEM, "%s: out of memory", out_path);
    if (!st) st = set_hparams(w, m);
    if (!st) st = set_vocab(w, tok, texts);
    if (!st) st = add_tensors(w, m);
    if (!st) st = gguf_writer_write(w, out_path);
    for (int32_t i = 0; texts && i < tok->n_tokens; i++) free(texts[i]);
    free(texts);
    gguf_writer_free(w);
    llama2c_tokenizer_close(tok);
    llama2c_close(m);
    return st;
}
