/* adapter_peft.c - Hugging Face PEFT LoRA adapters: a folder with adapter_config.json and
 * adapter_model.safetensors (the path may name the folder or either file).
 *
 * Tensors: "base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight" [rank, n_in] and
 * "...lora_B.weight" [n_out, rank] (row-major), the same layouts as GGUF's lora_a / lora_b.
 * Modules map onto the base: q_proj, k_proj, v_proj, o_proj -> attn_q, attn_k, attn_v,
 * attn_output; gate_proj, up_proj, down_proj -> ffn_gate, ffn_up, ffn_down; phi3's fused qkv_proj
 * and gate_up_proj -> Q, K, V and gate, up, each part taking the shared lora_A and its own rows of
 * lora_B (el_adapter_split_b: Q's rows, then K's, then V's; gate's, then up's). The tensors decide
 * which layers change and their ranks; target_modules is not needed to find them.
 *
 * Scale of a module: lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora, where alpha comes
 * from alpha_pattern and r from rank_pattern when a key matches the module name (a key matches
 * "model.layers.0.self_attn.q_proj" if it equals it or ends it after a '.', e.g. "q_proj" or
 * "layers.0.self_attn.q_proj"; keys are taken literally, not as regular expressions). The r of a
 * module must equal its tensors' rank.
 *
 * RoPE layout: a llama GGUF converted from Hugging Face has the rows of Q and K permuted within
 * each head (HF rotates the pairs (j, j + hd/2), GGUF llama the pairs (2j, 2j+1)). The base here
 * is in GGUF order, so lora_B of q_proj / k_proj gets the same row permutation (with n_head and
 * n_head_kv heads); lora_A acts on the input and is unchanged. qwen2 GGUFs are not permuted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/mapfile.h"
#include "formats/json.h"
#include "formats/safetensors.h"
#include "runtime/adapter.h"

/* Each module and the linears its outputs are, in order. */
static const struct {
    const char *module;
    int n;
    el_linear linears[3];
} modules[] = {
    {"q_proj", 1, {EL_LINEAR_Q}},       {"k_proj", 1, {EL_LINEAR_K}},
    {"v_proj", 1, {EL_LINEAR_V}},       {"o_proj", 1, {EL_LINEAR_O}},
    {"gate_proj", 1, {EL_LINEAR_GATE}}, {"up_proj", 1, {EL_LINEAR_UP}},
    {"down_proj", 1, {EL_LINEAR_DOWN}},
    {"qkv_proj", 3, {EL_LINEAR_Q, EL_LINEAR_K, EL_LINEAR_V}},
    {"gate_up_proj", 2, {EL_LINEAR_GATE, EL_LINEAR_UP}},
};

typedef struct peft_config {
    const char *path;
    double r, alpha;
    bool rslora;
    const el_json_value *rank_pattern, *alpha_pattern; /* objects or NULL */
} peft_config;

/* The two file paths of a PEFT adapter given the folder or either file. */
static el_status peft_paths(const char *path, char *cfg, char *st, size_t cap) {
    struct stat sb;
    char dir[4096];
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(dir, sizeof dir, "%s", path);
    } else {
        const char *slash = strrchr(path, '/');
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    }
    if ((size_t)snprintf(cfg, cap, "%s/adapter_config.json", dir) >= cap ||
        (size_t)snprintf(st, cap, "%s/adapter_model.safetensors", dir) >= cap)
        return el_error(EL_ERR_INVALID_ARG, "%s: path too long", path);
    return EL_OK;
}

static el_status config_number(const el_json_value *root, const char *path, const char *key,
                               double def, double *out) {
    const el_json_value *v = el_json_get(root, key);
    if (!v) {
        *out = def;
        return EL_OK;
    }
    if (!el_json_num(v, out) || !isfinite(*out))
        return el_error(EL_ERR_FORMAT, "%s: '%s' must be a number, not %s", path, key,
                        el_json_kind_name(el_json_type(v)));
    return EL_OK;
}

/* A LoRA rank: a whole number of at least 1 (the tensors then say whether it is the right one). */
static el_status check_rank(const char *path, const char *key, double r) {
    if (r >= 1 && r == floor(r)) return EL_OK;
    return el_error(EL_ERR_FORMAT, "%s: %s = %g is not a LoRA rank (a whole number from 1)", path,
                    key, r);
}

/* rank_pattern or alpha_pattern: absent, null, or an object of numbers each passing `check`. */
static el_status check_pattern(const el_json_value *pat, const char *path, const char *name,
                               el_status (*check)(const char *, const char *, double)) {
    if (el_json_type(pat) == EL_JSON_NONE || el_json_type(pat) == EL_JSON_NULL) return EL_OK;
    if (el_json_type(pat) != EL_JSON_OBJECT)
        return el_error(EL_ERR_FORMAT, "%s: %s must be an object", path, name);
    for (size_t i = 0; i < el_json_len(pat); i++) {
        char key[256];
        snprintf(key, sizeof key, "%s[\"%s\"]", name, el_json_key_at(pat, i, NULL));
        double v;
        if (!el_json_num(el_json_at(pat, i), &v))
            return el_error(EL_ERR_FORMAT, "%s: %s must be a number, not %s", path, key,
                            el_json_kind_name(el_json_type(el_json_at(pat, i))));
        el_status st = check(path, key, v);
        if (st) return st;
    }
    return EL_OK;
}

/* target_modules is not needed to find the tensors, but a value PEFT cannot have written (it
 * holds a string or a list of strings) says the file is not what it claims. */
static el_status check_target_modules(const el_json_value *root, const char *path) {
    const el_json_value *t = el_json_get(root, "target_modules");
    el_json_kind kind = el_json_type(t);
    bool ok = kind == EL_JSON_NONE || kind == EL_JSON_NULL || kind == EL_JSON_STRING;
    if (kind == EL_JSON_ARRAY) {
        ok = true;
        for (size_t i = 0; i < el_json_len(t); i++)
            ok &= el_json_type(el_json_at(t, i)) == EL_JSON_STRING;
    }
    if (ok) return EL_OK;
    return el_error(EL_ERR_FORMAT, "%s: target_modules must be a string or a list of strings",
                    path);
}

/* use_rslora changes every scale, so a value that is not true or false cannot be guessed at. */
static el_status read_rslora(const el_json_value *root, const char *path, bool *rslora) {
    const el_json_value *v = el_json_get(root, "use_rslora");
    *rslora = false;
    if (!v || el_json_bool(v, rslora)) return EL_OK;
    return el_error(EL_ERR_FORMAT, "%s: use_rslora must be true or false, not %s", path,
                    el_json_kind_name(el_json_type(v)));
}

static el_status read_config(const el_json_value *root, const char *path, peft_config *c) {
    if (el_json_type(root) != EL_JSON_OBJECT)
        return el_error(EL_ERR_FORMAT, "%s: expected a JSON object", path);
    c->path = path;
    const char *type = el_json_str(el_json_get(root, "peft_type"), NULL);
    if (type && strcmp(type, "LORA") != 0)
        return el_error(EL_ERR_UNSUPPORTED, "%s: peft_type is '%s'; only LORA is supported", path,
                        type);
    bool flag = false;
    if (el_json_bool(el_json_get(root, "use_dora"), &flag) && flag)
        return el_error(EL_ERR_UNSUPPORTED, "%s: DoRA adapters (use_dora) are not supported", path);
    if (el_json_bool(el_json_get(root, "fan_in_fan_out"), &flag) && flag)
        return el_error(EL_ERR_UNSUPPORTED, "%s: fan_in_fan_out (transposed weights) is not "
                        "supported", path);
    c->rank_pattern = el_json_get(root, "rank_pattern");
    c->alpha_pattern = el_json_get(root, "alpha_pattern");
    el_status st = config_number(root, path, "r", 8, &c->r);
    if (!st) st = config_number(root, path, "lora_alpha", 8, &c->alpha); /* PEFT's defaults */
    if (!st) st = check_rank(path, "r", c->r);
    if (!st) st = el_lora_check_alpha(path, "lora_alpha", c->alpha);
    if (!st) st = check_pattern(c->rank_pattern, path, "rank_pattern", check_rank);
    if (!st) st = check_pattern(c->alpha_pattern, path, "alpha_pattern", el_lora_check_alpha);
    if (!st) st = check_target_modules(root, path);
    if (!st) st = read_rslora(root, path, &c->rslora);
    return st;
}

/* The value of the first key of a pattern object that matches module, if any. */
static bool pattern_value(const el_json_value *pat, const char *module, double *out) {
    size_t n = el_json_len(pat), mlen = strlen(module);
    for (size_t i = 0; i < n; i++) {
        size_t klen;
        const char *key = el_json_key_at(pat, i, &klen);
        bool match = klen == mlen ? strcmp(key, module) == 0
                     : klen < mlen && module[mlen - klen - 1] == '.' &&
                           strcmp(module + mlen - klen, key) == 0;
        if (match && el_json_num(el_json_at(pat, i), out)) return true;
    }
    return false;
}

/* Splits a tensor name into its module ("model.layers.3.mlp.up_proj"), layer, the index of its
 * entry in `modules` and whether it is lora_B. Returns false if it is not a LoRA tensor of a
 * projection. */
static bool parse_name(const char *name, char *module, size_t cap, int *il, size_t *kind,
                       bool *is_b) {
    const char *s = name;
    if (!strncmp(s, "base_model.model.", 17)) s += 17;
    const char *ab = strstr(s, ".lora_A.");
    if (!ab) ab = strstr(s, ".lora_B.");
    if (!ab || (strcmp(ab + 8, "weight") != 0 && strcmp(ab + 8, "default.weight") != 0))
        return false;
    *is_b = ab[6] == 'B';
    if ((size_t)(ab - s) >= cap) return false;
    memcpy(module, s, (size_t)(ab - s));
    module[ab - s] = '\0';
    const char *layers = strstr(module, "layers.");
    const char *last = strrchr(module, '.');
    if (!layers || !last) return false;
    char *end;
    long l = strtol(layers + 7, &end, 10);
    if (end == layers + 7 || *end != '.' || l < 0 || l > 1 << 20) return false;
    *il = (int)l;
    for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++)
        if (!strcmp(last + 1, modules[i].module)) {
            *kind = i;
            return true;
        }
    return false;
}

static bool st_type(el_st_dtype d, el_type *out) {
    switch (d) {
    case EL_ST_F32: *out = EL_TYPE_F32; return true;
    case EL_ST_F16: *out = EL_TYPE_F16; return true;
    case EL_ST_BF16: *out = EL_TYPE_BF16; return true;
    default: return false;
    }
}

static el_status read_tensors(const el_st_file *f, const el_model *m, const peft_config *c,
                              el_adapter_src *src) {
    const char *path = f->path;
    bool llama = strcmp(m->arch, "llama") == 0;
    char module[256];
    for (size_t i = 0; i < f->n_tensors; i++) {
        const el_st_tensor *t = &f->tensors[i];
        int il;
        size_t kind;
        bool is_b;
        el_type type;
        if (!parse_name(t->name, module, sizeof module, &il, &kind, &is_b))
            return el_error(EL_ERR_UNSUPPORTED, "%s: tensor '%s' is not a LoRA A/B of a projection "
                            "(q/k/v/o/gate/up/down_proj, qkv_proj, gate_up_proj) of a block", path,
                            t->name);
        if (il >= m->hp.n_layer)
            return el_error(EL_ERR_MISMATCH, "%s: tensor '%s': the model has only %d blocks", path,
                            t->name, m->hp.n_layer);
        if (t->n_dims != 2)
            return el_error(EL_ERR_FORMAT, "%s: tensor '%s' is not 2-D", path, t->name);
        if (!st_type(t->dtype, &type))
            return el_error(EL_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s; adapters may be "
                            "F32, F16 or BF16", path, t->name, t->dtype_name);
        const el_linear *which = modules[kind].linears;
        int n_which = modules[kind].n;
        for (int k = 0; k < n_which; k++) {
            const el_adapter_src *s = &src[el_linear_slot(il, which[k])];
            if (is_b ? s->b_name != NULL : s->a_name != NULL)
                return el_error(EL_ERR_FORMAT, "%s: tensor '%s' appears twice (under another "
                                "name)", path, t->name);
        }
        if (is_b) {
            el_adapter_src b = {.b_name = t->name, .b_type = type, .b_data = t->data,
                                .b_out = t->shape[0], .b_rank = t->shape[1],
                                .b_bytes = t->nbytes};
            if (llama && which[0] == EL_LINEAR_Q) b.permute_heads = m->hp.n_head;
            if (llama && which[0] == EL_LINEAR_K) b.permute_heads = m->hp.n_head_kv;
            el_status st = el_adapter_split_b(m, il, which, n_which, &b, src, path);
            if (st) return st;
        } else {
            for (int k = 0; k < n_which; k++) {
                el_adapter_src *s = &src[el_linear_slot(il, which[k])];
                s->a_name = t->name;
                s->a_type = type;
                s->a_data = t->data;
                s->a_rank = t->shape[0];
                s->a_in = t->shape[1];
                s->a_bytes = t->nbytes;
            }
        }
        double r = c->r, alpha = c->alpha;
        pattern_value(c->rank_pattern, module, &r);
        pattern_value(c->alpha_pattern, module, &alpha);
        int64_t rank = t->shape[is_b ? 1 : 0];
        if (r != (double)rank)
            return el_error(EL_ERR_FORMAT, "%s: tensor '%s' has rank %lld, adapter_config.json "
                            "says r = %g for %s", path, t->name, (long long)rank, r, module);
        for (int k = 0; k < n_which; k++)
            src[el_linear_slot(il, which[k])].scale =
                (float)(c->rslora ? alpha / sqrt(r) : alpha / r);
    }
    for (int32_t i = 0; i < m->hp.n_layer * EL_N_LINEAR; i++) {
        const el_adapter_src *s = &src[i];
        if ((s->a_name != NULL) != (s->b_name != NULL))
            return el_error(EL_ERR_FORMAT, "%s: tensor '%s' has no %s partner", path,
                            s->a_name ? s->a_name : s->b_name, s->a_name ? "lora_B" : "lora_A");
    }
    return EL_OK;
}

el_status el_adapter_load_peft(el_adapter *ad, const char *path) {
    char cfg_path[4096], st_path[4096];
    el_status st = peft_paths(path, cfg_path, st_path, sizeof cfg_path);
    if (st) return st;
    el_mapped_file map = {0};
    el_json_doc *doc = NULL;
    el_st_file *f = NULL;
    size_t n_slots = (size_t)ad->model->hp.n_layer * EL_N_LINEAR;
    el_adapter_src *src = calloc(n_slots, sizeof *src);
    peft_config c = {0};
    if (!src) return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    if (!(st = el_map_file(cfg_path, &map)) &&
        !(st = el_json_parse((const char *)map.data, map.size, cfg_path, &doc)) &&
        !(st = read_config(el_json_root(doc), cfg_path, &c)) && !(st = el_st_open(st_path, &f)) &&
        !(st = read_tensors(f, ad->model, &c, src)))
        st = el_adapter_build(ad, src, st_path);
    if (!st) ad->alpha = (float)c.alpha;
    free(src);
    el_st_close(f);
    el_json_free(doc);
    el_unmap_file(&map);
    return st;
}
