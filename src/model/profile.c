/* profile.c - reading, checking, applying and writing quantization profiles (profile.h).
 *
 * File: a GGUF with general.type = "profile", profile.base_fingerprint (u64: the model it was
 * made for), profile.id (u64: el_profile_id of its scales, so a damaged scale is caught), and
 * two F32 tensors: profile.slot_scales, ne = [4, n_layer * 7] (x, a, t, b per slot, in slot
 * order), and profile.output_x_scale, ne = [1]. */
#include "model/profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "formats/gguf.h"
#include "kernels/blocks.h"
#include "kernels/dispatch.h"
#include "kernels/types.h"
#include "model/model.h"

enum { SCALES_PER_SLOT = 4 };

static const char *const key_base = "profile.base_fingerprint";
static const char *const key_id = "profile.id";
static const char *const tensor_slots = "profile.slot_scales";
static const char *const tensor_output = "profile.output_x_scale";

/* Scales beyond this are no activation's or weight's: a file that holds one is damaged. */
static const float scale_max = 1e30f;

uint64_t el_profile_id(const el_profile *p) {
    uint64_t h = el_fnv1a(el_fnv_offset, p->slots, (size_t)p->n_slots * sizeof *p->slots);
    return el_fnv1a(h, &p->output_x_scale, sizeof p->output_x_scale);
}

void el_profile_free(el_profile *p) {
    if (!p) return;
    free(p->slots);
    free(p->path);
    free(p);
}

static bool scale_ok(float d) { return isfinite(d) && d >= 0.0f && d <= scale_max; }

static const char *const scale_names[SCALES_PER_SLOT] = {"x", "a", "t", "b"};

/* Every scale of slot i valid, and its adapter scales (a, t, b) all set or all zero, with x set
 * where they are (A reads the int8 x). */
static el_status check_slot(const el_profile *p, int32_t i) {
    const el_profile_slot *s = &p->slots[i];
    const float v[SCALES_PER_SLOT] = {s->x_scale, s->a_scale, s->t_scale, s->b_scale};
    for (int k = 0; k < SCALES_PER_SLOT; k++)
        if (!scale_ok(v[k]))
            return el_error(EL_ERR_FORMAT, "%s: layer %d %s: scale %s = %g is not a finite "
                            "number from 0 to %g", p->path, i / EL_N_LINEAR,
                            el_linear_tensor_suffix((el_linear)(i % EL_N_LINEAR)),
                            scale_names[k], (double)v[k], (double)scale_max);
    int set = (s->a_scale > 0) + (s->t_scale > 0) + (s->b_scale > 0);
    if ((set != 0 && set != 3) || (set == 3 && !(s->x_scale > 0)))
        return el_error(EL_ERR_FORMAT, "%s: layer %d %s: adapter scales x %g, a %g, t %g, b %g "
                        "are partly zero (all four are set where adapters apply, or a, t and b "
                        "are all zero)", p->path, i / EL_N_LINEAR,
                        el_linear_tensor_suffix((el_linear)(i % EL_N_LINEAR)),
                        (double)s->x_scale, (double)s->a_scale, (double)s->t_scale,
                        (double)s->b_scale);
    return EL_OK;
}

static el_status read_u64(const gguf_file *f, const char *path, const char *key, uint64_t *out) {
    el_status st = gguf_get_u64(f, key, out);
    if (st == EL_ERR_NOT_FOUND)
        return el_error(EL_ERR_FORMAT, "%s: %s is missing (not a profile?)", path, key);
    return st;
}

static const gguf_tensor *find_f32(const gguf_file *f, const char *path, const char *name,
                                   int64_t ne0, int64_t ne1, el_status *st) {
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) {
        *st = el_error(EL_ERR_FORMAT, "%s: tensor '%s' is missing", path, name);
        return NULL;
    }
    if (t->type != EL_TYPE_F32 || t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != 1 ||
        t->ne[3] != 1) {
        *st = el_error(EL_ERR_MISMATCH, "%s: tensor '%s' is %s [%lld, %lld]; a profile for "
                       "this model has f32 [%lld, %lld] (a profile for another model?)", path,
                       name, el_type_layout_get(t->type) ? el_type_layout_get(t->type)->name
                                                         : "of an unknown type",
                       (long long)t->ne[0], (long long)t->ne[1], (long long)ne0, (long long)ne1);
        return NULL;
    }
    *st = EL_OK;
    return t;
}

static el_status read_profile(const gguf_file *f, const el_model *m, el_profile *p) {
    const char *path = p->path;
    gguf_str s;
    el_status st = gguf_get_str(f, "general.type", &s);
    if (st == EL_ERR_NOT_FOUND || (st == EL_OK && !gguf_str_eq(s, "profile")))
        return el_error(EL_ERR_FORMAT, "%s: not a quantization profile (general.type is not "
                        "'profile')", path);
    if (st) return st;
    uint64_t id;
    if ((st = read_u64(f, path, key_base, &p->base)) || (st = read_u64(f, path, key_id, &id)))
        return st;
    if (p->base != el_model_fingerprint(m))
        return el_error(EL_ERR_MISMATCH, "%s: the profile was made for another model "
                        "(fingerprint %016llx; %s is %016llx)", path,
                        (unsigned long long)p->base, m->path,
                        (unsigned long long)el_model_fingerprint(m));
    p->n_slots = m->hp.n_layer * EL_N_LINEAR;
    const gguf_tensor *ts = find_f32(f, path, tensor_slots, SCALES_PER_SLOT, p->n_slots, &st);
    const gguf_tensor *to = ts ? find_f32(f, path, tensor_output, 1, 1, &st) : NULL;
    if (!to) return st;
    if (!(p->slots = malloc((size_t)p->n_slots * sizeof *p->slots)))
        return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    const float *v = ts->data; /* the reader checked the extent; GGUF aligns tensor data */
    for (int32_t i = 0; i < p->n_slots; i++)
        p->slots[i] = (el_profile_slot){v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]};
    memcpy(&p->output_x_scale, to->data, sizeof p->output_x_scale);
    for (int32_t i = 0; i < p->n_slots; i++)
        if ((st = check_slot(p, i))) return st;
    if (!scale_ok(p->output_x_scale))
        return el_error(EL_ERR_FORMAT, "%s: the output head's scale %g is not a finite number "
                        "from 0 to %g", path, (double)p->output_x_scale, (double)scale_max);
    p->id = el_profile_id(p);
    if (p->id != id)
        return el_error(EL_ERR_FORMAT, "%s: the scales do not match profile.id %016llx (they "
                        "hash to %016llx): the file is damaged", path, (unsigned long long)id,
                        (unsigned long long)p->id);
    return EL_OK;
}

/* Whether w's activations are int8 rows that can take a static scale: A8 (W8, W4, W4G) and the
 * 8-bit blocks of ggml's types (Q8_0, Q8_1, Q8_K), whose every block then holds the profile's
 * scale; float types have no grid to fix. */
static bool takes_static_scale(const el_weight *w) {
    el_type vt = el_type_kernels_get(w->type)->vec_dot_type;
    /* W8A16's int16 activations keep their scale per token: the profile's int8 grid would
     * throw away the resolution they are there for */
    return vt != EL_TYPE_A16 && el_kernels_get()->quantize_static[vt] != NULL;
}

/* A positive x scale that w's activation blocks cannot hold: f16 (q8_0, q8_1) makes a scale
 * beyond 65504 infinite and one under its smallest normal (6.1e-5) coarse or zero. */
static bool scale_unfit(const el_weight *w, float d) {
    if (!(d > 0.0f) || !takes_static_scale(w)) return false;
    el_type vt = el_type_kernels_get(w->type)->vec_dot_type;
    float step = el_static_step(vt, d);
    return !isfinite(step) || (step != d && step < 0x1p-14f);
}

/* Every slot's x scale (and the head's) one its weight's activations can take. */
static el_status check_fit(const el_model *m, const el_profile *p) {
    for (int32_t i = 0; i < p->n_slots; i++) {
        const el_weight *w = el_layer_weight(&m->layers[i / EL_N_LINEAR],
                                             (el_linear)(i % EL_N_LINEAR));
        if (scale_unfit(w, p->slots[i].x_scale))
            return el_error(EL_ERR_MISMATCH, "%s: layer %d %s: scale x = %g does not fit the f16 "
                            "scale of %s's activation blocks (6.1e-5 to 65504)", p->path,
                            i / EL_N_LINEAR, el_linear_tensor_suffix((el_linear)(i % EL_N_LINEAR)),
                            (double)p->slots[i].x_scale, el_type_layout_get(w->type)->name);
    }
    if (scale_unfit(&m->output, p->output_x_scale))
        return el_error(EL_ERR_MISMATCH, "%s: the output head's scale x = %g does not fit the f16 "
                        "scale of %s's activation blocks (6.1e-5 to 65504)", p->path,
                        (double)p->output_x_scale, el_type_layout_get(m->output.type)->name);
    return EL_OK;
}

/* The profile's x scales replace the static ones of weights dotted with int8 activations, and
 * the per-block scales of the block types (a tied head is token_embd: both views get it). */
static void apply_act_scales(el_model *m, const el_profile *p) {
    for (int32_t i = 0; i < p->n_slots; i++) {
        el_weight *w = (el_weight *)el_layer_weight(&m->layers[i / EL_N_LINEAR],
                                                    (el_linear)(i % EL_N_LINEAR));
        if (takes_static_scale(w)) w->act_scale = p->slots[i].x_scale;
    }
    if (takes_static_scale(&m->output)) {
        if (m->output.data == m->tok_embd.data) m->tok_embd.act_scale = p->output_x_scale;
        m->output.act_scale = p->output_x_scale;
    }
}

el_status el_profile_load(el_model *m, const char *path) {
    if (!m->has_weights)
        return el_error(EL_ERR_INVALID_ARG, "%s: a profile needs a model with weights", path);
    if (m->profile)
        return el_error(EL_ERR_INVALID_ARG, "%s: %s already runs under profile %s", path,
                        m->path, m->profile->path);
    el_profile *p = calloc(1, sizeof *p);
    if (!p || !(p->path = strdup(path))) {
        free(p);
        return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    }
    gguf_file *f = NULL;
    el_status st = gguf_open(path, &f);
    if (st == EL_OK) st = read_profile(f, m, p);
    if (st == EL_OK) st = check_fit(m, p);
    gguf_close(f);
    if (st) {
        el_profile_free(p);
        return st;
    }
    apply_act_scales(m, p);
    m->profile = p;
    return EL_OK;
}

el_status el_profile_write(const el_profile *p, const char *path) {
    gguf_writer *w = gguf_writer_create();
    float *v = malloc((size_t)p->n_slots * SCALES_PER_SLOT * sizeof *v);
    el_status st = w && v ? EL_OK : el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    for (int32_t i = 0; st == EL_OK && i < p->n_slots; i++) {
        const el_profile_slot *s = &p->slots[i];
        memcpy(v + 4 * i, (const float[]){s->x_scale, s->a_scale, s->t_scale, s->b_scale},
               SCALES_PER_SLOT * sizeof *v);
    }
    const int64_t ne_slots[2] = {SCALES_PER_SLOT, p->n_slots}, ne_out[1] = {1};
    if (!st) st = gguf_writer_set_str(w, "general.type", "profile");
    if (!st) st = gguf_writer_set_u64(w, key_base, p->base);
    if (!st) st = gguf_writer_set_u64(w, key_id, el_profile_id(p));
    if (!st)
        st = gguf_writer_add_tensor(w, tensor_slots, EL_TYPE_F32, 2, ne_slots, v,
                                    (uint64_t)p->n_slots * SCALES_PER_SLOT * sizeof *v);
    if (!st)
        st = gguf_writer_add_tensor(w, tensor_output, EL_TYPE_F32, 1, ne_out, &p->output_x_scale,
                                    sizeof p->output_x_scale);
    if (!st) st = gguf_writer_write(w, path);
    gguf_writer_free(w);
    free(v);
    return st;
}
