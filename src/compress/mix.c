/* mix.c - llama.cpp's quantization mixes as a table of rules.
 *
 * A mix (a llama_ftype: Q4_K_M, Q3_K_S, Q4_0, ...) writes most weights in its base type and
 * moves some to others: the output head (and a tied token embedding, which is the head) to
 * Q6_K, and in the K mixes attn_v and ffn_down of some layers (the first and last eighth and
 * every third between, "use_more_bits") to more bits. What decides is the tensor's role (from
 * its name), its place among the tensors of that role, the layer count, grouped-query
 * attention and the expert count. llama.cpp (src/llama-quant.cpp, llama_tensor_get_type)
 * counts a tensor's place as it walks the tensors sorted by layer, then name; so do we, so
 * that the same file gets the same types whatever order its tensors are stored in.
 * Rules of mixes we cannot write (IQ1..IQ3, TQ, MXFP4) and those that need an importance
 * matrix are left out: we have neither the types nor imatrix input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "compress/mix.h"

/* llama.cpp's llama_ftype numbers of the mixes here. */
enum {
    FT_F32 = 0, FT_F16 = 1, FT_Q4_0 = 2, FT_Q4_1 = 3, FT_Q8_0 = 7, FT_Q5_0 = 8, FT_Q5_1 = 9,
    FT_Q2_K = 10, FT_Q3_K_S = 11, FT_Q3_K_M = 12, FT_Q3_K_L = 13, FT_Q4_K_S = 14,
    FT_Q4_K_M = 15, FT_Q5_K_S = 16, FT_Q5_K_M = 17, FT_Q6_K = 18, FT_IQ4_NL = 25,
    FT_IQ4_XS = 30, FT_BF16 = 32,
};

static const el_mix mixes[] = {
    {"f32", FT_F32, EL_TYPE_F32},          {"f16", FT_F16, EL_TYPE_F16},
    {"bf16", FT_BF16, EL_TYPE_BF16},       {"q8_0", FT_Q8_0, EL_TYPE_Q8_0},
    {"q6_k", FT_Q6_K, EL_TYPE_Q6_K},       {"q5_k_m", FT_Q5_K_M, EL_TYPE_Q5_K},
    {"q5_k_s", FT_Q5_K_S, EL_TYPE_Q5_K},   {"q5_1", FT_Q5_1, EL_TYPE_Q5_1},
    {"q5_0", FT_Q5_0, EL_TYPE_Q5_0},       {"q4_k_m", FT_Q4_K_M, EL_TYPE_Q4_K},
    {"q4_k_s", FT_Q4_K_S, EL_TYPE_Q4_K},   {"q4_1", FT_Q4_1, EL_TYPE_Q4_1},
    {"q4_0", FT_Q4_0, EL_TYPE_Q4_0},       {"iq4_xs", FT_IQ4_XS, EL_TYPE_IQ4_XS},
    {"iq4_nl", FT_IQ4_NL, EL_TYPE_IQ4_NL}, {"q3_k_l", FT_Q3_K_L, EL_TYPE_Q3_K},
    {"q3_k_m", FT_Q3_K_M, EL_TYPE_Q3_K},   {"q3_k_s", FT_Q3_K_S, EL_TYPE_Q3_K},
    {"q2_k", FT_Q2_K, EL_TYPE_Q2_K},
};

/* llama-quantize's names for the _M mixes */
static const struct { const char *alias, *name; } aliases[] = {
    {"q3_k", "q3_k_m"}, {"q4_k", "q4_k_m"}, {"q5_k", "q5_k_m"},
};

const el_mix *el_mix_list(int *n) {
    *n = (int)(sizeof mixes / sizeof mixes[0]);
    return mixes;
}

const el_mix *el_mix_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcasecmp(name, aliases[i].alias)) name = aliases[i].name;
    for (size_t i = 0; i < sizeof mixes / sizeof mixes[0]; i++)
        if (!strcasecmp(name, mixes[i].name)) return &mixes[i];
    return NULL;
}

/* ------------------------------------------------------------ which tensors are converted */

static bool contains(gguf_str s, const char *part) {
    size_t n = strlen(part);
    for (uint64_t i = 0; i + n <= s.len; i++)
        if (!memcmp(s.ptr + i, part, n)) return true;
    return false;
}

/* Matrices llama-quantize keeps as they are: small, or read in ways quantization would hurt
 * (norms that are 2-D, expert routing, positions and token types, convolutions, the small
 * projections of RWKV, Gemma 3n and vision encoders). */
static const char *const kept_as_is[] = {
    "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
    "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
    "indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight",
    "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight",
    "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight",
    "time_mix_g1.weight", "time_mix_g2.weight", "time_mix_decay_w1.weight",
    "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight",
    ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd",
    ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
};

bool el_mix_converts(const gguf_tensor *t) {
    if (t->n_dims < 2 || !gguf_str_ends_with(t->name, "weight")) return false;
    if (gguf_str_eq(t->name, "position_embd.weight") || gguf_str_eq(t->name, "token_types.weight"))
        return false;
    for (size_t i = 0; i < sizeof kept_as_is / sizeof kept_as_is[0]; i++)
        if (contains(t->name, kept_as_is[i])) return false;
    return true;
}

/* ------------------------------------------------------------ roles and places */

typedef enum role {
    ROLE_OTHER, ROLE_OUTPUT, ROLE_TOKEN_EMBD,
    ROLE_ATTN_V, /* attn_v, and the fused attn_qkv and attn_kv_b that hold V */
    ROLE_ATTN_K, ROLE_ATTN_Q, ROLE_ATTN_OUTPUT, ROLE_FFN_UP, ROLE_FFN_GATE, ROLE_FFN_DOWN,
} role;

/* In llama.cpp's order of tests: the first part of the name that matches decides. */
static role role_of(gguf_str name) {
    if (gguf_str_eq(name, "output.weight")) return ROLE_OUTPUT;
    if (gguf_str_eq(name, "token_embd.weight") || gguf_str_eq(name, "per_layer_token_embd.weight"))
        return ROLE_TOKEN_EMBD;
    static const struct { const char *part; role role; } parts[] = {
        {"attn_qkv.weight", ROLE_ATTN_V}, {"attn_kv_b.weight", ROLE_ATTN_V},
        {"attn_v.weight", ROLE_ATTN_V},   {"attn_k.weight", ROLE_ATTN_K},
        {"attn_q.weight", ROLE_ATTN_Q},   {"attn_output.weight", ROLE_ATTN_OUTPUT},
        {"ffn_up", ROLE_FFN_UP},          {"ffn_gate", ROLE_FFN_GATE},
        {"ffn_down", ROLE_FFN_DOWN},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (contains(name, parts[i].part)) return parts[i].role;
    return ROLE_OTHER;
}

/* The N of "blk.N.", or -1 for a tensor outside the blocks (or a number that is not one). */
static int layer_of(gguf_str name) {
    if (name.len < 5 || memcmp(name.ptr, "blk.", 4)) return -1;
    int layer = 0;
    uint64_t i = 4;
    for (; i < name.len && name.ptr[i] >= '0' && name.ptr[i] <= '9' && layer < 1000000; i++)
        layer = layer * 10 + (name.ptr[i] - '0');
    return i > 4 && i < name.len && name.ptr[i] == '.' ? layer : -1;
}

/* A tensor in llama.cpp's order of a model's tensors: by layer (outside the blocks first),
 * then name. */
typedef struct placed {
    int layer;
    gguf_str name;
    uint64_t index;
} placed;

static int by_layer_then_name(const void *a, const void *b) {
    const placed *x = a, *y = b;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    int c = memcmp(x->name.ptr, y->name.ptr, x->name.len < y->name.len ? x->name.len : y->name.len);
    return c ? c : (x->name.len > y->name.len) - (x->name.len < y->name.len);
}

/* ------------------------------------------------------------ the rules */

/* What the rules read of the model. */
typedef struct shape {
    bool falcon;   /* Falcon's mixes differ in places */
    bool is_70b;   /* Llama 2/3 70B: its attn_v is 8 times smaller than attn_q, so it gets more */
    int n_layer;
    int n_gqa;     /* query heads per KV head (0 when unknown) */
    int n_expert;
    bool tied;     /* no output.weight: token_embd is the output head too */
} shape;

typedef enum when {
    ALWAYS,
    MORE_BITS,      /* first and last eighth of the layers, every third between */
    FIRST_EIGHTH,   /* i < n / 8 */
    FIRST_16TH,     /* i < n / 16 */
    FIRST_TWO,
    FIRST_FOUR,
    GQA_4,          /* 4 or more query heads share each KV head */
    EIGHT_EXPERTS,  /* Mixtral's shape */
    NOT_EIGHT_EXPERTS,
} when;

typedef enum arch_filter { ANY_ARCH, FALCON_ONLY, NOT_FALCON } arch_filter;

/* For a tensor of `role` in mix `file_type`: `type` if `when` holds. The first row that
 * applies wins; a role without a row keeps the mix's base type. */
typedef struct rule {
    uint32_t file_type;
    role role;
    when when;
    el_type type;
    arch_filter arch;
} rule;

static const rule rules[] = {
    /* attn_v: more bits where the mix's cost of it is small (it is n_gqa times smaller) */
    {FT_Q2_K, ROLE_ATTN_V, GQA_4, EL_TYPE_Q4_K, ANY_ARCH},
    {FT_Q2_K, ROLE_ATTN_V, ALWAYS, EL_TYPE_Q3_K, ANY_ARCH},
    {FT_Q3_K_M, ROLE_ATTN_V, FIRST_TWO, EL_TYPE_Q5_K, ANY_ARCH},
    {FT_Q3_K_M, ROLE_ATTN_V, ALWAYS, EL_TYPE_Q4_K, ANY_ARCH},
    {FT_Q3_K_L, ROLE_ATTN_V, ALWAYS, EL_TYPE_Q5_K, ANY_ARCH},
    {FT_IQ4_NL, ROLE_ATTN_V, GQA_4, EL_TYPE_Q5_K, ANY_ARCH},
    {FT_IQ4_XS, ROLE_ATTN_V, GQA_4, EL_TYPE_Q5_K, ANY_ARCH},
    {FT_Q4_K_M, ROLE_ATTN_V, MORE_BITS, EL_TYPE_Q6_K, ANY_ARCH},
    {FT_Q5_K_M, ROLE_ATTN_V, MORE_BITS, EL_TYPE_Q6_K, ANY_ARCH},
    {FT_Q4_K_S, ROLE_ATTN_V, FIRST_FOUR, EL_TYPE_Q5_K, ANY_ARCH},
    /* ffn_down, by layer */
    {FT_Q2_K, ROLE_FFN_DOWN, ALWAYS, EL_TYPE_Q3_K, ANY_ARCH},
    {FT_Q3_K_M, ROLE_FFN_DOWN, FIRST_16TH, EL_TYPE_Q5_K, ANY_ARCH},
    {FT_Q3_K_M, ROLE_FFN_DOWN, ALWAYS, EL_TYPE_Q4_K, NOT_FALCON},
    {FT_Q3_K_M, ROLE_FFN_DOWN, MORE_BITS, EL_TYPE_Q4_K, FALCON_ONLY},
    {FT_Q3_K_L, ROLE_FFN_DOWN, ALWAYS, EL_TYPE_Q5_K, NOT_FALCON},
    {FT_Q3_K_L, ROLE_FFN_DOWN, ALWAYS, EL_TYPE_Q4_K, FALCON_ONLY},
    {FT_Q4_K_M, ROLE_FFN_DOWN, MORE_BITS, EL_TYPE_Q6_K, NOT_FALCON},
    {FT_Q4_K_M, ROLE_FFN_DOWN, FIRST_16TH, EL_TYPE_Q6_K, FALCON_ONLY},
    {FT_Q4_K_M, ROLE_FFN_DOWN, MORE_BITS, EL_TYPE_Q5_K, FALCON_ONLY},
    {FT_IQ4_NL, ROLE_FFN_DOWN, FIRST_EIGHTH, EL_TYPE_Q5_K, ANY_ARCH},
    {FT_IQ4_XS, ROLE_FFN_DOWN, FIRST_EIGHTH, EL_TYPE_Q5_K, ANY_ARCH},
    {FT_Q5_K_M, ROLE_FFN_DOWN, MORE_BITS, EL_TYPE_Q6_K, ANY_ARCH},
    {FT_Q4_K_S, ROLE_FFN_DOWN, FIRST_EIGHTH, EL_TYPE_Q5_K, NOT_FALCON},
    /* attn_output */
    {FT_Q2_K, ROLE_ATTN_OUTPUT, NOT_EIGHT_EXPERTS, EL_TYPE_Q3_K, NOT_FALCON},
    {FT_Q3_K_M, ROLE_ATTN_OUTPUT, NOT_EIGHT_EXPERTS, EL_TYPE_Q4_K, NOT_FALCON},
    {FT_Q3_K_L, ROLE_ATTN_OUTPUT, NOT_EIGHT_EXPERTS, EL_TYPE_Q5_K, NOT_FALCON},
    {FT_Q2_K, ROLE_ATTN_OUTPUT, EIGHT_EXPERTS, EL_TYPE_Q5_K, NOT_FALCON},
    {FT_Q3_K_S, ROLE_ATTN_OUTPUT, EIGHT_EXPERTS, EL_TYPE_Q5_K, NOT_FALCON},
    {FT_Q3_K_M, ROLE_ATTN_OUTPUT, EIGHT_EXPERTS, EL_TYPE_Q5_K, NOT_FALCON},
    {FT_IQ4_NL, ROLE_ATTN_OUTPUT, EIGHT_EXPERTS, EL_TYPE_Q5_K, NOT_FALCON},
    {FT_Q4_K_S, ROLE_ATTN_OUTPUT, EIGHT_EXPERTS, EL_TYPE_Q5_K, NOT_FALCON},
    {FT_Q4_K_M, ROLE_ATTN_OUTPUT, EIGHT_EXPERTS, EL_TYPE_Q5_K, NOT_FALCON},
    {FT_IQ4_XS, ROLE_ATTN_OUTPUT, EIGHT_EXPERTS, EL_TYPE_Q5_K, NOT_FALCON},
    {FT_Q3_K_L, ROLE_ATTN_OUTPUT, ALWAYS, EL_TYPE_Q4_K, FALCON_ONLY},
};

static bool use_more_bits(int i, int n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* Whether `w` holds for the tensor at place i of n (its layer of n_layer, or for attn_v its
 * rank among the model's attn_v tensors). */
static bool holds(when w, int i, int n, const shape *m) {
    switch (w) {
    case ALWAYS: return true;
    case MORE_BITS: return use_more_bits(i, n);
    case FIRST_EIGHTH: return i < n / 8;
    case FIRST_16TH: return i < n / 16;
    case FIRST_TWO: return i < 2;
    case FIRST_FOUR: return i < 4;
    case GQA_4: return m->n_gqa >= 4;
    case EIGHT_EXPERTS: return m->n_expert == 8;
    case NOT_EIGHT_EXPERTS: return m->n_expert != 8;
    }
    return false;
}

/* The type of one converted tensor of the mix, before the fallback for its rows. */
static el_type rule_type(const el_mix *mix, role r, int i, int n, int64_t n_cols,
                         const shape *m) {
    if (r == ROLE_OUTPUT || (r == ROLE_TOKEN_EMBD && m->tied)) {
        /* the head is the most sensitive matrix: Q6_K, or Q8_0 where Q6_K does not fit */
        if (m->falcon || n_cols % el_type_layout_get((uint32_t)mix->base)->block_size != 0)
            return EL_TYPE_Q8_0;
        return mix->base == EL_TYPE_Q8_0 ? EL_TYPE_Q8_0 : EL_TYPE_Q6_K;
    }
    el_type t = mix->base;
    for (size_t k = 0; k < sizeof rules / sizeof rules[0]; k++) {
        const rule *ru = &rules[k];
        if (ru->file_type != mix->file_type || ru->role != r) continue;
        if ((ru->arch == FALCON_ONLY && !m->falcon) || (ru->arch == NOT_FALCON && m->falcon))
            continue;
        if (holds(ru->when, i, n, m)) {
            t = ru->type;
            break;
        }
    }
    /* whatever the mix: more bits for the small attn_v of a 70B and Mixtral's K and V */
    if (r == ROLE_ATTN_V && m->is_70b && (t == EL_TYPE_Q3_K || t == EL_TYPE_Q4_K))
        t = EL_TYPE_Q5_K;
    if ((r == ROLE_ATTN_V || r == ROLE_ATTN_K) && m->n_expert == 8) t = EL_TYPE_Q8_0;
    return t;
}

/* ------------------------------------------------------------ the model's shape */

static uint32_t arch_u32(const gguf_file *f, gguf_str arch, const char *key, uint32_t dflt) {
    char full[160];
    uint32_t v;
    snprintf(full, sizeof full, "%.*s.%s", (int)(arch.len < 100 ? arch.len : 100), arch.ptr, key);
    return gguf_get_u32(f, full, &v) == EL_OK ? v : dflt;
}

static el_status read_shape(const gguf_file *f, shape *m) {
    gguf_str arch = {"", 0};
    if (gguf_get_str(f, "general.architecture", &arch) != EL_OK)
        return el_error(EL_ERR_FORMAT, "%s: no general.architecture: the mix's rules need the "
                        "model's layer count", f->path);
    uint32_t n_layer = arch_u32(f, arch, "block_count", 0);
    if (n_layer == 0 || n_layer > 100000)
        return el_error(EL_ERR_FORMAT, "%s: %.*s.block_count is absent or not a layer count: "
                        "the mix's rules need it", f->path, (int)arch.len, arch.ptr);
    /* a per-layer head count (an array) is read as layer 0's, as llama.cpp's n_gqa() does */
    uint32_t n_head = arch_u32(f, arch, "attention.head_count", 0);
    uint32_t n_head_kv = arch_u32(f, arch, "attention.head_count_kv", n_head);
    *m = (shape){.falcon = gguf_str_eq(arch, "falcon"), .n_layer = (int)n_layer,
                 .n_gqa = n_head_kv ? (int)(n_head / n_head_kv) : 0,
                 .n_expert = (int)arch_u32(f, arch, "expert_count", 0), .tied = true};
    m->is_70b = gguf_str_eq(arch, "llama") && n_layer == 80 && n_head != n_head_kv;
    for (uint64_t i = 0; i < f->n_tensors; i++)
        if (gguf_str_eq(f->tensors[i].name, "output.weight")) m->tied = false;
    return EL_OK;
}

static bool is_quantized(el_type t) {
    return t != EL_TYPE_F32 && t != EL_TYPE_F16 && t != EL_TYPE_BF16;
}

el_status el_mix_types(const el_mix *mix, bool pure, const gguf_file *f, el_type *types) {
    for (uint64_t i = 0; i < f->n_tensors; i++)
        types[i] = el_mix_converts(&f->tensors[i]) ? mix->base : (el_type)f->tensors[i].type;
    if (pure || !is_quantized(mix->base)) return EL_OK;
    shape m = {0};
    el_status st = read_shape(f, &m);
    if (st) return st;
    placed *order = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *order);
    if (!order) return el_error(EL_ERR_NOMEM, "%s: out of memory", f->path);
    for (uint64_t i = 0; i < f->n_tensors; i++)
        order[i] = (placed){layer_of(f->tensors[i].name), f->tensors[i].name, i};
    qsort(order, f->n_tensors, sizeof *order, by_layer_then_name);
    int n_attn_v = 0, i_attn_v = 0, i_ffn_down = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++)
        n_attn_v += role_of(f->tensors[i].name) == ROLE_ATTN_V;
    for (uint64_t k = 0; k < f->n_tensors && st == EL_OK; k++) {
        const gguf_tensor *t = &f->tensors[order[k].index];
        if (!el_mix_converts(t)) continue;
        role r = role_of(t->name);
        int i = 0, n = m.n_layer;
        if (r == ROLE_ATTN_V) {
            i = i_attn_v++;
            n = n_attn_v;
        } else if (r == ROLE_FFN_DOWN && m.n_expert > 1) {
            /* experts' tensors are not one a layer: the layer is the one the name says */
            if ((i = order[k].layer) < 0 || i >= m.n_layer)
                st = el_error(EL_ERR_FORMAT, "%s: tensor '%.*s' names no layer of the %d",
                              f->path, (int)t->name.len, t->name.ptr, m.n_layer);
        } else if (r == ROLE_FFN_DOWN) {
            i = i_ffn_down++;
        }
        types[order[k].index] = rule_type(mix, r, i, n, t->ne[0], &m);
    }
    free(order);
    return st;
}
