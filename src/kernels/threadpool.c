/* Persistent thread pool (see threadpool.h).
 *
 * A job is n shares. Shares are claimed from one atomic word holding the
 * job's generation (high 32 bits) and the next share (low 32 bits), so a
 * claim names both the job and the share in one step. The caller claims
 * shares like any worker, and waits only for shares that were claimed: a
 * worker the OS has not scheduled yet simply finds the job used up later,
 * instead of holding the caller until it runs. On a machine shared with
 * other processes that wait was most of the cost of a decode step. */
#include "kernels/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define NPL_PAUSE() _mm_pause()
#else
#define NPL_PAUSE() ((void)0)
#endif

enum {
    SPIN_ITERS = 2000, /* ~0.1-0.3 ms: covers the gap between two ops, not a busy machine */
    WAIT_SPINS = 200,  /* caller: pause this often for a claimed share, then yield the core */
};

struct npl_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Alignas(64) atomic_uint_fast64_t state; /* generation << 32 | next share */
    _Alignas(64) atomic_int done;            /* shares finished in this job */
    atomic_int sleeping;                     /* workers waiting on cv */
    atomic_int stop;
    npl_pool_fn fn; /* written before the generation is published */
    void *arg;
    npl_pool_host_run host_run; /* hosted pool: jobs go to the host's run, no threads here */
    void *host;
};

static inline uint32_t gen_of(uint64_t s) { return (uint32_t)(s >> 32); }

/* Runs shares of the current job until none is left. Returns the generation seen. */
static uint32_t take_shares(npl_pool *p) {
    for (;;) {
        const uint64_t s = atomic_fetch_add_explicit(&p->state, 1, memory_order_acq_rel);
        const uint32_t i = (uint32_t)s;
        if (i >= (uint32_t)p->n) return gen_of(s);
        /* the claim holds the job open: fn and arg stay valid until done reaches n */
        p->fn(p->arg, (int)i, p->n);
        atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
    }
}

static void *worker_main(void *arg) {
    npl_pool *p = arg;
    uint32_t seen = gen_of(atomic_load(&p->state));
    for (;;) {
        int spins = 0;
        while (gen_of(atomic_load_explicit(&p->state, memory_order_acquire)) == seen) {
            if (atomic_load_explicit(&p->stop, memory_order_relaxed)) return NULL;
            if (++spins < SPIN_ITERS) {
                NPL_PAUSE();
                continue;
            }
            /* sleeping is raised before the last look at the generation, and the
             * caller reads it after publishing one (both seq_cst): one of the
             * two sees the other */
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleeping, 1);
            while (gen_of(atomic_load(&p->state)) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->cv, &p->mu);
            atomic_fetch_sub(&p->sleeping, 1);
            pthread_mutex_unlock(&p->mu);
            spins = 0;
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = take_shares(p);
    }
}

npl_pool *npl_pool_new(int n_threads) {
    if (n_threads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = c > 0 ? (int)c : 1;
    }
    if (n_threads > 256) n_threads = 256;
    npl_pool *p = aligned_alloc(64, (sizeof(npl_pool) + 63) & ~(size_t)63);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->n = n_threads;
    /* generation 0 with every share taken: workers wait for the first job */
    atomic_init(&p->state, (uint64_t)(uint32_t)n_threads);
    atomic_init(&p->done, 0);
    atomic_init(&p->sleeping, 0);
    atomic_init(&p->stop, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads, sizeof(pthread_t));
        if (!p->threads) {
            npl_pool_free(p);
            return NULL;
        }
        for (int i = 1; i < n_threads; i++)
            if (pthread_create(&p->threads[i], NULL, worker_main, p) != 0) {
                p->n = i; /* run with the threads we got */
                atomic_store(&p->state, (uint64_t)(uint32_t)i);
                break;
            }
    }
    return p;
}

npl_pool *npl_pool_new_hosted(int n_threads, npl_pool_host_run run, void *host) {
    if (!run || n_threads < 1) return NULL;
    npl_pool *p = npl_pool_new(1); /* no workers */
    if (!p) return NULL;
    p->n = n_threads > 256 ? 256 : n_threads;
    p->host_run = run;
    p->host = host;
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
    free(p);
}

int npl_pool_size(const npl_pool *p) { return p ? p->n : 1; }

void npl_pool_run(npl_pool *p, npl_pool_fn fn, void *arg) {
    if (!p || p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    if (p->host_run) {
        p->host_run(p->host, p->n, fn, arg);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    const uint32_t gen = gen_of(atomic_load_explicit(&p->state, memory_order_relaxed)) + 1;
    atomic_store(&p->state, (uint64_t)gen << 32); /* seq_cst: pairs with the sleeping count */
    if (atomic_load(&p->sleeping) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    take_shares(p);
    /* every share is claimed; a worker still inside one was probably preempted */
    for (int spins = 0; atomic_load_explicit(&p->done, memory_order_acquire) < p->n; spins++) {
        if (spins < WAIT_SPINS) NPL_PAUSE();
        else sched_yield();
    }
}
