/* quantize.c - el_quantize: a GGUF model to one with every weight matrix in another type.
 *
 * The input is mapped; each weight is converted row by row (dequantize the stored row to float,
 * quantize it with the type's reference quantizer, dequantize the result again to measure the
 * error) with the rows split across a thread pool. Tensors are produced one at a time as the
 * GGUF writer writes them to a temporary file, which is renamed over the output only when
 * complete (and removed on any failure or cancellation), so the output never exists
 * half-written and only one converted tensor is in memory. Which tensors are converted, the
 * type of each (a mix of llama.cpp's, src/compress/mix.c, or with `pure` one type for all),
 * the fallback types and the general.file_type numbers follow llama.cpp's llama-quantize;
 * see docs/quantize.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress/calibrate.h"
#include "compress/mix.h"
#include "compress/quantize.h"
#include "core/error.h"
#include "core/threadpool.h"
#include "formats/gguf.h"
#include "model/model.h"
#include "model/prune.h"

el_quantize_params el_quantize_default_params(void) {
    return (el_quantize_params){.type = "q8_0", .n_threads = 0, .progress = NULL, .user = NULL,
                                .calib_path = NULL, .calib_tokens = 8192,
                                .calib_percentile = 99.99, .calib_progress = NULL,
                                .pure = false};
}

/* The type `name` asks for: a mix of llama.cpp's, else one of our own weight types (which are
 * written pure: they have no mixes). */
static bool resolve_type(const char *name, const el_mix **mix, el_type *t) {
    if ((*mix = el_mix_find(name))) {
        *t = (*mix)->base;
        return true;
    }
    return name && el_type_from_name(name, t) && el_type_is_weight(*t);
}

el_status el_quantize_type_check(const char *type, bool *llama_cpp_readable) {
    const el_mix *mix;
    el_type t;
    if (!resolve_type(type, &mix, &t)) {
        char names[768] = "";
        int n_mixes;
        const el_mix *mixes = el_mix_list(&n_mixes);
        for (int i = 0; i < n_mixes; i++) {
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", mixes[i].name);
        }
        for (uint32_t i = 0; i < EL_TYPE_COUNT; i++) {
            if (!el_type_is_weight((el_type)i) || el_quant_type_is_ggml((el_type)i)) continue;
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, ", %s", el_type_layout_get(i)->name);
        }
        return el_error(EL_ERR_INVALID_ARG, "unknown quantization type '%s' (known: %s)",
                        type ? type : "(null)", names);
    }
    if (llama_cpp_readable) *llama_cpp_readable = el_quant_type_is_ggml(t);
    return EL_OK;
}

bool el_quant_type_is_ggml(el_type t) { return (uint32_t)t < 64; }

/* llama.cpp's llama_ftype for a file whose weights are (mostly) of type t: that of the mix of
 * t's name (Q3_K, Q4_K and Q5_K are the _M mixes, as in llama-quantize). Our own types have
 * no llama.cpp number: they get 1000 + their type id. */
uint32_t el_quant_file_type(el_type t) {
    const el_type_layout *layout = el_type_layout_get((uint32_t)t);
    const el_mix *mix = layout ? el_mix_find(layout->name) : NULL;
    return mix ? mix->file_type : 1000 + (uint32_t)t;
}

/* Whether a row of n elements can be stored in t (whole blocks). */
static bool fits(el_type t, int64_t n) {
    const el_type_layout *layout = el_type_layout_get((uint32_t)t);
    return layout && n % layout->block_size == 0;
}

el_type el_quant_fit_type(el_type want, int64_t n_in) {
    if (fits(want, n_in)) return want;
    /* llama.cpp's: each type of blocks of 256 to one of blocks of 32 */
    static const struct { el_type from, to; } smaller_blocks[] = {
        {EL_TYPE_Q2_K, EL_TYPE_Q4_0}, {EL_TYPE_Q3_K, EL_TYPE_Q4_0},
        {EL_TYPE_Q4_K, EL_TYPE_Q5_0}, {EL_TYPE_Q5_K, EL_TYPE_Q5_1},
        {EL_TYPE_Q6_K, EL_TYPE_Q8_0}, {EL_TYPE_IQ4_XS, EL_TYPE_IQ4_NL},
    };
    for (size_t i = 0; i < sizeof smaller_blocks / sizeof smaller_blocks[0]; i++)
        if (want == smaller_blocks[i].from && fits(smaller_blocks[i].to, n_in)) return smaller_blocks[i].to;
    /* our per-group int4 types: the largest smaller group that divides the row */
    static const el_type groups[] = {EL_TYPE_W4G128, EL_TYPE_W4G64, EL_TYPE_W4G32};
    bool smaller = false;
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        if (smaller && fits(groups[i], n_in)) return groups[i];
        smaller = smaller || groups[i] == want;
    }
    return EL_TYPE_F16; /* llama.cpp's last resort too */
}

/* The conversion of one tensor's rows, split across threads. */
typedef struct convert_job {
    const el_type_kernels *in, *out;
    const uint8_t *src;
    uint8_t *dst;
    int64_t n;                 /* elements per row */
    int64_t n_rows;
    size_t in_row, out_row;    /* bytes per row */
    float *scratch;            /* 2 * n floats per thread */
    double *err2, *ref2;       /* per thread: sum (w - deq(q))^2, sum w^2 */
} convert_job;

static void convert_task(void *arg, int ith, int nth) {
    convert_job *j = arg;
    float *w = j->scratch + (size_t)ith * 2 * (size_t)j->n, *back = w + j->n;
    double e2 = 0, r2 = 0;
    for (int64_t r = j->n_rows * ith / nth; r < j->n_rows * (ith + 1) / nth; r++) {
        uint8_t *q = j->dst + (size_t)r * j->out_row;
        j->in->to_float(j->src + (size_t)r * j->in_row, w, j->n);
        el_type_weight_quantizer(j->out)(w, q, j->n);
        j->out->to_float(q, back, j->n);
        for (int64_t i = 0; i < j->n; i++) {
            double d = (double)w[i] - back[i];
            e2 += d * d;
            r2 += (double)w[i] * w[i];
        }
    }
    j->err2[ith] = e2;
    j->ref2[ith] = r2;
}

/* One tensor of the output: what the writer's fill callback needs to produce its bytes. */
typedef struct quant_tensor {
    struct quant_state *s;
    uint64_t index;
    char *name; /* NUL-terminated */
    el_type to;
    bool fallback;        /* `to` is the fallback of the mix's type, whose blocks do not fit */
    int32_t report_index; /* its index among the tensors reported */
    float act_scale;      /* > 0: written as tensor "<name>.act_scale" after it */
} quant_tensor;

/* Everything el_quantize holds, freed in one place. */
typedef struct quant_state {
    gguf_file *in;
    gguf_writer *w;
    el_threadpool *tp;
    const el_quantize_params *params;
    const char *out_path;
    el_type want;          /* the mix's base type, or our type */
    const el_mix *mix;     /* NULL for our own types */
    el_type *types;        /* [in->n_tensors]: the mix's type of each, before fallbacks */
    quant_tensor *tensors; /* [in->n_tensors] */
    float *scratch;
    double *err2, *ref2;
    uint64_t bytes_done, bytes_total;
    el_calibration calib; /* n_ranges 0: no calibration */
    bool adapter;         /* the input is a LoRA adapter: its A and B change precision */
    int32_t n_reported;   /* tensors of the input that are written (not dropped) */
} quant_state;

static void state_free(quant_state *s) {
    if (s->tensors && s->in)
        for (uint64_t i = 0; i < s->in->n_tensors; i++) free(s->tensors[i].name);
    free(s->tensors);
    free(s->types);
    free(s->scratch);
    free(s->err2);
    free(s->ref2);
    el_threadpool_free(s->tp);
    el_calibration_free(&s->calib);
    gguf_writer_free(s->w);
    gguf_close(s->in);
}

/* Converts tensor t to type to (already checked to fit and readable) into out. */
static el_status convert_tensor(quant_state *s, const gguf_tensor *t, const char *name, el_type to,
                                void *out, double *rel_err) {
    int64_t n = t->ne[0], n_rows = t->ne[1] * t->ne[2] * t->ne[3];
    int nth = el_threadpool_size(s->tp);
    float *scratch = realloc(s->scratch, (size_t)nth * 2 * (size_t)n * sizeof(float));
    if (!scratch)
        return el_error(EL_ERR_NOMEM, "%s: no memory to convert tensor '%s'", s->in->path, name);
    s->scratch = scratch;
    convert_job j = {.in = el_type_kernels_get(t->type), .out = el_type_kernels_get((uint32_t)to),
                     .src = t->data, .dst = out, .n = n, .n_rows = n_rows,
                     .in_row = el_row_size((el_type)t->type, n), .out_row = el_row_size(to, n),
                     .scratch = s->scratch, .err2 = s->err2, .ref2 = s->ref2};
    el_threadpool_run(s->tp, convert_task, &j);
    double e2 = 0, r2 = 0;
    for (int i = 0; i < nth; i++) {
        e2 += s->err2[i];
        r2 += s->ref2[i];
    }
    *rel_err = r2 > 0 ? sqrt(e2 / r2) : (e2 > 0 ? 1.0 : 0.0);
    return EL_OK;
}

/* The writer's fill callback: produces one output tensor (converted or copied) when the file is
 * written, so only one converted tensor is in memory at a time, then reports it. */
static el_status fill_tensor(void *user, void *buf, uint64_t nbytes) {
    quant_tensor *qt = user;
    quant_state *s = qt->s;
    const gguf_tensor *t = &s->in->tensors[qt->index];
    el_quantize_tensor rep = {
        .name = qt->name, .index = qt->report_index, .n_tensors = s->n_reported,
        .from_type = el_type_layout_get(t->type)->name, .to_type = el_type_layout_get(qt->to)->name,
        .quantized = qt->to != (el_type)t->type,
        .fallback = qt->fallback,
        .n_elements = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3], .bytes_in = t->nbytes,
        .bytes_out = nbytes, .bytes_total = s->bytes_total, .act_scale = qt->act_scale};
    if (rep.quantized) {
        el_status st = convert_tensor(s, t, qt->name, qt->to, buf, &rep.rel_rms_error);
        if (st) return st;
    } else {
        memcpy(buf, t->data, (size_t)nbytes);
    }
    s->bytes_done += t->nbytes;
    rep.bytes_done = s->bytes_done;
    const el_quantize_params *p = s->params;
    if (p->progress && !p->progress(p->user, &rep))
        return el_error(EL_ERR_CANCELLED, "%s: cancelled; nothing written", s->out_path);
    return EL_OK;
}

static bool is_act_scale(const gguf_tensor *t) {
    return gguf_str_ends_with(t->name, EL_ACT_SCALE_SUFFIX);
}

/* Adds "<name>.act_scale" after a weight written in a type dotted with int8 activations, if
 * calibration saw its input. */
static el_status plan_act_scale(quant_state *s, quant_tensor *qt) {
    if (s->calib.n_ranges == 0 || el_type_kernels_get((uint32_t)qt->to)->vec_dot_type != EL_TYPE_A8)
        return EL_OK;
    qt->act_scale = el_calibration_scale(&s->calib, qt->name);
    if (!(qt->act_scale > 0.0f)) {
        qt->act_scale = 0.0f; /* not a matmul input, or only zeros seen: per-token scales */
        return EL_OK;
    }
    char name[256];
    if (snprintf(name, sizeof name, "%s%s", qt->name, EL_ACT_SCALE_SUFFIX) >= (int)sizeof name)
        return el_error(EL_ERR_UNSUPPORTED, "%s: tensor name '%s' is too long", s->in->path,
                        qt->name);
    const int64_t ne[1] = {1};
    return gguf_writer_add_tensor(s->w, name, EL_TYPE_F32, 1, ne, &qt->act_scale,
                                  sizeof qt->act_scale);
}

/* Whether tensor t takes the output type: a model's weight matrices, an adapter's A and B. */
static bool converts(const quant_state *s, const gguf_tensor *t) {
    if (!s->adapter) return el_mix_converts(t);
    return t->n_dims == 2 &&
           (gguf_str_ends_with(t->name, ".lora_a") || gguf_str_ends_with(t->name, ".lora_b"));
}

/* Plans every output tensor (its type, checked readable) and hands it to the writer. Static
 * activation scales of the input are dropped: they belong to the input's weights. */
static el_status plan_tensor(quant_state *s, uint64_t i) {
    const gguf_tensor *t = &s->in->tensors[i];
    quant_tensor *qt = &s->tensors[i];
    *qt = (quant_tensor){.s = s, .index = i, .report_index = s->n_reported};
    if (is_act_scale(t)) return EL_OK;
    s->n_reported++;
    if (!(qt->name = strndup(t->name.ptr, (size_t)t->name.len)))
        return el_error(EL_ERR_NOMEM, "%s: out of memory", s->in->path);
    bool converted = converts(s, t);
    qt->to = converted ? el_quant_fit_type(s->types[i], t->ne[0]) : (el_type)t->type;
    qt->fallback = converted && qt->to != s->types[i];
    const el_type_kernels *in = el_type_kernels_get(t->type);
    if (qt->to != (el_type)t->type && (!in || !in->to_float))
        return el_error(EL_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s, which cannot be read",
                        s->in->path, qt->name, el_type_layout_get(t->type)->name);
    uint64_t rows = (uint64_t)(t->ne[1] * t->ne[2] * t->ne[3]);
    uint64_t nbytes = qt->to == (el_type)t->type ? t->nbytes : el_row_size(qt->to, t->ne[0]) * rows;
    s->bytes_total += t->nbytes;
    el_status st = gguf_writer_add_tensor_fill(s->w, qt->name, (uint32_t)qt->to, t->n_dims, t->ne,
                                               nbytes, fill_tensor, qt);
    return st ? st : plan_act_scale(s, qt);
}

static bool is_adapter(const gguf_file *f) {
    gguf_str type;
    return gguf_get_str(f, "general.type", &type) == EL_OK && gguf_str_eq(type, "adapter");
}

/* A LoRA adapter's A and B are stored in a float type: the run time reads them as floats, or
 * quantizes them to a profile's grids when it binds them (docs/formats.md). */
static el_status check_adapter(const gguf_file *f, el_type want, const el_quantize_params *p) {
    if (want != EL_TYPE_F32 && want != EL_TYPE_F16 && want != EL_TYPE_BF16)
        return el_error(EL_ERR_INVALID_ARG, "%s is a LoRA adapter: its A and B can be stored as "
                        "f32, f16 or bf16, not %s (under a profile they are int8, quantized to "
                        "its grids as they are bound)", f->path, p->type);
    if (p->calib_path)
        return el_error(EL_ERR_INVALID_ARG, "%s is a LoRA adapter: activation scales are a "
                        "model's (or a profile's), not an adapter's", f->path);
    return EL_OK;
}

/* Quantization is of a model's weights: a file without them would be copied as it is. */
static el_status check_is_model(const gguf_file *f) {
    if (el_prune_is_compressed(f))
        return el_error(EL_ERR_UNSUPPORTED, "%s is a UniQL compressed model, laid out for "
                        "pruning at run time; quantization needs an ordinary model: give it the "
                        "sorted model the file was written from", f->path);
    if (f->n_tensors == 0)
        return el_error(EL_ERR_INVALID_ARG, "%s holds no weights (a vocabulary only): there is "
                        "nothing to quantize", f->path);
    return EL_OK;
}

static el_status quantize(quant_state *s, const char *in_path, const char *out_path,
                          const el_quantize_params *p) {
    el_status st = el_quantize_type_check(p->type, NULL);
    if (st) return st;
    resolve_type(p->type, &s->mix, &s->want);
    s->params = p;
    s->out_path = out_path;
    if ((st = gguf_open(in_path, &s->in))) return st;
    s->adapter = is_adapter(s->in);
    if (s->adapter && (st = check_adapter(s->in, s->want, p))) return st;
    if (s->adapter) s->mix = NULL; /* "f16" names a mix too: one type for every tensor */
    if (!s->adapter && p->calib_path &&
        el_type_kernels_get((uint32_t)s->want)->vec_dot_type != EL_TYPE_A8)
        return el_error(EL_ERR_INVALID_ARG, "static activation scales (calibration) need a type "
                        "that dots int8 activations (w8, w4, w4g32, w4g64, w4g128), not %s",
                        p->type);
    if (!s->adapter && (st = check_is_model(s->in))) return st;
    if (p->calib_path &&
        (st = el_calibrate(in_path, p->calib_path, p->calib_tokens, p->calib_percentile,
                           p->n_threads, p->calib_progress, p->user, &s->calib)))
        return st;
    if ((st = el_threadpool_create(p->n_threads, &s->tp))) return st;
    int nth = el_threadpool_size(s->tp);
    uint64_t n_t = s->in->n_tensors;
    s->w = gguf_writer_create();
    s->tensors = calloc(n_t ? n_t : 1, sizeof *s->tensors);
    s->types = calloc(n_t ? n_t : 1, sizeof *s->types);
    s->err2 = calloc((size_t)nth, sizeof *s->err2);
    s->ref2 = calloc((size_t)nth, sizeof *s->ref2);
    if (!s->w || !s->tensors || !s->types || !s->err2 || !s->ref2)
        return el_error(EL_ERR_NOMEM, "%s: out of memory", in_path);
    if (s->mix) {
        if ((st = el_mix_types(s->mix, p->pure, s->in, s->types))) return st;
    } else {
        for (uint64_t i = 0; i < n_t; i++)
            s->types[i] = converts(s, &s->in->tensors[i]) ? s->want
                                                          : (el_type)s->in->tensors[i].type;
    }
    /* llama-quantize sets the quantization version whatever the type (f16 too); an adapter
     * keeps its keys as they are */
    uint32_t file_type = s->mix ? s->mix->file_type : el_quant_file_type(s->want);
    if ((st = gguf_writer_copy_kv(s->w, s->in)) ||
        (!s->adapter && (st = gguf_writer_set_u32(s->w, "general.file_type", file_type))) ||
        (!s->adapter && (st = gguf_writer_set_u32(s->w, "general.quantization_version", 2))))
        return st;
    for (uint64_t i = 0; i < n_t; i++)
        if ((st = plan_tensor(s, i))) return st;
    return gguf_writer_write(s->w, out_path);
}

el_status el_quantize(const char *in_path, const char *out_path, const el_quantize_params *params) {
    if (!in_path || !out_path)
        return el_error(EL_ERR_INVALID_ARG, "el_quantize: NULL path");
    el_quantize_params def = el_quantize_default_params();
    quant_state s = {0};
    el_status st = quantize(&s, in_path, out_path, params ? params : &def);
    state_free(&s);
    return st;
}
