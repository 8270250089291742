/* describe.c - a program of the tools library, built outside the tree against an installed
 * edgelora with `pkg-config --cflags --libs edgelora-tools` (tests/cli/test_install.sh). Usage:
 * describe MODEL: prints el_file_describe's text, then checks that the tools' JSON reader and a
 * measurement link and work. */
#include <edgelora-tools.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    char *text = NULL;
    if (el_file_describe(argv[1], &text) != EL_OK) {
        fprintf(stderr, "describe: %s\n", el_last_error());
        return 1;
    }
    fputs(text, stdout);
    free(text);
    el_json_doc *doc = NULL;
    const char req[] = "{\"prompt\": \"Hello\", \"n\": 16}";
    int64_t v = 0;
    if (el_json_parse(req, strlen(req), "request", &doc) != EL_OK ||
        !el_json_int(el_json_get(el_json_root(doc), "n"), &v) || v != 16) {
        fprintf(stderr, "describe: json: %s\n", el_last_error());
        return 1;
    }
    el_json_free(doc);
    if (el_json_parse("{\"n\": }", 7, "bad.json", &doc) != EL_ERR_FORMAT) return 1;
    printf("json error: %s\n", el_last_error());
    printf("peak RSS: %s\n", el_peak_rss_bytes() > 0 ? "measured" : "unknown");
    return 0;
}
