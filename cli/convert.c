/* convert.c - `edgelora convert`: other model formats to GGUF. */
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora convert MODEL.bin --tokenizer TOKENIZER.bin -o OUT.gguf\n"
    "Writes a llama2.c checkpoint and its tokenizer as one GGUF file (architecture llama, F32\n"
    "weights, a SentencePiece-style vocabulary) that edgelora and llama.cpp can load.\n"
    "The output is written to a temporary file and renamed, so a failure leaves no partial file.\n";

int cmd_convert(int argc, char **argv) {
    const char *in = NULL, *tokenizer = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return CLI_OK;
        } else if (!strcmp(a, "--tokenizer")) {
            if (!(tokenizer = cli_value("convert", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value("convert", argc, argv, &i))) return CLI_USAGE;
        } else if (a[0] == '-' && a[1]) {
            cli_error("convert", "unknown option '%s'", a);
            return CLI_USAGE;
        } else if (in) {
            cli_error("convert", "one input at a time ('%s' and '%s')", in, a);
            return CLI_USAGE;
        } else {
            in = a;
        }
    }
    if (!in || !out || !tokenizer) {
        cli_error("convert", "needs an input model, --tokenizer and -o (see --help)");
        return CLI_USAGE;
    }
    el_status st = el_convert_llama2c(in, tokenizer, out);
    if (st != EL_OK) return cli_fail("convert", st);
    fprintf(stderr, "edgelora convert: wrote %s\n", out);
    return CLI_OK;
}
