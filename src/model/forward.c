/* forward.c - the llama-family forward pass (llama, qwen2, qwen3, phi3, gemma3) over a batch of
 * rows.
 *
 * Per block: RMSNorm -> Q, K, V (one matmul each over all rows of a chunk, + bias; qwen3: an
 * RMSNorm of each head; phi3: views of one fused tensor) -> RoPE at each row's position (phi3:
 * longrope factors and magnitude) -> K, V into the rows' cells -> attention of each (row, head)
 * over the cells visible to the row -> output projection -> residual -> RMSNorm -> SwiGLU FFN ->
 * residual. Then
 * the final norm and the vocabulary projection, only for the rows whose logits are wanted.
 * gemma3 adds, each where the model has it: embeddings scaled, an RMSNorm of each query and key
 * head before RoPE, an RMSNorm of the attention and FFN outputs before their residuals, GeGLU
 * for SwiGLU, sliding-window layers (a row sees only the cells of its last n_swa positions,
 * rotated with their own base), a soft-capped logit.
 *
 * A pass of more than n_ubatch rows runs in chunks: per block, K and V of every chunk first (so
 * every row's cell holds this layer's K and V before anyone attends), then the rest chunk by
 * chunk. Only the residual stream is kept for all rows; the weights are read once per chunk,
 * as the matmul reads them once per 64 rows anyway.
 *
 * Scalar arithmetic is float32 and in the order of llama2.c's run.c (norm, rope, softmax,
 * SwiGLU), so a float model with a float32 KV cache reproduces its greedy output; the default
 * fp16 cache rounds each stored K and V element to fp16 (kv_cache.h). */
#include "model/forward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/dispatch.h"
#include "kernels/rope.h"
#include "model/forward_prune.h"

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

/* Consecutive 64-byte aligned pieces of one block; with base NULL it only adds up their sizes. */
typedef struct carver {
    char *base;
    size_t used;
} carver;

static void *carve(carver *c, size_t bytes) {
    void *p = c->base ? c->base + c->used : NULL;
    c->used += (bytes + 63) / 64 * 64;
    return p;
}

/* The buffers of f, carved from c (a sizing pass when c->base is NULL); mm: bytes of matmul
 * scratch. Sizes in one place, so the sizing and the carving cannot disagree. */
static void carve_scratch(el_forward *f, carver *c, size_t mm) {
    const el_hparams *hp = &f->model->hp;
    size_t nb = (size_t)f->n_batch, ub = (size_t)f->n_ubatch, n_ctx = (size_t)f->kv->n_ctx;
    size_t q_dim = (size_t)hp->n_head * hp->head_dim_k;
    size_t o_dim = (size_t)hp->n_head * hp->head_dim_v;
    size_t k_dim = (size_t)hp->n_head_kv * hp->head_dim_k;
    size_t v_dim = (size_t)hp->n_head_kv * hp->head_dim_v;
    size_t half = (size_t)hp->n_rot / 2 + 1;
    const size_t fl = sizeof(float), i32 = sizeof(int32_t);
    f->x = carve(c, nb * hp->n_embd * fl);
    f->rope_cos = carve(c, nb * half * fl);
    f->rope_sin = carve(c, nb * half * fl);
    size_t swa = hp->n_swa > 0 ? 1 : 0;
    f->rope_cos_swa = carve(c, swa * nb * half * fl);
    f->rope_sin_swa = carve(c, swa * nb * half * fl);
    f->anc = carve(c, nb * nb);
    f->cell_row = carve(c, n_ctx * i32);
    f->xn = carve(c, ub * max_sz((size_t)hp->n_embd, o_dim) * fl);
    f->q = carve(c, ub * q_dim * fl);
    f->k = carve(c, ub * k_dim * fl);
    f->v = carve(c, ub * v_dim * fl);
    f->att_out = carve(c, ub * o_dim * fl);
    f->proj = carve(c, ub * hp->n_embd * fl);
    f->gate = carve(c, ub * hp->n_ff * fl);
    f->up = carve(c, ub * hp->n_ff * fl);
    f->vis = carve(c, ub * n_ctx * i32);
    f->n_vis = carve(c, ub * i32);
    f->vis_swa = carve(c, ub * i32);
    size_t nth = (size_t)el_threadpool_size(f->tp), group = (size_t)(hp->n_head / hp->n_head_kv);
    f->scores = carve(c, nth * group * n_ctx * fl);
    f->kv_rows = carve(c, nth * 2 * n_ctx * sizeof *f->kv_rows);
    f->mm_scratch = carve(c, mm);
    f->chunk_groups = carve(c, ub * sizeof *f->chunk_groups);
    f->chunk_rows = carve(c, ub * i32);
    size_t pr = f->model->prune ? 1 : 0;
    f->prune_row = carve(c, pr * max_sz(max_sz(q_dim, k_dim), v_dim) * fl);
    f->prune_packed = carve(c, pr * ub * o_dim * fl);
    f->prune_sum = carve(c, pr * 2 * ub * hp->n_embd * fl);
}

el_status el_forward_init(el_forward *f, const el_model *m, el_kv_cache *kv, el_threadpool *tp,
                          int32_t n_batch, int32_t n_ubatch) {
    memset(f, 0, sizeof *f);
    f->model = m;
    f->kv = kv;
    f->tp = tp;
    f->n_batch = n_batch;
    f->n_ubatch = n_ubatch < n_batch ? n_ubatch : n_batch;
    const el_hparams *hp = &m->hp;
    size_t mm = el_matmul_scratch_size(&m->output, f->n_ubatch);
    for (int il = 0; il < hp->n_layer; il++)
        for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++)
            mm = max_sz(mm, el_matmul_scratch_size(el_layer_weight(&m->layers[il], w),
                                                   f->n_ubatch));
    carver sizing = {0};
    carve_scratch(f, &sizing, mm);
    carver c = {.base = aligned_alloc(64, sizing.used)};
    if (!c.base) {
        memset(f, 0, sizeof *f);
        return el_error(EL_ERR_NOMEM, "context: out of memory for the scratch of %d rows (%zu "
                        "bytes)", n_batch, sizing.used);
    }
    carve_scratch(f, &c, mm);
    if (hp->n_swa == 0)
        f->rope_cos_swa = f->rope_sin_swa = NULL;
    if (!m->prune)
        f->prune_row = f->prune_packed = f->prune_sum = NULL;
    f->scratch = c.base;
    f->scratch_bytes = c.used;
    for (int32_t i = 0; i < kv->n_ctx; i++)
        f->cell_row[i] = -1;
    return EL_OK;
}

void el_forward_free(el_forward *f) {
    free(f->scratch);
    free(f->logits);
    el_lora_scratch_free(&f->lora);
    memset(f, 0, sizeof *f);
}

el_status el_forward_reserve_logits(el_forward *f, int32_t n_out) {
    if (n_out <= f->logits_rows)
        return EL_OK;
    float *p = realloc(f->logits, (size_t)n_out * f->model->hp.n_vocab * sizeof(float));
    if (!p)
        return el_error(EL_ERR_NOMEM, "context: out of memory for the logits of %d rows", n_out);
    f->logits = p;
    f->logits_rows = n_out;
    return EL_OK;
}

/* ------------------------------------------------------------- row-wise operations */

/* o = w * x / rms(x). The squares are summed in 16 running sums, which the compiler keeps in
 * vector registers: one running sum is a chain of dependent adds as long as the row, a latency
 * that steps of many rows pay in full (docs/kernels.md), and the split sums round less. */
enum { RMS_LANES = 16 };

static void rmsnorm(float *o, const float *x, const float *w, int n, float eps) {
    float part[RMS_LANES] = {0};
    int i = 0;
    for (; i + RMS_LANES <= n; i += RMS_LANES)
        #pragma GCC unroll 16
        for (int j = 0; j < RMS_LANES; j++)
            part[j] += x[i + j] * x[i + j];
    for (; i < n; i++)
        part[0] += x[i] * x[i];
    for (int half = RMS_LANES / 2; half > 0; half /= 2)
        for (int j = 0; j < half; j++)
            part[j] += part[j + half];
    float ss = part[0] / (float)n;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
    for (i = 0; i < n; i++)
        o[i] = w[i] * (ss * x[i]);
}

static void rmsnorm_rows(float *o, const float *x, const float *w, int32_t n_rows, int n,
                         float eps) {
    for (int32_t r = 0; r < n_rows; r++)
        rmsnorm(o + (size_t)r * n, x + (size_t)r * n, w, n, eps);
}

/* The RMSNorm of each head of hd floats of n_rows rows of n_heads heads, in place (per-head
 * Q/K norms). */
static void rmsnorm_heads(float *x, const float *w, int32_t n_rows, int n_heads, int hd,
                          float eps) {
    for (size_t h = 0; h < (size_t)n_rows * n_heads; h++)
        rmsnorm(x + h * hd, x + h * hd, w, hd, eps);
}

static void scale_rows(float *x, float s, size_t n) {
    for (size_t i = 0; i < n; i++)
        x[i] *= s;
}

static void add_rows(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++)
        x[i] += y[i];
}

/* cos and sin of every rotated pair's angle for each row's position into cs, sn, times the
 * magnitude factor (1 but for phi3's longrope). theta_i = pos * scale * base^(-2i/n_rot) /
 * factor_i, with factor_i from rope_freqs (llama3-style) or the longrope set this context's size
 * chooses; sliding-window layers' tables (swa) have neither factors nor magnitude. */
static void rope_table(const el_forward *f, const el_rows *rows, float base, float scale,
                       bool swa, float *cs, float *sn) {
    const el_model *m = f->model;
    const el_hparams *hp = &m->hp;
    const float *factors = swa ? NULL : el_model_rope_factors(m, f->kv->n_ctx);
    float mag = swa ? 1.0f : hp->rope_attn_factor;
    int half = hp->n_rot / 2;
    for (int32_t r = 0; r < rows->n; r++) {
        float pos = (float)rows->pos[r] * scale;
        for (int i = 0; i < half; i++) {
            float freq = 1.0f / powf(base, (float)(2 * i) / (float)hp->n_rot);
            if (factors)
                freq /= factors[i];
            float val = pos * freq;
            cs[(size_t)r * half + i] = cosf(val) * mag;
            sn[(size_t)r * half + i] = sinf(val) * mag;
        }
    }
}

/* The tables of the pass: the global layers', and the sliding-window layers' if any. */
static void rope_tables(el_forward *f, const el_rows *rows) {
    const el_hparams *hp = &f->model->hp;
    rope_table(f, rows, hp->rope_freq_base, hp->rope_freq_scale, false, f->rope_cos,
               f->rope_sin);
    if (f->rope_cos_swa)
        rope_table(f, rows, hp->rope_freq_base_swa, hp->rope_freq_scale_swa, true,
                   f->rope_cos_swa, f->rope_sin_swa);
}

/* Row r's cos and sin table for block il. */
static const float *rope_cos_of(const el_forward *f, int il, int32_t r) {
    const float *t = f->model->layers[il].swa ? f->rope_cos_swa : f->rope_cos;
    return t + (size_t)r * (f->model->hp.n_rot / 2);
}

static const float *rope_sin_of(const el_forward *f, int il, int32_t r) {
    const float *t = f->model->layers[il].swa ? f->rope_sin_swa : f->rope_sin;
    return t + (size_t)r * (f->model->hp.n_rot / 2);
}

/* RoPE on the n_heads heads (Q or K) of one row of block il: the kernel's, with the pair index of
 * a compressed model whose pairs were reordered. */
static void rope_apply(const el_forward *f, int il, float *vec, int n_heads, const float *cs,
                       const float *sn) {
    const el_hparams *hp = &f->model->hp;
    const int32_t *pairs = f->model->prune ? f->model->prune->table.rope_pairs : NULL;
    if (pairs)
        pairs += (size_t)il * hp->n_head_kv * (hp->n_rot / 2);
    el_rope_rotate(vec, n_heads, hp->head_dim_k, hp->n_rot, hp->rope_style == EL_ROPE_NEOX, cs,
                   sn, pairs, n_heads / hp->n_head_kv);
}

/* ------------------------------------------------------------- linear layers */

/* For each of count linear layers of block il that read the same x (Q, K and V; gate and up):
 * y[r] = W x[r] (+ bias) for n rows, then, for each group of rows that share an adapter
 * binding, y_g += s * B (A x_g) for every bound adapter that changes this layer
 * (kernels/lora.h). The base product is the same whatever is bound; the layers' base products
 * run together (el_matmul_many: one pool job for all in a decode step). A compressed model runs
 * the kept part at the chunk [c0, c0 + n)'s rates and puts the results in the sorted layout
 * (model/forward_prune.h); adapters then act on the whole layout, whose dropped channels are
 * zero in x and are zeroed again in y, which is adapters applied to the kept part of A and B. */
static void linears(el_forward *f, int il, int count, const el_linear which[], const float *x,
                    int64_t ldx, float *const y[], const int64_t ldy[], int32_t c0, int32_t n,
                    const el_lora_rows *lr) {
    const el_layer *l = &f->model->layers[il];
    const el_weight *w[EL_MATMUL_MANY] = {0}; /* count >= 1 fills it; -O1 cannot tell */
    bool pruned = f->model->prune != NULL;
    for (int i = 0; i < count; i++) {
        w[i] = el_layer_weight(l, which[i]);
        if (f->observe)
            f->observe(f->observe_user, il, which[i], x, ldx, n);
    }
    if (pruned) {
        el_prune_kept k = el_fwd_chunk_kept(f, il, c0, n);
        if (el_prune_by_columns(which[0])) /* down and O: a linear of its own */
            el_fwd_column_pieces(f, il, which[0], x, ldx, y[0], ldy[0], n, k);
        else
            el_fwd_row_pieces(f, il, count, which, x, ldx, y, ldy, n, k);
    } else {
        el_matmul_many(f->tp, count, w, x, ldx, n, y, ldy, f->mm_scratch);
    }
    for (int i = 0; i < count; i++) {
        const float *bias = which[i] == EL_LINEAR_Q ? l->bq
                            : which[i] == EL_LINEAR_K ? l->bk
                            : which[i] == EL_LINEAR_V ? l->bv
                                                      : NULL;
        if (bias)
            for (int32_t r = 0; r < n; r++)
                add_rows(y[i] + (size_t)r * ldy[i], bias, (size_t)w[i]->k_out);
        if (pruned)
            el_fwd_pruned_unpack(f, il, which[i], y[i], ldy[i], c0, n);
    }
    if (!lr) return;
    int32_t slots[EL_LORA_MANY];
    for (int i = 0; i < count; i++) slots[i] = el_linear_slot(il, which[i]);
    el_lora_apply_many(f->tp, lr, count, slots, x, ldx, w[0]->n_in, y, ldy, &f->lora);
    for (int i = 0; pruned && i < count; i++)
        el_fwd_pruned_mask(f, il, which[i], y[i], ldy[i], c0, n);
}

/* One linear layer: linears of one. */
static void linear(el_forward *f, int il, el_linear which, const float *x, int64_t ldx, float *y,
                   int64_t ldy, int32_t c0, int32_t n, const el_lora_rows *lr) {
    linears(f, il, 1, &which, x, ldx, &y, &ldy, c0, n, lr);
}

/* ------------------------------------------------------------- attention */

/* Orders cells by position (then index), so that attention sums in the same order wherever the
 * cache happened to put a sequence's cells: a batch then gives bit-identical results to a run
 * alone, even after freed cells are reused. */
static int cmp_cell_pos(const void *a, const void *b, void *kv_cache) {
    const el_kv_cache *kv = kv_cache;
    int32_t ca = *(const int32_t *)a, cb = *(const int32_t *)b;
    if (kv->pos[ca] != kv->pos[cb]) return kv->pos[ca] < kv->pos[cb] ? -1 : 1;
    return (ca > cb) - (ca < cb);
}

/* The rows of the pass in their cells, and for a tree batch each row's ancestors. */
static void mark_rows(el_forward *f, const el_rows *rows) {
    size_t nb = (size_t)f->n_batch;
    for (int32_t r = 0; r < rows->n; r++)
        f->cell_row[rows->cell[r]] = r;
    if (!rows->parent)
        return;
    for (int32_t r = 0; r < rows->n; r++) {
        uint8_t *a = f->anc + (size_t)r * nb;
        int32_t p = rows->parent[r];
        if (p >= 0)
            memcpy(a, f->anc + (size_t)p * nb, (size_t)p + 1);
        memset(a + (p >= 0 ? p + 1 : 0), 0, (size_t)(r - (p >= 0 ? p + 1 : 0)));
        a[r] = 1;
    }
}

/* The index of the first of the n cells of vis (in position order) that a row at position pos
 * sees in a sliding-window layer: those less than n_swa positions before it, as llama.cpp and
 * Hugging Face mask (a cell at pos - n_swa is out). 0 without a window. */
static int32_t window_start(const el_forward *f, const int32_t *vis, int32_t n, int32_t pos) {
    int32_t n_swa = f->model->hp.n_swa, k = 0;
    if (n_swa <= 0)
        return 0;
    while (k < n && (int64_t)pos - f->kv->pos[vis[k]] >= n_swa)
        k++;
    return k;
}

/* For each row of the chunk [c0, c0 + n), the cells it attends to in position order: visible to
 * its sequence, position not after its own, and in a tree batch, among this pass's cells only
 * its ancestors and itself. */
static void build_visibility(el_forward *f, const el_rows *rows, int32_t c0, int32_t n_rows) {
    const el_kv_cache *kv = f->kv;
    size_t nb = (size_t)f->n_batch;
    for (int32_t i = 0; i < n_rows; i++) {
        int32_t r = c0 + i;
        int32_t *vis = f->vis + (size_t)i * kv->n_ctx, n = 0;
        for (int32_t c = 0; c < kv->n_ctx; c++) {
            if (!el_kv_cell_has_seq(kv, c, rows->seq_id[r]) || kv->pos[c] > rows->pos[r])
                continue;
            int32_t j = f->cell_row[c];
            if (rows->parent && j >= 0 && (j > r || !f->anc[(size_t)r * nb + j]))
                continue;
            vis[n++] = c;
        }
        f->n_vis[i] = n;
        bool ordered = true;
        for (int32_t k = 1; k < n && ordered; k++) ordered = kv->pos[vis[k - 1]] < kv->pos[vis[k]];
        if (!ordered) qsort_r(vis, (size_t)n, sizeof *vis, cmp_cell_pos, (void *)kv);
        f->vis_swa[i] = window_start(f, vis, n, rows->pos[r]);
    }
}

typedef struct attention_job {
    el_forward *f;
    int32_t n_rows; /* of the chunk; row i's q, vis and output are at index i */
    int il;
} attention_job;

/* One (row, kv head) per unit, split round-robin across the pool: the dispatched attention
 * kernel (kernels/attend.h) over the cells the row sees, for the query heads sharing the kv
 * head. */
static void attention_task(void *arg, int ith, int nth) {
    const attention_job *job = arg;
    el_forward *f = job->f;
    const el_hparams *hp = &f->model->hp;
    const el_kv_cache *kv = f->kv;
    el_attend_fn attend = el_kernels_get()->attend;
    int hd_k = hp->head_dim_k, hd_v = hp->head_dim_v;
    int group = hp->n_head / hp->n_head_kv;
    size_t n_ctx = (size_t)kv->n_ctx;
    float *scores = f->scores + (size_t)ith * group * n_ctx;
    const void **keys = f->kv_rows + (size_t)ith * 2 * n_ctx, **values = keys + n_ctx;
    int32_t units = job->n_rows * hp->n_head_kv;
    for (int32_t u = ith; u < units; u += nth) {
        int32_t r = u / hp->n_head_kv, kvh = u % hp->n_head_kv, h0 = kvh * group;
        const int32_t *vis = f->vis + (size_t)r * n_ctx;
        int32_t nv = f->n_vis[r];
        if (f->model->layers[job->il].swa) {
            vis += f->vis_swa[r];
            nv -= f->vis_swa[r];
        }
        for (int32_t j = 0; j < nv; j++) {
            keys[j] = el_kv_cell_k(kv, job->il, kvh, vis[j]);
            values[j] = el_kv_cell_v(kv, job->il, kvh, vis[j]);
        }
        attend(kv->type, group, hd_k, hd_v, nv, f->q + ((size_t)r * hp->n_head + h0) * hd_k,
               keys, values, scores, n_ctx, f->att_out + ((size_t)r * hp->n_head + h0) * hd_v);
    }
}

/* ------------------------------------------------------------- feed-forward */

typedef struct ffn_act_job {
    float *gate;
    const float *up;
    size_t n;
    el_ffn_act act;
} ffn_act_job;

/* The gated activation (the kernel table's swiglu or geglu), split across the pool: an
 * exponential per element is tens of microseconds per layer, which the other threads would
 * otherwise spend waiting. */
static void ffn_act_task(void *arg, int ith, int nth) {
    const ffn_act_job *j = arg;
    size_t lo = j->n * (size_t)ith / (size_t)nth, hi = j->n * (size_t)(ith + 1) / (size_t)nth;
    const el_kernels *k = el_kernels_get();
    (j->act == EL_FFN_GELU ? k->geglu : k->swiglu)(j->gate + lo, j->up + lo, hi - lo);
}

/* ------------------------------------------------------------- the pass */

static void embed_rows(el_forward *f, const el_rows *rows) {
    const el_model *m = f->model;
    int n_embd = m->hp.n_embd;
    const el_type_kernels *kernels = el_type_kernels_get(m->tok_embd.type);
    for (int32_t r = 0; r < rows->n; r++) {
        float *x = f->x + (size_t)r * n_embd;
        if (rows->token && rows->token[r] >= 0) {
            const uint8_t *row = (const uint8_t *)m->tok_embd.data +
                                 (size_t)rows->token[r] * m->tok_embd.row_bytes;
            kernels->to_float(row, x, n_embd);
            if (m->hp.embd_scale != 1.0f)
                scale_rows(x, m->hp.embd_scale, (size_t)n_embd);
        } else {
            memcpy(x, rows->embd + (size_t)r * n_embd, (size_t)n_embd * sizeof *x);
        }
    }
}

/* The adapter groups restricted to the chunk [c0, c0 + n), rows relative to c0 (a group's rows
 * are ascending, so the chunk's share of each is a run); NULL if no row of it uses adapters. */
static const el_lora_rows *chunk_lora(el_forward *f, int32_t c0, int32_t n) {
    const el_lora_rows *lr = f->lora_rows;
    if (!lr)
        return NULL;
    int32_t n_groups = 0, k = 0;
    for (int32_t g = 0; g < lr->n_groups; g++) {
        const el_lora_group *gr = &lr->groups[g];
        int32_t first = k;
        for (int32_t i = 0; i < gr->n_rows; i++)
            if (gr->rows[i] >= c0 && gr->rows[i] < c0 + n)
                f->chunk_rows[k++] = gr->rows[i] - c0;
        if (k > first)
            f->chunk_groups[n_groups++] = (el_lora_group){
                .rows = f->chunk_rows + first, .n_rows = k - first, .terms = gr->terms,
                .n_terms = gr->n_terms};
    }
    f->chunk_lora = (el_lora_rows){.groups = f->chunk_groups, .n_groups = n_groups};
    return n_groups > 0 ? &f->chunk_lora : NULL;
}

/* n floats of src into a K or V row of the cache, converted to its element type: fp16 by the
 * kernel table's row conversion (F16C or NEON where there is one; round to nearest even either
 * way, el_fp32_to_fp16's bytes). */
static void store_kv_row(const el_kv_cache *kv, void *dst, const float *src, int n) {
    if (kv->type == EL_TYPE_F16)
        el_kernels_get()->quantize[EL_TYPE_F16](src, dst, n);
    else
        memcpy(dst, src, (size_t)n * sizeof *src);
}

/* First half of block il for the chunk [c0, c0 + n): RMSNorm -> K, V (and Q, if with_q: the
 * pass is one chunk, whose second half follows at once) -> RoPE on K -> the rows' cells. Leaves
 * the normalized input in xn. */
static void block_kv(el_forward *f, const el_rows *rows, int il, int32_t c0, int32_t n,
                     bool with_q) {
    const el_hparams *hp = &f->model->hp;
    const el_layer *l = &f->model->layers[il];
    int n_embd = hp->n_embd;
    int k_dim = hp->n_head_kv * hp->head_dim_k, v_dim = hp->n_head_kv * hp->head_dim_v;
    int64_t q_dim = (int64_t)hp->n_head * hp->head_dim_k;
    el_kv_cache *kv = f->kv;
    const el_lora_rows *lr = chunk_lora(f, c0, n);

    rmsnorm_rows(f->xn, f->x + (size_t)c0 * n_embd, l->attn_norm, n, n_embd, hp->rms_eps);
    const el_linear which[] = {EL_LINEAR_K, EL_LINEAR_V, EL_LINEAR_Q};
    float *const y[] = {f->k, f->v, f->q};
    const int64_t ldy[] = {k_dim, v_dim, q_dim};
    linears(f, il, with_q ? 3 : 2, which, f->xn, n_embd, y, ldy, c0, n, lr);
    if (l->attn_k_norm)
        rmsnorm_heads(f->k, l->attn_k_norm, n, hp->n_head_kv, hp->head_dim_k, hp->rms_eps);
    for (int32_t i = 0; i < n; i++) {
        int32_t r = c0 + i;
        float *k = f->k + (size_t)i * k_dim;
        rope_apply(f, il, k, hp->n_head_kv, rope_cos_of(f, il, r), rope_sin_of(f, il, r));
        const float *v = f->v + (size_t)i * v_dim;
        for (int h = 0; h < hp->n_head_kv; h++) {
            store_kv_row(kv, el_kv_cell_k(kv, il, h, rows->cell[r]),
                         k + (size_t)h * hp->head_dim_k, hp->head_dim_k);
            store_kv_row(kv, el_kv_cell_v(kv, il, h, rows->cell[r]),
                         v + (size_t)h * hp->head_dim_v, hp->head_dim_v);
        }
    }
}

/* Second half of block il for the chunk [c0, c0 + n), once every row's K and V are in the
 * cache: Q (from xn, unless block_kv made it) -> RoPE -> attention -> output projection ->
 * residual -> RMSNorm -> SwiGLU (or GeGLU) FFN -> residual; with the Q norm and the post norms
 * where the model has them. */
static void block_rest(el_forward *f, int il, int32_t c0, int32_t n, bool q_ready) {
    const el_hparams *hp = &f->model->hp;
    const el_layer *l = &f->model->layers[il];
    int n_embd = hp->n_embd;
    int64_t q_dim = (int64_t)hp->n_head * hp->head_dim_k;
    int64_t o_dim = (int64_t)hp->n_head * hp->head_dim_v;
    float *x = f->x + (size_t)c0 * n_embd;
    const el_lora_rows *lr = chunk_lora(f, c0, n);

    if (!q_ready) {
        rmsnorm_rows(f->xn, x, l->attn_norm, n, n_embd, hp->rms_eps);
        linear(f, il, EL_LINEAR_Q, f->xn, n_embd, f->q, q_dim, c0, n, lr);
    }
    if (l->attn_q_norm)
        rmsnorm_heads(f->q, l->attn_q_norm, n, hp->n_head, hp->head_dim_k, hp->rms_eps);
    for (int32_t i = 0; i < n; i++)
        rope_apply(f, il, f->q + (size_t)i * q_dim, hp->n_head, rope_cos_of(f, il, c0 + i),
                   rope_sin_of(f, il, c0 + i));
    if (hp->q_scale != 1.0f)
        scale_rows(f->q, hp->q_scale, (size_t)n * q_dim);
    attention_job job = {.f = f, .n_rows = n, .il = il};
    el_threadpool_run(f->tp, attention_task, &job);
    linear(f, il, EL_LINEAR_O, f->att_out, o_dim, f->proj, n_embd, c0, n, lr);
    if (l->attn_post_norm)
        rmsnorm_rows(f->proj, f->proj, l->attn_post_norm, n, n_embd, hp->rms_eps);
    add_rows(x, f->proj, (size_t)n * n_embd);

    rmsnorm_rows(f->xn, x, l->ffn_norm, n, n_embd, hp->rms_eps);
    const el_linear ffn_in[] = {EL_LINEAR_GATE, EL_LINEAR_UP};
    float *const ffn_y[] = {f->gate, f->up};
    const int64_t ffn_ldy[] = {hp->n_ff, hp->n_ff};
    linears(f, il, 2, ffn_in, f->xn, n_embd, ffn_y, ffn_ldy, c0, n, lr);
    ffn_act_job aj = {.gate = f->gate, .up = f->up, .n = (size_t)n * hp->n_ff, .act = hp->ffn_act};
    el_threadpool_run(f->tp, ffn_act_task, &aj);
    linear(f, il, EL_LINEAR_DOWN, f->gate, hp->n_ff, f->proj, n_embd, c0, n, lr);
    if (l->ffn_post_norm)
        rmsnorm_rows(f->proj, f->proj, l->ffn_post_norm, n, n_embd, hp->rms_eps);
    add_rows(x, f->proj, (size_t)n * n_embd);
}

/* x = c tanh(x / c): logits bounded by c (final_logit_softcapping). */
static void softcap(float *x, size_t n, float c) {
    for (size_t i = 0; i < n; i++)
        x[i] = c * tanhf(x[i] / c);
}

/* The final norm and the vocabulary projection of the rows whose logits are wanted, n_ubatch at
 * a time through xn. */
static void output_logits(el_forward *f, const el_rows *rows) {
    const el_model *m = f->model;
    const el_hparams *hp = &m->hp;
    for (int32_t j0 = 0; j0 < rows->n_out; j0 += f->n_ubatch) {
        int32_t n = rows->n_out - j0 < f->n_ubatch ? rows->n_out - j0 : f->n_ubatch;
        for (int32_t j = 0; j < n; j++)
            rmsnorm(f->xn + (size_t)j * hp->n_embd,
                    f->x + (size_t)rows->out_rows[j0 + j] * hp->n_embd, m->output_norm,
                    hp->n_embd, hp->rms_eps);
        if (f->observe)
            f->observe(f->observe_user, -1, EL_LINEAR_Q, f->xn, hp->n_embd, n);
        el_matmul(f->tp, &m->output, f->xn, hp->n_embd, n, f->logits + (size_t)j0 * hp->n_vocab,
                  hp->n_vocab, f->mm_scratch);
    }
    if (hp->final_logit_softcap > 0.0f)
        softcap(f->logits, (size_t)rows->n_out * hp->n_vocab, hp->final_logit_softcap);
}

void el_forward_run(el_forward *f, const el_rows *rows) {
    const el_hparams *hp = &f->model->hp;
    int32_t n = rows->n, ub = f->n_ubatch;
    bool one_chunk = n <= ub;
    f->lora_rows = rows->lora && rows->lora->n_groups > 0 ? rows->lora : NULL;
    f->row_rate = rows->rate;
    embed_rows(f, rows);
    rope_tables(f, rows);
    mark_rows(f, rows);
    if (one_chunk)
        build_visibility(f, rows, 0, n);
    for (int il = 0; il < hp->n_layer; il++) {
        for (int32_t c0 = 0; c0 < n; c0 += ub)
            block_kv(f, rows, il, c0, n - c0 < ub ? n - c0 : ub, one_chunk);
        for (int32_t c0 = 0; c0 < n; c0 += ub) {
            int32_t cn = n - c0 < ub ? n - c0 : ub;
            /* the visibility of a chunk is rebuilt for each layer: kept for every row it would
             * take n_batch x n_ctx cells of scratch, and it costs little next to the matmuls */
            if (!one_chunk)
                build_visibility(f, rows, c0, cn);
            block_rest(f, il, c0, cn, one_chunk);
        }
    }
    output_logits(f, rows);
    for (int32_t r = 0; r < n; r++)
        f->cell_row[rows->cell[r]] = -1;
}
