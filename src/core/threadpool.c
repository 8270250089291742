/* threadpool.c - persistent workers that run one job at a time.
 *
 * A job is published by bumping a generation counter. Workers spin briefly on it (a forward pass
 * runs hundreds of small jobs back to back, and a sleeping thread takes tens of microseconds to
 * wake), then sleep on a condition variable. The caller runs share 0 itself, then waits the same
 * way for the count of unfinished workers to reach zero. */
#include "core/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/error.h"

/* Polls before sleeping; each is a pause instruction (10-150 cycles), so a worker spins for a
 * few to a hundred microseconds: enough to bridge the gap between the jobs of one forward pass,
 * short enough not to steal much from other processes when idle. */
enum { SPIN_POLLS = 4096 };

typedef struct worker {
    el_threadpool *tp;
    int ith;
    pthread_t thread;
} worker;

struct el_threadpool {
    int n_threads;
    worker *workers; /* workers[0] is the caller and has no thread */
    pthread_mutex_t mutex;
    pthread_cond_t job_ready;
    pthread_cond_t job_done;
    /* the current job: written by the caller before the generation is bumped (release) and read
     * by workers after they see the new generation (acquire) */
    el_task_fn fn;
    void *arg;
    atomic_uint generation;
    atomic_int pending; /* workers (not the caller) still running the current job */
    atomic_bool quit;
};

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Waits until the generation differs from seen; returns the new one. */
static unsigned wait_for_job(el_threadpool *tp, unsigned seen) {
    unsigned g;
    for (int i = 0; i < SPIN_POLLS; i++) {
        g = atomic_load_explicit(&tp->generation, memory_order_acquire);
        if (g != seen) return g;
        cpu_relax();
    }
    pthread_mutex_lock(&tp->mutex);
    while ((g = atomic_load_explicit(&tp->generation, memory_order_acquire)) == seen)
        pthread_cond_wait(&tp->job_ready, &tp->mutex);
    pthread_mutex_unlock(&tp->mutex);
    return g;
}

static void *worker_main(void *p) {
    worker *w = p;
    el_threadpool *tp = w->tp;
    unsigned seen = 0;
    for (;;) {
        seen = wait_for_job(tp, seen);
        if (atomic_load_explicit(&tp->quit, memory_order_acquire)) return NULL;
        tp->fn(tp->arg, w->ith, tp->n_threads);
        if (atomic_fetch_sub_explicit(&tp->pending, 1, memory_order_acq_rel) == 1) {
            /* the last one out wakes the caller if it went to sleep; the mutex orders this
             * after the caller's check of pending, so the wake cannot be lost */
            pthread_mutex_lock(&tp->mutex);
            pthread_cond_signal(&tp->job_done);
            pthread_mutex_unlock(&tp->mutex);
        }
    }
}

/* Publishes a job (fn may be NULL when quitting) to every worker. */
static void publish(el_threadpool *tp) {
    atomic_store_explicit(&tp->pending, tp->n_threads - 1, memory_order_relaxed);
    pthread_mutex_lock(&tp->mutex);
    atomic_fetch_add_explicit(&tp->generation, 1, memory_order_release);
    pthread_cond_broadcast(&tp->job_ready);
    pthread_mutex_unlock(&tp->mutex);
}

el_status el_threadpool_create(int n_threads, el_threadpool **out) {
    *out = NULL;
    if (n_threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (int)n : 1;
    }
    el_threadpool *tp = calloc(1, sizeof *tp);
    worker *workers = calloc((size_t)n_threads, sizeof *workers);
    if (tp == NULL || workers == NULL) {
        free(tp);
        free(workers);
        return el_error(EL_ERR_NOMEM, "thread pool: out of memory for %d threads", n_threads);
    }
    tp->n_threads = n_threads;
    tp->workers = workers;
    pthread_mutex_init(&tp->mutex, NULL);
    pthread_cond_init(&tp->job_ready, NULL);
    pthread_cond_init(&tp->job_done, NULL);
    atomic_init(&tp->generation, 0);
    atomic_init(&tp->pending, 0);
    atomic_init(&tp->quit, false);
    for (int i = 0; i < n_threads; i++) {
        workers[i].tp = tp;
        workers[i].ith = i;
        if (i == 0) continue;
        if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0) {
            tp->n_threads = i; /* free() joins the ones already started */
            el_threadpool_free(tp);
            return el_error(EL_ERR_NOMEM, "thread pool: cannot start thread %d of %d", i,
                            n_threads);
        }
    }
    *out = tp;
    return EL_OK;
}

void el_threadpool_free(el_threadpool *tp) {
    if (tp == NULL) return;
    if (tp->n_threads > 1) {
        atomic_store_explicit(&tp->quit, true, memory_order_release);
        publish(tp);
        for (int i = 1; i < tp->n_threads; i++) pthread_join(tp->workers[i].thread, NULL);
    }
    pthread_cond_destroy(&tp->job_done);
    pthread_cond_destroy(&tp->job_ready);
    pthread_mutex_destroy(&tp->mutex);
    free(tp->workers);
    free(tp);
}

int el_threadpool_size(const el_threadpool *tp) { return tp->n_threads; }

void el_threadpool_run(el_threadpool *tp, el_task_fn fn, void *arg) {
    if (tp->n_threads == 1) {
        fn(arg, 0, 1);
        return;
    }
    tp->fn = fn;
    tp->arg = arg;
    publish(tp);
    fn(arg, 0, tp->n_threads);
    for (int i = 0; i < SPIN_POLLS; i++) {
        if (atomic_load_explicit(&tp->pending, memory_order_acquire) == 0) return;
        cpu_relax();
    }
    pthread_mutex_lock(&tp->mutex);
    while (atomic_load_explicit(&tp->pending, memory_order_acquire) != 0)
        pthread_cond_wait(&tp->job_done, &tp->mutex);
    pthread_mutex_unlock(&tp->mutex);
}
