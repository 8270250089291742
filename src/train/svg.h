/* svg.h - a tiny SVG line-plot writer for loss curves: axes with "nice" ticks, one polyline per
 * series, a legend. */
#ifndef EL_TRAIN_SVG_H
#define EL_TRAIN_SVG_H

#include <stddef.h>

#include "edgelora-tools.h"

/* el_series and el_svg_plot are declared in edgelora-tools.h (the CLI's `plot` uses them). */

/* Tick spacing of 1, 2 or 5 times a power of ten giving about `target` ticks over [lo, hi]. */
double el_svg_tick_step(double lo, double hi, int target);

#endif
