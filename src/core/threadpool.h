/* Persistent thread pool: workers are created once and wait for jobs; the
 * calling thread takes share 0 of every job, so a pool of n threads runs
 * n shares with n-1 workers. Workers spin briefly before sleeping because a
 * decode step dispatches hundreds of small jobs. */
#ifndef NPL_THREADPOOL_H
#define NPL_THREADPOOL_H

typedef struct npl_pool npl_pool;
typedef void (*npl_pool_fn)(void *arg, int ith, int nth);

/* n_threads <= 0 means one per online core. Returns NULL on failure. */
npl_pool *npl_pool_new(int n_threads);
void npl_pool_free(npl_pool *p);
int npl_pool_size(const npl_pool *p);
/* Run fn(arg, i, n) for i in [0, n) across the pool; returns when all are done. */
void npl_pool_run(npl_pool *p, npl_pool_fn fn, void *arg);

#endif
