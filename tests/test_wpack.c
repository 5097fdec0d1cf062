/* Packed weights (kernels/wpack.h): the q5_0 x 8 layout round-trips row by
 * row; where the CPU's family reads it (AVX2), the packed GEMV (1-15
 * activation rows, row ranges split as threads take them) and GEMM (16 and
 * more) give plain C's vec_dot bits, as the unpacked AVX2 kernels do, and
 * npl_cpu_matmul with a table of packed copies gives the bits it gives
 * without one. Then models (a tiny q5_0 llama; Gemma 3 270M, NPL_TEST_MODEL:
 * its q / k / gate / up are q5_0) opened with and without packing: the same
 * logits bit for bit in prefill and decode, and the table holds every q5_0
 * matrix of the file. The same for q4_1 (a tiny q4_1 llama; SmolLM2 Q4_1 by
 * NPL_TEST_MODEL), packed in every x86 family from AVX2 up. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu/cpu_backend.h"
#include "kernels/dtype.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot.h"
#include "kernels/wpack.h"
#include "llm/runner.h"
#include "llm/runner_wpack.h"

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}
static float rng_unit(uint64_t *s) { return (float)((rng_next(s) >> 11) * 0x1p-53 * 2.0 - 1.0); }

typedef struct {
    npl_type t;
    int n, k;
    size_t w_row, x_row;
    void *wq, *wp, *xq; /* the type's rows, their packed form, 40 activation rows of its dot partner */
    float *x;
} prob;
enum { BATCH = 40 };

static void make(prob *p, npl_type t, int n, int k, uint64_t *s) {
    const npl_kernels *gen = npl_kernels_get(NPL_ISA_GENERIC);
    const npl_type vdt = npl_type_get(t)->vec_dot_type;
    p->t = t, p->n = n, p->k = k;
    npl_row_size(t, k, &p->w_row);
    npl_row_size(vdt, k, &p->x_row);
    float *w = malloc(sizeof(float) * (size_t)n * k);
    p->x = malloc(sizeof(float) * (size_t)BATCH * k);
    p->wq = malloc(p->w_row * (size_t)n);
    p->wp = malloc(npl_wpack_bytes(t, k, n));
    p->xq = malloc(p->x_row * BATCH);
    /* heavy tails and a per-row skew, so the 5th bit and the scales vary */
    for (int i = 0; i < n * k; i++) w[i] = rng_unit(s) * (rng_next(s) % 16 == 0 ? 3.0f : 1.0f) + (i / k % 3 == 0 ? 0.3f : 0.0f);
    for (int i = 0; i < BATCH * k; i++) p->x[i] = rng_unit(s) + (i / k % 2 ? 0.2f : -0.1f);
    for (int r = 0; r < n; r++) npl_type_get(t)->from_float(w + (size_t)r * k, (char *)p->wq + r * p->w_row, k);
    for (int c = 0; c < BATCH; c++) gen->quantize_row[vdt](p->x + (size_t)c * k, (char *)p->xq + c * p->x_row, k);
    npl_wpack_pack(t, p->wq, p->wp, k, n);
    free(w);
}

static void drop(prob *p) { free(p->x), free(p->wq), free(p->wp), free(p->xq); }

/* every row of the packed matrix back in q5_0's layout: the same bytes */
static void check_round_trip(const prob *p) {
    char *row = malloc(p->w_row);
    int bad = 0;
    for (int r = 0; r < p->n; r++) {
        if (p->t == NPL_TYPE_Q5_0) npl_wpack_q5_0_row(p->wp, p->k, r, row);
        else if (p->t == NPL_TYPE_Q4_1) npl_wpack_q4_1_row(p->wp, p->k, r, row);
        else if (p->t == NPL_TYPE_Q4_K) npl_wpack_q4_K_row(p->wp, p->k, r, row);
        else npl_wpack_q6_K_row(p->wp, p->k, r, row);
        bad += memcmp(row, (const char *)p->wq + r * p->w_row, p->w_row) != 0;
    }
    CHECK_EQ_INT(bad, 0);
    free(row);
}

/* y[c * n + r] against the reference vec_dot of row r and activation row c0 + c, bit for bit:
 * q5_0 and q4_1 plain C's (the AVX2 kernels' steps), q4_K / q6_K the AVX2 family's own */
static int diff_ref(const prob *p, const float *y, int c0, int m) {
    const npl_kernels *gen = npl_kernels_get(p->t == NPL_TYPE_Q5_0 || p->t == NPL_TYPE_Q4_1 ? NPL_ISA_GENERIC : NPL_ISA_AVX2);
    int diff = 0;
    for (int c = 0; c < m; c++)
        for (int r = 0; r < p->n; r++) {
            float g = NAN;
            gen->vec_dot[p->t](p->k, &g, (const char *)p->wq + r * p->w_row, (const char *)p->xq + (c0 + c) * p->x_row);
            if (memcmp(&g, &y[(size_t)c * p->n + r], sizeof g) && diff++ < 3)
                fprintf(stderr, "packed %s m=%d n=%d k=%d [%d,%d]: %.9g, vec_dot %.9g\n", npl_type_name(p->t), m, p->n, p->k,
                        c, r, y[(size_t)c * p->n + r], g);
        }
    return diff;
}

static void check_gemv(const prob *p, const npl_gemv_kernels *gv, int m) {
    const int c0 = BATCH - m;
    char *mem = malloc(npl_gemv_x_size(p->k) * (size_t)m);
    float *y = malloc(sizeof(float) * (size_t)p->n * m);
    npl_gemv_x gx[16];
    for (int c = 0; c < m; c++) gv->prep(&gx[c], mem + npl_gemv_x_size(p->k) * c, (char *)p->xq + (c0 + c) * p->x_row, p->k);
    for (int i = 0; i < p->n * m; i++) y[i] = NAN;
    /* ranges as threads take them: multiples of 8, the last one ending at n */
    const int a = p->n > 16 ? 16 : p->n, b = p->n > 24 ? 24 : p->n;
    gv->rows(p->wp, p->w_row, 0, a, gx, m, y, p->n);
    if (a < b) gv->rows(p->wp, p->w_row, a, b, gx, m, y, p->n);
    if (b < p->n) gv->rows(p->wp, p->w_row, b, p->n, gx, m, y, p->n);
    CHECK_EQ_INT(diff_ref(p, y, c0, m), 0);
    free(mem), free(y);
}

static void check_gemm(const prob *p, const npl_gemm_kernels *gm, int m) {
    const int c0 = BATCH - m;
    void *xp_mem = malloc(npl_gemm_x_size(m, p->k));
    float *y = malloc(sizeof(float) * (size_t)p->n * m);
    npl_gemm_x xp;
    npl_gemm_x_init(&xp, xp_mem, m, p->k);
    for (int c = 0; c < m; c++) gm->pack(&xp, c, (char *)p->xq + (c0 + c) * p->x_row);
    for (int i = 0; i < p->n * m; i++) y[i] = NAN;
    const int a = p->n > 16 ? 16 : p->n;
    gm->rows(p->wp, p->w_row, 0, a, &xp, y, p->n);
    if (a < p->n) gm->rows(p->wp, p->w_row, a, p->n, &xp, y, p->n);
    CHECK_EQ_INT(diff_ref(p, y, c0, m), 0);
    free(xp_mem), free(y);
}

/* npl_cpu_matmul on the f32 activations, with the table and without: the same bits */
static void check_matmul(const prob *p, npl_isa isa, npl_pool *pool, int m) {
    npl_cpu_ctx cc;
    npl_backend be;
    npl_cpu_backend_init(&be, &cc, isa);
    npl_wpack_table tab = {0};
    CHECK_EQ_INT(npl_wpack_add(&tab, p->t, p->wq, p->k, p->n, 0), 0);
    CHECK(npl_wpack_find(&tab, p->wq) != NULL);
    CHECK(npl_wpack_find(&tab, p->wp) == NULL);
    npl_tensor w = {p->t, {2, {p->k, p->n, 1, 1}}, p->wq}, x = {NPL_TYPE_F32, {2, {p->k, m, 1, 1}}, p->x};
    float *y0 = malloc(sizeof(float) * (size_t)p->n * m), *y1 = malloc(sizeof(float) * (size_t)p->n * m);
    npl_tensor t0 = {NPL_TYPE_F32, {2, {p->n, m, 1, 1}}, y0}, t1 = {NPL_TYPE_F32, {2, {p->n, m, 1, 1}}, y1};
    void *scratch = malloc(npl_cpu_matmul_scratch(&w, &x) + 1);
    char err[256] = "";
    CHECK_EQ_INT(npl_cpu_matmul(&cc, pool, &w, &x, &t0, scratch, err, sizeof err), 0);
    cc.wpack = &tab;
    CHECK_EQ_INT(npl_cpu_matmul(&cc, pool, &w, &x, &t1, scratch, err, sizeof err), 0);
    CHECK(!memcmp(y0, y1, sizeof(float) * (size_t)p->n * m));
    npl_wpack_free(&tab);
    CHECK(tab.n == 0 && tab.bytes == 0);
    /* the copy in a reserved (2 MiB page) arena: there, and the same bits */
    const size_t bytes = npl_wpack_bytes(p->t, p->k, p->n);
    CHECK_EQ_INT(npl_wpack_reserve(&tab, bytes), 0);
    CHECK_EQ_INT(npl_wpack_add(&tab, p->t, p->wq, p->k, p->n, 0), 0);
    const char *dst = npl_wpack_find(&tab, p->wq);
    CHECK(dst && dst >= tab.arena && dst + bytes <= tab.arena + tab.arena_len && tab.arena_used >= bytes);
    memset(y1, 0, sizeof(float) * (size_t)p->n * m);
    CHECK_EQ_INT(npl_cpu_matmul(&cc, pool, &w, &x, &t1, scratch, err, sizeof err), 0);
    CHECK(!memcmp(y0, y1, sizeof(float) * (size_t)p->n * m));
    npl_wpack_free(&tab);
    CHECK(tab.n == 0 && tab.arena == NULL);
    free(scratch), free(y0), free(y1);
}

/* the model with and without packing: prefill of 20 tokens (the GEMM), then
 * 3 decode steps (the GEMV); logits bit for bit */
static void check_model(const char *path) {
    static const int32_t toks[23] = {2, 818, 5279, 529, 7001, 563, 496, 3417, 236761, 669, 1217, 818, 106, 107, 2364,
                                     5279, 529, 7001, 563, 496, 3417, 236761, 669};
    const float *lg[2][4];
    float *keep[2][4];
    size_t packed[2] = {0, 0}, want = 0, n_cand = 0; /* n_cand: the model's packable matrices, packed here or not */
    int nv = 0;
    for (int v = 0; v < 2; v++) {
        npl_runner_params rp = npl_runner_default_params();
        rp.n_ctx = 64;
        rp.n_threads = 2;
        rp.no_repack = v;
        rp.repack_mib = 1024; /* every packable matrix (Gemma's 64 MiB of them) */
        char err[512] = "";
        npl_runner *r = npl_runner_open(path, &rp, err, sizeof err);
        if (!r) {
            fprintf(stderr, "%s: %s\n", path, err);
            CHECK(r != NULL);
            return;
        }
        nv = npl_runner_hparams(r)->n_vocab;
        packed[v] = npl_runner_base_packed_bytes(npl_runner_base_of(r));
        if (!v) { /* every q5_0 / q4_K / q6_K matrix a matmul reads, of the types this CPU's family packs: all but an untied embedding (a row lookup only) */
            const npl_gguf *g = npl_runner_gguf(r);
            const int tied = !npl_gguf_find_tensor(g, "output.weight");
            for (int64_t i = 0; i < npl_gguf_n_tensors(g); i++) {
                const npl_gguf_tensor *t = npl_gguf_tensor_at(g, i);
                if ((t->type == NPL_TYPE_Q5_0 || t->type == NPL_TYPE_Q4_1 || t->type == NPL_TYPE_Q4_K || t->type == NPL_TYPE_Q6_K) &&
                    t->n_dims == 2 &&
                    (tied || strcmp(t->name, "token_embd.weight"))) {
                    n_cand++;
                    if (npl_gemv_get_packed(npl_cpu_best_isa(), (npl_type)t->type))
                        want += npl_wpack_bytes((npl_type)t->type, t->ne[0], t->ne[1]);
                }
            }
        }
        int32_t tk[23];
        for (int i = 0; i < 23; i++) tk[i] = toks[i] % nv;
        lg[v][0] = npl_runner_forward(r, tk, 20, 0, 20, err, sizeof err);
        CHECK(lg[v][0] != NULL);
        keep[v][0] = malloc(sizeof(float) * (size_t)nv * 20);
        if (lg[v][0]) memcpy(keep[v][0], lg[v][0], sizeof(float) * (size_t)nv * 20);
        for (int d = 1; d < 4; d++) {
            lg[v][d] = npl_runner_forward(r, tk + 19 + d, 1, 19 + d, 1, err, sizeof err);
            CHECK(lg[v][d] != NULL);
            keep[v][d] = malloc(sizeof(float) * (size_t)nv);
            if (lg[v][d]) memcpy(keep[v][d], lg[v][d], sizeof(float) * (size_t)nv);
        }
        npl_runner_close(r);
    }
    CHECK_EQ_INT(packed[1], 0);
    { /* the default budget: whole matrices, q5_0 first, at most NPL_WPACK_DEFAULT_MIB */
        npl_runner_params rp = npl_runner_default_params();
        rp.n_ctx = 64;
        char err[512] = "";
        npl_runner *r = npl_runner_open(path, &rp, err, sizeof err);
        CHECK(r != NULL);
        if (r) {
            const size_t b = npl_runner_base_packed_bytes(npl_runner_base_of(r));
            CHECK(b <= ((size_t)NPL_WPACK_DEFAULT_MIB << 20));
            /* without packed kernels for this CPU nothing is packed at all */
            if (npl_gemv_get_packed(npl_cpu_best_isa(), NPL_TYPE_Q5_0)) {
                CHECK(b == (want < ((size_t)NPL_WPACK_DEFAULT_MIB << 20) ? want : b));
                CHECK(b > 0);
            } else {
                CHECK_EQ_INT(b, 0);
            }
            npl_runner_close(r);
        }
    }
    CHECK(n_cand > 0);
    if (npl_gemv_get_packed(npl_cpu_best_isa(), NPL_TYPE_Q5_0)) CHECK_EQ_INT(packed[0], want);
    else CHECK_EQ_INT(packed[0], 0);
    CHECK(!memcmp(keep[0][0], keep[1][0], sizeof(float) * (size_t)nv * 20));
    for (int d = 1; d < 4; d++) CHECK(!memcmp(keep[0][d], keep[1][d], sizeof(float) * (size_t)nv));
    for (int v = 0; v < 2; v++)
        for (int d = 0; d < 4; d++) free(keep[v][d]);
    printf("model %s: packed %.1f MiB, logits with and without packing bit for bit (prefill 20, decode 3)\n", path,
           (double)packed[0] / 1048576.0);
}

int main(void) {
    uint64_t s = 0x9e3779b97f4a7c15ull;
    static const int ns[] = {8, 16, 40, 48};
    static const int ks[] = {32, 96, 256, 640, 1024, 2048};
    npl_pool *pool = npl_pool_new(2);
    const npl_isa best = npl_cpu_best_isa();
    /* what may be packed: q5_0 only, n a multiple of 8, k within the GEMM */
    CHECK(!npl_wpack_wanted(best, NPL_TYPE_Q5_0, 640, 12));
    CHECK(!npl_wpack_wanted(best, NPL_TYPE_Q8_0, 640, 16));
    CHECK(!npl_wpack_wanted(best, NPL_TYPE_Q4_K, 640, 16)); /* not whole super-blocks */
    CHECK(!npl_wpack_wanted(best, NPL_TYPE_Q5_0, 16384, 16));
    CHECK(!npl_wpack_wanted(NPL_ISA_GENERIC, NPL_TYPE_Q5_0, 640, 16));
    static const npl_type types[] = {NPL_TYPE_Q5_0, NPL_TYPE_Q4_1, NPL_TYPE_Q4_K, NPL_TYPE_Q6_K};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
    for (int isa = NPL_ISA_GENERIC; isa <= (int)best; isa++) {
        const npl_type t = types[ti];
        const npl_gemv_kernels *gv = npl_gemv_get_packed((npl_isa)isa, t);
        const npl_gemm_kernels *gm = npl_gemm_get_packed((npl_isa)isa, t);
#if defined(__x86_64__)
        /* the AVX2 kernels, and the AVX-512 family's for the types it takes from AVX2 but q6_K;
         * q4_1 in every family from AVX2 up, AMX's too (wpack.c) */
        CHECK((gv != NULL) == (isa == NPL_ISA_AVX2 || (isa == NPL_ISA_AVX512 && npl_avx512_takes_avx2(t) && t != NPL_TYPE_Q6_K) ||
                               (t == NPL_TYPE_Q4_1 && isa >= NPL_ISA_AVX2)));
#endif
        CHECK((gv != NULL) == (gm != NULL));
        CHECK(npl_wpack_wanted((npl_isa)isa, t, 1024, 16) == (gv != NULL));
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                if (ks[ki] % npl_type_get(t)->block_size) continue;
                prob p;
                make(&p, t, ns[ni], ks[ki], &s);
                if (isa == NPL_ISA_GENERIC) check_round_trip(&p);
                if (gv) {
                    static const int ms[] = {1, 2, 5, 15};
                    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) check_gemv(&p, gv, ms[mi]);
                    /* every remainder of the AVX-512 q5_0 kernel's tiles of 8 rows */
                    static const int gms[] = {16, 17, 18, 19, 20, 21, 22, 23, BATCH};
                    for (size_t mi = 0; mi < sizeof gms / sizeof gms[0]; mi++) check_gemm(&p, gm, gms[mi]);
                }
                /* the table's copy where the family reads it, the original elsewhere: the same bits */
                check_matmul(&p, (npl_isa)isa, pool, 1);
                check_matmul(&p, (npl_isa)isa, pool, 5);
                check_matmul(&p, (npl_isa)isa, pool, BATCH);
                drop(&p);
            }
        printf("%-7s packed %s: %s\n", npl_isa_name((npl_isa)isa), npl_type_name(t),
               !gv ? "no packed kernels (the original rows)"
               : t == NPL_TYPE_Q5_0 || t == NPL_TYPE_Q4_1 ? "GEMV (1-15 rows) and GEMM (16-40) == plain C vec_dot bit for bit"
                                    : "GEMV (1-15 rows) and GEMM (16-40) == AVX2 vec_dot bit for bit");
    }
    npl_pool_free(pool);
    /* tiny llamas with every matrix q5_0, then q4_1 (tests/tools/make_random_gguf.py --type q5_0), then Gemma */
    check_model("data/models/rand-llama-q5_0.gguf");
    check_model("data/models/rand-llama-q4_1.gguf"); /* tests/tools/make_random_gguf.py --type q4_1 */
    const char *model = getenv("NPL_TEST_MODEL"), *skip = getenv("NPL_TEST_SKIP_REAL_MODEL");
    if (model && *model && !(skip && *skip == '1')) check_model(model);
    else printf("NPL_TEST_MODEL not set: the Gemma check is skipped\n");
    TEST_MAIN_END();
}
