/* serve_adapters.c - the named adapters of `edgelora serve` (serve_adapters.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "serve_adapters.h"

struct serve_adapter {
    char *name;
    el_adapter *adapter;
    int users;    /* requests in flight holding it */
    bool removed; /* no longer listed; freed when users reaches 0 */
};

struct serve_adapters {
    const el_model *model;
    char *dir;
    pthread_mutex_t mu;
    serve_adapter **v; /* the listed ones */
    size_t n;
};

static void adapter_drop(serve_adapter *a) {
    el_adapter_free(a->adapter);
    free(a->name);
    free(a);
}

static bool list_add(serve_adapters *r, const char *name, el_adapter *adapter) {
    serve_adapter *a = calloc(1, sizeof *a);
    serve_adapter **more = realloc(r->v, (r->n + 1) * sizeof *more);
    if (more) r->v = more;
    if (!a || !more || !(a->name = strdup(name))) {
        free(a);
        return false;
    }
    a->adapter = adapter;
    r->v[r->n++] = a;
    return true;
}

int serve_adapters_open(const el_model *m, const char *dir, serve_adapters **out) {
    serve_adapters *r = calloc(1, sizeof *r);
    if (!r || (dir && !(r->dir = strdup(dir)))) {
        free(r);
        cli_error("serve", "out of memory");
        return CLI_FAIL;
    }
    r->model = m;
    pthread_mutex_init(&r->mu, NULL);
    *out = r;
    if (!dir) return CLI_OK;
    cli_lora_dir d;
    if (cli_lora_dir_scan("serve", m, dir, &d)) return CLI_FAIL;
    for (size_t i = 0; i < d.n; i++) {
        el_adapter *a = cli_lora_dir_load(&d, &d.entries[i]);
        if (!a) {
            fprintf(stderr, "edgelora serve: warning: adapter '%s' left out: %s\n",
                    d.entries[i].name, d.entries[i].error);
            continue;
        }
        d.entries[i].adapter = NULL; /* the list owns it now */
        if (!list_add(r, d.entries[i].name, a)) {
            el_adapter_free(a);
            cli_lora_dir_free(&d);
            cli_error("serve", "out of memory");
            return CLI_FAIL;
        }
    }
    cli_lora_dir_free(&d);
    return CLI_OK;
}

void serve_adapters_free(serve_adapters *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) adapter_drop(r->v[i]);
    free(r->v);
    free(r->dir);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static serve_adapter *find(serve_adapters *r, const char *name, size_t *at) {
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->v[i]->name, name)) {
            if (at) *at = i;
            return r->v[i];
        }
    return NULL;
}

el_adapter *serve_adapters_acquire(serve_adapters *r, const char *name, serve_adapter **held) {
    pthread_mutex_lock(&r->mu);
    serve_adapter *a = find(r, name, NULL);
    if (a) a->users++;
    pthread_mutex_unlock(&r->mu);
    *held = a;
    return a ? a->adapter : NULL;
}

void serve_adapters_release(serve_adapters *r, serve_adapter *a) {
    if (!a) return;
    pthread_mutex_lock(&r->mu);
    bool drop = --a->users == 0 && a->removed;
    pthread_mutex_unlock(&r->mu);
    if (drop) adapter_drop(a);
}

bool serve_adapters_add(serve_adapters *r, const char *name, serve_error *e) {
    if (!r->dir)
        return serve_error_set(e, 400, "invalid_request_error", "no_adapter_folder",
                               "no adapter folder was given (--lora-dir)");
    pthread_mutex_lock(&r->mu);
    bool listed = find(r, name, NULL) != NULL;
    pthread_mutex_unlock(&r->mu);
    if (listed)
        return serve_error_set(e, 409, "invalid_request_error", "adapter_exists",
                               "adapter '%s' is already loaded", name);
    cli_lora_dir d;
    if (cli_lora_dir_scan("serve", r->model, r->dir, &d))
        return serve_error_set(e, 500, "server_error", "adapter_folder",
                               "the adapter folder %s cannot be read", r->dir);
    cli_lora_entry *en = cli_lora_dir_find(&d, name);
    el_adapter *a = en ? cli_lora_dir_load(&d, en) : NULL;
    bool ok;
    if (!en) {
        ok = serve_error_set(e, 404, "invalid_request_error", "adapter_not_found",
                             "no adapter '%s' in %s", name, r->dir);
    } else if (!a) {
        ok = serve_error_set(e, 400, "invalid_request_error", "adapter_invalid",
                             "adapter '%s' cannot be used: %s", name, en->error);
    } else {
        en->adapter = NULL;
        pthread_mutex_lock(&r->mu);
        ok = !find(r, name, NULL) && list_add(r, name, a);
        pthread_mutex_unlock(&r->mu);
        if (!ok) {
            el_adapter_free(a);
            serve_error_set(e, 409, "invalid_request_error", "adapter_exists",
                            "adapter '%s' is already loaded", name);
        }
    }
    cli_lora_dir_free(&d);
    return ok;
}

bool serve_adapters_remove(serve_adapters *r, const char *name) {
    pthread_mutex_lock(&r->mu);
    size_t at;
    serve_adapter *a = find(r, name, &at);
    bool drop = false;
    if (a) {
        memmove(r->v + at, r->v + at + 1, (r->n - at - 1) * sizeof *r->v);
        r->n--;
        a->removed = true;
        drop = a->users == 0;
    }
    pthread_mutex_unlock(&r->mu);
    if (drop) adapter_drop(a);
    return a != NULL;
}

void serve_adapters_write_models(serve_adapters *r, FILE *f, long created) {
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n; i++) {
        fputs(",{\"id\":", f);
        el_json_write_string(f, r->v[i]->name, strlen(r->v[i]->name));
        fprintf(f, ",\"object\":\"model\",\"created\":%ld,\"owned_by\":\"edgelora\","
                   "\"kind\":\"adapter\"}", created);
    }
    pthread_mutex_unlock(&r->mu);
}

int32_t serve_adapters_count(serve_adapters *r) {
    pthread_mutex_lock(&r->mu);
    int32_t n = (int32_t)r->n;
    pthread_mutex_unlock(&r->mu);
    return n;
}
