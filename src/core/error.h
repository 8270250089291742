/* error.h - setting and reading the per-thread error message behind every el_status. */
#ifndef EL_CORE_ERROR_H
#define EL_CORE_ERROR_H

#include "edgelora.h"

/* Records a printf-style message for this thread and returns st, so that a failing function can
 * end with `return el_error(EL_ERR_FORMAT, "%s: truncated header", path);`. */
el_status el_error(el_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Puts "prefix: " before the current message (used to add context such as a file name). */
void el_error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
