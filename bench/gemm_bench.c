/* gemm_bench: the prefill GEMM alone, one thread, per weight type.
 *
 *   cc -O2 -Isrc -Iinclude bench/gemm_bench.c build/libnpullm.a -lm -lpthread -o /tmp/gemm_bench
 *   /tmp/gemm_bench [REPS=7] [M=512]
 *
 * Random weights and activations (reference quantizers) with Gemma 3 270M's
 * gate/up shape for the 32-blocks (2048 x 640) and its down shape for the
 * k-quants (640 x 2048); M activation rows packed once, then the best ISA's
 * GEMM over all weight rows in steps of 16, as a thread takes them. Prints
 * the best CPU time of REPS and the multiply-adds per second it means.
 * NPL_BENCH_ISA=avx2 (generic, avx512, amx) caps the kernel family, e.g. to
 * measure the AVX2 family on a CPU with AVX-512; NPL_BENCH_PACK=1 measures
 * the family's packed GEMM (kernels/wpack.h) where it has one. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/dtype.h"
#include "kernels/gemm.h"
#include "kernels/vec_dot.h"
#include "kernels/wpack.h"

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void fill(const npl_type_traits *tr, char *dst, size_t row, int rows, int k, float *f) {
    for (int r = 0; r < rows; r++) {
        for (int i = 0; i < k; i++) f[i] = (float)rand() / RAND_MAX - 0.5f;
        tr->from_float(f, dst + (size_t)r * row, k);
    }
}

int main(int argc, char **argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 7, m = argc > 2 ? atoi(argv[2]) : 512;
    const npl_type types[] = {NPL_TYPE_Q4_0, NPL_TYPE_Q5_0, NPL_TYPE_Q8_0, NPL_TYPE_Q4_K, NPL_TYPE_Q6_K};
    npl_isa isa = npl_cpu_best_isa();
    const char *e = getenv("NPL_BENCH_ISA");
    for (int i = 0; e && i <= NPL_ISA_TOP; i++)
        if (!strcmp(e, npl_isa_name((npl_isa)i)) && i < (int)isa) isa = (npl_isa)i;
    printf("GEMM alone, one thread, %s, %d activation rows: best CPU time of %d\n", npl_isa_name(isa), m, reps);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const npl_type t = types[ti];
        const int kq = t == NPL_TYPE_Q4_K || t == NPL_TYPE_Q6_K, n = kq ? 640 : 2048, k = kq ? 2048 : 640;
        const int pack = getenv("NPL_BENCH_PACK") && atoi(getenv("NPL_BENCH_PACK")) && npl_wpack_wanted(isa, t, k, n);
        const npl_gemm_kernels *g = pack ? npl_gemm_get_packed(isa, t) : npl_gemm_get(isa, t);
        if (!g) {
            printf("%-5s no GEMM on this CPU\n", npl_type_name(t));
            continue;
        }
        const npl_type_traits *tr = npl_type_get(t), *xt = npl_type_get(tr->vec_dot_type);
        size_t wr = 0, xr = 0;
        npl_row_size(t, k, &wr);
        npl_row_size(tr->vec_dot_type, k, &xr);
        float *f = malloc(sizeof(float) * (size_t)k), *y = malloc(sizeof(float) * (size_t)n * (size_t)m);
        char *w = malloc(wr * (size_t)n), *xq = malloc(xr * (size_t)m);
        void *mem = malloc(npl_gemm_x_size(m, k));
        if (!f || !y || !w || !xq || !mem) return 1;
        fill(tr, w, wr, n, k, f);
        fill(xt, xq, xr, m, k, f);
        if (pack) { /* the packed copy in place of the rows (same bytes: wpack.h) */
            char *wp = malloc(npl_wpack_bytes(t, k, n));
            if (!wp) return 1;
            npl_wpack_pack(t, w, wp, k, n);
            free(w);
            w = wp;
        }
        npl_gemm_x xp;
        npl_gemm_x_init(&xp, mem, m, k);
        for (int r = 0; r < m; r++) g->pack(&xp, r, xq + (size_t)r * xr);
        double best = 1e30;
        for (int rep = 0; rep < reps; rep++) {
            const double t0 = cpu_now();
            for (int r0 = 0; r0 < n; r0 += 16) g->rows(w, wr, r0, r0 + 16 < n ? r0 + 16 : n, &xp, y, n);
            const double dt = cpu_now() - t0;
            if (dt < best) best = dt;
        }
        printf("%-5s%s %4d x %4d: %7.2f ms, %5.1f GMAC/s\n", npl_type_name(t), pack ? " packed" : "", n, k, best * 1e3,
               (double)n * k * m / best * 1e-9);
        free(f), free(y), free(w), free(xq), free(mem);
    }
    return 0;
}
