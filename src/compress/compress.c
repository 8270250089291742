/* compress.c - el_compress: calibration, sorting, GPTQ and the output file (docs/uniql.md).
 *
 * The correlations of a layer are its largest state (n_ff^2 doubles for down), so layers are
 * calibrated in windows that fit CORR_BUDGET, one run over the text per window; each layer is
 * then sorted and quantized from its own statistics and only its packed weights are kept until
 * the file is written. Statistics come from the original model (every layer sees original
 * inputs), the choice of GPTQ's paper when layers are quantized independently. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compress/corr.h"
#include "compress/finetune.h"
#include "compress/gptq.h"
#include "compress/plan.h"
#include "compress/quantize.h"
#include "compress/sort.h"
#include "compress/sorted_adapters.h"
#include "compress/uniql.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/hash.h"
#include "formats/gguf.h"
#include "kernels/types.h"
#include "model/prune.h"

static const uint64_t CORR_BUDGET = 2ull << 30; /* bytes of correlations held at once */
enum { MIN_CALIB_TOKENS = 256 };
static const float DEFAULT_RATES[] = {0, 0.05f, 0.10f, 0.15f, 0.20f, 0.25f, 0.30f, 0.35f};

el_compress_params el_compress_default_params(void) {
    return (el_compress_params){.calib_tokens = 8192,
                                .type = NULL,
                                .group = 0,
                                .damp = 0.01,
                                .ridge = 0.1,
                                .sort_qk = true,
                                .n_threads = 0,
                                .finetune_rank = 16,
                                .finetune_lr = 1e-3f,
                                .finetune_ctx = 128,
                                .finetune_batch = 8,
                                .seed = 1};
}

/* One weight as it will be written. */
typedef struct out_weight {
    el_type type;
    void *data;
    size_t nbytes;
} out_weight;

typedef struct job {
    const el_compress_params *p;
    el_model *m;
    bool gptq; /* a 4-bit grid, else the float type below for every weight */
    el_gptq_grid grid;
    bool head_q8; /* the head in q8_0 (head_type), else on the grid */
    el_type float_type;  /* f32 or f16: sorting alone, and the fallback of rows that do not fit */
    out_weight *out;     /* [n_layer * EL_N_LINEAR] */
    out_weight head;     /* the output head (GPTQ only; data NULL: copied as it is) */
    out_weight embd;     /* the token embeddings when untied: q8_0 (a lookup has no Hessian) */
    int32_t *rope_pairs; /* [n_layer][n_head_kv][n_rot/2] or NULL */
    /* with fine-tuning, every layer sorted before any is quantized: its float weights and
     * correlations, [n_layer] each */
    el_flayer *fl;
    el_layer_corr *corr;
    bool adapter_written; /* the fine-tuned adapter kept: removed if a later stage fails */
    el_sorted_adapters ads; /* --lora: adapters to re-express in the sorted basis */
    uint64_t basis;       /* FNV-1a of every layer's sorting moves: the sorted basis's name */
    double t0;           /* start of the current stage */
    int64_t done, total; /* of the current stage */
    const char *stage;
    char stage_buf[64];
} job;

static bool report(job *j) {
    if (!j->p->progress) return true;
    el_compress_progress pr = {
        .stage = j->stage, .done = j->done, .total = j->total, .stage_s = el_now_seconds() - j->t0};
    return j->p->progress(j->p->user, &pr);
}

static bool on_calib(void *user, int64_t done, int64_t total) {
    job *j = user;
    j->done = done;
    j->total = total;
    return report(j);
}

/* What compress cannot sort: blocks whose extra parts would need transforming too. */
static el_status check_model(const el_model *m) {
    const el_hparams *hp = &m->hp;
    if (!m->gguf)
        return el_error(EL_ERR_UNSUPPORTED,
                        "%s: compress reads GGUF models (convert it first: "
                        "edgelora convert)",
                        m->path);
    if (el_prune_is_compressed(m->gguf))
        return el_error(EL_ERR_INVALID_ARG,
                        "%s: already compressed (a UniQL file): compress "
                        "the original model",
                        m->path);
    if (hp->fused_qkv || hp->fused_gate_up)
        return el_error(EL_ERR_UNSUPPORTED,
                        "%s: compress does not sort fused Q/K/V or gate/up "
                        "tensors",
                        m->path);
    for (int il = 0; il < hp->n_layer; il++) {
        const el_layer *l = &m->layers[il];
        if (l->bq || l->bk || l->bv || l->attn_q_norm || l->attn_k_norm)
            return el_error(EL_ERR_UNSUPPORTED,
                            "%s: compress sorts blocks without Q/K/V biases "
                            "and Q/K norms (block %d has them)",
                            m->path, il);
    }
    if (hp->n_head % hp->n_head_kv != 0)
        return el_error(EL_ERR_UNSUPPORTED, "%s: %d heads do not group over %d KV heads", m->path,
                        hp->n_head, hp->n_head_kv);
    return EL_OK;
}

/* The correlation each linear's GPTQ Hessian is. */
static const double *hessian(const el_layer_corr *c, el_linear w) {
    switch (w) {
    case EL_LINEAR_Q:
    case EL_LINEAR_K:
    case EL_LINEAR_V:
        return c->attn_in;
    case EL_LINEAR_O:
        return c->attn_out;
    case EL_LINEAR_GATE:
    case EL_LINEAR_UP:
        return c->ffn_in;
    default:
        return c->ffn_mid;
    }
}

/* Whether a weight is quantized by GPTQ (its rows divide into the groups), and its type. */
static bool quantized(const job *j, int il, el_linear which) {
    return j->gptq && el_layer_weight(&j->m->layers[il], which)->n_in % j->grid.group == 0;
}
static el_type out_type(const job *j, int il, el_linear which) {
    return quantized(j, il, which) ? j->grid.type : j->float_type;
}

/* Stores (or quantizes) one sorted weight. */
static el_status emit(job *j, int il, el_linear which, float *w, const el_layer_corr *c) {
    const el_weight *src = el_layer_weight(&j->m->layers[il], which);
    int64_t rows = src->n_out, cols = src->n_in;
    bool quant = quantized(j, il, which);
    out_weight *o = &j->out[el_linear_slot(il, which)];
    o->type = out_type(j, il, which);
    o->nbytes = el_row_size(o->type, cols) * (size_t)rows;
    if (!(o->data = malloc(o->nbytes))) return el_error(EL_ERR_NOMEM, "compress: out of memory");
    if (quant)
        return el_gptq_quantize(w, rows, cols, hessian(c, which), j->p->damp, 0, j->grid, o->data);
    const el_type_kernels *k = el_type_kernels_get(o->type);
    for (int64_t r = 0; r < rows; r++)
        k->from_float(w + r * cols, (char *)o->data + (size_t)r * el_row_size(o->type, cols), cols);
    return EL_OK;
}

/* The output head by GPTQ against its input correlation h (or in q8_0, h unused), and untied
 * embeddings in q8_0. */
static el_status emit_head(job *j, const double *h) {
    const el_model *m = j->m;
    const el_weight *src = &m->output;
    int64_t rows = src->n_out, cols = src->n_in;
    int64_t group = j->head_q8 ? (int64_t)el_type_layout_get(EL_TYPE_Q8_0)->block_size
                               : j->grid.group;
    if (cols % group != 0) return EL_OK;
    float *w = malloc((size_t)(rows * cols) * sizeof *w);
    j->head.type = j->head_q8 ? EL_TYPE_Q8_0 : j->grid.type;
    j->head.nbytes = el_row_size(j->head.type, cols) * (size_t)rows;
    j->head.data = malloc(j->head.nbytes);
    el_status st = w && j->head.data ? EL_OK : el_error(EL_ERR_NOMEM, "compress: out of memory");
    if (st == EL_OK) {
        el_weight_floats(src, w);
        if (j->head_q8)
            el_type_weight_quantizer(el_type_kernels_get(EL_TYPE_Q8_0))(w, j->head.data,
                                                                        rows * cols);
        else
            st = el_gptq_quantize(w, rows, cols, h, j->p->damp, 0, j->grid, j->head.data);
    }
    bool tied = !gguf_find_tensor(m->gguf, "output.weight");
    const el_weight *e = &m->tok_embd;
    if (st == EL_OK && !tied && e->n_in % 32 == 0 && e->type != EL_TYPE_Q8_0) {
        float *ew = realloc(w, (size_t)(e->n_out * e->n_in) * sizeof *w);
        if (ew) w = ew;
        j->embd.type = EL_TYPE_Q8_0;
        j->embd.nbytes = el_row_size(EL_TYPE_Q8_0, e->n_in) * (size_t)e->n_out;
        j->embd.data = ew ? malloc(j->embd.nbytes) : NULL;
        if (!j->embd.data)
            st = el_error(EL_ERR_NOMEM, "compress: out of memory");
        else {
            el_weight_floats(e, w);
            el_type_weight_quantizer(el_type_kernels_get(EL_TYPE_Q8_0))(w, j->embd.data,
                                                                        e->n_out * e->n_in);
        }
    }
    free(w);
    return st;
}

/* Layer il's weights in float, sorted: its correlations transformed with them, the --lora
 * adapters' pairs of the layer re-expressed in the same basis, and the basis's hash extended
 * by the layer's moves. */
static el_status sort_layer(job *j, int il, el_layer_corr *c, el_flayer *fl) {
    const el_hparams *hp = &j->m->hp;
    el_status st = EL_OK;
    for (el_linear w = EL_LINEAR_Q; st == EL_OK && w <= EL_LINEAR_DOWN; w++) {
        const el_weight *src = el_layer_weight(&j->m->layers[il], w);
        if (!(fl->w[w] = malloc((size_t)(src->n_out * src->n_in) * sizeof(float))))
            st = el_error(EL_ERR_NOMEM, "compress: out of memory");
        else
            el_weight_floats(src, fl->w[w]);
    }
    int32_t *perm = malloc((size_t)hp->n_ff * sizeof *perm);
    size_t n_t = (size_t)hp->n_head_kv * hp->head_dim_v * hp->head_dim_v;
    double *t = malloc(n_t * sizeof *t);
    int32_t *pairs =
        j->rope_pairs ? j->rope_pairs + (size_t)il * hp->n_head_kv * (hp->n_rot / 2) : NULL;
    if (st == EL_OK && (!perm || !t)) st = el_error(EL_ERR_NOMEM, "compress: out of memory");
    if (st == EL_OK) st = el_sort_mlp(hp, fl, c->ffn_mid, j->p->ridge, perm);
    if (st == EL_OK && pairs) st = el_sort_qk(hp, fl, c->attn_in, pairs);
    if (st == EL_OK) st = el_sort_vo(hp, fl, c->attn_in, c->attn_out, t);
    el_sort_basis basis = {perm, pairs, t};
    if (st == EL_OK && j->ads.n) st = el_sorted_adapters_layer(&j->ads, hp, il, &basis);
    if (st == EL_OK) {
        j->basis = el_fnv1a(j->basis, perm, (size_t)hp->n_ff * sizeof *perm);
        if (pairs)
            j->basis = el_fnv1a(j->basis, pairs,
                                (size_t)hp->n_head_kv * (hp->n_rot / 2) * sizeof *pairs);
        j->basis = el_fnv1a(j->basis, t, n_t * sizeof *t);
    }
    free(perm);
    free(t);
    return st;
}

static void flayer_free(el_flayer *fl) {
    for (el_linear w = EL_LINEAR_Q; w <= EL_LINEAR_DOWN; w++) free(fl->w[w]);
    *fl = (el_flayer){0};
}

static el_status emit_layer(job *j, int il, el_flayer *fl, const el_layer_corr *c) {
    el_status st = EL_OK;
    for (el_linear w = EL_LINEAR_Q; st == EL_OK && w <= EL_LINEAR_DOWN; w++)
        st = emit(j, il, w, fl->w[w], c);
    return st;
}

/* The fraction of a block's weight elements kept with these sizes. */
static double kept_fraction(const el_hparams *hp, int64_t ff, int64_t qk, int64_t vo) {
    double e = hp->n_embd, h = hp->n_head, kv = hp->n_head_kv;
    double full = e * (h * hp->head_dim_k + kv * hp->head_dim_k + kv * hp->head_dim_v +
                       h * hp->head_dim_v + 3.0 * hp->n_ff);
    return e * (h * qk + kv * qk + kv * vo + h * vo + 3.0 * ff) / full;
}

/* The plan of the weights as written, reported rate by rate. */
static el_status make_plan(job *j, const float *rates, int32_t n_rates, el_uniql_plan *plan) {
    const el_hparams *hp = &j->m->hp;
    el_plan_grain grain = el_plan_grain_for(hp, out_type(j, 0, EL_LINEAR_DOWN),
                                            out_type(j, 0, EL_LINEAR_O), j->rope_pairs != NULL);
    el_status st = el_plan_build(hp, rates, n_rates, grain, plan);
    if (st) return st;
    plan->rope_pairs = j->rope_pairs;
    j->rope_pairs = NULL;
    for (int32_t r = 0; r < n_rates && j->p->progress; r++) {
        size_t i = (size_t)r * hp->n_layer;
        el_compress_progress pr = {.stage = "plan",
                                   .done = r + 1,
                                   .total = n_rates,
                                   .rate = rates[r],
                                   .ff_kept = plan->ff_kept[i],
                                   .qk_kept = plan->qk_kept[i],
                                   .vo_kept = plan->vo_kept[i]};
        pr.kept_fraction = kept_fraction(hp, pr.ff_kept, pr.qk_kept, pr.vo_kept);
        if (!j->p->progress(j->p->user, &pr))
            return el_error(EL_ERR_CANCELLED, "compress cancelled");
    }
    return EL_OK;
}

/* Sorts (and without fine-tuning quantizes) layers l0..l1-1 from their correlations; with
 * fine-tuning keeps each layer's weights and correlations in j. */
static el_status sort_window(job *j, int32_t l0, int32_t l1, el_layer_corr *corr) {
    bool keep = j->fl != NULL;
    el_status st = EL_OK;
    j->stage = keep ? "sort" : "sort+gptq";
    j->t0 = el_now_seconds();
    j->total = j->m->hp.n_layer;
    for (int32_t il = l0; st == EL_OK && il < l1; il++) {
        j->done = il;
        el_flayer fl = {0};
        st = sort_layer(j, il, &corr[il - l0], &fl);
        if (st == EL_OK && !keep) st = emit_layer(j, il, &fl, &corr[il - l0]);
        if (keep)
            j->fl[il] = fl;
        else
            flayer_free(&fl);
        j->done = il + 1;
        if (st == EL_OK && !report(j)) st = el_error(EL_ERR_CANCELLED, "compress cancelled");
    }
    return st;
}

static el_status run_layers(job *j, const char *in_path) {
    el_corr_run run;
    el_status st = el_corr_open(in_path, j->p->calib_path, j->p->calib_tokens, MIN_CALIB_TOKENS,
                                j->p->n_threads, &run);
    if (st) return st;
    /* the model compress reads is the one calibration runs */
    j->m = run.model;
    st = check_model(j->m);
    if (st == EL_OK && j->p->n_loras)
        st = el_sorted_adapters_load(&j->ads, j->m, j->p->lora_paths, j->p->n_loras,
                                     j->p->lora_out_dir);
    const el_hparams *hp = &j->m->hp;
    int32_t n_layer = hp->n_layer;
    bool keep = j->p->finetune_steps > 0;
    uint64_t layer_bytes = el_layer_corr_bytes(j->m);
    int32_t window = (int32_t)(CORR_BUDGET / layer_bytes);
    window = window < 1 ? 1 : window > n_layer ? n_layer : window;
    /* fine-tuning comes between sorting and GPTQ, so every layer's correlations wait for it */
    if (st == EL_OK && keep && window < n_layer)
        st = el_error(EL_ERR_UNSUPPORTED, "%s: --finetune holds the correlations of all %d "
                      "layers until GPTQ (%.1f GB), more than compress's %.1f GB: compress "
                      "without --finetune", j->m->path, n_layer,
                      (double)layer_bytes * n_layer / 1e9, (double)CORR_BUDGET / 1e9);
    el_layer_corr *corr = calloc((size_t)window, sizeof *corr);
    /* the head's input correlation, for GPTQ of the head only */
    bool head_corr = j->gptq && !j->head_q8;
    double *head = head_corr ? calloc((size_t)hp->n_embd * (size_t)hp->n_embd, sizeof *head) : NULL;
    j->out = calloc((size_t)n_layer * EL_N_LINEAR, sizeof *j->out);
    if (keep) j->fl = calloc((size_t)n_layer, sizeof *j->fl);
    if (st == EL_OK && (!corr || !j->out || (head_corr && !head) || (keep && !j->fl)))
        st = el_error(EL_ERR_NOMEM, "compress: out of memory");
    /* Q/K pairs move only where every head dimension rotates (else they stay, unpruned) */
    if (st == EL_OK && j->p->sort_qk && hp->n_rot == hp->head_dim_k &&
        !(j->rope_pairs = malloc((size_t)n_layer * hp->n_head_kv * (hp->n_rot / 2) *
                                 sizeof *j->rope_pairs)))
        st = el_error(EL_ERR_NOMEM, "compress: out of memory");
    int64_t n_windows = (n_layer + window - 1) / window;
    for (int32_t l0 = 0; st == EL_OK && l0 < n_layer; l0 += window) {
        int32_t l1 = l0 + window < n_layer ? l0 + window : n_layer;
        j->stage = "calibrate";
        j->t0 = el_now_seconds();
        j->done = 0;
        j->total = (int64_t)run.tokens.n;
        if (n_windows > 1) {
            snprintf(j->stage_buf, sizeof j->stage_buf, "calibrate layers %d-%d", l0, l1 - 1);
            j->stage = j->stage_buf;
        }
        st = el_corr_collect(&run, l0, l1, l1 == n_layer ? head : NULL, on_calib, j, corr);
        if (st == EL_OK) st = sort_window(j, l0, l1, corr);
        for (int32_t i = 0; i < window && (!keep || st); i++) el_layer_corr_free(&corr[i]);
    }
    if (keep && st == EL_OK)
        j->corr = corr;
    else
        free(corr);
    if (st == EL_OK && j->gptq) st = emit_head(j, head);
    free(head);
    run.model = NULL; /* kept for writing */
    el_corr_close(&run);
    return st;
}

/* Fine-tuning on the plan, then GPTQ of every layer from its kept correlations. */
static el_status finetune_and_quantize(job *j, const el_uniql_plan *plan) {
    const el_hparams *hp = &j->m->hp;
    el_status st = el_masked_finetune(j->m, j->fl, plan, j->basis, j->p);
    j->adapter_written = st == EL_OK && j->p->finetune_adapter_path;
    j->stage = j->gptq ? "gptq" : "store";
    j->t0 = el_now_seconds();
    j->total = hp->n_layer;
    for (int il = 0; st == EL_OK && il < hp->n_layer; il++) {
        j->done = il;
        st = emit_layer(j, il, &j->fl[il], &j->corr[il]);
        j->done = il + 1;
        if (st == EL_OK && !report(j)) st = el_error(EL_ERR_CANCELLED, "compress cancelled");
    }
    return st;
}

/* The sorted model: every tensor of the input in order, the weights replaced. */
static el_status write_output(job *j, const char *out_path) {
    const gguf_file *g = j->m->gguf;
    gguf_writer *w = gguf_writer_create();
    if (!w) return el_error(EL_ERR_NOMEM, "compress: out of memory");
    el_status st = gguf_writer_copy_kv(w, g);
    if (st == EL_OK) st = gguf_writer_set_u64(w, EL_UNIQL_BASIS_KEY, j->basis);
    if (st == EL_OK && j->gptq)
        st = gguf_writer_set_u32(w, "general.file_type", el_quant_file_type(j->grid.type));
    for (uint64_t t = 0; st == EL_OK && t < g->n_tensors; t++) {
        const gguf_tensor *gt = &g->tensors[t];
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)gt->name.len, gt->name.ptr);
        /* static activation scales belong to the weights they were measured for */
        size_t n = strlen(name), ls = strlen(EL_ACT_SCALE_SUFFIX);
        if (n > ls && strcmp(name + n - ls, EL_ACT_SCALE_SUFFIX) == 0) continue;
        const out_weight *o = NULL;
        for (int il = 0; !o && il < j->m->hp.n_layer; il++)
            for (el_linear lw = EL_LINEAR_Q; !o && lw <= EL_LINEAR_DOWN; lw++) {
                char want[128];
                snprintf(want, sizeof want, "blk.%d.%s", il,
                         el_model_linear_tensor(j->m, lw, &(int64_t){0}));
                if (strcmp(want, name) == 0) o = &j->out[el_linear_slot(il, lw)];
            }
        bool tied = !gguf_find_tensor(g, "output.weight");
        if (!strcmp(name, "output.weight") || (tied && !strcmp(name, "token_embd.weight")))
            o = j->head.data ? &j->head : NULL;
        else if (!strcmp(name, "token_embd.weight"))
            o = j->embd.data ? &j->embd : NULL;
        st =
            o ? gguf_writer_add_tensor(w, name, o->type, gt->n_dims, gt->ne, o->data, o->nbytes)
              : gguf_writer_add_tensor(w, name, gt->type, gt->n_dims, gt->ne, gt->data, gt->nbytes);
    }
    if (st == EL_OK) st = gguf_writer_write(w, out_path);
    gguf_writer_free(w);
    return st;
}

/* --lora's folder: made if missing, and writable, before the long work. */
static el_status check_lora_out(const el_compress_params *p) {
    const char *dir = p->lora_out_dir;
    if (!dir)
        return el_error(EL_ERR_INVALID_ARG, "compress --lora: a folder for the re-expressed "
                        "adapters is needed (--lora-out DIR)");
    struct stat s;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return el_error(EL_ERR_IO, "%s: cannot make the folder: %s", dir, strerror(errno));
    if (stat(dir, &s) != 0 || !S_ISDIR(s.st_mode))
        return el_error(EL_ERR_IO, "%s: not a folder", dir);
    if (access(dir, W_OK) != 0)
        return el_error(EL_ERR_IO, "%s: cannot write there: %s", dir, strerror(errno));
    return EL_OK;
}

/* The re-expressed adapters, after the model: all or none (a failure removes those written
 * and the model). */
static el_status write_adapters(job *j, const char *out_path) {
    el_status st = EL_OK;
    int32_t i = 0;
    for (; st == EL_OK && i < j->ads.n; i++) {
        st = el_sorted_adapters_write(&j->ads, i, j->basis);
        j->done = 3 + i;
        /* the last one's is el_compress's final report */
        if (st == EL_OK && i + 1 < j->ads.n && !report(j))
            st = el_error(EL_ERR_CANCELLED, "compress cancelled");
    }
    for (int32_t k = 0; st != EL_OK && k < i; k++) unlink(j->ads.out[k]);
    if (st != EL_OK) unlink(out_path);
    return st;
}

el_status el_compress(const char *in_path, const char *out_path, const el_compress_params *p) {
    if (!p->calib_path)
        return el_error(EL_ERR_INVALID_ARG, "compress: calibration text needed (-f FILE)");
    job j = {.p = p, .float_type = EL_TYPE_F16, .basis = el_fnv_offset};
    const char *type = p->type ? p->type : p->group ? NULL : "q4_0";
    if (type && (strcmp(type, "f32") == 0 || strcmp(type, "f16") == 0)) {
        if (p->group)
            return el_error(EL_ERR_INVALID_ARG, "--group %d: %s has no groups", p->group, type);
        j.float_type = type[1] == '3' ? EL_TYPE_F32 : EL_TYPE_F16;
    } else {
        el_status st = el_gptq_grid_get(type, p->group, &j.grid);
        if (st) return st;
        j.gptq = true;
    }
    if (p->head_type && strcasecmp(p->head_type, "q8_0") == 0 && j.gptq)
        j.head_q8 = true;
    else if (p->head_type && !(j.gptq && strcasecmp(p->head_type, type ? type : "") == 0))
        return el_error(EL_ERR_INVALID_ARG, "compress: head type '%s': with --type %s the head "
                        "is %s or q8_0", p->head_type, type ? type : "(by --group)",
                        j.gptq ? "of that type" : "not quantized, so there is no choice");
    if (!(p->damp > 0 && p->damp < 1))
        return el_error(EL_ERR_INVALID_ARG, "compress: damping %g is not in (0, 1)", p->damp);
    if (!(p->ridge > 0))
        return el_error(EL_ERR_INVALID_ARG, "compress: ridge %g is not > 0", p->ridge);
    /* the sorted model (an ordinary GGUF) is written beside the output, then the UniQL layout
     * from it; a killed run's is removed here, as el_output removes its temporaries */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.sorted.tmp", out_path);
    const char *sorted = p->sorted_path ? p->sorted_path : tmp;
    unlink(tmp);
    /* the rates are checked before the long work */
    el_uniql_plan plan;
    const float *rates = p->n_rates ? p->rates : DEFAULT_RATES;
    int32_t n_rates = p->n_rates ? p->n_rates : (int32_t)(sizeof DEFAULT_RATES / sizeof *rates);
    el_hparams any = {.n_layer = 1, .n_ff = 2, .head_dim_k = 2, .head_dim_v = 2};
    el_status st = el_plan_build(&any, rates, n_rates, (el_plan_grain){1, 2, 1}, &plan);
    el_uniql_plan_free(&plan);
    if (st == EL_OK && p->finetune_steps > 0) st = el_masked_finetune_check(p);
    if (st == EL_OK && p->n_loras) st = check_lora_out(p);
    if (st == EL_OK) st = run_layers(&j, in_path);
    if (st == EL_OK) st = make_plan(&j, rates, n_rates, &plan);
    if (st == EL_OK && j.fl) st = finetune_and_quantize(&j, &plan);
    if (st == EL_OK) {
        j.stage = "write";
        j.t0 = el_now_seconds();
        j.done = 0;
        j.total = 2 + j.ads.n;
        st = write_output(&j, sorted);
        j.done = 1;
        if (st == EL_OK && !report(&j)) st = el_error(EL_ERR_CANCELLED, "compress cancelled");
        if (st == EL_OK) st = el_uniql_write(sorted, &plan, out_path);
        if (!p->sorted_path) unlink(tmp);
        j.done = 2;
        if (st == EL_OK) st = write_adapters(&j, out_path);
        if (st == EL_OK) report(&j);
    }
    if (st != EL_OK && j.adapter_written) unlink(p->finetune_adapter_path);
    el_sorted_adapters_free(&j.ads);
    for (int32_t i = 0; j.out && j.m && i < j.m->hp.n_layer * EL_N_LINEAR; i++) free(j.out[i].data);
    free(j.out);
    for (int32_t il = 0; j.fl && il < j.m->hp.n_layer; il++) flayer_free(&j.fl[il]);
    for (int32_t il = 0; j.corr && il < j.m->hp.n_layer; il++) el_layer_corr_free(&j.corr[il]);
    free(j.fl);
    free(j.corr);
    free(j.head.data);
    free(j.embd.data);
    free(j.rope_pairs);
    el_uniql_plan_free(&plan);
    el_model_free(j.m);
    return st;
}
