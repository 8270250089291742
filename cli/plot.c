/* plot.c - `edgelora plot`: columns of a tab-separated table as an SVG line plot, the curves
 * the docs embed (measurement scripts write the tables). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora plot -i TABLE.tsv -x XCOL -y YCOL [--series COL] -o OUT.svg\n"
    "                     [--title T] [--xlabel L] [--ylabel L]\n"
    "Plots column YCOL against XCOL of TABLE (tab-separated, a header line naming the\n"
    "columns), one curve per value of column COL (in order of first appearance), or one\n"
    "curve without --series. OUT is written through a temporary file.\n";

enum { MAX_COLS = 32, MAX_SERIES = 8, MAX_ROWS = 4096 };

typedef struct table {
    char *text;
    char *cols[MAX_COLS];
    int n_cols;
    char *cell[MAX_ROWS][MAX_COLS];
    int n_rows;
} table;

/* Splits line at tabs into fields (in place); returns their number. */
static int split(char *line, char **fields, int max) {
    int n = 0;
    for (char *f = line; n < max; f++) {
        fields[n++] = f;
        if (!(f = strchr(f, '\t'))) break;
        *f = '\0';
    }
    return n;
}

static bool table_read(const char *path, table *t) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_error("plot", "%s: cannot open", path);
        return false;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    t->text = malloc((size_t)size + 1);
    bool ok = t->text && fread(t->text, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    if (!ok) {
        cli_error("plot", "%s: cannot read", path);
        return false;
    }
    t->text[size] = '\0';
    char *save = NULL, *line = strtok_r(t->text, "\n", &save);
    if (!line) {
        cli_error("plot", "%s: no header line", path);
        return false;
    }
    t->n_cols = split(line, t->cols, MAX_COLS);
    for (line = strtok_r(NULL, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (t->n_rows == MAX_ROWS) {
            cli_error("plot", "%s: more than %d rows", path, MAX_ROWS);
            return false;
        }
        if (split(line, t->cell[t->n_rows], MAX_COLS) != t->n_cols) {
            cli_error("plot", "%s:%d: %d columns expected", path, t->n_rows + 2, t->n_cols);
            return false;
        }
        t->n_rows++;
    }
    return true;
}

static int column(const table *t, const char *path, const char *name) {
    for (int i = 0; name && i < t->n_cols; i++)
        if (!strcmp(t->cols[i], name)) return i;
    cli_error("plot", "%s: no column '%s'", path, name ? name : "(none)");
    return -1;
}

int cmd_plot(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *xc = NULL, *yc = NULL, *sc = NULL, *title = "",
               *xlabel = NULL, *ylabel = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return CLI_OK;
        }
        if (!(v = cli_value("plot", argc, argv, &i))) return CLI_USAGE;
        if (!strcmp(a, "-i"))
            in = v;
        else if (!strcmp(a, "-o"))
            out = v;
        else if (!strcmp(a, "-x"))
            xc = v;
        else if (!strcmp(a, "-y"))
            yc = v;
        else if (!strcmp(a, "--series"))
            sc = v;
        else if (!strcmp(a, "--title"))
            title = v;
        else if (!strcmp(a, "--xlabel"))
            xlabel = v;
        else if (!strcmp(a, "--ylabel"))
            ylabel = v;
        else {
            cli_error("plot", "unknown option '%s'", a);
            return CLI_USAGE;
        }
    }
    if (!in || !out || !xc || !yc) {
        cli_error("plot", "needs -i, -o, -x and -y (see --help)");
        return CLI_USAGE;
    }
    static table t;
    memset(&t, 0, sizeof t);
    int code = CLI_FAIL;
    static float xs[MAX_SERIES][MAX_ROWS], ys[MAX_SERIES][MAX_ROWS];
    static const char *const colors[MAX_SERIES] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                                   "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
    el_series series[MAX_SERIES];
    int n_series = 0;
    if (!table_read(in, &t)) goto done;
    int xi = column(&t, in, xc), yi = column(&t, in, yc), si = sc ? column(&t, in, sc) : -2;
    if (xi < 0 || yi < 0 || si == -1) goto done;
    for (int r = 0; r < t.n_rows; r++) {
        const char *name = si >= 0 ? t.cell[r][si] : yc;
        int s = 0;
        while (s < n_series && strcmp(series[s].name, name)) s++;
        if (s == n_series) {
            if (n_series == MAX_SERIES) {
                cli_error("plot", "%s: more than %d series", in, MAX_SERIES);
                goto done;
            }
            series[n_series++] =
                (el_series){.name = name, .color = colors[s], .x = xs[s], .y = ys[s], .n = 0};
        }
        char *end1, *end2;
        xs[s][series[s].n] = strtof(t.cell[r][xi], &end1);
        ys[s][series[s].n] = strtof(t.cell[r][yi], &end2);
        if (end1 == t.cell[r][xi] || *end1 || end2 == t.cell[r][yi] || *end2) {
            cli_error("plot", "%s:%d: '%s' / '%s' is not a number", in, r + 2, t.cell[r][xi],
                      t.cell[r][yi]);
            goto done;
        }
        series[s].n++;
    }
    el_status st =
        el_svg_plot(out, title, xlabel ? xlabel : xc, ylabel ? ylabel : yc, series, n_series);
    code = st == EL_OK ? CLI_OK : cli_fail("plot", st);
done:
    free(t.text);
    return code;
}
