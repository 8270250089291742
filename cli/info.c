/* info.c - `edgelora info FILE`: what a model, vocabulary or adapter file holds. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora info [--json] FILE   (or -m FILE, as the other commands take a model)\n"
    "Prints what FILE holds: format, architecture, hyper-parameters, tensors (name, type, shape,\n"
    "bytes) and tokenizer. Works on GGUF models, vocab-only GGUFs, GGUF adapters and llama2.c\n"
    "checkpoints and tokenizers.\n"
    "  --json    the same as one JSON object: {\"file\", \"format\", ...; for GGUF\n"
    "            \"version\", \"alignment\", \"metadata\" {KEY: {\"type\", \"value\"} or\n"
    "            {\"type\": \"array\", \"element_type\", \"n\", \"values\" (the first 5)}},\n"
    "            \"tensors\" [{\"name\", \"type\", \"shape\", \"bytes\"}], \"total\"}\n"
    "            (strings whole; docs/formats.md, \"JSON output\")\n";

int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(help, stdout);
            return CLI_OK;
        }
        if (!strcmp(argv[i], "--json")) {
            json = true;
            continue;
        }
        bool flagged = !strcmp(argv[i], "-m") || !strcmp(argv[i], "--model");
        if (flagged && i + 1 == argc) {
            cli_error("info", "%s needs a file", argv[i]);
            return CLI_USAGE;
        }
        if (flagged) i++;
        else if (argv[i][0] == '-' && argv[i][1]) {
            cli_error("info", "unknown option '%s'", argv[i]);
            return CLI_USAGE;
        }
        if (path) {
            cli_error("info", "one file at a time ('%s' and '%s')", path, argv[i]);
            return CLI_USAGE;
        }
        path = argv[i];
    }
    if (!path) {
        fputs(help, stderr);
        return CLI_USAGE;
    }
    char *text;
    el_status st = json ? el_file_describe_json(path, &text) : el_file_describe(path, &text);
    if (st != EL_OK) return cli_fail("info", st);
    fputs(text, stdout);
    free(text);
    return CLI_OK;
}
