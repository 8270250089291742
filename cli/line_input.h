/* line_input.h - the lines `edgelora chat` reads: edited on a terminal (libedit: cursor keys,
 * backspace, history with up and down), read plainly otherwise, so a conversation can be piped
 * in or scripted. */
#ifndef EL_CLI_LINE_INPUT_H
#define EL_CLI_LINE_INPUT_H

#include <stdbool.h>

typedef struct cli_line_input cli_line_input;

/* Reads stdin. On a terminal prompt is shown before each line, on stderr (with the editing),
 * so that stdout carries only what the program writes. NULL if out of memory. */
cli_line_input *cli_line_open(const char *prog, const char *prompt);
bool cli_line_is_terminal(const cli_line_input *in);
/* The next line without its newline (valid until the next call), or NULL at the end of the
 * input (Ctrl-D on a terminal), on a read error, or when a signal handler without SA_RESTART
 * (Ctrl-C) interrupts the wait. */
const char *cli_line_read(cli_line_input *in);
void cli_line_close(cli_line_input *in);

#endif
