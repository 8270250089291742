/* api.c - the public training entry points: el_train (pretraining) and el_finetune_lora. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/outfile.h"
#include "model/model.h"
#include "model/profile.h"
#include "model/prune.h"
#include "runtime/adapter.h"
#include "train/export.h"
#include "train/loop.h"

/* How far each training forward moves a tracked QAT scale: PyTorch's moving-average observer's
 * rate, which lets the scale follow a model whose ranges change as it learns. */
static const float qat_momentum = 0.01f;

el_train_params el_train_default_params(void) {
    el_train_params p = {
        .dim = 64, .n_layer = 2, .n_head = 4, .n_head_kv = 4, .n_ff = 172, .n_ctx = 64,
        .tied_embeddings = true, .n_steps = 100, .batch = 8, .grad_accum = 1, .lr = 1e-3f,
        .min_lr_ratio = 0.1f, .warmup = 10, .weight_decay = 0.1f, .beta1 = 0.9f,
        .beta2 = 0.95f, .eps = 1e-8f, .grad_clip = 1.0f, .eval_every = 50, .eval_batches = 4,
        .seed = 1,
    };
    return p;
}

el_lora_train_params el_lora_train_default_params(void) {
    el_lora_train_params p = {.rank = 8, .alpha = 16.0f, .targets = "q,k,v,o"};
    return p;
}

static el_status check_common(const el_train_params *p) {
    if (!p || p->n_train_files <= 0 || !p->train_files)
        return el_error(EL_ERR_INVALID_ARG, "no training data files given");
    if (p->n_steps <= 0 || p->batch <= 0 || p->grad_accum <= 0 || p->warmup < 0 ||
        !(p->lr > 0) || p->eval_every < 0 || p->checkpoint_every < 0)
        return el_error(EL_ERR_INVALID_ARG, "steps, batch, accumulation and lr must be positive; "
                        "warmup and intervals not negative");
    if (p->resume && !p->checkpoint_path)
        return el_error(EL_ERR_INVALID_ARG, "resuming needs a checkpoint path");
    return EL_OK;
}

/* A run that cannot write its result would find out only at its end: every file it will
 * write is checked before it starts. */
static el_status check_outputs(const el_train_params *p, const char *out_path) {
    el_status st = el_outfile_check_folder(out_path);
    if (st == EL_OK && p->checkpoint_path) st = el_outfile_check_folder(p->checkpoint_path);
    if (st == EL_OK && p->plot_path) st = el_outfile_check_folder(p->plot_path);
    return st;
}

/* What a training run holds between its start and its end: data, loaders, model, trainer and
 * threads. Zero-initialized, it frees cleanly at any stage of setup. */
typedef struct train_run {
    el_tdata dtrain, deval;
    el_loader ltrain, leval;
    el_tmodel m;
    el_trainer tr;
    el_threadpool *tp;
} train_run;

/* The loaders over the loaded data (held-out only if there are eval files) and the threads. */
static el_status run_start(train_run *r, const el_train_params *p, int n_ctx) {
    el_status st = el_loader_init(&r->ltrain, &r->dtrain, n_ctx, p->seed, true, "training data");
    if (st == EL_OK && p->n_eval_files > 0)
        st = el_loader_init(&r->leval, &r->deval, n_ctx, p->seed, false, "held-out data");
    if (st == EL_OK)
        st = el_train_threads(p->n_threads, &r->tp);
    return st;
}

/* Trains r->m as set up (lora: only its adapter; against teacher if not NULL) and says whether
 * a stop was asked for. */
static el_status run_loop(train_run *r, const el_train_params *p, el_train_block block,
                          const el_tmodel *teacher, const char *what, bool *stop) {
    el_trainer_hp hp = el_trainer_hp_from(p, r->m.c.n_ctx);
    el_status st = el_trainer_init(&r->tr, &r->m, block, &hp, r->tp);
    if (st == EL_OK && teacher)
        st = el_trainer_set_teacher(&r->tr, teacher);
    if (st == EL_OK)
        st = el_train_loop(p, &r->tr, &r->ltrain, p->n_eval_files > 0 ? &r->leval : NULL, what,
                           NULL, stop);
    return st;
}

static void run_free(train_run *r) {
    el_trainer_free(&r->tr);
    el_threadpool_free(r->tp);
    el_loader_free(&r->ltrain);
    el_loader_free(&r->leval);
    el_tdata_free(&r->dtrain);
    el_tdata_free(&r->deval);
    el_tmodel_free(&r->m);
}

/* The model file's name without folders, for general.name. */
static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The status of a run that run_loop ended with stop set: cancelled, with what was kept. */
static el_status cancelled(const el_train_params *p, const char *out_path) {
    return el_error(EL_ERR_CANCELLED, "%s: training stopped by its progress callback; nothing "
                    "written%s%s", out_path, p->checkpoint_path ? "; resume from " : "",
                    p->checkpoint_path ? p->checkpoint_path : "");
}

/* The model training starts from: p's shape with random weights (seed), or p->init_path's
 * weights, widened to p->init_n_ff; and the vocabulary the data is read with. */
static el_status start_model(const el_train_params *p, el_tmodel *m, el_model **vocab) {
    el_model_params mp = el_model_default_params();
    mp.vocab_only = !p->init_path;
    el_status st = el_model_load(p->init_path ? p->init_path : p->tokenizer_path, &mp, vocab);
    if (st) return st;
    if (p->init_path) {
        int32_t n_ff = p->init_n_ff > 0 ? p->init_n_ff : (*vocab)->hp.n_ff;
        st = el_prune_refuse(*vocab, "training");
        return st ? st : el_tmodel_widen_from_model(m, *vocab, n_ff, p->seed);
    }
    el_tconfig c = {.dim = p->dim, .n_layer = p->n_layer, .n_head = p->n_head,
                    .n_head_kv = p->n_head_kv, .n_ff = p->n_ff, .n_ctx = p->n_ctx,
                    .n_vocab = (*vocab)->hp.n_vocab, .tied = p->tied_embeddings,
                    .rms_eps = 1e-5f, .rope_base = 10000.0f};
    if ((st = el_tmodel_init(m, &c)) == EL_OK) el_tmodel_randomize(m, p->seed);
    return st;
}

el_status el_train(const el_train_params *p, const char *out_path) {
    el_status st = check_common(p);
    if (st == EL_OK)
        st = check_outputs(p, out_path);
    if (st)
        return st;
    const char *tokenizer = p->init_path ? p->init_path : p->tokenizer_path;
    if (!tokenizer)
        return el_error(EL_ERR_INVALID_ARG, "training needs a tokenizer (a GGUF vocabulary)");
    if (p->qat && strcmp(p->qat, "w4a8") != 0)
        return el_error(EL_ERR_INVALID_ARG, "quantization-aware training '%s': the one kind is "
                        "w4a8", p->qat);
    bool stop = false;
    el_model *vocab = NULL;
    train_run r = {0};
    if ((st = start_model(p, &r.m, &vocab)) == EL_OK &&
        (st = p->qat ? el_tmodel_set_qat(&r.m, true, qat_momentum) : EL_OK) == EL_OK &&
        (st = el_tdata_load_stream(&r.dtrain, p->train_files, p->n_train_files, vocab,
                                   r.m.c.n_vocab)) == EL_OK &&
        (st = el_tdata_load_stream(&r.deval, p->eval_files, p->n_eval_files, vocab,
                                   r.m.c.n_vocab)) == EL_OK &&
        (st = run_start(&r, p, r.m.c.n_ctx)) == EL_OK &&
        (st = run_loop(&r, p, EL_TRAIN_BASE, NULL, "pretraining loss", &stop)) == EL_OK)
        st = stop ? cancelled(p, out_path)
                  : el_export_model(&r.m, tokenizer, base_name(out_path), out_path);
    run_free(&r);
    el_model_free(vocab);
    return st;
}

/* The distillation teacher of a fine-tuning of base (none without lp->teacher_path): lp's
 * teacher model (its float weights) with its adapter, at context n_ctx; the model and adapter
 * files are not kept. */
static el_status load_teacher(const el_lora_train_params *lp, const el_model *base,
                              int32_t n_ctx, el_tmodel *teacher) {
    if (!lp->teacher_path) return EL_OK;
    el_model *m = NULL;
    el_adapter *ad = NULL;
    el_model_params mp = el_model_default_params();
    el_status st = el_model_load(lp->teacher_path, &mp, &m);
    if (st == EL_OK && !el_vocab_same(m->vocab, base->vocab))
        st = el_error(EL_ERR_MISMATCH, "%s: the teacher's vocabulary is not the one of %s (its "
                      "token ids would mean other tokens)", lp->teacher_path, lp->base_path);
    if (st == EL_OK) st = el_prune_refuse(m, "a distillation teacher");
    if (st == EL_OK) st = el_tmodel_from_model(teacher, m, n_ctx);
    if (st == EL_OK && lp->teacher_lora_path &&
        (st = el_adapter_load_exact(m, lp->teacher_lora_path, &ad)) == EL_OK)
        st = el_tmodel_add_adapter(teacher, ad, lp->teacher_lora_path);
    el_adapter_free(ad);
    el_model_free(m);
    return st;
}

el_status el_finetune_lora(const el_train_params *p, const el_lora_train_params *lp,
                           const char *out_path) {
    el_status st = check_common(p);
    if (st == EL_OK)
        st = check_outputs(p, out_path);
    if (st)
        return st;
    if (!lp || !lp->base_path || lp->rank <= 0 || !(lp->alpha > 0) || !lp->targets)
        return el_error(EL_ERR_INVALID_ARG, "LoRA training needs a base model, a positive rank "
                        "and alpha, and targets");
    if (lp->teacher_lora_path && !lp->teacher_path)
        return el_error(EL_ERR_INVALID_ARG, "%s: a teacher's adapter without a teacher model",
                        lp->teacher_lora_path);
    uint32_t targets;
    if ((st = el_lora_parse_targets(lp->targets, &targets)))
        return st;
    bool stop = false;
    el_model *base = NULL;
    el_model_params mp = el_model_default_params();
    mp.profile_path = lp->profile_path;
    if ((st = el_model_load(lp->base_path, &mp, &base)))
        return st;
    if ((st = el_prune_refuse(base, "fine-tuning"))) {
        el_model_free(base);
        return st;
    }
    train_run r = {0};
    el_tmodel teacher = {0};
    if ((st = el_tmodel_from_model(&r.m, base, p->n_ctx)) == EL_OK &&
        (st = load_teacher(lp, base, r.m.c.n_ctx, &teacher)) == EL_OK &&
        (st = el_tmodel_add_lora(&r.m, lp->rank, lp->alpha, targets, p->seed)) == EL_OK &&
        (st = lp->qat ? el_tmodel_qat_from_model(&r.m, base) : EL_OK) == EL_OK &&
        (st = el_examples_load(&r.dtrain, p->train_files, p->n_train_files, base)) == EL_OK &&
        (st = el_examples_load(&r.deval, p->eval_files, p->n_eval_files, base)) == EL_OK &&
        (st = run_start(&r, p, r.m.c.n_ctx)) == EL_OK &&
        (st = run_loop(&r, p, EL_TRAIN_LORA, lp->teacher_path ? &teacher : NULL,
                       lp->teacher_path ? "LoRA distillation: KL(teacher || adapter), response "
                                          "tokens"
                                        : "LoRA fine-tuning loss (response tokens)",
                       &stop)) == EL_OK &&
        (st = stop ? cancelled(p, out_path) : EL_OK) == EL_OK) {
        /* tuned on the profile's grids, it is an adapter for that profile */
        uint64_t profile = lp->qat && base->profile ? base->profile->id : 0;
        st = el_export_lora(&r.m, base->arch, profile, base->uniql_basis, out_path);
        if (st == EL_OK && lp->peft_dir)
            st = el_export_peft(&r.m, base_name(lp->base_path), lp->peft_dir);
    }
    run_free(&r);
    el_tmodel_free(&teacher);
    el_model_free(base);
    return st;
}
