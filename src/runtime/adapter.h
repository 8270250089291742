/* adapter.h - a loaded LoRA adapter: a table of (A, B) pairs, one slot per (layer, linear) of the
 * model it was checked against, in one owned block of memory (the file is closed after loading).
 *
 * Loaders (GGUF, PEFT) describe what they found as el_adapter_src entries, which point into the
 * open file; el_adapter_build checks every entry against the model and copies it into the block
 * (applying the RoPE row permutation where asked), so both formats share one validation. */
#ifndef EL_RUNTIME_ADAPTER_H
#define EL_RUNTIME_ADAPTER_H

#include <stdatomic.h>

#include "kernels/lora.h"
#include "model/model.h"

struct el_adapter {
    atomic_int refs;
    const el_model *model;
    char *path;
    char *name;
    const char *format;   /* "gguf" or "peft" */
    float alpha;
    int32_t n_targets;
    int32_t rank_max;
    bool quantized;       /* some pair is q8_0, or every pair int8 under the model's profile */
    uint64_t profile_id;  /* the profile the file says its values were tuned for (0: none) */
    uint64_t uniql_basis; /* the UniQL-sorted basis it was re-expressed in (0: the original) */
    uint64_t n_values;    /* values quantized to the profile's grid when loaded (0: none) */
    uint64_t n_clipped;   /* of those, the ones beyond the grid's range, clamped */
    uint64_t bytes;
    el_lora_pair *table;  /* [n_layer * EL_N_LINEAR], slot = el_linear_slot(il, linear) */
    void *block;          /* every A and B */
};

/* What a loader found for one slot. Data points into the open file. */
typedef struct el_adapter_src {
    const char *a_name, *b_name; /* tensor names, for messages (NULL: slot empty) */
    el_type a_type, b_type;
    const void *a_data, *b_data;
    int64_t a_in, a_rank;        /* A as stored: a_rank rows of a_in */
    int64_t b_rank, b_out;       /* B as stored: b_out rows of b_rank */
    uint64_t a_bytes, b_bytes;   /* bytes present in the file */
    float scale;                 /* alpha / rank etc. */
    int32_t permute_heads;       /* 0, or the head count of the HF -> GGUF RoPE row order for B */
} el_adapter_src;

/* Each matrix of an adapter's block starts on a 64-byte boundary. */
enum { EL_ADAPTER_ALIGN = 64 };

static inline size_t el_adapter_align_up(size_t n) {
    return (n + EL_ADAPTER_ALIGN - 1) / EL_ADAPTER_ALIGN * EL_ADAPTER_ALIGN;
}

/* Block tensor name suffixes ("attn_q", ...) of the linears, as in GGUF. */
const char *el_linear_gguf_name(el_linear which);

/* A pair's B as floats, n_out rows of rank (unpacked where it is stored packed), for writing or
 * merging it (A: el_weight_floats). */
el_status el_lora_b_floats(const el_lora_pair *p, float *out);

/* Gives the slots of block il's linears which[0..n) their B from one B (the b_* fields and
 * permute_heads of `b`) that stacks their outputs in that order: one linear takes it whole (its
 * rows are checked against the base later), the parts of a fused projection (phi3's qkv_proj /
 * attn_qkv, gate_up_proj / ffn_up) each their own rows; their A is the one A they share.
 * EL_ERR_MISMATCH naming path and B if its rows are not the parts' sum. */
el_status el_adapter_split_b(const el_model *m, int il, const el_linear *which, int n,
                             const el_adapter_src *b, el_adapter_src *src, const char *path);

/* Checks src[n_layer * EL_N_LINEAR] against ad->model and fills ad's table and block.
 * path names the file in errors. */
el_status el_adapter_build(el_adapter *ad, const el_adapter_src *src, const char *path);

/* EL_OK if alpha (the value of `key` in `path`) is one a real adapter has: finite, above zero
 * and at most a million. PEFT takes any positive alpha and real ones stay within a few thousand
 * (alpha = 2 r at the largest ranks); far beyond that the low-rank term swamps the weight it
 * corrects, and the output is garbage, so such a value is damage, not a choice. */
el_status el_lora_check_alpha(const char *path, const char *key, double alpha);

/* A number that names the adapter's trained values (every stored A and B byte), so that files
 * made for one adapter (forecast sets) can be refused for another. */
uint64_t el_adapter_fingerprint(const el_adapter *ad);

/* Quantizes every pair of a built adapter to int8 with the scales of its model's profile (the
 * pair's x_scale, t_scale, b_scale; kernels/lora.h), counting the values clamped to the grid's
 * range, and replaces its block. Refuses an adapter tuned for another profile (or for one when
 * the model runs under none), and one that changes a layer the profile has no scales for. Does
 * nothing when neither the model nor the adapter names a profile. */
el_status el_adapter_apply_profile(el_adapter *ad);

/* Holds each float32 A and B of a built adapter (under no profile) as float16 where float16
 * keeps its values (adapter_compact.c), replacing the block: what el_adapter_load gives the
 * runtime. Other matrices are kept as they are. */
el_status el_adapter_compact(el_adapter *ad);

/* Format loaders: fill a zeroed adapter (model, path set). */
el_status el_adapter_load_gguf(el_adapter *ad, const char *path);
el_status el_adapter_load_peft(el_adapter *ad, const char *path);

/* References held by contexts. */
void el_adapter_retain(el_adapter *ad);
void el_adapter_release(el_adapter *ad);

/* The summary a binding needs. */
el_lora_term el_adapter_term(const el_adapter *ad, float scale);

#endif
