/* Persistent thread pool (see threadpool.h). */
#include "core/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define NPL_PAUSE() _mm_pause()
#else
#define NPL_PAUSE() ((void)0)
#endif

enum { SPIN_ITERS = 2000 }; /* ~0.1-0.3 ms: covers the gap between two ops, not a busy machine */

typedef struct {
    npl_pool *pool;
    int index;
} worker_arg;

struct npl_pool {
    int n;
    pthread_t *threads;
    worker_arg *args;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_uint generation;   /* bumped for every job */
    atomic_int pending;       /* workers still running the current job */
    atomic_int stop;
    npl_pool_fn fn;
    void *arg;
};

static void *worker_main(void *p) {
    worker_arg *wa = p;
    npl_pool *pool = wa->pool;
    unsigned seen = 0;
    for (;;) {
        unsigned gen;
        int spins = 0;
        while ((gen = atomic_load_explicit(&pool->generation, memory_order_acquire)) == seen &&
               !atomic_load(&pool->stop)) {
            if (++spins < SPIN_ITERS) {
                NPL_PAUSE();
                continue;
            }
            pthread_mutex_lock(&pool->mu);
            while (atomic_load(&pool->generation) == seen && !atomic_load(&pool->stop))
                pthread_cond_wait(&pool->cv, &pool->mu);
            pthread_mutex_unlock(&pool->mu);
        }
        if (atomic_load(&pool->stop)) return NULL;
        seen = gen;
        pool->fn(pool->arg, wa->index, pool->n);
        atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel);
    }
}

npl_pool *npl_pool_new(int n_threads) {
    if (n_threads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = c > 0 ? (int)c : 1;
    }
    if (n_threads > 256) n_threads = 256;
    npl_pool *p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads, sizeof(pthread_t));
        p->args = calloc((size_t)n_threads, sizeof(worker_arg));
        if (!p->threads || !p->args) {
            npl_pool_free(p);
            return NULL;
        }
        for (int i = 1; i < n_threads; i++) {
            p->args[i].pool = p;
            p->args[i].index = i;
            if (pthread_create(&p->threads[i], NULL, worker_main, &p->args[i]) != 0) {
                p->n = i; /* run with the threads we got */
                break;
            }
        }
    }
    return p;
}

void npl_pool_free(npl_pool *p) {
    if (!p) return;
    atomic_store(&p->stop, 1);
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n && p->threads; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->threads);
    free(p->args);
    free(p);
}

int npl_pool_size(const npl_pool *p) { return p ? p->n : 1; }

void npl_pool_run(npl_pool *p, npl_pool_fn fn, void *arg) {
    if (!p || p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store_explicit(&p->pending, p->n - 1, memory_order_release);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_acq_rel);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    fn(arg, 0, p->n);
    /* a worker still busy was probably preempted: yield the core to it */
    for (int spins = 0; atomic_load_explicit(&p->pending, memory_order_acquire) > 0; spins++) {
        if (spins < SPIN_ITERS / 4) NPL_PAUSE();
        else sched_yield();
    }
}
