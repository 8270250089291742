/* svg.c - the loss-curve plot (see svg.h). */
#include "train/svg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/outfile.h"

enum { W = 640, H = 400, LEFT = 64, RIGHT = 20, TOP = 36, BOTTOM = 48 };

double el_svg_tick_step(double lo, double hi, int target) {
    double span = hi - lo;
    if (!(span > 0))
        return 1.0;
    double raw = span / target, p = pow(10.0, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

/* Text with &, < and > escaped. */
static void put_text(FILE *f, const char *s) {
    for (; *s; s++)
        fputs(*s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : (char[2]){*s, 0}, f);
}

/* data coordinates to pixels */
typedef struct frame {
    double x0, x1, y0, y1, pw, ph;
} frame;
static double px(const frame *f, double x) { return LEFT + (x - f->x0) / (f->x1 - f->x0) * f->pw; }
static double py(const frame *f, double y) {
    return TOP + (1.0 - (y - f->y0) / (f->y1 - f->y0)) * f->ph;
}

el_status el_svg_plot(const char *path, const char *title, const char *xlabel, const char *ylabel,
                      const el_series *series, int n_series) {
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int s = 0; s < n_series; s++)
        for (size_t i = 0; i < series[s].n; i++) {
            double x = series[s].x[i], y = series[s].y[i];
            if (!isfinite(x) || !isfinite(y))
                continue;
            x0 = fmin(x0, x), x1 = fmax(x1, x), y0 = fmin(y0, y), y1 = fmax(y1, y);
        }
    if (!(x0 <= x1))
        x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    if (x1 == x0)
        x1 = x0 + 1;
    if (y1 == y0)
        y1 = y0 + 1;
    double xs = el_svg_tick_step(x0, x1, 8), ys = el_svg_tick_step(y0, y1, 6);
    x0 = floor(x0 / xs) * xs, x1 = ceil(x1 / xs) * xs;
    y0 = floor(y0 / ys) * ys, y1 = ceil(y1 / ys) * ys;
    double pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;
    const frame fr = {x0, x1, y0, y1, pw, ph};

    el_outfile out;
    el_status st = el_outfile_open(&out, path);
    if (st != EL_OK) return st;
    FILE *f = out.f;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">", W / 2);
    put_text(f, title);
    fprintf(f, "</text>\n");
    /* grid and ticks */
    for (double x = x0; x <= x1 + xs * 1e-9; x += xs)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
                   "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
                px(&fr, x), TOP, px(&fr, x), H - BOTTOM, px(&fr, x), H - BOTTOM + 16, x);
    for (double y = y0; y <= y1 + ys * 1e-9; y += ys)
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                LEFT, py(&fr, y), W - RIGHT, py(&fr, y), LEFT - 6, py(&fr, y) + 4, y);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
               "stroke=\"black\"/>\n", LEFT, TOP, pw, ph);
    fprintf(f, "<text x=\"%.0f\" y=\"%d\" text-anchor=\"middle\">", LEFT + pw / 2, H - 10);
    put_text(f, xlabel);
    fprintf(f, "</text>\n<text x=\"16\" y=\"%.0f\" text-anchor=\"middle\" "
               "transform=\"rotate(-90 16 %.0f)\">", TOP + ph / 2, TOP + ph / 2);
    put_text(f, ylabel);
    fprintf(f, "</text>\n");
    for (int s = 0; s < n_series; s++) {
        const el_series *sr = &series[s];
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                sr->color);
        for (size_t i = 0; i < sr->n; i++)
            if (isfinite(sr->x[i]) && isfinite(sr->y[i]))
                fprintf(f, "%.1f,%.1f ", px(&fr, sr->x[i]), py(&fr, sr->y[i]));
        fprintf(f, "\"/>\n<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                   "stroke-width=\"2\"/><text x=\"%d\" y=\"%d\">",
                W - RIGHT - 130, TOP + 16 + 18 * s, W - RIGHT - 105, TOP + 16 + 18 * s, sr->color,
                W - RIGHT - 100, TOP + 20 + 18 * s);
        put_text(f, sr->name);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</svg>\n");
    return el_outfile_commit(&out);
}
