/* tokenize.c - `edgelora tokenize` and `edgelora detokenize`. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char tokenize_help[] =
    "usage: edgelora tokenize -m MODEL [-p TEXT | -f FILE] [--bos] [--special]\n"
    "Prints the token ids of TEXT (or of FILE, or of standard input), space separated.\n"
    "The text is taken byte for byte (a trailing newline is part of it).\n"
    "  -m, --model FILE   model or vocab-only GGUF, or llama2.c checkpoint (with --tokenizer)\n"
    "  --tokenizer FILE   llama2.c tokenizer.bin\n"
    "  -p, --prompt TEXT  the text\n"
    "  -f, --file FILE    read the text from FILE ('-' for standard input)\n"
    "  --bos              add the special tokens the vocabulary asks for (BOS, ...)\n"
    "  --special          text spelling a special token becomes that token\n";

int cmd_tokenize(int argc, char **argv) {
    cli_model_opts mo = {0};
    const char *text = NULL, *file = NULL;
    bool bos = false, special = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_model_opt("tokenize", &mo, argc, argv, &i);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(tokenize_help, stdout);
            return CLI_OK;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) {
            if (!(text = cli_value("tokenize", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            if (!(file = cli_value("tokenize", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--bos")) {
            bos = true;
        } else if (!strcmp(a, "--special")) {
            special = true;
        } else {
            cli_error("tokenize", "unknown option '%s'", a);
            return CLI_USAGE;
        }
    }
    if (text && file) {
        cli_error("tokenize", "give the text with -p or -f, not both");
        return CLI_USAGE;
    }
    el_model *m;
    int rc = cli_load_model("tokenize", &mo, true, &m);
    if (rc) return rc;
    size_t len;
    char *owned = NULL;
    if (text) {
        len = strlen(text);
    } else {
        if (!(owned = cli_read_file("tokenize", file ? file : "-", &len))) {
            el_model_free(m);
            return CLI_FAIL;
        }
        text = owned;
    }
    int32_t *ids;
    size_t n;
    el_status st = cli_tokenize(m, text, len, bos, special, &ids, &n);
    if (st == EL_OK) {
        for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
        printf("\n");
        free(ids);
    }
    free(owned);
    el_model_free(m);
    return st == EL_OK ? CLI_OK : cli_fail("tokenize", st);
}

static const char detokenize_help[] =
    "usage: edgelora detokenize -m MODEL [-p IDS | -f FILE] [--special]\n"
    "Prints the text of token ids (space, comma or newline separated) given with -p, in FILE or\n"
    "on standard input.\n"
    "  --special   print special tokens' text too (BOS, EOS, ...)\n";

/* Parses whitespace- or comma-separated ids; prints an error for anything else. */
static bool parse_ids(const char *s, int32_t **ids, size_t *n) {
    size_t cap = 64;
    *n = 0;
    *ids = malloc(cap * sizeof **ids);
    while (*ids) {
        while (*s == ' ' || *s == ',' || *s == '\n' || *s == '\t' || *s == '\r') s++;
        if (!*s) return true;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > INT32_MAX) {
            cli_error("detokenize", "'%.20s' is not a token id", s);
            break;
        }
        if (*n == cap) {
            int32_t *bigger = realloc(*ids, 2 * cap * sizeof **ids);
            if (!bigger) break;
            *ids = bigger;
            cap *= 2;
        }
        (*ids)[(*n)++] = (int32_t)v;
        s = end;
    }
    free(*ids);
    *ids = NULL;
    return false;
}

int cmd_detokenize(int argc, char **argv) {
    cli_model_opts mo = {0};
    const char *text = NULL, *file = NULL;
    bool special = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_model_opt("detokenize", &mo, argc, argv, &i);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(detokenize_help, stdout);
            return CLI_OK;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) {
            if (!(text = cli_value("detokenize", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            if (!(file = cli_value("detokenize", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--special")) {
            special = true;
        } else {
            cli_error("detokenize", "unknown option '%s'", a);
            return CLI_USAGE;
        }
    }
    size_t len;
    char *owned = NULL;
    if (!text && !(owned = cli_read_file("detokenize", file ? file : "-", &len))) return CLI_FAIL;
    int32_t *ids;
    size_t n;
    bool ok = parse_ids(text ? text : owned, &ids, &n);
    free(owned);
    if (!ok) return CLI_USAGE;
    el_model *m;
    int rc = cli_load_model("detokenize", &mo, true, &m);
    if (rc) {
        free(ids);
        return rc;
    }
    char *out;
    el_status st = el_detokenize(m, ids, n, special, true, &out);
    if (st == EL_OK) {
        fputs(out, stdout);
        free(out);
    }
    free(ids);
    el_model_free(m);
    return st == EL_OK ? CLI_OK : cli_fail("detokenize", st);
}
