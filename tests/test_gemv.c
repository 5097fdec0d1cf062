/* The GEMV (kernels/gemv.h) for every weight type that has one, with 1
 * to 15 activation rows: against a double-precision dot of the dequantized
 * rows, and, on AVX-512 and AMX, bit for bit against that ISA's GEMM's
 * result for the same activation rows inside a batch of 17 (what makes
 * chunked prefill equal unchunked); the AVX2 and aarch64 GEMVs bit for bit
 * against their vec_dot (which their GEMMs equal). Then npl_cpu_matmul with few rows on
 * every ISA against the reference. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dot_ref.h"
#include "kernels/dtype.h"
#include "cpu/cpu_backend.h"
#include "kernels/gemm.h"
#include "kernels/gemv.h"
#include "kernels/vec_dot.h"

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}
static float rng_unit(uint64_t *s) { return (float)((rng_next(s) >> 11) * 0x1p-53 * 2.0 - 1.0); }

static const npl_type types[] = {NPL_TYPE_Q4_0, NPL_TYPE_Q4_1, NPL_TYPE_Q5_0, NPL_TYPE_Q8_0, NPL_TYPE_Q4_K, NPL_TYPE_Q6_K};
static const int ns[] = {1, 15, 16, 17, 40};
/* 640 is Gemma 3 270M's width; 96 and 160 end on a single 32-block */
static const int ks[] = {256, 640, 2048, 96, 160};
static const int ms[] = {1, 2, 5, 15};
enum { BATCH = 17 }; /* rows in the AMX batch; the GEMV's rows are the last m */

typedef struct {
    int n, k;
    float *x, *wd, *xd; /* activations; dequantized weights and activations */
    void *wq, *xq;      /* quantized weights / BATCH activation rows */
    size_t w_row, x_row;
} prob;

static void make(prob *p, npl_type t, const npl_kernels *kt, int n, int k, uint64_t *s) {
    const npl_type_traits *tt = npl_type_get(t);
    const npl_type vdt = tt->vec_dot_type;
    p->n = n, p->k = k;
    npl_row_size(t, k, &p->w_row);
    npl_row_size(vdt, k, &p->x_row);
    float *w = malloc(sizeof(float) * (size_t)n * k);
    p->wd = malloc(sizeof(float) * (size_t)n * k);
    p->x = malloc(sizeof(float) * (size_t)BATCH * k);
    p->xd = malloc(sizeof(float) * (size_t)BATCH * k);
    p->wq = malloc(p->w_row * (size_t)n);
    p->xq = malloc(p->x_row * BATCH);
    /* heavy-tailed weights, rows with a sign skew, activations with an offset */
    for (int i = 0; i < n * k; i++) w[i] = rng_unit(s) * (rng_next(s) % 16 == 0 ? 3.0f : 1.0f) + (i / k % 3 == 0 ? 0.3f : 0.0f);
    for (int i = 0; i < BATCH * k; i++) p->x[i] = rng_unit(s) + (i / k % 2 ? 0.2f : -0.1f);
#if defined(__aarch64__)
    /* scales the aarch64 GEMV's integer scale product leaves to its float
     * path: zero weight blocks, tiny ones (a subnormal f16 scale), a zero
     * activation block */
    for (int r = 0; r < n; r++)
        for (int i = 32; i < 96; i++) w[(size_t)r * k + i] *= r % 5 == 2 && i < 64 ? 0.0f : r % 5 == 3 && i >= 64 ? 3e-4f : 1.0f;
    for (int c = 1; c < BATCH; c += 4) memset(p->x + (size_t)c * k, 0, 32 * sizeof(float));
#endif
    for (int r = 0; r < n; r++) {
        tt->from_float(w + (size_t)r * k, (char *)p->wq + r * p->w_row, k);
        tt->to_float((char *)p->wq + r * p->w_row, p->wd + (size_t)r * k, k);
    }
    for (int c = 0; c < BATCH; c++) {
        kt->quantize_row[vdt](p->x + (size_t)c * k, (char *)p->xq + c * p->x_row, k);
        npl_type_get(vdt)->to_float((char *)p->xq + c * p->x_row, p->xd + (size_t)c * k, k);
    }
    free(w);
}

static void drop(prob *p) { free(p->x), free(p->wd), free(p->xd), free(p->wq), free(p->xq); }

static double worst;
#if defined(__aarch64__)
#define NPL_GEMV_SAME(isa) ", GEMV == vec_dot bit for bit"
#else
#define NPL_GEMV_SAME(isa) ((isa) == NPL_ISA_AVX2 ? ", GEMV == vec_dot bit for bit" \
                            : (isa) >= NPL_ISA_AMX ? ", GEMV == AMX GEMM bit for bit" : ", GEMV == AVX-512 GEMM bit for bit")
#endif

/* y against the double dot of the dequantized row and activation: f32
 * products and sums of up to k terms, relative to sum |w x| */
static int check_ref(const prob *p, const float *y, int c, const char *what, npl_type t) {
    int bad = 0;
    for (int r = 0; r < p->n; r++) {
        double ref = 0, mag = 0;
        for (int i = 0; i < p->k; i++) {
            const double e = (double)p->wd[(size_t)r * p->k + i] * p->xd[(size_t)c * p->k + i];
            ref += e, mag += fabs(e);
        }
        ref += dot_ref_q8_1_s_rounding(t, (const char *)p->wq + r * p->w_row, (const char *)p->xq + c * p->x_row, p->k);
        const double err = fabs(y[r] - ref) / (mag + 1e-30);
        if (err > worst) worst = err;
        if (!(err <= 4e-6) && bad++ < 3)
            fprintf(stderr, "%s %s n=%d k=%d [%d,%d]: %.9g, reference %.9g (sum |w x| %g)\n", what, npl_type_name(t),
                    p->n, p->k, c, r, y[r], ref, mag);
    }
    return bad;
}

static void check_kernel(npl_type t, const npl_kernels *kt, const npl_gemv_kernels *gv, int m, int n, int k,
                         uint64_t *s) {
    prob p;
    make(&p, t, kt, n, k, s);
    const int c0 = BATCH - m;
    char *mem = malloc(npl_gemv_x_size(k) * (size_t)m);
    float *y = malloc(sizeof(float) * (size_t)n * m);
    npl_gemv_x gx[16];
    for (int c = 0; c < m; c++) gv->prep(&gx[c], mem + npl_gemv_x_size(k) * c, (char *)p.xq + (c0 + c) * p.x_row, k);
    for (int i = 0; i < n * m; i++) y[i] = NAN;
    /* split row ranges, as threads take them, one not starting on a multiple of 16 */
    const int a = n > 16 ? 16 : n, b = n > 21 ? 21 : n;
    gv->rows(p.wq, p.w_row, 0, a, gx, m, y, n);
    if (a < b) gv->rows(p.wq, p.w_row, a, b, gx, m, y, n);
    if (b < n) gv->rows(p.wq, p.w_row, b, n, gx, m, y, n);
    for (int c = 0; c < m; c++) CHECK_EQ_INT(check_ref(&p, y + (size_t)c * n, c0 + c, "gemv", t), 0);
    /* aarch64's and AVX2's GEMV are their vec_dot's arithmetic: the same bits */
#if defined(__aarch64__)
    const int same_as_dot = 1, x86_wide = 0;
#else
    /* q4_1: AVX2's GEMV and vec_dot at every x86 ISA */
    const int same_as_dot = kt->isa == NPL_ISA_AVX2 || t == NPL_TYPE_Q4_1, x86_wide = kt->isa >= NPL_ISA_AVX512;
#endif
    /* and AVX2's q4_0 / q5_0 / q8_0 / q4_1 take plain C's steps: the generic bits */
#if defined(__x86_64__) || defined(__i386__)
    const int same_as_generic = (kt->isa == NPL_ISA_AVX2 && (t == NPL_TYPE_Q4_0 || t == NPL_TYPE_Q5_0 || t == NPL_TYPE_Q8_0)) ||
                                t == NPL_TYPE_Q4_1;
#else
    const int same_as_generic = 0;
#endif
    const npl_kernels *gen = npl_kernels_get(NPL_ISA_GENERIC);
    if (same_as_dot || same_as_generic) {
        int same = 1, same_gen = 1;
        for (int c = 0; c < m; c++)
            for (int r = 0; r < n; r++) {
                float one = NAN, g = NAN;
                kt->vec_dot[t](k, &one, (char *)p.wq + r * p.w_row, (char *)p.xq + (c0 + c) * p.x_row);
                gen->vec_dot[t](k, &g, (char *)p.wq + r * p.w_row, (char *)p.xq + (c0 + c) * p.x_row);
                same &= !memcmp(&one, &y[(size_t)c * n + r], sizeof one);
                same_gen &= !memcmp(&g, &y[(size_t)c * n + r], sizeof g);
            }
        if (same_as_dot) CHECK(same);
        if (same_as_generic) CHECK(same_gen);
    }

    /* the AVX-512 and AMX GEMVs keep their family's GEMM order: the GEMM
     * that prefill runs at this ISA (AMX where the CPU has it) */
    const npl_gemm_kernels *amx = x86_wide ? npl_gemm_get(kt->isa, t) : NULL;
    if (amx) {
        void *xp_mem = malloc(npl_gemm_x_size(BATCH, k));
        float *yb = malloc(sizeof(float) * (size_t)n * BATCH);
        npl_gemm_x xp;
        npl_gemm_x_init(&xp, xp_mem, BATCH, k);
        for (int c = 0; c < BATCH; c++) amx->pack(&xp, c, (char *)p.xq + c * p.x_row);
        amx->rows(p.wq, p.w_row, 0, n, &xp, yb, n);
        int diff = 0;
        for (int i = 0; i < n * m; i++)
            if (memcmp(&y[i], &yb[(size_t)c0 * n + i], sizeof(float)) && diff++ < 3)
                fprintf(stderr, "gemv %s %s m=%d n=%d k=%d [%d,%d]: %.9g, GEMM %.9g\n", npl_isa_name(kt->isa),
                        npl_type_name(t), m, n, k,
                        c0 + i / n, i % n, y[i], yb[(size_t)c0 * n + i]);
        CHECK_EQ_INT(diff, 0);
        free(xp_mem), free(yb);
    }
    free(mem), free(y);
    drop(&p);
}

/* npl_cpu_matmul with m activation rows (quantize, prepare, two threads) */
static void check_matmul(npl_type t, npl_isa isa, int gfni, npl_pool *pool, int m, int n, int k, uint64_t *s) {
    npl_cpu_ctx cc;
    npl_backend be;
    npl_cpu_backend_init(&be, &cc, isa);
    cc.no_gfni = !gfni;
    prob p;
    make(&p, t, cc.k, n, k, s);
    const int c0 = BATCH - m;
    float *y = malloc(sizeof(float) * (size_t)n * m);
    npl_tensor w = {t, {2, {k, n, 1, 1}}, p.wq}, x = {NPL_TYPE_F32, {2, {k, m, 1, 1}}, p.x + (size_t)c0 * k};
    npl_tensor yt = {NPL_TYPE_F32, {2, {n, m, 1, 1}}, y};
    void *scratch = malloc(npl_cpu_matmul_scratch(&w, &x) + 1);
    char err[256] = "";
    CHECK_EQ_INT(npl_cpu_matmul(&cc, pool, &w, &x, &yt, scratch, err, sizeof err), 0);
    for (int c = 0; c < m; c++) CHECK_EQ_INT(check_ref(&p, y + (size_t)c * n, c0 + c, npl_isa_name(cc.isa), t), 0);
    free(scratch), free(y);
    drop(&p);
}

int main(void) {
    uint64_t s = 0x2545f4914f6cdd1dull;
    npl_pool *pool = npl_pool_new(2);
    const npl_isa best = npl_cpu_best_isa();
    /* the GFNI kernels where the CPU has them, then the others */
    const int gfni = npl_cpu_has_gfni();
    for (size_t tj = 0; tj < (gfni ? 2 : 1) * sizeof types / sizeof types[0]; tj++) {
        const size_t ti = tj % (sizeof types / sizeof types[0]);
        const npl_type t = types[ti];
        const int use_gfni = tj < sizeof types / sizeof types[0];
        if (!use_gfni && (t == NPL_TYPE_Q8_0 || t == NPL_TYPE_Q4_1)) continue; /* no GFNI variant */
        for (int isa = NPL_ISA_GENERIC; isa <= (int)best; isa++) {
            const npl_gemv_kernels *gv = npl_gemv_get((npl_isa)isa, t, use_gfni);
#if defined(__x86_64__) || defined(__i386__)
            CHECK((gv != NULL) == (isa >= NPL_ISA_AVX2)); /* x86 with AVX2 */
#else
            /* aarch64: a GEMV with vec_dot's arithmetic for the 32-element blocks */
            CHECK((gv != NULL) == (isa >= NPL_ISA_NEON && t != NPL_TYPE_Q4_1 && t != NPL_TYPE_Q4_K && t != NPL_TYPE_Q6_K));
#endif
            worst = 0;
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                if (ks[ki] % npl_type_get(t)->block_size) continue;
                for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
                    if (gv)
                        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
                            check_kernel(t, npl_kernels_get((npl_isa)isa), gv, ms[mi], ns[ni], ks[ki], &s);
                    check_matmul(t, (npl_isa)isa, use_gfni, pool, ms[mi], 300, ks[ki], &s);
                }
            }
            printf("%-7s %-5s matmul of 1-15 rows%s: worst |y - ref| %.2e of sum |w x|%s\n", npl_isa_name((npl_isa)isa),
                   npl_type_name(t), gv && gfni && isa >= NPL_ISA_AMX && t != NPL_TYPE_Q8_0 ? tj < sizeof types / sizeof types[0] ? " (GFNI)" : " (no GFNI)" : "",
                   worst, !gv ? "" : NPL_GEMV_SAME(isa));
        }
    }
    npl_pool_free(pool);
    TEST_MAIN_END();
}
