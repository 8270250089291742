/* svg.h - a tiny SVG line-plot writer for loss curves: axes with "nice" ticks, one polyline per
 * series, a legend. */
#ifndef EL_TRAIN_SVG_H
#define EL_TRAIN_SVG_H

#include <stddef.h>

#include "edgelora-tools.h"

typedef struct el_series {
    const char *name;
    const char *color; /* any SVG colour */
    const float *x, *y;
    size_t n;
} el_series;

/* Writes the plot to path (via a temporary file and rename). */
el_status el_svg_plot(const char *path, const char *title, const char *xlabel, const char *ylabel,
                      const el_series *series, int n_series);

/* Tick spacing of 1, 2 or 5 times a power of ten giving about `target` ticks over [lo, hi]. */
double el_svg_tick_step(double lo, double hi, int target);

#endif
