/* log.c - the one log callback of the process. */
#include "core/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

/* The callback and its argument change together, so a lock guards the pair. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static el_log_fn log_fn;
static void *log_user;

void el_log_set(el_log_fn fn, void *user) {
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    pthread_mutex_unlock(&log_lock);
}

void el_warn(const char *fmt, ...) {
    pthread_mutex_lock(&log_lock);
    el_log_fn fn = log_fn;
    void *user = log_user;
    pthread_mutex_unlock(&log_lock);
    if (!fn) return;
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    fn(user, EL_LOG_WARNING, message);
}
