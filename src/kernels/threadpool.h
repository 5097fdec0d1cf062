/* Persistent thread pool: workers are created once and wait for jobs. A job
 * is n shares for a pool of n threads (the caller and n-1 workers); each
 * share runs exactly once, on whichever thread claims it first, so a worker
 * the OS has not scheduled yet does not hold the job up. Workers spin
 * briefly before sleeping because a decode step dispatches hundreds of
 * small jobs. */
#ifndef NPL_THREADPOOL_H
#define NPL_THREADPOOL_H
#include <stddef.h>

typedef struct npl_pool npl_pool;
typedef void (*npl_pool_fn)(void *arg, int ith, int nth);

/* n_threads <= 0 means one per online core. Returns NULL on failure. */
npl_pool *npl_pool_new(int n_threads);
void npl_pool_free(npl_pool *p);
int npl_pool_size(const npl_pool *p);
/* Run fn(arg, i, n) for i in [0, n) across the pool; returns when all are
 * done. Shares may run one after another on the same thread, so fn must not
 * wait for another share. */
void npl_pool_run(npl_pool *p, npl_pool_fn fn, void *arg);

/* Byte ranges for idle workers to prefetch: what the next job will read
 * (a decode matmul's weights) while the caller runs ops that read none, so
 * the memory is not idle then. Worker `worker` (1 .. size-1; others wrap)
 * takes the range, front to back, while it waits for jobs; a job pauses it.
 * A call replaces the ranges an earlier one posted (n = 0: none left).
 * Prefetches change no result, and reading a range late or not at all
 * only costs time. */
enum { NPL_POOL_PREFETCH_MAX = 8 };
typedef struct {
    const void *p;
    size_t bytes;
    int worker;
} npl_pool_range;
void npl_pool_prefetch(npl_pool *p, const npl_pool_range *r, int n);

/* A pool without threads of its own: npl_pool_run(p, fn, arg) becomes
 * run(host, n_threads, fn, arg), the host's pool running the n shares (an
 * accelerator on its host's threads, npl_accel_host_pool). NULL on failure. */
typedef void (*npl_pool_host_run)(void *host, int n_tasks, npl_pool_fn fn, void *arg);
npl_pool *npl_pool_new_hosted(int n_threads, npl_pool_host_run run, void *host);

#endif
