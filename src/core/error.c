/* error.c - the per-thread message of the last failed call. */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[1024];

el_status el_error(el_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return st;
}

void el_error_prefix(const char *fmt, ...) {
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof prefix - 2, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t plen = strlen(prefix);
    memcpy(prefix + plen, ": ", 3);
    plen += 2;
    /* shift the old message right (truncating its end) and put the prefix in front */
    size_t old_len = strlen(last_error);
    if (plen + old_len >= sizeof last_error) old_len = sizeof last_error - 1 - plen;
    memmove(last_error + plen, last_error, old_len);
    last_error[plen + old_len] = '\0';
    memcpy(last_error, prefix, plen);
}

const char *el_last_error(void) { return last_error; }

const char *el_status_name(el_status st) {
    switch (st) {
    case EL_OK: return "ok";
    case EL_ERR_INVALID_ARG: return "invalid argument";
    case EL_ERR_IO: return "I/O error";
    case EL_ERR_FORMAT: return "format error";
    case EL_ERR_UNSUPPORTED: return "unsupported";
    case EL_ERR_NOMEM: return "out of memory";
    case EL_ERR_CONTEXT_FULL: return "context full";
    case EL_ERR_MISMATCH: return "mismatch";
    case EL_ERR_NOT_FOUND: return "not found";
    case EL_ERR_CANCELLED: return "cancelled";
    }
    return "unknown status";
}
