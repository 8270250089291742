/* matmul.c - y = x W^T over a view of a stored weight, split across a thread pool.
 *
 * The activations are quantized once into scratch (in the weight's vec_dot_type), then threads
 * take chunks of output rows: one each to start, the rest from a shared counter, so a thread
 * that was descheduled (cores are shared) delays only its own chunk. A decode step's first
 * chunks are long and the rest short (see GEMV_FIRST_EIGHTHS). Within a chunk, tiles of
 * TILE_OUT weight rows are dotted with a block of ROW_BLOCK activation rows, so a tile is read
 * from memory once per block of activations and stays in cache while the block streams past.
 * Where the ISA has a tile kernel for the type (dispatch.h), full tiles of EL_TILE weight rows x
 * EL_TILE activation rows are computed by it, the edges by vec_dot. The activation rows outside
 * full tiles (all of a decode step's) go through the ISA's gemv for the type over the whole
 * chunk, which reads the rows as sequential streams; a gemv output depends only on its row.
 * Which outputs are computed which way depends only on the shapes (chunks start at multiples of
 * TILE_OUT), so results do not depend on the number of threads.
 * With several activation rows and a gemm kernel for the type (gemm.h), chunks are made of
 * panels of EL_GEMM_PANEL weight rows instead, each unpacked once into the thread's panel buffer
 * and run against every activation row; the per-group activation scales (and sums, for kernels
 * taking unsigned weights) the gemm kernels need are computed as the rows are quantized. */
#include "kernels/matmul.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "kernels/dispatch.h"
#include "kernels/edge.h"

enum {
    TILE_OUT = EL_TILE,   /* weight rows per tile */
    ROW_BLOCK = 64,       /* activation rows per block */
    CHUNKS_PER_THREAD = 4, /* enough to even out uneven progress, few enough to be cheap */
    /* From this many activation rows on, unpacking a panel once pays. Fewer rows of a type with
     * a gemv go through it one row after another over blocks of GEMV_REUSE_BYTES of weights,
     * so memory is read once and the later rows read the block from L2 (at 2 and 3 rows that
     * beat unpacking, at 4 it no longer did: docs/kernels.md, "Two or three rows of a type with
     * a gemv"). Types without a gemv use the gemm from 2 rows. */
    GEMM_MIN_ROWS = 4,
    GEMM_MIN_ROWS_NO_GEMV = 2,
    GEMV_REUSE_BYTES = 256 << 10,
    GEMM_MAX_K = 1 << 16,  /* int32 sums of unsigned int8 weights (< 255 * 127 * k) stay exact */
    /* When every row goes through gemv (a decode step) on more than one thread: a pool job
     * ends when its slowest thread does, so the last chunks should be short, while each gemv
     * call prepares the activations once and starts new streams, which the prefetchers take a
     * while to follow (short chunks throughout read slower). So the first chunk of each thread
     * covers its share of GEMV_FIRST_EIGHTHS eighths of the rows and the rest go in chunks of
     * GEMV_CHUNK_BYTES of weights (128 KB: a few microseconds of memory time per core), the
     * split that decoded fastest (docs/kernels.md, "How a product is split across threads").
     * A descheduled thread can now hold up a job for longer (its first chunk is long), as a
     * static split would. */
    GEMV_FIRST_EIGHTHS = 7,
    GEMV_CHUNK_BYTES = 128 << 10
};

el_weight el_weight_view(el_type type, const void *data, int64_t n_in, int64_t n_out) {
    return (el_weight){.type = type, .data = data, .n_in = n_in, .n_out = n_out,
                       .row_bytes = el_row_size(type, n_in), .k_in = n_in, .k_out = n_out};
}

void el_weight_floats(const el_weight *w, float *out) {
    const el_type_kernels *kernels = el_type_kernels_get(w->type);
    for (int64_t r = 0; r < w->n_out; r++)
        kernels->to_float((const char *)w->data + (size_t)r * w->row_bytes, out + r * w->n_in,
                          w->n_in);
}

size_t el_matmul_scratch_size(const el_weight *w, int64_t n_rows) {
    el_type vt = el_type_kernels_get(w->type)->vec_dot_type;
    if (vt == EL_TYPE_F32) return 0; /* float activations are used in place */
    return (size_t)n_rows * el_row_size(vt, w->k_in);
}

typedef struct matmul_job {
    const el_weight *w;
    el_vec_dot_fn vec_dot;
    el_tile_fn tile;      /* NULL: vec_dot only */
    el_gemm_fn gemm;      /* NULL: tiles and vec_dot */
    el_gemm_aux *aux;     /* gemm: n_rows x el_gemm_groups(w) activation scales and sums */
    bool gemm_signed;     /* gemm: its kernels take signed weights (no sums wanted) */
    char *panels;         /* gemm: one panel buffer per thread, panel_size bytes apart */
    size_t panel_size;
    el_gemv_fn gemv;      /* NULL: vec_dot only */
    el_gemv_multi_fn gemv_multi; /* NULL: gemv row by row */
    el_gemv_multi_fn gemv_few; /* non-NULL: takes all n_rows (2..EL_GEMV_FEW_MAX) */
    bool few_by_multi;         /* 4..EL_GEMV_BY_MULTI_MAX rows through gemv_multi, 3 a time */
    el_from_float_fn quantize;
    el_static_fn quantize_static; /* non-NULL: the rows' static scale is act_scale */
    float act_scale;
    const float *x;
    int64_t ldx;
    int64_t n_rows;
    const char *act;  /* activation row r is at act + r * act_stride */
    size_t act_stride;
    float *y;
    int64_t ldy;
    int nth;                   /* threads, each starting with one of the first nth chunks */
    int64_t first;             /* output rows of each of those (a multiple of TILE_OUT) */
    int64_t chunk;             /* output rows of each chunk after them (the same multiple) */
    int64_t n_chunks;
    void *gemm_mem;            /* what was allocated for the gemm (aux and panels), or NULL */
} matmul_job;

/* The products of one pool job: their chunks, numbered one product after the other; thread ith
 * starts with chunk ith, and takes the rest from next_chunk. */
typedef struct matmul_batch {
    matmul_job *jobs;
    int n;
    int64_t n_chunks;
    atomic_llong next_chunk;
} matmul_batch;

static void quantize_task(void *arg, int ith, int nth) {
    const matmul_job *j = arg;
    int64_t lo = j->n_rows * ith / nth, hi = j->n_rows * (ith + 1) / nth;
    int64_t groups = j->aux ? el_gemm_groups(j->w) : 0;
    for (int64_t r = lo; r < hi; r++) {
        char *a = (char *)j->act + r * j->act_stride;
        if (j->quantize_static)
            j->quantize_static(j->x + r * j->ldx, a, j->w->k_in, j->act_scale);
        else
            j->quantize(j->x + r * j->ldx, a, j->w->k_in);
        if (j->aux) el_gemm_aux_row(j->w, j->gemm_signed, a, j->aux + r * groups);
    }
}

/* Output rows [o_lo, o_hi) for every activation row, one panel at a time. */
static void gemm_rows(const matmul_job *j, int64_t o_lo, int64_t o_hi, void *panel) {
    for (int64_t o0 = o_lo; o0 < o_hi; o0 += EL_GEMM_PANEL) {
        int64_t n = o_hi - o0 < EL_GEMM_PANEL ? o_hi - o0 : EL_GEMM_PANEL;
        j->gemm(j->w, o0, n, j->act, j->act_stride, j->aux, j->n_rows, j->y, j->ldy, panel);
    }
}

static void vec_dots(const matmul_job *j, int64_t r, int64_t o_lo, int64_t o_hi) {
    const el_weight *w = j->w;
    for (int64_t o = o_lo; o < o_hi; o++)
        j->vec_dot(w->k_in, &j->y[r * j->ldy + o], (const char *)w->data + o * w->row_bytes,
                   j->act + r * j->act_stride);
}

/* Output rows [o_lo, o_hi) for every activation row: the rows of full tiles by the tile kernel
 * (edges by vec_dot), the other activation rows (all of a decode step's) by gemv, which reads
 * the weight rows in address order: one row over the whole range, two or three (concurrent
 * sequences) one after another over each block of GEMV_REUSE_BYTES of it. */
static void dot_rows(const matmul_job *j, int64_t o_lo, int64_t o_hi) {
    const el_weight *w = j->w;
    int64_t n_tiled = j->tile != NULL && j->gemv_few == NULL && !j->few_by_multi
                          ? j->n_rows / EL_TILE * EL_TILE
                          : 0;
    for (int64_t r0 = 0; r0 < n_tiled; r0 += ROW_BLOCK) {
        int64_t r1 = r0 + ROW_BLOCK < n_tiled ? r0 + ROW_BLOCK : n_tiled;
        for (int64_t o0 = o_lo; o0 < o_hi; o0 += TILE_OUT) {
            int64_t o1 = o0 + TILE_OUT < o_hi ? o0 + TILE_OUT : o_hi;
            const char *wo = (const char *)w->data + o0 * w->row_bytes;
            for (int64_t r = r0; r < r1; r += EL_TILE) {
                if (o1 - o0 == EL_TILE)
                    j->tile(w->k_in, j->y + r * j->ldy + o0, j->ldy, wo, w->row_bytes,
                            j->act + r * j->act_stride, j->act_stride);
                else
                    for (int64_t k = r; k < r + EL_TILE; k++) vec_dots(j, k, o0, o1);
            }
        }
    }
    int64_t n_rest = j->n_rows - n_tiled, reuse = (int64_t)(GEMV_REUSE_BYTES / w->row_bytes);
    /* one row: the whole range as one stream; more: blocks the later rows find in L2 (a type
     * without a gemv, f16 say, would otherwise read the whole weight again for every row) */
    int64_t step = o_hi - o_lo;
    if (n_rest > 1 && step > reuse) step = reuse > 0 ? reuse : 1;
    if (j->gemv == NULL) {
        for (int64_t o0 = o_lo; o0 < o_hi; o0 += step)
            for (int64_t r = n_tiled; r < j->n_rows; r++)
                vec_dots(j, r, o0, o_hi - o0 < step ? o_hi : o0 + step);
        return;
    }
    if (j->gemv_few != NULL) {
        j->gemv_few(w->k_in, j->y + o_lo, j->ldy, (int)j->n_rows, o_hi - o_lo,
                    (const char *)w->data + o_lo * w->row_bytes, w->row_bytes, j->act,
                    j->act_stride);
        return;
    }
    if (n_rest > 1 && n_rest <= EL_GEMV_MULTI_MAX && j->gemv_multi != NULL) {
        j->gemv_multi(w->k_in, j->y + n_tiled * j->ldy + o_lo, j->ldy, (int)n_rest, o_hi - o_lo,
                      (const char *)w->data + o_lo * w->row_bytes, w->row_bytes,
                      j->act + n_tiled * j->act_stride, j->act_stride);
        return;
    }
    /* rows after rows over each block: three at a time through the multi-row gemv if the
     * type has one (its bits are the gemv's), else one by one */
    int64_t group = j->gemv_multi != NULL ? EL_GEMV_MULTI_MAX : 1;
    for (int64_t o0 = o_lo; o0 < o_hi; o0 += step) {
        int64_t n = o_hi - o0 < step ? o_hi - o0 : step;
        const char *wo = (const char *)w->data + o0 * w->row_bytes;
        for (int64_t r = n_tiled; r < j->n_rows; r += group) {
            int64_t m = j->n_rows - r < group ? j->n_rows - r : group;
            if (m == 1)
                j->gemv(w->k_in, j->y + r * j->ldy + o0, n, wo, w->row_bytes,
                        j->act + r * j->act_stride);
            else
                j->gemv_multi(w->k_in, j->y + r * j->ldy + o0, j->ldy, (int)m, n, wo,
                              w->row_bytes, j->act + r * j->act_stride, j->act_stride);
        }
    }
}

/* Chunk c of a product on thread ith: the first nth chunks are `first` rows long, the rest
 * `chunk` rows. */
static void run_chunk(const matmul_job *j, int64_t c, int ith) {
    int64_t rest = j->nth * j->first; /* where the chunks after the first ones start */
    int64_t o_lo = c < j->nth ? c * j->first : rest + (c - j->nth) * j->chunk;
    int64_t o_hi = o_lo + (c < j->nth ? j->first : j->chunk);
    if (o_hi > j->w->k_out) o_hi = j->w->k_out;
    if (o_lo >= o_hi) return; /* a first chunk past the end of a small matrix */
    if (j->gemm)
        gemm_rows(j, o_lo, o_hi, j->panels + (size_t)ith * j->panel_size);
    else
        dot_rows(j, o_lo, o_hi);
}

static void dot_task(void *arg, int ith, int nth) {
    (void)nth;
    matmul_batch *b = arg;
    int p = 0;
    int64_t p_start = 0; /* the batch's number of product p's chunk 0 */
    /* chunk ith first (next_chunk starts at nth), then whatever is left, in increasing order */
    for (int64_t c = ith; c < b->n_chunks; c = atomic_fetch_add(&b->next_chunk, 1)) {
        while (c >= p_start + b->jobs[p].n_chunks) p_start += b->jobs[p++].n_chunks;
        run_chunk(&b->jobs[p], c - p_start, ith);
    }
}

/* A NULL pool runs everything on the caller's thread. */
static void run(el_threadpool *tp, el_task_fn fn, void *arg) {
    if (tp == NULL)
        fn(arg, 0, 1);
    else
        el_threadpool_run(tp, fn, arg);
}

/* Whether n_rows activation rows against w go through the type's few-row gemv (4 to
 * EL_GEMV_FEW_MAX rows) or, on a level with few_rows_by_multi, its multi-row gemv three rows at
 * a time (4 to EL_GEMV_BY_MULTI_MAX rows). 2 and 3 rows keep the multi-row gemv or the gemv row
 * after row, with the decode steps' chunks: as fast or faster, and the same bits. */
static bool wants_few(const el_kernels *k, const el_weight *w, int64_t n_rows) {
    if (n_rows <= EL_GEMV_MULTI_MAX) return false;
    if (k->gemv_few[w->type] != NULL) return n_rows <= EL_GEMV_FEW_MAX;
    return k->few_rows_by_multi && k->gemv_multi[w->type] != NULL &&
           n_rows <= EL_GEMV_BY_MULTI_MAX;
}

/* Whether n_rows activation rows against w go through the packed gemm (if its memory can be
 * had). */
static bool wants_gemm(const el_kernels *k, const el_weight *w, int64_t n_rows) {
    if (wants_few(k, w, n_rows)) return false;
    int64_t min_rows = k->gemm_min_rows[w->type] > 0 ? k->gemm_min_rows[w->type]
                       : k->gemv[w->type]           ? GEMM_MIN_ROWS
                                                    : GEMM_MIN_ROWS_NO_GEMV;
    return k->gemm[w->type] && el_type_kernels_get(w->type)->vec_dot_type != EL_TYPE_F32 &&
           n_rows >= min_rows && w->k_in <= GEMM_MAX_K;
}

/* Whether every one of n_rows activation rows against w goes through the type's gemvs (a
 * decode step): its few-row gemv, or no gemm and too few rows for a tile. */
static bool all_gemv(const el_kernels *k, const el_weight *w, int64_t n_rows) {
    if (wants_few(k, w, n_rows)) return true;
    return !wants_gemm(k, w, n_rows) && k->gemv[w->type] != NULL &&
           (k->tile[w->type] == NULL || n_rows < EL_TILE);
}

/* Everything j needs for y = x W^T but its activations, with nth threads: the kernels, the gemm's
 * memory (if it can have it), and the chunks. */
static void job_setup(matmul_job *j, int nth, const el_weight *w, const float *x, int64_t ldx,
                      int64_t n_rows, float *y, int64_t ldy) {
    const el_kernels *k = el_kernels_get();
    bool few = wants_few(k, w, n_rows);
    *j = (matmul_job){.w = w, .vec_dot = k->vec_dot[w->type], .tile = k->tile[w->type],
                      .gemv = k->gemv[w->type], .gemv_multi = k->gemv_multi[w->type],
                      .gemv_few = few ? k->gemv_few[w->type] : NULL,
                      .few_by_multi = few && k->gemv_few[w->type] == NULL, .x = x, .ldx = ldx,
                      .n_rows = n_rows, .y = y, .ldy = ldy, .nth = nth};
    /* gemm: one allocation for the activation sums and the panels; without it, the tiles */
    if (wants_gemm(k, w, n_rows)) {
        size_t aux_bytes = (size_t)n_rows * el_gemm_groups(w) * sizeof(el_gemm_aux);
        aux_bytes = (aux_bytes + 63) / 64 * 64;
        j->panel_size = el_gemm_panel_size(w);
        j->gemm_mem = aligned_alloc(64, aux_bytes + (size_t)nth * j->panel_size);
        if (j->gemm_mem) {
            j->gemm = k->gemm[w->type];
            j->gemm_signed = k->gemm_signed;
            j->aux = j->gemm_mem;
            j->panels = (char *)j->gemm_mem + aux_bytes;
        }
    }
    /* the few-row gemvs work on panels too */
    int64_t unit = j->gemm || j->gemv_few ? EL_GEMM_PANEL : TILE_OUT;
    /* one thread has nothing to balance: one chunk, so that a gemv's streams run the whole
     * matrix instead of restarting per chunk */
    int64_t per_chunk = nth == 1 ? w->k_out : w->k_out / ((int64_t)nth * CHUNKS_PER_THREAD);
    /* a few-row gemv takes the gemm's chunks, as the panel path it stands in for did */
    bool decode = all_gemv(k, w, n_rows) && j->gemv_few == NULL;
    if (decode && nth > 1 && per_chunk > (int64_t)(GEMV_CHUNK_BYTES / w->row_bytes))
        per_chunk = (int64_t)(GEMV_CHUNK_BYTES / w->row_bytes);
    j->chunk = (per_chunk + unit - 1) / unit * unit;
    if (j->chunk < unit) j->chunk = unit;
    j->first = j->chunk;
    if (decode && nth > 1) {
        int64_t share = w->k_out * GEMV_FIRST_EIGHTHS / 8 / nth / unit * unit;
        if (share > j->first) j->first = share;
    }
    int64_t rest = nth * j->first;
    j->n_chunks = nth + (w->k_out > rest ? (w->k_out - rest + j->chunk - 1) / j->chunk : 0);
}

/* j's activation rows: x itself for float dot products, else x quantized into scratch. */
static void job_activations(el_threadpool *tp, matmul_job *j, void *scratch) {
    const el_weight *w = j->w;
    el_type vt = el_type_kernels_get(w->type)->vec_dot_type;
    if (vt == EL_TYPE_F32) {
        j->act = (const char *)j->x;
        j->act_stride = (size_t)j->ldx * sizeof(float);
        return;
    }
    j->quantize = el_kernels_get()->quantize[vt];
    j->act_scale = w->act_scale;
    j->quantize_static = w->act_scale > 0.0f ? el_kernels_get()->quantize_static[vt] : NULL;
    j->act = scratch;
    j->act_stride = el_row_size(vt, w->k_in);
    /* one row (a decode step) is quicker to quantize than to hand out */
    if (j->n_rows == 1)
        quantize_task(j, 0, 1);
    else
        run(tp, quantize_task, j);
}

/* Runs the n set-up jobs (activations ready) as one pool job, then frees their gemm memory. */
static void run_jobs(el_threadpool *tp, matmul_job *jobs, int n) {
    matmul_batch b = {.jobs = jobs, .n = n};
    for (int i = 0; i < n; i++) b.n_chunks += jobs[i].n_chunks;
    atomic_init(&b.next_chunk, jobs[0].nth);
    run(tp, dot_task, &b);
    for (int i = 0; i < n; i++) free(jobs[i].gemm_mem);
}

void el_matmul(el_threadpool *tp, const el_weight *w, const float *x, int64_t ldx, int64_t n_rows,
               float *y, int64_t ldy, void *scratch) {
    if (n_rows <= 0 || w->k_out <= 0) return;
    matmul_job j;
    job_setup(&j, tp ? el_threadpool_size(tp) : 1, w, x, ldx, n_rows, y, ldy);
    job_activations(tp, &j, scratch);
    run_jobs(tp, &j, 1);
}

/* Whether b takes the same activations as a: the same dot type, row length and static scale. */
static bool same_activations(const el_weight *a, const el_weight *b) {
    return el_type_kernels_get(a->type)->vec_dot_type ==
               el_type_kernels_get(b->type)->vec_dot_type &&
           a->k_in == b->k_in && a->act_scale == b->act_scale;
}

void el_matmul_columns(el_threadpool *tp, int n, const el_weight *const w[], const float *x,
                       int64_t ldx, const int64_t c0[], int64_t n_rows, float *const y[],
                       const int64_t ldy[], void *scratch) {
    if (n_rows <= 0 || n <= 0) return;
    const el_kernels *k = el_kernels_get();
    el_type vt = el_type_kernels_get(w[0]->type)->vec_dot_type;
    const el_type_layout *vl = el_type_layout_get(vt);
    /* quantized rows of x sliced at c0[i] are the slices quantized only for block types */
    bool together = n <= EL_MATMUL_MANY && (vt == EL_TYPE_F32 || vl->row_header == 0);
    for (int i = 0; together && i < n; i++)
        together = w[i]->k_out > 0 && w[i]->type == w[0]->type && all_gemv(k, w[i], n_rows) &&
                   c0[i] % vl->block_size == 0 && w[i]->act_scale == w[0]->act_scale;
    if (!together) {
        for (int i = 0; i < n; i++)
            el_matmul(tp, w[i], x + c0[i], ldx, n_rows, y[i], ldy[i], scratch);
        return;
    }
    int nth = tp ? el_threadpool_size(tp) : 1;
    /* x's columns [0, width) quantized once, as one weight of that width would have them */
    int64_t width = 0;
    for (int i = 0; i < n; i++)
        if (c0[i] + w[i]->k_in > width) width = c0[i] + w[i]->k_in;
    el_weight all = *w[0];
    all.k_in = all.n_in = width;
    matmul_job whole, jobs[EL_MATMUL_MANY];
    job_setup(&whole, nth, &all, x, ldx, n_rows, NULL, 0);
    job_activations(tp, &whole, scratch);
    free(whole.gemm_mem);
    for (int i = 0; i < n; i++) {
        job_setup(&jobs[i], nth, w[i], x + c0[i], ldx, n_rows, y[i], ldy[i]);
        jobs[i].act = whole.act + (vt == EL_TYPE_F32 ? (size_t)c0[i] * sizeof(float)
                                                     : el_row_size(vt, c0[i]));
        jobs[i].act_stride = whole.act_stride;
    }
    run_jobs(tp, jobs, n);
}

void el_matmul_many(el_threadpool *tp, int n, const el_weight *const w[], const float *x,
                    int64_t ldx, int64_t n_rows, float *const y[], const int64_t ldy[],
                    void *scratch) {
    if (n_rows <= 0) return;
    const el_kernels *k = el_kernels_get();
    bool together = n <= EL_MATMUL_MANY;
    for (int i = 0; together && i < n; i++)
        together = w[i]->k_out > 0 && all_gemv(k, w[i], n_rows) && same_activations(w[0], w[i]);
    if (!together) {
        for (int i = 0; i < n; i++) el_matmul(tp, w[i], x, ldx, n_rows, y[i], ldy[i], scratch);
        return;
    }
    int nth = tp ? el_threadpool_size(tp) : 1;
    matmul_job jobs[EL_MATMUL_MANY];
    for (int i = 0; i < n; i++) job_setup(&jobs[i], nth, w[i], x, ldx, n_rows, y[i], ldy[i]);
    job_activations(tp, &jobs[0], scratch);
    for (int i = 1; i < n; i++) {
        jobs[i].act = jobs[0].act;
        jobs[i].act_stride = jobs[0].act_stride;
    }
    run_jobs(tp, jobs, n);
}
