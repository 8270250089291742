/* measure.h - the read kernel behind el_measure_read_bandwidth, exposed so a test can check that
 * every word is really read. */
#ifndef EL_RUNTIME_MEASURE_H
#define EL_RUNTIME_MEASURE_H

#include <stddef.h>
#include <stdint.h>

#include "core/threadpool.h"
#include "edgelora-tools.h"

/* The wrapping sum of the n 64-bit words of buf, swept `sweeps` times (so sweeps * the sum),
 * split across the pool's threads in contiguous shares. At most 256 threads (0 otherwise). */
uint64_t el_read_sum(el_threadpool *tp, const uint64_t *buf, size_t n, int sweeps);

#endif
