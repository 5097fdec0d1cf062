/* bandwidth: read bandwidth of this machine, for the decode bound in bench/peer.
 *
 *   cc -O2 -march=native -pthread bench/bandwidth.c -o bandwidth
 *   ./bandwidth [MiB=1024] [threads=2] [iterations=10]
 *
 * Allocates MiB of memory, fills it (each thread first-touches its own half),
 * then sums the whole buffer `iterations` times with `threads` threads, each
 * thread reading one contiguous slice.  Prints one line per iteration and a
 * final JSON line:
 *   {"mib": ..., "threads": ..., "iters": ..., "gbs_median": ..., "gbs_max": ..., "gbs_min": ...}
 * GB/s are 1e9 bytes per second of bytes read. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

typedef struct {
    const uint64_t *p;
    size_t n; /* uint64 words */
    int fill;
    uint64_t sum;
} slice;

static void *work(void *arg) {
    slice *s = arg;
    if (s->fill) {
        uint64_t *w = (uint64_t *)s->p;
        for (size_t i = 0; i < s->n; i++) w[i] = i * 0x9E3779B97F4A7C15ull;
        return NULL;
    }
    size_t i = 0;
    uint64_t total = 0;
#ifdef __AVX2__
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (; i + 16 <= s->n; i += 16) {
        a0 = _mm256_add_epi64(a0, _mm256_load_si256((const __m256i *)(s->p + i)));
        a1 = _mm256_add_epi64(a1, _mm256_load_si256((const __m256i *)(s->p + i + 4)));
        a2 = _mm256_add_epi64(a2, _mm256_load_si256((const __m256i *)(s->p + i + 8)));
        a3 = _mm256_add_epi64(a3, _mm256_load_si256((const __m256i *)(s->p + i + 12)));
    }
    a0 = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
    uint64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes, a0);
    total = lanes[0] + lanes[1] + lanes[2] + lanes[3];
#else
    uint64_t t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    for (; i + 4 <= s->n; i += 4) {
        t0 += s->p[i];
        t1 += s->p[i + 1];
        t2 += s->p[i + 2];
        t3 += s->p[i + 3];
    }
    total = t0 + t1 + t2 + t3;
#endif
    for (; i < s->n; i++) total += s->p[i];
    s->sum = total;
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void run(uint64_t *buf, size_t words, int nt, int fill, uint64_t *sum) {
    pthread_t th[256];
    slice sl[256];
    size_t per = (words / (size_t)nt) & ~(size_t)15; /* keep slices 128-byte aligned */
    for (int t = 0; t < nt; t++) {
        sl[t].p = buf + (size_t)t * per;
        sl[t].n = t == nt - 1 ? words - (size_t)t * per : per;
        sl[t].fill = fill;
        sl[t].sum = 0;
        if (pthread_create(&th[t], NULL, work, &sl[t])) {
            fprintf(stderr, "bandwidth: cannot start thread\n");
            exit(1);
        }
    }
    for (int t = 0; t < nt; t++) {
        pthread_join(th[t], NULL);
        *sum += sl[t].sum;
    }
}

int main(int argc, char **argv) {
    long mib = argc > 1 ? atol(argv[1]) : 1024;
    int nt = argc > 2 ? atoi(argv[2]) : 2;
    int iters = argc > 3 ? atoi(argv[3]) : 10;
    if (mib < 1 || nt < 1 || nt > 256 || iters < 1 || iters > 10000) {
        fprintf(stderr, "usage: bandwidth [MiB>=1] [threads 1..256] [iterations 1..10000]\n");
        return 2;
    }
    size_t bytes = (size_t)mib << 20, words = bytes / sizeof(uint64_t);
    uint64_t *buf = aligned_alloc(4096, bytes);
    if (!buf) {
        fprintf(stderr, "bandwidth: cannot allocate %ld MiB\n", mib);
        return 1;
    }
    uint64_t sum = 0;
    run(buf, words, nt, 1, &sum); /* first touch, spread over the threads */
    run(buf, words, nt, 0, &sum); /* warm-up pass, not timed */
    double *gbs = malloc(sizeof(double) * (size_t)iters);
    for (int it = 0; it < iters; it++) {
        double t0 = now();
        run(buf, words, nt, 0, &sum);
        double dt = now() - t0;
        gbs[it] = (double)bytes / dt / 1e9;
        fprintf(stderr, "iter %d: %.3f s  %.2f GB/s\n", it, dt, gbs[it]);
    }
    qsort(gbs, (size_t)iters, sizeof(double), cmp_double);
    double med = iters % 2 ? gbs[iters / 2] : 0.5 * (gbs[iters / 2 - 1] + gbs[iters / 2]);
    printf("{\"mib\": %ld, \"threads\": %d, \"iters\": %d, \"gbs_median\": %.3f, \"gbs_max\": %.3f, "
           "\"gbs_min\": %.3f, \"checksum\": %llu}\n",
           mib, nt, iters, med, gbs[iters - 1], gbs[0], (unsigned long long)(sum & 0xffff));
    free(gbs);
    free(buf);
    return 0;
}
