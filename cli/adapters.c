/* adapters.c - `edgelora adapters`: which adapters of a folder fit a base model, and why the
 * others do not; and the folder-of-adapters lookup that `edgelora batch` shares. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "adapters.h"
#include "cli.h"

static const char help[] =
    "usage: edgelora adapters -m BASE --lora-dir DIR\n"
    "Lists every adapter in DIR (*.gguf files, and folders with adapter_config.json) with its\n"
    "format, largest rank, number of target layers, alpha and size if it fits BASE, or the\n"
    "reason it does not; then the *.gguf files that are models or vocabularies, not adapters.\n"
    "  -m, --model FILE       the base model (GGUF or llama2.c checkpoint)\n"
    "  --tokenizer FILE       llama2.c tokenizer.bin (for a llama2.c checkpoint)\n"
    "  --lora-dir DIR         the folder of adapters\n";

static char *join_path(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (p) {
        memcpy(p, dir, a);
        p[a] = '/';
        memcpy(p + a + 1, name, b + 1);
    }
    return p;
}

static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The name and format DIR's entry `file` gives an adapter, or false if it is not one. */
static bool adapter_name(const char *dir, const char *file, char **name, char **path,
                         const char **format) {
    size_t len = strlen(file);
    if (file[0] == '.') return false;
    *path = join_path(dir, file);
    if (!*path) return false;
    if (len > 5 && !strcmp(file + len - 5, ".gguf") && !is_dir(*path)) {
        *format = "gguf";
        *name = strndup(file, len - 5);
    } else if (is_dir(*path)) {
        char *config = join_path(*path, "adapter_config.json");
        struct stat st;
        bool peft = config && stat(config, &st) == 0;
        free(config);
        *format = "peft";
        *name = peft ? strdup(file) : NULL;
    } else {
        *name = NULL;
    }
    if (!*name) {
        free(*path);
        return false;
    }
    return true;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const cli_lora_entry *)a)->name, ((const cli_lora_entry *)b)->name);
}

int cli_lora_dir_scan(const char *cmd, const el_model *model, const char *dir,
                      cli_lora_dir *out) {
    *out = (cli_lora_dir){.model = model, .dir = dir};
    DIR *d = opendir(dir);
    if (!d) {
        cli_error(cmd, "%s: cannot read the adapter folder: %s", dir, strerror(errno));
        return CLI_FAIL;
    }
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *name, *path;
        const char *format;
        if (!adapter_name(dir, de->d_name, &name, &path, &format)) continue;
        if (out->n == cap) {
            cap = cap ? 2 * cap : 16;
            cli_lora_entry *more = realloc(out->entries, cap * sizeof *more);
            if (!more) {
                free(name);
                free(path);
                closedir(d);
                cli_lora_dir_free(out);
                cli_error(cmd, "out of memory");
                return CLI_FAIL;
            }
            out->entries = more;
        }
        out->entries[out->n++] = (cli_lora_entry){.name = name, .path = path, .format = format};
    }
    closedir(d);
    if (out->n) qsort(out->entries, out->n, sizeof *out->entries, by_name);
    /* x.gguf beside a folder x: a request naming x would be ambiguous, so neither is used */
    for (size_t i = 1; i < out->n; i++) {
        cli_lora_entry *a = &out->entries[i - 1], *b = &out->entries[i];
        if (strcmp(a->name, b->name)) continue;
        const char *msg = "two adapters have this name (a .gguf file and a folder)";
        if (!a->error) a->error = strdup(msg);
        if (!b->error) b->error = strdup(msg);
        a->tried = b->tried = true;
    }
    return CLI_OK;
}

cli_lora_entry *cli_lora_dir_find(cli_lora_dir *d, const char *name) {
    cli_lora_entry key = {.name = (char *)name};
    return d->n ? bsearch(&key, d->entries, d->n, sizeof key, by_name) : NULL;
}

el_adapter *cli_lora_dir_load(cli_lora_dir *d, cli_lora_entry *e) {
    if (!e->tried) {
        e->tried = true;
        el_status st = el_adapter_load(d->model, e->path, &e->adapter);
        if (st != EL_OK) {
            e->adapter = NULL;
            e->error = strdup(*el_last_error() ? el_last_error() : el_status_name(st));
        }
    }
    return e->adapter;
}

void cli_lora_dir_free(cli_lora_dir *d) {
    for (size_t i = 0; i < d->n; i++) {
        if (d->entries[i].adapter) el_adapter_free(d->entries[i].adapter);
        free(d->entries[i].name);
        free(d->entries[i].path);
        free(d->entries[i].error);
    }
    free(d->entries);
    *d = (cli_lora_dir){0};
}

/* "1.5 MiB" for a byte count. */
static void human_size(uint64_t bytes, char *buf, size_t cap) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

/* What a *.gguf file that does not load as an adapter is instead, for the list of the folder's
 * other files: "a model" or "a vocabulary" (NULL: neither, so a broken adapter). */
static const char *other_kind(const cli_lora_entry *e) {
    if (strcmp(e->format, "gguf")) return NULL;
    el_model *m;
    if (el_model_load(e->path, NULL, &m) != EL_OK) return NULL;
    el_model_info info;
    el_model_get_info(m, &info);
    el_model_free(m);
    return info.has_weights ? "a model" : "a vocabulary (no weights)";
}

int cmd_adapters(int argc, char **argv) {
    cli_model_opts mo = {0};
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        int r = cli_model_opt("adapters", &mo, argc, argv, &i);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(help, stdout);
            return CLI_OK;
        } else if (!strcmp(argv[i], "--lora-dir")) {
            if (!(dir = cli_value("adapters", argc, argv, &i))) return CLI_USAGE;
        } else {
            cli_error("adapters", "unknown option '%s'", argv[i]);
            return CLI_USAGE;
        }
    }
    if (!dir) {
        cli_error("adapters", "no adapter folder given (--lora-dir DIR)");
        return CLI_USAGE;
    }
    el_model *m;
    int rc = cli_load_model("adapters", &mo, false, &m);
    if (rc) return rc;
    cli_lora_dir d;
    if ((rc = cli_lora_dir_scan("adapters", m, dir, &d))) {
        el_model_free(m);
        return rc;
    }
    printf("%-24s %-6s %-5s %4s %7s %8s %10s  %s\n", "NAME", "FORMAT", "FITS", "RANK", "TARGETS",
           "ALPHA", "SIZE", "WHY NOT");
    size_t n_fit = 0, n_other = 0;
    const char **kind = calloc(d.n ? d.n : 1, sizeof *kind);
    if (!kind) {
        cli_error("adapters", "out of memory");
        cli_lora_dir_free(&d);
        el_model_free(m);
        return CLI_FAIL;
    }
    for (size_t i = 0; i < d.n; i++) {
        cli_lora_entry *e = &d.entries[i];
        el_adapter *a = cli_lora_dir_load(&d, e);
        el_adapter_info info;
        if (!a && (kind[i] = other_kind(e))) {
            n_other++;
        } else if (a && el_adapter_get_info(a, &info) == EL_OK) {
            char size[32];
            human_size(info.bytes, size, sizeof size);
            printf("%-24s %-6s %-5s %4d %7d %8g %10s\n", e->name, info.format, "yes",
                   info.rank_max, info.n_targets, info.alpha, size);
            n_fit++;
        } else {
            printf("%-24s %-6s %-5s %4s %7s %8s %10s  %s\n", e->name, e->format, "no", "-", "-",
                   "-", "-", e->error ? e->error : el_last_error());
        }
    }
    size_t n_adapters = d.n - n_other;
    printf("%zu adapter%s in %s, %zu fit%s the model\n", n_adapters, n_adapters == 1 ? "" : "s",
           dir, n_fit, n_fit == 1 ? "s" : "");
    if (n_other) printf("\nnot adapters:\n");
    for (size_t i = 0; i < d.n; i++)
        if (kind[i]) printf("  %s.gguf: %s, not an adapter\n", d.entries[i].name, kind[i]);
    free(kind);
    cli_lora_dir_free(&d);
    el_model_free(m);
    return CLI_OK;
}
