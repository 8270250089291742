/* adapter.c - loading (GGUF or PEFT, told apart by the path), checking against the model,
 * reference counting and describing adapters. */
#include "runtime/adapter.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "edgelora-tools.h"
#include "core/error.h"
#include "core/hash.h"
#include "formats/gguf.h"
#include "model/prune.h"

const char *el_linear_gguf_name(el_linear which) {
    static const char *const names[EL_N_LINEAR] = {
        [EL_LINEAR_Q] = "attn_q", [EL_LINEAR_K] = "attn_k", [EL_LINEAR_V] = "attn_v",
        [EL_LINEAR_O] = "attn_output", [EL_LINEAR_GATE] = "ffn_gate", [EL_LINEAR_UP] = "ffn_up",
        [EL_LINEAR_DOWN] = "ffn_down"};
    return names[which];
}

el_status el_lora_b_floats(const el_lora_pair *p, float *out) {
    const el_weight *b = &p->b;
    int64_t rank = b->n_in, n_out = b->n_out;
    if (!p->b_packed) {
        el_weight_floats(b, out);
        return EL_OK;
    }
    if (p->x_scale > 0.0f) {
        /* int8 under a profile: blocks of 32 outputs, B = s_b q */
        const int8_t *q = b->data;
        for (int64_t o = 0; o < n_out; o++)
            for (int64_t k = 0; k < rank; k++)
                out[o * rank + k] =
                    p->b_scale * q[((o / EL_LORA_PACK) * rank + k) * EL_LORA_PACK + o % EL_LORA_PACK];
        return EL_OK;
    }
    /* P[o / PACK][k][o % PACK] = B[o][k]: the whole block as floats, then in B's order */
    float *packed = malloc((size_t)(rank * n_out) * sizeof *packed);
    if (!packed) return el_error(EL_ERR_NOMEM, "out of memory");
    el_type_kernels_get(b->type)->to_float(b->data, packed, rank * n_out);
    for (int64_t o = 0; o < n_out; o++)
        for (int64_t k = 0; k < rank; k++)
            out[o * rank + k] =
                packed[((o / EL_LORA_PACK) * rank + k) * EL_LORA_PACK + o % EL_LORA_PACK];
    free(packed);
    return EL_OK;
}

static bool is_adapter_type(el_type t) {
    return t == EL_TYPE_F32 || t == EL_TYPE_F16 || t == EL_TYPE_BF16 || t == EL_TYPE_Q8_0;
}

/* One stored matrix of an entry: its type, rows of n elements, bytes in the file. */
static el_status check_matrix(const char *path, const char *name, el_type type, int64_t n,
                              int64_t rows, uint64_t bytes) {
    if (!is_adapter_type(type)) {
        const el_type_layout *layout = el_type_layout_get(type);
        return el_error(EL_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s; adapters may be f32, "
                        "f16, bf16 or q8_0", path, name, layout ? layout->ggml_name : "unknown");
    }
    if (n % el_type_layout_get(type)->block_size != 0)
        return el_error(EL_ERR_FORMAT, "%s: tensor '%s': rows of %lld elements cannot be %s",
                        path, name, (long long)n, el_type_layout_get(type)->ggml_name);
    if (el_row_size(type, n) * (uint64_t)rows != bytes)
        return el_error(EL_ERR_FORMAT, "%s: tensor '%s' holds %llu bytes, its shape needs %llu",
                        path, name, (unsigned long long)bytes,
                        (unsigned long long)(el_row_size(type, n) * (uint64_t)rows));
    return EL_OK;
}

static el_status check_src(const el_adapter *ad, const el_adapter_src *s, int il, el_linear w,
                           const char *path) {
    const el_weight *base = el_layer_weight(&ad->model->layers[il], w);
    char what[64];
    snprintf(what, sizeof what, "blk.%d.%s.weight", il, el_linear_gguf_name(w));
    if (s->a_in != base->n_in || s->b_out != base->n_out)
        return el_error(EL_ERR_MISMATCH, "%s: tensors '%s' / '%s' map %lld -> %lld, but the "
                        "model's %s maps %lld -> %lld (an adapter for another model?)", path,
                        s->a_name, s->b_name, (long long)s->a_in, (long long)s->b_out, what,
                        (long long)base->n_in, (long long)base->n_out);
    if (s->a_rank != s->b_rank || s->a_rank < 1)
        return el_error(EL_ERR_FORMAT, "%s: tensor '%s' has rank %lld but '%s' has rank %lld",
                        path, s->a_name, (long long)s->a_rank, s->b_name, (long long)s->b_rank);
    if (s->permute_heads > 0 && s->b_out % (2 * s->permute_heads) != 0)
        return el_error(EL_ERR_MISMATCH, "%s: tensor '%s': %lld rows do not split into %d heads",
                        path, s->b_name, (long long)s->b_out, s->permute_heads);
    el_status st = check_matrix(path, s->a_name, s->a_type, s->a_in, s->a_rank, s->a_bytes);
    if (!st) st = check_matrix(path, s->b_name, s->b_type, s->b_rank, s->b_out, s->b_bytes);
    return st;
}

/* The source row of B for GGUF row d: the identity, or for a PEFT q/k B the permutation that
 * takes Hugging Face's order of each head (first halves of the rotated pairs, then second
 * halves) to the interleaved order of a llama GGUF, as its converter permutes the base's Q and K:
 * GGUF row h*hd + 2j + t is HF row h*hd + t*hd/2 + j. */
static int64_t b_source_row(int64_t d, int64_t rows, int32_t n_head) {
    if (n_head <= 0) return d;
    int64_t hd = rows / n_head, h = d / hd, j = (d % hd) / 2, t = d % 2;
    return h * hd + t * (hd / 2) + j;
}

/* B (rows of rank) into dst: as rows (q8_0, or n_out not a multiple of 32), or packed in blocks
 * of 32 outputs for the float types (see el_lora_pair), which job B of kernels/lora.c reads. */
static void copy_b(uint8_t *dst, const el_adapter_src *s, bool packed) {
    const uint8_t *src = s->b_data;
    size_t row_bytes = el_row_size(s->b_type, s->b_rank);
    size_t esz = el_type_layout_get(s->b_type)->type_size;
    for (int64_t d = 0; d < s->b_out; d++) {
        const uint8_t *row = src + b_source_row(d, s->b_out, s->permute_heads) * row_bytes;
        if (!packed) {
            memcpy(dst + d * row_bytes, row, row_bytes);
            continue;
        }
        for (int64_t k = 0; k < s->b_rank; k++)
            memcpy(dst + (((size_t)(d / EL_LORA_PACK) * s->b_rank + k) * EL_LORA_PACK +
                          d % EL_LORA_PACK) * esz, row + k * esz,
                   esz);
    }
}

/* f16 B must be finite: job B's branch-free conversion is exact only for finite halves. */
static el_status check_finite_f16(const el_adapter_src *s, const char *path) {
    const uint8_t *p = s->b_data;
    for (uint64_t i = 0; i + 1 < s->b_bytes; i += 2) {
        uint16_t h = (uint16_t)(p[i] | p[i + 1] << 8);
        if ((h & 0x7c00u) == 0x7c00u)
            return el_error(EL_ERR_FORMAT, "%s: tensor '%s' holds an infinity or NaN", path,
                            s->b_name);
    }
    return EL_OK;
}

el_status el_lora_check_alpha(const char *path, const char *key, double alpha) {
    const double alpha_max = 1e6;
    if (isfinite(alpha) && alpha > 0.0 && alpha <= alpha_max) return EL_OK;
    return el_error(EL_ERR_FORMAT, "%s: %s = %g is not a LoRA alpha (a number above 0, at most %g)",
                    path, key, alpha, alpha_max);
}

el_status el_adapter_split_b(const el_model *m, int il, const el_linear *which, int n,
                             const el_adapter_src *b, el_adapter_src *src, const char *path) {
    size_t row_bytes = el_type_layout_get(b->b_type) ? el_row_size(b->b_type, b->b_rank) : 0;
    int64_t row = 0;
    for (int k = 0; k < n; k++) {
        el_adapter_src *s = &src[el_linear_slot(il, which[k])];
        int64_t rows = n == 1 ? b->b_out : el_layer_weight(&m->layers[il], which[k])->n_out;
        s->b_name = b->b_name;
        s->b_type = b->b_type;
        s->b_rank = b->b_rank;
        s->permute_heads = b->permute_heads;
        s->b_out = rows;
        s->b_data = (const uint8_t *)b->b_data + (size_t)row * row_bytes;
        s->b_bytes = n == 1 ? b->b_bytes : (uint64_t)rows * row_bytes;
        row += rows;
    }
    if (n > 1 && row != b->b_out)
        return el_error(EL_ERR_MISMATCH, "%s: tensor '%s' has %lld rows, but the model's fused "
                        "projection it adapts has %lld (an adapter for another model?)", path,
                        b->b_name, (long long)b->b_out, (long long)row);
    return EL_OK;
}

el_status el_adapter_build(el_adapter *ad, const el_adapter_src *src, const char *path) {
    const el_model *m = ad->model;
    int32_t n_slots = m->hp.n_layer * EL_N_LINEAR;
    size_t total = 0;
    el_status st;
    for (int il = 0; il < m->hp.n_layer; il++)
        for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++) {
            const el_adapter_src *s = &src[el_linear_slot(il, w)];
            if (!s->a_name) continue;
            if ((st = check_src(ad, s, il, w, path))) return st;
            if (s->b_type == EL_TYPE_F16 && (st = check_finite_f16(s, path))) return st;
            total += el_adapter_align_up(s->a_bytes) + el_adapter_align_up(s->b_bytes);
            ad->n_targets++;
        }
    if (ad->n_targets == 0)
        return el_error(EL_ERR_FORMAT, "%s: the adapter changes no layer of the model", path);
    ad->table = calloc((size_t)n_slots, sizeof *ad->table);
    ad->block = aligned_alloc(EL_ADAPTER_ALIGN, total);
    if (!ad->table || !ad->block)
        return el_error(EL_ERR_NOMEM, "%s: out of memory for %zu bytes of adapter", path, total);
    uint8_t *p = ad->block;
    for (int32_t i = 0; i < n_slots; i++) {
        const el_adapter_src *s = &src[i];
        if (!s->a_name) continue;
        el_lora_pair *pair = &ad->table[i];
        memcpy(p, s->a_data, s->a_bytes);
        pair->a = el_weight_view(s->a_type, p, s->a_in, s->a_rank);
        p += el_adapter_align_up(s->a_bytes);
        pair->b_packed = s->b_type != EL_TYPE_Q8_0 && s->b_out % EL_LORA_PACK == 0;
        copy_b(p, s, pair->b_packed);
        pair->b = el_weight_view(s->b_type, p, s->b_rank, s->b_out);
        p += el_adapter_align_up(s->b_bytes);
        pair->scale = s->scale;
        if (s->a_rank > ad->rank_max) ad->rank_max = (int32_t)s->a_rank;
        ad->quantized |= s->a_type == EL_TYPE_Q8_0 || s->b_type == EL_TYPE_Q8_0;
    }
    ad->bytes = total + (uint64_t)n_slots * sizeof *ad->table;
    return EL_OK;
}

static bool is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The adapter's name: the folder's name for PEFT (whichever of its paths was given), else the
 * file name without its extension. */
static char *adapter_name(const char *path, bool peft) {
    char *copy = strdup(path);
    if (!copy) return NULL;
    size_t n = strlen(copy);
    while (n > 1 && copy[n - 1] == '/') copy[--n] = '\0';
    char *slash = strrchr(copy, '/');
    if (peft && !is_dir(copy)) {
        if (slash) *slash = '\0'; /* the folder of the file */
        else strcpy(copy, ".");
        slash = strrchr(copy, '/');
    }
    char *name = strdup(slash ? slash + 1 : copy);
    free(copy);
    if (name && !peft) {
        char *dot = strrchr(name, '.');
        if (dot && dot != name) *dot = '\0';
    }
    return name;
}

/* A UniQL-sorted model's channels are in another order and basis than the model it was
 * compressed from: an adapter fits it only re-expressed there (compress --lora), and a
 * re-expressed one fits nothing else. */
static el_status check_basis(const el_adapter *ad) {
    uint64_t want = ad->model->uniql_basis, have = ad->uniql_basis;
    if (want == have) return EL_OK;
    if (have == 0)
        return el_error(EL_ERR_MISMATCH, "%s: the adapter is for the model before UniQL "
                        "compression; %s has its channels sorted into another basis: re-express "
                        "the adapter with `edgelora compress ... --lora %s --lora-out DIR`",
                        ad->path, ad->model->path, ad->path);
    if (want == 0)
        return el_error(EL_ERR_MISMATCH, "%s: the adapter was re-expressed for a UniQL "
                        "compressed model (basis %016llx); %s is not one: use the adapter it was "
                        "made from", ad->path, (unsigned long long)have, ad->model->path);
    return el_error(EL_ERR_MISMATCH, "%s: the adapter was re-expressed for another UniQL "
                    "compressed model (basis %016llx, %s has %016llx)", ad->path,
                    (unsigned long long)have, ad->model->path, (unsigned long long)want);
}

static el_status load(const el_model *model, const char *path, bool compact, el_adapter **out) {
    if (out) *out = NULL;
    if (!model || !path || !out)
        return el_error(EL_ERR_INVALID_ARG, "%s: NULL argument",
                        compact ? "el_adapter_load" : "el_adapter_load_exact");
    if (!model->has_weights)
        return el_error(EL_ERR_INVALID_ARG, "%s: the model has no weights to adapt", path);
    bool peft = is_dir(path) || ends_with(path, ".json") || ends_with(path, ".safetensors");
    el_adapter *ad = calloc(1, sizeof *ad);
    if (!ad) return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    atomic_init(&ad->refs, 1);
    ad->model = model;
    ad->format = peft ? "peft" : "gguf";
    ad->path = strdup(path);
    ad->name = adapter_name(path, peft);
    el_status st = !ad->path || !ad->name ? el_error(EL_ERR_NOMEM, "%s: out of memory", path)
                   : peft                 ? el_adapter_load_peft(ad, path)
                                          : el_adapter_load_gguf(ad, path);
    if (st == EL_OK) st = check_basis(ad);
    if (st == EL_OK) st = el_adapter_apply_profile(ad);
    if (st == EL_OK && compact && !model->profile) st = el_adapter_compact(ad);
    if (st) {
        el_adapter_release(ad);
        return st;
    }
    *out = ad;
    return EL_OK;
}

el_status el_adapter_load(const el_model *model, const char *path, el_adapter **out) {
    return load(model, path, true, out);
}

el_status el_adapter_load_exact(const el_model *model, const char *path, el_adapter **out) {
    return load(model, path, false, out);
}

static uint64_t hash_weight(uint64_t h, const el_weight *w) {
    return w->data ? el_fnv1a(h, w->data, (size_t)w->n_out * w->row_bytes) : h;
}

uint64_t el_adapter_fingerprint(const el_adapter *ad) {
    uint64_t h = el_fnv_offset;
    int32_t n_slots = ad->model->hp.n_layer * EL_N_LINEAR;
    for (int32_t i = 0; i < n_slots; i++) {
        if (!ad->table[i].a.n_out)
            continue;
        h = el_fnv1a(h, &i, sizeof i);
        h = hash_weight(hash_weight(h, &ad->table[i].a), &ad->table[i].b);
    }
    return h;
}

void el_adapter_retain(el_adapter *ad) { atomic_fetch_add(&ad->refs, 1); }

void el_adapter_release(el_adapter *ad) {
    if (!ad || atomic_fetch_sub(&ad->refs, 1) != 1) return;
    free(ad->table);
    free(ad->block);
    free(ad->path);
    free(ad->name);
    free(ad);
}

void el_adapter_free(el_adapter *ad) { el_adapter_release(ad); }

el_status el_adapter_get_info(const el_adapter *ad, el_adapter_info *out) {
    if (!ad || !out) return el_error(EL_ERR_INVALID_ARG, "el_adapter_get_info: NULL argument");
    *out = (el_adapter_info){.name = ad->name, .format = ad->format, .alpha = ad->alpha,
                             .n_targets = ad->n_targets, .rank_max = ad->rank_max,
                             .bytes = ad->bytes, .profiled = ad->n_values > 0,
                             .n_values = ad->n_values, .n_clipped = ad->n_clipped};
    return EL_OK;
}

el_lora_term el_adapter_term(const el_adapter *ad, float scale) {
    return (el_lora_term){.table = ad->table, .scale = scale, .rank_max = ad->rank_max,
                          .quantized = ad->quantized};
}
