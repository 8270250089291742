/* forecast.c - forecast sets: made from vectors, or read from a forecast GGUF and checked against
 * the model they are to run with. */
#include "runtime/forecast.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/gguf.h"

static el_status make(const el_model *model, int32_t n_slots, el_forecast **out) {
    if (n_slots < 1 || n_slots > EL_SPEC_MAX_DEPTH)
        return el_error(EL_ERR_INVALID_ARG, "a forecast set has 1..%d slots, not %d",
                        EL_SPEC_MAX_DEPTH, n_slots);
    el_forecast *f = calloc(1, sizeof *f);
    size_t n = (size_t)n_slots * (size_t)model->hp.n_embd;
    if (!f || !(f->vectors = malloc(n * sizeof(float)))) {
        free(f);
        return el_error(EL_ERR_NOMEM, "out of memory for a forecast set");
    }
    f->model = model;
    f->n_slots = n_slots;
    *out = f;
    return EL_OK;
}

static el_status check_vectors(const float *v, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]) || fabsf(v[i]) > 1e4f)
            return el_error(EL_ERR_FORMAT, "%s: forecast vector element %zu is %g (not a trained "
                            "value)", what, i, (double)v[i]);
    return EL_OK;
}

el_status el_forecast_create(const el_model *model, int32_t n_slots, const float *vectors,
                             el_forecast **out) {
    if (out) *out = NULL;
    if (!model || !vectors || !out)
        return el_error(EL_ERR_INVALID_ARG, "el_forecast_create: NULL argument");
    size_t n = (size_t)n_slots * (size_t)model->hp.n_embd;
    el_status st = n_slots >= 1 ? check_vectors(vectors, n, "el_forecast_create") : EL_OK;
    if (st || (st = make(model, n_slots, out)))
        return st;
    memcpy((*out)->vectors, vectors, n * sizeof(float));
    return EL_OK;
}

/* The keys that say what the set is and what it was trained for. */
static el_status check_keys(const gguf_file *g, const el_model *m, const char *path,
                            uint32_t *n_slots) {
    gguf_str s;
    el_status st = gguf_get_str(g, "general.type", &s);
    if (st == EL_ERR_NOT_FOUND || (!st && !gguf_str_eq(s, "forecast")))
        return el_error(EL_ERR_FORMAT, "%s: not a forecast set (general.type is %s%.*s%s)", path,
                        st ? "absent" : "'", st ? 0 : (int)s.len, st ? "" : s.ptr,
                        st ? "" : "'");
    if (st) return st;
    if ((st = gguf_get_str(g, "general.architecture", &s)))
        return st == EL_ERR_NOT_FOUND
                   ? el_error(EL_ERR_FORMAT, "%s: general.architecture is missing", path) : st;
    if (!gguf_str_eq(s, m->arch))
        return el_error(EL_ERR_MISMATCH, "%s: the forecast set is for architecture '%.*s', the "
                        "model is '%s'", path, (int)s.len, s.ptr, m->arch);
    uint64_t fp;
    if ((st = gguf_get_u64(g, "forecast.base.fingerprint", &fp)))
        return st == EL_ERR_NOT_FOUND
                   ? el_error(EL_ERR_FORMAT, "%s: forecast.base.fingerprint is missing", path) : st;
    if (fp != el_model_fingerprint(m)) {
        gguf_str base = {0};
        gguf_get_str(g, "forecast.base.name", &base);
        return el_error(EL_ERR_MISMATCH, "%s: the forecast set was trained for another model "
                        "('%.*s'), not %s", path, (int)base.len, base.ptr ? base.ptr : "",
                        m->path ? m->path : "this one");
    }
    if ((st = gguf_get_u32(g, "forecast.n_slots", n_slots)))
        return st == EL_ERR_NOT_FOUND
                   ? el_error(EL_ERR_FORMAT, "%s: forecast.n_slots is missing", path) : st;
    if (*n_slots < 1 || *n_slots > EL_SPEC_MAX_DEPTH)
        return el_error(EL_ERR_FORMAT, "%s: forecast.n_slots is %u, must be 1..%d", path,
                        *n_slots, EL_SPEC_MAX_DEPTH);
    return EL_OK;
}

static el_status read_adapter_keys(const gguf_file *g, el_forecast *f, const char *path) {
    el_status st = gguf_get_u64(g, "forecast.adapter.fingerprint", &f->adapter_fingerprint);
    if (st == EL_ERR_NOT_FOUND)
        return EL_OK;
    if (st) return st;
    f->for_adapter = true;
    gguf_str s = {0};
    st = gguf_get_str(g, "forecast.adapter.name", &s);
    if (st && st != EL_ERR_NOT_FOUND) return st;
    if (!(f->adapter_name = strndup(s.ptr ? s.ptr : "", s.len)))
        return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    return EL_OK;
}

el_status el_forecast_load(const el_model *model, const char *path, el_forecast **out) {
    if (out) *out = NULL;
    if (!model || !path || !out)
        return el_error(EL_ERR_INVALID_ARG, "el_forecast_load: NULL argument");
    gguf_file *g;
    el_status st = gguf_open(path, &g);
    if (st) return st;
    uint32_t n_slots = 0;
    el_forecast *f = NULL;
    if ((st = check_keys(g, model, path, &n_slots)) || (st = make(model, (int32_t)n_slots, &f)))
        goto done;
    const gguf_tensor *t = gguf_find_tensor(g, EL_FORECAST_TENSOR);
    int64_t d = model->hp.n_embd;
    if (!t) {
        st = el_error(EL_ERR_FORMAT, "%s: tensor '%s' is missing", path, EL_FORECAST_TENSOR);
        goto done;
    }
    if (t->type != EL_TYPE_F32 || t->n_dims != 2 || t->ne[0] != d ||
        t->ne[1] != (int64_t)n_slots) {
        st = el_error(EL_ERR_FORMAT, "%s: tensor '%s' must be f32 [%lld, %u] (n_embd, n_slots)",
                      path, EL_FORECAST_TENSOR, (long long)d, n_slots);
        goto done;
    }
    memcpy(f->vectors, t->data, (size_t)d * n_slots * sizeof(float));
    if ((st = check_vectors(f->vectors, (size_t)d * n_slots, path)) ||
        (st = read_adapter_keys(g, f, path)))
        goto done;
    *out = f;
    f = NULL;
done:
    el_forecast_free(f);
    gguf_close(g);
    return st;
}

void el_forecast_free(el_forecast *f) {
    if (!f) return;
    free(f->vectors);
    free(f->adapter_name);
    free(f);
}

int32_t el_forecast_n_slots(const el_forecast *f) { return f ? f->n_slots : 0; }
