/* main.c - the edgelora program: dispatches to one subcommand per file. */
#include <stdio.h>
#include <string.h>

#include "edgelora.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: edgelora COMMAND [options]   (edgelora COMMAND --help for its options)\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("edgelora %s\n", EL_VERSION_STRING);
        return 0;
    }
    fprintf(stderr, "edgelora: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
