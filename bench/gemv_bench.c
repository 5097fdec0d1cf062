/* gemv_bench: the decode matmuls of Gemma 3 270M Q4_K_M, alone, per class.
 *
 *   cc -O2 -Isrc -Iinclude bench/gemv_bench.c build/libnpullm.a -lm -lpthread -o /tmp/gemv_bench
 *   /tmp/gemv_bench [hot|token|cold] [REPS=9] [THREADS=2 | CHUNK rows for cold]
 *
 * Weights are random (reference quantizer on random floats, 64 distinct rows
 * repeated), laid out as the model's: 18 layers of q, k, v, o, gate, up, down
 * (down: q6_K in 9 layers, q4_K in the others, as llama.cpp's Q4_K_M mix)
 * and the 262144 x 640 q8_0 output matrix, 250 MB in all.
 *
 *   hot    one thread, one matrix of each class kept in cache, the GEMV kernel
 *          alone (no quantization, no pool): CPU time per call and the weight
 *          bytes per second it can take. What the unpacking costs. Where the
 *          CPU has GFNI, both kernel variants, interleaved; where the family
 *          reads a packed layout (kernels/wpack.h: AVX2 q5_0, q4_K, q6_K), that too.
 *   cold   one thread, the GEMV kernel over 256 MB of rows of one class taken
 *          in chunks of CHUNK rows, as a thread takes them in a matmul: CPU
 *          time, so memory stalls count and preemption does not; and the
 *          packed layout where the family reads one.
 *   token  npl_cpu_matmul over the whole sequence with a pool of THREADS,
 *          activation quantization included, as decode runs it: wall time
 *          per token and per class, GB/s over the bytes read. With one thread
 *          the times are its CPU time (memory stalls count, preemption not).
 * NPL_BENCH_PACK=1 (token): the weights packed where the family reads them
 * so, as a model's open does. Median (min-max) over REPS. NPL_BENCH_ISA=avx2 (generic, avx512, amx) caps
 * the kernel family, e.g. to measure the AVX2 family on a CPU with AVX-512.
 * NPL_BENCH_HUGE=1 puts the weights on 2 MiB pages (MADV_HUGEPAGE), as the
 * model's mmap is where its page cache is on 2 MiB folios; default 4 KiB. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "kernels/dtype.h"
#include "kernels/threadpool.h"
#include "cpu/cpu_backend.h"
#include "kernels/gemv.h"
#include "kernels/vec_dot.h"
#include "kernels/wpack.h"

static double now_s(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* the kernel family to measure: NPL_BENCH_ISA by name, else the best */
static npl_isa bench_isa(void) {
    const char *e = getenv("NPL_BENCH_ISA");
    for (int i = 0; e && i <= NPL_ISA_TOP; i++)
        if (!strcmp(e, npl_isa_name((npl_isa)i))) return (npl_isa)i;
    if (e) fprintf(stderr, "gemv_bench: NPL_BENCH_ISA=%s is not a kernel family name: using the best\n", e);
    return NPL_ISA_AMX;
}

static npl_isa ISA; /* bench_isa() */

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    const char *name;
    npl_type t;
    int k, n;
    int per_token; /* matrices of this class in a token */
} mclass;

static const mclass classes[] = {
    {"q5_0 640x1024 (q)", NPL_TYPE_Q5_0, 640, 1024, 18},    {"q5_0 640x256 (k)", NPL_TYPE_Q5_0, 640, 256, 18},
    {"q8_0 640x256 (v)", NPL_TYPE_Q8_0, 640, 256, 18},      {"q4_K 1024x640 (o)", NPL_TYPE_Q4_K, 1024, 640, 18},
    {"q5_0 640x2048 (gate/up)", NPL_TYPE_Q5_0, 640, 2048, 36}, {"q6_K 2048x640 (down)", NPL_TYPE_Q6_K, 2048, 640, 9},
    {"q4_K 2048x640 (down)", NPL_TYPE_Q4_K, 2048, 640, 9},  {"q8_0 640x262144 (output)", NPL_TYPE_Q8_0, 640, 262144, 1},
};
enum { NC = sizeof classes / sizeof classes[0], PROTO = 64 };

static size_t row_bytes(npl_type t, int k) {
    size_t r = 0;
    npl_row_size(t, k, &r);
    return r;
}

/* bytes for weights, 2 MiB-aligned, on 2 MiB pages with NPL_BENCH_HUGE=1
 * (best effort) and 4 KiB pages otherwise; never freed */
static char *alloc_w(size_t bytes) {
    const size_t align = (size_t)2 << 20;
    const char *e = getenv("NPL_BENCH_HUGE");
    char *p = mmap(NULL, bytes + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "gemv_bench: cannot map %zu bytes\n", bytes);
        exit(1);
    }
    p = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
    madvise(p, bytes, e && atoi(e) ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    return p;
}

/* n rows of type t: PROTO random rows quantized once, repeated */
static void *make_w(npl_type t, int k, int n, unsigned *seed) {
    const size_t rb = row_bytes(t, k);
    char *w = alloc_w(rb * (size_t)n);
    float *f = malloc(sizeof(float) * (size_t)k);
    char *proto = malloc(rb * PROTO);
    for (int r = 0; r < PROTO; r++) {
        for (int i = 0; i < k; i++) f[i] = (float)(rand_r(seed) % 2001 - 1000) * 1e-3f;
        npl_type_get(t)->from_float(f, proto + rb * r, k);
    }
    for (int r = 0; r < n; r++) memcpy(w + rb * r, proto + rb * (r % PROTO), rb);
    free(f), free(proto);
    return w;
}

static float *make_x(int k, unsigned *seed) {
    float *x = malloc(sizeof(float) * (size_t)k);
    for (int i = 0; i < k; i++) x[i] = (float)(rand_r(seed) % 2001 - 1000) * 1e-3f;
    return x;
}

/* hot: with GFNI (where the CPU has it) and without, interleaved rep by rep */
static void hot(int reps) {
    unsigned seed = 7;
    const npl_kernels *kt = npl_kernels_get(ISA);
    const int nv = npl_cpu_has_gfni() ? 2 : 1;
    printf("hot, one thread, GEMV kernel alone: CPU us per matrix, weight GB/s (median, min-max of %d)\n", reps);
    for (int c = 0; c < NC; c++) {
        const mclass *m = &classes[c];
        const int n = m->n > 2048 ? 512 : m->n; /* the output matrix: a slice that fits in L2 (512 KiB on Zen 3) */
        const npl_gemv_kernels *gv[2];
        for (int v = 0; v < nv; v++) gv[v] = npl_gemv_get(ISA, m->t, v == 0);
        if (!gv[0]) {
            printf("%-26s no GEMV on this CPU\n", m->name);
            continue;
        }
        void *w = make_w(m->t, m->k, n, &seed);
        float *x = make_x(m->k, &seed), *y = malloc(sizeof(float) * (size_t)n);
        const npl_type vdt = npl_type_get(m->t)->vec_dot_type;
        char *xq = malloc(row_bytes(vdt, m->k)), *mem = malloc(npl_gemv_x_size(m->k));
        kt->quantize_row[vdt](x, xq, m->k);
        npl_gemv_x gx;
        gv[0]->prep(&gx, mem, xq, m->k); /* the same for both */
        const size_t rb = row_bytes(m->t, m->k);
        /* the packed layout (kernels/wpack.h) where this family reads one: a third variant */
        const npl_gemv_kernels *gp = npl_wpack_wanted(ISA, m->t, m->k, n) ? npl_gemv_get_packed(ISA, m->t) : NULL;
        void *wp = NULL;
        npl_gemv_x gxp;
        char *memp = malloc(npl_gemv_x_size(m->k));
        if (gp) {
            wp = alloc_w(npl_wpack_bytes(m->t, m->k, n));
            npl_wpack_pack(m->t, w, wp, m->k, n);
            gp->prep(&gxp, memp, xq, m->k);
        }
        double *us = malloc(sizeof(double) * (size_t)reps * 3);
        const int inner = (int)(20e6 / ((double)rb * n)) + 1;
        for (int r = 0; r < reps; r++)
            for (int v = 0; v < 3; v++) {
                if ((v == 1 && nv < 2) || (v == 2 && !gp)) continue;
                const double t0 = now_s(CLOCK_THREAD_CPUTIME_ID);
                for (int i = 0; i < inner; i++) {
                    if (v == 2) gp->rows(wp, rb, 0, n, &gxp, 1, y, n);
                    else gv[v]->rows(w, rb, 0, n, &gx, 1, y, n);
                }
                us[v * reps + r] = (now_s(CLOCK_THREAD_CPUTIME_ID) - t0) / inner * 1e6;
            }
        const double bytes = (double)rb * n;
        const int two = nv == 2 && gv[1] != gv[0];
        for (int v = 0; v < 3; v++) {
            if ((v == 1 && !two) || (v == 2 && !gp)) continue;
            double *u = us + v * reps;
            qsort(u, (size_t)reps, sizeof(double), cmp_d);
            printf("%-26s n=%-6d %-9s %8.1f us (%.1f-%.1f)  %6.1f GB/s (%.1f-%.1f)\n", m->name, n,
                   v == 2 ? "packed" : !two ? "" : v ? "no GFNI" : "GFNI", u[reps / 2], u[0], u[reps - 1],
                   bytes / u[reps / 2] * 1e-3, bytes / u[reps - 1] * 1e-3, bytes / u[0] * 1e-3);
        }
        free(x), free(y), free(xq), free(mem), free(memp), free(us);
    }
}

/* one thread, the GEMV kernel over 256 MB of one class's rows taken in
 * chunks of `chunk` rows as the threads take them (cold: each chunk starts
 * on rows not in cache), CPU time per pass */
static void cold(int reps, int chunk) {
    unsigned seed = 5;
    const npl_kernels *kt = npl_kernels_get(ISA);
    printf("cold, one thread, GEMV kernel over 256 MB in chunks of %d rows: CPU GB/s (median, min-max of %d)\n", chunk,
           reps);
    static const int pick[] = {4, 2, 3, 5};
    for (int pi = 0; pi < 4; pi++) {
        const mclass *m = &classes[pick[pi]];
        const npl_gemv_kernels *gv = npl_gemv_get(ISA, m->t, 1);
        if (!gv) continue;
        const size_t rb = row_bytes(m->t, m->k);
        const int n = (int)((256u << 20) / rb) / 16 * 16;
        void *w = make_w(m->t, m->k, n, &seed);
        float *x = make_x(m->k, &seed), *y = malloc(sizeof(float) * (size_t)n);
        const npl_type vdt = npl_type_get(m->t)->vec_dot_type;
        char *xq = malloc(row_bytes(vdt, m->k)), *mem = malloc(npl_gemv_x_size(m->k));
        kt->quantize_row[vdt](x, xq, m->k);
        npl_gemv_x gx;
        gv->prep(&gx, mem, xq, m->k);
        /* and the packed layout (kernels/wpack.h) where this family reads one */
        const npl_gemv_kernels *gp = npl_wpack_wanted(ISA, m->t, m->k, n) ? npl_gemv_get_packed(ISA, m->t) : NULL;
        void *wp = NULL;
        if (gp) {
            wp = alloc_w(npl_wpack_bytes(m->t, m->k, n));
            npl_wpack_pack(m->t, w, wp, m->k, n);
        }
        double *gbs = malloc(sizeof(double) * (size_t)reps);
        for (int v = 0; v < (gp ? 2 : 1); v++) {
            const npl_gemv_kernels *k = v ? gp : gv;
            const void *wv = v ? wp : w;
            k->prep(&gx, mem, xq, m->k);
            for (int r = -1; r < reps; r++) {
                const double t0 = now_s(CLOCK_THREAD_CPUTIME_ID);
                for (int64_t r0 = 0; r0 < n; r0 += chunk)
                    k->rows(wv, rb, r0, r0 + chunk < n ? r0 + chunk : n, &gx, 1, y, n);
                if (r >= 0) gbs[r] = (double)rb * n / (now_s(CLOCK_THREAD_CPUTIME_ID) - t0) * 1e-9;
            }
            qsort(gbs, (size_t)reps, sizeof(double), cmp_d);
            printf("%-10s %-15s %6.2f GB/s (%.2f-%.2f)\n", npl_type_name(m->t), v ? "packed" : "", gbs[reps / 2], gbs[0],
                   gbs[reps - 1]);
        }
        free(x), free(y), free(xq), free(mem), free(gbs);
    }
}

typedef struct {
    int cls;
    npl_tensor w, x, y;
} mm;

static void token(int reps, int nth) {
    unsigned seed = 11;
    npl_cpu_ctx cc;
    npl_backend be;
    npl_cpu_backend_init(&be, &cc, ISA);
    npl_pool *pool = npl_pool_new(nth);
    /* the sequence of one token: per layer q k v o gate up down, then the output */
    enum { LAYERS = 18 };
    mm seq[LAYERS * 7 + 1];
    int ns = 0;
    static const int order[7] = {0, 1, 2, 3, 4, 4, 5};
    size_t scratch_max = 0, total = 0;
    float *xbuf = make_x(2048, &seed), *ybuf = aligned_alloc(64, sizeof(float) * 262144);
    for (int l = 0; l <= LAYERS; l++)
        for (int o = 0; o < (l < LAYERS ? 7 : 1); o++) {
            int c = l < LAYERS ? order[o] : 7;
            if (c == 5 && l % 2) c = 6; /* q4_K down in every other layer */
            const mclass *m = &classes[c];
            mm *s = &seq[ns++];
            s->cls = c;
            s->w = (npl_tensor){m->t, {2, {m->k, m->n, 1, 1}}, make_w(m->t, m->k, m->n, &seed)};
            s->x = (npl_tensor){NPL_TYPE_F32, {2, {m->k, 1, 1, 1}}, xbuf};
            s->y = (npl_tensor){NPL_TYPE_F32, {2, {m->n, 1, 1, 1}}, ybuf};
            const size_t sc = npl_cpu_matmul_scratch(&s->w, &s->x);
            if (sc > scratch_max) scratch_max = sc;
            total += row_bytes(m->t, m->k) * (size_t)m->n;
        }
    /* NPL_BENCH_PACK=1: the weights packed where the family reads them so (kernels/wpack.h), as a model open does */
    npl_wpack_table wt = {0};
    const char *pk = getenv("NPL_BENCH_PACK");
    if (pk && atoi(pk)) {
        for (int i = 0; i < ns; i++)
            if (npl_wpack_wanted(cc.isa, seq[i].w.type, seq[i].w.shape.ne[0], seq[i].w.shape.ne[1]) &&
                npl_wpack_add(&wt, seq[i].w.type, seq[i].w.data, seq[i].w.shape.ne[0], seq[i].w.shape.ne[1], 0))
                exit(1);
        cc.wpack = &wt;
    }
    void *scratch = aligned_alloc(64, (scratch_max + 63) & ~(size_t)63);
    double *tok = calloc((size_t)reps, sizeof(double)), *cls = calloc((size_t)reps * NC, sizeof(double));
    char err[256];
    /* one thread: its CPU time, which a busy machine's preemption does not inflate */
    const clockid_t clk = nth == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
        const double t0 = now_s(clk);
        for (int i = 0; i < ns; i++) {
            const double a = now_s(clk);
            if (npl_cpu_matmul(&cc, pool, &seq[i].w, &seq[i].x, &seq[i].y, scratch, err, sizeof err)) {
                fprintf(stderr, "%s\n", err);
                exit(1);
            }
            if (r >= 0) cls[(size_t)seq[i].cls * reps + r] += now_s(clk) - a;
        }
        if (r >= 0) tok[r] = now_s(clk) - t0;
    }
    printf("token, %d thread%s, %s%s: %.1f MB of weights; %s ms (median, min-max of %d), GB/s at the median\n", nth,
           nth > 1 ? "s" : "", npl_isa_name(cc.isa), wt.n ? " (packed weights)" : "", total * 1e-6, nth > 1 ? "wall" : "CPU", reps);
    for (int c = 0; c < NC; c++) {
        double *v = cls + (size_t)c * reps;
        qsort(v, (size_t)reps, sizeof(double), cmp_d);
        const mclass *m = &classes[c];
        const double bytes = (double)row_bytes(m->t, m->k) * m->n * m->per_token;
        printf("%-26s x%-3d %7.3f ms (%.3f-%.3f)  %6.1f GB/s\n", m->name, m->per_token, v[reps / 2] * 1e3, v[0] * 1e3,
               v[reps - 1] * 1e3, bytes / v[reps / 2] * 1e-9);
    }
    qsort(tok, (size_t)reps, sizeof(double), cmp_d);
    printf("%-31s %7.3f ms (%.3f-%.3f)  %6.1f GB/s  = %.1f tok/s of matmuls\n", "token", tok[reps / 2] * 1e3,
           tok[0] * 1e3, tok[reps - 1] * 1e3, total / tok[reps / 2] * 1e-9, 1 / tok[reps / 2]);
    npl_pool_free(pool);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "token";
    const int reps = argc > 2 ? atoi(argv[2]) : 9, nth = argc > 3 ? atoi(argv[3]) : 2;
    if (reps < 1 || nth < 1) return 2;
    ISA = bench_isa();
    if (!strcmp(mode, "hot")) hot(reps);
    else if (!strcmp(mode, "cold")) cold(reps, nth); /* third argument: rows per chunk */
    else token(reps, nth);
    return 0;
}
