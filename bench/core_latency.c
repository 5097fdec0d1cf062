/* core_latency: the round trip of one cache line between two CPUs, in ns.
 *
 *   cc -O2 -pthread bench/core_latency.c -o core_latency
 *   core_latency [ITERS=200000]   -> {"round_trip_ns": ..., "cpus": [a, b]}
 *
 * Two threads pinned to the first two CPUs this process may run on pass a
 * counter back and forth. On a VM the figure says where the two vCPUs sit
 * now: on one L3 (AMD EPYC Zen 5 here: 80-160 ns) or on two (~420 ns),
 * which moves the machine's two-thread bandwidth (~50 against ~78 GB/s on
 * that VM) and what a decode step pays per synchronisation. bench/peer
 * records it around each decode run it pairs with a bandwidth bound. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Alignas(128) atomic_long flag;
static long iters = 200000;
static int cpu_b = -1;

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void *peer(void *arg) {
    (void)arg;
    pin(cpu_b);
    for (long i = 0; i < iters; i++) {
        while (atomic_load_explicit(&flag, memory_order_acquire) != 2 * i + 1) {}
        atomic_store_explicit(&flag, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) iters = strtol(argv[1], NULL, 10);
    if (iters <= 0) {
        fprintf(stderr, "core_latency: ITERS must be a positive count, got '%s'\n", argv[1]);
        return 2;
    }
    cpu_set_t s;
    int cpus[2], n = 0;
    if (sched_getaffinity(0, sizeof s, &s)) {
        perror("core_latency: sched_getaffinity");
        return 1;
    }
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &s)) cpus[n++] = c;
    if (n < 2) {
        fprintf(stderr, "core_latency: this process may run on one CPU only\n");
        return 1;
    }
    cpu_b = cpus[1];
    pin(cpus[0]);
    pthread_t t;
    if (pthread_create(&t, NULL, peer, NULL)) {
        fprintf(stderr, "core_latency: cannot start a thread\n");
        return 1;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < iters; i++) {
        atomic_store_explicit(&flag, 2 * i + 1, memory_order_release);
        while (atomic_load_explicit(&flag, memory_order_acquire) != 2 * i + 2) {}
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_join(t, NULL);
    const double ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)iters;
    printf("{\"round_trip_ns\": %.1f, \"cpus\": [%d, %d]}\n", ns, cpus[0], cpus[1]);
    return 0;
}
