/* ctg.h - concurrent token generation: the state of a group of variants (see the "concurrent
 * variants" section of edgelora.h), shared by ctg.c (the group's life and steps), ctg_first.c
 * (choosing distinct first tokens) and ctg_text.c (text, stop strings, streaming). */
#ifndef EL_RUNTIME_CTG_H
#define EL_RUNTIME_CTG_H

#include "edgelora.h"

typedef struct ctg_variant {
    el_variant_params p;   /* the caller's settings; bindings and stop point at our copies */
    el_binding *bindings;  /* [p.n_bindings] */
    char **stop;           /* [p.n_stop] NUL-terminated copies */
    size_t stop_max;       /* longest stop string */
    el_sampler *smp;
    int32_t *seq;          /* [n_prompt + max_tokens]: the prompt, then the generated tokens */
    int32_t n_tokens;      /* generated so far */
    int32_t n_cells;       /* rows decoded for it (its own KV cells) */
    char *full;            /* the text of seq (prompt and continuation), NUL-terminated */
    size_t text_len;       /* bytes of the continuation, at full + prompt_text_len */
    size_t emitted;        /* bytes of text handed to on_text */
    el_finish finish;
    el_token_logprob *lp;  /* [max_tokens] when the group records logprobs, else NULL */
} ctg_variant;

struct el_variants {
    el_context *ctx;
    const el_model *model;
    int32_t n_variants;
    int32_t seq_id;
    int32_t n_prompt;
    int32_t n_vocab;
    size_t prompt_text_len;   /* bytes of the prompt's own text inside a variant's full text */
    el_first_policy first;
    int32_t logprobs;         /* alternatives a token's el_token_logprob holds; -1: none kept */
    int32_t n_past;           /* prompt tokens the first sequence held at the start */
    el_variant_text_fn on_text;
    void *user;
    ctg_variant *v;           /* [n_variants] */
    /* scratch */
    int32_t *row_variant;     /* [n_variants] variant of each row of the pending step */
    int32_t n_pending;        /* rows handed out by el_variants_next_rows */
    int32_t *row_token, *row_pos, *row_seq; /* [n_variants] rows of el_variants_step */
    int8_t *row_logits;       /* [n_variants] all ones */
    uint8_t *taken;           /* [n_vocab] first tokens already chosen */
    int32_t *cand;            /* [n_vocab] sampler candidates */
    float *masked;            /* [n_vocab] logits with the excluded tokens at -inf */
};

/* Chooses every variant's first token from the logits after the prompt (the policy of
 * edgelora.h) into first[n_variants]. The samplers must have seen the prompt. */
el_status ctg_choose_first(el_variants *g, const float *logits, int32_t *first);

/* Appends token to variant i (it was not end-of-generation, or ignore_eos): its sampler, tokens and
 * text; finishes it on a stop string or at max_tokens; streams the text that became final. */
el_status ctg_add_token(el_variants *g, int32_t i, int32_t token);

/* Ends variant i for reason and streams the rest of its text. */
void ctg_finish(el_variants *g, int32_t i, el_finish reason);

#endif
