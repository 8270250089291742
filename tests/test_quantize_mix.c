/* test_quantize_mix.c - the type each tensor gets in llama.cpp's mixes (src/compress/mix.c)
 * against a table derived by reading llama.cpp's llama_tensor_get_type (src/llama-quant.cpp),
 * for two llama shapes:
 *
 *   A: 8 layers, 8 query heads on 2 KV heads (GQA 4), its own output.weight;
 *   B: 16 layers, 4 heads on 4 (no GQA), no output.weight (tied: token_embd is the head).
 *
 * Both 256 wide with n_ff 512, so every row fits every type's blocks and what is seen is the
 * rules alone. The table was also checked against llama-quantize itself (llama.cpp of
 * 2026-09-28): `llama-quantize --dry-run` on the same two shapes, written with gguf-py, chose
 * these types for all 18 mixes. use_more_bits (first and last eighth, every third between) is
 * layers 0 3 6 7 of 8 and 0 1 4 7 10 13 14 15 of 16.
 * Also: el_quantize with a mix end to end on the golden model, whose 64- and 96-element rows
 * make the mix's types fall back; pure files; names and file type numbers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress/mix.h"
#include "compress/quantize.h"
#include "testutil.h"

/* A tensor of the mix moved off its base type: `tensor` in the layers listed (comma-separated;
 * "" for a tensor outside the blocks) gets `type`. */
typedef struct moved {
    const char *mix, *tensor, *layers;
    el_type type;
} moved;

static const moved shape_a[] = {
    {"q4_0", "output", "", EL_TYPE_Q6_K},   {"q4_1", "output", "", EL_TYPE_Q6_K},
    {"q5_0", "output", "", EL_TYPE_Q6_K},   {"q5_1", "output", "", EL_TYPE_Q6_K},
    {"q5_k_s", "output", "", EL_TYPE_Q6_K}, {"q3_k_s", "output", "", EL_TYPE_Q6_K},
    {"q5_k_m", "output", "", EL_TYPE_Q6_K},
    {"q5_k_m", "attn_v", "0,3,6,7", EL_TYPE_Q6_K},
    {"q5_k_m", "ffn_down", "0,3,6,7", EL_TYPE_Q6_K},
    {"q4_k_m", "output", "", EL_TYPE_Q6_K},
    {"q4_k_m", "attn_v", "0,3,6,7", EL_TYPE_Q6_K},
    {"q4_k_m", "ffn_down", "0,3,6,7", EL_TYPE_Q6_K},
    {"q4_k_s", "output", "", EL_TYPE_Q6_K},
    {"q4_k_s", "attn_v", "0,1,2,3", EL_TYPE_Q5_K},
    {"q4_k_s", "ffn_down", "0", EL_TYPE_Q5_K},
    {"q3_k_m", "output", "", EL_TYPE_Q6_K},
    {"q3_k_m", "attn_v", "0,1", EL_TYPE_Q5_K},
    {"q3_k_m", "attn_v", "2,3,4,5,6,7", EL_TYPE_Q4_K},
    {"q3_k_m", "ffn_down", "0,1,2,3,4,5,6,7", EL_TYPE_Q4_K},
    {"q3_k_m", "attn_output", "0,1,2,3,4,5,6,7", EL_TYPE_Q4_K},
    {"q3_k_l", "output", "", EL_TYPE_Q6_K},
    {"q3_k_l", "attn_v", "0,1,2,3,4,5,6,7", EL_TYPE_Q5_K},
    {"q3_k_l", "ffn_down", "0,1,2,3,4,5,6,7", EL_TYPE_Q5_K},
    {"q3_k_l", "attn_output", "0,1,2,3,4,5,6,7", EL_TYPE_Q5_K},
    {"q2_k", "output", "", EL_TYPE_Q6_K},
    {"q2_k", "attn_v", "0,1,2,3,4,5,6,7", EL_TYPE_Q4_K}, /* GQA 4 */
    {"q2_k", "ffn_down", "0,1,2,3,4,5,6,7", EL_TYPE_Q3_K},
    {"q2_k", "attn_output", "0,1,2,3,4,5,6,7", EL_TYPE_Q3_K},
    {"iq4_nl", "output", "", EL_TYPE_Q6_K},
    {"iq4_nl", "attn_v", "0,1,2,3,4,5,6,7", EL_TYPE_Q5_K}, /* GQA 4 */
    {"iq4_nl", "ffn_down", "0", EL_TYPE_Q5_K},
    {"iq4_xs", "output", "", EL_TYPE_Q6_K},
    {"iq4_xs", "attn_v", "0,1,2,3,4,5,6,7", EL_TYPE_Q5_K},
    {"iq4_xs", "ffn_down", "0", EL_TYPE_Q5_K},
    /* q8_0 keeps its head in q8_0, q6_k's is q6_k already: no row */
};

static const char all16[] = "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15";
static const char more16[] = "0,1,4,7,10,13,14,15"; /* use_more_bits of 16 layers */
static const moved shape_b[] = {
    {"q4_0", "token_embd", "", EL_TYPE_Q6_K},   {"q4_1", "token_embd", "", EL_TYPE_Q6_K},
    {"q5_0", "token_embd", "", EL_TYPE_Q6_K},   {"q5_1", "token_embd", "", EL_TYPE_Q6_K},
    {"q5_k_s", "token_embd", "", EL_TYPE_Q6_K}, {"q3_k_s", "token_embd", "", EL_TYPE_Q6_K},
    {"q5_k_m", "token_embd", "", EL_TYPE_Q6_K},
    {"q5_k_m", "attn_v", more16, EL_TYPE_Q6_K},
    {"q5_k_m", "ffn_down", more16, EL_TYPE_Q6_K},
    {"q4_k_m", "token_embd", "", EL_TYPE_Q6_K},
    {"q4_k_m", "attn_v", more16, EL_TYPE_Q6_K},
    {"q4_k_m", "ffn_down", more16, EL_TYPE_Q6_K},
    {"q4_k_s", "token_embd", "", EL_TYPE_Q6_K},
    {"q4_k_s", "attn_v", "0,1,2,3", EL_TYPE_Q5_K},
    {"q4_k_s", "ffn_down", "0,1", EL_TYPE_Q5_K},
    {"q3_k_m", "token_embd", "", EL_TYPE_Q6_K},
    {"q3_k_m", "attn_v", "0,1", EL_TYPE_Q5_K},
    {"q3_k_m", "attn_v", "2,3,4,5,6,7,8,9,10,11,12,13,14,15", EL_TYPE_Q4_K},
    {"q3_k_m", "ffn_down", "0", EL_TYPE_Q5_K}, /* the first 16th */
    {"q3_k_m", "ffn_down", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15", EL_TYPE_Q4_K},
    {"q3_k_m", "attn_output", all16, EL_TYPE_Q4_K},
    {"q3_k_l", "token_embd", "", EL_TYPE_Q6_K},
    {"q3_k_l", "attn_v", all16, EL_TYPE_Q5_K},
    {"q3_k_l", "ffn_down", all16, EL_TYPE_Q5_K},
    {"q3_k_l", "attn_output", all16, EL_TYPE_Q5_K},
    {"q2_k", "token_embd", "", EL_TYPE_Q6_K},
    {"q2_k", "attn_v", all16, EL_TYPE_Q3_K}, /* no GQA */
    {"q2_k", "ffn_down", all16, EL_TYPE_Q3_K},
    {"q2_k", "attn_output", all16, EL_TYPE_Q3_K},
    {"iq4_nl", "token_embd", "", EL_TYPE_Q6_K},
    {"iq4_nl", "ffn_down", "0,1", EL_TYPE_Q5_K},
    {"iq4_xs", "token_embd", "", EL_TYPE_Q6_K},
    {"iq4_xs", "ffn_down", "0,1", EL_TYPE_Q5_K},
};

static const char *const all_mixes[] = {
    "q2_k", "q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m", "q6_k",
    "q8_0", "q4_0",   "q4_1",   "q5_0",   "q5_1",   "iq4_nl", "iq4_xs", "f16",    "bf16",
};

/* A llama model of the shape (zero weights in f16, norms in f32) at path. */
static int write_shape(const char *path, int n_layer, int n_head, int n_head_kv, bool tied) {
    const int64_t E = 256, F = 512, V = 64, KV = E * n_head_kv / n_head;
    gguf_writer *w = gguf_writer_create();
    void *zeros = calloc((size_t)(E * F), 2);
    int ok = w && zeros && !gguf_writer_set_str(w, "general.architecture", "llama") &&
             !gguf_writer_set_u32(w, "llama.block_count", (uint32_t)n_layer) &&
             !gguf_writer_set_u32(w, "llama.embedding_length", (uint32_t)E) &&
             !gguf_writer_set_u32(w, "llama.feed_forward_length", (uint32_t)F) &&
             !gguf_writer_set_u32(w, "llama.attention.head_count", (uint32_t)n_head) &&
             !gguf_writer_set_u32(w, "llama.attention.head_count_kv", (uint32_t)n_head_kv);
    struct {
        const char *name;
        int64_t ne0, ne1;
    } top[] = {{"token_embd.weight", E, V}, {"output_norm.weight", E, 1}, {"output.weight", E, V}},
      layer[] = {{"attn_norm.weight", E, 1}, {"attn_q.weight", E, E}, {"attn_k.weight", E, KV},
                 {"attn_v.weight", E, KV},   {"attn_output.weight", E, E},
                 {"ffn_norm.weight", E, 1},  {"ffn_gate.weight", E, F},
                 {"ffn_up.weight", E, F},    {"ffn_down.weight", F, E}};
    for (int i = 0; ok && i < (tied ? 2 : 3); i++) {
        const int64_t ne[2] = {top[i].ne0, top[i].ne1};
        bool vec = ne[1] == 1;
        ok = !gguf_writer_add_tensor(w, top[i].name, vec ? EL_TYPE_F32 : EL_TYPE_F16, vec ? 1 : 2,
                                     ne, zeros, (size_t)(ne[0] * ne[1]) * (vec ? 4 : 2));
    }
    for (int l = 0; ok && l < n_layer; l++)
        for (size_t k = 0; ok && k < sizeof layer / sizeof layer[0]; k++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%d.%s", l, layer[k].name);
            const int64_t ne[2] = {layer[k].ne0, layer[k].ne1};
            bool vec = ne[1] == 1;
            ok = !gguf_writer_add_tensor(w, name, vec ? EL_TYPE_F32 : EL_TYPE_F16, vec ? 1 : 2,
                                         ne, zeros, (size_t)(ne[0] * ne[1]) * (vec ? 4 : 2));
        }
    ok = ok && !gguf_writer_write(w, path);
    gguf_writer_free(w);
    free(zeros);
    return ok;
}

/* Whether layer is in the comma-separated list. */
static bool listed(const char *layers, int layer) {
    for (const char *p = layers; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (v == layer) return true;
        p = *end == ',' ? end + 1 : end;
    }
    return false;
}

/* The table's type for tensor `name` (NUL-terminated) of the model in mix. */
static el_type expected(const moved *table, size_t n, const el_mix *mix, const char *name,
                        el_type own, bool matrix) {
    if (!matrix) return own;
    int layer = -1;
    const char *role = name;
    if (sscanf(name, "blk.%d.", &layer) == 1) role = strchr(name + 4, '.') + 1;
    size_t role_len = strlen(role) - strlen(".weight");
    for (size_t i = 0; i < n; i++)
        if (!strcmp(table[i].mix, mix->name) && strlen(table[i].tensor) == role_len &&
            !strncmp(table[i].tensor, role, role_len) &&
            (layer < 0 ? !table[i].layers[0] : listed(table[i].layers, layer)))
            return table[i].type;
    return mix->base;
}

static int check_shape(const char *file, int n_layer, int n_head, int n_head_kv, bool tied,
                       const moved *table, size_t n_rows) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", test_tmp_dir(), file);
    CHECK(write_shape(path, n_layer, n_head, n_head_kv, tied));
    gguf_file *f;
    CHECK(gguf_open(path, &f) == EL_OK);
    el_type *types = malloc(f->n_tensors * sizeof *types);
    CHECK(types != NULL);
    int bad = 0;
    for (size_t k = 0; k < sizeof all_mixes / sizeof all_mixes[0]; k++) {
        const el_mix *mix = el_mix_find(all_mixes[k]);
        CHECK(mix != NULL);
        CHECK(el_mix_types(mix, false, f, types) == EL_OK);
        for (uint64_t i = 0; i < f->n_tensors; i++) {
            const gguf_tensor *t = &f->tensors[i];
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
            el_type want = expected(table, n_rows, mix, name, (el_type)t->type, t->n_dims == 2);
            if (types[i] != want) {
                test_note("%s %s %s: %s, expected %s", file, mix->name, name,
                          el_type_layout_get(types[i])->name, el_type_layout_get(want)->name);
                bad++;
            }
        }
        /* pure: the base type for every matrix */
        CHECK(el_mix_types(mix, true, f, types) == EL_OK);
        for (uint64_t i = 0; i < f->n_tensors; i++)
            bad += types[i] != (f->tensors[i].n_dims == 2 ? mix->base : EL_TYPE_F32);
    }
    free(types);
    gguf_close(f);
    CHECK(bad == 0);
    return TEST_PASS;
}

static int test_shape_gqa_untied(void) {
    return check_shape("a.gguf", 8, 8, 2, false, shape_a, sizeof shape_a / sizeof shape_a[0]);
}

static int test_shape_tied(void) {
    return check_shape("b.gguf", 16, 4, 4, true, shape_b, sizeof shape_b / sizeof shape_b[0]);
}

/* llama-quantize's names (any case, with the _M aliases) and its llama_ftype numbers. */
static int test_names_and_file_types(void) {
    static const struct { const char *name; uint32_t file_type; el_type base; } known[] = {
        {"Q2_K", 10, EL_TYPE_Q2_K},   {"q3_k_s", 11, EL_TYPE_Q3_K}, {"q3_k", 12, EL_TYPE_Q3_K},
        {"Q3_K_M", 12, EL_TYPE_Q3_K}, {"q3_k_l", 13, EL_TYPE_Q3_K}, {"q4_k_s", 14, EL_TYPE_Q4_K},
        {"Q4_K", 15, EL_TYPE_Q4_K},   {"q4_k_m", 15, EL_TYPE_Q4_K}, {"q5_k_s", 16, EL_TYPE_Q5_K},
        {"q5_k", 17, EL_TYPE_Q5_K},   {"q6_k", 18, EL_TYPE_Q6_K},   {"q8_0", 7, EL_TYPE_Q8_0},
        {"q4_0", 2, EL_TYPE_Q4_0},    {"q4_1", 3, EL_TYPE_Q4_1},    {"q5_0", 8, EL_TYPE_Q5_0},
        {"q5_1", 9, EL_TYPE_Q5_1},    {"IQ4_NL", 25, EL_TYPE_IQ4_NL},
        {"iq4_xs", 30, EL_TYPE_IQ4_XS}, {"f16", 1, EL_TYPE_F16}, {"bf16", 32, EL_TYPE_BF16},
        {"f32", 0, EL_TYPE_F32},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        const el_mix *mix = el_mix_find(known[i].name);
        CHECK(mix && mix->file_type == known[i].file_type && mix->base == known[i].base);
        bool readable = false;
        CHECK(el_quantize_type_check(known[i].name, &readable) == EL_OK && readable);
    }
    CHECK(el_mix_find("q4_k_x") == NULL && el_mix_find("w4") == NULL && el_mix_find(NULL) == NULL);
    CHECK(el_quantize_type_check("q4_k_x", NULL) == EL_ERR_INVALID_ARG);
    CHECK(strstr(el_last_error(), "q4_k_m") && strstr(el_last_error(), "w4g64"));
    return TEST_PASS;
}

typedef struct seen {
    int n;
    char to[32][16];
    bool fallback[32];
} seen;

static bool record(void *user, const el_quantize_tensor *t) {
    seen *s = user;
    if (t->index < 32) {
        snprintf(s->to[t->index], sizeof s->to[0], "%s", t->to_type);
        s->fallback[t->index] = t->fallback;
    }
    s->n++;
    return true;
}

/* q4_k_m on the golden model (2 layers, n_embd 64, n_ff 96): no row fits Q4_K's or Q6_K's
 * 256, so what the mix chooses falls back as llama-quantize does. use_more_bits of 2 layers is
 * layer 1 only (i >= 7 * 2 / 8): its attn_v and ffn_down are q6_k -> q8_0, layer 0's q4_k ->
 * q5_0; the head gets q8_0 outright (its 64 columns do not fit q4_k: no fallback). */
static int test_quantize_mix_with_fallbacks(void) {
    char out[512];
    snprintf(out, sizeof out, "%s/mix.gguf", test_tmp_dir());
    seen s = {0};
    el_quantize_params p = el_quantize_default_params();
    p.type = "q4_k_m";
    p.progress = record;
    p.user = &s;
    p.n_threads = 1;
    CHECK(el_quantize("tests/golden/llama_f32_gqa.gguf", out, &p) == EL_OK);
    gguf_file *q;
    CHECK(gguf_open(out, &q) == EL_OK);
    static const struct { const char *name; el_type type; bool fallback; } want[] = {
        {"output.weight", EL_TYPE_Q8_0, false},       {"token_embd.weight", EL_TYPE_Q5_0, true},
        {"blk.0.attn_v.weight", EL_TYPE_Q5_0, true},  {"blk.1.attn_v.weight", EL_TYPE_Q8_0, true},
        {"blk.0.ffn_down.weight", EL_TYPE_Q5_0, true}, {"blk.1.ffn_down.weight", EL_TYPE_Q8_0, true},
        {"blk.1.attn_q.weight", EL_TYPE_Q5_0, true},  {"output_norm.weight", EL_TYPE_F32, false},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const gguf_tensor *t = gguf_find_tensor(q, want[i].name);
        int64_t k = t ? t - q->tensors : -1;
        if (!t || t->type != (uint32_t)want[i].type || k >= 32 ||
            s.fallback[k] != want[i].fallback ||
            strcmp(s.to[k], el_type_layout_get(want[i].type)->name)) {
            test_note("%s: %s", want[i].name, t ? el_type_layout_get(t->type)->name : "absent");
            bad++;
        }
    }
    uint32_t ft = 0, qv = 0;
    CHECK(gguf_get_u32(q, "general.file_type", &ft) == EL_OK && ft == 15);
    CHECK(gguf_get_u32(q, "general.quantization_version", &qv) == EL_OK && qv == 2);
    gguf_close(q);
    CHECK(bad == 0);
    /* pure: q4_k everywhere it fits, its fallback q5_0 elsewhere, the file type still 15 */
    p.pure = true;
    CHECK(el_quantize("tests/golden/llama_f32_gqa.gguf", out, &p) == EL_OK);
    CHECK(gguf_open(out, &q) == EL_OK);
    const gguf_tensor *head = gguf_find_tensor(q, "output.weight");
    const gguf_tensor *v1 = gguf_find_tensor(q, "blk.1.attn_v.weight");
    bool ok = head && head->type == EL_TYPE_Q5_0 && v1 && v1->type == EL_TYPE_Q5_0 &&
              gguf_get_u32(q, "general.file_type", &ft) == EL_OK && ft == 15;
    gguf_close(q);
    CHECK(ok);
    return TEST_PASS;
}

int main(void) {
    run_test("shape_gqa_untied", test_shape_gqa_untied);
    run_test("shape_tied", test_shape_tied);
    run_test("names_and_file_types", test_names_and_file_types);
    run_test("quantize_mix_with_fallbacks", test_quantize_mix_with_fallbacks);
    return tests_exit_code();
}
