/* tmodel.h - the float32 training model: a llama-style decoder (RMSNorm, NORM-style RoPE, causal
 * grouped-query attention, SwiGLU, tied or untied output head) whose forward pass stores the
 * activations its backward pass needs.
 *
 * Parameters are described by a table (name as in GGUF, shape, offset); one float block holds all
 * of them, and gradients and AdamW moments are blocks of the same size and layout, so the
 * optimizer is one flat loop. LoRA parameters (A and B per targeted linear layer) have their own
 * table and block: LoRA training computes no gradient for the base block at all.
 *
 * Shapes are row-major; a linear weight W is [n_out][n_in] (GGUF ne = {n_in, n_out}) and computes
 * y = x W^T over rows. LoRA adds s * (x A^T) B^T with A [rank][n_in], B [n_out][rank], s = alpha /
 * rank (llama.cpp's lora_a / lora_b). */
#ifndef EL_TRAIN_TMODEL_H
#define EL_TRAIN_TMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/threadpool.h"
#include "edgelora-tools.h"

typedef struct el_tconfig {
    int32_t dim, n_layer, n_head, n_head_kv, n_ff, n_ctx, n_vocab;
    bool tied;
    float rms_eps, rope_base;
} el_tconfig;

/* The tensors of one block, in table order; the 7 linear ones in el_linear's order after them. */
typedef enum el_tkind {
    EL_TK_ATTN_NORM,
    EL_TK_FFN_NORM,
    EL_TK_Q,
    EL_TK_K,
    EL_TK_V,
    EL_TK_O,
    EL_TK_GATE,
    EL_TK_UP,
    EL_TK_DOWN,
    EL_TK_COUNT
} el_tkind;
#define EL_TK_FIRST_LINEAR EL_TK_Q
#define EL_TN_LINEAR 7

typedef struct el_ttensor {
    char name[64];     /* GGUF name ("blk.0.attn_q.weight", "....lora_a") */
    int64_t n_out;     /* rows (1 for a vector) */
    int64_t n_in;      /* elements per row */
    size_t offset;     /* in floats from the block start */
    bool decay;        /* AdamW weight decay applies (matrices, not norms) */
} el_ttensor;

typedef struct el_ttable {
    el_ttensor *t;
    int32_t n;
    size_t n_floats;
} el_ttable;

/* Quantization-aware training (fakequant.h): the forward computes as the model's integer form
 * will. Sites are the inputs of each block's 7 linear layers ([n_layer][7], el_linear's order)
 * and, last, the output head's. */
typedef struct el_tqat {
    bool int4_weights;  /* the blocks' linear weights on the W4 grid (train --qat w4a8) */
    float *x_scale;     /* [n_layer * 7 + 1] static int8 scale of each site; 0: a float input */
    float momentum;     /* > 0: a training forward moves each block site's scale this far toward
                         * its batch's amax / 127 (the first one sets it) */
    float *wq;          /* base-layout block: the linear weights on the grid, made each forward */
    /* under a quantization profile (model/profile.h): the int8 grids of each slot's adapter term,
     * [n_layer * 7][4] = the scales of its input x, of A, of A x and of B; y += s (A x) B on
     * them, as the run time computes int8 adapters. NULL: float adapter terms */
    float *lora_scale;
    float *lwq;         /* LoRA-layout block: A and B on their grids, made each forward */
} el_tqat;

typedef struct el_tmodel {
    el_tconfig c;
    el_ttable base;      /* tok_embd, per layer EL_TK_COUNT tensors, output_norm, [output] */
    float *w;            /* base parameters */
    /* LoRA (rank 0: none) */
    int32_t rank;
    float alpha;
    uint32_t targets;    /* bit i: linear i (0 = q ... 6 = down) */
    el_ttable lora;      /* per layer, per target: A then B */
    int32_t *lora_idx;   /* [n_layer][7]: index of A in lora.t, or -1 */
    float *lw;           /* LoRA parameters */
    /* forecast slots (none: 0): input vectors that rows with token id -1-j read instead of an
     * embedding row (self-speculative decoding's forecast embeddings) */
    el_ttable forecast;  /* one tensor, n_slots rows of dim */
    float *fw;
    el_tqat qat;         /* x_scale NULL: no quantization-aware training */
    /* a UniQL-sorted model's Q/K (compress/sort.h): [n_layer][n_head_kv][hd/2] the original RoPE
     * pair of each stored pair, or NULL: the identity */
    int32_t *rope_pairs;
} el_tmodel;

/* Masked training of a sorted model (UniQL): per layer, the MLP channels, Q/K dims of each head
 * and V dims of each KV head kept, the trailing ones masked to zero in the forward and backward,
 * as the pruned run time drops them. Each array [n_layer]. */
typedef struct el_tprune {
    const int32_t *ff, *qk, *vo;
} el_tprune;

/* Parses "q,k,v,o,gate,up,down" (any subset, any order) into target bits. */
el_status el_lora_parse_targets(const char *s, uint32_t *out);

el_status el_tmodel_init(el_tmodel *m, const el_tconfig *c);
/* Adds a LoRA block (rank, alpha, targets); A gets N(0, 1/rank)-ish values from seed, B zeros. */
el_status el_tmodel_add_lora(el_tmodel *m, int32_t rank, float alpha, uint32_t targets,
                             uint64_t seed);
/* Adds n_slots forecast vectors, each the mean token embedding plus N(0, 0.02) noise from seed (a
 * point among the inputs the model knows). */
el_status el_tmodel_add_forecast(el_tmodel *m, int32_t n_slots, uint64_t seed);
/* Turns on quantization-aware training with every site's scale 0 (set them, or give a momentum
 * to track them); int4_weights needs rows of whole 32-element chunks, as the W4 type does. */
el_status el_tmodel_set_qat(el_tmodel *m, bool int4_weights, float momentum);
/* Puts the adapter terms on int8 grids (after el_tmodel_set_qat and el_tmodel_add_lora): all
 * four scales of every slot the LoRA block targets, lora_scale[slot * 4 ...], are then set by the
 * caller (> 0). */
el_status el_tmodel_set_qat_lora(el_tmodel *m);
/* Copies a sorted model's RoPE pair index ([n_layer][n_head_kv][hd/2], each head's a
 * permutation of its pairs). */
el_status el_tmodel_set_rope_pairs(el_tmodel *m, const int32_t *pairs);
void el_tmodel_free(el_tmodel *m);
/* Random init: matrices N(0, 0.02) (output projections scaled by 1/sqrt(2 n_layer)), norms 1. */
void el_tmodel_randomize(el_tmodel *m, uint64_t seed);

/* Pointer to tensor kind k of layer il (or tok_embd / output_norm / output via the helpers) in a
 * block laid out like the base table. */
float *el_tm_layer(const el_tmodel *m, float *block, int il, el_tkind k);
float *el_tm_embd(const el_tmodel *m, float *block);
float *el_tm_out_norm(const el_tmodel *m, float *block);
float *el_tm_output(const el_tmodel *m, float *block); /* tok_embd when tied */

/* Activations of one forward pass of B sequences of T tokens, kept for the backward pass. */
typedef struct el_tacts el_tacts;

/* Sized for m as it is: set its LoRA block and QAT (el_tmodel_set_qat, _set_qat_lora) first. */
el_status el_tacts_create(const el_tmodel *m, int32_t B, int32_t T, el_tacts **out);
void el_tacts_free(el_tacts *a);
/* Distillation: with teacher set (a teacher's logits for the next forward's tokens, [B*T][V];
 * the forward turns them into its probabilities), forwards give the masked mean of
 * KL(teacher || model) in place of the cross-entropy (the targets are not read), and backwards
 * its gradient. NULL: cross-entropy again. */
void el_tacts_set_teacher(el_tacts *a, float *teacher);
/* Whether forwards on a are training ones (the trainer's steps: QAT scales are tracked), or
 * evaluations (the default). */
void el_tacts_set_training(el_tacts *a, bool training);
/* The kept sizes later forwards and backwards on a mask to (the arrays stay the caller's and are
 * read then); NULL: nothing masked. */
void el_tacts_set_prune(el_tacts *a, const el_tprune *kept);
/* For finite-difference checks of QAT gradients: the next forward records where each value fell
 * on its grid (its rounding offset, or its clipping) and every later one keeps it, so the loss
 * becomes the smooth function whose exact gradient the straight-through one is. Not for int8
 * adapter terms (test_train_golden checks those against PyTorch). */
el_status el_tacts_hold_rounding(el_tacts *a, const el_tmodel *m);

/* Forward over tokens [B][T] (an id -1-j is forecast vector j); targets [B][T] and mask [B][T] (NULL mask: every position counts)
 * give the mean cross-entropy over masked positions (returned; 0 if none). If logits is not NULL
 * it receives the [B*T][n_vocab] logits. */
float el_tmodel_forward(const el_tmodel *m, el_tacts *a, el_threadpool *tp, const int32_t *tokens,
                        const int32_t *targets, const float *mask, float *logits);

/* Backward of the last forward: adds d(scale * loss)/d(param) into grads (a base-layout block,
 * or NULL to keep the base frozen), lgrads (a LoRA-layout block, or NULL) and fgrads (a
 * forecast-layout block, or NULL). */
void el_tmodel_backward(const el_tmodel *m, el_tacts *a, el_threadpool *tp, float *grads,
                        float *lgrads, float *fgrads, float scale);

#endif
