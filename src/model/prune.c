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

const char *el_prune_piece_name(char *buf, int il, bool down, int j) {
    snprintf(buf, 96, "blk.%d.%s.piece.%d", il, down ? "ffn_down" : "attn_output", j);
    return buf;
}

int32_t el_prune_boundaries(const el_prune_table *t, int n_layer, int il, bool down, int unit,
                            int64_t *col0) {
    const int32_t *kept = down ? t->ff_kept : t->vo_kept;
    int32_t n = 0;
    col0[0] = 0;
    for (int32_t r = t->n_rates - 1; r >= 0; r--) {
        int64_t c = (int64_t)kept[(size_t)r * n_layer + il] * unit;
        if (c > col0[n])
            col0[++n] = c;
    }
    return n;
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
    size_t max_pieces = nr + 1;
    size_t bytes = nr * sizeof(float) + 3 * nr * nl * sizeof(int32_t) + n_pairs * sizeof(int32_t) +
                   2 * nl * (sizeof(el_prune_pieces) + max_pieces * (sizeof(el_weight) +
                                                                     sizeof(int64_t)));
    char *b = calloc(1, bytes);
    if (!b)
        return el_error(EL_ERR_NOMEM, "%s: out of memory", m->path);
    p->owned = b;
    /* the largest alignment first: pieces, weights and offsets, then the 4-byte arrays */
    p->down = (el_prune_pieces *)b;
    p->o = p->down + nl;
    el_weight *w = (el_weight *)(p->o + nl);
    int64_t *c0 = (int64_t *)(w + 2 * nl * max_pieces);
    for (size_t il = 0; il < nl; il++) {
        p->down[il] = (el_prune_pieces){.w = w + 2 * il * max_pieces,
                                        .col0 = c0 + 2 * il * max_pieces};
        p->o[il] = (el_prune_pieces){.w = w + (2 * il + 1) * max_pieces,
                                     .col0 = c0 + (2 * il + 1) * max_pieces};
    }
    float *r = (float *)(c0 + 2 * nl * max_pieces);
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

/* The type of a layer's first piece (its block size is the granularity the table is checked
 * against), or an error naming it if it is missing. */
static el_status piece0_block(const el_model *m, int il, bool down, int32_t *gran) {
    char name[96];
    const gguf_tensor *t = gguf_find_tensor(m->gguf, el_prune_piece_name(name, il, down, 0));
    if (!t)
        return el_error(EL_ERR_FORMAT, "%s: compressed file without tensor '%s'", m->path, name);
    const el_type_layout *lay = el_type_layout_get(t->type);
    *gran = lay ? (int32_t)lay->block_size : 1;
    return EL_OK;
}

/* The pieces of one column-pruned matrix of layer il: each a [width, n_embd] tensor of a type
 * with kernels; the layer's weight becomes a view of the whole shape without data, which the
 * forward never multiplies (it runs the pieces) but sizes scratch and checks adapters by. */
static el_status load_pieces(el_model *m, int il, bool down, el_prune_pieces *pc, el_weight *whole) {
    const el_hparams *hp = &m->hp;
    pc->n = el_prune_boundaries(&m->prune->table, hp->n_layer, il, down, down ? 1 : hp->n_head,
                                pc->col0);
    for (int32_t j = 0; j < pc->n; j++) {
        char name[96];
        el_prune_piece_name(name, il, down, j);
        const gguf_tensor *t = gguf_find_tensor(m->gguf, name);
        int64_t width = pc->col0[j + 1] - pc->col0[j];
        if (!t)
            return el_error(EL_ERR_FORMAT, "%s: compressed file without tensor '%s' (the rate "
                            "table has %d pieces there)", m->path, name, pc->n);
        const el_type_kernels *k = el_type_kernels_get(t->type);
        const el_type_layout *lay = el_type_layout_get(t->type);
        if (!k || !k->vec_dot || (j > 0 && t->type != (uint32_t)pc->w[0].type) || t->ne[0] != width || t->ne[1] != hp->n_embd || t->ne[2] != 1 ||
            t->ne[3] != 1 || width % lay->block_size)
            return el_error(EL_ERR_FORMAT, "%s: tensor '%s' must be [%lld, %d] of a weight type "
                            "whose blocks divide its rows, the type of piece 0 (the boundaries "
                            "come from the rate table)", m->path,
                            name, (long long)width, hp->n_embd);
        pc->w[j] = el_weight_view((el_type)t->type, t->data, width, hp->n_embd);
    }
    int64_t n_in = pc->col0[pc->n];
    *whole = el_weight_view(pc->w[0].type, NULL, n_in, hp->n_embd);
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
        if (!(st = piece0_block(m, il, true, &gran[il])))
            st = piece0_block(m, il, false, &gran[hp->n_layer + il]);
    if (!st) {
        char what[600];
        snprintf(what, sizeof what, "%s: damaged rate table", m->path);
        st = el_prune_table_check(&m->prune->table, hp, &g, what);
    }
    free(gran);
    for (int il = 0; il < hp->n_layer && !st; il++)
        if (!(st = load_pieces(m, il, true, &m->prune->down[il], &m->layers[il].w_down)))
            st = load_pieces(m, il, false, &m->prune->o[il], &m->layers[il].wo);
    return st;
}

/* ---------------------------------------------------------------- memory */

/* Bytes of w's rows from k_out on. */
static uint64_t tail_bytes(const el_weight *w, int64_t k_out) {
    return (uint64_t)(w->n_out - k_out) * w->row_bytes;
}

/* Calls fn on every range [p, p + n) that rate index r drops. */
static void for_each_dropped(const el_model *m, int32_t r,
                             void (*fn)(const void *p, uint64_t n, void *user), void *user) {
    const el_hparams *hp = &m->hp;
    for (int il = 0; il < hp->n_layer; il++) {
        const el_layer *l = &m->layers[il];
        el_prune_kept k = el_prune_kept_at(m->prune, hp->n_layer, r, il);
        const struct { const el_weight *w; int64_t kept; } rows[] = {
            {&l->wq, (int64_t)k.qk * hp->n_head}, {&l->wk, (int64_t)k.qk * hp->n_head_kv},
            {&l->wv, (int64_t)k.vo * hp->n_head_kv}, {&l->w_gate, k.ff}, {&l->w_up, k.ff}};
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            fn((const uint8_t *)rows[i].w->data + (size_t)rows[i].kept * rows[i].w->row_bytes,
               tail_bytes(rows[i].w, rows[i].kept), user);
        const el_prune_pieces *pcs[2] = {&m->prune->down[il], &m->prune->o[il]};
        const int64_t kept_cols[2] = {k.ff, (int64_t)k.vo * hp->n_head};
        for (int i = 0; i < 2; i++)
            for (int32_t j = 0; j < pcs[i]->n; j++)
                if (pcs[i]->col0[j] >= kept_cols[i])
                    fn(pcs[i]->w[j].data, tail_bytes(&pcs[i]->w[j], 0), user);
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
