/* log.h - sending warnings to the callback the application installed with el_log_set. */
#ifndef EL_CORE_LOG_H
#define EL_CORE_LOG_H

#include "edgelora.h"

/* Formats a message and passes it to the installed callback, if any. */
void el_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
