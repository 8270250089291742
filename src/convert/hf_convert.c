/* hf_convert.c - el_convert_hf: a Hugging Face model folder to GGUF, one tensor at a time.
 *
 * Every check (architecture, each tensor's presence, dtype and shape, no tensor left unused) is
 * made before the output is opened; tensors are then produced while the file is written, so at
 * most one tensor is held in memory (as float32 and as its output type).
 *
 * HF stores a linear layer as [out][in] row-major, which is ggml's order with ne[0] = in, so
 * matrices are copied as they are, except Q and K of the `llama` architecture: HF's RoPE rotates
 * the two halves of each head (rotate_half) while llama.cpp's `llama` rotates adjacent pairs, so
 * the rows of each head are interleaved, as llama.cpp's converter does: within a head of hd rows,
 * row 2i + j of the output is row j*hd/2 + i of the input (j = 0, 1). qwen2 keeps HF's order and
 * llama.cpp runs it with NEOX (halves) RoPE, as it does gemma3, whose norm weights get 1 added
 * (Hugging Face's Gemma3RMSNorm multiplies by 1 + w; llama.cpp's converter stores 1 + w). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "convert/hf_model.h"
#include "convert/hf_tokenizer.h"
#include "core/error.h"
#include "formats/safetensors.h"

typedef struct progress {
    el_progress_fn fn;
    void *user;
    int32_t done, total;
    uint64_t bytes_done, bytes_total;
} progress;

typedef struct job {
    const el_hf_tensor *t;
    const el_st_tensor *src; /* NULL: rope_freqs, computed */
    const el_hf_config *c;
    progress *pr;
} job;

static void report(progress *pr, uint64_t nbytes) {
    pr->done++;
    pr->bytes_done += nbytes;
    if (pr->fn) pr->fn(pr->user, pr->done, pr->total, pr->bytes_done, pr->bytes_total);
}

/* Elements [i, i + n) of an F32/F16/BF16 tensor as floats. The data is aligned when the writer
 * ordered tensors by element size (as Hugging Face's does); other writers may leave it
 * unaligned, and then it is copied out element by element. */
static void elements(const el_st_tensor *s, int64_t i, int64_t n, float *out) {
    el_type t = s->dtype == EL_ST_F32 ? EL_TYPE_F32
                : s->dtype == EL_ST_F16 ? EL_TYPE_F16 : EL_TYPE_BF16;
    size_t es = el_st_dtype_size(s->dtype);
    const uint8_t *p = (const uint8_t *)s->data + (size_t)i * es;
    if ((uintptr_t)p % es == 0) {
        el_type_kernels_get(t)->to_float(p, out, n);
        return;
    }
    for (int64_t k = 0; k < n; k++) {
        uint16_t h;
        if (t == EL_TYPE_F32) {
            memcpy(&out[k], p + 4 * k, 4);
            continue;
        }
        memcpy(&h, p + 2 * k, 2);
        out[k] = t == EL_TYPE_F16 ? el_fp16_to_fp32(h) : el_bf16_to_fp32(h);
    }
}

/* Source row r of output row `row` under the RoPE permutation with n_head heads. */
static int64_t source_row(int64_t row, int64_t n_rows, int32_t n_head) {
    if (n_head <= 0) return row;
    int64_t hd = n_rows / n_head, h = row / hd, k = row % hd;
    return h * hd + (k % 2) * (hd / 2) + k / 2;
}

static el_status fill_tensor(void *user, void *buf, uint64_t nbytes) {
    const job *j = user;
    const el_hf_tensor *t = j->t;
    if (!j->src) {
        el_hf_computed_tensor(j->c, t->name, buf);
        report(j->pr, nbytes);
        return EL_OK;
    }
    const el_type_kernels *kernels = el_type_kernels_get(t->type);
    size_t row_bytes = el_row_size((el_type)t->type, t->ne0);
    float *row = malloc((size_t)t->ne0 * sizeof *row);
    if (!row) return el_error(EL_ERR_NOMEM, "out of memory converting %s", t->hf_name);
    for (int64_t r = 0; r < t->ne1; r++) {
        int64_t sr = source_row(r, t->ne1, t->permute_heads);
        elements(j->src, sr * t->ne0, t->ne0, row);
        for (int64_t i = 0; t->shift != 0.0f && i < t->ne0; i++) row[i] += t->shift;
        el_type_weight_quantizer(kernels)(row, (uint8_t *)buf + (size_t)r * row_bytes, t->ne0);
    }
    free(row);
    report(j->pr, nbytes);
    return EL_OK;
}

/* The source of each planned tensor, checked; and no tensor of the folder left unused. */
static el_status match_tensors(const el_st_index *ix, const el_hf_config *c,
                               const el_hf_tensor *plan, int32_t n, job *jobs) {
    el_status st;
    for (int32_t i = 0; i < n; i++) {
        const el_hf_tensor *t = &plan[i];
        jobs[i] = (job){.t = t, .c = c};
        if (!t->hf_name[0]) continue;
        const el_st_tensor *s;
        if ((st = el_st_index_get(ix, t->hf_name, &s))) return st;
        if (s->dtype != EL_ST_F32 && s->dtype != EL_ST_F16 && s->dtype != EL_ST_BF16)
            return el_error(EL_ERR_UNSUPPORTED, "%s: tensor %s has dtype %s (F32, F16 or BF16 "
                            "expected)", s->file->path, t->hf_name, s->dtype_name);
        bool vec = t->ne1 == 1;
        bool ok = vec ? s->n_dims == 1 && s->shape[0] == t->ne0
                      : s->n_dims == 2 && s->shape[0] == t->ne1 && s->shape[1] == t->ne0;
        if (!ok) {
            char got[96] = "";
            for (int d = 0; d < s->n_dims && d < 4; d++)
                snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "",
                         (long long)s->shape[d]);
            if (vec)
                return el_error(EL_ERR_FORMAT, "%s: tensor %s has shape [%s], config.json implies "
                                "[%lld]", s->file->path, t->hf_name, got, (long long)t->ne0);
            return el_error(EL_ERR_FORMAT, "%s: tensor %s has shape [%s], config.json implies "
                            "[%lld, %lld]", s->file->path, t->hf_name, got, (long long)t->ne1,
                            (long long)t->ne0);
        }
        jobs[i].src = s;
    }
    for (size_t k = 0; k < el_st_index_count(ix); k++) {
        const el_st_tensor *s = el_st_index_at(ix, k);
        bool used = (c->tied && !strcmp(s->name, "lm_head.weight")) ||
                    (s->name_len >= 19 && !strcmp(s->name + s->name_len - 19,
                                                  "rotary_emb.inv_freq"));
        for (int32_t i = 0; i < n && !used; i++) used = !strcmp(plan[i].hf_name, s->name);
        if (!used)
            return el_error(EL_ERR_UNSUPPORTED, "%s: tensor %s is not part of a %s model as "
                            "config.json describes it", s->file->path, s->name, c->arch);
    }
    return EL_OK;
}

static bool file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* The folder's name without trailing slashes, for general.name. */
static void folder_name(const char *dir, char *out, size_t cap) {
    size_t end = strlen(dir);
    while (end > 1 && dir[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && dir[start - 1] != '/') start--;
    snprintf(out, cap, "%.*s", (int)(end - start), dir + start);
}

el_status el_convert_hf(const char *dir, const char *out_path, const char *type,
                        el_progress_fn progress_fn, void *user) {
    if (!dir || !out_path)
        return el_error(EL_ERR_INVALID_ARG, "el_convert_hf: a path is NULL");
    el_type target;
    el_status st = el_hf_target_type(type, "f16", &target);
    if (st) return st;
    char path[4096], name[256];
    el_hf_config c;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (!file_exists(path))
        return el_error(EL_ERR_IO, "%s: not a model folder: no config.json (a Hugging Face "
                        "model) nor adapter_config.json (a PEFT adapter)", dir);
    if ((st = el_hf_config_read(path, &c))) return st;
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    if (!file_exists(path)) snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!file_exists(path))
        return el_error(EL_ERR_IO, "%s: neither model.safetensors nor "
                        "model.safetensors.index.json", dir);
    el_st_index *ix = NULL;
    el_hf_tensor *plan = NULL;
    job *jobs = NULL;
    gguf_writer *w = NULL;
    int32_t n = 0;
    progress pr = {.fn = progress_fn, .user = user};
    folder_name(dir, name, sizeof name);
    if (!(st = el_st_index_open(path, &ix))) st = el_hf_plan(&c, target, &plan, &n);
    if (!st && !(jobs = calloc((size_t)n, sizeof *jobs)))
        st = el_error(EL_ERR_NOMEM, "out of memory");
    if (!st) st = match_tensors(ix, &c, plan, n, jobs);
    if (!st && !(w = gguf_writer_create())) st = el_error(EL_ERR_NOMEM, "out of memory");
    if (!st) st = el_hf_set_hparams(w, &c, name, target);
    if (!st) st = el_hf_tokenizer_convert(dir, &c, w);
    for (int32_t i = 0; i < n && !st; i++) {
        const el_hf_tensor *t = &plan[i];
        int64_t ne[2] = {t->ne0, t->ne1};
        uint64_t nbytes = el_row_size((el_type)t->type, t->ne0) * (uint64_t)t->ne1;
        jobs[i].pr = &pr;
        pr.bytes_total += nbytes;
        st = gguf_writer_add_tensor_fill(w, t->name, t->type, t->ne1 == 1 ? 1 : 2, ne, nbytes,
                                         fill_tensor, &jobs[i]);
    }
    pr.total = n;
    if (!st) st = gguf_writer_write(w, out_path);
    gguf_writer_free(w);
    free(jobs);
    free(plan);
    el_st_index_close(ix);
    return st;
}
