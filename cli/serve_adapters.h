/* serve_adapters.h - the adapters `edgelora serve` knows by name: those of --lora-dir at start,
 * plus those added (POST /v1/adapters) and less those removed (DELETE) while serving. A request
 * holds each adapter it uses (serve_adapters_acquire) until it ends, so a removed adapter is
 * freed only once no request in flight uses it. Safe to call from any thread. */
#ifndef EL_CLI_SERVE_ADAPTERS_H
#define EL_CLI_SERVE_ADAPTERS_H

#include <stdio.h>

#include "adapters.h"
#include "serve_request.h"

typedef struct serve_adapter serve_adapter;
typedef struct serve_adapters serve_adapters;

/* Loads every adapter of dir (NULL: none) for m; one that does not load or fit is left out
 * with a warning on stderr. */
int serve_adapters_open(const el_model *m, const char *dir, serve_adapters **out);
void serve_adapters_free(serve_adapters *r);

/* The adapter called name, held for a request (NULL: no such adapter). */
el_adapter *serve_adapters_acquire(serve_adapters *r, const char *name, serve_adapter **held);
void serve_adapters_release(serve_adapters *r, serve_adapter *held);

/* Loads the adapter called name from the folder (its file or PEFT folder): false with e set if
 * there is no folder, no such file, it is already loaded, or it does not load or fit the base;
 * nothing changes then. */
bool serve_adapters_add(serve_adapters *r, const char *name, serve_error *e);
/* Removes name (false if unknown): new requests cannot use it; it is freed when unused. */
bool serve_adapters_remove(serve_adapters *r, const char *name);

/* Writes the names as JSON model objects ({"id", "object": "model", ...}), each preceded by a
 * comma. */
void serve_adapters_write_models(serve_adapters *r, FILE *f, long created);
int32_t serve_adapters_count(serve_adapters *r);

#endif
