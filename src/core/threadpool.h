/* threadpool.h - a persistent pool of worker threads that run one job at a time.
 * A job is fn(arg, ith, nth) called once for every ith in [0, nth); the caller's thread is
 * worker 0, so a pool of 1 runs everything inline. */
#ifndef EL_CORE_THREADPOOL_H
#define EL_CORE_THREADPOOL_H

#include "edgelora.h"

typedef struct el_threadpool el_threadpool;
typedef void (*el_task_fn)(void *arg, int ith, int nth);

/* n_threads <= 0 means the number of online cores. */
el_status el_threadpool_create(int n_threads, el_threadpool **out);
void el_threadpool_free(el_threadpool *tp);
int el_threadpool_size(const el_threadpool *tp);
/* Runs fn on every worker and returns when all have finished. Not reentrant. */
void el_threadpool_run(el_threadpool *tp, el_task_fn fn, void *arg);

#endif
