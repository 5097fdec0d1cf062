/* The pool's idle-worker prefetch (kernels/threadpool.h npl_pool_prefetch):
 * ranges that are not memory (a stale request after a model closed) are
 * harmless, jobs keep their results, a posted range never keeps a worker
 * from the next job, and the pool frees while a worker is mid-range. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "check.h"
#include "kernels/threadpool.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
    int64_t sum[8];
    pthread_t who[8];
    double spin_s;
} job;

/* share i writes i * i and who ran it, after spinning spin_s */
static void share(void *arg, int ith, int nth) {
    job *j = arg;
    (void)nth;
    const double t0 = now_s();
    while (now_s() - t0 < j->spin_s) {}
    j->sum[ith] = (int64_t)ith * ith;
    j->who[ith] = pthread_self();
}

/* a reservation of `bytes` with no access: prefetches into it find no page */
static void *reserve(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void check_threads(int nth) {
    npl_pool *pool = npl_pool_new(nth);
    CHECK(pool != NULL);
    const size_t big = (size_t)1 << 40; /* 1.7e10 lines: a minute of prefetching at least */
    char *none = reserve(big);
    CHECK(none != NULL);
    char *gone = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(gone != MAP_FAILED);
    munmap(gone, 1 << 20); /* a range that was weights once */
    static char live[1 << 20];

    /* every worker gets ranges no prefetch can complete, and a live one */
    npl_pool_range r[NPL_POOL_PREFETCH_MAX];
    int n = 0;
    for (int w = 1; w < nth; w++) {
        r[n++] = (npl_pool_range){gone, 1 << 20, w};
        r[n++] = (npl_pool_range){live, sizeof live, w};
        r[n++] = (npl_pool_range){none, big, w};
    }
    npl_pool_prefetch(pool, r, n);
    const double t_sleep = now_s();
    while (now_s() - t_sleep < 0.002) {} /* the workers are deep in the big range now */

    /* jobs run right, and the workers take shares: a posted range pauses
     * at each job instead of holding a worker for the minutes it lasts.
     * Jobs of 1 ms shares until a worker has run one (a loaded machine may
     * not run the worker at once; 10 s is far from what the range takes) */
    int worker_shares = 0, jobs = 0;
    const double t0 = now_s();
    while ((jobs < 200 || !worker_shares) && now_s() - t0 < 10.0) {
        job j = {.spin_s = jobs < 50 || !worker_shares ? 1e-3 : 0};
        npl_pool_run(pool, share, &j);
        for (int i = 0; i < nth; i++) {
            CHECK_EQ_INT(j.sum[i], (int64_t)i * i);
            worker_shares += !pthread_equal(j.who[i], pthread_self());
        }
        if (++jobs % 20 == 0) npl_pool_prefetch(pool, r, n); /* posted again mid-run */
    }
    CHECK(worker_shares > 0);
    printf("pool of %d: %d of %d shares on workers while %.0f GiB were posted; %d jobs in %.1f ms\n", nth,
           worker_shares, jobs * nth, (double)big / (1u << 30) * (nth - 1), jobs, (now_s() - t0) * 1e3);

    /* n = 0 withdraws the ranges; a pool frees mid-range too */
    npl_pool_prefetch(pool, NULL, 0);
    npl_pool_prefetch(pool, r, n);
    npl_pool_free(pool); /* a worker that did not look would hold this for a minute (ctest's timeout) */
    munmap(none, big);
}

int main(void) {
    check_threads(2);
    check_threads(3);
    /* a pool of one thread has no workers: posting is a no-op */
    npl_pool *one = npl_pool_new(1);
    npl_pool_range r = {NULL, 4096, 1};
    npl_pool_prefetch(one, &r, 1);
    job j = {0};
    npl_pool_run(one, share, &j);
    CHECK_EQ_INT(j.sum[0], 0);
    npl_pool_free(one);
    npl_pool_prefetch(NULL, &r, 1);
    TEST_MAIN_END();
}
