/* llama2c_vocab.c - the vocabulary of a llama2.c tokenizer.bin.
 *
 * The file is: int32 max_token_length, then for each of the checkpoint's vocab_size tokens:
 * float32 score, int32 length, that many bytes (all little-endian). Its pieces hold real spaces
 * (no U+2581); run.c's conventions are fixed, not stored: 0 is <unk>, 1 is BOS ("\n<s>\n"),
 * 2 is EOS ("\n</s>\n"), 3..258 are the byte tokens "<0xNN>". run.c's encoder is SentencePiece
 * BPE with a space before the text and byte fallback, which is what el_spm_tokenize does with
 * escape_spaces off. */
#include <string.h>

#include "core/error.h"
#include "core/mapfile.h"
#include "tokenizer/vocab.h"
#include "tokenizer/vocab_build.h"

static int32_t rd_i32(const uint8_t *p) {
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int32_t i;
    memcpy(&i, &u, 4);
    return i;
}

static float rd_f32(const uint8_t *p) {
    int32_t i = rd_i32(p);
    float f;
    memcpy(&f, &i, 4);
    return f;
}

static bool is_byte_piece(const el_token_data *t) {
    return t->len == 6 && memcmp(t->text, "<0x", 3) == 0 && t->text[5] == '>';
}

/* Walks the entries once: checks every length against the file and sums the text bytes. */
static el_status llama2c_scan(const char *path, const el_mapped_file *m, int32_t n_vocab,
                              size_t *text_bytes) {
    size_t off = 4, total = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        if (m->size - off < 8) {
            return el_error(EL_ERR_FORMAT, "%s: truncated at token %d of %d (offset %zu)", path,
                            (int)i, (int)n_vocab, off);
        }
        int32_t len = rd_i32(m->data + off + 4);
        off += 8;
        if (len < 0 || (size_t)len > m->size - off) {
            return el_error(EL_ERR_FORMAT, "%s: token %d has a bad length %d (offset %zu)", path,
                            (int)i, (int)len, off - 4);
        }
        off += (size_t)len;
        total += (size_t)len + 1;
    }
    *text_bytes = total;
    return EL_OK;
}

static el_status llama2c_build(const char *path, const el_mapped_file *m, int32_t n_vocab,
                               el_vocab **out) {
    if (m->size < 4) return el_error(EL_ERR_FORMAT, "%s: too short for a llama2.c tokenizer", path);
    size_t text_bytes = 0;
    el_status st = llama2c_scan(path, m, n_vocab, &text_bytes);
    if (st != EL_OK) return st;
    el_vocab *v;
    st = el_vocab_new(EL_VOCAB_SPM, n_vocab, text_bytes, &v);
    if (st != EL_OK) return st;
    size_t off = 4, used = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        el_token_data *t = &v->tokens[i];
        int32_t len = rd_i32(m->data + off + 4);
        el_vocab_set_text(v, i, (const char *)m->data + off + 8, (size_t)len, &used);
        t->score = rd_f32(m->data + off);
        off += 8 + (size_t)len;
        if (i == 0) t->type = EL_TOKEN_UNKNOWN;
        else if (i <= 2) t->type = EL_TOKEN_CONTROL;
        else if (is_byte_piece(t)) t->type = EL_TOKEN_BYTE;
    }
    v->unk = 0;
    v->bos = 1;
    v->eos = 2;
    v->add_bos = true;
    v->add_eos = false;
    v->add_space_prefix = true;
    v->escape_spaces = false;
    st = el_vocab_index(v, path);
    if (st != EL_OK) {
        el_vocab_free(v);
        return st;
    }
    *out = v;
    return EL_OK;
}

el_status el_vocab_load_llama2c(const char *path, int32_t n_vocab, el_vocab **out) {
    *out = NULL;
    if (n_vocab < 3) {
        return el_error(EL_ERR_INVALID_ARG, "%s: vocab_size %d is too small (BOS and EOS are 1 and 2)",
                        path, (int)n_vocab);
    }
    el_mapped_file m;
    el_status st = el_map_file(path, &m);
    if (st != EL_OK) return st;
    st = llama2c_build(path, &m, n_vocab, out);
    el_unmap_file(&m);
    return st;
}
