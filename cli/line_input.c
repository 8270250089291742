/* line_input.c - lines from a terminal through libedit, or from a pipe or file (see
 * line_input.h). */
#include <histedit.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "line_input.h"

enum { HISTORY_SIZE = 500 };

struct cli_line_input {
    EditLine *el; /* NULL when stdin is not a terminal */
    History *hist;
    const char *prompt;
    char *line;   /* the last line (plain reading: getline's buffer; libedit: a copy) */
    size_t cap;
};

static const char *prompt_of(EditLine *el) {
    cli_line_input *in = NULL;
    el_get(el, EL_CLIENTDATA, &in);
    return in ? in->prompt : "";
}

cli_line_input *cli_line_open(const char *prog, const char *prompt) {
    cli_line_input *in = calloc(1, sizeof *in);
    if (!in) return NULL;
    in->prompt = prompt;
    if (!isatty(STDIN_FILENO)) return in;
    setlocale(LC_CTYPE, ""); /* libedit edits characters of the terminal's encoding (UTF-8) */
    HistEvent ev;
    if (!(in->el = el_init(prog, stdin, stderr, stderr)) || !(in->hist = history_init())) {
        cli_line_close(in);
        return NULL;
    }
    history(in->hist, &ev, H_SETSIZE, HISTORY_SIZE);
    history(in->hist, &ev, H_SETUNIQUE, 1);
    el_set(in->el, EL_CLIENTDATA, in);
    el_set(in->el, EL_PROMPT, prompt_of);
    el_set(in->el, EL_EDITOR, "emacs");
    el_set(in->el, EL_HIST, history, in->hist);
    return in;
}

bool cli_line_is_terminal(const cli_line_input *in) { return in->el != NULL; }

static void strip_newline(char *s, size_t *len) {
    while (*len && (s[*len - 1] == '\n' || s[*len - 1] == '\r')) s[--*len] = '\0';
}

const char *cli_line_read(cli_line_input *in) {
    if (!in->el) {
        ssize_t n = getline(&in->line, &in->cap, stdin);
        if (n < 0) return NULL;
        size_t len = (size_t)n;
        strip_newline(in->line, &len);
        return in->line;
    }
    int count;
    const char *got = el_gets(in->el, &count);
    if (!got || count <= 0) return NULL;
    size_t len = strlen(got);
    char *line = realloc(in->line, len + 1);
    if (!line) return NULL;
    memcpy(line, got, len + 1);
    in->line = line;
    strip_newline(line, &len);
    if (len) {
        HistEvent ev;
        history(in->hist, &ev, H_ENTER, line);
    }
    return line;
}

void cli_line_close(cli_line_input *in) {
    if (!in) return;
    if (in->el) el_end(in->el);
    if (in->hist) history_end(in->hist);
    free(in->line);
    free(in);
}
