/* test_train_lora.c - LoRA fine-tuning through the public API (el_finetune_lora) and the adapter
 * it writes, run by the inference runtime:
 *  - the response loss falls, and the adapter GGUF has llama.cpp's keys and shapes;
 *  - the runtime (el_adapter_load + el_context_bind) with the trained adapter gives the logits
 *    of the training forward with the same LoRA, from the GGUF adapter and from the PEFT folder
 *    (whose q/k rows are in Hugging Face order: the loader must undo what the writer did), and
 *    the merged model (el_merge_adapters) without adapters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelora-tools.h"
#include "formats/gguf.h"
#include "model/model.h"
#include "testutil.h"
#include "train/export.h"

static char dir[1024], tok[1100], base[1100], data[1100], adapter[1100], peft[1100];

static const char *const pairs[][2] = {
    {"colour of the sky:", " blue"},   {"colour of grass:", " green"},
    {"colour of snow:", " white"},     {"colour of the sun:", " yellow"},
    {"colour of coal:", " black"},     {"colour of blood:", " red"},
};

static int write_files(void) {
    snprintf(dir, sizeof dir, "%s", test_tmp_dir());
    snprintf(tok, sizeof tok, "%s/tok.gguf", dir);
    snprintf(base, sizeof base, "%s/base.gguf", dir);
    snprintf(data, sizeof data, "%s/data.jsonl", dir);
    snprintf(adapter, sizeof adapter, "%s/adapter.gguf", dir);
    snprintf(peft, sizeof peft, "%s/peft", dir);
    char text[1100];
    snprintf(text, sizeof text, "%s/text.txt", dir);
    FILE *f = fopen(text, "w"), *j = fopen(data, "w");
    CHECK(f && j);
    for (int r = 0; r < 40; r++)
        for (int i = 0; i < 6; i++)
            fprintf(f, "the %s%s. ", pairs[i][0], pairs[(i + r) % 6][1]);
    for (int i = 0; i < 6; i++)
        fprintf(j, "{\"prompt\": \"%s\", \"response\": \"%s\"}\n", pairs[i][0], pairs[i][1]);
    fprintf(j, "\n"); /* a blank line is allowed */
    fclose(f);
    fclose(j);
    const char *files[1] = {text};
    CHECK(el_train_tokenizer(files, 1, 300, tok) == EL_OK);
    el_train_params p = el_train_default_params();
    p.dim = 32, p.n_layer = 2, p.n_head = 4, p.n_head_kv = 2, p.n_ff = 64, p.n_ctx = 32;
    p.tied_embeddings = false;
    p.tokenizer_path = tok;
    p.train_files = files, p.n_train_files = 1;
    p.n_steps = 60, p.batch = 4, p.lr = 1e-2f, p.n_threads = 2;
    CHECK(el_train(&p, base) == EL_OK);
    return TEST_PASS;
}

typedef struct losses {
    float first, last;
} losses;

static bool record(void *user, const el_train_progress *pr) {
    losses *l = user;
    if (pr->step == 1)
        l->first = pr->loss;
    l->last = pr->loss;
    return true;
}

static int test_finetune(void) {
    CHECK(write_files() == TEST_PASS);
    el_train_params p = el_train_default_params();
    const char *files[1] = {data};
    p.train_files = files, p.n_train_files = 1;
    p.n_ctx = 16, p.n_steps = 100, p.batch = 3, p.lr = 2e-2f, p.warmup = 2, p.n_threads = 2;
    p.weight_decay = 0.0f;
    losses l = {0};
    p.progress = record, p.user = &l;
    el_lora_train_params lp = el_lora_train_default_params();
    lp.base_path = base, lp.rank = 4, lp.alpha = 8, lp.targets = "q,k,v,o,gate,up,down";
    lp.peft_dir = peft;
    CHECK(el_finetune_lora(&p, &lp, adapter) == EL_OK);
    test_note("response loss %.3f -> %.3f", l.first, l.last);
    CHECK(l.last < 0.5f * l.first);

    gguf_file *g;
    CHECK(gguf_open(adapter, &g) == EL_OK);
    gguf_str s;
    float alpha;
    CHECK(gguf_get_str(g, "general.type", &s) == EL_OK && gguf_str_eq(s, "adapter"));
    CHECK(gguf_get_str(g, "adapter.type", &s) == EL_OK && gguf_str_eq(s, "lora"));
    CHECK(gguf_get_f32(g, "adapter.lora.alpha", &alpha) == EL_OK && alpha == 8.0f);
    const gguf_tensor *a = gguf_find_tensor(g, "blk.1.ffn_down.weight.lora_a");
    const gguf_tensor *b = gguf_find_tensor(g, "blk.1.ffn_down.weight.lora_b");
    CHECK(a && b && a->ne[0] == 64 && a->ne[1] == 4 && b->ne[0] == 4 && b->ne[1] == 32);
    CHECK(g->n_tensors == 2 * 7 * 2);
    gguf_close(g);
    return TEST_PASS;
}

/* The training forward's logits with the adapter's A and B (read from the GGUF). */
static float *training_logits(const el_model *m, const int32_t *ids, int32_t n) {
    el_tmodel tm;
    if (el_tmodel_from_model(&tm, m, n) != EL_OK)
        return NULL;
    gguf_file *g;
    float *logits = NULL;
    if (el_tmodel_add_lora(&tm, 4, 8.0f, 0x7f, 0) == EL_OK && gguf_open(adapter, &g) == EL_OK) {
        bool ok = true;
        for (int32_t i = 0; i < tm.lora.n && ok; i++) {
            const gguf_tensor *t = gguf_find_tensor(g, tm.lora.t[i].name);
            ok = t && t->nbytes == (uint64_t)(tm.lora.t[i].n_in * tm.lora.t[i].n_out) * 4;
            if (ok)
                memcpy(tm.lw + tm.lora.t[i].offset, t->data, t->nbytes);
        }
        gguf_close(g);
        el_threadpool *tp;
        el_tacts *acts;
        if (ok && el_threadpool_create(1, &tp) == EL_OK) {
            if (el_tacts_create(&tm, 1, n, &acts) == EL_OK) {
                logits = malloc((size_t)n * tm.c.n_vocab * sizeof *logits);
                el_tmodel_forward(&tm, acts, tp, ids, NULL, NULL, logits);
                el_tacts_free(acts);
            }
            el_threadpool_free(tp);
        }
    }
    el_tmodel_free(&tm);
    return logits;
}

/* adapter_path NULL: the merged model (el_merge_adapters of base + the GGUF adapter) bare */
static int runtime_matches(const char *adapter_path, const char *what) {
    el_model *m;
    el_model_params mp = el_model_default_params();
    char merged[1200];
    snprintf(merged, sizeof merged, "%s/merged.gguf", dir);
    if (!adapter_path) {
        const char *ads[1] = {adapter};
        float scales[1] = {1.0f};
        CHECK(el_merge_adapters(base, ads, scales, 1, merged) == EL_OK);
    }
    CHECK(el_model_load(adapter_path ? base : merged, &mp, &m) == EL_OK);
    el_adapter *ad = NULL;
    el_status st = adapter_path ? el_adapter_load_exact(m, adapter_path, &ad) : EL_OK;
    if (st)
        test_note("%s: %s", what, el_last_error());
    CHECK(st == EL_OK);
    const char *text = "colour of snow: white";
    int32_t ids[32];
    size_t n;
    CHECK(el_tokenize(m, text, strlen(text), true, false, ids, 32, &n) == EL_OK);
    el_model *bm; /* the training forward runs on the base + the adapter's A and B */
    CHECK(el_model_load(base, &mp, &bm) == EL_OK);
    float *want = training_logits(bm, ids, (int32_t)n);
    el_model_free(bm);
    CHECK(want != NULL);
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 32, cp.n_batch = 32, cp.n_threads = 1;
    cp.kv_type = EL_KV_F32; /* the training forward keeps K and V in float */
    el_context *ctx;
    CHECK(el_context_create(m, &cp, &ctx) == EL_OK);
    el_binding bind = {ad, 1.0f};
    CHECK(!ad || el_context_bind(ctx, 0, &bind, 1) == EL_OK);
    int32_t pos[32], seq[32];
    int8_t lg[32];
    for (size_t i = 0; i < n; i++)
        pos[i] = (int32_t)i, seq[i] = 0, lg[i] = 1;
    el_batch b = {.n_rows = (int32_t)n, .token = ids, .pos = pos, .seq_id = seq, .logits = lg};
    CHECK(el_decode(ctx, &b) == EL_OK);
    int32_t V = m->hp.n_vocab;
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, test_max_rel_err(el_get_logits(ctx, (int32_t)i), want + i * V,
                                             (size_t)V));
    test_note("%s adapter: runtime vs training forward, max rel err %.2g", what, worst);
    CHECK(worst < 1e-4);
    el_context_free(ctx);
    if (ad)
        el_adapter_free(ad);
    free(want);
    el_model_free(m);
    return TEST_PASS;
}

/* A loaded adapter put into the training model (el_tmodel_add_adapter, as forecast training
 * through an adapter does) gives the runtime's logits with that adapter bound. */
static int test_tmodel_from_adapter(void) {
    el_model *m;
    el_adapter *ad;
    CHECK(el_model_load(base, NULL, &m) == EL_OK && el_adapter_load(m, adapter, &ad) == EL_OK);
    const char *text = "colour of snow: white";
    int32_t ids[32], pos[32], seq[32];
    int8_t lg[32];
    size_t n;
    CHECK(el_tokenize(m, text, strlen(text), true, false, ids, 32, &n) == EL_OK);
    el_tmodel tm;
    el_threadpool *tp;
    el_tacts *acts;
    CHECK(el_tmodel_from_model(&tm, m, (int32_t)n) == EL_OK);
    CHECK(el_tmodel_add_adapter(&tm, ad, adapter) == EL_OK);
    CHECK(el_threadpool_create(1, &tp) == EL_OK && el_tacts_create(&tm, 1, (int32_t)n, &acts) == EL_OK);
    int32_t V = m->hp.n_vocab;
    float *want = malloc(n * (size_t)V * sizeof *want);
    CHECK(want);
    el_tmodel_forward(&tm, acts, tp, ids, NULL, NULL, want);
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 32, cp.n_batch = 32, cp.n_threads = 1, cp.kv_type = EL_KV_F32;
    el_context *ctx;
    el_binding bind = {ad, 1.0f};
    CHECK(el_context_create(m, &cp, &ctx) == EL_OK && el_context_bind(ctx, 0, &bind, 1) == EL_OK);
    for (size_t i = 0; i < n; i++) pos[i] = (int32_t)i, seq[i] = 0, lg[i] = 1;
    el_batch b = {.n_rows = (int32_t)n, .token = ids, .pos = pos, .seq_id = seq, .logits = lg};
    CHECK(el_decode(ctx, &b) == EL_OK);
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, test_max_rel_err(el_get_logits(ctx, (int32_t)i), want + i * V, V));
    test_note("adapter in the training model: runtime vs training forward, max rel err %.2g", worst);
    CHECK(worst < 1e-4);
    free(want);
    el_tacts_free(acts);
    el_threadpool_free(tp);
    el_tmodel_free(&tm);
    el_context_free(ctx);
    el_adapter_free(ad);
    el_model_free(m);
    return TEST_PASS;
}

/* The runtime's log-softmax over the vocabulary at each row of text with adapter ad bound (or
 * none): logp[n][V]. */
static double *runtime_logprobs(el_model *m, el_adapter *ad, const int32_t *ids, size_t n) {
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 32, cp.n_batch = 32, cp.n_threads = 1;
    el_context *ctx;
    el_binding bind = {ad, 1.0f};
    if (el_context_create(m, &cp, &ctx) != EL_OK) return NULL;
    int32_t pos[32], seq[32], V = m->hp.n_vocab;
    int8_t lg[32];
    for (size_t i = 0; i < n; i++) pos[i] = (int32_t)i, seq[i] = 0, lg[i] = 1;
    el_batch b = {.n_rows = (int32_t)n, .token = ids, .pos = pos, .seq_id = seq, .logits = lg};
    double *lp = malloc(n * (size_t)V * sizeof *lp);
    if (!lp || (ad && el_context_bind(ctx, 0, &bind, 1) != EL_OK) || el_decode(ctx, &b) != EL_OK) {
        free(lp);
        lp = NULL;
    }
    for (size_t i = 0; lp && i < n; i++) {
        const float *z = el_get_logits(ctx, (int32_t)i);
        double mx = z[0], sum = 0;
        for (int32_t v = 1; v < V; v++) mx = fmax(mx, z[v]);
        for (int32_t v = 0; v < V; v++) sum += exp(z[v] - mx);
        for (int32_t v = 0; v < V; v++) lp[i * V + v] = z[v] - mx - log(sum);
    }
    el_context_free(ctx);
    return lp;
}

/* KL(teacher || student) summed over the rows of every pair that predict its response and the
 * end of sequence (the examples as training reads them: the prompt with BOS, the response, EOS),
 * from the runtime's logits: teacher the base with the trained adapter, student the base with
 * adapter path s (NULL: bare). */
static double runtime_kl(const char *s) {
    el_model *m;
    el_adapter *ta = NULL, *sa = NULL;
    double kl = -1;
    if (el_model_load(base, NULL, &m) != EL_OK) return -1;
    int32_t V = m->hp.n_vocab, eos = el_token_eos(m);
    if (eos >= 0 && el_adapter_load(m, adapter, &ta) == EL_OK &&
        (!s || el_adapter_load(m, s, &sa) == EL_OK)) {
        kl = 0;
        for (int i = 0; i < 6 && kl >= 0; i++) {
            int32_t ids[32];
            size_t np, nr;
            if (el_tokenize(m, pairs[i][0], strlen(pairs[i][0]), true, false, ids, 31, &np) ||
                el_tokenize(m, pairs[i][1], strlen(pairs[i][1]), false, false, ids + np, 31 - np,
                            &nr)) {
                kl = -1;
                break;
            }
            size_t n = np + nr + 1;
            ids[n - 1] = eos;
            double *p = runtime_logprobs(m, ta, ids, n), *q = runtime_logprobs(m, sa, ids, n);
            for (size_t r = np - 1; p && q && r + 1 < n; r++)
                for (int32_t v = 0; v < V; v++)
                    kl += exp(p[r * V + v]) * (p[r * V + v] - q[r * V + v]);
            if (!p || !q) kl = -1;
            free(p);
            free(q);
        }
    }
    el_adapter_free(sa);
    el_adapter_free(ta);
    el_model_free(m);
    return kl;
}

/* finetune with a teacher (the base with the trained adapter) learns the teacher's
 * distributions: the runtime's KL(teacher || student) over the response rows falls from the
 * bare base's; with the bare base itself as teacher the first step's loss is 0, which a
 * cross-entropy would not be. */
static int test_distill(void) {
    char student[1200], other_tok[1200], other[1200], text[1200];
    snprintf(student, sizeof student, "%s/student.gguf", dir);
    el_train_params p = el_train_default_params();
    const char *files[1] = {data};
    p.train_files = files, p.n_train_files = 1;
    p.n_ctx = 16, p.n_steps = 60, p.batch = 3, p.lr = 2e-2f, p.warmup = 2, p.n_threads = 2;
    p.weight_decay = 0.0f, p.seed = 7;
    losses l = {0};
    p.progress = record, p.user = &l;
    el_lora_train_params lp = el_lora_train_default_params();
    lp.base_path = base, lp.rank = 4, lp.alpha = 8, lp.targets = "q,k,v,o,gate,up,down";
    lp.teacher_path = base, lp.teacher_lora_path = adapter;
    CHECK(el_finetune_lora(&p, &lp, student) == EL_OK);
    double before = runtime_kl(NULL), after = runtime_kl(student);
    test_note("KL(teacher || student) over the response rows: bare base %.4f, distilled %.4f "
              "(training loss %.4f -> %.4f)", before, after, l.first, l.last);
    CHECK(before > 0.5 && after >= 0 && after < 0.2 * before);

    lp.teacher_lora_path = NULL, p.n_steps = 2;
    CHECK(el_finetune_lora(&p, &lp, student) == EL_OK);
    test_note("the bare base as its own teacher: first loss %.3g", l.first);
    CHECK(fabsf(l.first) < 1e-6f);

    /* a checkpoint made against one teacher is refused for a run against another */
    char ckpt[1200];
    snprintf(ckpt, sizeof ckpt, "%s/distill.ckpt", dir);
    p.checkpoint_path = ckpt, p.checkpoint_every = 1;
    CHECK(el_finetune_lora(&p, &lp, student) == EL_OK);
    p.resume = true, p.n_steps = 3, lp.teacher_lora_path = adapter;
    el_status st = el_finetune_lora(&p, &lp, student);
    test_note("resumed against another teacher: %s", el_last_error());
    CHECK(st == EL_ERR_MISMATCH && strstr(el_last_error(), "another teacher"));
    p.checkpoint_path = NULL, p.resume = false;

    /* refused: an adapter without a teacher, a teacher of another vocabulary; nothing written */
    remove(student);
    lp.teacher_path = NULL, lp.teacher_lora_path = adapter;
    CHECK(el_finetune_lora(&p, &lp, student) == EL_ERR_INVALID_ARG);
    snprintf(text, sizeof text, "%s/text.txt", dir);
    snprintf(other_tok, sizeof other_tok, "%s/other_tok.gguf", dir);
    snprintf(other, sizeof other, "%s/other.gguf", dir);
    const char *tfiles[1] = {text};
    CHECK(el_train_tokenizer(tfiles, 1, 280, other_tok) == EL_OK);
    el_train_params op = el_train_default_params();
    op.dim = 32, op.n_layer = 1, op.n_head = 4, op.n_head_kv = 2, op.n_ff = 64, op.n_ctx = 32;
    op.tokenizer_path = other_tok, op.train_files = tfiles, op.n_train_files = 1, op.n_steps = 1;
    CHECK(el_train(&op, other) == EL_OK);
    lp.teacher_path = other, lp.teacher_lora_path = NULL;
    st = el_finetune_lora(&p, &lp, student);
    test_note("another vocabulary: %s", el_last_error());
    CHECK(st == EL_ERR_MISMATCH && strstr(el_last_error(), other));
    FILE *f = fopen(student, "rb");
    CHECK(!f);
    return TEST_PASS;
}

static int test_runtime_gguf(void) { return runtime_matches(adapter, "GGUF"); }
static int test_runtime_peft(void) { return runtime_matches(peft, "PEFT"); }
static int test_merged(void) { return runtime_matches(NULL, "merged"); }

int main(void) {
    run_test("finetune_lora_response_loss_and_layout", test_finetune);
    run_test("runtime_gguf_adapter_equals_training_forward", test_runtime_gguf);
    run_test("runtime_peft_adapter_equals_training_forward", test_runtime_peft);
    run_test("merged_model_equals_training_forward", test_merged);
    run_test("adapter_in_training_model_equals_runtime", test_tmodel_from_adapter);
    run_test("finetune_distills_from_a_teacher", test_distill);
    return tests_exit_code();
}
