/* prune.c - the rate table of a compressed model: checking it, reading it with the column
 * pieces, the kept sizes of a rate, and releasing the dropped parts of the mapping. */
#include "model/prune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/error.h"
#include "model/model.h"

el_status el_prune_shape_check(const el_hparams *hp, bool has_bias, bool has_qk_norm,
                               const char *what) {
    const char *no = has_bias ? "Q/K/V biases"
                     : has_qk_norm ? "per-head Q/K norms"
                     : hp->fused_qkv || hp->fused_gate_up ? "fused projections"
                     : hp->n_rot != hp->head_dim_k ? "partial rotation (n_rot < head_dim)"
                     : hp->n_swa > 0 ? "sliding-window layers"
                                     : NULL;
    if (no)
        return el_error(EL_ERR_UNSUPPORTED, "%s: the UniQL layout does not carry %s; only "
                        "llama-family models without them can be pruned", what, no);
    return EL_OK;
}

/* Checks one kept-size column of the table: kept[r * n_layer + il]. */
static el_status check_kept(const int32_t *kept, const char *name, int32_t n_rates, int n_layer,
                            int32_t full, const int32_t *gran, int32_t unit, bool even,
                            const char *what) {
    for (int il = 0; il < n_layer; il++)
        for (int32_t r = 0; r < n_rates; r++) {
            int32_t k = kept[(size_t)r * n_layer + il];
            int32_t prev = r > 0 ? kept[(size_t)(r - 1) * n_layer + il] : full;
            int32_t g = gran ? gran[il] : 1;
            const char *bad = k < 1 ? "is not positive"
                              : k > full ? "is above the full size"
                              : r == 0 && k != full ? "is not the full size at rate 0"
                              : k > prev ? "grows with the rate"
                              : even && k % 2 ? "is odd (Q/K dims drop in RoPE pairs)"
                              : ((int64_t)k * unit) % g ? "breaks the layout's granularity"
                                                        : NULL;
            if (bad)
                return el_error(EL_ERR_FORMAT, "%s: %s of layer %d at rate %d is %d, which %s "
                                "(full %d, granularity %d columns)", what, name, il, r, k, bad,
                                full, g);
        }
    return EL_OK;
}

el_status el_prune_table_check(const el_prune_table *t, const el_hparams *hp,
                               const el_prune_grain *g, const char *what) {
    if (t->n_rates < 1 || t->n_rates > EL_PRUNE_MAX_RATES)
        return el_error(EL_ERR_FORMAT, "%s: %d pruning rates, expected 1..%d", what, t->n_rates,
                        EL_PRUNE_MAX_RATES);
    for (int32_t r = 0; r < t->n_rates; r++) {
        float x = t->rates[r];
        bool ok = r == 0 ? x == 0.0f : isfinite(x) && x > t->rates[r - 1] && x < 1.0f;
        if (!ok)
            return el_error(EL_ERR_FORMAT, "%s: rate %d is %g: rates must start at 0 and rise "
                            "strictly below 1", what, r, (double)x);
    }
    el_status st;
    int nl = hp->n_layer;
    if ((st = check_kept(t->ff_kept, "ff_kept", t->n_rates, nl, hp->n_ff, g->ff_gran, 1, false,
                         what)) ||
        (st = check_kept(t->qk_kept, "qk_kept", t->n_rates, nl, hp->head_dim_k, NULL, 1, true,
                         what)) ||
        (st = check_kept(t->vo_kept, "vo_kept", t->n_rates, nl, hp->head_dim_v, g->o_gran,
                         hp->n_head, false, what)))
        return st;
    if (!t->rope_pairs)
        return EL_OK;
    int half = hp->n_rot / 2;
    uint8_t seen[4096];
    if (half > (int)sizeof seen)
        return el_error(EL_ERR_UNSUPPORTED, "%s: %d rotation pairs per head", what, half);
    for (int h = 0; h < nl * hp->n_head_kv; h++) {
        const int32_t *p = t->rope_pairs + (size_t)h * half;
        memset(seen, 0, (size_t)half);
        for (int i = 0; i < half; i++) {
            if (p[i] < 0 || p[i] >= half || seen[p[i]])
                return el_error(EL_ERR_FORMAT, "%s: the RoPE pair index of layer %d, KV head %d "
                                "is not a permutation of 0..%d (entry %d is %d)", what,
                                h / hp->n_head_kv, h % hp->n_head_kv, half - 1, i, p[i]);
            seen[p[i]] = 1;
        }
    }
    return EL_OK;
}

bool el_prune_is_compressed(const gguf_file *f) {
    return gguf_find(f, EL_PRUNE_KEY_VERSION) != NULL;
}

el_status el_prune_refuse(const el_model *m, const char *tool) {
    if (!m->prune)
        return EL_OK;
    return el_error(EL_ERR_UNSUPPORTED, "%s is a UniQL compressed model, laid out for pruning at "
                    "run time; %s needs an ordinary model: give it the sorted model the file was "
                    "written from", m->path, tool);
}

static const char *const piece_stem[EL_N_LINEAR] = {
    [EL_LINEAR_Q] = "attn_q", [EL_LINEAR_K] = "attn_k", [EL_LINEAR_V] = "attn_v",
    [EL_LINEAR_O] = "attn_output", [EL_LINEAR_GATE] = "ffn_gate", [EL_LINEAR_UP] = "ffn_up",
    [EL_LINEAR_DOWN] = "ffn_down"};

const char *el_prune_piece_name(char *buf, int il, el_linear which, int j) {
    snprintf(buf, 96, "blk.%d.%s.piece.%d", il, piece_stem[which], j);
    return buf;
}

bool el_prune_by_columns(el_linear which) {
    return which == EL_LINEAR_O || which == EL_LINEAR_DOWN;
}

int64_t el_prune_kept_count(const el_prune_table *t, const el_hparams *hp, int r, int il,
                            el_linear which) {
    size_t i = (size_t)r * hp->n_layer + il;
    switch (which) {
    case EL_LINEAR_Q: return (int64_t)t->qk_kept[i] * hp->n_head;
    case EL_LINEAR_K: return (int64_t)t->qk_kept[i] * hp->n_head_kv;
    case EL_LINEAR_V: return (int64_t)t->vo_kept[i] * hp->n_head_kv;
    case EL_LINEAR_O: return (int64_t)t->vo_kept[i] * hp->n_head;
    default: return t->ff_kept[i];
    }
}

int32_t el_prune_boundaries(const el_prune_table *t, const el_hparams *hp, int il,
                            el_linear which, int64_t *b) {
    int32_t n = 0;
    b[0] = 0;
    for (int32_t r = t->n_rates - 1; r >= 0; r--) {
        int64_t c = el_prune_kept_count(t, hp, r, il, which);
        if (c > b[n])
            b[++n] = c;
    }
    return n;
}

int32_t el_prune_piece_drop(const el_prune_table *t, const el_hparams *hp, int il,
                            el_linear which, int64_t b0) {
    for (int32_t r = 0; r < t->n_rates; r++)
        if (el_prune_kept_count(t, hp, r, il, which) <= b0)
            return r;
    return t->n_rates;
}

el_prune_kept el_prune_kept_at(const el_prune *p, int n_layer, int r, int il) {
    size_t i = (size_t)r * n_layer + il;
    return (el_prune_kept){p->table.ff_kept[i], p->table.qk_kept[i], p->table.vo_kept[i]};
}

int32_t el_prune_rate_index(const el_prune *p, float rate) {
    if (!(rate >= 0.0f))
        return -1;
    for (int32_t r = 0; r < p->table.n_rates; r++)
        if (p->table.rates[r] >= rate - 1e-6f)
            return r;
    return -1;
}

void el_prune_free(el_prune *p) {
    if (!p)
        return;
    free(p->owned);
    free(p);
}

/* ---------------------------------------------------------------- reading */

/* An int32 array key of exactly n elements into dst. */
static el_status read_i32s(const el_model *m, const char *key, size_t n, int32_t *dst) {
    const gguf_kv *kv;
    el_status st = gguf_get_arr(m->gguf, key, GGUF_TYPE_INT32, &kv);
    if (st == EL_ERR_NOT_FOUND)
        return el_error(EL_ERR_FORMAT, "%s: damaged rate table: %s is missing", m->path, key);
    if (st)
        return st;
    if (kv->arr_n != n)
        return el_error(EL_ERR_FORMAT, "%s: damaged rate table: %s has %llu entries, expected "
                        "%zu (rates x layers)", m->path, key, (unsigned long long)kv->arr_n, n);
    memcpy(dst, kv->arr_data, n * sizeof *dst);
    return EL_OK;
}

/* The table's arrays, and the pieces' tables, carved from one block. */
static el_status read_table(el_model *m, el_prune *p) {
    const el_hparams *hp = &m->hp;
    uint32_t version;
    el_status st = gguf_get_u32(m->gguf, EL_PRUNE_KEY_VERSION, &version);
    if (st)
        return st;
    if (version != EL_PRUNE_VERSION)
        return el_error(EL_ERR_UNSUPPORTED, "%s: UniQL layout version %u, this build reads %d",
                        m->path, version, EL_PRUNE_VERSION);
    const gguf_kv *rates;
    if ((st = gguf_get_arr(m->gguf, "uniql.rates", GGUF_TYPE_FLOAT32, &rates)))
        return st == EL_ERR_NOT_FOUND
                   ? el_error(EL_ERR_FORMAT, "%s: damaged rate table: uniql.rates is missing",
                              m->path)
                   : st;
    if (rates->arr_n < 1 || rates->arr_n > EL_PRUNE_MAX_RATES)
        return el_error(EL_ERR_FORMAT, "%s: damaged rate table: %llu rates, expected 1..%d",
                        m->path, (unsigned long long)rates->arr_n, EL_PRUNE_MAX_RATES);
    size_t nr = (size_t)rates->arr_n, nl = (size_t)hp->n_layer, half = (size_t)hp->n_rot / 2;
    const gguf_tensor *pairs = gguf_find_tensor(m->gguf, "uniql.rope_pairs");
    size_t n_pairs = pairs ? nl * hp->n_head_kv * half : 0;
    size_t max_pieces = nr + 1, n_mats = nl * EL_N_LINEAR;
    size_t bytes = nr * sizeof(float) + 3 * nr * nl * sizeof(int32_t) + n_pairs * sizeof(int32_t) +
                   n_mats * (sizeof(el_prune_pieces) + max_pieces * (sizeof(el_weight) +
                                                                     sizeof(int64_t)));
    char *b = calloc(1, bytes);
    if (!b)
        return el_error(EL_ERR_NOMEM, "%s: out of memory", m->path);
    p->owned = b;
    /* the largest alignment first: pieces, weights and offsets, then the 4-byte arrays */
    p->pieces = (el_prune_pieces *)b;
    el_weight *w = (el_weight *)(p->pieces + n_mats);
    int64_t *bounds = (int64_t *)(w + n_mats * max_pieces);
    for (size_t i = 0; i < n_mats; i++)
        p->pieces[i] = (el_prune_pieces){.w = w + i * max_pieces, .b = bounds + i * max_pieces};
    float *r = (float *)(bounds + n_mats * max_pieces);
    int32_t *ff = (int32_t *)(r + nr), *qk = ff + nr * nl, *vo = qk + nr * nl, *rp = vo + nr * nl;
    memcpy(r, rates->arr_data, nr * sizeof *r);
    if ((st = read_i32s(m, "uniql.ff_kept", nr * nl, ff)) ||
        (st = read_i32s(m, "uniql.qk_kept", nr * nl, qk)) ||
        (st = read_i32s(m, "uniql.vo_kept", nr * nl, vo)))
        return st;
    if (pairs) {
        bool ok = pairs->type == EL_TYPE_I32 && pairs->ne[0] == (int64_t)half &&
                  pairs->ne[1] == hp->n_head_kv && pairs->ne[2] == (int64_t)nl && pairs->ne[3] == 1;
        if (!ok)
            return el_error(EL_ERR_FORMAT, "%s: uniql.rope_pairs must be I32 of shape [%zu, %d, "
                            "%zu]", m->path, half, hp->n_head_kv, nl);
        memcpy(rp, pairs->data, n_pairs * sizeof *rp);
    }
    p->table = (el_prune_table){.n_rates = (int32_t)nr, .rates = r, .ff_kept = ff, .qk_kept = qk,
                                .vo_kept = vo, .rope_pairs = pairs ? rp : NULL};
    return EL_OK;
}

/* The block size of the type of a layer's first piece of down or O (the granularity the table
 * is checked against), or an error naming the piece if it is missing. */
static el_status piece0_block(const el_model *m, int il, el_linear which, int32_t *gran) {
    char name[96];
    const gguf_tensor *t = gguf_find_tensor(m->gguf, el_prune_piece_name(name, il, which, 0));
    if (!t)
        return el_error(EL_ERR_FORMAT, "%s: compressed file without tensor '%s'", m->path, name);
    const el_type_layout *lay = el_type_layout_get(t->type);
    *gran = lay ? (int32_t)lay->block_size : 1;
    return EL_OK;
}

/* The pieces of one linear of layer il, each a tensor of a weight type (piece 0's for all) whose
 * rows or columns are those the boundaries say; the layer's weight becomes a view of the whole
 * shape without data. */
static el_status load_pieces(el_model *m, int il, el_linear which) {
    el_prune_pieces *pc = &m->prune->pieces[el_linear_slot(il, which)];
    el_weight *whole = (el_weight *)el_layer_weight(&m->layers[il], which);
    bool cols = el_prune_by_columns(which);
    pc->n = el_prune_boundaries(&m->prune->table, &m->hp, il, which, pc->b);
    int64_t full = pc->b[pc->n];
    int64_t other = m->hp.n_embd; /* every linear reads or writes the residual width */
    for (int32_t j = 0; j < pc->n; j++) {
        char name[96];
        el_prune_piece_name(name, il, which, j);
        const gguf_tensor *t = gguf_find_tensor(m->gguf, name);
        int64_t size = pc->b[j + 1] - pc->b[j];
        int64_t ne0 = cols ? size : other, ne1 = cols ? other : size;
        if (!t)
            return el_error(EL_ERR_FORMAT, "%s: compressed file without tensor '%s' (the rate "
                            "table has %d pieces there)", m->path, name, pc->n);
        const el_type_kernels *k = el_type_kernels_get(t->type);
        const el_type_layout *lay = el_type_layout_get(t->type);
        if (!k || !k->vec_dot || (j > 0 && t->type != (uint32_t)pc->w[0].type) ||
            t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != 1 || t->ne[3] != 1 ||
            ne0 % lay->block_size)
            return el_error(EL_ERR_FORMAT, "%s: tensor '%s' must be [%lld, %lld] of a weight type "
                            "whose blocks divide its rows, the type of piece 0 (the shapes come "
                            "from the rate table)", m->path, name, (long long)ne0, (long long)ne1);
        pc->w[j] = el_weight_view((el_type)t->type, t->data, ne0, ne1);
    }
    *whole = cols ? el_weight_view(pc->w[0].type, NULL, full, m->hp.n_embd)
                  : el_weight_view(pc->w[0].type, NULL, m->hp.n_embd, full);
    return EL_OK;
}

el_status el_prune_load(el_model *m) {
    const el_hparams *hp = &m->hp;
    el_status st;
    if (!(m->prune = calloc(1, sizeof *m->prune)))
        return el_error(EL_ERR_NOMEM, "%s: out of memory", m->path);
    if ((st = read_table(m, m->prune)))
        return st;
    int32_t *gran = malloc(2 * (size_t)hp->n_layer * sizeof *gran);
    if (!gran)
        return el_error(EL_ERR_NOMEM, "%s: out of memory", m->path);
    el_prune_grain g = {.ff_gran = gran, .o_gran = gran + hp->n_layer};
    for (int il = 0; il < hp->n_layer && !st; il++)
        if (!(st = piece0_block(m, il, EL_LINEAR_DOWN, &gran[il])))
            st = piece0_block(m, il, EL_LINEAR_O, &gran[hp->n_layer + il]);
    if (!st) {
        char what[600];
        snprintf(what, sizeof what, "%s: damaged rate table", m->path);
        st = el_prune_table_check(&m->prune->table, hp, &g, what);
    }
    free(gran);
    for (int il = 0; il < hp->n_layer && !st; il++)
        for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN && !st; w++)
            st = load_pieces(m, il, w);
    return st;
}

/* ---------------------------------------------------------------- memory */

/* Calls fn on every piece that rate index r drops. */
static void for_each_dropped(const el_model *m, int32_t r,
                             void (*fn)(const void *p, uint64_t n, void *user), void *user) {
    const el_hparams *hp = &m->hp;
    for (int il = 0; il < hp->n_layer; il++)
        for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++) {
            const el_prune_pieces *pc = &m->prune->pieces[el_linear_slot(il, w)];
            int64_t kept = el_prune_kept_count(&m->prune->table, hp, r, il, w);
            for (int32_t j = 0; j < pc->n; j++)
                if (pc->b[j] >= kept)
                    fn(pc->w[j].data, (uint64_t)pc->w[j].n_out * pc->w[j].row_bytes, user);
        }
}

static void add_bytes(const void *p, uint64_t n, void *user) { *(uint64_t *)user += n; }

uint64_t el_prune_weight_bytes(const el_model *m, int32_t r) {
    uint64_t dropped = 0;
    for_each_dropped(m, r, add_bytes, &dropped);
    return m->weight_bytes - dropped;
}

/* The whole pages inside [p, p + n). */
static void advise(const void *p, uint64_t n, int advice) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)p + page - 1) / page * page, hi = ((uintptr_t)p + n) / page * page;
    if (hi > lo)
        madvise((void *)lo, hi - lo, advice); /* a hint: failing changes nothing but the RSS */
}

static void drop(const void *p, uint64_t n, void *user) { advise(p, n, MADV_DONTNEED); }

void el_prune_release(el_model *m, int32_t r) {
    /* the whole mapping back first, then the dropped parts out: what stays is what r keeps */
    advise(m->gguf->map.data, m->gguf->map.size, MADV_WILLNEED);
    for_each_dropped(m, r, drop, NULL);
}
