/* synth.h - internal to el_synth: the synthesized tokenizer of a shape. */
#ifndef EL_CONVERT_SYNTH_H
#define EL_CONVERT_SYNTH_H

#include <stdint.h>

#include "edgelora-tools.h"
#include "formats/gguf.h"

typedef enum el_synth_vocab {
    EL_SYNTH_VOCAB_SPM,    /* Llama-2's 32000: <unk> <s> </s>, 256 byte tokens, pieces */
    EL_SYNTH_VOCAB_LLAMA3, /* 128000 byte-level BPE tokens, then 256 special tokens */
    EL_SYNTH_VOCAB_QWEN2,  /* 151643 BPE tokens, 22 added tokens, padding to n_vocab */
    EL_SYNTH_VOCAB_SMOLLM, /* 17 special tokens, then BPE tokens */
    EL_SYNTH_VOCAB_GEMMA,  /* Gemma 3's special tokens, 256 byte tokens, SentencePiece pieces */
    EL_SYNTH_VOCAB_PHI3,   /* Llama-2's 32000, 11 added tokens (<|endoftext|> ...), padding */
    EL_SYNTH_VOCAB_QWEN3,  /* QWEN2's with <think> and three more added tokens */
} el_synth_vocab;

/* Sets tokenizer.ggml.* keys for a vocabulary of n_vocab tokens of that kind: the real special
 * tokens at their real ids, the 256 byte tokens, and generated pieces / merges (each merge joins
 * two earlier tokens into a new one) up to the real size. Deterministic for a seed. */
el_status el_synth_vocab_write(el_synth_vocab kind, int32_t n_vocab, uint64_t seed,
                               gguf_writer *w);

/* splitmix64: the generator of everything synthesized. */
static inline uint64_t el_synth_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#endif
