/* test_lora_arch.c - LoRA adapters on the qwen3 and phi3 golden models (tests/golden, written by
 * make_golden.py and checked against its float64 forward in test_model_golden.c).
 *  - Runtime == merged: an adapter bound at run time gives the logits of a model this test
 *    merges itself (W + s B A in plain float loops over each stored tensor of the base, from the
 *    matrices it wrote, no adapter code involved), and so does el_merge_adapters's. On phi3 the
 *    adapter targets the fused attn_qkv and ffn_up tensors, whose B the loader splits into the
 *    Q/K/V and gate/up parts' rows while this merge adds B A to the whole fused matrix: the two
 *    agree only if the split matches the base's row ranges.
 *  - PEFT: a phi3 folder with fused qkv_proj / gate_up_proj (and a qwen3 one with q/k/v_proj)
 *    holding the same matrices gives the GGUF adapter's logits.
 *  - Saved as GGUF (el_adapter_save, `edgelora convert PEFT_DIR -m BASE`): phi3's PEFT adapter
 *    becomes attn_qkv / ffn_up pairs, as llama.cpp's converter names them, with the same logits.
 *    A PEFT adapter on phi3's q/k/v_proj and gate/up_proj apart (each part its own lora_A, k_proj
 *    of another rank) becomes the same two pairs, of the parts' ranks summed: this test checks the
 *    names and shapes llama.cpp asks of them (blk.N.attn_qkv.weight.lora_a ne [n_in, rank] and so
 *    on), that the file's alpha / rank * B A is each part's 8 / r_i * B_i A_i in its rows (from
 *    the matrices it wrote, in double), and that the file gives the folder's logits.
 *  - Batch: rows of a sequence with the adapter and of one without, interleaved in one batch,
 *    each give their sequence's logits run alone.
 *  - Variants: three greedy continuations of one prompt on the converted Hugging Face folders
 *    (two with the adapter, one without) each equal a single-sequence run that decodes the prompt,
 *    binds the variant's adapter and feeds the same first token.
 *  - A fused B with the wrong number of rows is refused, naming file and tensor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "edgelora-tools.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "kernels/types.h"
#include "testutil.h"

enum { PROMPT = 7, RANK = 4, N_LAYER = 2, MAX_VOCAB = 300 };
static const int32_t prompt_tokens[PROMPT] = {1, 17, 42, 5, 88, 63, 30};

/* One adapted tensor of a block: its GGUF name, PEFT module and shape. */
typedef struct target {
    const char *gguf, *peft;
    int64_t n_in, n_out;
} target;

typedef struct arch_case {
    const char *base;      /* golden GGUF */
    target targets[8];
    int n_targets;
} arch_case;

/* qwen3_f32_headdim: dim 64, 4 heads of 32, 2 KV heads, ff 96 */
static const arch_case QWEN3 = {
    "tests/golden/qwen3_f32_headdim.gguf",
    {{"attn_q", "self_attn.q_proj", 64, 128}, {"attn_k", "self_attn.k_proj", 64, 64},
     {"attn_v", "self_attn.v_proj", 64, 64}, {"attn_output", "self_attn.o_proj", 128, 64},
     {"ffn_gate", "mlp.gate_proj", 64, 96}, {"ffn_up", "mlp.up_proj", 64, 96},
     {"ffn_down", "mlp.down_proj", 96, 64}},
    7};
/* phi3_f16_longrope: dim 64, 4 heads of 16, 2 KV heads (Q 64 + K 32 + V 32 rows), ff 96 */
static const arch_case PHI3 = {
    "tests/golden/phi3_f16_longrope.gguf",
    {{"attn_qkv", "self_attn.qkv_proj", 64, 128}, {"attn_output", "self_attn.o_proj", 64, 64},
     {"ffn_up", "mlp.gate_up_proj", 64, 192}, {"ffn_down", "mlp.down_proj", 96, 64}},
    4};

/* A and B of target t of block il: A [RANK][n_in], B [n_out][RANK], deterministic. */
static void matrices(const target *t, int il, float *a, float *b) {
    test_rng rng = {(uint64_t)(1000 + il * 31 + t->n_out * 7 + t->n_in)};
    for (int64_t i = 0; i < RANK * t->n_in; i++) a[i] = test_rand_uniform(&rng, -0.3f, 0.3f);
    for (int64_t i = 0; i < t->n_out * RANK; i++) b[i] = test_rand_uniform(&rng, -0.3f, 0.3f);
}

/* The GGUF adapter (f32, alpha 8) of every target of c; b_rows_delta changes the first
 * target's B rows (a damaged file). */
static int write_gguf(const char *path, const char *arch, const arch_case *c, int b_rows_delta) {
    gguf_writer *w = gguf_writer_create();
    int ok = w && gguf_writer_set_str(w, "general.architecture", arch) == EL_OK &&
             gguf_writer_set_str(w, "general.type", "adapter") == EL_OK &&
             gguf_writer_set_str(w, "adapter.type", "lora") == EL_OK &&
             gguf_writer_set_f32(w, "adapter.lora.alpha", 8.0f) == EL_OK;
    float *keep[2 * N_LAYER * 8] = {0};
    int nk = 0;
    for (int il = 0; ok && il < N_LAYER; il++)
        for (int k = 0; ok && k < c->n_targets; k++) {
            const target *t = &c->targets[k];
            int64_t rows = t->n_out + (k == 0 ? b_rows_delta : 0);
            float *a = keep[nk++] = malloc(sizeof(float) * RANK * t->n_in);
            float *b = keep[nk++] = calloc((size_t)(rows > t->n_out ? rows : t->n_out) * RANK,
                                           sizeof(float));
            matrices(t, il, a, b);
            char name[96];
            int64_t ne_a[2] = {t->n_in, RANK}, ne_b[2] = {RANK, rows};
            snprintf(name, sizeof name, "blk.%d.%s.weight.lora_a", il, t->gguf);
            ok &= gguf_writer_add_tensor(w, name, EL_TYPE_F32, 2, ne_a, a,
                                         sizeof(float) * RANK * t->n_in) == EL_OK;
            snprintf(name, sizeof name, "blk.%d.%s.weight.lora_b", il, t->gguf);
            ok &= gguf_writer_add_tensor(w, name, EL_TYPE_F32, 2, ne_b, b,
                                         sizeof(float) * RANK * rows) == EL_OK;
        }
    ok = ok && gguf_writer_write(w, path) == EL_OK;
    gguf_writer_free(w);
    for (int i = 0; i < nk; i++) free(keep[i]);
    return ok;
}

/* The PEFT folder with the same matrices (r 4, lora_alpha 8: the same scale). */
static int write_peft(const char *dir, const arch_case *c) {
    mkdir(dir, 0755);
    char path[1024];
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    fputs("{\"peft_type\": \"LORA\", \"r\": 4, \"lora_alpha\": 8}", f);
    fclose(f);
    el_st_writer *w = el_st_writer_create();
    float *keep[2 * N_LAYER * 8] = {0};
    int nk = 0, ok = w != NULL;
    for (int il = 0; ok && il < N_LAYER; il++)
        for (int k = 0; ok && k < c->n_targets; k++) {
            const target *t = &c->targets[k];
            float *a = keep[nk++] = malloc(sizeof(float) * RANK * t->n_in);
            float *b = keep[nk++] = malloc(sizeof(float) * RANK * t->n_out);
            matrices(t, il, a, b);
            char name[160];
            int64_t sa[2] = {RANK, t->n_in}, sb[2] = {t->n_out, RANK};
            snprintf(name, sizeof name, "base_model.model.model.layers.%d.%s.lora_A.weight", il,
                     t->peft);
            ok &= el_st_writer_add(w, name, EL_ST_F32, 2, sa, a,
                                   (uint64_t)(RANK * t->n_in) * 4) == EL_OK;
            snprintf(name, sizeof name, "base_model.model.model.layers.%d.%s.lora_B.weight", il,
                     t->peft);
            ok &= el_st_writer_add(w, name, EL_ST_F32, 2, sb, b,
                                   (uint64_t)(RANK * t->n_out) * 4) == EL_OK;
        }
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    ok = ok && el_st_writer_write(w, path) == EL_OK;
    el_st_writer_free(w);
    for (int i = 0; i < nk; i++) free(keep[i]);
    return ok;
}

static el_model *load(const char *path) {
    el_model *m = NULL;
    if (el_model_load(path, NULL, &m) != EL_OK) test_note("%s", el_last_error());
    return m;
}

static el_context *new_ctx(el_model *m) {
    el_context_params cp = el_context_default_params();
    cp.n_ctx = 32; /* as test_model_golden's: phi3 takes its long rope factors */
    cp.n_batch = 32;
    cp.n_seq_max = 3;
    cp.n_threads = 2;
    el_context *ctx = NULL;
    if (el_context_create(m, &cp, &ctx) != EL_OK) test_note("%s", el_last_error());
    return ctx;
}

/* Logits of every prompt position into out [PROMPT][n_vocab], with adapter ad (or none). */
static int prompt_logits(el_model *m, el_adapter *ad, int32_t n_vocab, float *out) {
    el_context *ctx = new_ctx(m);
    int32_t pos[PROMPT], seq[PROMPT] = {0};
    int8_t want[PROMPT];
    for (int i = 0; i < PROMPT; i++) {
        pos[i] = i;
        want[i] = 1;
    }
    el_binding bind = {ad, 1.0f};
    el_batch b = {.n_rows = PROMPT, .token = (int32_t *)prompt_tokens, .pos = pos, .seq_id = seq,
                  .logits = want};
    int ok = ctx && el_context_bind(ctx, 0, &bind, ad ? 1 : 0) == EL_OK &&
             el_decode(ctx, &b) == EL_OK;
    for (int i = 0; ok && i < PROMPT; i++)
        memcpy(out + (size_t)i * n_vocab, el_get_logits(ctx, i), sizeof(float) * n_vocab);
    if (!ok) test_note("%s", el_last_error());
    el_context_free(ctx);
    return ok;
}

static int32_t vocab_of(el_model *m) {
    el_model_info info;
    return el_model_get_info(m, &info) == EL_OK ? info.n_vocab : 0;
}

/* The base with every target's W + (alpha / rank) B A (as F32) into path: W from the base's
 * bytes, A and B as write_gguf made them, the product in double. */
static int write_merged(const arch_case *c, const char *path) {
    gguf_file *f = NULL;
    CHECK(gguf_open(c->base, &f) == EL_OK);
    gguf_writer *w = gguf_writer_create();
    CHECK(w && gguf_writer_copy_kv(w, f) == EL_OK);
    float *keep[64] = {0};
    int nk = 0, ok = 1;
    for (uint64_t i = 0; ok && i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        const target *tg = NULL;
        int il = -1;
        for (int k = 0; k < c->n_targets && !tg; k++)
            for (int l = 0; l < N_LAYER && !tg; l++) {
                char want[96];
                snprintf(want, sizeof want, "blk.%d.%s.weight", l, c->targets[k].gguf);
                if (!strcmp(name, want)) tg = &c->targets[k], il = l;
            }
        if (!tg) {
            ok = gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->nbytes) ==
                 EL_OK;
            continue;
        }
        int64_t n_in = tg->n_in, n_out = tg->n_out;
        ok = t->ne[0] == n_in && t->ne[1] == n_out && nk + 3 <= 64;
        float *wf = keep[nk++] = malloc(sizeof(float) * n_in * n_out);
        float *a = keep[nk++] = malloc(sizeof(float) * RANK * n_in);
        float *b = keep[nk++] = malloc(sizeof(float) * RANK * n_out);
        if (!ok) break;
        el_type_kernels_get(t->type)->to_float(t->data, wf, n_in * n_out);
        matrices(tg, il, a, b);
        for (int64_t o = 0; o < n_out; o++)
            for (int64_t x = 0; x < n_in; x++) {
                double sum = 0;
                for (int r = 0; r < RANK; r++) sum += (double)b[o * RANK + r] * a[r * n_in + x];
                wf[o * n_in + x] += (float)(8.0 / RANK * sum);
            }
        ok = gguf_writer_add_tensor(w, name, EL_TYPE_F32, 2, t->ne, wf,
                                    sizeof(float) * n_in * n_out) == EL_OK;
    }
    ok = ok && gguf_writer_write(w, path) == EL_OK;
    gguf_writer_free(w);
    gguf_close(f);
    for (int i = 0; i < nk; i++) free(keep[i]);
    return ok;
}

/* Bound at run time == merged here == merged by el_merge_adapters, for the adapter at path (the
 * matrices of write_gguf) on case c. */
static int check_runtime_vs_merged(const arch_case *c, const char *path) {
    const char *merged = test_tmp_path("merged.gguf"), *ours = test_tmp_path("merged_here.gguf");
    float one = 1.0f;
    if (el_merge_adapters(c->base, &path, &one, 1, merged) != EL_OK) {
        test_note("merge: %s", el_last_error());
        return TEST_FAIL;
    }
    CHECK(write_merged(c, ours));
    el_model *mb = load(c->base), *mm = load(ours), *me = load(merged);
    CHECK(mb && mm && me);
    int32_t nv = vocab_of(mb);
    CHECK(nv > 0 && nv <= MAX_VOCAB);
    static float rt[PROMPT * MAX_VOCAB], ref[PROMPT * MAX_VOCAB], plain[PROMPT * MAX_VOCAB];
    static float el_merged[PROMPT * MAX_VOCAB];
    el_adapter *ad = NULL;
    if (el_adapter_load_exact(mb, path, &ad) != EL_OK) test_note("%s", el_last_error());
    CHECK(ad);
    CHECK(prompt_logits(mb, ad, nv, rt) && prompt_logits(mm, NULL, nv, ref) &&
          prompt_logits(mb, NULL, nv, plain) && prompt_logits(me, NULL, nv, el_merged));
    double err = test_max_rel_err(rt, ref, (size_t)PROMPT * nv);
    double err_merge = test_max_rel_err(el_merged, ref, (size_t)PROMPT * nv);
    double effect = test_max_rel_err(plain, ref, (size_t)PROMPT * nv);
    test_note("%s + %s: runtime vs merged %.2e, el_merge_adapters vs merged %.2e (the adapter "
              "moves the logits %.2e)", c->base, strrchr(path, '/') + 1, err, err_merge, effect);
    el_adapter_free(ad);
    el_model_free(mb);
    el_model_free(mm);
    el_model_free(me);
    remove(merged);
    remove(ours);
    CHECK(err < 1e-4 && err_merge < 1e-4);
    CHECK(effect > 1e-2);
    return TEST_PASS;
}

static int test_qwen3_gguf(void) {
    const char *p = test_tmp_path("qwen3.gguf");
    CHECK(write_gguf(p, "qwen3", &QWEN3, 0));
    return check_runtime_vs_merged(&QWEN3, p);
}

static int test_phi3_gguf_fused(void) {
    const char *p = test_tmp_path("phi3.gguf");
    CHECK(write_gguf(p, "phi3", &PHI3, 0));
    return check_runtime_vs_merged(&PHI3, p);
}

/* The PEFT folder gives the GGUF adapter's logits (and so the merged model's). */
static int check_peft(const arch_case *c, const char *arch) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s_peft", test_tmp_dir(), arch);
    const char *gguf = test_tmp_path("same.gguf");
    CHECK(write_peft(dir, c) && write_gguf(gguf, arch, c, 0));
    el_model *m = load(c->base);
    CHECK(m);
    int32_t nv = vocab_of(m);
    el_adapter *ap = NULL, *ag = NULL;
    if (el_adapter_load_exact(m, dir, &ap) != EL_OK) test_note("%s", el_last_error());
    if (ap && el_adapter_load_exact(m, gguf, &ag) != EL_OK) test_note("%s", el_last_error());
    CHECK(ap && ag);
    el_adapter_info ip, ig;
    CHECK(el_adapter_get_info(ap, &ip) == EL_OK && el_adapter_get_info(ag, &ig) == EL_OK);
    CHECK(ip.n_targets == ig.n_targets && ip.n_targets == 14); /* 7 linears x 2 blocks */
    static float lp[PROMPT * MAX_VOCAB], lg[PROMPT * MAX_VOCAB];
    CHECK(prompt_logits(m, ap, nv, lp) && prompt_logits(m, ag, nv, lg));
    double err = test_max_rel_err(lp, lg, (size_t)PROMPT * nv);
    test_note("%s PEFT vs GGUF: %.2e", arch, err);
    el_adapter_free(ap);
    el_adapter_free(ag);
    el_model_free(m);
    CHECK(err < 1e-6);
    return check_runtime_vs_merged(c, dir);
}

/* PEFT -> GGUF -> loaded again: the same logits, the fused tensors' names. */
static int check_saved(const arch_case *c, const char *arch) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s_peft", test_tmp_dir(), arch);
    const char *saved = test_tmp_path("saved.gguf");
    CHECK(write_peft(dir, c));
    el_model *m = load(c->base);
    CHECK(m);
    int32_t nv = vocab_of(m);
    el_adapter *ap = NULL, *as = NULL;
    CHECK(el_adapter_load_exact(m, dir, &ap) == EL_OK);
    if (el_adapter_save(ap, saved) != EL_OK) test_note("%s", el_last_error());
    if (el_adapter_load_exact(m, saved, &as) != EL_OK) test_note("%s", el_last_error());
    CHECK(as);
    gguf_file *f = NULL;
    CHECK(gguf_open(saved, &f) == EL_OK);
    int found = 0;
    for (int k = 0; k < c->n_targets; k++) {
        char name[96];
        snprintf(name, sizeof name, "blk.1.%s.weight.lora_b", c->targets[k].gguf);
        const gguf_tensor *t = gguf_find_tensor(f, name);
        found += t && t->ne[1] == c->targets[k].n_out;
    }
    int n_tensors = (int)f->n_tensors;
    gguf_close(f);
    CHECK(found == c->n_targets && n_tensors == 2 * N_LAYER * c->n_targets);
    static float lp[PROMPT * MAX_VOCAB], ls[PROMPT * MAX_VOCAB];
    CHECK(prompt_logits(m, ap, nv, lp) && prompt_logits(m, as, nv, ls));
    double err = test_max_rel_err(ls, lp, (size_t)PROMPT * nv);
    test_note("%s PEFT saved as GGUF (%d tensors) vs PEFT: %.2e", arch, n_tensors, err);
    el_adapter_free(ap);
    el_adapter_free(as);
    el_model_free(m);
    CHECK(err < 1e-6);
    return TEST_PASS;
}

static int test_qwen3_saved(void) { return check_saved(&QWEN3, "qwen3"); }
static int test_phi3_saved_fused(void) { return check_saved(&PHI3, "phi3"); }

/* One part of phi3_f16_longrope's fused tensors adapted on its own: PEFT module, rank, rows, the
 * fused GGUF tensor and the part's first row in it. */
typedef struct part {
    const char *peft;
    int64_t rank, n_out;
    const char *fused;
    int64_t row0;
} part;

static const part PHI3_PARTS[] = {
    {"self_attn.q_proj", 4, 64, "attn_qkv", 0}, {"self_attn.k_proj", 2, 32, "attn_qkv", 64},
    {"self_attn.v_proj", 4, 32, "attn_qkv", 96}, {"mlp.gate_proj", 4, 96, "ffn_up", 0},
    {"mlp.up_proj", 4, 96, "ffn_up", 96}};
enum { N_PARTS = 5, PARTS_IN = 64 };

/* A [rank][64] and B [n_out][rank] of part k of block il, each part's own. */
static void part_matrices(int k, int il, float *a, float *b) {
    const part *p = &PHI3_PARTS[k];
    test_rng rng = {(uint64_t)(5000 + il * 97 + k * 13)};
    for (int64_t i = 0; i < p->rank * PARTS_IN; i++) a[i] = test_rand_uniform(&rng, -0.3f, 0.3f);
    for (int64_t i = 0; i < p->n_out * p->rank; i++) b[i] = test_rand_uniform(&rng, -0.3f, 0.3f);
}

/* The PEFT folder of PHI3_PARTS (r 4 but k_proj's 2 by rank_pattern, lora_alpha 8). */
static int write_peft_parts(const char *dir) {
    mkdir(dir, 0755);
    char path[1024];
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    fputs("{\"peft_type\": \"LORA\", \"r\": 4, \"lora_alpha\": 8, \"rank_pattern\": "
          "{\"k_proj\": 2}}", f);
    fclose(f);
    el_st_writer *w = el_st_writer_create();
    float *keep[2 * N_LAYER * N_PARTS] = {0};
    int nk = 0, ok = w != NULL;
    for (int il = 0; ok && il < N_LAYER; il++)
        for (int k = 0; ok && k < N_PARTS; k++) {
            const part *p = &PHI3_PARTS[k];
            float *a = keep[nk++] = malloc(sizeof(float) * p->rank * PARTS_IN);
            float *b = keep[nk++] = malloc(sizeof(float) * p->rank * p->n_out);
            part_matrices(k, il, a, b);
            char name[160];
            int64_t sa[2] = {p->rank, PARTS_IN}, sb[2] = {p->n_out, p->rank};
            snprintf(name, sizeof name, "base_model.model.model.layers.%d.%s.lora_A.weight", il,
                     p->peft);
            ok &= el_st_writer_add(w, name, EL_ST_F32, 2, sa, a,
                                   (uint64_t)(p->rank * PARTS_IN) * 4) == EL_OK;
            snprintf(name, sizeof name, "base_model.model.model.layers.%d.%s.lora_B.weight", il,
                     p->peft);
            ok &= el_st_writer_add(w, name, EL_ST_F32, 2, sb, b,
                                   (uint64_t)(p->rank * p->n_out) * 4) == EL_OK;
        }
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    ok = ok && el_st_writer_write(w, path) == EL_OK;
    el_st_writer_free(w);
    for (int i = 0; i < nk; i++) free(keep[i]);
    return ok;
}

/* The largest |alpha / rank * (B A)[o][x] - 8 / r_i * (B_i A_i)[o - row0_i][x]| over the rows of
 * the saved pair blk.il.fused (rank and n_out as llama.cpp checks them: lora_a ne [64, rank],
 * lora_b ne [rank, n_out]); -1 if the pair is absent or of another shape. */
static double fused_delta_err(const gguf_file *f, int il, const char *fused, int64_t rank,
                              int64_t n_out) {
    char na[96], nb[96];
    snprintf(na, sizeof na, "blk.%d.%s.weight.lora_a", il, fused);
    snprintf(nb, sizeof nb, "blk.%d.%s.weight.lora_b", il, fused);
    const gguf_tensor *ta = gguf_find_tensor(f, na), *tb = gguf_find_tensor(f, nb);
    float alpha;
    if (!ta || !tb || ta->type != EL_TYPE_F32 || tb->type != EL_TYPE_F32 || ta->n_dims != 2 ||
        tb->n_dims != 2 || ta->ne[0] != PARTS_IN || ta->ne[1] != rank || tb->ne[0] != rank ||
        tb->ne[1] != n_out || gguf_get_f32(f, "adapter.lora.alpha", &alpha) != EL_OK)
        return -1;
    const float *fa = ta->data, *fb = tb->data;
    double worst = 0;
    float a[4 * PARTS_IN], b[96 * 4];
    for (int k = 0; k < N_PARTS; k++) {
        const part *p = &PHI3_PARTS[k];
        if (strcmp(p->fused, fused) != 0) continue;
        part_matrices(k, il, a, b);
        for (int64_t o = 0; o < p->n_out; o++)
            for (int64_t x = 0; x < PARTS_IN; x++) {
                double got = 0, want = 0;
                for (int64_t r = 0; r < rank; r++)
                    got += (double)fb[(p->row0 + o) * rank + r] * fa[r * PARTS_IN + x];
                for (int64_t r = 0; r < p->rank; r++)
                    want += (double)b[o * p->rank + r] * a[r * PARTS_IN + x];
                double d = fabs(alpha / (double)rank * got - 8.0 / (double)p->rank * want);
                if (d > worst) worst = d;
            }
    }
    return worst;
}

/* PEFT with phi3's parts apart -> GGUF: llama.cpp's fused pairs, the parts' products exactly,
 * the folder's logits when loaded again. */
static int test_phi3_saved_parts(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/phi3_parts_peft", test_tmp_dir());
    const char *saved = test_tmp_path("parts.gguf");
    CHECK(write_peft_parts(dir));
    el_model *m = load(PHI3.base);
    CHECK(m);
    int32_t nv = vocab_of(m);
    el_adapter *ap = NULL, *as = NULL;
    if (el_adapter_load_exact(m, dir, &ap) != EL_OK) test_note("%s", el_last_error());
    CHECK(ap);
    if (el_adapter_save(ap, saved) != EL_OK) test_note("%s", el_last_error());
    if (el_adapter_load_exact(m, saved, &as) != EL_OK) test_note("%s", el_last_error());
    CHECK(as);
    gguf_file *f = NULL;
    CHECK(gguf_open(saved, &f) == EL_OK);
    double worst = 0;
    int shapes_ok = 1;
    for (int il = 0; il < N_LAYER; il++) {
        double eq = fused_delta_err(f, il, "attn_qkv", 4 + 2 + 4, 128);
        double eu = fused_delta_err(f, il, "ffn_up", 4 + 4, 192);
        shapes_ok &= eq >= 0 && eu >= 0;
        worst = fmax(worst, fmax(eq, eu));
    }
    int n_tensors = (int)f->n_tensors; /* the two fused pairs of each block and nothing else */
    gguf_close(f);
    static float lp[PROMPT * MAX_VOCAB], ls[PROMPT * MAX_VOCAB], plain[PROMPT * MAX_VOCAB];
    CHECK(prompt_logits(m, ap, nv, lp) && prompt_logits(m, as, nv, ls) &&
          prompt_logits(m, NULL, nv, plain));
    double err = test_max_rel_err(ls, lp, (size_t)PROMPT * nv);
    double effect = test_max_rel_err(plain, lp, (size_t)PROMPT * nv);
    test_note("phi3 q/k/v, gate/up apart saved as %d tensors: B A off by %.2e; logits vs the PEFT "
              "folder %.2e (the adapter moves them %.2e)", n_tensors, worst, err, effect);
    el_adapter_free(ap);
    el_adapter_free(as);
    el_model_free(m);
    CHECK(shapes_ok && n_tensors == 4 * N_LAYER);
    CHECK(worst < 1e-6 && err < 1e-5 && effect > 1e-2);
    return TEST_PASS;
}

static int test_qwen3_peft(void) { return check_peft(&QWEN3, "qwen3"); }
static int test_phi3_peft_fused(void) { return check_peft(&PHI3, "phi3"); }

/* Sequence 0 bound to the adapter, sequence 1 not, their prompt rows interleaved in one batch:
 * each row gets its sequence's logits run alone. */
static int check_batch(const arch_case *c, const char *arch) {
    const char *p = test_tmp_path("batch.gguf");
    CHECK(write_gguf(p, arch, c, 0));
    el_model *m = load(c->base);
    CHECK(m);
    int32_t nv = vocab_of(m);
    el_adapter *ad = NULL;
    CHECK(el_adapter_load(m, p, &ad) == EL_OK);
    static float alone_a[PROMPT * MAX_VOCAB], alone_b[PROMPT * MAX_VOCAB];
    CHECK(prompt_logits(m, ad, nv, alone_a) && prompt_logits(m, NULL, nv, alone_b));
    el_context *ctx = new_ctx(m);
    CHECK(ctx);
    el_binding bind = {ad, 1.0f};
    CHECK(el_context_bind(ctx, 0, &bind, 1) == EL_OK);
    int32_t tok[2 * PROMPT], pos[2 * PROMPT], seq[2 * PROMPT];
    int8_t want[2 * PROMPT];
    for (int i = 0; i < 2 * PROMPT; i++) {
        tok[i] = prompt_tokens[i / 2];
        pos[i] = i / 2;
        seq[i] = i % 2;
        want[i] = 1;
    }
    el_batch b = {.n_rows = 2 * PROMPT, .token = tok, .pos = pos, .seq_id = seq, .logits = want};
    CHECK(el_decode(ctx, &b) == EL_OK);
    double err = 0;
    for (int i = 0; i < 2 * PROMPT; i++) {
        const float *want_row = (i % 2 ? alone_b : alone_a) + (size_t)(i / 2) * nv;
        double e = test_max_rel_err(el_get_logits(ctx, i), want_row, (size_t)nv);
        if (e > err) err = e;
    }
    test_note("%s: mixed batch vs each sequence alone %.2e", arch, err);
    el_context_free(ctx);
    el_adapter_free(ad);
    el_model_free(m);
    CHECK(err < 1e-5);
    return TEST_PASS;
}

static int test_qwen3_batch(void) { return check_batch(&QWEN3, "qwen3"); }
static int test_phi3_batch(void) { return check_batch(&PHI3, "phi3"); }

/* tests/golden/hf/qwen3 (hidden 32, 4 heads of 16, 2 KV heads, ff 64) and hf/phi3 (as PHI3). */
static const arch_case QWEN3_HF = {
    NULL,
    {{"attn_q", "self_attn.q_proj", 32, 64}, {"attn_k", "self_attn.k_proj", 32, 32},
     {"attn_v", "self_attn.v_proj", 32, 32}, {"attn_output", "self_attn.o_proj", 64, 32},
     {"ffn_gate", "mlp.gate_proj", 32, 64}, {"ffn_up", "mlp.up_proj", 32, 64},
     {"ffn_down", "mlp.down_proj", 64, 32}},
    7};

enum { N_VARIANTS = 3, VARIANT_TOKENS = 6 };

/* Greedy tokens after the prompt (prompt_bindings none) with the adapter bound from first on. */
static int reference_run(el_model *m, const int32_t *prompt, int32_t np, el_adapter *ad,
                         int32_t first, int32_t *out) {
    el_context *ctx = new_ctx(m);
    int32_t pos[PROMPT], seq[PROMPT] = {0};
    for (int32_t i = 0; i < np; i++) pos[i] = i;
    el_batch b = {.n_rows = np, .token = prompt, .pos = pos, .seq_id = seq};
    el_binding bind = {ad, 1.0f};
    int ok = ctx && el_decode(ctx, &b) == EL_OK &&
             el_context_bind(ctx, 0, &bind, ad ? 1 : 0) == EL_OK;
    int32_t t = first, s0 = 0;
    el_model_info info;
    ok = ok && el_model_get_info(m, &info) == EL_OK;
    for (int32_t k = 0; ok && k < VARIANT_TOKENS; k++) {
        out[k] = t;
        int32_t p = np + k;
        el_batch one = {.n_rows = 1, .token = &t, .pos = &p, .seq_id = &s0};
        ok = el_decode(ctx, &one) == EL_OK;
        const float *l = ok ? el_get_logits(ctx, 0) : NULL;
        int32_t best = 0;
        for (int32_t v = 1; l && v < info.n_vocab; v++)
            if (l[v] > l[best]) best = v;
        t = best;
    }
    el_context_free(ctx);
    return ok;
}

static int check_variants(const char *folder, const arch_case *c, const char *arch) {
    const char *model = test_tmp_path("variants_model.gguf"), *adapter = test_tmp_path("variants.gguf");
    if (el_convert_hf(folder, model, "f32", NULL, NULL) != EL_OK) {
        test_note("%s", el_last_error());
        return TEST_FAIL;
    }
    CHECK(write_gguf(adapter, arch, c, 0));
    el_model *m = load(model);
    CHECK(m);
    el_adapter *ad = NULL;
    CHECK(el_adapter_load(m, adapter, &ad) == EL_OK);
    int32_t prompt[PROMPT];
    size_t np = 0;
    CHECK(el_tokenize(m, "the cat", 7, true, false, prompt, PROMPT, &np) == EL_OK && np > 0);
    el_binding bind = {ad, 1.0f};
    el_variant_params vp[N_VARIANTS];
    for (int i = 0; i < N_VARIANTS; i++) {
        vp[i] = el_variant_default_params();
        vp[i].sampler.temperature = 0.0f;
        vp[i].first_token = 40 + 7 * i; /* forced, so no end-of-text token starts one */
        vp[i].max_tokens = VARIANT_TOKENS;
        vp[i].ignore_eos = true;
        vp[i].bindings = i == 1 ? NULL : &bind;
        vp[i].n_bindings = i == 1 ? 0 : 1;
    }
    el_variants_params gp = el_variants_default_params();
    gp.n_variants = N_VARIANTS;
    gp.variants = vp;
    el_context *ctx = new_ctx(m);
    el_variants *g = NULL;
    CHECK(ctx);
    if (el_variants_generate(ctx, &gp, prompt, (int32_t)np, &g) != EL_OK)
        test_note("%s", el_last_error());
    CHECK(g);
    int rc = TEST_PASS;
    for (int i = 0; i < N_VARIANTS && rc == TEST_PASS; i++) {
        el_variant_result r;
        int32_t ref[VARIANT_TOKENS];
        CHECK(el_variants_result(g, i, &r) == EL_OK);
        CHECK(reference_run(m, prompt, (int32_t)np, i == 1 ? NULL : ad, vp[i].first_token, ref));
        if (r.n_tokens != VARIANT_TOKENS || memcmp(r.tokens, ref, sizeof ref) != 0) {
            test_note("%s variant %d differs from its single-sequence run", arch, i);
            rc = TEST_FAIL;
        }
    }
    int32_t r0[VARIANT_TOKENS], r0_plain[VARIANT_TOKENS];
    CHECK(reference_run(m, prompt, (int32_t)np, ad, 40, r0) &&
          reference_run(m, prompt, (int32_t)np, NULL, 40, r0_plain));
    test_note("%s: %d variants as their single runs; the adapter %s the first one's tokens", arch,
              N_VARIANTS, memcmp(r0, r0_plain, sizeof r0) ? "changes" : "does not change");
    el_variants_free(g);
    el_context_free(ctx);
    el_adapter_free(ad);
    el_model_free(m);
    remove(model);
    return rc;
}

static int test_qwen3_variants(void) {
    return check_variants("tests/golden/hf/qwen3", &QWEN3_HF, "qwen3");
}
static int test_phi3_variants(void) { return check_variants("tests/golden/hf/phi3", &PHI3, "phi3"); }

/* A fused lora_b of one row too many, or an attn_q adapter on a base whose Q lives in attn_qkv,
 * is refused with the file and tensor named. */
static int test_phi3_bad(void) {
    el_model *m = load(PHI3.base);
    CHECK(m);
    const char *p = test_tmp_path("bad.gguf");
    CHECK(write_gguf(p, "phi3", &PHI3, 32));
    el_adapter *ad = NULL;
    CHECK(el_adapter_load(m, p, &ad) == EL_ERR_MISMATCH && !ad);
    CHECK(strstr(el_last_error(), "bad.gguf") && strstr(el_last_error(), "attn_qkv"));
    test_note("%s", el_last_error());
    CHECK(write_gguf(p, "phi3", &QWEN3, 0));
    CHECK(el_adapter_load(m, p, &ad) == EL_ERR_UNSUPPORTED && !ad);
    CHECK(strstr(el_last_error(), "blk.0.attn_q.weight.lora_a") &&
          strstr(el_last_error(), "it stores that projection in blk.0.attn_qkv.weight"));
    test_note("%s", el_last_error());
    el_model_free(m);
    return TEST_PASS;
}

int main(void) {
    run_test("qwen3_gguf", test_qwen3_gguf);
    run_test("phi3_gguf_fused", test_phi3_gguf_fused);
    run_test("qwen3_peft", test_qwen3_peft);
    run_test("phi3_peft_fused", test_phi3_peft_fused);
    run_test("qwen3_saved", test_qwen3_saved);
    run_test("phi3_saved_fused", test_phi3_saved_fused);
    run_test("phi3_saved_parts", test_phi3_saved_parts);
    run_test("qwen3_batch", test_qwen3_batch);
    run_test("phi3_batch", test_phi3_batch);
    run_test("qwen3_variants", test_qwen3_variants);
    run_test("phi3_variants", test_phi3_variants);
    run_test("phi3_bad", test_phi3_bad);
    return tests_exit_code();
}
