/* prune_api.c - the pruning calls of the public API: the rate of a context, the bytes of a rate,
 * the memory available now and the rate that fits a budget. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "model/prune.h"
#include "runtime/context.h"

int32_t el_model_prune_rates(const el_model *model, const float **rates) {
    if (!model || !model->prune) {
        if (rates)
            *rates = NULL;
        return 0;
    }
    if (rates)
        *rates = model->prune->table.rates;
    return model->prune->table.n_rates;
}

/* The table index of rate for model m, or an error naming the range it supports. */
static el_status rate_index(const el_model *m, float rate, const char *fn, int32_t *r) {
    if (!m->prune) {
        *r = 0;
        if (rate == 0.0f)
            return EL_OK;
        return el_error(EL_ERR_UNSUPPORTED, "%s: %s is not a UniQL compressed model: it runs at "
                        "pruning rate 0 only, not %g", fn, m->path, (double)rate);
    }
    *r = el_prune_rate_index(m->prune, rate);
    const el_prune_table *t = &m->prune->table;
    if (*r < 0)
        return el_error(EL_ERR_INVALID_ARG, "%s: pruning rate %g is outside what %s supports "
                        "(0 to %g)", fn, (double)rate, m->path, (double)t->rates[t->n_rates - 1]);
    return EL_OK;
}

el_status el_model_prune_bytes(const el_model *model, float rate, uint64_t *bytes) {
    if (!model || !bytes)
        return el_error(EL_ERR_INVALID_ARG, "el_model_prune_bytes: NULL argument");
    int32_t r;
    el_status st = rate_index(model, rate, "el_model_prune_bytes", &r);
    if (st)
        return st;
    *bytes = model->prune ? el_prune_weight_bytes(model, r) : model->weight_bytes;
    return EL_OK;
}

el_status el_context_set_prune(el_context *ctx, float rate) {
    if (!ctx)
        return el_error(EL_ERR_INVALID_ARG, "el_context_set_prune: NULL context");
    int32_t r;
    el_status st = rate_index(ctx->model, rate, "el_context_set_prune", &r);
    if (st || !ctx->model->prune)
        return st;
    ctx->prune_rate = r;
    int32_t keep = r; /* what the requests in flight still read */
    for (int32_t i = 0; i < ctx->params.n_seq_max; i++)
        if (ctx->seq_rate[i] >= 0 && ctx->seq_rate[i] < keep)
            keep = ctx->seq_rate[i];
    el_prune_release(ctx->model, keep);
    return EL_OK;
}

el_status el_model_set_prune(el_model *model, float rate) {
    if (!model)
        return el_error(EL_ERR_INVALID_ARG, "el_model_set_prune: NULL model");
    int32_t r;
    el_status st = rate_index(model, rate, "el_model_set_prune", &r);
    if (!st && model->prune)
        model->prune->context_rate = r;
    return st;
}

float el_context_get_prune(const el_context *ctx) {
    if (!ctx || !ctx->model->prune)
        return 0.0f;
    return ctx->model->prune->table.rates[ctx->prune_rate];
}

/* The first number of a file, or false. */
static bool read_u64(const char *path, uint64_t *v) {
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fscanf(f, "%" SCNu64, v) == 1; /* "max" (no limit) reads nothing */
    fclose(f);
    return ok;
}

/* The room left under this process's cgroup memory limit, or false without one. The v2 files
 * of the process's own cgroup are found through /proc/self/cgroup ("0::/path"). */
static bool cgroup_room(uint64_t *room) {
    char line[512], path[700];
    uint64_t limit, used;
    FILE *f = fopen("/proc/self/cgroup", "r");
    bool v2 = false;
    if (f) {
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "0::", 3)) {
                line[strcspn(line, "\n")] = '\0';
                snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.max", line + 3);
                v2 = read_u64(path, &limit);
                snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.current", line + 3);
                v2 = v2 && read_u64(path, &used);
            }
        fclose(f);
    }
    if (!v2 && !(read_u64("/sys/fs/cgroup/memory/memory.limit_in_bytes", &limit) &&
                 read_u64("/sys/fs/cgroup/memory/memory.usage_in_bytes", &used)))
        return false;
    *room = used < limit ? limit - used : 0;
    return true;
}

el_status el_mem_available(uint64_t *bytes) {
    if (!bytes)
        return el_error(EL_ERR_INVALID_ARG, "el_mem_available: NULL argument");
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    uint64_t kb = 0;
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f))
        found = sscanf(line, "MemAvailable: %" SCNu64 " kB", &kb) == 1;
    if (f)
        fclose(f);
    if (!found)
        return el_error(EL_ERR_IO, "/proc/meminfo: no MemAvailable line (Linux 3.14 or later "
                        "has it): give the budget in bytes");
    *bytes = kb * 1024;
    uint64_t room;
    if (cgroup_room(&room) && room < *bytes)
        *bytes = room;
    return EL_OK;
}

el_status el_model_prune_fit(const el_model *model, const el_context_params *params,
                             uint64_t budget, float *rate) {
    if (!model || !rate)
        return el_error(EL_ERR_INVALID_ARG, "el_model_prune_fit: NULL argument");
    el_context_params p = params ? *params : el_context_default_params();
    const el_hparams *hp = &model->hp;
    int64_t n_ctx = p.n_ctx > 0 ? p.n_ctx : (hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096);
    uint64_t kv = (uint64_t)n_ctx * hp->n_layer * hp->n_head_kv *
                  (uint64_t)(hp->head_dim_k + hp->head_dim_v) *
                  (p.kv_type == EL_KV_F32 ? 4u : 2u);
    int32_t n = model->prune ? model->prune->table.n_rates : 1;
    uint64_t need = 0;
    for (int32_t r = 0; r < n; r++) {
        need = kv + (model->prune ? el_prune_weight_bytes(model, r) : model->weight_bytes);
        if (need <= budget) {
            *rate = model->prune ? model->prune->table.rates[r] : 0.0f;
            return EL_OK;
        }
    }
    return el_error(EL_ERR_INVALID_ARG, "a memory budget of %" PRIu64 " bytes fits no pruning "
                    "rate of %s: the smallest that would is %" PRIu64 " bytes (rate %g: weights and a KV "
                    "cache of %" PRId64 " cells)", budget, model->path, need,
                    model->prune ? (double)model->prune->table.rates[n - 1] : 0.0, n_ctx);
}
