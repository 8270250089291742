/* clock.h - wall time for measurements: a monotonic clock in seconds. */
#ifndef EL_CORE_CLOCK_H
#define EL_CORE_CLOCK_H

#include <time.h>

static inline double el_now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
