/* panel_walk: how fast one core reads 256 MB from DRAM in the orders a
 * packed GEMV could read two 8-row panels (kernels/wpack.h) per zmm, with
 * no arithmetic besides an xor, so only the access pattern differs.
 *
 *   cc -O2 -mavx512f bench/panel_walk.c -o /tmp/panel_walk
 *   /tmp/panel_walk [PREFETCH_BYTES=1024] [REPS=4]
 *
 * Panels of 3520 bytes (8 rows of Gemma 3 270M's q5_0, k = 640) in blocks
 * of 176 bytes; orders:
 *   linear     the buffer front to back (the reference)
 *   adjacent   panels 2i and 2i + 1 side by side: two streams 3520 bytes
 *              apart (what gemv_avx512_packed.c read before)
 *   halves     panel i with panel i + n/2: two streams far apart (what it
 *              reads now)
 * each with software prefetches PREFETCH_BYTES ahead in each stream (0:
 * none). CPU time (the thread's), median of REPS passes after a first. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BLOCK = 176, BLOCKS = 20, PANEL = BLOCK * BLOCKS };

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* one block of two panels: both 176 bytes read in 32-byte halves of a zmm */
static inline __m512i pair(__m512i acc, const uint8_t *p0, const uint8_t *p1, long pf) {
    if (pf)
        for (int o = 0; o < BLOCK; o += 64) {
            _mm_prefetch((const char *)p0 + pf + o, _MM_HINT_NTA);
            _mm_prefetch((const char *)p1 + pf + o, _MM_HINT_NTA);
        }
    for (int o = 0; o + 32 <= BLOCK; o += 32)
        acc = _mm512_xor_si512(acc, _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(p0 + o))),
                                                       _mm256_loadu_si256((const __m256i *)(p1 + o)), 1));
    return acc;
}

static __m512i walk(int order, const uint8_t *w, size_t n, long pf, __m512i acc) {
    if (order == 0) {
        for (size_t o = 0; o < n; o += 64) {
            if (pf) _mm_prefetch((const char *)w + o + pf, _MM_HINT_NTA);
            acc = _mm512_xor_si512(acc, _mm512_loadu_si512(w + o));
        }
        return acc;
    }
    const size_t np = n / PANEL, h = np / 2;
    for (size_t i = 0; i < h; i++) {
        const uint8_t *p0 = w + (order == 1 ? 2 * i : i) * PANEL, *p1 = w + (order == 1 ? 2 * i + 1 : i + h) * PANEL;
        for (int b = 0; b < BLOCKS; b++) acc = pair(acc, p0 + b * BLOCK, p1 + b * BLOCK, pf);
    }
    return acc;
}

int main(int argc, char **argv) {
    const long pf = argc > 1 ? atol(argv[1]) : 1024;
    const int reps = argc > 2 ? atoi(argv[2]) : 4;
    if (pf < 0 || reps < 1) {
        fprintf(stderr, "panel_walk: PREFETCH_BYTES >= 0 and REPS >= 1\n");
        return 2;
    }
    const size_t n = (256u << 20) / (2 * PANEL) * (2 * PANEL);
    uint8_t *w = aligned_alloc(4096, n);
    double *t = malloc(sizeof(double) * (size_t)reps);
    if (!w || !t) return 1;
    memset(w, 1, n);
    static const char *name[] = {"linear", "adjacent", "halves"};
    __m512i acc = _mm512_setzero_si512();
    printf("one core, %zu MB, prefetch %ld bytes ahead: GB/s (median, min-max of %d)\n", n >> 20, pf, reps);
    for (int order = 0; order < 3; order++) {
        for (int r = -1; r < reps; r++) {
            const double t0 = cpu_s();
            acc = walk(order, w, n, pf, acc);
            if (r >= 0) t[r] = cpu_s() - t0;
        }
        qsort(t, (size_t)reps, sizeof(double), cmp_d);
        printf("%-9s %6.2f (%.2f-%.2f)\n", name[order], n / t[reps / 2] * 1e-9, n / t[reps - 1] * 1e-9, n / t[0] * 1e-9);
    }
    int s[16];
    _mm512_storeu_si512(s, acc);
    return s[0] == 0x12345678; /* keeps the loads */
}
