/* forward.c - the llama/qwen2 forward pass over a batch of rows.
 *
 * Per block: RMSNorm -> Q, K, V (one matmul each over all rows, + bias) -> RoPE at each row's
 * position -> K, V into the rows' cells -> attention of each (row, head) over the cells visible to
 * the row -> output projection -> residual -> RMSNorm -> SwiGLU FFN -> residual. Then the final
 * norm and the vocabulary projection, only for the rows whose logits are wanted.
 *
 * Scalar arithmetic is float32 and in the order of llama2.c's run.c (norm, rope, softmax,
 * SwiGLU), so a float model reproduces its greedy output; only attention's q . k sums in 8
 * partial sums (float rounding apart, the same). */
#include "model/forward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

el_status el_forward_init(el_forward *f, const el_model *m, el_kv_cache *kv, el_threadpool *tp,
                          int32_t n_batch) {
    memset(f, 0, sizeof *f);
    f->model = m;
    f->kv = kv;
    f->tp = tp;
    f->n_batch = n_batch;
    const el_hparams *hp = &m->hp;
    size_t nb = (size_t)n_batch, n_ctx = (size_t)kv->n_ctx;
    size_t q_dim = (size_t)hp->n_head * hp->head_dim_k;
    size_t o_dim = (size_t)hp->n_head * hp->head_dim_v;
    size_t nth = (size_t)el_threadpool_size(tp);

    size_t mm = el_matmul_scratch_size(&m->output, n_batch);
    for (int il = 0; il < hp->n_layer; il++)
        for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++)
            mm = max_sz(mm, el_matmul_scratch_size(el_layer_weight(&m->layers[il], w), n_batch));

    f->x = malloc(nb * hp->n_embd * sizeof(float));
    f->xn = malloc(nb * hp->n_embd * sizeof(float));
    f->q = malloc(nb * q_dim * sizeof(float));
    f->k = malloc(nb * kv->k_dim * sizeof(float));
    f->v = malloc(nb * kv->v_dim * sizeof(float));
    f->att_out = malloc(nb * o_dim * sizeof(float));
    f->proj = malloc(nb * hp->n_embd * sizeof(float));
    f->gate = malloc(nb * hp->n_ff * sizeof(float));
    f->up = malloc(nb * hp->n_ff * sizeof(float));
    f->rope_cos = malloc(nb * (hp->n_rot / 2 + 1) * sizeof(float));
    f->rope_sin = malloc(nb * (hp->n_rot / 2 + 1) * sizeof(float));
    f->scores = malloc(nth * n_ctx * sizeof(float));
    f->vis = malloc(nb * n_ctx * sizeof(int32_t));
    f->n_vis = malloc(nb * sizeof(int32_t));
    f->cell_row = malloc(n_ctx * sizeof(int32_t));
    f->anc = malloc(nb * nb);
    f->mm_scratch = malloc(mm ? mm : 1);
    if (!f->x || !f->xn || !f->q || !f->k || !f->v || !f->att_out || !f->proj || !f->gate ||
        !f->up || !f->rope_cos || !f->rope_sin || !f->scores || !f->vis || !f->n_vis ||
        !f->cell_row || !f->anc || !f->mm_scratch) {
        el_forward_free(f);
        return el_error(EL_ERR_NOMEM, "context: out of memory for the scratch of %d rows",
                        n_batch);
    }
    for (size_t i = 0; i < n_ctx; i++)
        f->cell_row[i] = -1;
    return EL_OK;
}

void el_forward_free(el_forward *f) {
    float *bufs[] = {f->x, f->xn, f->q, f->k, f->v, f->att_out, f->proj, f->gate, f->up,
                     f->rope_cos, f->rope_sin, f->scores, f->logits};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    free(f->vis);
    free(f->n_vis);
    free(f->cell_row);
    free(f->anc);
    free(f->mm_scratch);
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

/* o = w * x / rms(x), in run.c's order. */
static void rmsnorm(float *o, const float *x, const float *w, int n, float eps) {
    float ss = 0.0f;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    ss /= (float)n;
    ss += eps;
    ss = 1.0f / sqrtf(ss);
    for (int i = 0; i < n; i++)
        o[i] = w[i] * (ss * x[i]);
}

static void rmsnorm_rows(float *o, const float *x, const float *w, int32_t n_rows, int n,
                         float eps) {
    for (int32_t r = 0; r < n_rows; r++)
        rmsnorm(o + (size_t)r * n, x + (size_t)r * n, w, n, eps);
}

static void add_rows(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++)
        x[i] += y[i];
}

/* cos and sin of every rotated pair's angle for each row's position. theta_i = pos * scale *
 * base^(-2i/n_rot) / factor_i (factor_i from rope_freqs, llama3-style). */
static void rope_tables(el_forward *f, const el_rows *rows) {
    const el_model *m = f->model;
    const el_hparams *hp = &m->hp;
    int half = hp->n_rot / 2;
    for (int32_t r = 0; r < rows->n; r++) {
        float pos = (float)rows->pos[r] * hp->rope_freq_scale;
        for (int i = 0; i < half; i++) {
            float freq = 1.0f / powf(hp->rope_freq_base, (float)(2 * i) / (float)hp->n_rot);
            if (m->rope_freqs)
                freq /= m->rope_freqs[i];
            float val = pos * freq;
            f->rope_cos[(size_t)r * half + i] = cosf(val);
            f->rope_sin[(size_t)r * half + i] = sinf(val);
        }
    }
}

/* Rotates the first n_rot dims of each of n_heads heads (hd floats apart) of one row. */
static void rope_apply(float *vec, int n_heads, int hd, int n_rot, el_rope_style style,
                       const float *cs, const float *sn) {
    int half = n_rot / 2;
    for (int h = 0; h < n_heads; h++) {
        float *p = vec + (size_t)h * hd;
        for (int i = 0; i < half; i++) {
            float *a = style == EL_ROPE_NORM ? &p[2 * i] : &p[i];
            float *b = style == EL_ROPE_NORM ? &p[2 * i + 1] : &p[i + half];
            float v0 = *a, v1 = *b;
            *a = v0 * cs[i] - v1 * sn[i];
            *b = v0 * sn[i] + v1 * cs[i];
        }
    }
}

/* ------------------------------------------------------------- linear layers */

/* y[r] = W x[r] (+ bias) for n rows of one linear layer of block il, then, for each group of rows
 * that share an adapter binding, y_g += s * B (A x_g) for every bound adapter that changes this
 * layer (kernels/lora.h). The base product is the same whatever is bound. */
static void linear(el_forward *f, int il, el_linear which, const float *x, int64_t ldx, float *y,
                   int64_t ldy, int32_t n) {
    const el_layer *l = &f->model->layers[il];
    const el_weight *w = el_layer_weight(l, which);
    el_matmul(f->tp, w, x, ldx, n, y, ldy, f->mm_scratch);
    const float *bias = which == EL_LINEAR_Q ? l->bq
                        : which == EL_LINEAR_K ? l->bk
                        : which == EL_LINEAR_V ? l->bv
                                               : NULL;
    if (bias)
        for (int32_t r = 0; r < n; r++)
            add_rows(y + (size_t)r * ldy, bias, (size_t)w->k_out);
    if (f->lora_rows)
        el_lora_apply(f->tp, f->lora_rows, il * (EL_LINEAR_DOWN + 1) + (int32_t)which, x, ldx,
                      w->n_in, y, ldy, &f->lora);
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

/* For each row, the cells it attends to in position order: visible to its sequence, position not
 * after its own, and in a tree batch, among this batch's cells only its ancestors and itself.
 * Computed once per forward; every layer and head uses it. */
static void build_visibility(el_forward *f, const el_rows *rows) {
    const el_kv_cache *kv = f->kv;
    size_t nb = (size_t)f->n_batch;
    for (int32_t r = 0; r < rows->n; r++)
        f->cell_row[rows->cell[r]] = r;
    if (rows->parent) {
        for (int32_t r = 0; r < rows->n; r++) {
            uint8_t *a = f->anc + (size_t)r * nb;
            int32_t p = rows->parent[r];
            if (p >= 0)
                memcpy(a, f->anc + (size_t)p * nb, (size_t)p + 1);
            memset(a + (p >= 0 ? p + 1 : 0), 0, (size_t)(r - (p >= 0 ? p + 1 : 0)));
            a[r] = 1;
        }
    }
    for (int32_t r = 0; r < rows->n; r++) {
        int32_t *vis = f->vis + (size_t)r * kv->n_ctx, n = 0;
        for (int32_t c = 0; c < kv->n_ctx; c++) {
            if (!el_kv_cell_has_seq(kv, c, rows->seq_id[r]) || kv->pos[c] > rows->pos[r])
                continue;
            int32_t j = f->cell_row[c];
            if (rows->parent && j >= 0 && (j > r || !f->anc[(size_t)r * nb + j]))
                continue;
            vis[n++] = c;
        }
        f->n_vis[r] = n;
        bool ordered = true;
        for (int32_t i = 1; i < n && ordered; i++) ordered = kv->pos[vis[i - 1]] < kv->pos[vis[i]];
        if (!ordered) qsort_r(vis, (size_t)n, sizeof *vis, cmp_cell_pos, (void *)kv);
    }
}

typedef struct attention_job {
    el_forward *f;
    const el_rows *rows;
    int il;
} attention_job;

/* q . k over n floats with 8 partial sums: one running sum would make each addition wait for
 * the one before (a decode step spends most of its non-matmul time here), and independent
 * sums let the compiler use vector registers. */
static float dot_f32(const float *q, const float *k, int n) {
    float part[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int u = 0; u < 8; u++)
            part[u] += q[i + u] * k[i + u];
    float dot = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
    for (; i < n; i++)
        dot += q[i] * k[i];
    return dot;
}

/* out += a * v over n floats, 8 at a time (restrict: out is not v), which the compiler turns
 * into vector operations, as it does not a plain loop of unknown length at -O2. */
static void axpy(float *restrict out, float a, const float *restrict v, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int u = 0; u < 8; u++)
            out[i + u] += a * v[i + u];
    for (; i < n; i++)
        out[i] += a * v[i];
}

/* One (row, head) per unit, split round-robin across the pool. */
static void attention_task(void *arg, int ith, int nth) {
    const attention_job *job = arg;
    el_forward *f = job->f;
    const el_hparams *hp = &f->model->hp;
    const el_kv_cache *kv = f->kv;
    int hd_k = hp->head_dim_k, hd_v = hp->head_dim_v;
    int group = hp->n_head / hp->n_head_kv;
    float *s = f->scores + (size_t)ith * kv->n_ctx;
    const float scale = sqrtf((float)hd_k);
    int32_t units = job->rows->n * hp->n_head;
    for (int32_t u = ith; u < units; u += nth) {
        int32_t r = u / hp->n_head, h = u % hp->n_head, kvh = h / group;
        const float *q = f->q + ((size_t)r * hp->n_head + h) * hd_k;
        const int32_t *vis = f->vis + (size_t)r * kv->n_ctx;
        int32_t nv = f->n_vis[r];
        float max = -INFINITY;
        for (int32_t j = 0; j < nv; j++) {
            const float *k = el_kv_cell_k(kv, job->il, vis[j]) + (size_t)kvh * hd_k;
            s[j] = dot_f32(q, k, hd_k) / scale;
            if (s[j] > max)
                max = s[j];
        }
        float sum = 0.0f;
        for (int32_t j = 0; j < nv; j++) {
            s[j] = expf(s[j] - max);
            sum += s[j];
        }
        for (int32_t j = 0; j < nv; j++)
            s[j] /= sum;
        float *out = f->att_out + ((size_t)r * hp->n_head + h) * hd_v;
        memset(out, 0, (size_t)hd_v * sizeof *out);
        for (int32_t j = 0; j < nv; j++) {
            const float *v = el_kv_cell_v(kv, job->il, vis[j]) + (size_t)kvh * hd_v;
            axpy(out, s[j], v, hd_v);
        }
    }
}

/* ------------------------------------------------------------- feed-forward */

typedef struct swiglu_job {
    float *gate;
    const float *up;
    size_t n;
} swiglu_job;

/* gate = silu(gate) * up, split across the pool: an expf per element is tens of microseconds
 * per layer, which the other threads would otherwise spend waiting. */
static void swiglu_task(void *arg, int ith, int nth) {
    const swiglu_job *j = arg;
    size_t lo = j->n * (size_t)ith / (size_t)nth, hi = j->n * (size_t)(ith + 1) / (size_t)nth;
    for (size_t i = lo; i < hi; i++) {
        float g = j->gate[i];
        g *= 1.0f / (1.0f + expf(-g)); /* silu */
        j->gate[i] = g * j->up[i];
    }
}

/* ------------------------------------------------------------- the pass */

static void embed_rows(el_forward *f, const el_rows *rows) {
    const el_model *m = f->model;
    int n_embd = m->hp.n_embd;
    const el_type_traits *tr = el_type_get(m->tok_embd.type);
    for (int32_t r = 0; r < rows->n; r++) {
        float *x = f->x + (size_t)r * n_embd;
        if (rows->token && rows->token[r] >= 0) {
            const uint8_t *row = (const uint8_t *)m->tok_embd.data +
                                 (size_t)rows->token[r] * m->tok_embd.row_bytes;
            tr->to_float(row, x, n_embd);
        } else {
            memcpy(x, rows->embd + (size_t)r * n_embd, (size_t)n_embd * sizeof *x);
        }
    }
}

static void block(el_forward *f, const el_rows *rows, int il) {
    const el_hparams *hp = &f->model->hp;
    const el_layer *l = &f->model->layers[il];
    int32_t n = rows->n;
    int n_embd = hp->n_embd, half = hp->n_rot / 2;
    int64_t q_dim = (int64_t)hp->n_head * hp->head_dim_k;
    int64_t o_dim = (int64_t)hp->n_head * hp->head_dim_v;
    el_kv_cache *kv = f->kv;

    rmsnorm_rows(f->xn, f->x, l->attn_norm, n, n_embd, hp->rms_eps);
    linear(f, il, EL_LINEAR_Q, f->xn, n_embd, f->q, q_dim, n);
    linear(f, il, EL_LINEAR_K, f->xn, n_embd, f->k, kv->k_dim, n);
    linear(f, il, EL_LINEAR_V, f->xn, n_embd, f->v, kv->v_dim, n);
    for (int32_t r = 0; r < n; r++) {
        const float *cs = f->rope_cos + (size_t)r * half, *sn = f->rope_sin + (size_t)r * half;
        float *k = f->k + (size_t)r * kv->k_dim;
        rope_apply(f->q + (size_t)r * q_dim, hp->n_head, hp->head_dim_k, hp->n_rot, hp->rope_style,
                   cs, sn);
        rope_apply(k, hp->n_head_kv, hp->head_dim_k, hp->n_rot, hp->rope_style, cs, sn);
        memcpy(el_kv_cell_k(kv, il, rows->cell[r]), k, (size_t)kv->k_dim * sizeof(float));
        memcpy(el_kv_cell_v(kv, il, rows->cell[r]), f->v + (size_t)r * kv->v_dim,
               (size_t)kv->v_dim * sizeof(float));
    }
    attention_job job = {.f = f, .rows = rows, .il = il};
    el_threadpool_run(f->tp, attention_task, &job);
    linear(f, il, EL_LINEAR_O, f->att_out, o_dim, f->proj, n_embd, n);
    add_rows(f->x, f->proj, (size_t)n * n_embd);

    rmsnorm_rows(f->xn, f->x, l->ffn_norm, n, n_embd, hp->rms_eps);
    linear(f, il, EL_LINEAR_GATE, f->xn, n_embd, f->gate, hp->n_ff, n);
    linear(f, il, EL_LINEAR_UP, f->xn, n_embd, f->up, hp->n_ff, n);
    swiglu_job sj = {.gate = f->gate, .up = f->up, .n = (size_t)n * hp->n_ff};
    el_threadpool_run(f->tp, swiglu_task, &sj);
    linear(f, il, EL_LINEAR_DOWN, f->gate, hp->n_ff, f->proj, n_embd, n);
    add_rows(f->x, f->proj, (size_t)n * n_embd);
}

void el_forward_run(el_forward *f, const el_rows *rows) {
    const el_model *m = f->model;
    const el_hparams *hp = &m->hp;
    f->lora_rows = rows->lora && rows->lora->n_groups > 0 ? rows->lora : NULL;
    embed_rows(f, rows);
    rope_tables(f, rows);
    build_visibility(f, rows);
    for (int il = 0; il < hp->n_layer; il++)
        block(f, rows, il);
    for (int32_t j = 0; j < rows->n_out; j++)
        rmsnorm(f->xn + (size_t)j * hp->n_embd, f->x + (size_t)rows->out_rows[j] * hp->n_embd,
                m->output_norm, hp->n_embd, hp->rms_eps);
    if (rows->n_out > 0)
        el_matmul(f->tp, &m->output, f->xn, hp->n_embd, rows->n_out, f->logits, hp->n_vocab,
                  f->mm_scratch);
    for (int32_t r = 0; r < rows->n; r++)
        f->cell_row[rows->cell[r]] = -1;
}
