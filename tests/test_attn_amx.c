/* The AMX family's attention kernel (kernels/x86/amx/attn_amx.c) against
 * a double precision reference, and its batch invariance: 128 queries in one
 * call, in calls of 16 and one at a time (decode) give the same bits, on
 * one thread and on a pool of 3. Cache rows no query attends hold NaN, so a
 * kernel that lets them into a sum fails. GQA groups of 1, 2, 4, 8 and 16,
 * head sizes 64-256, causal and sliding windows, soft-capping, padding rows.
 * Skipped (passes) on machines without AMX. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/dtype.h"
#include "kernels/threadpool.h"
#include "kernels/x86/amx/attn_amx.h"

enum { NQ = 128 };

static unsigned seed = 12345;
static float frand(void) {
    seed = seed * 1664525u + 1013904223u;
    return (float)(seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

typedef struct {
    int hd, nh, nkv, window, start, n_ctx;
    float softcap;
} cfg;

static void range(const cfg *c, int p, int *j0, int *j1) {
    *j1 = p + 1;
    *j0 = c->window > 0 && p >= c->window ? p - c->window + 1 : 0;
}

/* attention for queries [i0, i1) of pos / q (the rest of out untouched) */
static void run(const cfg *c, const float *q, const uint16_t *kc, const uint16_t *vc, const int32_t *pos, int i0, int i1,
                float *out, void *scratch, npl_pool *pool) {
    const int64_t st = (int64_t)c->nh * c->hd;
    const npl_attn_args a = {.q = q + i0 * st, .q_stride = st, .kc = kc, .vc = vc, .out = out + i0 * st,
                             .out_stride = st, .pos = pos + i0, .n_q = i1 - i0, .n_head = c->nh, .n_kv = c->nkv,
                             .hd = c->hd, .scale = 1.0f / sqrtf((float)c->hd), .softcap = c->softcap,
                             .window = c->window};
    npl_attention_amx(&a, c->n_ctx, scratch, pool);
}

static void check_case(const cfg *c, npl_pool *pool3) {
    const int hd = c->hd, nh = c->nh, nkv = c->nkv, group = nh / nkv;
    const int64_t st = (int64_t)nh * hd, nq = (int64_t)NQ * st, ncache = (int64_t)c->n_ctx * nkv * hd;
    float *q = malloc(sizeof(float) * (size_t)nq), *o1 = malloc(sizeof(float) * (size_t)nq);
    float *o16 = malloc(sizeof(float) * (size_t)nq), *oall = malloc(sizeof(float) * (size_t)nq);
    float *opool = malloc(sizeof(float) * (size_t)nq);
    uint16_t *kc = malloc(2 * (size_t)ncache), *vc = malloc(2 * (size_t)ncache);
    int32_t pos[NQ];
    for (int i = 0; i < NQ; i++) pos[i] = i % 23 == 5 ? -1 : c->start + i;
    /* q through f16, as the callers round it */
    for (int64_t i = 0; i < nq; i++) q[i] = npl_f16_to_f32(npl_f32_to_f16(frand() * 2.0f));
    for (int64_t j = 0; j < c->n_ctx; j++) {
        int seen = 0;
        for (int i = 0; i < NQ; i++) {
            int j0, j1;
            range(c, pos[i], &j0, &j1);
            seen |= pos[i] >= 0 && j >= j0 && j < j1;
        }
        for (int64_t e = 0; e < (int64_t)nkv * hd; e++) {
            kc[j * nkv * hd + e] = seen ? npl_f32_to_f16(frand()) : 0x7E00;
            vc[j * nkv * hd + e] = seen ? npl_f32_to_f16(frand()) : 0x7E00;
        }
    }
    void *scratch = malloc(npl_attn_amx_scratch(c->n_ctx, nkv, hd, npl_pool_size(pool3)));
    run(c, q, kc, vc, pos, 0, NQ, oall, scratch, NULL);
    for (int i = 0; i < NQ; i += 16) run(c, q, kc, vc, pos, i, i + 16 < NQ ? i + 16 : NQ, o16, scratch, NULL);
    for (int i = 0; i < NQ; i++) run(c, q, kc, vc, pos, i, i + 1, o1, scratch, NULL);
    run(c, q, kc, vc, pos, 0, NQ, opool, scratch, pool3);
    int diff16 = 0, diff1 = 0, diffp = 0;
    for (int64_t i = 0; i < nq; i++) {
        diff16 += !(o16[i] == oall[i]);
        diff1 += !(o1[i] == oall[i]);
        diffp += !(opool[i] == oall[i]);
    }
    double err = 0;
    double *sc = malloc(sizeof(double) * (size_t)c->n_ctx), *ref = malloc(sizeof(double) * (size_t)hd);
    for (int i = 0; i < NQ; i++)
        for (int h = 0; h < nh; h++) {
            const float *y = oall + i * st + (int64_t)h * hd, *qi = q + i * st + (int64_t)h * hd;
            if (pos[i] < 0) {
                for (int e = 0; e < hd; e++) err = fmax(err, y[e] == 0.0f ? 0.0 : 1.0);
                continue;
            }
            const int kvh = h / group;
            int j0, j1;
            range(c, pos[i], &j0, &j1);
            double mx = -1e300, sum = 0;
            for (int j = j0; j < j1; j++) {
                double dot = 0;
                for (int e = 0; e < hd; e++) dot += (double)qi[e] * npl_f16_to_f32(kc[((int64_t)j * nkv + kvh) * hd + e]);
                dot /= sqrt(hd);
                if (c->softcap > 0) dot = c->softcap * tanh(dot / c->softcap);
                sc[j] = dot;
                mx = fmax(mx, dot);
            }
            for (int e = 0; e < hd; e++) ref[e] = 0;
            for (int j = j0; j < j1; j++) {
                const double w = exp(sc[j] - mx);
                sum += w;
                for (int e = 0; e < hd; e++) ref[e] += w * npl_f16_to_f32(vc[((int64_t)j * nkv + kvh) * hd + e]);
            }
            for (int e = 0; e < hd; e++) err = fmax(err, fabs(y[e] - ref[e] / sum));
        }
    printf("  hd %3d heads %2d/%d window %3d start %4d softcap %2g: max error %.2e, differing elements vs one call: "
           "calls of 16 %d, of 1 %d, pool %d\n",
           hd, nh, nkv, c->window, c->start, (double)c->softcap, err, diff16, diff1, diffp);
    CHECK(err < 2e-5);
    CHECK_EQ_INT(diff16, 0);
    CHECK_EQ_INT(diff1, 0);
    CHECK_EQ_INT(diffp, 0);
    free(q), free(o1), free(o16), free(oall), free(opool), free(kc), free(vc), free(scratch), free(sc), free(ref);
}

int main(void) {
    if (npl_cpu_best_isa() < NPL_ISA_AMX) {
        printf("no AMX on this machine: skipped\n");
        TEST_MAIN_END();
    }
    CHECK(npl_attn_amx_fits(4, 1, 256) && npl_attn_amx_fits(32, 8, 128) && npl_attn_amx_fits(16, 1, 64));
    CHECK(!npl_attn_amx_fits(6, 2, 64) && !npl_attn_amx_fits(4, 1, 48) && !npl_attn_amx_fits(4, 1, 576));
    npl_pool *pool3 = npl_pool_new(3);
    CHECK(pool3 != NULL);
    static const cfg cfgs[] = {
        {256, 4, 1, 0, 0, 256, 0.0f},    {256, 4, 1, 512, 530, 700, 0.0f}, {256, 4, 1, 5, 37, 200, 0.0f},
        {64, 8, 8, 0, 37, 200, 50.0f},   {128, 8, 2, 17, 100, 300, 0.0f},  {64, 16, 1, 0, 3, 160, 0.0f},
        {128, 32, 4, 0, 64, 192, 30.0f}, {512, 2, 1, 40, 0, 128, 0.0f},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) check_case(&cfgs[i], pool3);
    npl_pool_free(pool3);
    TEST_MAIN_END();
}
