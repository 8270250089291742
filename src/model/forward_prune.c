/* forward_prune.c - the kept-part steps of a compressed model's forward pass (forward_prune.h).
 *
 * The layout (docs/formats.md "UniQL"): every prunable matrix in pieces at the table's
 * boundaries; Q/K rows dimension-major, row (p * n_heads + h) * 2 + c is component c of stored
 * pair p of head h; V rows d * n_head_kv + h; O's columns d * n_head + h; gate, up and down in
 * the sorted order. */
#include "model/forward_prune.h"

#include <string.h>

static int32_t row_rate(const el_forward *f, int32_t r) { return f->row_rate ? f->row_rate[r] : 0; }

el_prune_kept el_fwd_row_kept(const el_forward *f, int il, int32_t r) {
    return el_prune_kept_at(f->model->prune, f->model->hp.n_layer, row_rate(f, r), il);
}

el_prune_kept el_fwd_chunk_kept(const el_forward *f, int il, int32_t c0, int32_t n) {
    int32_t lowest = row_rate(f, c0);
    for (int32_t i = 1; i < n; i++)
        if (row_rate(f, c0 + i) < lowest)
            lowest = row_rate(f, c0 + i);
    return el_prune_kept_at(f->model->prune, f->model->hp.n_layer, lowest, il);
}

static const el_prune_pieces *pieces_of(const el_forward *f, int il, el_linear which) {
    return &f->model->prune->pieces[el_linear_slot(il, which)];
}

/* The rows (columns for down and O) of a linear that kept sizes k keep. */
static int64_t kept_count(const el_forward *f, int il, el_linear which, el_prune_kept k) {
    const el_hparams *hp = &f->model->hp;
    switch (which) {
    case EL_LINEAR_Q: return (int64_t)k.qk * hp->n_head;
    case EL_LINEAR_K: return (int64_t)k.qk * hp->n_head_kv;
    case EL_LINEAR_V: return (int64_t)k.vo * hp->n_head_kv;
    case EL_LINEAR_O: return (int64_t)k.vo * hp->n_head;
    default: return k.ff;
    }
}

void el_fwd_row_pieces(el_forward *f, int il, int count, const el_linear which[], const float *x,
                       int64_t ldx, float *const y[], const int64_t ldy[], int32_t n,
                       el_prune_kept k) {
    const el_weight *w[EL_MATMUL_MANY];
    float *yj[EL_MATMUL_MANY];
    int64_t ldj[EL_MATMUL_MANY];
    int m = 0;
    for (int i = 0; i < count; i++) {
        const el_prune_pieces *pc = pieces_of(f, il, which[i]);
        for (int32_t j = 0; j < pc->n && pc->b[j] < kept_count(f, il, which[i], k); j++) {
            if (m == EL_MATMUL_MANY) {
                el_matmul_many(f->tp, m, w, x, ldx, n, yj, ldj, f->mm_scratch);
                m = 0;
            }
            w[m] = &pc->w[j];
            yj[m] = y[i] + pc->b[j];
            ldj[m++] = ldy[i];
        }
    }
    if (m > 0)
        el_matmul_many(f->tp, m, w, x, ldx, n, yj, ldj, f->mm_scratch);
}

/* The sorted layout's dim of component c of stored pair p of a head. */
static int pair_dim(const el_hparams *hp, int p, int c) {
    return hp->rope_style == EL_ROPE_NEOX ? p + c * (hp->n_rot / 2) : 2 * p + c;
}

void el_fwd_pruned_unpack(el_forward *f, int il, el_linear which, float *y, int64_t ldy,
                          int32_t c0, int32_t n) {
    const el_hparams *hp = &f->model->hp;
    if (which == EL_LINEAR_O || which == EL_LINEAR_DOWN)
        return; /* outputs n_embd: nothing dropped */
    if (which == EL_LINEAR_GATE || which == EL_LINEAR_UP) {
        for (int32_t i = 0; i < n; i++) {
            int32_t ff = el_fwd_row_kept(f, il, c0 + i).ff;
            memset(y + (size_t)i * ldy + ff, 0, (size_t)(hp->n_ff - ff) * sizeof *y);
        }
        return;
    }
    bool v = which == EL_LINEAR_V;
    int nh = which == EL_LINEAR_Q ? hp->n_head : hp->n_head_kv;
    int hd = v ? hp->head_dim_v : hp->head_dim_k;
    float *tmp = f->prune_row;
    for (int32_t i = 0; i < n; i++) {
        float *row = y + (size_t)i * ldy;
        el_prune_kept rk = el_fwd_row_kept(f, il, c0 + i);
        memset(tmp, 0, (size_t)nh * hd * sizeof *tmp);
        for (int h = 0; h < nh; h++) {
            float *head = tmp + (size_t)h * hd;
            if (v)
                for (int d = 0; d < rk.vo; d++)
                    head[d] = row[(size_t)d * nh + h];
            else
                for (int p = 0; p < rk.qk / 2; p++)
                    for (int c = 0; c < 2; c++)
                        head[pair_dim(hp, p, c)] = row[((size_t)p * nh + h) * 2 + c];
        }
        memcpy(row, tmp, (size_t)nh * hd * sizeof *tmp);
    }
}

void el_fwd_pruned_mask(const el_forward *f, int il, el_linear which, float *y, int64_t ldy,
                        int32_t c0, int32_t n) {
    const el_hparams *hp = &f->model->hp;
    if (which == EL_LINEAR_O || which == EL_LINEAR_DOWN)
        return;
    for (int32_t i = 0; i < n; i++) {
        float *row = y + (size_t)i * ldy;
        el_prune_kept rk = el_fwd_row_kept(f, il, c0 + i);
        if (which == EL_LINEAR_GATE || which == EL_LINEAR_UP) {
            memset(row + rk.ff, 0, (size_t)(hp->n_ff - rk.ff) * sizeof *row);
            continue;
        }
        bool v = which == EL_LINEAR_V;
        int nh = which == EL_LINEAR_Q ? hp->n_head : hp->n_head_kv;
        int hd = v ? hp->head_dim_v : hp->head_dim_k, half = hd / 2;
        for (int h = 0; h < nh; h++) {
            float *head = row + (size_t)h * hd;
            if (v || hp->rope_style == EL_ROPE_NORM) {
                int kept = v ? rk.vo : rk.qk;
                memset(head + kept, 0, (size_t)(hd - kept) * sizeof *head);
            } else {
                memset(head + rk.qk / 2, 0, (size_t)(half - rk.qk / 2) * sizeof *head);
                memset(head + half + rk.qk / 2, 0, (size_t)(half - rk.qk / 2) * sizeof *head);
            }
        }
    }
}

void el_fwd_column_pieces(el_forward *f, int il, el_linear which, const float *x, int64_t ldx,
                          float *y, int64_t ldy, int32_t n, el_prune_kept k) {
    const el_hparams *hp = &f->model->hp;
    bool down = which == EL_LINEAR_DOWN;
    const el_prune_pieces *pc = pieces_of(f, il, which);
    int64_t kept = kept_count(f, il, which, k);
    if (!down) {
        /* O's columns are dimension-major: the heads' kept dims interleaved */
        for (int32_t i = 0; i < n; i++) {
            const float *src = x + (size_t)i * ldx;
            float *dst = f->prune_packed + (size_t)i * kept;
            for (int d = 0; d < k.vo; d++)
                for (int h = 0; h < hp->n_head; h++)
                    dst[(size_t)d * hp->n_head + h] = src[(size_t)h * hp->head_dim_v + d];
        }
        x = f->prune_packed;
        ldx = kept;
    }
    /* piece 0 into y, the others into prune_sum (as many as it holds at a time), then added */
    size_t e = (size_t)hp->n_embd, room = 2 * (size_t)f->n_ubatch / (size_t)n;
    int32_t np = 0;
    while (np < pc->n && pc->b[np] < kept) np++;
    for (int32_t j0 = 0; j0 < np;) {
        const el_weight *w[EL_MATMUL_MANY];
        float *out[EL_MATMUL_MANY];
        int64_t ldo[EL_MATMUL_MANY];
        int m = 0;
        for (; j0 + m < np && m < EL_MATMUL_MANY && (j0 + m == 0 || (size_t)m < room); m++) {
            int32_t j = j0 + m;
            w[m] = &pc->w[j];
            out[m] = j == 0 ? y : f->prune_sum + (size_t)(j0 == 0 ? m - 1 : m) * n * e;
            ldo[m] = j == 0 ? ldy : (int64_t)e;
        }
        el_matmul_columns(f->tp, m, w, x, ldx, pc->b + j0, n, out, ldo, f->mm_scratch);
        for (int i = 0; i < m; i++)
            if (j0 + i > 0)
                for (int32_t r = 0; r < n; r++)
                    for (size_t o = 0; o < e; o++)
                        y[(size_t)r * ldy + o] += out[i][(size_t)r * e + o];
        j0 += m;
    }
}
