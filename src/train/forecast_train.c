/* forecast_train.c - training forecast vectors for self-speculative decoding: the base (and the
 * adapter, if one is given) frozen, gradients into the vectors only.
 *
 * An example is a window of the text: a prefix of P tokens (P varies between examples, so the
 * slots learn to follow contexts of many lengths), then the M slots in the rows after it, as
 * decoding appends them after a token; slot j's target is the token j+1 positions after the
 * prefix's last one: the text's, or (the default) the model's own greedy continuation of the
 * prefix, which is what the slots must guess for a candidate to be accepted. Rows after the
 * slots are not in the loss. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/outfile.h"
#include "core/hash.h"
#include "formats/gguf.h"
#include "model/model.h"
#include "model/prune.h"
#include "runtime/adapter.h"
#include "runtime/forecast.h"
#include "train/data.h"
#include "train/export.h"
#include "train/loop.h"

el_forecast_train_params el_forecast_train_default_params(void) {
    return (el_forecast_train_params){.n_slots = 3, .prefix = 0, .text_targets = false};
}

/* What the batch hook needs: the sizes, and for greedy targets a context of the frozen model
 * (with the adapter bound) that continues each prefix. */
typedef struct forecast_job {
    int32_t P, M;           /* longest prefix, slots */
    el_context *ctx;        /* NULL: text targets */
    el_model *model;
    int32_t *pos, *seq;     /* [P] */
    el_status st;           /* the first failure of a hook (the loop cannot return one) */
} forecast_job;

/* The greedy tokens after prefix[0..n): out[0..k). */
static el_status greedy(forecast_job *j, const int32_t *prefix, int32_t n, int32_t k,
                        int32_t *out) {
    el_kv_seq_remove(j->ctx, 0, 0, -1);
    for (int32_t i = 0; i < n; i++) j->pos[i] = i, j->seq[i] = 0;
    el_batch b = {.n_rows = n, .token = prefix, .pos = j->pos, .seq_id = j->seq};
    el_status st = el_decode(j->ctx, &b);
    int32_t n_vocab = j->model->hp.n_vocab;
    for (int32_t g = 0; !st && g < k; g++) {
        const float *lg = el_get_logits(j->ctx, g == 0 ? n - 1 : 0);
        int32_t best = 0;
        for (int32_t t = 1; t < n_vocab; t++)
            if (lg[t] > lg[best]) best = t;
        out[g] = best;
        if (g + 1 < k) {
            int32_t p = n + g;
            el_batch one = {.n_rows = 1, .token = &best, .pos = &p, .seq_id = j->seq};
            st = el_decode(j->ctx, &one);
        }
    }
    return st;
}

/* Turns loader items of P + M tokens into forecast examples (el_batch_hook). */
static void shape_batch(void *user, int32_t B, int32_t T, int32_t *tok, int32_t *tgt,
                        float *mask) {
    forecast_job *j = user;
    for (int32_t b = 0; b < B; b++) {
        int32_t *t = tok + (size_t)b * T, *y = tgt + (size_t)b * T;
        float *w = mask + (size_t)b * T;
        /* the prefix length from the window's own tokens: the same after a resume */
        uint64_t h = el_fnv1a(el_fnv_offset, t, (size_t)T * sizeof *t);
        int32_t lo = j->P / 4 > 1 ? j->P / 4 : 1, P = lo + (int32_t)(h % (uint64_t)(j->P - lo + 1));
        int32_t cont[EL_SPEC_MAX_DEPTH + 1];
        if (j->ctx && !j->st) j->st = greedy(j, t, P, j->M + 1, cont);
        for (int32_t r = 0; r < T; r++) {
            bool slot = r >= P && r < P + j->M;
            w[r] = slot ? 1.0f : 0.0f;
            if (!slot) continue;
            int32_t k = r - P;      /* slot k + 1 */
            t[r] = -1 - k;
            if (j->ctx) y[r] = cont[k + 1]; /* else the text's next token, as the loader gave */
        }
    }
}

static el_status write_forecast(const el_tmodel *m, const el_model *base, const char *base_path,
                                const el_adapter *ad, const char *adapter_path, bool text,
                                const char *out_path) {
    gguf_writer *w = gguf_writer_create();
    if (!w) return el_error(EL_ERR_NOMEM, "%s: out of memory", out_path);
    const char *bn = strrchr(base_path, '/') ? strrchr(base_path, '/') + 1 : base_path;
    int64_t ne[2] = {m->c.dim, m->forecast.t[0].n_out};
    el_status st = gguf_writer_set_str(w, "general.architecture", base->arch);
    if (!st) st = gguf_writer_set_str(w, "general.type", "forecast");
    if (!st) st = gguf_writer_set_u32(w, "forecast.n_slots", (uint32_t)ne[1]);
    if (!st) st = gguf_writer_set_u64(w, "forecast.base.fingerprint", el_model_fingerprint(base));
    if (!st) st = gguf_writer_set_str(w, "forecast.base.name", bn);
    if (!st) st = gguf_writer_set_str(w, "forecast.targets", text ? "text" : "greedy");
    if (!st && ad) {
        const char *an = strrchr(adapter_path, '/') ? strrchr(adapter_path, '/') + 1 : adapter_path;
        st = gguf_writer_set_u64(w, "forecast.adapter.fingerprint", el_adapter_fingerprint(ad));
        if (!st) st = gguf_writer_set_str(w, "forecast.adapter.name", an);
    }
    if (!st)
        st = gguf_writer_add_tensor(w, EL_FORECAST_TENSOR, EL_TYPE_F32, 2, ne, m->fw,
                                    m->forecast.n_floats * sizeof(float));
    if (!st) st = gguf_writer_write(w, out_path);
    gguf_writer_free(w);
    return st;
}

el_status el_train_forecast(const el_train_params *p, const el_forecast_train_params *fp,
                            const char *out_path) {
    if (!p || !fp || !fp->base_path || !out_path)
        return el_error(EL_ERR_INVALID_ARG, "el_train_forecast: NULL argument");
    if (fp->n_slots < 1 || fp->n_slots > EL_SPEC_MAX_DEPTH)
        return el_error(EL_ERR_INVALID_ARG, "--slots %d: must be 1..%d", fp->n_slots,
                        EL_SPEC_MAX_DEPTH);
    el_status st = el_outfile_check_folder(out_path);
    if (!st && p->checkpoint_path) st = el_outfile_check_folder(p->checkpoint_path);
    if (!st && p->plot_path) st = el_outfile_check_folder(p->plot_path);
    if (st) return st;
    el_model *base = NULL;
    el_adapter *ad = NULL;
    if ((st = el_model_load(fp->base_path, NULL, &base))) return st;
    if ((st = el_prune_refuse(base, "training a forecast set"))) {
        el_model_free(base);
        return st;
    }
    if (fp->adapter_path && (st = el_adapter_load(base, fp->adapter_path, &ad))) {
        el_model_free(base);
        return st;
    }
    int32_t ctx = base->hp.n_ctx_train, M = fp->n_slots;
    int32_t P = fp->prefix > 0 ? fp->prefix : (ctx - M - 1 < 64 ? ctx - M - 1 : 64);
    if (P < 2 || P + M + 1 > ctx) {
        st = el_error(EL_ERR_INVALID_ARG, "a prefix of %d tokens and %d slots do not fit the "
                      "model's context of %d", P, M, ctx);
    }
    el_tdata dtrain = {0}, deval = {0};
    el_loader ltrain = {0}, leval = {0};
    el_tmodel m = {0};
    el_trainer tr = {0};
    el_threadpool *tp = NULL;
    forecast_job job = {.P = P, .M = M, .model = base};
    if (!st && !fp->text_targets) {
        el_context_params cp = el_context_default_params();
        cp.n_ctx = P + M + 1, cp.n_batch = P, cp.n_seq_max = 1, cp.n_threads = p->n_threads;
        el_binding bind = {ad, 1.0f};
        job.pos = malloc((size_t)P * sizeof *job.pos), job.seq = malloc((size_t)P * sizeof *job.seq);
        if (!job.pos || !job.seq) st = el_error(EL_ERR_NOMEM, "out of memory");
        if (!st) st = el_context_create(base, &cp, &job.ctx);
        if (!st && ad) st = el_context_bind(job.ctx, 0, &bind, 1);
    }
    int32_t T = P + M;
    bool stop = false;
    if (!st) st = el_tmodel_from_model(&m, base, T);
    if (!st && ad) st = el_tmodel_add_adapter(&m, ad, fp->adapter_path);
    if (!st) st = el_tmodel_add_forecast(&m, M, p->seed);
    if (!st) st = el_tdata_load_stream(&dtrain, p->train_files, p->n_train_files, base,
                                       base->hp.n_vocab);
    if (!st) st = el_tdata_load_stream(&deval, p->eval_files, p->n_eval_files, base,
                                       base->hp.n_vocab);
    if (!st) st = el_loader_init(&ltrain, &dtrain, T, p->seed, true, "training data");
    if (!st && p->n_eval_files > 0)
        st = el_loader_init(&leval, &deval, T, p->seed, false, "held-out data");
    if (!st) st = el_train_threads(p->n_threads, &tp);
    el_trainer_hp hp = el_trainer_hp_from(p, T);
    if (!st) st = el_trainer_init(&tr, &m, EL_TRAIN_FORECAST, &hp, tp);
    el_batch_hook hook = {shape_batch, &job};
    if (!st)
        st = el_train_loop(p, &tr, &ltrain, p->n_eval_files > 0 ? &leval : NULL,
                           "forecast loss (slot tokens)", &hook, &stop);
    if (!st) st = job.st;
    if (!st && stop)
        st = el_error(EL_ERR_CANCELLED, "%s: training stopped by its progress callback; nothing "
                      "written%s%s", out_path, p->checkpoint_path ? "; resume from " : "",
                      p->checkpoint_path ? p->checkpoint_path : "");
    if (!st)
        st = write_forecast(&m, base, fp->base_path, ad, fp->adapter_path, fp->text_targets,
                            out_path);
    el_trainer_free(&tr);
    el_threadpool_free(tp);
    el_loader_free(&ltrain);
    el_loader_free(&leval);
    el_tdata_free(&dtrain);
    el_tdata_free(&deval);
    el_tmodel_free(&m);
    el_context_free(job.ctx);
    free(job.pos);
    free(job.seq);
    el_adapter_free(ad);
    el_model_free(base);
    return st;
}
