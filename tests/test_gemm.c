/* The prefill GEMM (kernels/gemm.h) for every weight type that has one
 * and every ISA this CPU has, against the vec_dot path on the same quantized
 * inputs (only the f32 summation order differs) and against a
 * double-precision dot of the dequantized rows (plus q8_1's rounded d * sum
 * for q4_1: dot_ref.h); then npl_cpu_matmul with
 * enough rows to take the GEMM, against the generic backend's. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dot_ref.h"
#include "kernels/dtype.h"
#include "cpu/cpu_backend.h"
#include "kernels/gemm.h"
#include "kernels/vec_dot.h"

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}
static float rng_unit(uint64_t *s) { return (float)((rng_next(s) >> 11) * 0x1p-53 * 2.0 - 1.0); }

static const npl_type types[] = {NPL_TYPE_Q4_0, NPL_TYPE_Q4_1, NPL_TYPE_Q5_0, NPL_TYPE_Q8_0, NPL_TYPE_Q4_K, NPL_TYPE_Q6_K};
static const int ms[] = {1, 3, 4, 5, 17, 64};
static const int ns[] = {1, 15, 16, 33};
/* 640 is Gemma 3 270M's width; 96 ends on a single 32-block */
static const int ks[] = {256, 640, 2048, 96};

typedef struct {
    int m, n, k;
    float *w, *x, *wd, *xd;   /* f32 data and dequantized quants */
    void *wq, *xq, *xp_mem;   /* quantized weights / activations, packed activations */
    size_t w_row, x_row;
    float *y_gemm, *y_dot;
} prob;

static void make(prob *p, npl_type t, const npl_kernels *k, int m, int n, int kk, uint64_t *s) {
    const npl_type_traits *tt = npl_type_get(t);
    const npl_type vdt = tt->vec_dot_type;
    p->m = m, p->n = n, p->k = kk;
    npl_row_size(t, kk, &p->w_row);
    npl_row_size(vdt, kk, &p->x_row);
    p->w = malloc(sizeof(float) * (size_t)n * kk);
    p->wd = malloc(sizeof(float) * (size_t)n * kk);
    p->x = malloc(sizeof(float) * (size_t)m * kk);
    p->xd = malloc(sizeof(float) * (size_t)m * kk);
    p->wq = malloc(p->w_row * (size_t)n);
    p->xq = malloc(p->x_row * (size_t)m);
    p->xp_mem = malloc(npl_gemm_x_size(m, kk));
    p->y_gemm = malloc(sizeof(float) * (size_t)n * m);
    p->y_dot = malloc(sizeof(float) * (size_t)n * m);
    /* weights heavier-tailed than activations, some rows with a sign skew */
    for (int i = 0; i < n * kk; i++) p->w[i] = rng_unit(s) * (rng_next(s) % 16 == 0 ? 3.0f : 1.0f) + (i / kk % 3 == 0 ? 0.3f : 0.0f);
    for (int i = 0; i < m * kk; i++) p->x[i] = rng_unit(s) + (i / kk % 2 ? 0.2f : -0.1f);
    for (int r = 0; r < n; r++) {
        tt->from_float(p->w + (size_t)r * kk, (char *)p->wq + r * p->w_row, kk);
        tt->to_float((char *)p->wq + r * p->w_row, p->wd + (size_t)r * kk, kk);
    }
    for (int c = 0; c < m; c++) {
        k->quantize_row[vdt](p->x + (size_t)c * kk, (char *)p->xq + c * p->x_row, kk);
        npl_type_get(vdt)->to_float((char *)p->xq + c * p->x_row, p->xd + (size_t)c * kk, kk);
    }
}

static void drop(prob *p) {
    free(p->w), free(p->wd), free(p->x), free(p->xd), free(p->wq), free(p->xq), free(p->xp_mem);
    free(p->y_gemm), free(p->y_dot);
}

static double worst_vs_dot, worst_vs_ref;

static void check_one(npl_type t, const npl_kernels *k, const npl_gemm_kernels *g, int m, int n, int kk,
                      uint64_t *s) {
    prob p;
    make(&p, t, k, m, n, kk, s);
    npl_gemm_x xp;
    npl_gemm_x_init(&xp, p.xp_mem, m, kk);
    for (int c = 0; c < m; c++) g->pack(&xp, c, (char *)p.xq + c * p.x_row);
    for (int i = 0; i < n * m; i++) p.y_gemm[i] = NAN;
    /* two calls over split row ranges, as threads make them */
    const int split = n > 16 ? 16 : n;
    g->rows(p.wq, p.w_row, 0, split, &xp, p.y_gemm, n);
    if (split < n) g->rows(p.wq, p.w_row, split, n, &xp, p.y_gemm, n);
    int bad = 0;
    for (int c = 0; c < m; c++)
        for (int r = 0; r < n; r++) {
            float v = NAN;
            k->vec_dot[t](kk, &v, (char *)p.wq + r * p.w_row, (char *)p.xq + c * p.x_row);
            double ref = 0, mag = 0;
            for (int i = 0; i < kk; i++) {
                const double e = (double)p.wd[(size_t)r * kk + i] * p.xd[(size_t)c * kk + i];
                ref += e, mag += fabs(e);
            }
            ref += dot_ref_q8_1_s_rounding(t, (char *)p.wq + r * p.w_row, (char *)p.xq + c * p.x_row, kk);
            const double got = p.y_gemm[(size_t)c * n + r];
            /* relative to the value, or (where the sum nearly cancels) to
             * sum |w x|: vec_dot itself is off by up to ~2e-6 of that there */
            const double e_dot = fabs(got - v) / (fabs(v) + 4e-2 * mag + 1e-30), e_ref = fabs(got - ref) / (mag + 1e-30);
            if (e_dot > worst_vs_dot) worst_vs_dot = e_dot;
            if (e_ref > worst_vs_ref) worst_vs_ref = e_ref;
            /* vec_dot: same quantized inputs, only f32 summation order differs;
             * reference: f32 products and sums of up to k terms */
            if (!(e_dot <= 1e-4) || !(e_ref <= 4e-6)) {
                if (bad++ < 3)
                    fprintf(stderr, "%s %s m=%d n=%d k=%d [%d,%d]: gemm %.9g vec_dot %.9g ref %.9g (mag %g)\n",
                            npl_isa_name(k->isa), npl_type_name(t), m, n, kk, c, r, got, v, ref, mag);
            }
        }
    CHECK_EQ_INT(bad, 0);
    drop(&p);
}

/* npl_cpu_matmul on this ISA (GEMM for m >= its threshold) against the
 * generic backend (vec_dot), two threads taking row blocks. */
static void check_matmul(npl_type t, npl_isa isa, npl_pool *pool, int m, int n, int kk, uint64_t *s) {
    npl_cpu_ctx cc, gc;
    npl_backend be;
    npl_cpu_backend_init(&be, &cc, isa);
    npl_cpu_backend_init(&be, &gc, NPL_ISA_GENERIC);
    prob p;
    make(&p, t, gc.k, m, n, kk, s);
    npl_tensor w = {t, {2, {kk, n, 1, 1}}, p.wq}, x = {NPL_TYPE_F32, {2, {kk, m, 1, 1}}, p.x};
    npl_tensor y1 = {NPL_TYPE_F32, {2, {n, m, 1, 1}}, p.y_gemm}, y2 = {NPL_TYPE_F32, {2, {n, m, 1, 1}}, p.y_dot};
    void *scratch = malloc(npl_cpu_matmul_scratch(&w, &x));
    char err[256] = "";
    CHECK_EQ_INT(npl_cpu_matmul(&cc, pool, &w, &x, &y1, scratch, err, sizeof err), 0);
    CHECK_EQ_INT(npl_cpu_matmul(&gc, pool, &w, &x, &y2, scratch, err, sizeof err), 0);
    int bad = 0, differ = 0;
    for (int i = 0; i < n * m; i++) {
        const int c = i / n, r = i % n;
        double mag = 0;
        for (int e = 0; e < kk; e++) mag += fabs((double)p.wd[(size_t)r * kk + e] * p.xd[(size_t)c * kk + e]);
        if (!(fabs(p.y_gemm[i] - p.y_dot[i]) <= 1e-4 * fabs(p.y_dot[i]) + 1e-6 * mag)) bad++;
        differ += memcmp(&p.y_gemm[i], &p.y_dot[i], sizeof(float)) != 0;
    }
    if (bad) fprintf(stderr, "matmul %s %s m=%d n=%d k=%d: %d outputs off\n", npl_isa_name(cc.isa), npl_type_name(t), m, n, kk, bad);
    CHECK_EQ_INT(bad, 0);
#if defined(__x86_64__) || defined(__i386__)
    /* AVX2's q4_0 / q5_0 / q8_0 / q4_1 GEMM takes plain C's steps: the generic
     * bits (q4_1: every x86 family's is AVX2's) */
    if ((cc.isa == NPL_ISA_AVX2 && (t == NPL_TYPE_Q4_0 || t == NPL_TYPE_Q5_0 || t == NPL_TYPE_Q8_0)) || t == NPL_TYPE_Q4_1)
        CHECK_EQ_INT(differ, 0);
#endif
    free(scratch);
    drop(&p);
}

int main(void) {
    uint64_t s = 0x9e3779b97f4a7c15ull;
    npl_pool *pool = npl_pool_new(2);
    const npl_isa best = npl_cpu_best_isa();
    for (int isa = NPL_ISA_GENERIC; isa <= (int)best; isa++) {
        const npl_kernels *k = npl_kernels_get((npl_isa)isa);
        int tested = 0;
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            const npl_type t = types[ti];
            const npl_gemm_kernels *g = npl_gemm_get((npl_isa)isa, t);
#if defined(__x86_64__) || defined(__i386__)
            if (isa >= NPL_ISA_AVX2) CHECK(g != NULL); /* x86 with AVX2 */
#else
            /* aarch64: smmla, no q4_1 GEMM; NEON / dotprod prefill is dot4 */
            CHECK((g != NULL) == (isa >= NPL_ISA_I8MM && t != NPL_TYPE_Q4_1));
#endif
            if (!g) continue;
            worst_vs_dot = worst_vs_ref = 0;
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                if (ks[ki] % npl_type_get(t)->block_size) continue;
                for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
                    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) check_one(t, k, g, ms[mi], ns[ni], ks[ki], &s);
            }
            check_matmul(t, (npl_isa)isa, pool, 64, 40, ks[0], &s);
            check_matmul(t, (npl_isa)isa, pool, 37, 33, t == NPL_TYPE_Q4_K || t == NPL_TYPE_Q6_K ? 512 : 640, &s);
            printf("%-7s %-5s worst |gemm - vec_dot| %.2e relative, |gemm - ref| %.2e of sum |w x|\n",
                   npl_isa_name(k->isa), npl_type_name(t), worst_vs_dot, worst_vs_ref);
            /* the AVX2 GEMM computes vec_dot's arithmetic: decode (vec_dot)
             * and prefill (GEMM) give a row the same bits */
#if defined(__x86_64__) || defined(__i386__)
            /* q4_1: every x86 family's GEMM and vec_dot are AVX2's; the AVX-512
             * family's GEMMs for the types it reads in AVX2's order keep it */
            if (isa == NPL_ISA_AVX2 || t == NPL_TYPE_Q4_1 || (isa == NPL_ISA_AVX512 && npl_avx512_takes_avx2(t)))
                CHECK(worst_vs_dot == 0);
#else
            CHECK(worst_vs_dot == 0); /* the i8mm GEMM: the dotprod vec_dot's arithmetic */
#endif
            tested++;
        }
#if defined(__x86_64__) || defined(__i386__)
        if (isa >= NPL_ISA_AVX2) CHECK(tested > 0);
#endif
    }
    npl_pool_free(pool);
    TEST_MAIN_END();
}
