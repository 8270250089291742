/* lora.c - the multi-adapter LoRA term of a linear layer (see lora.h).
 *
 * Per call (one slot = one linear layer of one block):
 *  1. tasks: every (group, term) whose adapter has a pair in the slot, with where its t rows go;
 *  2. x rows quantized once, if some A of the slot is q8_0 (to q8_0) or W8 (to int8 with the
 *     profile's scale);
 *  3. job A: t[task][row][k] = A_k . x[row], units = rows of A, split evenly across threads;
 *  4. t scaled by the task's scale (rank floats per row, on the caller) and quantized for a q8_0 B;
 *     under a profile, t quantized to int8 with the profile's scale instead (the task's scale
 *     then multiplies B's integer sums);
 *  5. job B: y[row][o] += sum_k t[task][row][k] B_ok, threads own disjoint ranges of o: over B
 *     packed in blocks of 32 outputs (f32/f16/bf16, or int8 under a profile), or one dot
 *     product per o (q8_0).
 * Each element of y gets its terms in a fixed order whatever the split, so the result does not
 * depend on the number of threads (nor on whether small calls run on the caller alone).
 * Nothing is allocated here: el_lora_reserve sized the scratch. */
#include "kernels/lora.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/avx2.h"
#include "kernels/dispatch.h"
#include "kernels/edge.h"

/* A finite half as a float without branches, so that the loops below vectorize: the 15 bits
 * shifted into a float's exponent and mantissa, rescaled by 2^(127-15) (exact for normal and
 * subnormal halves; inf and NaN would not be, and the loaders refuse them in B). */
static inline float half_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)(h & 0x7fffu) << 13;
    float f;
    memcpy(&f, &bits, sizeof f);
    f *= 0x1p112f;
    memcpy(&bits, &f, sizeof bits);
    bits |= (uint32_t)(h & 0x8000u) << 16; /* the sign, without a compare and blend */
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline float bf16_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

#define ALWAYS_INLINE inline __attribute__((always_inline))

static ALWAYS_INLINE float packed_elem(el_type type, const void *p, int64_t i) {
    if (type == EL_TYPE_F16) return half_to_float(((const uint16_t *)p)[i]);
    if (type == EL_TYPE_BF16) return bf16_to_float(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

/* y[32b + j] += sum_k t[k] P[b][k][j] for blocks b < n_blocks: B packed in blocks of 32
 * outputs (see el_lora_pair), read once in order. Inlined with a constant type into the
 * portable kernel below, the fixed inner count vectorizes at -O2 on targets with vectors. */
static ALWAYS_INLINE void packed_body(el_type type, int64_t rank, int64_t n_blocks,
                                      const float *t, const void *p, float *y) {
    for (int64_t b = 0; b < n_blocks; b++, y += EL_LORA_PACK) {
        int64_t base = b * rank * EL_LORA_PACK;
        float acc[EL_LORA_PACK] = {0};
        for (int64_t k = 0; k < rank; k++)
            for (int j = 0; j < EL_LORA_PACK; j++)
                acc[j] += t[k] * packed_elem(type, p, base + k * EL_LORA_PACK + j);
        for (int j = 0; j < EL_LORA_PACK; j++)
            y[j] += acc[j];
    }
}

/* y[32b + j] += c * sum_k t[k] P[b][k][j] over int8 t and P (el_lora_packed_i8): the int32 sums
 * of a block vectorize like the float ones above, one float multiply per output after them. */
static ALWAYS_INLINE void packed_i8_body(int64_t rank, int64_t n_out, const int8_t *t,
                                         const int8_t *p, float c, float *y) {
    for (int64_t o0 = 0; o0 < n_out; o0 += EL_LORA_PACK, p += rank * EL_LORA_PACK) {
        int32_t acc[EL_LORA_PACK] = {0};
        for (int64_t k = 0; k < rank; k++)
            for (int j = 0; j < EL_LORA_PACK; j++)
                acc[j] += (int32_t)t[k] * p[k * EL_LORA_PACK + j];
        int n = n_out - o0 < EL_LORA_PACK ? (int)(n_out - o0) : EL_LORA_PACK;
        for (int j = 0; j < n; j++)
            y[o0 + j] += c * (float)acc[j];
    }
}

static void packed_portable(el_type type, int64_t rank, int64_t n_blocks, const float *t,
                            const void *p, float *y) {
    if (type == EL_TYPE_F16) packed_body(EL_TYPE_F16, rank, n_blocks, t, p, y);
    else if (type == EL_TYPE_BF16) packed_body(EL_TYPE_BF16, rank, n_blocks, t, p, y);
    else packed_body(EL_TYPE_F32, rank, n_blocks, t, p, y);
}

/* The AVX2 kernels (lora_avx2.c), used when the kernels in use are AVX2 or above (the CPU has it,
 * and neither EL_FORCE_REFERENCE nor EL_ISA_MAX asks for less). */
#if defined(__x86_64__) && defined(__GNUC__)
static void packed_avx2(el_type type, int64_t rank, int64_t n_blocks, const float *t,
                        const void *p, float *y) {
    el_lora_packed_avx2(type, rank, n_blocks, t, p, y);
}

static void packed_i8_avx2(int64_t rank, int64_t n_out, const int8_t *t, const int8_t *p,
                           float c, float *y) {
    el_lora_packed_i8_avx2(rank, n_out, t, p, c, y);
}

/* The x86 kernels in use are "avx2" or "avx512..." (which implies AVX2). */
static bool use_avx2(void) { return strncmp(el_kernels_get()->isa, "avx", 3) == 0; }
#else
static void packed_avx2(el_type type, int64_t rank, int64_t n_blocks, const float *t,
                        const void *p, float *y) {
    packed_portable(type, rank, n_blocks, t, p, y);
}

static void packed_i8_avx2(int64_t rank, int64_t n_out, const int8_t *t, const int8_t *p, float c,
                           float *y) {
    packed_i8_body(rank, n_out, t, p, c, y);
}

static bool use_avx2(void) { return false; }
#endif

void el_lora_packed(el_type type, int64_t rank, int64_t n_blocks, const float *t, const void *p,
                    float *y) {
    if (use_avx2())
        packed_avx2(type, rank, n_blocks, t, p, y);
    else
        packed_portable(type, rank, n_blocks, t, p, y);
}

static void packed_i8_portable(int64_t rank, int64_t n_out, const int8_t *t, const int8_t *p,
                               float c, float *y) {
    packed_i8_body(rank, n_out, t, p, c, y);
}

void el_lora_packed_i8(int64_t rank, int64_t n_out, const int8_t *t, const int8_t *p, float c,
                       float *y) {
    if (use_avx2())
        packed_i8_avx2(rank, n_out, t, p, c, y);
    else
        packed_i8_portable(rank, n_out, t, p, c, y);
}

/* Terms of fewer multiply-adds and fewer bytes of A and B than these are computed on the
 * caller's thread: they take less time than waking the pool twice (a small model's decode
 * step). A decode step of a 1B model reads more (a rank-16 f16 adapter: 128 KB and more per
 * layer), which two threads stream faster than one (docs/adapters.md). */
enum { INLINE_MACS = 1 << 18, INLINE_BYTES = 1 << 16 };

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* Bytes of one row of n floats converted to what a weight of type wt dots with. */
static size_t act_row_bytes(el_type wt, int64_t n) {
    el_type vt = el_type_kernels_get(wt)->vec_dot_type;
    return vt == EL_TYPE_F32 ? 0 : el_row_size(vt, n);
}

/* Bytes of one quantized row of t for a pair's B: int8 under a profile, none for the float
 * packed types, else B's dot type. */
static size_t t_row_bytes(const el_lora_pair *p) {
    if (p->x_scale > 0.0f) return (size_t)p->a.n_out;
    return p->b_packed ? 0 : act_row_bytes(p->b.type, p->a.n_out);
}

/* Grows *p to need bytes (never shrinks). */
static el_status grow(void **p, size_t *cap, size_t need) {
    if (need <= *cap) return EL_OK;
    void *q = realloc(*p, need);
    if (!q) return el_error(EL_ERR_NOMEM, "adapters: out of memory for %zu bytes of scratch", need);
    *p = q;
    *cap = need;
    return EL_OK;
}

el_status el_lora_reserve(el_lora_scratch *s, const el_lora_rows *lr, int64_t max_in) {
    size_t n_tasks = 0, t_floats = 0, n_rows = 0;
    const size_t many = EL_LORA_MANY; /* slots one call takes at most */
    bool quantized = false;
    for (int32_t g = 0; g < lr->n_groups; g++) {
        const el_lora_group *gr = &lr->groups[g];
        n_tasks += (size_t)gr->n_terms;
        for (int32_t i = 0; i < gr->n_terms; i++) {
            t_floats += (size_t)gr->n_rows * gr->terms[i].rank_max;
            quantized |= gr->terms[i].quantized;
        }
        if (gr->n_rows > 0)
            n_rows = max_size(n_rows, (size_t)gr->rows[gr->n_rows - 1] + 1);
    }
    /* q8_0 and int8 rows are smaller than float rows, so t's size in bytes bounds qt; x rows
     * are q8_0 or A8 (a profile's W8 A) */
    n_tasks *= many;
    t_floats *= many;
    size_t qt = quantized ? t_floats * sizeof(float) : 0;
    size_t qx_row = max_size(el_row_size(EL_TYPE_Q8_0, max_in),
                             el_row_size(EL_TYPE_A8, el_edge_padded(max_in)));
    size_t qx = quantized ? many * n_rows * qx_row : 0;
    if (n_tasks > (size_t)s->tasks_cap) {
        el_lora_task *p = realloc(s->tasks, n_tasks * sizeof *p);
        if (!p) return el_error(EL_ERR_NOMEM, "adapters: out of memory for %zu tasks", n_tasks);
        s->tasks = p;
        s->tasks_cap = (int32_t)n_tasks;
    }
    el_status st = grow(&s->tscratch, &s->t_cap, t_floats * sizeof(float));
    if (!st) st = grow(&s->qt, &s->qt_cap, qt);
    if (!st) st = grow(&s->qx, &s->qx_cap, qx);
    s->t = s->tscratch;
    return st;
}

void el_lora_scratch_free(el_lora_scratch *s) {
    free(s->tasks);
    free(s->tscratch);
    free(s->qt);
    free(s->qx);
    memset(s, 0, sizeof *s);
}

typedef struct lora_job {
    const el_lora_task *tasks;
    int32_t n_tasks;
    int64_t n_units;     /* sum of the tasks' ranks */
    const float *x;
    int64_t ldx;
    size_t qx_row;       /* bytes of a quantized x row (each task's own at its qx) */
    int64_t n_in;
    float *t;
    const char *qt;
    const el_kernels *k;
} lora_job;

/* Job A: units [lo, hi) of the flat numbering of A's rows over all tasks. */
static void job_a(void *arg, int ith, int nth) {
    const lora_job *j = arg;
    int64_t lo = j->n_units * ith / nth, hi = j->n_units * (ith + 1) / nth;
    for (int32_t ti = 0; ti < j->n_tasks && lo < hi; ti++) {
        const el_lora_task *t = &j->tasks[ti];
        const el_weight *a = &t->pair->a;
        int64_t rank = a->n_out, u0 = t->unit0, u1 = u0 + rank;
        if (u1 <= lo || u0 >= hi) continue;
        bool q = el_type_kernels_get(a->type)->vec_dot_type != EL_TYPE_F32;
        int64_t n_dot = t->pair->x_scale > 0.0f ? el_edge_padded(j->n_in) : j->n_in;
        el_vec_dot_fn dot = j->k->vec_dot[a->type];
        el_gemv_fn gemv = j->k->gemv[a->type];
        const el_lora_group *g = t->group;
        int64_t k0 = (lo > u0 ? lo : u0) - u0, k1 = (hi < u1 ? hi : u1) - u0;
        const char *arows = (const char *)a->data + k0 * a->row_bytes;
        for (int32_t i = 0; i < g->n_rows; i++) {
            int32_t r = g->rows[i];
            const void *act = q ? (const void *)(t->qx + (size_t)r * j->qx_row)
                                : (const void *)(j->x + (size_t)r * j->ldx);
            float *out = &j->t[t->t_off + (size_t)i * rank + k0];
            /* the gemv reads x once for several rows of A; each output has the same bits
             * however the rows are split between threads */
            if (gemv) {
                gemv(n_dot, out, k1 - k0, arows, a->row_bytes, act);
                continue;
            }
            for (int64_t kk = k0; kk < k1; kk++)
                dot(n_dot, out + (kk - k0), arows + (kk - k0) * a->row_bytes, act);
        }
    }
}

/* Job B: for every task, its share [lo, hi) of its outputs in every row. */
static void job_b(void *arg, int ith, int nth) {
    const lora_job *j = arg;
    for (int32_t ti = 0; ti < j->n_tasks; ti++) {
        const el_lora_task *t = &j->tasks[ti];
        int64_t n_out = t->n_out, lo = n_out * ith / nth, hi = n_out * (ith + 1) / nth;
        float *y = t->y;
        int64_t ldy = t->ldy;
        const el_lora_pair *p = t->pair;
        const el_weight *b = &p->b;
        const el_lora_group *g = t->group;
        int64_t rank = p->a.n_out;
        if (p->x_scale > 0.0f) {
            /* int8 B under a profile: threads split whole blocks of outputs */
            int64_t nb = (n_out + EL_LORA_PACK - 1) / EL_LORA_PACK;
            int64_t b0 = nb * ith / nth, b1 = nb * (ith + 1) / nth;
            int64_t o1 = b1 * EL_LORA_PACK < n_out ? b1 * EL_LORA_PACK : n_out;
            float c = t->scale * p->t_scale * p->b_scale;
            for (int32_t i = 0; i < g->n_rows && b0 < b1; i++)
                el_lora_packed_i8(rank, o1 - b0 * EL_LORA_PACK,
                                  (const int8_t *)j->qt + t->qt_off + (size_t)i * rank,
                                  (const int8_t *)b->data + b0 * rank * EL_LORA_PACK, c,
                                  y + (size_t)g->rows[i] * ldy + b0 * EL_LORA_PACK);
            continue;
        }
        if (p->b_packed) {
            /* threads split whole blocks of outputs */
            int64_t nb = n_out / EL_LORA_PACK, b0 = nb * ith / nth, b1 = nb * (ith + 1) / nth;
            size_t blk = (size_t)rank * EL_LORA_PACK * el_type_layout_get(b->type)->type_size;
            for (int32_t i = 0; i < g->n_rows; i++)
                el_lora_packed(b->type, rank, b1 - b0, j->t + t->t_off + (size_t)i * rank,
                               (const char *)b->data + b0 * blk,
                               y + (size_t)g->rows[i] * ldy + b0 * EL_LORA_PACK);
            continue;
        }
        size_t qrow = act_row_bytes(b->type, rank);
        el_vec_dot_fn dot = j->k->vec_dot[b->type];
        for (int32_t i = 0; i < g->n_rows; i++) {
            const void *act = qrow ? (const void *)(j->qt + t->qt_off + (size_t)i * qrow)
                                   : (const void *)(j->t + t->t_off + (size_t)i * rank);
            float *yr = y + (size_t)g->rows[i] * ldy;
            for (int64_t o = lo; o < hi; o++) {
                float v;
                dot(rank, &v, (const char *)b->data + o * b->row_bytes, act);
                yr[o] += v;
            }
        }
    }
}

static void run(el_threadpool *tp, el_task_fn fn, void *arg) {
    if (tp == NULL)
        fn(arg, 0, 1);
    else
        el_threadpool_run(tp, fn, arg);
}

void el_lora_apply_many(el_threadpool *tp, const el_lora_rows *lr, int count,
                        const int32_t slots[], const float *x, int64_t ldx, int64_t n_in,
                        float *const y[], const int64_t ldy[], el_lora_scratch *s) {
    if (!lr || lr->n_groups == 0) return;
    lora_job j = {.tasks = s->tasks, .x = x, .ldx = ldx, .n_in = n_in, .t = s->t, .qt = s->qt,
                  .k = el_kernels_get()};
    /* x rows quantized for a q8_0 or W8 A: one copy per slot, whose x scale a profile sets */
    int32_t n_x_rows = 0;
    for (int32_t g = 0; g < lr->n_groups; g++)
        if (lr->groups[g].n_rows > 0) {
            int32_t last = lr->groups[g].rows[lr->groups[g].n_rows - 1] + 1;
            n_x_rows = last > n_x_rows ? last : n_x_rows;
        }
    int32_t n_tasks = 0;
    size_t t_off = 0, qt_off = 0;
    int64_t macs = 0, bytes = 0;
    for (int c = 0; c < count; c++) {
        const el_lora_pair *x_pair = NULL; /* a pair of this slot whose A dots quantized x */
        int32_t first = n_tasks;
        for (int32_t g = 0; g < lr->n_groups; g++) {
            const el_lora_group *gr = &lr->groups[g];
            for (int32_t i = 0; i < gr->n_terms; i++) {
                const el_lora_pair *p = &gr->terms[i].table[slots[c]];
                if (p->a.n_out == 0) continue;
                el_lora_task *t = &s->tasks[n_tasks++];
                *t = (el_lora_task){.pair = p, .group = gr,
                                    .scale = gr->terms[i].scale * p->scale,
                                    .unit0 = j.n_units, .t_off = t_off, .qt_off = qt_off,
                                    .y = y[c], .ldy = ldy[c], .n_out = p->b.n_out};
                j.n_units += p->a.n_out;
                t_off += (size_t)gr->n_rows * p->a.n_out;
                qt_off += (size_t)gr->n_rows * t_row_bytes(p);
                macs += (int64_t)gr->n_rows * p->a.n_out * (n_in + p->b.n_out);
                bytes += (int64_t)(p->a.n_out * p->a.row_bytes + p->b.n_out * p->b.row_bytes);
                if (act_row_bytes(p->a.type, n_in) != 0) x_pair = p;
            }
        }
        if (!x_pair) continue;
        /* One quantized copy serves every A of the slot: without a profile q8_0 is the only
         * quantized A type, and under one every A is W8 and the slot's x scale is the
         * profile's. */
        bool profiled = x_pair->x_scale > 0.0f;
        int64_t n_q = profiled ? el_edge_padded(n_in) : n_in;
        j.qx_row = el_row_size(profiled ? EL_TYPE_A8 : EL_TYPE_Q8_0, n_q);
        char *qx = (char *)s->qx + (size_t)c * n_x_rows * j.qx_row;
        for (int32_t ti = first; ti < n_tasks; ti++) s->tasks[ti].qx = qx;
        for (int32_t g = 0; g < lr->n_groups; g++)
            for (int32_t i = 0; i < lr->groups[g].n_rows; i++) {
                int32_t r = lr->groups[g].rows[i];
                char *q = qx + (size_t)r * j.qx_row;
                if (profiled) {
                    /* the SIMD quantizers take whole chunks; a row that ends inside one
                     * (688 inputs) takes the reference's, the same bytes */
                    (n_q == n_in ? j.k->quantize_static[EL_TYPE_A8] : el_a8_from_float_static)(
                        x + (size_t)r * ldx, q, n_in, x_pair->x_scale);
                    memset(q + el_row_size(EL_TYPE_A8, n_q) - (size_t)(n_q - n_in), 0,
                           (size_t)(n_q - n_in));
                } else
                    el_type_kernels_get(EL_TYPE_Q8_0)->from_float(x + (size_t)r * ldx, q, n_in);
            }
    }
    if (n_tasks == 0) return;
    j.n_tasks = n_tasks;
    if (macs < INLINE_MACS && bytes < INLINE_BYTES) tp = NULL;
    run(tp, job_a, &j);
    for (int32_t ti = 0; ti < n_tasks; ti++) {
        const el_lora_task *t = &s->tasks[ti];
        int64_t rank = t->pair->a.n_out;
        size_t qrow = t_row_bytes(t->pair);
        for (int32_t i = 0; i < t->group->n_rows; i++) {
            float *tr = s->t + t->t_off + (size_t)i * rank;
            if (t->pair->x_scale > 0.0f) {
                el_i8_quantize(tr, (int8_t *)s->qt + t->qt_off + (size_t)i * qrow, rank,
                               t->pair->t_scale);
                continue;
            }
            for (int64_t k = 0; k < rank; k++)
                tr[k] *= t->scale;
            if (qrow)
                el_type_kernels_get(el_type_kernels_get(t->pair->b.type)->vec_dot_type)
                    ->from_float(tr, (char *)s->qt + t->qt_off + (size_t)i * qrow, rank);
        }
    }
    run(tp, job_b, &j);
}

void el_lora_apply(el_threadpool *tp, const el_lora_rows *lr, int32_t slot, const float *x,
                   int64_t ldx, int64_t n_in, float *y, int64_t ldy, el_lora_scratch *s) {
    el_lora_apply_many(tp, lr, 1, &slot, x, ldx, n_in, &y, &ldy, s);
}
