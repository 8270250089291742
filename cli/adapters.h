/* adapters.h - a folder of LoRA adapters known by name (`--lora-dir DIR`), shared by the
 * `adapters` and `batch` commands. An adapter's name is its file name without the extension for
 * a *.gguf file, or the folder's name for a PEFT folder (one with adapter_config.json). Names are
 * looked up among what DIR holds, so a request can never name a path outside it. */
#ifndef EL_CLI_ADAPTERS_H
#define EL_CLI_ADAPTERS_H

#include <stddef.h>

#include "edgelora.h"

typedef struct cli_lora_entry {
    char *name;
    char *path;
    const char *format;  /* "gguf" or "peft", from what the entry looks like */
    el_adapter *adapter; /* once loaded */
    char *error;         /* why it cannot be used (set by a failed load, or a clash of names) */
    bool tried;          /* a load was attempted */
} cli_lora_entry;

typedef struct cli_lora_dir {
    const el_model *model;
    const char *dir;
    cli_lora_entry *entries; /* sorted by name */
    size_t n;
} cli_lora_dir;

/* Lists DIR (no adapter is loaded yet). Prints an error and returns CLI_FAIL if DIR cannot be
 * read. */
int cli_lora_dir_scan(const char *cmd, const el_model *model, const char *dir,
                      cli_lora_dir *out);
/* The entry called name, or NULL. */
cli_lora_entry *cli_lora_dir_find(cli_lora_dir *d, const char *name);
/* Loads e's adapter on first use; NULL (with e->error saying why) if it does not load. */
el_adapter *cli_lora_dir_load(cli_lora_dir *d, cli_lora_entry *e);
void cli_lora_dir_free(cli_lora_dir *d);

#endif
