/* bandwidth: best read bandwidth this machine gives, for the decode bound in bench/peer.
 *
 *   cc -O2 -march=native -pthread bench/bandwidth.c -o bandwidth
 *   ./bandwidth [MiB=1024] [threads=2] [iterations=10]
 *
 * The decode bound should be what a well-written reader can get, so this
 * tries several readers and reports the fastest:
 *   - loads as wide as the compiler allows (AVX-512, AVX2 or 64-bit), eight
 *     independent accumulators so no add chain limits the loads;
 *   - software prefetch 0, 512 or 2048 bytes ahead (helps some VMs);
 *   - one stream per thread, or 4: the thread's range in 4 parts read side
 *     by side, a line of each in turn, as the decode GEMV reads 4 row
 *     streams (on Zen 3 one core gets more from 4 streams than from 1);
 *   - each thread reading one contiguous half, or 64 KiB chunks interleaved;
 *   - threads pinned to one CPU each, or left to the scheduler;
 *   - on 4 KiB pages, or on 2 MiB pages (a second buffer with MADV_HUGEPAGE;
 *     the model's mmap is on 2 MiB pages where its page cache is, see
 *     README "Huge pages"): the hardware prefetcher stops at a page's end
 *     and a 4 KiB page costs a TLB miss every 64 lines.
 * Each buffer is allocated once, every page is written by the thread that
 * reads it (first touch) and read once untimed before timing. Threads are
 * started once and meet at a barrier, so thread creation is not timed.
 * Variants run round-robin (iteration i runs every variant once), so load
 * from other processes falls on all of them alike. stderr gets one line per
 * variant (median, min, max); stdout one JSON line for the best median:
 *   {"mib": ..., "threads": ..., "iters": ..., "gbs_median": ..., "gbs_max": ..., "gbs_min": ...,
 *    "variant": "...", "gbs_median_4k": ..., "gbs_median_2m": ..., "huge_mib": ...}
 * (the best median on each page size; huge_mib: MiB of the second buffer
 * the kernel put on huge pages, from /proc/self/smaps).
 * GB/s are 1e9 bytes per second of bytes read. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/mman.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

enum { CHUNK = 64 << 10, MAX_T = 256, N_PF = 3 };
static const int pf_dist[N_PF] = {0, 512, 2048};

typedef struct {
    int pf;          /* index into pf_dist */
    int interleave;  /* 64 KiB chunks round-robin instead of halves */
    int pin;
    int huge;        /* read the 2 MiB-page buffer */
    int streams4;    /* 4 streams per thread */
    char name[96];
    double *gbs;
} variant;

typedef struct {
    int t;
    uint64_t sum;
} worker;

static struct {
    char *bufs[2]; /* 4 KiB pages, 2 MiB pages */
    size_t bytes;
    int nt, ncpu;
    const variant *v; /* what the next round runs; NULL: fill; stop when quit */
    int fill, quit;
    pthread_barrier_t start, done;
    worker w[MAX_T];
} g;

/* Sum of [p, p + n) as 64-bit lanes; n a multiple of 512. */
static uint64_t read_range(const char *p, size_t n, int pf) {
#if defined(__AVX512F__)
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i < n; i += 512) {
        const char *q = p + i;
        if (pf) {
            _mm_prefetch(q + pf, _MM_HINT_T0);
            _mm_prefetch(q + pf + 64, _MM_HINT_T0);
            _mm_prefetch(q + pf + 128, _MM_HINT_T0);
            _mm_prefetch(q + pf + 192, _MM_HINT_T0);
            _mm_prefetch(q + pf + 256, _MM_HINT_T0);
            _mm_prefetch(q + pf + 320, _MM_HINT_T0);
            _mm_prefetch(q + pf + 384, _MM_HINT_T0);
            _mm_prefetch(q + pf + 448, _MM_HINT_T0);
        }
        a0 = _mm512_add_epi64(a0, _mm512_load_si512(q));
        a1 = _mm512_add_epi64(a1, _mm512_load_si512(q + 64));
        a2 = _mm512_add_epi64(a2, _mm512_load_si512(q + 128));
        a3 = _mm512_add_epi64(a3, _mm512_load_si512(q + 192));
        a4 = _mm512_add_epi64(a4, _mm512_load_si512(q + 256));
        a5 = _mm512_add_epi64(a5, _mm512_load_si512(q + 320));
        a6 = _mm512_add_epi64(a6, _mm512_load_si512(q + 384));
        a7 = _mm512_add_epi64(a7, _mm512_load_si512(q + 448));
    }
    a0 = _mm512_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)),
                          _mm512_add_epi64(_mm512_add_epi64(a4, a5), _mm512_add_epi64(a6, a7)));
    return (uint64_t)_mm512_reduce_add_epi64(a0);
#elif defined(__AVX2__)
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i < n; i += 256) {
        const char *q = p + i;
        if (pf) {
            _mm_prefetch(q + pf, _MM_HINT_T0);
            _mm_prefetch(q + pf + 64, _MM_HINT_T0);
            _mm_prefetch(q + pf + 128, _MM_HINT_T0);
            _mm_prefetch(q + pf + 192, _MM_HINT_T0);
        }
        a0 = _mm256_add_epi64(a0, _mm256_load_si256((const __m256i *)q));
        a1 = _mm256_add_epi64(a1, _mm256_load_si256((const __m256i *)(q + 32)));
        a2 = _mm256_add_epi64(a2, _mm256_load_si256((const __m256i *)(q + 64)));
        a3 = _mm256_add_epi64(a3, _mm256_load_si256((const __m256i *)(q + 96)));
        a4 = _mm256_add_epi64(a4, _mm256_load_si256((const __m256i *)(q + 128)));
        a5 = _mm256_add_epi64(a5, _mm256_load_si256((const __m256i *)(q + 160)));
        a6 = _mm256_add_epi64(a6, _mm256_load_si256((const __m256i *)(q + 192)));
        a7 = _mm256_add_epi64(a7, _mm256_load_si256((const __m256i *)(q + 224)));
    }
    a0 = _mm256_add_epi64(_mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)),
                          _mm256_add_epi64(_mm256_add_epi64(a4, a5), _mm256_add_epi64(a6, a7)));
    uint64_t l[4];
    _mm256_storeu_si256((__m256i *)l, a0);
    return l[0] + l[1] + l[2] + l[3];
#else
    const uint64_t *w = (const uint64_t *)p;
    uint64_t t[8] = {0};
    for (size_t i = 0; i < n / 8; i += 8) {
        if (pf) __builtin_prefetch((const char *)(w + i) + pf);
        for (int k = 0; k < 8; k++) t[k] += w[i + k];
    }
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
#endif
}

/* Sum of [p, p + n) read as 4 streams (its quarters), a line of each in
 * turn; n a multiple of 256. */
static uint64_t read_range4(const char *p, size_t n, int pf) {
    const size_t q = n / 4;
#if defined(__AVX2__)
    __m256i a[8];
    for (int k = 0; k < 8; k++) a[k] = _mm256_setzero_si256();
    for (size_t i = 0; i < q; i += 64)
        for (int k = 0; k < 4; k++) {
            const char *r = p + (size_t)k * q + i;
            if (pf) _mm_prefetch(r + pf, _MM_HINT_T0);
            a[2 * k] = _mm256_add_epi64(a[2 * k], _mm256_load_si256((const __m256i *)r));
            a[2 * k + 1] = _mm256_add_epi64(a[2 * k + 1], _mm256_load_si256((const __m256i *)(r + 32)));
        }
    for (int k = 1; k < 8; k++) a[0] = _mm256_add_epi64(a[0], a[k]);
    uint64_t l[4];
    _mm256_storeu_si256((__m256i *)l, a[0]);
    return l[0] + l[1] + l[2] + l[3];
#else
    uint64_t t[8] = {0};
    for (size_t i = 0; i < q; i += 64)
        for (int k = 0; k < 4; k++) {
            const uint64_t *w = (const uint64_t *)(p + (size_t)k * q + i);
            if (pf) __builtin_prefetch((const char *)w + pf);
            t[2 * k] += w[0] + w[2] + w[4] + w[6];
            t[2 * k + 1] += w[1] + w[3] + w[5] + w[7];
        }
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
#endif
}

static void fill_range(char *p, size_t n) {
    uint64_t *w = (uint64_t *)p;
    for (size_t i = 0; i < n / 8; i++) w[i] = i * 0x9E3779B97F4A7C15ull;
}

/* The byte ranges thread t reads: one half, or every nt-th chunk. */
static void run_share(int t, char *buf, int interleave, int s4, int fill, int pf, uint64_t *sum) {
    uint64_t (*const rd)(const char *, size_t, int) = s4 ? read_range4 : read_range;
    const size_t nchunks = g.bytes / CHUNK;
    if (interleave) {
        for (size_t c = (size_t)t; c < nchunks; c += (size_t)g.nt) {
            char *p = buf + c * CHUNK;
            if (fill) fill_range(p, CHUNK);
            else *sum += rd(p, CHUNK, pf);
        }
        return;
    }
    const size_t c0 = nchunks * (size_t)t / (size_t)g.nt, c1 = nchunks * (size_t)(t + 1) / (size_t)g.nt;
    char *p = buf + c0 * CHUNK;
    if (fill) fill_range(p, (c1 - c0) * CHUNK);
    else *sum += rd(p, (c1 - c0) * CHUNK, pf);
}

static void set_pin(int t, int pin) {
    cpu_set_t s;
    CPU_ZERO(&s);
    if (pin) CPU_SET(t % g.ncpu, &s);
    else
        for (int c = 0; c < g.ncpu && c < CPU_SETSIZE; c++) CPU_SET(c, &s);
    sched_setaffinity(0, sizeof s, &s); /* best effort: a refused pin just measures unpinned */
}

static void round_body(int t) {
    worker *w = &g.w[t];
    const variant *v = g.v;
    if (g.fill) {
        for (int b = 0; b < 2; b++) {
            run_share(t, g.bufs[b], 0, 0, 1, 0, &w->sum);
            run_share(t, g.bufs[b], 1, 0, 1, 0, &w->sum);
        }
        return;
    }
    run_share(t, g.bufs[v->huge], v->interleave, v->streams4, 0, pf_dist[v->pf], &w->sum);
}

static void *worker_main(void *arg) {
    const int t = (int)(intptr_t)arg;
    int pinned = -1;
    for (;;) {
        pthread_barrier_wait(&g.start);
        if (g.quit) return NULL;
        const int want = g.v ? g.v->pin : 0;
        if (want != pinned) set_pin(t, pinned = want);
        pthread_barrier_wait(&g.start); /* every thread placed before the clock starts */
        round_body(t);
        pthread_barrier_wait(&g.done);
    }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One round on every thread; thread 0 is the caller. Returns seconds from
 * the moment all threads are placed to the moment the last one finishes. */
static double round_all(const variant *v, int fill) {
    static int pinned0 = -1;
    g.v = v;
    g.fill = fill;
    pthread_barrier_wait(&g.start);
    const int want = v ? v->pin : 0;
    if (want != pinned0) set_pin(0, pinned0 = want);
    pthread_barrier_wait(&g.start);
    const double t0 = now();
    round_body(0);
    pthread_barrier_wait(&g.done);
    return now() - t0;
}

/* bytes of anonymous memory on 4 KiB pages (huge 0) or 2 MiB pages (huge 1,
 * MADV_HUGEPAGE, 2 MiB-aligned; the kernel may still give fewer), or NULL */
static char *alloc_pages(size_t bytes, int huge) {
    const size_t align = (size_t)2 << 20;
    char *p = mmap(NULL, bytes + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    char *a = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
    madvise(a, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE); /* best effort */
    return a;
}

/* AnonHugePages (KiB) of the mapping holding p, from /proc/self/smaps; -1 if unknown */
static long anon_huge_kib(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int in = 0;
    long kib = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (in && sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
            break;
    }
    fclose(f);
    return kib;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
    long mib = argc > 1 ? atol(argv[1]) : 1024;
    int nt = argc > 2 ? atoi(argv[2]) : 2;
    int iters = argc > 3 ? atoi(argv[3]) : 10;
    if (mib < 1 || nt < 1 || nt > MAX_T || iters < 1 || iters > 10000) {
        fprintf(stderr, "usage: bandwidth [MiB>=1] [threads 1..%d] [iterations 1..10000]\n", MAX_T);
        return 2;
    }
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    g.ncpu = nc > 0 ? (int)nc : 1;
    g.nt = nt;
    g.bytes = ((size_t)mib << 20) / CHUNK * CHUNK;
    if (g.bytes < (size_t)CHUNK * (size_t)nt) g.bytes = (size_t)CHUNK * (size_t)nt;
    for (int b = 0; b < 2; b++)
        if (!(g.bufs[b] = alloc_pages(g.bytes, b))) {
            fprintf(stderr, "bandwidth: cannot allocate %ld MiB\n", mib);
            return 1;
        }
    enum { NV = N_PF * 2 * 2 * 2 * 2 };
    variant vs[NV];
    int nv = 0;
    for (int huge = 0; huge < 2; huge++)
    for (int s4 = 0; s4 < 2; s4++)
    for (int pin = 0; pin < 2; pin++)
        for (int il = 0; il < 2; il++)
            for (int pf = 0; pf < N_PF; pf++) {
                variant *v = &vs[nv++];
                v->pf = pf, v->interleave = il, v->pin = pin, v->huge = huge, v->streams4 = s4;
                snprintf(v->name, sizeof v->name, "%s, %s, %s, %s, prefetch %d, %s", huge ? "2M" : "4K",
                         s4 ? "4 streams" : "1 stream",
#if defined(__AVX512F__)
                         "avx512 x8",
#elif defined(__AVX2__)
                         "avx2 x8",
#else
                         "scalar x8",
#endif
                         il ? "64 KiB chunks interleaved" : "contiguous halves", pf_dist[pf],
                         pin ? "pinned" : "unpinned");
                v->gbs = malloc(sizeof(double) * (size_t)iters);
                if (!v->gbs) return 1;
            }
    pthread_barrier_init(&g.start, NULL, (unsigned)nt);
    pthread_barrier_init(&g.done, NULL, (unsigned)nt);
    pthread_t th[MAX_T];
    for (int t = 1; t < nt; t++)
        if (pthread_create(&th[t], NULL, worker_main, (void *)(intptr_t)t)) {
            fprintf(stderr, "bandwidth: cannot start thread\n");
            return 1;
        }
    /* first touch by the readers of both layouts, then one untimed pass of each variant */
    round_all(NULL, 1);
    for (int i = 0; i < nv; i++) round_all(&vs[i], 0);
    for (int it = 0; it < iters; it++)
        for (int i = 0; i < nv; i++) vs[i].gbs[it] = (double)g.bytes / round_all(&vs[i], 0) / 1e9;
    g.quit = 1;
    pthread_barrier_wait(&g.start);
    for (int t = 1; t < nt; t++) pthread_join(th[t], NULL);

    int best = 0;
    double best_med = 0, page_med[2] = {0, 0};
    for (int i = 0; i < nv; i++) {
        const double med = median(vs[i].gbs, iters);
        fprintf(stderr, "%-76s median %6.2f GB/s  min %6.2f  max %6.2f\n", vs[i].name, med, vs[i].gbs[0],
                vs[i].gbs[iters - 1]);
        if (med > best_med) best_med = med, best = i;
        if (med > page_med[vs[i].huge]) page_med[vs[i].huge] = med;
    }
    const long huge_kib = anon_huge_kib(g.bufs[1]);
    if (huge_kib * 1024 < (long)(g.bytes / 2))
        fprintf(stderr, "bandwidth: only %ld of %zu MiB on huge pages (THP off? /sys/kernel/mm/transparent_hugepage)\n",
                huge_kib >> 10, g.bytes >> 20);
    uint64_t sum = 0;
    for (int t = 0; t < nt; t++) sum += g.w[t].sum;
    const variant *b = &vs[best];
    printf("{\"mib\": %ld, \"threads\": %d, \"iters\": %d, \"gbs_median\": %.3f, \"gbs_max\": %.3f, "
           "\"gbs_min\": %.3f, \"variant\": \"%s\", \"gbs_median_4k\": %.3f, \"gbs_median_2m\": %.3f, "
           "\"huge_mib\": %ld, \"checksum\": %llu}\n",
           mib, nt, iters, best_med, b->gbs[iters - 1], b->gbs[0], b->name, page_med[0], page_med[1], huge_kib >> 10,
           (unsigned long long)(sum & 0xffff));
    for (int i = 0; i < nv; i++) free(vs[i].gbs);
    return 0;
}
