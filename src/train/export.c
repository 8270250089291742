/* export.c - GGUF model and adapter writers, and loading a base model for LoRA training. */
#include "train/export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/outfile.h"
#include "formats/gguf.h"
#include "formats/json.h"
#include "compress/quantize.h"
#include "kernels/blocks.h"
#include "kernels/dispatch.h"
#include "kernels/edge.h"
#include "kernels/types.h"
#include "model/model.h"
#include "model/profile.h"
#include "model/prune.h"
#include "runtime/adapter.h"

/* Adds tensor t of a block as F32 (ne = {n_in, n_out}, or {n_in} for a vector). */
static el_status add_f32(gguf_writer *w, const el_ttensor *t, const float *block) {
    int64_t ne[2] = {t->n_in, t->n_out};
    return gguf_writer_add_tensor(w, t->name, EL_TYPE_F32, t->n_out == 1 ? 1 : 2, ne,
                                  block + t->offset,
                                  (uint64_t)(t->n_in * t->n_out) * sizeof(float));
}

/* Adds every tensor of a table. */
static el_status add_tensors(gguf_writer *w, const el_ttable *tb, const float *block) {
    el_status st = EL_OK;
    for (int32_t i = 0; i < tb->n && st == EL_OK; i++) st = add_f32(w, &tb->t[i], block);
    return st;
}

/* A linear weight of a QAT model with int4 weights: its rows go to the W4 type as the file is
 * written. Its values are the grid's the training forward computed with (el_fq_int4_rows). */
typedef struct w4_tensor {
    const float *w;
    int64_t n_out, n_in;
} w4_tensor;

static el_status fill_w4(void *user, void *buf, uint64_t nbytes) {
    const w4_tensor *t = user;
    size_t row = el_row_size(EL_TYPE_W4, t->n_in);
    for (int64_t r = 0; r < t->n_out; r++)
        el_w4_from_float(t->w + r * t->n_in, (uint8_t *)buf + (size_t)r * row, t->n_in);
    return EL_OK;
}

/* The base block of a QAT model: the linear weights as W4, each with its input's static scale
 * ("<name>.act_scale", model/act_scales.c) where it has one; the rest F32. w4 has a slot for each
 * linear weight. */
static el_status add_qat_tensors(gguf_writer *w, const el_tmodel *m, w4_tensor *w4) {
    el_status st = EL_OK;
    int n = 0;
    for (int32_t i = 0; i < m->base.n && st == EL_OK; i++) {
        const el_ttensor *t = &m->base.t[i];
        int64_t ne[2] = {t->n_in, t->n_out};
        int k = i >= 1 && i <= m->c.n_layer * EL_TK_COUNT ? (i - 1) % EL_TK_COUNT : -1;
        if (k < EL_TK_FIRST_LINEAR) {
            st = add_f32(w, t, m->w);
            continue;
        }
        w4[n] = (w4_tensor){m->w + t->offset, t->n_out, t->n_in};
        st = gguf_writer_add_tensor_fill(w, t->name, EL_TYPE_W4, 2, ne,
                                         el_row_size(EL_TYPE_W4, t->n_in) * (uint64_t)t->n_out,
                                         fill_w4, &w4[n]);
        const float *d = &m->qat.x_scale[(i - 1) / EL_TK_COUNT * EL_TN_LINEAR + k -
                                         EL_TK_FIRST_LINEAR];
        n++;
        if (st == EL_OK && *d > 0.0f) {
            char name[80];
            int64_t one = 1;
            snprintf(name, sizeof name, "%s.act_scale", t->name);
            st = gguf_writer_add_tensor(w, name, EL_TYPE_F32, 1, &one, d, sizeof *d);
        }
    }
    return st;
}

el_status el_export_model(const el_tmodel *m, const char *tokenizer_gguf, const char *name,
                          const char *out_path) {
    gguf_file *tok;
    el_status st = gguf_open(tokenizer_gguf, &tok);
    if (st)
        return st;
    gguf_writer *w = gguf_writer_create();
    if (!w) {
        gguf_close(tok);
        return el_error(EL_ERR_NOMEM, "out of memory");
    }
    const el_tconfig *c = &m->c;
    bool int4 = m->qat.int4_weights;
    w4_tensor *w4 = int4 ? calloc((size_t)c->n_layer * EL_TN_LINEAR, sizeof *w4) : NULL;
    if (int4 && !w4) {
        gguf_writer_free(w);
        gguf_close(tok);
        return el_error(EL_ERR_NOMEM, "out of memory");
    }
    if ((st = gguf_writer_copy_kv(w, tok)) == EL_OK &&
        (st = gguf_writer_set_str(w, "general.architecture", "llama")) == EL_OK &&
        (st = gguf_writer_set_str(w, "general.name", name)) == EL_OK &&
        (st = gguf_writer_set_u32(w, "general.file_type",
                                  int4 ? el_quant_file_type(EL_TYPE_W4) : 0)) == EL_OK &&
        (st = gguf_writer_set_u32(w, "llama.context_length", (uint32_t)c->n_ctx)) == EL_OK &&
        (st = gguf_writer_set_u32(w, "llama.embedding_length", (uint32_t)c->dim)) == EL_OK &&
        (st = gguf_writer_set_u32(w, "llama.block_count", (uint32_t)c->n_layer)) == EL_OK &&
        (st = gguf_writer_set_u32(w, "llama.feed_forward_length", (uint32_t)c->n_ff)) == EL_OK &&
        (st = gguf_writer_set_u32(w, "llama.attention.head_count", (uint32_t)c->n_head)) ==
            EL_OK &&
        (st = gguf_writer_set_u32(w, "llama.attention.head_count_kv", (uint32_t)c->n_head_kv)) ==
            EL_OK &&
        (st = gguf_writer_set_u32(w, "llama.rope.dimension_count",
                                  (uint32_t)(c->dim / c->n_head))) == EL_OK &&
        (st = gguf_writer_set_f32(w, "llama.rope.freq_base", c->rope_base)) == EL_OK &&
        (st = gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", c->rms_eps)) ==
            EL_OK &&
        (st = gguf_writer_set_u32(w, "llama.vocab_size", (uint32_t)c->n_vocab)) == EL_OK &&
        (st = int4 ? add_qat_tensors(w, m, w4) : add_tensors(w, &m->base, m->w)) == EL_OK)
        st = gguf_writer_write(w, out_path);
    gguf_writer_free(w);
    gguf_close(tok);
    free(w4);
    return st;
}

/* The A and B of every term the model has (a layer left without one, lora_idx -1, has none). */
static el_status add_lora_tensors(gguf_writer *w, const el_tmodel *m) {
    el_status st = EL_OK;
    for (int32_t s = 0; s < m->c.n_layer * EL_TN_LINEAR && st == EL_OK; s++) {
        int32_t li = m->lora_idx[s];
        for (int ab = 0; li >= 0 && ab < 2 && st == EL_OK; ab++)
            st = add_f32(w, &m->lora.t[li + ab], m->lw);
    }
    return st;
}

el_status el_export_lora(const el_tmodel *m, const char *arch, uint64_t profile_id,
                         uint64_t uniql_basis, const char *out_path) {
    gguf_writer *w = gguf_writer_create();
    if (!w)
        return el_error(EL_ERR_NOMEM, "out of memory");
    el_status st;
    if ((st = gguf_writer_set_str(w, "general.architecture", arch)) == EL_OK &&
        (st = gguf_writer_set_str(w, "general.type", "adapter")) == EL_OK &&
        (st = gguf_writer_set_str(w, "adapter.type", "lora")) == EL_OK &&
        (st = gguf_writer_set_f32(w, "adapter.lora.alpha", m->alpha)) == EL_OK &&
        (st = profile_id ? gguf_writer_set_u64(w, "adapter.profile", profile_id) : EL_OK) ==
            EL_OK &&
        (st = uniql_basis ? gguf_writer_set_u64(w, EL_ADAPTER_UNIQL_BASIS_KEY, uniql_basis)
                          : EL_OK) == EL_OK &&
        (st = add_lora_tensors(w, m)) == EL_OK)
        st = gguf_writer_write(w, out_path);
    gguf_writer_free(w);
    return st;
}

/* ------------------------------------------------------------- PEFT */

static const char *const hf_names[EL_TN_LINEAR] = {"self_attn.q_proj", "self_attn.k_proj",
                                                  "self_attn.v_proj", "self_attn.o_proj",
                                                  "mlp.gate_proj",    "mlp.up_proj",
                                                  "mlp.down_proj"};

/* GGUF's llama q/k rows are Hugging Face's permuted so that rotary pairs are adjacent: HF row
 * (h, half j, i) is GGUF row (h, i, j) for a head of hd = 2 * half rows. dst gets HF order. */
static void unpermute_rows(float *dst, const float *src, int64_t n_heads, int64_t hd,
                           int64_t row_len) {
    int64_t half = hd / 2;
    for (int64_t h = 0; h < n_heads; h++)
        for (int64_t j = 0; j < 2; j++)
            for (int64_t i = 0; i < half; i++)
                memcpy(dst + ((h * hd) + j * half + i) * row_len,
                       src + ((h * hd) + i * 2 + j) * row_len, (size_t)row_len * sizeof(float));
}

el_status el_export_peft(const el_tmodel *m, const char *base_name, const char *dir) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return el_error(EL_ERR_IO, "%s: cannot create the folder", dir);
    char path[4096];
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    el_outfile config;
    el_status st = el_outfile_open(&config, path);
    if (st != EL_OK) return st;
    FILE *f = config.f;
    fprintf(f, "{\n  \"peft_type\": \"LORA\",\n  \"task_type\": \"CAUSAL_LM\",\n"
               "  \"base_model_name_or_path\": ");
    el_json_write_string(f, base_name, strlen(base_name));
    fprintf(f, ",\n  \"r\": %d,\n  \"lora_alpha\": %.9g,\n  \"lora_dropout\": 0.0,\n"
               "  \"bias\": \"none\",\n  \"fan_in_fan_out\": false,\n  \"target_modules\": [",
            m->rank, (double)m->alpha);
    for (int i = 0, first = 1; i < EL_TN_LINEAR; i++)
        if (m->targets & (1u << i)) {
            fprintf(f, "%s\"%s\"", first ? "" : ", ", strchr(hf_names[i], '.') + 1);
            first = 0;
        }
    fprintf(f, "]\n}\n");
    if ((st = el_outfile_commit(&config)) != EL_OK) return st;

    /* safetensors: u64 header length, JSON header, data; tensor names as PEFT saves them */
    size_t hcap = 256 + (size_t)m->lora.n * 160, hlen = 0;
    char *hdr = malloc(hcap);
    float *data = malloc(m->lora.n_floats * sizeof(float));
    if (!hdr || !data) {
        free(hdr);
        free(data);
        return el_error(EL_ERR_NOMEM, "out of memory");
    }
    hlen += (size_t)snprintf(hdr + hlen, hcap - hlen, "{\"__metadata__\":{\"format\":\"pt\"}");
    int64_t hd = m->c.dim / m->c.n_head;
    for (int il = 0; il < m->c.n_layer; il++)
        for (int i = 0; i < EL_TN_LINEAR; i++) {
            int32_t li = m->lora_idx[il * EL_TN_LINEAR + i];
            if (li < 0)
                continue;
            for (int ab = 0; ab < 2; ab++) {
                const el_ttensor *t = &m->lora.t[li + ab];
                const float *src = m->lw + t->offset;
                float *dst = data + t->offset;
                int64_t heads = i == 0 ? m->c.n_head : m->c.n_head_kv;
                if (ab == 1 && i <= 1) /* B of q or k: rows in HF order */
                    unpermute_rows(dst, src, heads, hd, t->n_in);
                else
                    memcpy(dst, src, (size_t)(t->n_in * t->n_out) * sizeof(float));
                hlen += (size_t)snprintf(
                    hdr + hlen, hcap - hlen,
                    ",\"base_model.model.model.layers.%d.%s.lora_%c.weight\":{\"dtype\":\"F32\","
                    "\"shape\":[%lld,%lld],\"data_offsets\":[%zu,%zu]}",
                    il, hf_names[i], ab ? 'B' : 'A', (long long)t->n_out, (long long)t->n_in,
                    t->offset * sizeof(float),
                    (t->offset + (size_t)(t->n_in * t->n_out)) * sizeof(float));
            }
        }
    hlen += (size_t)snprintf(hdr + hlen, hcap - hlen, "}");
    while (hlen % 8) /* data 8-byte aligned, header padded with spaces as the format allows */
        hdr[hlen++] = ' ';
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    el_outfile out;
    st = el_outfile_open(&out, path);
    if (st == EL_OK) {
        uint64_t n = hlen;
        bool ok = fwrite(&n, 8, 1, out.f) == 1 && fwrite(hdr, 1, hlen, out.f) == hlen &&
                  fwrite(data, sizeof(float), m->lora.n_floats, out.f) == m->lora.n_floats;
        if (ok) {
            st = el_outfile_commit(&out);
        } else {
            el_outfile_discard(&out);
            st = el_error(EL_ERR_IO, "%s: cannot write", path);
        }
    }
    free(hdr);
    free(data);
    return st;
}

/* ------------------------------------------------------------- base model */

/* The training shape of a loaded model, with context n_ctx (0: its training context). */
static el_status config_of(const el_model *model, int32_t n_ctx, el_tconfig *c) {
    const el_hparams *hp = &model->hp;
    if (!model->has_weights)
        return el_error(EL_ERR_INVALID_ARG, "%s: the model has no weights", model->path);
    if (strcmp(model->arch, "llama") != 0 || hp->head_dim_k != hp->n_embd / hp->n_head ||
        hp->head_dim_v != hp->head_dim_k || hp->n_rot != hp->head_dim_k ||
        hp->rope_freq_scale != 1.0f || model->rope_freqs)
        return el_error(EL_ERR_UNSUPPORTED, "%s: training supports plain llama models (full "
                        "rotary, no rope scaling); this is %s", model->path, model->arch);
    *c = (el_tconfig){.dim = hp->n_embd, .n_layer = hp->n_layer, .n_head = hp->n_head,
                      .n_head_kv = hp->n_head_kv, .n_ff = hp->n_ff,
                      .n_ctx = n_ctx > 0 ? n_ctx : hp->n_ctx_train, .n_vocab = hp->n_vocab,
                      .tied = model->output.data == model->tok_embd.data,
                      .rms_eps = hp->rms_eps, .rope_base = hp->rope_freq_base};
    return EL_OK;
}

/* Copies a loaded model's weights into m, of its shape but for an FFN at least as wide: the
 * channels the model lacks keep m's gate and up rows and get zero down columns, so m computes
 * the model's function and the new channels still learn (gate and up of zero would give them
 * zero gradients forever). */
static el_status load_weights(el_tmodel *m, const el_model *model) {
    const el_tconfig *c = &m->c;
    int64_t f0 = model->hp.n_ff;
    float *w = m->w, *down = malloc((size_t)(c->dim * f0) * sizeof *down);
    if (!down) return el_error(EL_ERR_NOMEM, "%s: out of memory", model->path);
    el_weight_floats(&model->tok_embd, el_tm_embd(m, w));
    for (int il = 0; il < c->n_layer; il++) {
        const el_layer *l = &model->layers[il];
        memcpy(el_tm_layer(m, w, il, EL_TK_ATTN_NORM), l->attn_norm, (size_t)c->dim * 4);
        memcpy(el_tm_layer(m, w, il, EL_TK_FFN_NORM), l->ffn_norm, (size_t)c->dim * 4);
        for (int i = 0; i < EL_TN_LINEAR; i++) {
            el_tkind k = (el_tkind)(EL_TK_FIRST_LINEAR + i);
            if (k != EL_TK_DOWN) { /* the model's rows first */
                el_weight_floats(el_layer_weight(l, (el_linear)i), el_tm_layer(m, w, il, k));
                continue;
            }
            el_weight_floats(el_layer_weight(l, (el_linear)i), down);
            float *d = el_tm_layer(m, w, il, k);
            for (int64_t r = 0; r < c->dim; r++) {
                memcpy(d + r * c->n_ff, down + r * f0, (size_t)f0 * sizeof *d);
                memset(d + r * c->n_ff + f0, 0, (size_t)(c->n_ff - f0) * sizeof *d);
            }
        }
    }
    memcpy(el_tm_out_norm(m, w), model->output_norm, (size_t)c->dim * 4);
    if (!c->tied)
        el_weight_floats(&model->output, el_tm_output(m, w));
    free(down);
    return EL_OK;
}

el_status el_tmodel_from_model(el_tmodel *m, const el_model *model, int32_t n_ctx) {
    el_tconfig c;
    el_status st = config_of(model, n_ctx, &c);
    if (st == EL_OK) st = el_tmodel_init(m, &c);
    return st ? st : load_weights(m, model);
}

el_status el_tmodel_widen_from_model(el_tmodel *m, const el_model *model, int32_t n_ff,
                                     uint64_t seed) {
    el_tconfig c;
    el_status st = config_of(model, 0, &c);
    if (st) return st;
    if (n_ff < c.n_ff)
        return el_error(EL_ERR_INVALID_ARG, "%s: an FFN of %d channels is narrower than the "
                        "model's %d; it can only grow", model->path, n_ff, c.n_ff);
    c.n_ff = n_ff;
    if ((st = el_tmodel_init(m, &c))) return st;
    el_tmodel_randomize(m, seed);
    return load_weights(m, model);
}

/* What a weight's input is at run time: 1 int8 at a static scale (*d: its grid step), 0
 * floats, -1 int8 at scales of each row or block as it runs. */
static int weight_input(const el_weight *w, float *d) {
    el_type t = el_type_kernels_get(w->type)->vec_dot_type;
    *d = 0.0f;
    if (t == EL_TYPE_F32 || t == EL_TYPE_F16 || t == EL_TYPE_BF16) return 0;
    if (!(w->act_scale > 0.0f) || !el_kernels_get()->quantize_static[t]) return -1;
    *d = el_static_step(t, w->act_scale);
    return 1;
}

el_status el_tmodel_qat_from_model(el_tmodel *m, const el_model *model) {
    el_status st = el_tmodel_set_qat(m, false, 0.0f);
    if (st != EL_OK) return st;
    int n_int8 = 0;
    for (int il = 0; il <= m->c.n_layer; il++)
        for (int i = 0; i < (il < m->c.n_layer ? EL_TN_LINEAR : 1); i++) {
            const el_weight *w = il < m->c.n_layer
                                     ? el_layer_weight(&model->layers[il], (el_linear)i)
                                     : &model->output;
            int kind = weight_input(w, &m->qat.x_scale[il * EL_TN_LINEAR + i]);
            if (kind < 0) {
                char name[64];
                if (il < m->c.n_layer)
                    snprintf(name, sizeof name, "blk.%d.%s.weight", il,
                             el_linear_gguf_name((el_linear)i));
                else
                    snprintf(name, sizeof name, "the output head");
                return el_error(EL_ERR_UNSUPPORTED, "%s: %s is %s, whose input is quantized at "
                                "scales of its own as it runs; quantization-aware fine-tuning "
                                "needs int8 inputs at static scales (a model from train --qat "
                                "w4a8, quantize --type w4a8 --calibrate, or a W8, W4 or ggml "
                                "block-type model under a profile)", model->path, name,
                                el_type_layout_get(w->type)->name);
            }
            n_int8 += kind;
        }
    const el_profile *p = model->profile;
    if (p && m->rank) {
        if ((st = el_tmodel_set_qat_lora(m)) != EL_OK) return st;
        for (int il = 0; il < m->c.n_layer; il++)
            for (int i = 0; i < EL_TN_LINEAR; i++) {
                if (m->lora_idx[il * EL_TN_LINEAR + i] < 0) continue;
                const el_profile_slot *ps = &p->slots[el_linear_slot(il, (el_linear)i)];
                if (!(ps->x_scale > 0.0f && ps->a_scale > 0.0f && ps->t_scale > 0.0f &&
                      ps->b_scale > 0.0f))
                    return el_error(EL_ERR_MISMATCH, "%s: the profile has no adapter "
                                    "scales for blk.%d.%s, so no adapter can change it under "
                                    "the profile",
                                    p->path, il, el_linear_gguf_name((el_linear)i));
                float *sc = m->qat.lora_scale + ((size_t)il * EL_TN_LINEAR + i) * 4;
                sc[0] = ps->x_scale, sc[1] = ps->a_scale, sc[2] = ps->t_scale;
                sc[3] = ps->b_scale;
                n_int8++;
            }
    }
    if (n_int8 == 0)
        return el_error(EL_ERR_INVALID_ARG, "%s: no weight takes int8 inputs: the model runs in "
                        "floats, so there is nothing to be quantization-aware of", model->path);
    return EL_OK;
}

el_status el_tmodel_add_adapter(el_tmodel *m, const el_adapter *ad, const char *path) {
    uint32_t targets = 0;
    int32_t rank = 0;
    float scale = 0;
    for (int il = 0; il < m->c.n_layer; il++)
        for (int i = 0; i < EL_TN_LINEAR; i++) {
            const el_lora_pair *p = &ad->table[el_linear_slot(il, (el_linear)i)];
            if (!p->a.n_out) continue;
            if ((rank && p->a.n_out != rank) || (scale && p->scale != scale))
                return el_error(EL_ERR_UNSUPPORTED, "%s: training through an adapter needs one rank "
                                "and one scale for every target", path);
            rank = (int32_t)p->a.n_out, scale = p->scale;
            targets |= 1u << i;
        }
    if (!rank) return el_error(EL_ERR_FORMAT, "%s: the adapter changes nothing", path);
    el_status st = el_tmodel_add_lora(m, rank, scale * (float)rank, targets, 0);
    for (int il = 0; !st && il < m->c.n_layer; il++)
        for (int i = 0; !st && i < EL_TN_LINEAR; i++) {
            int32_t li = m->lora_idx[il * EL_TN_LINEAR + i];
            const el_lora_pair *p = &ad->table[el_linear_slot(il, (el_linear)i)];
            if (li < 0) continue;
            float *a = m->lw + m->lora.t[li].offset, *b = m->lw + m->lora.t[li + 1].offset;
            if (!p->a.n_out) { /* not in this layer: no term, and none written back */
                memset(b, 0, (size_t)(m->lora.t[li + 1].n_out * rank) * sizeof *b);
                m->lora_idx[il * EL_TN_LINEAR + i] = -1;
                continue;
            }
            el_weight_floats(&p->a, a);
            st = el_lora_b_floats(p, b);
        }
    return st;
}

