/* Persistent thread pool (see threadpool.h).
 *
 * A job is n shares. Shares are claimed from one atomic word holding the
 * job's generation (high 32 bits) and the next share (low 32 bits), so a
 * claim names both the job and the share in one step. The caller claims
 * shares like any worker, and waits only for shares that were claimed: a
 * worker the OS has not scheduled yet simply finds the job used up later,
 * instead of holding the caller until it runs. On a machine shared with
 * other processes that wait was most of the cost of a decode step.
 *
 * Between jobs a worker also prefetches the ranges npl_pool_prefetch
 * posted, a batch of lines at a time, looking at the job word between
 * batches. The ranges sit behind a sequence count (odd while the caller
 * rewrites them): a worker copies them and keeps the copy only if the count
 * did not move meanwhile. */
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
    PF_BATCH = 16,     /* lines a worker prefetches between looks at the job word */
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
    _Alignas(64) atomic_uint pf_seq; /* odd while npl_pool_prefetch writes the ranges */
    atomic_int pf_n;
    _Atomic(const char *) pf_ptr[NPL_POOL_PREFETCH_MAX];
    atomic_size_t pf_len[NPL_POOL_PREFETCH_MAX];
    atomic_int pf_worker[NPL_POOL_PREFETCH_MAX];
};

static inline uint32_t gen_of(uint64_t s) { return (uint32_t)(s >> 32); }

void npl_pool_prefetch(npl_pool *p, const npl_pool_range *r, int n) {
    if (!p || p->n < 2 || p->host_run) return;
    if (n > NPL_POOL_PREFETCH_MAX) n = NPL_POOL_PREFETCH_MAX;
    atomic_fetch_add_explicit(&p->pf_seq, 1, memory_order_acq_rel);
    for (int i = 0; i < n; i++) {
        atomic_store_explicit(&p->pf_ptr[i], (const char *)r[i].p, memory_order_relaxed);
        atomic_store_explicit(&p->pf_len[i], r[i].bytes, memory_order_relaxed);
        atomic_store_explicit(&p->pf_worker[i], 1 + (r[i].worker - 1 + p->n - 1) % (p->n - 1), memory_order_relaxed);
    }
    atomic_store_explicit(&p->pf_n, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->pf_seq, 1, memory_order_release);
}

/* A worker's share of the posted ranges and how far it got. */
typedef struct {
    unsigned seq;
    int n, i;
    size_t off;
    const char *ptr[NPL_POOL_PREFETCH_MAX];
    size_t len[NPL_POOL_PREFETCH_MAX];
} pf_state;

/* Takes up the ranges posted since the worker last looked; 0 when they
 * were being rewritten (look again later). */
static int pf_reload(npl_pool *p, int w, pf_state *st, unsigned seq) {
    const int n = atomic_load_explicit(&p->pf_n, memory_order_relaxed);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (atomic_load_explicit(&p->pf_worker[i], memory_order_relaxed) == w) {
            st->ptr[k] = atomic_load_explicit(&p->pf_ptr[i], memory_order_relaxed);
            st->len[k++] = atomic_load_explicit(&p->pf_len[i], memory_order_relaxed);
        }
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&p->pf_seq, memory_order_relaxed) != seq) return 0;
    st->seq = seq, st->n = k, st->i = 0, st->off = 0;
    return 1;
}

/* One batch of the worker's ranges; 0 when it has nothing (left) to read. */
static int pf_step(npl_pool *p, int w, pf_state *st) {
    const unsigned seq = atomic_load_explicit(&p->pf_seq, memory_order_acquire);
    if (seq != st->seq && (seq & 1 || !pf_reload(p, w, st, seq))) return 1; /* being rewritten: look again */
    while (st->i < st->n && st->off >= st->len[st->i]) st->i++, st->off = 0;
    if (st->i >= st->n) return 0;
    const char *b = st->ptr[st->i];
    const size_t end = st->off + 64 * PF_BATCH < st->len[st->i] ? st->off + 64 * PF_BATCH : st->len[st->i];
    for (; st->off < end; st->off += 64) __builtin_prefetch(b + st->off, 0, 3);
    return 1;
}

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

typedef struct {
    npl_pool *p;
    int w; /* 1 .. n-1 */
} worker_arg;

static void *worker_main(void *arg) {
    npl_pool *p = ((worker_arg *)arg)->p;
    const int w = ((worker_arg *)arg)->w;
    free(arg);
    uint32_t seen = gen_of(atomic_load(&p->state));
    pf_state pf = {.seq = 0};
    for (;;) {
        int spins = 0;
        while (gen_of(atomic_load_explicit(&p->state, memory_order_acquire)) == seen) {
            if (atomic_load_explicit(&p->stop, memory_order_relaxed)) return NULL;
            if (pf_step(p, w, &pf)) {
                spins = 0; /* prefetching: a job is near */
                continue;
            }
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
    atomic_init(&p->pf_seq, 0);
    atomic_init(&p->pf_n, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads, sizeof(pthread_t));
        if (!p->threads) {
            npl_pool_free(p);
            return NULL;
        }
        for (int i = 1; i < n_threads; i++) {
            worker_arg *wa = malloc(sizeof *wa);
            if (wa) *wa = (worker_arg){p, i};
            if (!wa || pthread_create(&p->threads[i], NULL, worker_main, wa) != 0) {
                free(wa);
                p->n = i; /* run with the threads we got */
                atomic_store(&p->state, (uint64_t)(uint32_t)i);
                break;
            }
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
