/* uniql.c - the writer of the UniQL layout (docs/formats.md "UniQL"): a sorted model re-laid out
 * so that what each pruning rate drops is contiguous in the file, with the plan as metadata.
 *
 * Every prunable matrix becomes pieces at the table's boundaries: row ranges of Q, K, V, gate
 * and up, column ranges of down and O. Q and K rows go dimension-major: row (p * n_heads + h) *
 * 2 + c holds component c of stored RoPE pair p of head h, so the kept dims of every head are
 * the first rows; V rows likewise (row d * n_head_kv + h); gate and up keep their order. down's
 * columns are copied a block range at a time; O's columns are reordered dimension-major too
 * (column d * n_head + h), which moves single columns across blocks, so O is dequantized and
 * written again in its type (exact for f32, f16 and bf16). Everything else is copied as it is,
 * first; then the pieces, the latest dropped first, so that what a rate drops is one run at the
 * end of the file (page cache folios of a few MB span neighbouring tensors: scattered tails
 * would be mapped back in with the kept data beside them). */
#include "compress/uniql.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/types.h"
#include "model/model.h"
#include "model/prune.h"

typedef enum out_kind { OUT_COPY, OUT_QK, OUT_V, OUT_ROWS, OUT_DOWN, OUT_O } out_kind;

struct writer;

/* One output tensor the writer's fill produces. */
typedef struct out_tensor {
    struct writer *s;
    out_kind kind;
    const gguf_tensor *src;
    int64_t c0, c1; /* rows (Q, K, V, gate, up) or columns (down, O) of a piece */
    int il, j;
    el_linear which;
    int32_t drop;   /* the first rate index that drops the piece */
} out_tensor;

typedef struct writer {
    el_model *m;
    gguf_writer *w;
    out_tensor *out;
    size_t n_out;
    int32_t *gran;  /* [2 * n_layer]: down's then O's block sizes */
} writer;

/* ---------------------------------------------------------------- fills */

/* The stored dim of component c of pair p of a head, in the sorted model's rope layout. */
static int64_t pair_dim(const el_hparams *hp, int64_t p, int c) {
    return hp->rope_style == EL_ROPE_NEOX ? p + c * (hp->n_rot / 2) : 2 * p + c;
}

/* Rows [c0, c1) of the layout's row order of Q, K, V, gate or up. */
static void fill_rows(const out_tensor *o, uint8_t *buf) {
    const el_hparams *hp = &o->s->m->hp;
    const gguf_tensor *t = o->src;
    size_t rb = el_row_size((el_type)t->type, t->ne[0]);
    const uint8_t *src = t->data;
    for (int64_t cr = o->c0; cr < o->c1; cr++) {
        int64_t from = cr;
        if (o->kind == OUT_QK) {
            int64_t nh = t->ne[1] / hp->head_dim_k, p = cr / (2 * nh), h = cr % (2 * nh) / 2;
            from = h * hp->head_dim_k + pair_dim(hp, p, (int)(cr % 2));
        } else if (o->kind == OUT_V) {
            from = cr % hp->n_head_kv * hp->head_dim_v + cr / hp->n_head_kv;
        }
        memcpy(buf + (size_t)(cr - o->c0) * rb, src + (size_t)from * rb, rb);
    }
}

/* Columns [c0, c1) of every row of down: whole blocks, copied. */
static void fill_down(const out_tensor *o, uint8_t *buf) {
    const gguf_tensor *t = o->src;
    el_type type = (el_type)t->type;
    size_t rb = el_row_size(type, t->ne[0]), off = el_row_size(type, o->c0);
    size_t pb = el_row_size(type, o->c1 - o->c0);
    for (int64_t r = 0; r < t->ne[1]; r++)
        memcpy(buf + (size_t)r * pb, (const uint8_t *)t->data + (size_t)r * rb + off, pb);
}

/* Columns [c0, c1) of O in dimension-major order, written again in O's type. */
static el_status fill_o(const out_tensor *o, uint8_t *buf) {
    const el_hparams *hp = &o->s->m->hp;
    const gguf_tensor *t = o->src;
    el_type type = (el_type)t->type;
    const el_type_kernels *k = el_type_kernels_get(type);
    int64_t n = t->ne[0], w = o->c1 - o->c0;
    float *row = malloc((size_t)(n + w) * sizeof *row);
    if (!row)
        return el_error(EL_ERR_NOMEM, "uniql: out of memory for a row of %lld", (long long)n);
    float *piece = row + n;
    size_t rb = el_row_size(type, n), pb = el_row_size(type, w);
    el_from_float_fn quantize = el_type_weight_quantizer(k);
    for (int64_t r = 0; r < t->ne[1]; r++) {
        k->to_float((const uint8_t *)t->data + (size_t)r * rb, row, n);
        for (int64_t cc = o->c0; cc < o->c1; cc++) {
            int64_t d = cc / hp->n_head, h = cc % hp->n_head;
            piece[cc - o->c0] = row[h * hp->head_dim_v + d];
        }
        quantize(piece, buf + (size_t)r * pb, w);
    }
    free(row);
    return EL_OK;
}

static el_status fill(void *user, void *buf, uint64_t nbytes) {
    const out_tensor *o = user;
    switch (o->kind) {
    case OUT_QK:
    case OUT_V:
    case OUT_ROWS:
        fill_rows(o, buf);
        return EL_OK;
    case OUT_DOWN:
        fill_down(o, buf);
        return EL_OK;
    case OUT_O:
        return fill_o(o, buf);
    case OUT_COPY:
        break;
    }
    memcpy(buf, o->src->data, (size_t)nbytes);
    return EL_OK;
}

/* ---------------------------------------------------------------- planning */

/* The layer and linear a tensor name is ("blk.<il>.<linear>.weight"), or false. */
static bool block_linear(const gguf_tensor *t, int *il, el_linear *which) {
    char name[128];
    if (t->name.len >= sizeof name)
        return false;
    memcpy(name, t->name.ptr, t->name.len);
    name[t->name.len] = '\0';
    int n = 0;
    if (sscanf(name, "blk.%d.%n", il, &n) != 1 || n == 0)
        return false;
    for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++)
        if (!strcmp(name + n, el_linear_tensor_suffix(w))) {
            *which = w;
            return true;
        }
    return false;
}

/* The model is one the layout can carry: not compressed yet, no static activation scales (they
 * belong to the weights the layout splits), column-pruned weights whose rows are plain blocks. */
static el_status check_source(const writer *s, const char *src) {
    const el_model *m = s->m;
    if (!m->has_weights || !m->gguf)
        return el_error(EL_ERR_INVALID_ARG, "%s: not a GGUF model with weights", src);
    if (el_prune_is_compressed(m->gguf))
        return el_error(EL_ERR_INVALID_ARG, "%s is already a UniQL compressed file; give the "
                        "sorted model it was written from", src);
    const el_layer *l = &m->layers[0];
    el_status st = el_prune_shape_check(&m->hp, l->bq != NULL, l->attn_q_norm != NULL, src);
    if (st)
        return st;
    for (uint64_t i = 0; i < m->gguf->n_tensors; i++) {
        const gguf_tensor *t = &m->gguf->tensors[i];
        size_t ls = strlen(EL_ACT_SCALE_SUFFIX);
        if (t->name.len >= ls && !memcmp(t->name.ptr + t->name.len - ls, EL_ACT_SCALE_SUFFIX, ls))
            return el_error(EL_ERR_UNSUPPORTED, "%s: static activation scales ('%.*s') cannot "
                            "follow down and O into column pieces; write the layout before "
                            "calibrating", src, (int)t->name.len, t->name.ptr);
    }
    for (int il = 0; il < m->hp.n_layer; il++) {
        const el_weight *w[2] = {&m->layers[il].w_down, &m->layers[il].wo};
        for (int j = 0; j < 2; j++) {
            const el_type_layout *lay = el_type_layout_get(w[j]->type);
            if (lay->row_header || !el_type_is_weight(w[j]->type))
                return el_error(EL_ERR_UNSUPPORTED, "%s: layer %d's %s is %s, whose rows do not "
                                "split into column pieces (a per-row header or no quantizer); "
                                "use a block type (f16, q8_0, q4_0, q4_k, ...)", src, il,
                                j ? "attn_output" : "ffn_down", lay->name);
            s->gran[j * m->hp.n_layer + il] = (int32_t)lay->block_size;
        }
    }
    return EL_OK;
}

static el_status add_out(writer *s, const out_tensor *o) {
    const gguf_tensor *t = o->src;
    int64_t ne[GGUF_MAX_DIMS] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
    uint64_t nbytes = t->nbytes;
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
    if (o->kind != OUT_COPY) {
        bool cols = o->kind == OUT_DOWN || o->kind == OUT_O;
        ne[cols ? 0 : 1] = o->c1 - o->c0;
        nbytes = el_row_size((el_type)t->type, ne[0]) * (uint64_t)ne[1];
        el_prune_piece_name(name, o->il, o->which, o->j);
    }
    return gguf_writer_add_tensor_fill(s->w, name, t->type, t->n_dims, ne, nbytes, fill,
                                       (void *)o);
}

/* Later dropped first; the order of the source among equals. */
static int cmp_drop(const void *a, const void *b) {
    const out_tensor *x = a, *y = b;
    if (x->drop != y->drop) return x->drop > y->drop ? -1 : 1;
    return (x > y) - (x < y);
}

/* The source's tensors each as the layout has it: copies first, then the pieces. */
static el_status plan_tensors(writer *s, const el_prune_table *t) {
    const el_model *m = s->m;
    const el_hparams *hp = &m->hp;
    int64_t b[EL_PRUNE_MAX_RATES + 1];
    size_t n_copy = 0;
    for (uint64_t i = 0; i < m->gguf->n_tensors; i++) {
        const gguf_tensor *src = &m->gguf->tensors[i];
        int il;
        el_linear w;
        if (!block_linear(src, &il, &w)) {
            s->out[s->n_out++] = (out_tensor){.s = s, .kind = OUT_COPY, .src = src};
            n_copy++;
            continue;
        }
        out_kind kind = w == EL_LINEAR_Q || w == EL_LINEAR_K ? OUT_QK
                        : w == EL_LINEAR_V ? OUT_V
                        : w == EL_LINEAR_DOWN ? OUT_DOWN
                        : w == EL_LINEAR_O ? OUT_O
                                           : OUT_ROWS;
        int32_t n = el_prune_boundaries(t, hp, il, w, b);
        for (int32_t j = 0; j < n; j++)
            s->out[s->n_out++] = (out_tensor){
                .s = s, .kind = kind, .src = src, .c0 = b[j], .c1 = b[j + 1], .il = il, .j = j,
                .which = w, .drop = el_prune_piece_drop(t, hp, il, w, b[j])};
    }
    qsort(s->out + n_copy, s->n_out - n_copy, sizeof *s->out, cmp_drop);
    el_status st = EL_OK;
    for (size_t i = 0; i < s->n_out && !st; i++)
        st = add_out(s, &s->out[i]);
    return st;
}

static el_status write_plan_keys(writer *s, const el_uniql_plan *plan) {
    gguf_writer *w = s->w;
    const el_hparams *hp = &s->m->hp;
    uint64_t n = (uint64_t)plan->n_rates * (uint64_t)hp->n_layer;
    el_status st;
    if ((st = gguf_writer_set_u32(w, EL_PRUNE_KEY_VERSION, EL_PRUNE_VERSION)) ||
        (st = gguf_writer_set_arr(w, "uniql.rates", GGUF_TYPE_FLOAT32, plan->rates,
                                  (uint64_t)plan->n_rates)) ||
        (st = gguf_writer_set_arr(w, "uniql.ff_kept", GGUF_TYPE_INT32, plan->ff_kept, n)) ||
        (st = gguf_writer_set_arr(w, "uniql.qk_kept", GGUF_TYPE_INT32, plan->qk_kept, n)) ||
        (st = gguf_writer_set_arr(w, "uniql.vo_kept", GGUF_TYPE_INT32, plan->vo_kept, n)))
        return st;
    if (!plan->rope_pairs)
        return EL_OK;
    int64_t ne[3] = {hp->n_rot / 2, hp->n_head_kv, hp->n_layer};
    uint64_t bytes = (uint64_t)(ne[0] * ne[1] * ne[2]) * sizeof(int32_t);
    return gguf_writer_add_tensor(w, "uniql.rope_pairs", EL_TYPE_I32, 3, ne, plan->rope_pairs,
                                  bytes);
}

static el_status write_layout(writer *s, const char *src, const el_uniql_plan *plan,
                              const char *dst) {
    el_status st = el_model_load(src, NULL, &s->m);
    if (st)
        return st;
    const el_hparams *hp = &s->m->hp;
    s->gran = malloc(2 * (size_t)hp->n_layer * sizeof *s->gran);
    size_t max_out = (size_t)s->m->gguf->n_tensors * (EL_PRUNE_MAX_RATES + 1);
    s->out = calloc(max_out, sizeof *s->out);
    s->w = gguf_writer_create();
    if (!s->gran || !s->out || !s->w)
        return el_error(EL_ERR_NOMEM, "uniql: out of memory");
    if ((st = check_source(s, src)))
        return st;
    el_prune_table t = {.n_rates = plan->n_rates, .rates = plan->rates, .ff_kept = plan->ff_kept,
                        .qk_kept = plan->qk_kept, .vo_kept = plan->vo_kept,
                        .rope_pairs = plan->rope_pairs};
    el_prune_grain g = {.ff_gran = s->gran, .o_gran = s->gran + hp->n_layer};
    char what[600];
    snprintf(what, sizeof what, "UniQL plan for %s", src);
    if (!plan->rates || !plan->ff_kept || !plan->qk_kept || !plan->vo_kept)
        return el_error(EL_ERR_INVALID_ARG, "%s: rates and kept sizes are required", what);
    if ((st = el_prune_table_check(&t, hp, &g, what)) ||
        (st = gguf_writer_copy_kv(s->w, s->m->gguf)) || (st = write_plan_keys(s, plan)) ||
        (st = plan_tensors(s, &t)))
        return st;
    return gguf_writer_write(s->w, dst);
}

el_status el_uniql_write(const char *src, const el_uniql_plan *plan, const char *dst) {
    if (!src || !plan || !dst)
        return el_error(EL_ERR_INVALID_ARG, "el_uniql_write: NULL argument");
    writer s = {0};
    el_status st = write_layout(&s, src, plan, dst);
    gguf_writer_free(s.w);
    free(s.out);
    free(s.gran);
    el_model_free(s.m);
    return st;
}

/* ---------------------------------------------------------------- the uniform plan */

/* full * (1 - rate) rounded down to a multiple of step, at least step (full is a multiple). */
static int32_t kept_of(int32_t full, float rate, int32_t step) {
    int32_t k = (int32_t)((double)full * (1.0 - (double)rate) / step) * step;
    return k < step ? step : k;
}

static int32_t gcd(int32_t a, int32_t b) { return b ? gcd(b, a % b) : a; }

el_status el_uniql_plan_uniform(const char *src, const float *rates, int32_t n_rates,
                                el_uniql_plan *out) {
    memset(out, 0, sizeof *out);
    if (!src || !rates || n_rates < 1 || n_rates > EL_PRUNE_MAX_RATES)
        return el_error(EL_ERR_INVALID_ARG, "el_uniql_plan_uniform: %d rates (1..%d)", n_rates,
                        EL_PRUNE_MAX_RATES);
    el_model *m;
    el_status st = el_model_load(src, NULL, &m);
    if (st)
        return st;
    const el_hparams *hp = &m->hp;
    if ((st = el_uniql_plan_alloc(out, rates, n_rates, hp->n_layer))) {
        el_model_free(m);
        return st;
    }
    for (int il = 0; il < hp->n_layer; il++) {
        const el_layer *l = &m->layers[il];
        int32_t ff_step = (int32_t)el_type_layout_get(l->w_down.type)->block_size;
        int32_t o_blk = (int32_t)el_type_layout_get(l->wo.type)->block_size;
        int32_t vo_step = o_blk / gcd(o_blk, hp->n_head);
        for (int32_t r = 0; r < n_rates; r++) {
            size_t i = (size_t)r * hp->n_layer + il;
            out->ff_kept[i] = kept_of(hp->n_ff, rates[r], ff_step);
            out->qk_kept[i] = kept_of(hp->head_dim_k, rates[r], 2);
            out->vo_kept[i] = kept_of(hp->head_dim_v, rates[r], vo_step);
        }
    }
    el_model_free(m);
    return EL_OK;
}

el_status el_uniql_write_uniform(const char *src, const float *rates, int32_t n_rates,
                                 const char *dst) {
    el_uniql_plan plan;
    el_status st = el_uniql_plan_uniform(src, rates, n_rates, &plan);
    if (!st)
        st = el_uniql_write(src, &plan, dst);
    el_uniql_plan_free(&plan);
    return st;
}

el_status el_uniql_plan_alloc(el_uniql_plan *plan, const float *rates, int32_t n_rates,
                              int32_t n_layer) {
    size_t n = (size_t)n_rates * (size_t)n_layer;
    memset(plan, 0, sizeof *plan);
    plan->n_rates = n_rates;
    plan->rates = malloc((size_t)n_rates * sizeof *plan->rates);
    plan->ff_kept = malloc(n * sizeof *plan->ff_kept);
    plan->qk_kept = malloc(n * sizeof *plan->qk_kept);
    plan->vo_kept = malloc(n * sizeof *plan->vo_kept);
    if (!plan->rates || !plan->ff_kept || !plan->qk_kept || !plan->vo_kept) {
        el_uniql_plan_free(plan);
        return el_error(EL_ERR_NOMEM, "uniql plan: out of memory");
    }
    memcpy(plan->rates, rates, (size_t)n_rates * sizeof *rates);
    return EL_OK;
}

void el_uniql_plan_free(el_uniql_plan *plan) {
    free(plan->rates);
    free(plan->ff_kept);
    free(plan->qk_kept);
    free(plan->vo_kept);
    free(plan->rope_pairs);
    memset(plan, 0, sizeof *plan);
}
