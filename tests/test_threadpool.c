/* test_threadpool.c - every share of a job runs exactly once, the caller is worker 0, results
 * are complete when run returns, and pools come and go cleanly. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "core/threadpool.h"
#include "testutil.h"

enum { MAX_THREADS = 8 };

typedef struct count_job {
    atomic_int calls[MAX_THREADS];
    atomic_int bad_nth;
    int nth_expected;
} count_job;

static void count_task(void *arg, int ith, int nth) {
    count_job *j = arg;
    if (nth != j->nth_expected || ith < 0 || ith >= nth) {
        atomic_fetch_add(&j->bad_nth, 1);
        return;
    }
    atomic_fetch_add(&j->calls[ith], 1);
}

static int test_each_share_once(void) {
    for (int n = 1; n <= 4; n++) {
        el_threadpool *tp;
        CHECK(el_threadpool_create(n, &tp) == EL_OK);
        CHECK(el_threadpool_size(tp) == n);
        count_job j = {.nth_expected = n};
        enum { RUNS = 2000 };
        for (int r = 0; r < RUNS; r++) el_threadpool_run(tp, count_task, &j);
        el_threadpool_free(tp);
        CHECK(atomic_load(&j.bad_nth) == 0);
        for (int i = 0; i < n; i++) CHECK(atomic_load(&j.calls[i]) == RUNS);
    }
    return TEST_PASS;
}

/* Each share sums its slice of 0..n-1 into its own slot (plain memory, no atomics): the caller
 * must see every slot written when run returns. */
typedef struct sum_job {
    int64_t n;
    int64_t partial[MAX_THREADS];
} sum_job;

static void sum_task(void *arg, int ith, int nth) {
    sum_job *j = arg;
    int64_t lo = j->n * ith / nth, hi = j->n * (ith + 1) / nth, s = 0;
    for (int64_t i = lo; i < hi; i++) s += i;
    j->partial[ith] = s;
}

static int test_sums(void) {
    el_threadpool *tp;
    CHECK(el_threadpool_create(3, &tp) == EL_OK);
    for (int r = 0; r < 3000; r++) {
        sum_job j = {.n = 1 + r * 7};
        el_threadpool_run(tp, sum_task, &j);
        int64_t s = 0;
        for (int i = 0; i < 3; i++) s += j.partial[i];
        CHECK(s == j.n * (j.n - 1) / 2);
        if (r % 1000 == 999) usleep(2000); /* let the workers fall asleep, then wake them */
    }
    el_threadpool_free(tp);
    return TEST_PASS;
}

typedef struct inline_job {
    pthread_t caller;
    int same;
} inline_job;

static void inline_task(void *arg, int ith, int nth) {
    inline_job *j = arg;
    if (ith == 0) j->same = pthread_equal(pthread_self(), j->caller) && nth >= 1;
}

static int test_caller_is_worker0(void) {
    for (int n = 1; n <= 2; n++) {
        el_threadpool *tp;
        CHECK(el_threadpool_create(n, &tp) == EL_OK);
        inline_job j = {.caller = pthread_self()};
        el_threadpool_run(tp, inline_task, &j);
        CHECK(j.same);
        el_threadpool_free(tp);
    }
    el_threadpool *tp;
    CHECK(el_threadpool_create(0, &tp) == EL_OK);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(el_threadpool_size(tp) == (cores > 0 ? (int)cores : 1));
    el_threadpool_free(tp);
    el_threadpool_free(NULL);
    return TEST_PASS;
}

static int test_create_free_stress(void) {
    for (int r = 0; r < 100; r++) {
        int n = 1 + r % 4;
        el_threadpool *tp;
        CHECK(el_threadpool_create(n, &tp) == EL_OK);
        count_job j = {.nth_expected = n};
        for (int k = 0; k < r % 3; k++) el_threadpool_run(tp, count_task, &j);
        el_threadpool_free(tp); /* also right after create, with workers still starting */
        CHECK(atomic_load(&j.bad_nth) == 0);
        for (int i = 0; i < n; i++) CHECK(atomic_load(&j.calls[i]) == r % 3);
    }
    return TEST_PASS;
}

int main(void) {
    run_test("each_share_once", test_each_share_once);
    run_test("sums", test_sums);
    run_test("caller_is_worker0", test_caller_is_worker0);
    run_test("create_free_stress", test_create_free_stress);
    return tests_exit_code();
}
